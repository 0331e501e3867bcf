//! `unified`: one policy for every scenario, assembled from the field's parts where the
//! simulator showed each part to help (docs/unified.md gives the experiments):
//!
//! - **Ranking by expected cost, C3's estimators** ([`crate::c3`]): per node, EWMAs of the
//!   reported queue, the service time and the response time. Where replies carry a service
//!   time (a replica answering), our own outstanding requests weigh first
//!   (`concurrency_weight` 1,000: a node without one of ours in flight beats any node with
//!   one), then C3's cubic queue score; that is what wins under time-varying service rates and
//!   in the textbook queue.
//! - **Without a service time, the untimed ranking** ([`untimed`]): where replies carry none (a
//!   coordinator answering a client, or a driver that sees only latencies), the score is
//!   `floor + (1 + outstanding) x excess`: the lowest response time seen (the zone's round
//!   trip, which load does not change) plus the part above it, on slow averages (0.02 on a new
//!   sample) with nodes whose excesses are within 60% of each other counted as equal. Reads stay
//!   in the near zone unless the near node is actually slower, and many clients do not follow
//!   the same momentarily fast coordinator (`poc-network`).
//! - **C3's rate control and per-group backlog** stay available (`rate_control`), off by
//!   default: no scenario measured a gain from them once own outstanding requests rank first.
//! - **HWLB's shares at a coordinator** ([`crate::hwlb`]): with hit rates known, a coordinator
//!   draws its replicas with HWLB's miss-equalising shares and exact systematic sampling, and a
//!   restarted replica warms from background reads (`warmup_reads`, at twice its warm peers'
//!   misses per second) instead of serving cold. Where the replicas report their load (C3's
//!   piggyback) the draw is kept for reads with a replica warming (`heat_only_while_warming`):
//!   once caches are warm the shares are equal and blind to queues, so the coordinator ranks by
//!   C3's score (`coordinator_concurrency_weight`), its own replica first. Cassandra's replies
//!   carry no load: the plug-in draws for every read.
//! - **Passing over, at a coordinator** ([`coordinator`]): a replica that is silent (the Java
//!   driver's rule: at least `in_flight_threshold` sends since its last reply, fewer than
//!   `min_responses` answers in `response_window_ms`: a killed or paused node), overdue (one
//!   read of ours unanswered for longer than its usual time, `overdue_factor`: the same
//!   evidence at any cluster size), whose last request timed out (`expiry_memory_ms`), or that
//!   is slow (its latency average well above the others', `slow_factor` and `slow_margin_ms`)
//!   without being cold (`cold_hit_rate_gap`) is left out of HWLB's draw, as if it were down,
//!   and put last; so HWLB does not keep drawing a stuck node until the failure detector
//!   notices it.
//! - **Load inside the draw, at a coordinator** ([`give_way`]): a drawn replica gives way to
//!   one whose expected time, weighed by heat (`heat_weight`), is lower, so that where caches
//!   are equal the choice follows queues; HWLB's shares decide where they differ. The
//!   Cassandra plug-in applies the same rule (shared traces:
//!   `testdata/unified-coordinator-traces.json`).
//! - **Both sides**: `unified` is made to run in the driver and in the database together; a
//!   bare `unified` in a run item sets both sides (the registry's `both_sides_together`).
//!
//! It needs only what `c3` and `hwlb` need (feedback) and works wherever they do: in the
//! simulator, on the node cluster (both sides) and in the driver (client side, latencies only).

pub mod coordinator;
pub mod give_way;
pub mod policy;
pub mod untimed;

pub use policy::{Unified, NAME, PARAMS};
