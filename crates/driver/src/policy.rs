//! [`ReplicaLbPolicy`]: the driver's `LoadBalancingPolicy` over a replica-lb policy.
//!
//! `pick` finds the request's candidates the way the driver's `DefaultPolicy` does, without
//! allocating: for a request with a token (a prepared statement whose partition key is bound)
//! the token's replicas from `ClusterState::replica_locator()` in the local datacenter (for a
//! SimpleStrategy keyspace read straight from the locator's ring, the same nodes without a
//! shard computed per replica; the chosen node's shard comes from its sharder, read at most
//! once per millisecond per shard), else
//! (an unprepared or tokenless statement, or no live replica) up to 64 nodes of the local
//! datacenter's ring (rotated per request when it has more). With no live node there, and
//! `permit_dc_failover`, the same again over every datacenter. Live means `is_connected()`
//! (the node is enabled and its pool has a connection), as in `DefaultPolicy`; a shard reads it
//! for a candidate at most once per [`crate::core::LIVENESS_TTL_NS`], and always for the node
//! it chooses (a chosen node found down is not picked: [`crate::core::Core::pick`]). The
//! replica-lb policy then chooses among the live candidates, under a short lock (see
//! [`crate::core`]).
//!
//! Concurrency: the driver calls the policy from every worker thread at once. The state is
//! split into shards (default: one per core), each a whole policy in its runtime behind its own
//! mutex; a thread always uses the same shard (assigned on its first call), so a lock is
//! uncontended unless there are more threads than shards, and then another free shard is
//! tried first. An attempt's end goes to the ending thread's shard, or to the shard that
//! holds its pick (a task may move between threads), else it counts there as untracked. Each
//! shard is an independent client of the cluster (its own in-flight counts and latency
//! estimates), as separate application instances would be; `.shards(1)` gives one exact,
//! shared view at the cost of contention (the benchmark measures both).
//!
//! `fallback` (retries, speculative attempts, a `pick` of `None`) lists live replicas, then the
//! other live nodes of the local datacenter, then (with failover) the rest, rotated per call;
//! as a last resort the enabled nodes that are down. It does not ask the policy (asking would
//! count a send the driver may never make); attempts on fallback targets reach the policy
//! when they end, as sends ended at once ([`crate::inflight`]).

use crate::core::{AdapterStats, Core, Outcome};
use crate::inflight::Owner;
use crate::nodes::NodeKey;
use replica_lb_policy::{Failure, MAX_REPLICAS};
use rustc_hash::FxHashSet;
use scylla::cluster::metadata::{Keyspace, Strategy};
use scylla::cluster::{ClusterState, Node, NodeRef};
use scylla::errors::{DbError, RequestAttemptError};
use scylla::frame::response::result::TableSpec;
use scylla::policies::load_balancing::{FallbackPlan, LoadBalancingPolicy, RoutingInfo};
use scylla::routing::locator::ReplicaLocator;
use scylla::routing::{Shard, Token};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, TryLockError};
use std::time::Duration;

/// Replicas of one token read per request at most (replication factors are far smaller).
pub const MAX_TOKEN_REPLICAS: usize = 16;

/// One shard on its own cache lines.
#[repr(align(128))]
struct PolicyShard(Mutex<Core>);

static NEXT_THREAD: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// This thread's number, given on its first call (picks its shard).
    static THREAD: usize = NEXT_THREAD.fetch_add(1, Ordering::Relaxed);
}

/// A replica-lb client-side policy as a scylla driver load-balancing policy. Build it with
/// [`ReplicaLbPolicy::builder`] and put it in an execution profile.
pub struct ReplicaLbPolicy {
    shards: Box<[PolicyShard]>,
    name: &'static str,
    label: String,
    local_dc: Option<String>,
    permit_dc_failover: bool,
    epoch_ns: u64,
    rotation: AtomicUsize,
    /// Per statement table (by address): where its keyspace was in the cluster state's
    /// iteration order of keyspaces ([`Self::keyspace`]).
    keyspace_hints: [AtomicUsize; KEYSPACE_HINTS],
}

