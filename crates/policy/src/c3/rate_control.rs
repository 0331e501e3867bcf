//! C3's distributed rate control, per (client, server): a token bucket lets `srate` requests
//! through per interval `delta` (20 ms); the receive rate `rrate` (replies per interval, an
//! EWMA with weight 0.1 on the last interval's count, as in the authors' simulator) is
//! measured. On every reply:
//! - if `srate < rrate`, the rate grows along a cubic curve
//!   `C * (T - cbrt(beta * R0 / C))^3 + R0` (`T` ms since the last decrease, `R0` the rate at
//!   that decrease, `C` = 4e-6 per ms^3), by at most `Smax` (10) per step: fast growth far from
//!   the last saturation point, cautious near it, probing beyond it later;
//! - else, if `srate > rrate` (and `rrate` is not 0) and more than `hysteresis * delta` (2) has
//!   passed since the last increase (to let the receive rate catch up), `R0 = srate` and
//!   `srate = max(beta * srate, floor)` (`beta` = 0.2, floor 0.01).
//!
//! Note the published curve starts at `(1 - beta) * R0` right after a decrease to `beta * R0`,
//! so the first increase after a decrease is a jump capped by `Smax`; kept as published.
//! Everything is lazy and allocation-free: tokens refill and intervals roll over when read.

/// The rate controller's parameters.
#[derive(Clone, Copy, Debug)]
pub struct RateConfig {
    /// `delta`: the rate interval, ns.
    pub interval_ns: u64,
    /// The sending rate of a server never seen, requests per interval (also `R0` at start).
    pub initial_rate: f64,
    /// The bucket's capacity: the largest burst, requests.
    pub max_tokens: f64,
    /// `C` of the cubic curve, per ms^3.
    pub cubic_c_per_ms3: f64,
    /// `Smax`: the largest increase per reply, requests per interval.
    pub max_step: f64,
    /// `beta`: the multiplicative decrease.
    pub beta: f64,
    /// Decrease only when the last increase is more than this many intervals ago.
    pub hysteresis: f64,
    /// The lowest sending rate, requests per interval.
    pub min_rate: f64,
    /// The EWMA weight of the last interval's reply count in `rrate`.
    pub receive_rate_weight: f64,
}

/// One server's token bucket and rate state.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RateLimiter {
    /// `srate`, requests per interval.
    srate: f64,
    tokens: f64,
    tokens_at_ns: u64,
    /// `rrate`, replies per interval (smoothed).
    rrate: f64,
    replies_this_interval: u32,
    interval_index: u64,
    last_increase_ns: u64,
    last_decrease_ns: u64,
    rate_at_decrease: f64,
}

impl RateLimiter {
    /// A full bucket at the initial rate, first seen at `now_ns`.
    pub fn new(config: &RateConfig, now_ns: u64) -> Self {
        RateLimiter {
            srate: config.initial_rate,
            tokens: config.max_tokens,
            tokens_at_ns: now_ns,
            rrate: 0.0,
            replies_this_interval: 0,
            interval_index: now_ns / config.interval_ns,
            last_increase_ns: now_ns,
            last_decrease_ns: now_ns,
            rate_at_decrease: config.initial_rate,
        }
    }

    /// The sending rate, requests per interval.
    pub fn send_rate(&self) -> f64 {
        self.srate
    }

    /// The smoothed receive rate as of the last completed interval, replies per interval.
    pub fn receive_rate(&self) -> f64 {
        self.rrate
    }

    /// Tokens available at `now_ns`.
    #[inline]
    pub fn tokens(&self, now_ns: u64, config: &RateConfig) -> f64 {
        let dt = now_ns.saturating_sub(self.tokens_at_ns) as f64;
        (self.tokens + self.srate * dt / config.interval_ns as f64).min(config.max_tokens)
    }

