//! A real Apache Cassandra 5.0 cluster on loopback, from the project's own files: Cassandra's
//! jars come from Maven Central through `java/cassandra-runtime/pom.xml` on first use
//! ([`dist`]); each node gets a configuration written here ([`config`]: the jar ships no
//! `conf/`); nodes start one after another on 127.0.0.1 .. 127.0.0.N and the launcher returns
//! when each answers CQL ([`cluster`]). The same faults as the node cluster: pause
//! (SIGSTOP/SIGCONT), restart (kill -9, start again on the same data) and an added delay on
//! every byte the node sends to its clients, through a user-space proxy in front of its CQL port
//! ([`proxy`]: this kernel has no netem).
//!
//! Client-side policies decide which node coordinates a read, so the nodes run
//! GossipingPropertyFileSnitch with the dynamic snitch off: a coordinator that is a replica
//! then serves a CL=ONE read itself (with SimpleSnitch and the dynamic snitch it may not).
//!
//! Layout of DIR: `cluster.json` (`"engine": "cassandra"`), and per node `node-I/conf/`
//! (cassandra.yaml, cassandra-rackdc.properties, logback.xml), `node-I/data/`, `node-I/system.log`,
//! `node-I/stdout.log`.

#![warn(missing_docs)]

pub mod cgroup;
pub mod cluster;
pub mod config;
pub mod coordinator;
pub mod cql;
pub mod dist;
pub mod faults;
pub mod observe;
pub mod plugin;
pub mod proxy;
pub mod warmth;

pub use cluster::{disk_reads, down, engine_of, nodetool, status, up, CassandraCluster, CassandraNode, CassandraUp, Engine, NodeState};
pub use faults::{follow_jvm_growth, pause, restart, set_delay, set_disk_factor, set_disk_limits};
