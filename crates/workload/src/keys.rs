//! Which key a request reads: uniform, Zipfian, hot-set or sequential.
//!
//! Keys are numbers `0..count`; the simulator hashes a key to its replica group, so popular
//! keys spread over the ring.

use replica_lb_policy::Rng;

/// Key choice pattern.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum KeyPattern {
    /// Every key equally likely.
    Uniform,
    /// Zipf's law with the given exponent (rank 1 most popular).
    Zipfian {
        /// Exponent s (> 0).
        exponent: f64,
    },
    /// `hot_fraction` of reads go uniformly to keys `0..hot_keys`, the rest uniformly to the
    /// other keys.
    HotSet {
        /// Size of the hot set.
        hot_keys: u64,
        /// Share of reads to it.
        hot_fraction: f64,
    },
    /// Each client walks the key space in order from its own offset.
    Sequential,
}

/// The key space and pattern.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KeySpec {
    /// Pattern.
    pub pattern: KeyPattern,
    /// Number of keys.
    pub count: u64,
}

/// A per-client key generator.
#[derive(Clone, Debug)]
pub struct KeyGen {
    spec: KeySpec,
    next_sequential: u64,
    /// Boxed: a generator is read on every request, and without Zipfian keys it stays small.
    zipf: Option<Box<Zipf>>,
}

impl KeyGen {
    /// The generator of client `client` out of `clients`.
    pub fn new(spec: KeySpec, client: usize, clients: usize) -> Self {
        let zipf = match spec.pattern {
            KeyPattern::Zipfian { exponent } => Some(Box::new(Zipf::new(spec.count, exponent))),
            _ => None,
        };
        KeyGen {
            spec,
            next_sequential: (spec.count as u128 * client as u128 / clients.max(1) as u128) as u64,
            zipf,
        }
    }

    /// The next key.
    #[inline]
    pub fn next(&mut self, rng: &mut Rng) -> u64 {
        let n = self.spec.count;
        match self.spec.pattern {
            KeyPattern::Uniform => rng.below(n as usize) as u64,
            KeyPattern::HotSet { hot_keys, hot_fraction } => {
                if rng.unit_f64() < hot_fraction {
                    rng.below(hot_keys as usize) as u64
                } else {
                    hot_keys + rng.below((n - hot_keys) as usize) as u64
                }
            }
            KeyPattern::Sequential => {
                let k = self.next_sequential;
                self.next_sequential = (k + 1) % n;
                k
            }
            KeyPattern::Zipfian { .. } => match &self.zipf {
                Some(z) => z.sample(rng) - 1,
                None => 0,
            },
        }
    }
}

/// Zipf sampling by rejection-inversion (Hörmann and Derflinger, as in Apache Commons RNG):
/// constant time and no table, for any key-space size.
#[derive(Clone, Debug)]
struct Zipf {
    n: f64,
    s: f64,
    h_integral_x1: f64,
    h_integral_n: f64,
    threshold: f64,
}

impl Zipf {
    fn new(n: u64, s: f64) -> Self {
        let mut z = Zipf {
            n: n as f64,
            s,
            h_integral_x1: 0.0,
            h_integral_n: 0.0,
            threshold: 0.0,
        };
        z.h_integral_x1 = z.h_integral(1.5) - 1.0;
        z.h_integral_n = z.h_integral(z.n + 0.5);
        z.threshold = 2.0 - z.h_integral_inverse(z.h_integral(2.5) - z.h(2.0));
        z
    }

    fn h(&self, x: f64) -> f64 {
        (-self.s * x.ln()).exp()
    }

    fn h_integral(&self, x: f64) -> f64 {
        let log_x = x.ln();
        helper2((1.0 - self.s) * log_x) * log_x
    }

    fn h_integral_inverse(&self, x: f64) -> f64 {
        let mut t = x * (1.0 - self.s);
        if t < -1.0 {
            t = -1.0;
        }
        (helper1(t) * x).exp()
    }

    /// A rank in 1..=n.
    fn sample(&self, rng: &mut Rng) -> u64 {
        loop {
            let u = self.h_integral_n + rng.unit_f64() * (self.h_integral_x1 - self.h_integral_n);
            let x = self.h_integral_inverse(u);
            let k = x.round().clamp(1.0, self.n);
            if k - x <= self.threshold || u >= self.h_integral(k + 0.5) - self.h(k) {
                return k as u64;
            }
        }
    }
}

fn helper1(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.ln_1p() / x
    } else {
        1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x))
    }
}

fn helper2(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.exp_m1() / x
    } else {
        1.0 + x * 0.5 * (1.0 + x * (1.0 / 3.0) * (1.0 + 0.25 * x))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zipf_ranks_follow_the_law() {
        let spec = KeySpec {
            pattern: KeyPattern::Zipfian { exponent: 1.0 },
            count: 1000,
        };
        let mut g = KeyGen::new(spec, 0, 1);
        let mut rng = Rng::seed_from_u64(9);
        let mut counts = vec![0u32; 1000];
        for _ in 0..200_000 {
            counts[g.next(&mut rng) as usize] += 1;
        }
        // P(1)/P(2) = 2 for s = 1.
        let ratio = counts[0] as f64 / counts[1] as f64;
        assert!((ratio - 2.0).abs() < 0.15, "{ratio}");
    }

    #[test]
    fn hot_set_share() {
        let spec = KeySpec {
            pattern: KeyPattern::HotSet {
                hot_keys: 10,
                hot_fraction: 0.9,
            },
            count: 1000,
        };
        let mut g = KeyGen::new(spec, 0, 1);
        let mut rng = Rng::seed_from_u64(1);
        let hot = (0..100_000).filter(|_| g.next(&mut rng) < 10).count();
        assert!((89_000..91_000).contains(&hot), "{hot}");
    }

    #[test]
    fn sequential_walks_from_each_clients_offset() {
        let spec = KeySpec {
            pattern: KeyPattern::Sequential,
            count: 10,
        };
        let mut g = KeyGen::new(spec, 1, 2);
        let mut rng = Rng::seed_from_u64(1);
        let ks: Vec<u64> = (0..6).map(|_| g.next(&mut rng)).collect();
        assert_eq!(ks, vec![5, 6, 7, 8, 9, 0]);
    }
}
