//! The driver's nodes as replica-lb node ids: a stable, dense mapping by host id.
//!
//! replica-lb's policies index per-node state by a dense [`NodeId`]; the driver names a node by
//! its host id (a `Uuid`) and hands out a fresh `Arc<Node>` whenever its metadata changes. The
//! table gives each host id the next free id the first time it is seen and keeps it for the
//! life of the policy, so a node that goes down, comes back, or changes address keeps its
//! state, and a node added later gets a new id without disturbing the others. Ids of nodes that
//! left the cluster are not reused (a policy may still hold state under them), which bounds the
//! table at [`MAX_NODES`] distinct hosts over the policy's lifetime.
//!
//! The table also turns datacenters and racks into the policies' zones (one zone per distinct
//! `(datacenter, rack)` pair, numbered in order of first sighting) and remembers whether each
//! node was last seen live, so the policy hears of a node going down or coming back once, and
//! its sharder as last read ([`NodeTable::sharder`]).

use replica_lb_policy::NodeId;
use rustc_hash::FxHashMap;
use scylla::routing::Sharder;
use uuid::Uuid;

/// The most distinct hosts one policy instance maps over its lifetime.
pub const MAX_NODES: usize = 4096;

/// Entries of the object-address cache.
const CACHE: usize = 128;

/// Slots probed per object in the cache.
const PROBES: usize = 4;

/// The cache slot of a node object's address (a multiplicative hash: node objects are
/// hundreds of bytes apart, so low address bits would put them all in a few slots).
#[inline]
fn slot_of(object: usize) -> usize {
    ((object as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - CACHE.trailing_zeros())) as usize
}

/// How long a node's sharder, once read, is used before it is read again.
pub const SHARDER_TTL_NS: u64 = 1_000_000;

/// `checked_ns` of a node whose liveness was never read.
const NEVER: u64 = u64::MAX;

/// What the driver says about a node, borrowed from its metadata.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeKey<'a> {
    /// The node's host id (stable across restarts and address changes).
    pub host_id: Uuid,
    /// Its datacenter, when the driver knows it.
    pub datacenter: Option<&'a str>,
    /// Its rack, when the driver knows it.
    pub rack: Option<&'a str>,
    /// The address of the driver's node object (0: none): a cache key that spares hashing the
    /// host id per request. An object lives as long as the cluster state that holds it and a
    /// new one may reuse the address, so a hit is confirmed by the host id.
    pub object: usize,
}

/// A change of a node's liveness, to tell the policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Liveness {
    /// The node was live and is now seen down.
    WentDown,
    /// The node was down and is now seen live.
    CameUp,
}

/// What the table learnt while mapping a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mapped {
    /// The node's id.
    pub id: NodeId,
    /// The node is new and its zone is known: the zones changed.
    pub new_zone_info: bool,
    /// The node's liveness changed since it was last seen.
    pub liveness: Option<Liveness>,
}

#[derive(Clone, Debug)]
struct Entry {
    zone: Option<u32>,
    live: bool,
    /// When `live` was last read from the driver (see [`NodeTable::liveness`]).
    checked_ns: u64,
    /// The node's sharder as last read (see [`NodeTable::sharder`]), and when.
    sharder: Option<Sharder>,
    sharder_ns: u64,
}

/// What the table learnt while resolving a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Resolved {
    /// The node's id.
    pub id: NodeId,
    /// The node is new and its zone is known: the zones changed.
    pub new_zone_info: bool,
    /// The node is new (its liveness was never read).
    pub new: bool,
}

/// Host ids to dense node ids, zones and last-seen liveness.
#[derive(Debug, Default)]
pub struct NodeTable {
    ids: FxHashMap<Uuid, NodeId>,
    /// Direct-mapped cache: object address -> (host id, id).
    cache: Vec<(usize, Uuid, NodeId)>,
    nodes: Vec<Entry>,
    /// Distinct (datacenter, rack) pairs; the index is the zone number.
    zones: Vec<(String, String)>,
    local_dc: Option<String>,
    local_rack: Option<String>,
}

impl NodeTable {
    /// An empty table for a client in `local_dc` / `local_rack` (either may be unknown).
    pub fn new(local_dc: Option<String>, local_rack: Option<String>) -> Self {
        NodeTable {
            local_dc,
            local_rack,
            ..NodeTable::default()
        }
    }

    /// How many hosts have an id.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether no host has an id yet.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The id of `host_id`, if it has one.
    pub fn get(&self, host_id: Uuid) -> Option<NodeId> {
        self.ids.get(&host_id).copied()
    }

