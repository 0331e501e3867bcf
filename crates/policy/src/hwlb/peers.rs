//! The coordinator's table of its peers' hit rates, with the published rules:
//! - a rate older than `stale_after` (1 s) counts as `stale_rate` (0.95) for the request, so
//!   the peer gets traffic and reports back;
//! - a peer with no known rate (just restarted) counts as 0.0;
//! - a peer whose connection dropped is forgotten (back to "no known rate");
//! - a peer that runs an older protocol without rates turns HWLB off for its replica sets;
//! - the coordinator's own rate is always live (never stale).

use crate::nodes::NodeTable;
use crate::types::NodeId;

/// What the coordinator knows of one peer's hit rate.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
enum Known {
    /// Nothing yet (or forgotten): counts as 0.0.
    #[default]
    Nothing,
    /// The peer never reports rates: HWLB steps aside.
    Unsupported,
    /// A reported rate and when it arrived.
    Rate { hit_rate: f64, updated_ns: u64 },
}

/// Peers' hit rates, per node heard of (compact: a client of a large cluster hears of a few).
#[derive(Clone, Debug)]
pub struct PeerRates {
    entries: NodeTable<Known>,
    local: Option<NodeId>,
    stale_after_ns: u64,
    stale_rate: f64,
    /// Bumped whenever an effective rate may have changed other than by ageing, so a cached
    /// plan can tell in one comparison that its inputs still hold.
    version: u64,
}

impl PeerRates {
    /// An empty table with the given staleness rule.
    pub fn new(stale_after_ns: u64, stale_rate: f64) -> Self {
        PeerRates {
            entries: NodeTable::new(),
            local: None,
            stale_after_ns,
            stale_rate,
            version: 0,
        }
    }

    fn slot(&mut self, node: NodeId) -> &mut Known {
        self.entries.entry(node)
    }

    /// Records a rate reported by (or measured on) `node` at `now_ns`. Rates outside [0, 1]
    /// or NaN are ignored: a peer's bad byte must not poison the plan.
    pub fn record(&mut self, node: NodeId, hit_rate: f64, now_ns: u64) {
        if !(0.0..=1.0).contains(&hit_rate) {
            return;
        }
        let stale_after_ns = self.stale_after_ns;
        let slot = self.slot(node);
        let unchanged = match *slot {
            Known::Rate { hit_rate: old, updated_ns } => old == hit_rate && now_ns.saturating_sub(updated_ns) <= stale_after_ns,
            Known::Unsupported => return,
            Known::Nothing => false,
        };
        *slot = Known::Rate {
            hit_rate,
            updated_ns: now_ns,
        };
        if !unchanged {
            self.version += 1;
        }
    }

    /// Declares which node runs this coordinator (its rate is never stale).
    pub fn set_local(&mut self, node: NodeId) {
        if self.local != Some(node) {
            self.local = Some(node);
            self.version += 1;
        }
    }

    /// Forgets what is known of `node` (its connection dropped or it went down).
    pub fn forget(&mut self, node: NodeId) {
        // Written only when it changes: a node never heard of takes no entry.
        if !matches!(self.entries.value(node), Known::Unsupported | Known::Nothing) {
            *self.slot(node) = Known::Nothing;
            self.version += 1;
        }
    }

    /// Marks whether `node` reports rates at all.
    pub fn set_supported(&mut self, node: NodeId, supported: bool) {
        let current = self.entries.value(node);
        let next = match (supported, current) {
            (false, _) => Known::Unsupported,
            (true, Known::Unsupported) => Known::Nothing,
            (true, current) => current,
        };
        if next != current {
            *self.slot(node) = next;
            self.version += 1;
        }
    }

    /// Changes whenever an effective rate may have changed other than by ageing.
    #[inline]
    pub fn version(&self) -> u64 {
        self.version
    }

    /// Until when `node`'s effective rate cannot change by ageing alone: the moment a fresh
    /// peer rate turns stale; `u64::MAX` for the local node, unknown peers and rates already
    /// stale (only news can change those, and news bumps the version).
    #[inline]
    pub fn fixed_until_ns(&self, node: NodeId, now_ns: u64) -> u64 {
        match self.entries.get(node) {
            Some(Known::Rate { updated_ns, .. }) if Some(node) != self.local => {
                let turns_stale_ns = updated_ns.saturating_add(self.stale_after_ns);
                if now_ns <= turns_stale_ns {
                    turns_stale_ns
                } else {
                    u64::MAX
                }
            }
            _ => u64::MAX,
        }
    }

    /// The rate to use for `node` in a request at `now_ns`; `None` if it reports no rates.
    #[inline]
    pub fn effective(&self, node: NodeId, now_ns: u64) -> Option<f64> {
        match self.entries.value(node) {
            Known::Nothing => Some(0.0),
            Known::Unsupported => None,
            Known::Rate { hit_rate, updated_ns } => {
                let stale = Some(node) != self.local && now_ns.saturating_sub(updated_ns) > self.stale_after_ns;
                Some(if stale { self.stale_rate } else { hit_rate })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn published_rules() {
        let mut t = PeerRates::new(1000 * MS, 0.95);
        let (a, b, c) = (NodeId(0), NodeId(1), NodeId(2));
        t.set_local(a);
        assert_eq!(t.effective(b, 0), Some(0.0), "no known rate counts as 0.0");
        t.record(b, 0.6, 0);
        t.record(a, 0.7, 0);
        assert_eq!(t.effective(b, 1000 * MS), Some(0.6), "exactly 1 s old is still fresh");
        assert_eq!(t.effective(b, 1001 * MS), Some(0.95), "older than 1 s counts as 0.95");
        assert_eq!(t.effective(a, 5000 * MS), Some(0.7), "the local rate is never stale");
        t.forget(b);
        assert_eq!(t.effective(b, 1001 * MS), Some(0.0), "a dropped peer is forgotten");
        t.set_supported(c, false);
        t.record(c, 0.5, 0);
        assert_eq!(t.effective(c, 0), None, "an old peer has no rate");
        t.set_supported(c, true);
        assert_eq!(t.effective(c, 0), Some(0.0));
        t.record(b, 1.5, 0);
        t.record(b, f64::NAN, 0);
        assert_eq!(t.effective(b, 0), Some(0.0), "out-of-range rates are ignored");
    }
}
