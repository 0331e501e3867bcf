//! Heat-weighted load balancing (HWLB): coordinators split reads so that every replica sees
//! the same cache-miss rate, keep work local where they can, and draw k distinct replicas with
//! exact probabilities. See docs/algorithms.md, section 1; each step is its own module:
//! [`tracker`] (a node's own hit rate), [`publish`] (when it goes out by gossip), [`peers`] (what a coordinator knows of the others),
//! [`shares`] (P_j), [`redistribution`] (each coordinator's row), [`plan`] (the whole plan and
//! when HWLB steps aside), [`sampling`] (k distinct replicas), [`warmup`] (warm-up reads for a restarted replica) and [`policy`] (the `hwlb` policy).

pub mod peers;
pub mod plan;
pub mod policy;
pub mod publish;
pub mod redistribution;
pub mod sampling;
pub mod shares;
pub mod tally;
pub mod tracker;
pub mod warmup;

pub use plan::{HwlbPlan, PlanConfig, StepAside};
pub use policy::Hwlb;
pub use publish::RatePublisher;
pub use redistribution::{redistribute, Infeasible};
pub use sampling::SamplingRow;
pub use tally::{tally_draws, DrawTally};
pub use tracker::HitRateTracker;
