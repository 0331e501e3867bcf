//! Where a key's replicas live: one token ring, used by the simulator and by the real cluster's
//! nodes and token-aware clients, so that the same key has the same replicas on both.
//!
//! Each member owns `vnodes` tokens. With one token per node (the default) the tokens are
//! evenly spaced in id order, as an operator balances a single-token Cassandra cluster: every
//! node owns the same share of the keys. With more, each token is a fixed pseudo-random
//! function of (node id, vnode index), Cassandra's classic random vnodes. A key's token is a
//! hash of its bytes (the load generator's keys are the decimal numbers `0..N-1` as text;
//! [`index_token`] hashes key `k` without writing the text). A key's replicas are the first
//! `replication_factor` distinct nodes met walking clockwise from the key's token; with
//! [`Placement::OnePerZone`] nodes whose zone already holds a replica are passed over first
//! (like NetworkTopologyStrategy with racks), and taken only when the zones run out.
//!
//! Keys are grouped by their replica set: a *group* is one distinct set of replicas (its order
//! is that of the first range that has it), numbered densely from 0. Policies keep per-group
//! state (Wait queues, plans), so ranges with the same replicas share one group; with RF = N
//! there is a single group and a lookup does no hashing at all.

use replica_lb_policy::{NodeId, ReplicaSet, MAX_REPLICAS};
use std::collections::HashMap;

/// How replicas of a key are placed on the ring.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// The key's node and the next RF-1 distinct nodes clockwise.
    Ring,
    /// Walk the ring, passing over nodes whose zone already holds a replica (one replica per
    /// zone while there are zones left).
    OnePerZone,
}

impl Placement {
    /// The name used in scenario files and node configurations.
    pub fn name(self) -> &'static str {
        match self {
            Placement::Ring => "ring",
            Placement::OnePerZone => "one-per-zone",
        }
    }

    /// Parses a name written by [`Placement::name`]; the error names the value and what is
    /// allowed.
    pub fn parse(name: &str) -> Result<Placement, String> {
        match name {
            "ring" => Ok(Placement::Ring),
            "one-per-zone" => Ok(Placement::OnePerZone),
            other => Err(format!("placement '{other}' is not one of: ring, one-per-zone")),
        }
    }
}

/// A ring member: its id and its zone (rack or availability zone).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Member {
    /// The node.
    pub id: NodeId,
    /// Its zone index.
    pub zone: u32,
}

/// A ring over a fixed set of members.
#[derive(Clone, Debug)]
pub struct Ring {
    /// The tokens, ascending; range `i` is `(tokens[i-1], tokens[i]]` (range 0 wraps).
    tokens: Vec<u64>,
    /// The group of each range.
    range_group: Vec<u32>,
    /// A bucketed index in front of the tokens: `bucket_start[b]` is the first range whose
    /// token is at least `b << bucket_shift` (`bucket_start[buckets]` = the number of tokens),
    /// so a lookup searches only the few tokens of its key's bucket instead of binary-searching
    /// the whole ring (one or two loads instead of a dozen dependent ones on a large ring).
    bucket_start: Vec<u32>,
    /// Right shift from a token to its bucket (64 - log2 of the bucket count).
    bucket_shift: u32,
    /// Per bucket, the answer itself when the bucket holds at most one token (always, with one
    /// evenly spaced token per node): one load per lookup.
    bucket_answer: Vec<BucketAnswer>,
    /// The distinct replica lists (the same replicas in another ring order are another group).
    groups: Vec<ReplicaSet>,
    /// The members, sorted by id.
    members: Vec<Member>,
    /// Their ids.
    nodes: Vec<NodeId>,
    replication_factor: usize,
    vnodes: u32,
    placement: Placement,
}

/// 64-bit FNV-1a: stable across platforms and versions.
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// SplitMix64's finaliser: a cheap, well-mixed hash that spreads nearby inputs over the whole
/// range.
#[inline]
pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The token of a key's bytes.
pub fn key_token(key: &[u8]) -> u64 {
    mix64(fnv1a(key))
}