    /// How long until a token is available at `now_ns`, ns (0: one is available).
    #[inline]
    pub fn wait_ns(&self, now_ns: u64, config: &RateConfig) -> u64 {
        let wait = self.wait(now_ns, config);
        if wait == 0.0 {
            0
        } else {
            wait.ceil().max(1.0) as u64
        }
    }

    /// [`RateLimiter::wait_ns`] before rounding up (cheaper: the request path compares these
    /// and rounds only the one it returns).
    #[inline]
    pub fn wait(&self, now_ns: u64, config: &RateConfig) -> f64 {
        let t = self.tokens(now_ns, config);
        if t >= 1.0 {
            0.0
        } else {
            (1.0 - t) * config.interval_ns as f64 / self.srate
        }
    }

    /// A request was sent at `now_ns`: takes a token (never below zero, for sends the policy
    /// did not plan, such as speculative retries).
    #[inline]
    pub fn take(&mut self, now_ns: u64, config: &RateConfig) {
        self.settle(now_ns, config);
        self.tokens = (self.tokens - 1.0).max(0.0);
    }

    /// A reply arrived at `now_ns`: counts it and adapts the sending rate.
    pub fn on_reply(&mut self, now_ns: u64, config: &RateConfig) {
        self.roll(now_ns, config);
        self.replies_this_interval = self.replies_this_interval.saturating_add(1);
        let (s, r) = (self.srate, self.rrate);
        if s < r {
            self.settle(now_ns, config);
            let t_ms = now_ns.saturating_sub(self.last_decrease_ns) as f64 / 1e6;
            let r0 = self.rate_at_decrease;
            let c = config.cubic_c_per_ms3;
            let k = (config.beta * r0 / c).cbrt();
            let curve = c * (t_ms - k).powi(3) + r0;
            self.srate = curve.min(s + config.max_step).max(config.min_rate);
            self.last_increase_ns = now_ns;
        } else if r > 0.0 && s > r && now_ns.saturating_sub(self.last_increase_ns) as f64 > config.hysteresis * config.interval_ns as f64 {
            self.settle(now_ns, config);
            self.rate_at_decrease = s;
            self.srate = (s * config.beta).max(config.min_rate);
            self.last_decrease_ns = now_ns;
        }
        debug_assert!(self.srate >= config.min_rate && self.srate.is_finite());
    }

    /// Refills the bucket up to `now_ns` at the current rate (before the rate changes).
    fn settle(&mut self, now_ns: u64, config: &RateConfig) {
        if now_ns > self.tokens_at_ns {
            self.tokens = self.tokens(now_ns, config);
            self.tokens_at_ns = now_ns;
        }
    }

