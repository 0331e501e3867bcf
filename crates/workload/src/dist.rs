//! Service-time distributions, parameterised by their mean so scenarios read naturally.

use replica_lb_policy::Rng;

/// A distribution of durations, sampled in nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Dist {
    /// Always the mean.
    Constant {
        /// The value, ns.
        mean_ns: f64,
    },
    /// Exponential with the given mean.
    Exponential {
        /// Mean, ns.
        mean_ns: f64,
    },
    /// Log-normal with the given mean and log-space standard deviation `sigma`.
    LogNormal {
        /// Mean, ns.
        mean_ns: f64,
        /// mu of the underlying normal (ln ns).
        mu: f64,
        /// sigma of the underlying normal.
        sigma: f64,
    },
    /// Pareto (type I) with the given mean and shape (> 1).
    Pareto {
        /// Mean, ns.
        mean_ns: f64,
        /// Scale x_m, ns.
        scale_ns: f64,
        /// 1 / shape.
        inv_shape: f64,
    },
}

impl Dist {
    /// Builds a distribution from its file form: `dist` name, mean in microseconds, and
    /// `sigma` (log-normal, default 1) or `shape` (Pareto, default 2).
    pub fn new(dist: &str, mean_us: f64, sigma: Option<f64>, shape: Option<f64>) -> Result<Dist, String> {
        if !(mean_us.is_finite() && mean_us > 0.0 && mean_us <= 3.6e9) {
            return Err(format!("mean_us = {mean_us}: must be in (0, 3.6e9]"));
        }
        let mean_ns = mean_us * 1e3;
        let extra = |name: &str| format!("'{name}' does not apply to dist = \"{dist}\"");
        match dist {
            "constant" | "exponential" => {
                if sigma.is_some() {
                    return Err(extra("sigma"));
                }
                if shape.is_some() {
                    return Err(extra("shape"));
                }
                Ok(if dist == "constant" {
                    Dist::Constant { mean_ns }
                } else {
                    Dist::Exponential { mean_ns }
                })
            }
            "lognormal" => {
                if shape.is_some() {
                    return Err(extra("shape"));
                }
                let sigma = sigma.unwrap_or(1.0);
                if !(sigma > 0.0 && sigma <= 5.0) {
                    return Err(format!("sigma = {sigma}: must be in (0, 5]"));
                }
                Ok(Dist::LogNormal {
                    mean_ns,
                    mu: mean_ns.ln() - sigma * sigma / 2.0,
                    sigma,
                })
            }
            "pareto" => {
                if sigma.is_some() {
                    return Err(extra("sigma"));
                }
                let shape = shape.unwrap_or(2.0);
                if !(shape > 1.0 && shape <= 100.0) {
                    return Err(format!("shape = {shape}: must be in (1, 100] (the mean must exist)"));
                }
                Ok(Dist::Pareto {
                    mean_ns,
                    scale_ns: mean_ns * (shape - 1.0) / shape,
                    inv_shape: 1.0 / shape,
                })
            }
            other => Err(format!("dist '{other}' is not one of: constant, exponential, lognormal, pareto")),
        }
    }

    /// The mean, ns.
    pub fn mean_ns(&self) -> f64 {
        match *self {
            Dist::Constant { mean_ns } | Dist::Exponential { mean_ns } => mean_ns,
            Dist::LogNormal { mean_ns, .. } | Dist::Pareto { mean_ns, .. } => mean_ns,
        }
    }

    /// One sample, ns (capped at one hour so a heavy tail cannot overflow the clock).
    #[inline]
    pub fn sample_ns(&self, rng: &mut Rng) -> f64 {
        let v = match *self {
            Dist::Constant { mean_ns } => mean_ns,
            Dist::Exponential { mean_ns } => rng.exponential(mean_ns),
            Dist::LogNormal { mu, sigma, .. } => (mu + sigma * standard_normal(rng)).exp(),
            Dist::Pareto { scale_ns, inv_shape, .. } => {
                let u = 1.0 - rng.unit_f64(); // (0, 1]
                scale_ns / u.powf(inv_shape)
            }
        };
        v.min(3.6e12)
    }
}

/// A standard normal sample (Box-Muller; one of the pair is discarded for simplicity).
#[inline]
fn standard_normal(rng: &mut Rng) -> f64 {
    let u1 = 1.0 - rng.unit_f64();
    let u2 = rng.unit_f64();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mean_of(d: &Dist) -> f64 {
        let mut rng = Rng::seed_from_u64(3);
        let n = 400_000;
        (0..n).map(|_| d.sample_ns(&mut rng)).sum::<f64>() / n as f64
    }

    #[test]
    fn sample_means_match() {
        for (name, sigma, shape) in [
            ("constant", None, None),
            ("exponential", None, None),
            ("lognormal", Some(0.5), None),
            ("pareto", None, Some(3.0)),
        ] {
            let d = Dist::new(name, 100.0, sigma, shape).unwrap();
            let m = mean_of(&d);
            assert!((m - 100_000.0).abs() / 100_000.0 < 0.02, "{name}: {m}");
        }
    }

    #[test]
    fn bad_parameters_are_refused() {
        assert!(Dist::new("pareto", 10.0, None, Some(1.0)).is_err());
        assert!(Dist::new("exponential", 0.0, None, None).is_err());
        assert!(Dist::new("exponential", 1.0, Some(1.0), None).is_err());
        assert!(Dist::new("weibull", 1.0, None, None).is_err());
    }
}
