//! Prequal (Wydrowski, Kleinberg, Rumble et al., NSDI 2024): clients probe servers for their
//! requests in flight (RIF) and latency off the request path, keep the answers in a small pool
//! ([`pool`]), and pick with the hot-cold lexicographic rule ([`policy`]).
//!
//! # The probing contract (for callers)
//!
//! After each [`plan`](crate::Policy::plan) (and optionally on a timer), call
//! [`probes`](crate::Policy::probes): it appends the probes to send now (about
//! `probes_per_query` per query, distinct nodes sampled uniformly from the request's
//! candidates). Send each asynchronously — never delay the request for them — and hand each
//! answer to [`Event::ProbeReply`](crate::Event::ProbeReply) with the node's RIF and its
//! latency estimate at that RIF.

pub mod policy;
pub mod pool;

pub use policy::Prequal;
pub use pool::{ProbePool, RifQuantile};
