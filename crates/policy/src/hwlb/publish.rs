//! When a node publishes its hit rate by gossip (the published rule): the first time, then
//! whenever it moved by more than 0.1, or by more than 0.01 once 5 s have passed since the last
//! publication. Small moves are held back so gossip stays quiet while a rate drifts; a big one
//! (a cold node warming) goes out at once. The simulator and the real node both apply it.

/// A change that is published at once.
pub const BIG_CHANGE: f64 = 0.1;
/// A change that is published once [`MIN_INTERVAL_NS`] has passed.
pub const SMALL_CHANGE: f64 = 0.01;
/// How long a small change waits at least, ns.
pub const MIN_INTERVAL_NS: u64 = 5_000_000_000;

/// The last rate a node published, and the rule for the next one.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RatePublisher {
    last: Option<(f64, u64)>,
}

impl RatePublisher {
    /// Nothing published yet.
    pub fn new() -> Self {
        RatePublisher::default()
    }

    /// Whether `rate`, measured at `now_ns`, is to be published now; if so it becomes the last
    /// published rate.
    pub fn offer(&mut self, rate: f64, now_ns: u64) -> bool {
        let publish = match self.last {
            None => true,
            Some((last, at_ns)) => {
                let moved = (rate - last).abs();
                moved > BIG_CHANGE || (moved > SMALL_CHANGE && now_ns.saturating_sub(at_ns) >= MIN_INTERVAL_NS)
            }
        };
        if publish {
            self.last = Some((rate, now_ns));
        }
        publish
    }

    /// The last rate published, if any.
    pub fn last(&self) -> Option<f64> {
        self.last.map(|(rate, _)| rate)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_always_then_big_at_once_and_small_after_five_seconds() {
        let s = 1_000_000_000;
        let mut p = RatePublisher::new();
        assert_eq!(p.last(), None);
        assert!(p.offer(0.5, 0));
        assert!(!p.offer(0.55, s), "small change, too soon");
        assert!(!p.offer(0.505, 6 * s), "below the small threshold");
        assert!(p.offer(0.52, 6 * s), "small change after 5 s");
        assert!(p.offer(0.70, 6 * s + 1), "big change at once");
        assert!(!p.offer(0.715, 7 * s));
        assert_eq!(p.last(), Some(0.70));
    }
}
