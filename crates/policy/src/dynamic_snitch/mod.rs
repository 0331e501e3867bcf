//! Cassandra's dynamic snitch (`DynamicEndpointSnitch`), the coordinator-side baseline that C3
//! was measured against: [`reservoir`] keeps each host's recent latencies (an exponentially
//! decaying reservoir), [`policy`] turns their medians into scores and keeps the topology order
//! unless it is worse than the score order by more than the badness threshold.

pub mod policy;
pub mod reservoir;

pub use policy::DynamicSnitch;
pub use reservoir::DecayingReservoir;