/// Slots of [`ReplicaLbPolicy`]'s keyspace hints.
const KEYSPACE_HINTS: usize = 16;

/// A keyspace further than this in the iteration order is looked up by name.
const MAX_KEYSPACE_HINT: usize = 32;

/// The hint of a table whose keyspace is further than [`MAX_KEYSPACE_HINT`]: by name.
const FAR_KEYSPACE: usize = usize::MAX - 1;

impl std::fmt::Debug for ReplicaLbPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReplicaLbPolicy")
            .field("policy", &self.label)
            .field("local_dc", &self.local_dc)
            .field("permit_dc_failover", &self.permit_dc_failover)
            .finish_non_exhaustive()
    }
}

fn key(node: NodeRef<'_>) -> NodeKey<'_> {
    NodeKey {
        host_id: node.host_id,
        datacenter: node.datacenter.as_deref(),
        rack: node.rack.as_deref(),
        object: Arc::as_ptr(node) as usize,
    }
}

fn live(node: &Node) -> bool {
    node.is_connected()
}

/// The SimpleStrategy replicas of `token` in `dc` (every datacenter if `None`) into `out`, as
/// the driver's `ReplicaLocator::replicas_for_token` lists them: the first
/// `replication_factor` distinct nodes walking the ring from the token, then those of `dc`
/// (distinct by object: the ring holds each node's one `Arc` once per token of the node).
/// Returns how many. No shard is computed (the driver's replica set computes one per replica,
/// an atomic load of each node's connection pool).
fn simple_replicas<'a>(
    locator: &'a ReplicaLocator,
    token: Token,
    replication_factor: usize,
    dc: Option<&str>,
    out: &mut [Option<NodeRef<'a>>; MAX_TOKEN_REPLICAS],
) -> usize {
    let take = replication_factor
        .min(locator.unique_nodes_in_global_ring().len())
        .min(MAX_TOKEN_REPLICAS);
    let mut n = 0;
    if take == 0 {
        return 0;
    }
    for node in locator.ring().ring_range(token) {
        if out[..n].iter().any(|o| o.is_some_and(|o| Arc::ptr_eq(o, node))) {
            continue;
        }
        out[n] = Some(node);
        n += 1;
        if n == take {
            break;
        }
    }
    if let Some(dc) = dc {
        let mut kept = 0;
        for i in 0..n {
            if out[i].is_some_and(|o| o.datacenter.as_deref() == Some(dc)) {
                out[kept] = out[i];
                kept += 1;
            }
        }
        n = kept;
    }
    n
}

/// The monotonic clock in nanoseconds, read directly (`Instant` adds a checked subtraction
/// and a 128-bit conversion per reading; the adapter reads the clock twice per request).
#[cfg(unix)]
#[inline]
fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC exists on every unix the
    // driver runs on, and it cannot fail with a valid pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64).wrapping_mul(1_000_000_000).wrapping_add(ts.tv_nsec as u64)
}

#[cfg(not(unix))]
fn monotonic_ns() -> u64 {
    use std::sync::OnceLock;
    static START: OnceLock<std::time::Instant> = OnceLock::new();
    ns(START.get_or_init(std::time::Instant::now).elapsed())
}

fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// How an attempt's error counts for the policy: an answer about the request itself (bad
/// syntax, not authorised, ...) is a reply from a healthy node; time-outs are time-outs; a
/// broken connection is a lost connection; the rest (overloaded, unavailable, server errors,
/// client-side errors) are errors.
pub fn outcome_of(error: &RequestAttemptError) -> Outcome {
    match error {
        RequestAttemptError::DbError(db, _) => match db {
            DbError::ReadTimeout { .. } | DbError::WriteTimeout { .. } => Outcome::Failed(Failure::Timeout),
            DbError::SyntaxError
            | DbError::Invalid
            | DbError::AlreadyExists { .. }
            | DbError::FunctionFailure { .. }
            | DbError::AuthenticationError
            | DbError::Unauthorized
            | DbError::ConfigError
            | DbError::Unprepared { .. } => Outcome::Reply,
            _ => Outcome::Failed(Failure::Error),
        },
        RequestAttemptError::BrokenConnectionError(_) | RequestAttemptError::UnableToAllocStreamId => {
            Outcome::Failed(Failure::ConnectionLost)
        }
        _ => Outcome::Failed(Failure::Error),
    }
}

