//! Keys, values and key-popularity models of the load generator.
//!
//! Keys are the decimal numbers `0..N-1` as text (easy to type into grpcurl); the value of key
//! `i` starts with `v<i>:` and goes on with bytes drawn from a generator seeded by `i`, cut to
//! the size: a reader can check it, and a store that compresses its files (Cassandra) cannot
//! shrink it, so the data on disk is as large as the values written.

use bytes::Bytes;
use replica_lb_workload::{KeyPattern, KeySpec};

/// The key bytes of key number `i`.
pub fn key_bytes(i: u64) -> Bytes {
    Bytes::from(i.to_string())
}

/// The value written for key `i`, `len` bytes long.
pub fn value_for(i: u64, len: usize) -> Bytes {
    let mut v = Vec::with_capacity(len);
    v.extend(format!("v{i}:").bytes().take(len));
    // splitmix64 seeded by the key: the same bytes for the same key, every time.
    let mut state = i ^ 0x005e_ed0f_7a1e_5eed;
    while v.len() < len {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        let take = (len - v.len()).min(8);
        v.extend_from_slice(&z.to_le_bytes()[..take]);
    }
    Bytes::from(v)
}

/// `bench --distribution`: which keys are popular.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Distribution {
    /// Every key alike.
    Uniform,
    /// Zipfian, exponent 0.99 (YCSB's skew; key 0 most popular).
    Zipfian,
    /// The first `hot_fraction` of the keys receive `hot_ops` of the requests.
    Hotspot,
}

impl Distribution {
    /// Parses `uniform`, `zipfian` or `hotspot`; the error names the value and the choices.
    pub fn parse(name: &str) -> Result<Distribution, String> {
        match name {
            "uniform" => Ok(Distribution::Uniform),
            "zipfian" => Ok(Distribution::Zipfian),
            "hotspot" => Ok(Distribution::Hotspot),
            other => Err(format!("--distribution '{other}' is not one of: uniform, zipfian, hotspot")),
        }
    }
}

/// The key-popularity model of `bench --distribution NAME` over `n` keys (n >= 1), in the
/// shared workload model (the simulator's clients choose keys with the same code).
pub fn key_spec(name: &str, n: u64, hot_fraction: f64, hot_ops: f64) -> Result<KeySpec, String> {
    key_spec_of(Distribution::parse(name)?, n, hot_fraction, hot_ops)
}

/// [`key_spec`] for a parsed distribution.
pub fn key_spec_of(distribution: Distribution, n: u64, hot_fraction: f64, hot_ops: f64) -> Result<KeySpec, String> {
    if n == 0 {
        return Err("--keys must be at least 1".into());
    }
    let pattern = match distribution {
        Distribution::Uniform => KeyPattern::Uniform,
        Distribution::Zipfian => KeyPattern::Zipfian { exponent: 0.99 },
        Distribution::Hotspot => {
            if !(0.0..=1.0).contains(&hot_fraction) || !(0.0..=1.0).contains(&hot_ops) {
                return Err(format!("hotspot fractions must be in [0, 1] (got {hot_fraction} and {hot_ops})"));
            }
            let hot_keys = (n as f64 * hot_fraction).round() as u64;
            if hot_keys == 0 || hot_keys >= n {
                // Every key, or none, is hot: no key is favoured.
                KeyPattern::Uniform
            } else {
                KeyPattern::HotSet {
                    hot_keys,
                    hot_fraction: hot_ops,
                }
            }
        }
    };
    Ok(KeySpec { pattern, count: n })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_checkable_and_do_not_compress() {
        assert_eq!(&value_for(7, 3)[..], b"v7:");
        assert_eq!(&value_for(7, 2)[..], b"v7");
        assert_eq!(value_for(7, 0).len(), 0);
        assert_eq!(value_for(7, 1000), value_for(7, 1000), "the same bytes every time");
        assert_ne!(value_for(7, 1000)[3..], value_for(8, 1000)[3..]);
        assert_eq!(value_for(7, 1000)[..500], value_for(7, 500)[..], "a shorter value is a prefix");
        // No repeating pattern: as many distinct bytes as random bytes have.
        let v = value_for(123, 4096);
        let distinct = v.iter().collect::<std::collections::BTreeSet<_>>().len();
        assert!(distinct > 250, "{distinct} distinct byte values");
        assert_eq!(&key_bytes(42)[..], b"42");
    }

    #[test]
    fn distributions_stay_in_range_and_skew() {
        let mut rng = replica_lb_policy::Rng::seed_from_u64(1);
        for name in ["uniform", "zipfian", "hotspot"] {
            let mut k = replica_lb_workload::KeyGen::new(key_spec(name, 1000, 0.1, 0.9).unwrap(), 0, 1);
            let mut low = 0;
            for _ in 0..10_000 {
                let x = k.next(&mut rng);
                assert!(x < 1000);
                low += (x < 100) as u32;
            }
            match name {
                "uniform" => assert!((800..1200).contains(&low), "{low}"),
                _ => assert!(low > 5000, "{name}: {low}"),
            }
        }
        assert!(key_spec("nope", 10, 0.1, 0.9).unwrap_err().contains("nope"));
        assert!(key_spec("uniform", 0, 0.1, 0.9).unwrap_err().contains("--keys"));
        assert_eq!(key_spec("hotspot", 10, 1.0, 0.9).unwrap().pattern, KeyPattern::Uniform);
        let mut one = replica_lb_workload::KeyGen::new(key_spec("zipfian", 1, 0.1, 0.9).unwrap(), 0, 1);
        assert_eq!(one.next(&mut rng), 0);
    }
}
