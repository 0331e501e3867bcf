//! C3 (Suresh et al., NSDI 2015): adaptive replica ranking with concurrency compensation
//! ([`ranking`]) plus per-server cubic rate control ([`rate_control`]), combined in the `c3`
//! policy ([`policy`]). C3 ran inside Cassandra's coordinators and in the clients of its
//! simulator, so it serves both sides.
//!
//! # The backlog contract (kept by the `runtime` crate for every caller)
//!
//! With rate control on, [`Policy::plan`](crate::Policy::plan) may return
//! [`Decision::Wait`](crate::Decision::Wait) `{ retry_at_ns }`: no `count` replicas of the
//! request's candidates have a send token right now. The caller then:
//! 1. appends the request to a FIFO backlog keyed by the request's replica group
//!    ([`Request::group`](crate::Request::group));
//! 2. while a group's backlog is not empty, routes new requests of that group to the back of
//!    the backlog instead of planning them (first in, first out);
//! 3. calls `plan` again for the request at the head of the backlog at `retry_at_ns` (the
//!    earliest time enough tokens will have refilled) — or earlier, when a reply from one of the
//!    group's replicas arrives, since a reply can raise a sending rate;
//! 4. on [`Decision::Send`](crate::Decision::Send) sends it (observing `Event::Sent` for each target,
//!    which takes the tokens), pops it, and plans the next head the same way.
//!
//! The request is then sent to the best-ranked replica that next has a token, as in the paper.
//! The policy itself keeps no queue: the caller owns requests, time-outs and memory.

pub mod policy;
pub mod ranking;
pub mod rate_control;

pub use policy::C3;
pub use ranking::{Ranking, ServerEstimate};
pub use rate_control::{RateConfig, RateLimiter};