impl ReplicaLbPolicy {
    pub(crate) fn new(cores: Vec<Core>, local_dc: Option<String>, permit_dc_failover: bool) -> Self {
        let name = cores.first().map_or("none", |c| c.name());
        ReplicaLbPolicy {
            label: format!("replica-lb/{name}"),
            name,
            shards: cores.into_iter().map(|c| PolicyShard(Mutex::new(c))).collect(),
            local_dc,
            permit_dc_failover,
            epoch_ns: monotonic_ns(),
            rotation: AtomicUsize::new(0),
            keyspace_hints: std::array::from_fn(|_| AtomicUsize::new(usize::MAX)),
        }
    }

    /// Nanoseconds since the policy was built, on the monotonic clock.
    #[inline]
    fn now_ns(&self) -> u64 {
        monotonic_ns().saturating_sub(self.epoch_ns)
    }

    #[inline]
    fn home(&self) -> usize {
        let t = THREAD.try_with(|t| *t).unwrap_or(0);
        let n = self.shards.len();
        // A mask, not a division, for the usual power-of-two shard counts.
        if n.is_power_of_two() {
            t & (n - 1)
        } else {
            t % n
        }
    }

    fn lock_shard(&self, i: usize) -> MutexGuard<'_, Core> {
        // A panic inside a policy leaves its state as it was; keep serving.
        self.shards[i].0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// This thread's shard, or another free one when it is busy.
    #[inline]
    fn lock(&self) -> MutexGuard<'_, Core> {
        let home = self.home();
        match self.shards[home].0.try_lock() {
            Ok(g) => g,
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
            Err(TryLockError::WouldBlock) => self.lock_other(home),
        }
    }

    #[cold]
    fn lock_other(&self, home: usize) -> MutexGuard<'_, Core> {
        let n = self.shards.len();
        for k in 1..n {
            match self.shards[(home + k) % n].0.try_lock() {
                Ok(g) => return g,
                Err(TryLockError::Poisoned(p)) => return p.into_inner(),
                Err(TryLockError::WouldBlock) => {}
            }
        }
        self.lock_shard(home)
    }

    /// Ends an attempt in the shard that holds its pick (the driver reports it in the
    /// request's task, which the pick's ticket names), else as untracked in this thread's.
    fn complete(&self, node: NodeRef<'_>, latency: Duration, outcome: Outcome) {
        let (key, latency) = (key(node), ns(latency));
        let owner = Owner::current();
        let home = self.home();
        let now = self.now_ns();
        if self.lock_shard(home).complete_matched(&key, latency, outcome, now, owner) {
            return;
        }
        self.complete_elsewhere(&key, home, latency, outcome, owner);
    }

    /// An attempt's end that this thread's shard does not hold: another's, or untracked.
    #[cold]
    fn complete_elsewhere(&self, key: &NodeKey<'_>, home: usize, latency: u64, outcome: Outcome, owner: Option<Owner>) {
        let n = self.shards.len();
        for k in 1..n {
            let now = self.now_ns();
            if self.lock_shard((home + k) % n).complete_matched(key, latency, outcome, now, owner) {
                return;
            }
        }
        let now = self.now_ns();
        self.lock_shard(home).complete_untracked(key, latency, outcome, now);
    }

    /// Tells every shard's policy the hit rate (in [0, 1]) of the node with `host_id`,
    /// measured off the request path: what `hwlb-client` reads ([`crate::hit_rates`] polls it
    /// from the nodes' cache counters). A rate outside [0, 1] is refused.
    pub fn record_hit_rate(&self, host_id: uuid::Uuid, hit_rate: f64) -> Result<(), String> {
        if !(0.0..=1.0).contains(&hit_rate) {
            return Err(format!("hit rate {hit_rate} of host {host_id}: must be in [0, 1]"));
        }
        let feedback = replica_lb_policy::Feedback {
            hit_rate: Some(hit_rate),
            ..replica_lb_policy::Feedback::default()
        };
        for i in 0..self.shards.len() {
            let now = self.now_ns();
            self.lock_shard(i).info(host_id, &feedback, now);
        }
        Ok(())
    }

    /// How many shards (independent copies of the policy) there are.
    pub fn shards(&self) -> usize {
        self.shards.len()
    }

    /// The replica-lb policy's registered name.
    pub fn policy_name(&self) -> &'static str {
        self.name
    }

    /// Counters over every shard: the runtime's, and the adapter's tickets.
    pub fn stats(&self) -> AdapterStats {
        let mut total = AdapterStats::default();
        for i in 0..self.shards.len() {
            total += self.lock_shard(i).stats();
        }
        total
    }

    /// Requests in flight to the node with `host_id`, as the policy counts them (all shards).
    pub fn in_flight(&self, host_id: uuid::Uuid) -> u32 {
        (0..self.shards.len()).map(|i| self.lock_shard(i).in_flight(host_id)).sum()
    }

    /// Sends the policy counts as out now, over all nodes and shards.
    pub fn outstanding(&self) -> u64 {
        (0..self.shards.len()).map(|i| self.lock_shard(i).outstanding()).sum()
    }

    /// Expires picks older than the ticket TTL, then checks that nothing is left open (call it
    /// when no request is out: every pick matched or expired, every runtime quiescent).
    pub fn check_quiescent(&self) -> Result<(), String> {
        for i in 0..self.shards.len() {
            let now = self.now_ns();
            let mut core = self.lock_shard(i);
            core.settle(now);
            core.check_quiescent().map_err(|e| format!("shard {i}: {e}"))?;
        }
        Ok(())
    }

    fn datacenter<'a>(&'a self, request: &'a RoutingInfo<'_>) -> Option<&'a str> {
        self.local_dc.as_deref().or(request.node_location_preference.datacenter())
    }

    /// The keyspace of `table` in `cluster`. Found by name in the driver's map of keyspaces
    /// (it hashes the name with SipHash), or, cheaper, at the place in that map's iteration
    /// order where it was found for this statement's table before (a hint per table, checked
    /// by name: a wrong or stale hint, after a schema or cluster state change, only costs the
    /// lookup by name).
    #[inline]
    fn keyspace<'a>(&self, cluster: &'a ClusterState, table: &TableSpec<'_>) -> Option<&'a Keyspace> {
        let name = table.ks_name();
        let hint = &self.keyspace_hints[(std::ptr::from_ref(table) as usize >> 4) % KEYSPACE_HINTS];
        let at = hint.load(Ordering::Relaxed);
        if at < MAX_KEYSPACE_HINT {
            if let Some((k, ks)) = cluster.keyspaces_iter().nth(at) {
                if k == name {
                    return Some(ks);
                }
            }
        } else if at == FAR_KEYSPACE {
            return cluster.get_keyspace(name);
        }
        self.keyspace_by_name(cluster, name, hint)
    }

    #[cold]
    fn keyspace_by_name<'a>(&self, cluster: &'a ClusterState, name: &str, hint: &AtomicUsize) -> Option<&'a Keyspace> {
        let ks = cluster.get_keyspace(name)?;
        let at = cluster.keyspaces_iter().take(MAX_KEYSPACE_HINT).position(|(k, _)| k == name);
        hint.store(at.unwrap_or(FAR_KEYSPACE), Ordering::Relaxed);
        Some(ks)
    }

    /// Token-aware choice among the token's replicas in `dc` (every datacenter if `None`).
    fn pick_replica<'a>(
        &'a self,
        request: &'a RoutingInfo<'_>,
        cluster: &'a ClusterState,
        dc: Option<&'a str>,
    ) -> Option<(NodeRef<'a>, Option<Shard>)> {
        let (token, table) = (request.token?, request.table?);
        let keyspace = self.keyspace(cluster, table)?;
        let mut found: [Option<NodeRef<'a>>; MAX_TOKEN_REPLICAS] = [None; MAX_TOKEN_REPLICAS];
        let mut shards: [Shard; MAX_TOKEN_REPLICAS] = [0; MAX_TOKEN_REPLICAS];
        let mut n = 0;
        let locator = cluster.replica_locator();
        // SimpleStrategy's replicas straight from the ring, without a shard each (only the
        // chosen node's is computed); every other strategy (and tablets, which need
        // NetworkTopologyStrategy) through the driver's replica set, a shard per replica.
        let shards_known = match keyspace.strategy {
            Strategy::SimpleStrategy { replication_factor } => {
                n = simple_replicas(locator, token, replication_factor, dc, &mut found);
                false
            }
            _ => {
                let set = locator.replicas_for_token(token, &keyspace.strategy, dc, table);
                for (node, shard) in set.into_iter().take(MAX_TOKEN_REPLICAS) {
                    found[n] = Some(node);
                    shards[n] = shard;
                    n += 1;
                }
                true
            }
        };
        if n == 0 {
            return None;
        }
        let now = self.now_ns();
        let node = |i: usize| found[i].expect("a replica read above");
        let mut core = self.lock();
        let pos = core.pick(n, |i| key(node(i)), |i| live(node(i)), true, now, Owner::current())?;
        let chosen = node(pos);
        let shard = if shards_known {
            shards[pos]
        } else {
            core.chosen_sharder(now, || chosen.sharder()).map_or(0, |s| s.shard_of(token))
        };
        drop(core);
        Some((chosen, Some(shard)))
    }

    /// Token-unaware choice among up to [`MAX_REPLICAS`] nodes of `dc`'s ring (every node if
    /// `None`), starting at a rotating offset when there are more.
    fn pick_any<'a>(&'a self, cluster: &'a ClusterState, dc: Option<&'a str>) -> Option<(NodeRef<'a>, Option<Shard>)> {
        let locator = cluster.replica_locator();
        let nodes: &'a [Arc<Node>] = match dc {
            Some(dc) => locator.unique_nodes_in_datacenter_ring(dc)?,
            None => locator.unique_nodes_in_global_ring(),
        };
        let len = nodes.len();
        if len == 0 {
            return None;
        }
        let take = len.min(MAX_REPLICAS);
        let start = if len > MAX_REPLICAS {
            self.rotation.fetch_add(MAX_REPLICAS, Ordering::Relaxed) % len
        } else {
            0
        };
        let at = |i: usize| &nodes[(start + i) % len];
        let now = self.now_ns();
        let pos = self
            .lock()
            .pick(take, |i| key(at(i)), |i| live(at(i)), false, now, Owner::current())?;
        Some((at(pos), None))
    }

    /// The fallback order (see the module docs).
    fn fallback_order<'a>(&'a self, request: &'a RoutingInfo<'_>, cluster: &'a ClusterState) -> Vec<(NodeRef<'a>, Option<Shard>)> {
        let dc = self.datacenter(request);
        let locator = cluster.replica_locator();
        let mut seen: FxHashSet<uuid::Uuid> = FxHashSet::default();
        let mut out: Vec<(NodeRef<'a>, Option<Shard>)> = Vec::new();
        let mut push = |node: NodeRef<'a>, shard: Option<Shard>, out: &mut Vec<_>| {
            if seen.insert(node.host_id) {
                out.push((node, shard));
            }
        };
        let scopes: &[Option<&str>] = match dc {
            Some(_) if self.permit_dc_failover => &[dc, None],
            Some(_) => &[dc],
            None => &[None],
        };
        let rotate = self.rotation.fetch_add(1, Ordering::Relaxed);
        for &scope in scopes {
            let from = out.len();
            if let (Some(token), Some(table)) = (request.token, request.table) {
                if let Some(ks) = cluster.get_keyspace(table.ks_name()) {
                    for (node, shard) in locator.replicas_for_token(token, &ks.strategy, scope, table) {
                        if live(node) {
                            push(node, Some(shard), &mut out);
                        }
                    }
                }
            }
            let replicas_end = out.len();
            out[from..replicas_end].rotate_left(if replicas_end > from { rotate % (replicas_end - from) } else { 0 });
            let ring: &'a [Arc<Node>] = match scope {
                Some(dc) => locator.unique_nodes_in_datacenter_ring(dc).unwrap_or(&[]),
                None => locator.unique_nodes_in_global_ring(),
            };
            for node in ring.iter().filter(|n| live(n)) {
                push(node, None, &mut out);
            }
            let end = out.len();
            out[replicas_end..end].rotate_left(if end > replicas_end { rotate % (end - replicas_end) } else { 0 });
        }
        if out.is_empty() {
            // Nothing is connected: try the enabled nodes (their pools may reconnect).
            for &scope in scopes {
                let ring: &'a [Arc<Node>] = match scope {
                    Some(dc) => locator.unique_nodes_in_datacenter_ring(dc).unwrap_or(&[]),
                    None => locator.unique_nodes_in_global_ring(),
                };
                for node in ring.iter().filter(|n| n.is_enabled()) {
                    push(node, None, &mut out);
                }
            }
        }
        out
    }
}