/// The token of key number `k`, whose bytes are its decimal text (the load generator's keys):
/// equal to `key_token(k.to_string().as_bytes())`, without the allocation.
#[inline]
pub fn index_token(k: u64) -> u64 {
    let mut digits = [0u8; 20];
    let mut start = digits.len();
    let mut rest = k;
    loop {
        start -= 1;
        digits[start] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    key_token(&digits[start..])
}

/// The token of a node's `vnode`-th virtual node when tokens are random (`vnodes` > 1).
fn random_token(node: NodeId, vnode: u32) -> u64 {
    mix64(((node.0 as u64) << 32 | vnode as u64) ^ 0x5eed_0f12_ce7b_1d4b)
}

/// The single token of the member of rank `rank` among `count`: evenly spaced, the last one at
/// `u64::MAX` so that no key wraps past it.
fn even_token(rank: usize, count: usize) -> u64 {
    ((((rank as u128) + 1) << 64) / count as u128 - 1) as u64
}

impl Ring {
    /// The ring of `members` (any order; a repeated id keeps its first zone), each with
    /// `vnodes` tokens (at least 1), placing `replication_factor` replicas per key (fewer when
    /// there are fewer members, at most [`MAX_REPLICAS`]).
    pub fn new(members: &[Member], vnodes: u32, replication_factor: usize, placement: Placement) -> Ring {
        let mut sorted: Vec<Member> = Vec::with_capacity(members.len());
        for m in members {
            if !sorted.iter().any(|s| s.id == m.id) {
                sorted.push(*m);
            }
        }
        sorted.sort_by_key(|m| m.id);
        let vnodes = vnodes.max(1);
        let mut points: Vec<(u64, usize)> = if vnodes == 1 {
            (0..sorted.len()).map(|rank| (even_token(rank, sorted.len()), rank)).collect()
        } else {
            sorted
                .iter()
                .enumerate()
                .flat_map(|(rank, m)| (0..vnodes).map(move |v| (random_token(m.id, v), rank)))
                .collect()
        };
        points.sort_unstable();
        let want = replication_factor.min(sorted.len()).min(MAX_REPLICAS);
        let mut zone_ids: Vec<u32> = sorted.iter().map(|m| m.zone).collect();
        zone_ids.sort_unstable();
        zone_ids.dedup();
        let zones = zone_ids.len();
        let mut groups: Vec<ReplicaSet> = Vec::new();
        // A group is a replica list in ring order (primary first), not a set: the order is what
        // a snitch keeps when proximity ties (Cassandra's topology order), so two ranges with
        // the same replicas in another order are two groups.
        let mut group_of_order: HashMap<Vec<NodeId>, u32> = HashMap::new();
        let mut range_group = Vec::with_capacity(points.len());
        for start in 0..points.len() {
            let set = walk(&points, start, &sorted, zones, want, placement);
            let next = groups.len() as u32;
            let group = *group_of_order.entry(set.as_slice().to_vec()).or_insert(next);
            if group == next {
                groups.push(set);
            }
            range_group.push(group);
        }
        let tokens: Vec<u64> = points.iter().map(|p| p.0).collect();
        let (bucket_start, bucket_shift) = bucket_index(&tokens);
        let bucket_answer = bucket_answers(&tokens, &range_group, &bucket_start);
        Ring {
            tokens,
            range_group,
            bucket_start,
            bucket_shift,
            bucket_answer,
            groups,
            nodes: sorted.iter().map(|m| m.id).collect(),
            members: sorted,
            replication_factor,
            vnodes,
            placement,
        }
    }

    /// The group of the key with this token. An empty ring has no groups: the caller checks
    /// [`Ring::groups`] first.
    #[inline]
    pub fn group_of_token(&self, token: u64) -> u32 {
        if self.groups.len() <= 1 {
            return 0;
        }
        let b = (token >> self.bucket_shift) as usize;
        let a = self.bucket_answer[b];
        if a.above == SEARCH {
            return self.search(b, token);
        }
        let group = if token <= a.token { a.below } else { a.above };
        debug_assert_eq!(group, self.search(b, token));
        group
    }

    /// The group of the range of `token`, in bucket `b`, by a search of the bucket's tokens.
    #[inline]
    fn search(&self, b: usize, token: u64) -> u32 {
        // Every token below the bucket's first token value lies before `lo`, every token of a
        // later bucket at or after `hi`: the first token >= `token` is in `lo..=hi`.
        let (lo, hi) = (self.bucket_start[b] as usize, self.bucket_start[b + 1] as usize);
        let i = (lo + self.tokens[lo..hi].partition_point(|&t| t < token)) % self.tokens.len();
        debug_assert_eq!(i, self.tokens.partition_point(|&t| t < token) % self.tokens.len());
        self.range_group[i]
    }

    /// The group of a key given by its bytes.
    #[inline]
    pub fn group_of_key(&self, key: &[u8]) -> u32 {
        if self.groups.len() <= 1 {
            return 0;
        }
        self.group_of_token(key_token(key))
    }

    /// The group of key number `k` (its bytes are its decimal text).
    #[inline]
    pub fn group_of_index(&self, k: u64) -> u32 {
        if self.groups.len() <= 1 {
            return 0;
        }
        self.group_of_token(index_token(k))
    }

    /// The replicas of `group`, primary first. Panics on a group this ring did not give.
    #[inline]
    pub fn replicas(&self, group: u32) -> &ReplicaSet {
        &self.groups[group as usize]
    }

    /// The replicas of a key given by its bytes and its group; an empty ring gives an empty
    /// set (group 0).
    pub fn replicas_of_key(&self, key: &[u8]) -> (&ReplicaSet, u32) {
        static EMPTY: ReplicaSet = ReplicaSet::new();
        if self.groups.is_empty() {
            return (&EMPTY, 0);
        }
        let group = self.group_of_key(key);
        (self.replicas(group), group)
    }

    /// How many distinct replica sets (groups) there are.
    pub fn groups(&self) -> usize {
        self.groups.len()
    }

    /// The member nodes, sorted.
    pub fn nodes(&self) -> &[NodeId] {
        &self.nodes
    }

    /// The members with their zones, sorted by id.
    pub fn members(&self) -> &[Member] {
        &self.members
    }

    /// The configured replication factor (consistency levels count against it).
    pub fn replication_factor(&self) -> usize {
        self.replication_factor
    }

    /// Tokens per node.
    pub fn vnodes(&self) -> u32 {
        self.vnodes
    }

    /// The placement rule.
    pub fn placement(&self) -> Placement {
        self.placement
    }
}

/// The most buckets of a ring's index (5 MB of it, with their answers): a ring of more than
/// half as many tokens has several tokens to some buckets.
const MAX_BUCKET_BITS: u32 = 18;

/// The bucketed index of sorted `tokens` (see `Ring::bucket_start`): a power of two of buckets,
/// at least twice the tokens (up to [`MAX_BUCKET_BITS`]), so that a bucket holds about one token
/// or none with evenly spaced tokens, and few with random ones.
fn bucket_index(tokens: &[u64]) -> (Vec<u32>, u32) {
    debug_assert!(tokens.is_sorted());
    let bits = (usize::BITS - (tokens.len().max(1) * 2 - 1).leading_zeros()).clamp(1, MAX_BUCKET_BITS);
    let shift = 64 - bits;
    let buckets = 1usize << bits;
    let mut start = Vec::with_capacity(buckets + 1);
    let mut i = 0usize;
    for b in 0..buckets {
        let first = (b as u64) << shift;
        while i < tokens.len() && tokens[i] < first {
            i += 1;
        }
        start.push(i as u32);
    }
    start.push(tokens.len() as u32);
    (start, shift)
}

/// `BucketAnswer::above` of a bucket with more than one token: search it.
const SEARCH: u32 = u32::MAX;

/// A lookup's answer for the tokens of one bucket of the ring's index (16 bytes, four to a
/// cache line).
#[derive(Clone, Copy, Debug)]
struct BucketAnswer {
    /// The bucket's one token (`u64::MAX` when it has none or several).
    token: u64,
    /// The group of the key tokens of the bucket up to `token`.
    below: u32,
    /// The group of those above it ([`SEARCH`]: the bucket has several tokens).
    above: u32,
}

/// Each bucket's [`BucketAnswer`]: with no token, every key token of the bucket belongs to the
/// range of the next token (the ring wraps); with one, those up to it to its range and the
/// others to the next one's.
fn bucket_answers(tokens: &[u64], range_group: &[u32], bucket_start: &[u32]) -> Vec<BucketAnswer> {
    if tokens.is_empty() {
        return vec![
            BucketAnswer {
                token: u64::MAX,
                below: 0,
                above: 0
            };
            bucket_start.len() - 1
        ];
    }
    let group = |i: usize| range_group[i % tokens.len()];
    bucket_start
        .windows(2)
        .map(|w| {
            let (lo, hi) = (w[0] as usize, w[1] as usize);
            match hi - lo {
                0 => BucketAnswer {
                    token: u64::MAX,
                    below: group(lo),
                    above: group(lo),
                },
                1 => BucketAnswer {
                    token: tokens[lo],
                    below: group(lo),
                    above: group(lo + 1),
                },
                _ => BucketAnswer {
                    token: u64::MAX,
                    below: SEARCH,
                    above: SEARCH,
                },
            }
        })
        .collect()
}

/// The replicas of the range ending at `points[start]`: walk clockwise taking distinct members
/// (with one-per-zone, members of a zone not yet used; when the zones run out, a second walk
/// takes the members passed over, in ring order).
fn walk(points: &[(u64, usize)], start: usize, members: &[Member], zones: usize, want: usize, placement: Placement) -> ReplicaSet {
    let mut set = ReplicaSet::new();
    let mut zones_used: Vec<u32> = Vec::new();
    let passes = if placement == Placement::OnePerZone { 2 } else { 1 };
    for pass in 0..passes {
        for step in 0..points.len() {
            // The first pass of one-per-zone ends once every zone holds a replica, so a
            // cluster with fewer zones than RF does not walk the whole ring for each range.
            if set.len() == want || (pass == 0 && passes == 2 && zones_used.len() == zones) {
                break;
            }
            let m = members[points[(start + step) % points.len()].1];
            if set.contains(m.id) {
                continue;
            }
            if placement == Placement::OnePerZone && pass == 0 {
                if zones_used.contains(&m.zone) {
                    continue;
                }
                zones_used.push(m.zone);
            }
            set.push(m.id);
        }
    }
    set
}

#[cfg(test)]
mod tests {
    use super::*;

    fn members(n: u16, zones: u32) -> Vec<Member> {
        (0..n)
            .map(|i| Member {
                id: NodeId(i),
                zone: i as u32 % zones,
            })
            .collect()
    }

    #[test]
    fn index_token_is_the_token_of_the_decimal_text() {
        for k in [0u64, 7, 10, 99, 12_345, 999_999, u64::MAX] {
            assert_eq!(index_token(k), key_token(k.to_string().as_bytes()), "key {k}");
        }
    }

    #[test]
    fn one_token_per_node_gives_consecutive_groups_with_equal_shares() {
        let ring = Ring::new(&members(5, 1), 1, 3, Placement::Ring);
        assert_eq!(ring.groups(), 5);
        let mut seen = [0u32; 5];
        for k in 0..50_000u64 {
            let g = ring.group_of_index(k);
            seen[g as usize] += 1;
            let set = ring.replicas(g).as_slice();
            let first = set[0].0;
            assert_eq!(set, &[NodeId(first), NodeId((first + 1) % 5), NodeId((first + 2) % 5)]);
        }
        for s in seen {
            assert!((9_000..11_000).contains(&s), "unequal shares: {seen:?}");
        }
    }

    #[test]
    fn rf_equal_to_n_keeps_each_range_in_its_ring_order() {
        // Every range has the same three replicas; what differs is the order, primary first,
        // which a snitch keeps when proximity ties: one group per order.
        let ring = Ring::new(&members(3, 1), 1, 3, Placement::Ring);
        assert_eq!(ring.groups(), 3);
        for g in 0..3 {
            let set = ring.replicas(g).as_slice();
            let first = set[0].0;
            assert_eq!(set, &[NodeId(first), NodeId((first + 1) % 3), NodeId((first + 2) % 3)]);
        }
        let vnodes = Ring::new(&members(3, 1), 16, 3, Placement::Ring);
        assert!((3..=6).contains(&vnodes.groups()), "{} orders", vnodes.groups());
        let mut primaries = [0u32; 3];
        for k in 0..30_000u64 {
            let set = vnodes.replicas(vnodes.group_of_index(k)).as_slice();
            let mut sorted = set.to_vec();
            sorted.sort();
            assert_eq!(sorted, [NodeId(0), NodeId(1), NodeId(2)]);
            primaries[set[0].index()] += 1;
        }
        assert!(primaries.iter().all(|&p| p > 5_000), "each node leads some keys: {primaries:?}");
    }

    #[test]
    fn one_per_zone_takes_each_zone_once_then_fills() {
        // Zones 0,1,0,1,2,2: every group has three zones.
        let m: Vec<Member> = [0, 1, 0, 1, 2, 2]
            .iter()
            .enumerate()
            .map(|(i, &z)| Member {
                id: NodeId(i as u16),
                zone: z,
            })
            .collect();
        let ring = Ring::new(&m, 1, 3, Placement::OnePerZone);
        for g in 0..ring.groups() as u32 {
            let mut zones: Vec<u32> = ring.replicas(g).as_slice().iter().map(|n| m[n.index()].zone).collect();
            zones.sort();
            assert_eq!(zones, vec![0, 1, 2], "group {g}: {:?}", ring.replicas(g));
        }
        // Two zones for RF = 3: the third replica is the next node passed over.
        let two = Ring::new(&members(4, 2), 1, 3, Placement::OnePerZone);
        assert_eq!(two.replicas(two.group_of_index(1)).len(), 3);
        // Many tokens and too few zones: every group covers both zones and is full.
        let big = Ring::new(&members(64, 2), 256, 3, Placement::OnePerZone);
        for g in 0..big.groups() as u32 {
            let set = big.replicas(g).as_slice();
            assert_eq!(set.len(), 3);
            assert!(set.iter().any(|n| n.0 % 2 == 0) && set.iter().any(|n| n.0 % 2 == 1), "{set:?}");
        }
    }

    #[test]
    fn random_vnodes_are_stable_distinct_and_spread() {
        let ring = Ring::new(&members(5, 1), 16, 3, Placement::Ring);
        let reversed: Vec<Member> = members(5, 1).into_iter().rev().collect();
        let again = Ring::new(&reversed, 16, 3, Placement::Ring);
        let mut primary = [0u32; 5];
        for k in 0..5000u64 {
            let key = k.to_string();
            let (set, group) = ring.replicas_of_key(key.as_bytes());
            assert_eq!(group, ring.group_of_index(k));
            assert_eq!(set.len(), 3);
            assert_eq!(again.replicas_of_key(key.as_bytes()).0.as_slice(), set.as_slice());
            for n in set.as_slice() {
                primary[n.index()] += 1;
            }
        }
        for p in primary {
            assert!(p > 1500, "unbalanced ring: {primary:?}");
        }
    }

    #[test]
    fn fewer_members_than_rf_and_empty() {
        let ring = Ring::new(&members(2, 1), 4, 3, Placement::Ring);
        assert_eq!(ring.replicas_of_key(b"x").0.len(), 2);
        assert_eq!(ring.replication_factor(), 3);
        let empty = Ring::new(&[], 4, 3, Placement::Ring);
        assert!(empty.replicas_of_key(b"x").0.is_empty());
        assert_eq!(empty.groups(), 0);
    }

    #[test]
    fn bucketed_lookup_is_the_binary_search() {
        for (n, vnodes) in [(1u16, 1u32), (2, 1), (5, 1), (50, 1), (2000, 1), (7, 16), (300, 256)] {
            let ring = Ring::new(&members(n, 3), vnodes, 3, Placement::Ring);
            let probes = ring.tokens.iter().flat_map(|&t| [t, t.wrapping_sub(1), t.wrapping_add(1)]);
            for token in probes.chain((0..20_000u64).map(mix64)).chain([0, u64::MAX]) {
                let i = ring.tokens.partition_point(|&t| t < token) % ring.tokens.len();
                assert_eq!(ring.group_of_token(token), if ring.groups() <= 1 { 0 } else { ring.range_group[i] });
            }
        }
    }

    #[test]
    fn placement_names_round_trip() {
        for p in [Placement::Ring, Placement::OnePerZone] {
            assert_eq!(Placement::parse(p.name()), Ok(p));
        }
        assert_eq!(
            Placement::parse("nts").unwrap_err(),
            "placement 'nts' is not one of: ring, one-per-zone"
        );
    }
}