    /// The id of `key`'s host, if it has one, through the object cache first.
    pub fn lookup(&self, key: &NodeKey<'_>) -> Option<NodeId> {
        self.cached(key).or_else(|| self.get(key.host_id))
    }

    /// The id of `key`'s node object from the cache (a few slots probed from its own).
    #[inline]
    fn cached(&self, key: &NodeKey<'_>) -> Option<NodeId> {
        if key.object == 0 || self.cache.is_empty() {
            return None;
        }
        let slot = slot_of(key.object);
        for p in 0..PROBES {
            let (o, h, id) = self.cache[(slot + p) % CACHE];
            if o == key.object {
                return (h == key.host_id).then_some(id);
            }
            if o == 0 {
                return None;
            }
        }
        None
    }

    /// Maps `key` to its id, giving a new host the next free id, and records whether it is
    /// `live` now. `None` when the table is full ([`MAX_NODES`] hosts).
    pub fn map(&mut self, key: &NodeKey<'_>, live: bool) -> Option<Mapped> {
        self.map_at(key, live, 0)
    }

    /// [`Self::map`], recording the liveness as read at `now_ns`.
    pub fn map_at(&mut self, key: &NodeKey<'_>, live: bool, now_ns: u64) -> Option<Mapped> {
        let r = self.resolve(key)?;
        let liveness = self.set_live(r.id, live, now_ns);
        Some(Mapped {
            id: r.id,
            new_zone_info: r.new_zone_info,
            // A node first seen down is news to the policy; one first seen live is not (the
            // load generator does the same: nodes are up from the start).
            liveness: if r.new { (!live).then_some(Liveness::WentDown) } else { liveness },
        })
    }

    /// The id of `key`'s host, giving a new host the next free id (live until told
    /// otherwise, its liveness never read). `None` when the table is full ([`MAX_NODES`]
    /// hosts). Through the object cache: no hashing for a node object seen before.
    #[inline]
    pub fn resolve(&mut self, key: &NodeKey<'_>) -> Option<Resolved> {
        if let Some(id) = self.cached(key) {
            return Some(Resolved {
                id,
                new_zone_info: false,
                new: false,
            });
        }
        self.resolve_slow(key)
    }

    #[cold]
    fn resolve_slow(&mut self, key: &NodeKey<'_>) -> Option<Resolved> {
        let known = self.ids.get(&key.host_id).copied();
        let (id, new_zone_info, new) = match known {
            Some(id) => (id, false, false),
            None => {
                if self.nodes.len() >= MAX_NODES {
                    return None;
                }
                let id = NodeId(self.nodes.len() as u16);
                let zone = self.zone_of(key.datacenter, key.rack);
                self.ids.insert(key.host_id, id);
                self.nodes.push(Entry {
                    zone,
                    live: true,
                    checked_ns: NEVER,
                    sharder: None,
                    sharder_ns: NEVER,
                });
                (id, zone.is_some(), true)
            }
        };
        if key.object != 0 {
            if self.cache.is_empty() {
                self.cache = vec![(0, Uuid::nil(), NodeId(0)); CACHE];
            }
            // The first slot of its probe sequence that is free or already this object's, else the
            // first (evicting another object, which then misses once).
            let slot = slot_of(key.object);
            let p = (0..PROBES)
                .find(|&p| matches!(self.cache[(slot + p) % CACHE], (o, _, _) if o == 0 || o == key.object))
                .unwrap_or(0);
            self.cache[(slot + p) % CACHE] = (key.object, key.host_id, id);
        }
        Some(Resolved { id, new_zone_info, new })
    }

    /// Whether node `id` was live when last read, and when that was (`None`: never read).
    #[inline]
    pub fn liveness(&self, id: NodeId) -> (bool, Option<u64>) {
        let e = &self.nodes[id.index()];
        (e.live, (e.checked_ns != NEVER).then_some(e.checked_ns))
    }

    /// Node `id`'s sharder (which shard of a ScyllaDB node owns a token; `None` for Apache
    /// Cassandra), from `read` when the last reading is [`SHARDER_TTL_NS`] old or more. Reading
    /// it costs an atomic load of the node's connection pool; it changes only when the node's
    /// connections are made again, and a shard a moment stale only sends the request over
    /// another shard's connection (the driver's own fallback when a shard has none).
    #[inline]
    pub fn sharder(&mut self, id: NodeId, now_ns: u64, read: impl FnOnce() -> Option<Sharder>) -> Option<&Sharder> {
        let e = &mut self.nodes[id.index()];
        if e.sharder_ns == NEVER || now_ns.saturating_sub(e.sharder_ns) >= SHARDER_TTL_NS {
            e.sharder = read();
            e.sharder_ns = now_ns.min(NEVER - 1);
        }
        e.sharder.as_ref()
    }

