//! Keys, values and key-popularity distributions of the load generator.
//!
//! Keys are the decimal numbers `0..N-1` as text (easy to type into grpcurl); the value of key
//! `i` is a fixed pattern (`v<i>:` repeated, cut to the size), so a reader can check it.

use bytes::Bytes;
use policy::Rng;

/// The key bytes of key number `i`.
pub fn key_bytes(i: u64) -> Bytes {
    Bytes::from(i.to_string())
}

/// The value written for key `i`, `len` bytes long.
pub fn value_for(i: u64, len: usize) -> Bytes {
    let unit = format!("v{i}:");
    let mut v = Vec::with_capacity(len);
    while v.len() < len {
        let take = (len - v.len()).min(unit.len());
        v.extend_from_slice(&unit.as_bytes()[..take]);
    }
    Bytes::from(v)
}

/// Which keys requests go to.
#[derive(Clone, Debug)]
pub enum KeyChooser {
    /// Every key equally likely.
    Uniform {
        /// Number of keys.
        n: u64,
    },
    /// Zipfian over key numbers (YCSB's generator, Gray et al.): key 0 most popular.
    Zipfian {
        /// Number of keys.
        n: u64,
        /// Skew (YCSB: 0.99).
        theta: f64,
        /// Precomputed zeta(n, theta).
        zeta_n: f64,
        /// Precomputed constants.
        alpha: f64,
        /// Precomputed constants.
        eta: f64,
    },
    /// A hot set (the first `hot_keys`) receives `hot_ops` of the requests.
    Hotspot {
        /// Number of keys.
        n: u64,
        /// Size of the hot set.
        hot_keys: u64,
        /// Share of requests to the hot set.
        hot_ops: f64,
    },
}

fn zeta(n: u64, theta: f64) -> f64 {
    (1..=n).map(|i| 1.0 / (i as f64).powf(theta)).sum()
}

impl KeyChooser {
    /// Parses `uniform`, `zipfian` or `hotspot` over `n` keys (n >= 1). Zipfian uses
    /// theta 0.99; hotspot sends `hot_ops` of requests to the first `hot_fraction` of keys.
    pub fn new(name: &str, n: u64, hot_fraction: f64, hot_ops: f64) -> Result<KeyChooser, String> {
        if n == 0 {
            return Err("--keys must be at least 1".into());
        }
        match name {
            "uniform" => Ok(KeyChooser::Uniform { n }),
            "zipfian" => Ok(KeyChooser::zipfian(n, 0.99)),
            "hotspot" => {
                if !(0.0..=1.0).contains(&hot_fraction) || !(0.0..=1.0).contains(&hot_ops) {
                    return Err(format!("hotspot fractions must be in [0, 1] (got {hot_fraction} and {hot_ops})"));
                }
                let hot_keys = ((n as f64 * hot_fraction).round() as u64).clamp(1, n);
                Ok(KeyChooser::Hotspot { n, hot_keys, hot_ops })
            }
            other => Err(format!("--distribution '{other}' is not one of: uniform, zipfian, hotspot")),
        }
    }

    /// Zipfian over `n >= 1` keys with skew `theta` in (0, 1) U (1, ...) (YCSB: 0.99); key 0
    /// is the most popular.
    pub fn zipfian(n: u64, theta: f64) -> KeyChooser {
        let n = n.max(1);
        let zeta_n = zeta(n, theta);
        let zeta_2 = zeta(2.min(n), theta);
        let eta = if n <= 2 {
            0.0
        } else {
            (1.0 - (2.0 / n as f64).powf(1.0 - theta)) / (1.0 - zeta_2 / zeta_n)
        };
        KeyChooser::Zipfian {
            n,
            theta,
            zeta_n,
            alpha: 1.0 / (1.0 - theta),
            eta,
        }
    }

    /// The next key number.
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        match *self {
            KeyChooser::Uniform { n } => rng.below(n as usize) as u64,
            KeyChooser::Zipfian {
                n,
                theta,
                zeta_n,
                alpha,
                eta,
            } => {
                let u = rng.unit_f64();
                let uz = u * zeta_n;
                if uz < 1.0 {
                    return 0;
                }
                if uz < 1.0 + 0.5f64.powf(theta) {
                    return 1.min(n - 1);
                }
                ((n as f64 * (eta * u - eta + 1.0).powf(alpha)) as u64).min(n - 1)
            }
            KeyChooser::Hotspot { n, hot_keys, hot_ops } => {
                if hot_keys >= n || rng.chance(hot_ops) {
                    rng.below(hot_keys as usize) as u64
                } else {
                    hot_keys + rng.below((n - hot_keys) as usize) as u64
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_checkable() {
        assert_eq!(&value_for(7, 7)[..], b"v7:v7:v");
        assert_eq!(value_for(7, 0).len(), 0);
        assert_eq!(&key_bytes(42)[..], b"42");
    }

    #[test]
    fn distributions_stay_in_range_and_skew() {
        let mut rng = Rng::seed_from_u64(1);
        for name in ["uniform", "zipfian", "hotspot"] {
            let k = KeyChooser::new(name, 1000, 0.1, 0.9).unwrap();
            let mut low = 0;
            for _ in 0..10_000 {
                let x = k.sample(&mut rng);
                assert!(x < 1000);
                low += (x < 100) as u32;
            }
            match name {
                "uniform" => assert!((800..1200).contains(&low), "{low}"),
                _ => assert!(low > 5000, "{name}: {low}"),
            }
        }
        assert!(KeyChooser::new("nope", 10, 0.1, 0.9).unwrap_err().contains("nope"));
        assert_eq!(KeyChooser::new("zipfian", 1, 0.1, 0.9).unwrap().sample(&mut rng), 0);
    }
}
