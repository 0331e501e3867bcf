//! The emulated slow disk on the cache-miss path: a gate that serves at most `concurrency`
//! reads at once, each holding its slot for a service time drawn from a distribution, so a
//! miss costs what the scenario says even on a fast SSD. Off means real reads only. It can be
//! switched on and off at run time, and made slower by a factor on its service times (faults).
//!
//! Sleeping uses tokio's timer (1 ms resolution): service times are rounded up to it.

use crate::config::SlowDiskConfig;
use replica_lb_policy::Rng;
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Semaphore;

/// The gate.
pub struct SlowDisk {
    enabled: AtomicBool,
    slots: Arc<Semaphore>,
    dist: replica_lb_workload::Dist,
    waiting: AtomicU32,
    in_service: AtomicU32,
    /// Multiplier on service times (f64 bits; 1.0 = as configured).
    factor_bits: AtomicU64,
}

/// The smallest and largest service-time factor accepted.
pub const FACTOR_RANGE: (f64, f64) = (0.01, 1000.0);

static SEEDS: AtomicU64 = AtomicU64::new(0x51_0d15_c0de);

thread_local! {
    static RNG: RefCell<Rng> = RefCell::new(Rng::seed_from_u64(
        SEEDS.fetch_add(0x9e37_79b9_7f4a_7c15, Ordering::Relaxed) ^ std::process::id() as u64,
    ));
}

impl SlowDisk {
    /// A gate with the configured shape.
    pub fn new(cfg: &SlowDiskConfig, dist: replica_lb_workload::Dist) -> SlowDisk {
        SlowDisk {
            enabled: AtomicBool::new(cfg.enabled),
            slots: Arc::new(Semaphore::new(cfg.concurrency.max(1) as usize)),
            dist,
            waiting: AtomicU32::new(0),
            in_service: AtomicU32::new(0),
            factor_bits: AtomicU64::new(1.0f64.to_bits()),
        }
    }

    /// Sets the factor on service times (3 = three times slower); values outside
    /// [`FACTOR_RANGE`] (or not finite) are refused with a message.
    pub fn set_factor(&self, factor: f64) -> Result<(), String> {
        let (lo, hi) = FACTOR_RANGE;
        if !(factor.is_finite() && (lo..=hi).contains(&factor)) {
            return Err(format!("slow-disk factor {factor} must be in [{lo}, {hi}]"));
        }
        self.factor_bits.store(factor.to_bits(), Ordering::Relaxed);
        Ok(())
    }

    /// The current factor on service times.
    pub fn factor(&self) -> f64 {
        f64::from_bits(self.factor_bits.load(Ordering::Relaxed))
    }

    /// Switches the gate on or off.
    pub fn set_enabled(&self, on: bool) {
        self.enabled.store(on, Ordering::Relaxed);
    }

    /// Whether the gate is on.
    pub fn enabled(&self) -> bool {
        self.enabled.load(Ordering::Relaxed)
    }

    /// Reads waiting for a slot now.
    pub fn waiting(&self) -> u32 {
        self.waiting.load(Ordering::Relaxed)
    }

    /// Reads holding a slot now.
    pub fn in_service(&self) -> u32 {
        self.in_service.load(Ordering::Relaxed)
    }

    fn draw_us(&self) -> f64 {
        RNG.with(|r| self.dist.sample_ns(&mut r.borrow_mut()) / 1000.0)
    }

    /// Waits for a slot and holds it for one service time; returns how long the read waited
    /// for its slot (queueing), ns. Returns at once when the gate is off.
    pub async fn pass(&self) -> u64 {
        if !self.enabled() {
            return 0;
        }
        let start = std::time::Instant::now();
        self.waiting.fetch_add(1, Ordering::Relaxed);
        let permit = self.slots.acquire().await;
        self.waiting.fetch_sub(1, Ordering::Relaxed);
        let queued_ns = start.elapsed().as_nanos() as u64;
        self.in_service.fetch_add(1, Ordering::Relaxed);
        let us = (self.draw_us() * self.factor()).clamp(0.0, 60e6);
        tokio::time::sleep(Duration::from_nanos((us * 1000.0) as u64)).await;
        self.in_service.fetch_sub(1, Ordering::Relaxed);
        drop(permit);
        queued_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg_dist(cfg: &SlowDiskConfig, name: &str) -> replica_lb_workload::Dist {
        let sigma = (name == "lognormal").then_some(cfg.lognormal_sigma);
        replica_lb_workload::Dist::new(name, cfg.service_time_mean_us as f64, sigma, None).unwrap()
    }

    #[tokio::test]
    async fn concurrency_limit_holds() {
        let cfg = SlowDiskConfig {
            enabled: true,
            concurrency: 2,
            service_time_mean_us: 20_000,
            distribution: "constant".into(),
            lognormal_sigma: 0.5,
        };
        let d = Arc::new(SlowDisk::new(&cfg, cfg_dist(&cfg, "constant")));
        let start = std::time::Instant::now();
        let tasks: Vec<_> = (0..4)
            .map(|_| {
                let d = d.clone();
                tokio::spawn(async move { d.pass().await })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
        // 4 reads, 2 at a time, 20 ms each: at least 40 ms.
        assert!(start.elapsed() >= Duration::from_millis(40));
        d.set_enabled(false);
        assert_eq!(d.pass().await, 0);
    }

    #[tokio::test]
    async fn factor_slows_service_and_rejects_bad_values() {
        let cfg = SlowDiskConfig {
            enabled: true,
            concurrency: 1,
            service_time_mean_us: 10_000,
            distribution: "constant".into(),
            lognormal_sigma: 0.5,
        };
        let d = SlowDisk::new(&cfg, cfg_dist(&cfg, "constant"));
        assert_eq!(d.factor(), 1.0);
        d.set_factor(4.0).unwrap();
        let start = std::time::Instant::now();
        d.pass().await;
        assert!(start.elapsed() >= Duration::from_millis(40));
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY, 1e6] {
            assert!(d.set_factor(bad).is_err(), "{bad}");
        }
        assert_eq!(d.factor(), 4.0);
    }

    #[test]
    fn lognormal_mean_is_close() {
        let cfg = SlowDiskConfig::default();
        let d = SlowDisk::new(&cfg, cfg_dist(&cfg, "lognormal"));
        let n = 20_000;
        let mean = (0..n).map(|_| d.draw_us()).sum::<f64>() / n as f64;
        assert!((mean - 10_000.0).abs() < 500.0, "{mean}");
    }
}