    /// Records that node `id` was read `live` at `now_ns`; returns the change to tell the
    /// policy, if any.
    #[inline]
    pub fn set_live(&mut self, id: NodeId, live: bool, now_ns: u64) -> Option<Liveness> {
        let e = &mut self.nodes[id.index()];
        let change = match (e.live, live) {
            (true, false) => Some(Liveness::WentDown),
            (false, true) => Some(Liveness::CameUp),
            _ => None,
        };
        e.live = live;
        e.checked_ns = now_ns.min(NEVER - 1);
        change
    }

    fn zone_of(&mut self, dc: Option<&str>, rack: Option<&str>) -> Option<u32> {
        let (dc, rack) = (dc?, rack.unwrap_or(""));
        if let Some(z) = self.zones.iter().position(|(d, r)| d == dc && r == rack) {
            return Some(z as u32);
        }
        self.zones.push((dc.to_string(), rack.to_string()));
        Some(self.zones.len() as u32 - 1)
    }

    /// The zone of every node that has one, for [`replica_lb_policy::Event::Topology`].
    pub fn zones(&self) -> Vec<(NodeId, u32)> {
        self.nodes
            .iter()
            .enumerate()
            .filter_map(|(i, e)| e.zone.map(|z| (NodeId(i as u16), z)))
            .collect()
    }

    /// The client's own zone: its (datacenter, rack) when both are known and some node lives
    /// there. A client that knows only its datacenter has no zone (every node then counts as
    /// local to the policies; the datacenter preference is applied when choosing candidates).
    pub fn local_zone(&self) -> Option<u32> {
        let (dc, rack) = (self.local_dc.as_deref()?, self.local_rack.as_deref()?);
        self.zones.iter().position(|(d, r)| d == dc && r == rack).map(|z| z as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(n: u128, dc: &'static str, rack: &'static str) -> NodeKey<'static> {
        NodeKey {
            host_id: Uuid::from_u128(n),
            datacenter: Some(dc),
            rack: Some(rack),
            object: n as usize * 64,
        }
    }

    #[test]
    fn ids_are_dense_and_stable_across_down_and_up() {
        let mut t = NodeTable::new(Some("dc1".into()), Some("r2".into()));
        let a = t.map(&key(10, "dc1", "r1"), true).unwrap();
        let b = t.map(&key(7, "dc1", "r2"), true).unwrap();
        assert_eq!((a.id, b.id), (NodeId(0), NodeId(1)));
        assert!(a.new_zone_info && a.liveness.is_none());
        // Down, then up again: same id, one event each.
        assert_eq!(t.map(&key(10, "dc1", "r1"), false).unwrap().liveness, Some(Liveness::WentDown));
        assert_eq!(t.map(&key(10, "dc1", "r1"), false).unwrap().liveness, None);
        let back = t.map(&key(10, "dc1", "r1"), true).unwrap();
        assert_eq!((back.id, back.liveness), (NodeId(0), Some(Liveness::CameUp)));
        // A node added later gets the next id; a node first seen down is reported down.
        let c = t.map(&key(99, "dc2", "r1"), false).unwrap();
        assert_eq!((c.id, c.liveness), (NodeId(2), Some(Liveness::WentDown)));
        assert_eq!(t.get(Uuid::from_u128(7)), Some(NodeId(1)));
        assert_eq!(t.get(Uuid::from_u128(8)), None);
        assert_eq!(t.zones(), [(NodeId(0), 0), (NodeId(1), 1), (NodeId(2), 2)]);
        assert_eq!(t.local_zone(), Some(1));
    }

    #[test]
    fn unknown_locations_have_no_zone_and_the_table_is_bounded() {
        let mut t = NodeTable::new(Some("dc1".into()), None);
        let k = NodeKey {
            host_id: Uuid::from_u128(1),
            datacenter: None,
            rack: None,
            object: 0,
        };
        let m = t.map(&k, true).unwrap();
        assert!(!m.new_zone_info);
        assert!(t.zones().is_empty());
        assert_eq!(t.local_zone(), None, "no rack: no local zone");
        for n in 2..=MAX_NODES as u128 {
            assert!(t.map(&key(n, "dc1", "r1"), true).is_some());
        }
        assert_eq!(t.len(), MAX_NODES);
        assert!(t.map(&key(1 << 40, "dc1", "r1"), true).is_none(), "full");
        assert!(t.map(&key(5, "dc1", "r1"), true).is_some(), "known hosts still map");
    }
}
