//! The caller's side of the policy contract, in one place and without I/O.
//!
//! A [`replica_lb_policy::Policy`] decides; its caller owes it a lot: a random stream, a FIFO per replica
//! group for requests rate control holds back ([`replica_lb_policy::Decision::Wait`]), probes sent off the
//! request path, wake-ups at the times the policy names, and exactly one reply or failure for
//! every request sent (policies count requests in flight from these). [`Runtime`] does all of
//! it and touches no socket, clock or thread: the simulator, the real cluster's nodes, the load
//! generator and the driver adapter are thin adapters that move its outputs onto their own
//! I/O. A caller states what it can provide ([`Caller`]); a policy that needs more is refused
//! with a one-line error ([`replica_lb_policy::Needs::check`]).
//!
//! Modules: [`ledger`] (dispatches, tickets and exactly-once accounting), [`backlog`] (the
//! bounded per-group waiting room), [`runtime`] (the two together with the policy).

#![warn(missing_docs)]

pub mod backlog;
pub mod ledger;
pub mod runtime;

pub use ledger::{Accounting, DispatchId, Ticket};
pub use runtime::{Caller, Dispatch, Immediate, Released, Runtime, RuntimeConfig, RuntimeStats, Submitted, DEFAULT_MAX_WAITING};