impl LoadBalancingPolicy for ReplicaLbPolicy {
    fn pick<'a>(&'a self, request: &'a RoutingInfo, cluster: &'a ClusterState) -> Option<(NodeRef<'a>, Option<Shard>)> {
        let dc = self.datacenter(request);
        let failover = dc.is_some() && self.permit_dc_failover;
        self.pick_replica(request, cluster, dc)
            .or_else(|| {
                if failover {
                    self.pick_replica(request, cluster, None)
                } else {
                    None
                }
            })
            .or_else(|| self.pick_any(cluster, dc))
            .or_else(|| if failover { self.pick_any(cluster, None) } else { None })
    }

    fn fallback<'a>(&'a self, request: &'a RoutingInfo, cluster: &'a ClusterState) -> FallbackPlan<'a> {
        Box::new(self.fallback_order(request, cluster).into_iter())
    }

    fn on_request_success(&self, _request: &RoutingInfo, latency: Duration, node: NodeRef<'_>) {
        self.complete(node, latency, Outcome::Reply);
    }

    fn on_request_failure(&self, _request: &RoutingInfo, latency: Duration, node: NodeRef<'_>, error: &RequestAttemptError) {
        self.complete(node, latency, outcome_of(error));
    }

    fn name(&self) -> String {
        self.label.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use scylla::errors::{BrokenConnectionError, BrokenConnectionErrorKind};

    #[test]
    fn errors_count_as_the_node_answering_failing_or_gone() {
        let db = |e: DbError| RequestAttemptError::DbError(e, "x".into());
        assert_eq!(outcome_of(&db(DbError::Invalid)), Outcome::Reply, "an answer about the request");
        assert_eq!(outcome_of(&db(DbError::SyntaxError)), Outcome::Reply);
        assert_eq!(outcome_of(&db(DbError::Overloaded)), Outcome::Failed(Failure::Error));
        assert_eq!(outcome_of(&db(DbError::ServerError)), Outcome::Failed(Failure::Error));
        let timeout = DbError::ReadTimeout {
            consistency: scylla::statement::Consistency::One,
            received: 0,
            required: 1,
            data_present: false,
        };
        assert_eq!(outcome_of(&db(timeout)), Outcome::Failed(Failure::Timeout));
        let broken = BrokenConnectionError::from(BrokenConnectionErrorKind::WriteError(std::io::Error::other("reset")));
        assert_eq!(
            outcome_of(&RequestAttemptError::BrokenConnectionError(broken)),
            Outcome::Failed(Failure::ConnectionLost)
        );
        assert_eq!(
            outcome_of(&RequestAttemptError::UnableToAllocStreamId),
            Outcome::Failed(Failure::ConnectionLost)
        );
    }
}