    /// Closes the intervals that ended before `now_ns`, folding their reply counts into rrate.
    fn roll(&mut self, now_ns: u64, config: &RateConfig) {
        let index = now_ns / config.interval_ns;
        if index <= self.interval_index {
            return;
        }
        let w = config.receive_rate_weight;
        self.rrate = w * self.replies_this_interval as f64 + (1.0 - w) * self.rrate;
        let empty = (index - self.interval_index - 1).min(10_000) as i32;
        if empty > 0 {
            self.rrate *= (1.0 - w).powi(empty);
        }
        self.replies_this_interval = 0;
        self.interval_index = index;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::MS;

    pub(crate) const CONFIG: RateConfig = RateConfig {
        interval_ns: 20 * MS,
        initial_rate: 10.0,
        max_tokens: 10.0,
        cubic_c_per_ms3: 4e-6,
        max_step: 10.0,
        beta: 0.2,
        hysteresis: 2.0,
        min_rate: 0.01,
        receive_rate_weight: 0.1,
    };

    #[test]
    fn bucket_refills_at_the_sending_rate() {
        let mut l = RateLimiter::new(&CONFIG, 0);
        for _ in 0..10 {
            assert_eq!(l.wait_ns(0, &CONFIG), 0);
            l.take(0, &CONFIG);
        }
        // Empty: 10 per 20 ms = one token every 2 ms.
        assert_eq!(l.wait_ns(0, &CONFIG), 2 * MS);
        assert_eq!(l.wait_ns(MS, &CONFIG), MS);
        assert_eq!(l.wait_ns(2 * MS, &CONFIG), 0);
        // Capped at max_tokens.
        assert_eq!(l.tokens(10_000 * MS, &CONFIG), 10.0);
    }

    #[test]
    fn cuts_by_beta_when_sending_faster_than_receiving() {
        let mut l = RateLimiter::new(&CONFIG, 0);
        // One reply per 20 ms interval while the bucket allows 10: srate > rrate.
        l.on_reply(20 * MS, &CONFIG);
        assert_eq!(l.send_rate(), 10.0, "rrate is still 0: no decision");
        l.on_reply(40 * MS, &CONFIG);
        assert_eq!(l.send_rate(), 10.0, "40 ms since the start is not more than 2 intervals");
        l.on_reply(60 * MS, &CONFIG);
        assert!(l.receive_rate() > 0.0 && l.receive_rate() < 1.0);
        assert_eq!(l.send_rate(), 10.0 * 0.2, "cut by beta");
        assert_eq!(l.rate_at_decrease, 10.0);
        // Still sending faster than receiving: cut again at the next reply.
        l.on_reply(80 * MS, &CONFIG);
        assert!((l.send_rate() - 10.0 * 0.2 * 0.2).abs() < 1e-12, "{}", l.send_rate());
    }

    #[test]
    fn hysteresis_blocks_a_cut_right_after_an_increase() {
        let mut l = RateLimiter::new(&CONFIG, 0);
        l.srate = 1.0;
        l.rrate = 5.0;
        l.interval_index = 0;
        // srate < rrate: increase (capped at +10), and remember when.
        l.on_reply(MS, &CONFIG);
        let raised = l.send_rate();
        assert!(raised > 1.0 && raised <= 11.0, "{raised}");
        // Now srate > rrate, but only 10 ms later: no cut.
        l.rrate = 0.5;
        l.on_reply(11 * MS, &CONFIG);
        assert_eq!(l.send_rate(), raised);
        // 41 ms after the increase: cut by beta, R0 remembered.
        l.on_reply(42 * MS, &CONFIG);
        assert!((l.send_rate() - raised * 0.2).abs() < 1e-12);
        assert_eq!(l.rate_at_decrease, raised);
    }

    #[test]
    fn grows_along_the_cubic_curve_capped_by_smax() {
        let mut l = RateLimiter::new(&CONFIG, 0);
        l.srate = 2.0;
        l.rate_at_decrease = 10.0;
        l.last_decrease_ns = 0;
        l.rrate = 50.0;
        // T = 0: the curve is at (1 - beta) * R0 = 8.
        l.on_reply(0, &CONFIG);
        assert!((l.send_rate() - 8.0).abs() < 1e-9, "{}", l.send_rate());
        // At T = K = cbrt(beta R0 / C) ms the curve is back at R0 (the plateau).
        let k_ms = (0.2f64 * 10.0 / 4e-6).cbrt();
        l.on_reply((k_ms * 1e6) as u64, &CONFIG);
        assert!((l.send_rate() - 10.0).abs() < 1e-3, "{}", l.send_rate());
        // 200 ms beyond, the curve is at 42 but growth is capped at +Smax per reply.
        l.on_reply((k_ms * 1e6) as u64 + 200 * MS, &CONFIG);
        assert!((l.send_rate() - 20.0).abs() < 1e-3, "{}", l.send_rate());
    }

    #[test]
    fn never_below_the_floor() {
        let mut l = RateLimiter::new(&CONFIG, 0);
        l.rrate = 1e-9;
        for i in 0..100 {
            l.last_increase_ns = 0;
            l.on_reply(1_000 * MS + i, &CONFIG);
        }
        assert_eq!(l.send_rate(), 0.01);
    }
}
