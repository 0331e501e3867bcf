//! A local cluster on loopback: start N nodes as separate processes, wait until every node
//! sees all the others, record them in `DIR/cluster.json`; report their state; stop them by
//! pid; restart or signal one of them; inject faults (a restart after some time down, a
//! SIGSTOP/SIGCONT pause, a reply delay, a slower disk).
//!
//! Layout of DIR: `cluster.json`, and per node `node-I/node.toml`, `node-I/node.log`,
//! `node-I/data/`. Ports are free ephemeral ports on 127.0.0.1 picked at start.
//!
//! Two parts: `cluster.rs`, the cluster file, the nodes' state and what can be sent to a running
//! node (signals, fault settings); `lifecycle.rs`, starting and stopping node processes.

#![warn(missing_docs)]

mod cluster;
mod lifecycle;

pub use cluster::{
    block_on, pause_node, process_state, send_signal, set_faults, signal_node, status, ClusterFile, NodeEntry, NodeStatus, Signal,
    CLUSTER_FILE,
};
pub use lifecycle::{
    check_fault_s, down, kill_node, restart_node, restart_node_after, up, wait_node_up, Launched, NodeCommand, UpOptions, ZoneLayout,
    MAX_FAULT_S,
};
