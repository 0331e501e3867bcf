//! C3's distributed rate control, per (client, server): a token bucket lets `srate` requests
//! through per interval `delta` (20 ms); the client measures, per interval, the requests it
//! actually sent and the replies it received, each smoothed into a rate (an EWMA with weight
//! 0.1 on the last interval's count, as the authors' simulator measures its receive rate
//! `rrate`). Rates are in requests per interval. On every reply (the published update points):
//! - the server is *not keeping up* when what we actually sent exceeds what came back by more
//!   than `congestion_margin` (1 request per interval): `sent_rate - rrate > margin`. Then, if
//!   more than `hysteresis * delta` (2 intervals) passed since the last increase, the rate is
//!   cut: `R0 = srate`, `srate = max(beta * srate, floor)` (`beta` = 0.2, floor 0.01);
//! - otherwise, if `srate < rrate` (the published growth test) or the bucket ran dry within the
//!   last interval (we are using the whole allowance and the server keeps up), the rate grows
//!   along the cubic curve `C * (T - cbrt(beta * R0 / C))^3 + R0` (`T` ms since the last
//!   decrease, `R0` the rate at that decrease, `C` = 4e-6 per ms^3), by at most `Smax` (10) per
//!   reply and never downwards.
//!
//! # Why not compare `srate` itself with `rrate`
//! The authors' simulator and their Cassandra patch compare the *limit* `srate` with `rrate`. A
//! sender whose demand is below its limit then always has `srate > rrate` (it receives what it
//! sends, which is less than it may send), so it keeps being cut until the limit bites, and the
//! limit then caps what it can send, so `rrate` follows it down: the rate control throttles a
//! sender no server asked it to slow down (in the simulator: the floor and mass time-outs).
//! Comparing the achieved sending rate, smoothed exactly as `rrate` is, asks the question the
//! paper means ("is the server returning what we send it?") without that bias, and without the
//! lag bias of comparing an instantly-raised limit with a receive rate that catches up over ~10
//! intervals. The margin keeps requests merely in flight (the two smoothed rates differ by a
//! tenth of the change in outstanding requests per interval) from reading as congestion. Growth
//! while the bucket is dry is TCP CUBIC's rule for a window-limited sender: without it a sender
//! held at exactly its limit receives exactly that rate, `srate < rrate` never holds, and the
//! rate never rises to meet demand.
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
    /// The EWMA weight of the last interval's count in the smoothed send and receive rates.
    pub receive_rate_weight: f64,
    /// How far the smoothed sending rate may exceed the receive rate before the server counts
    /// as not keeping up, requests per interval.
    pub congestion_margin: f64,
}

/// One server's token bucket and rate state.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RateLimiter {
    /// `srate`: the bucket's refill rate, requests per interval.
    srate: f64,
    tokens: f64,
    tokens_at_ns: u64,
    /// `rrate`: replies per interval (smoothed).
    rrate: f64,
    /// Requests actually sent per interval (smoothed like `rrate`).
    sent_rate: f64,
    replies_this_interval: u32,
    sends_this_interval: u32,
    interval_index: u64,
    last_increase_ns: u64,
    last_decrease_ns: u64,
    rate_at_decrease: f64,
    /// The bucket counts as dry (the limit binds) until this time: one interval after a send
    /// left less than one token.
    limited_until_ns: u64,
}

impl RateLimiter {
    /// A full bucket at the initial rate, first seen at `now_ns`.
    pub fn new(config: &RateConfig, now_ns: u64) -> Self {
        RateLimiter {
            srate: config.initial_rate,
            tokens: config.max_tokens,
            tokens_at_ns: now_ns,
            rrate: 0.0,
            sent_rate: 0.0,
            replies_this_interval: 0,
            sends_this_interval: 0,
            interval_index: now_ns / config.interval_ns,
            last_increase_ns: now_ns,
            last_decrease_ns: now_ns,
            rate_at_decrease: config.initial_rate,
            limited_until_ns: 0,
        }
    }

    /// The sending rate (the bucket's limit), requests per interval.
    pub fn send_rate(&self) -> f64 {
        self.srate
    }

    /// The smoothed receive rate as of the last completed interval, replies per interval.
    pub fn receive_rate(&self) -> f64 {
        self.rrate
    }

    /// The smoothed rate of requests actually sent as of the last completed interval,
    /// requests per interval.
    pub fn achieved_send_rate(&self) -> f64 {
        self.sent_rate
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

    /// A request was sent at `now_ns`: counts it and takes a token (never below zero, for sends
    /// the policy did not plan, such as speculative retries).
    #[inline]
    pub fn take(&mut self, now_ns: u64, config: &RateConfig) {
        self.roll(now_ns, config);
        self.sends_this_interval = self.sends_this_interval.saturating_add(1);
        self.settle(now_ns, config);
        self.tokens = (self.tokens - 1.0).max(0.0);
        if self.tokens < 1.0 {
            self.limited_until_ns = now_ns.saturating_add(config.interval_ns);
        }
    }

    /// A reply arrived at `now_ns`: counts it and adapts the sending rate.
    pub fn on_reply(&mut self, now_ns: u64, config: &RateConfig) {
        self.roll(now_ns, config);
        self.replies_this_interval = self.replies_this_interval.saturating_add(1);
        let (s, r) = (self.srate, self.rrate);
        let congested = r > 0.0 && self.sent_rate - r > config.congestion_margin;
        if congested {
            let since_increase_ns = now_ns.saturating_sub(self.last_increase_ns) as f64;
            if since_increase_ns > config.hysteresis * config.interval_ns as f64 {
                self.settle(now_ns, config);
                self.rate_at_decrease = s;
                self.srate = (s * config.beta).max(config.min_rate);
                self.last_decrease_ns = now_ns;
            }
        } else if s < r || now_ns < self.limited_until_ns {
            self.settle(now_ns, config);
            let t_ms = now_ns.saturating_sub(self.last_decrease_ns) as f64 / 1e6;
            let r0 = self.rate_at_decrease;
            let c = config.cubic_c_per_ms3;
            let k = (config.beta * r0 / c).cbrt();
            let curve = c * (t_ms - k).powi(3) + r0;
            self.srate = curve.min(s + config.max_step).max(s);
            self.last_increase_ns = now_ns;
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

    /// Closes the intervals that ended before `now_ns`, folding their send and reply counts
    /// into the smoothed rates (an interval with nothing counts as 0).
    #[inline]
    fn roll(&mut self, now_ns: u64, config: &RateConfig) {
        let index = now_ns / config.interval_ns;
        if index <= self.interval_index {
            return;
        }
        let w = config.receive_rate_weight;
        self.rrate = w * self.replies_this_interval as f64 + (1.0 - w) * self.rrate;
        self.sent_rate = w * self.sends_this_interval as f64 + (1.0 - w) * self.sent_rate;
        let empty = (index - self.interval_index - 1).min(10_000) as i32;
        if empty > 0 {
            let decay = (1.0 - w).powi(empty);
            self.rrate *= decay;
            self.sent_rate *= decay;
        }
        self.replies_this_interval = 0;
        self.sends_this_interval = 0;
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
        congestion_margin: 1.0,
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

    /// Sends `sends` requests spread over interval `i` (from `t0`), then takes one reply at
    /// the interval's end.
    fn interval(l: &mut RateLimiter, t0: u64, i: u64, sends: u64) {
        let start = t0 + i * 20 * MS;
        for k in 0..sends {
            l.take(start + k * (20 * MS / sends.max(1)), &CONFIG);
        }
        l.on_reply(start + 20 * MS - 1, &CONFIG);
    }

    #[test]
    fn cuts_by_beta_when_sending_faster_than_receiving() {
        let mut l = RateLimiter::new(&CONFIG, 0);
        l.srate = 10.0;
        l.last_increase_ns = 0;
        // 10 requests sent per 20 ms interval, one reply back: the server is not keeping up.
        // Interval 0: nothing measured yet (rrate is 0): no decision.
        interval(&mut l, 0, 0, 10);
        assert_eq!(l.send_rate(), 10.0, "rrate is still 0: no decision");
        assert_eq!(l.last_decrease_ns, 0);
        // Interval 1: sent 1.0 vs received 0.1 per interval smoothed: not yet beyond the
        // margin of 1 request per interval.
        interval(&mut l, 0, 1, 10);
        assert_eq!(l.last_decrease_ns, 0);
        // Interval 2: sent 1.9 vs 0.19: cut by beta, R0 remembered.
        interval(&mut l, 0, 2, 10);
        assert!(l.achieved_send_rate() - l.receive_rate() > 1.0);
        assert_eq!(l.send_rate(), 10.0 * 0.2, "cut by beta");
        assert_eq!(l.rate_at_decrease, 10.0);
        // Still sending faster than the server answers, 60 ms later: cut again.
        l.on_reply(2 * 20 * MS + 20 * MS + 40 * MS, &CONFIG);
        assert!((l.send_rate() - 10.0 * 0.2 * 0.2).abs() < 1e-12, "{}", l.send_rate());
    }

    #[test]
    fn an_unsaturated_sender_keeps_its_rate() {
        // 2 requests per interval (100/s) against a 10-per-interval limit, every one answered
        // within the interval: for 20 s the limit never moves and the bucket never runs dry.
        let mut l = RateLimiter::new(&CONFIG, 0);
        for i in 0..1_000u64 {
            let t = i * 20 * MS;
            for k in 0..2 {
                let sent = t + k * 10 * MS;
                assert_eq!(l.wait_ns(sent, &CONFIG), 0, "interval {i}");
                l.take(sent, &CONFIG);
                l.on_reply(sent + 3 * MS, &CONFIG);
            }
        }
        assert_eq!(l.send_rate(), 10.0);
        assert!((l.receive_rate() - 2.0).abs() < 1e-6 && (l.achieved_send_rate() - 2.0).abs() < 1e-6);
        // Far below the limit (one request every 2 s) the same holds.
        let mut l = RateLimiter::new(&CONFIG, 0);
        for i in 0..100u64 {
            l.take(i * 2_000 * MS, &CONFIG);
            l.on_reply(i * 2_000 * MS + 5 * MS, &CONFIG);
        }
        assert_eq!(l.send_rate(), 10.0);
    }

    #[test]
    fn grows_while_the_limit_binds_and_the_server_keeps_up() {
        // Demand of 30 per interval, the server answering everything: the bucket runs dry and
        // the rate rises to meet the demand (capped at +Smax per reply).
        let mut l = RateLimiter::new(&CONFIG, 0);
        let mut t = 0;
        let mut sent = 0u32;
        while t < 2_000 * MS {
            if l.wait_ns(t, &CONFIG) == 0 {
                l.take(t, &CONFIG);
                l.on_reply(t + MS / 2, &CONFIG);
                sent += 1;
            }
            t += 20 * MS / 30;
        }
        assert!(l.send_rate() >= 30.0, "{}", l.send_rate());
        assert!(sent > 2_400, "{sent}");
    }

    #[test]
    fn hysteresis_blocks_a_cut_right_after_an_increase() {
        let mut l = RateLimiter::new(&CONFIG, 0);
        l.srate = 1.0;
        l.rrate = 5.0;
        l.sent_rate = 5.0;
        l.interval_index = 0;
        // srate < rrate and no congestion: increase (capped at +10), and remember when.
        l.on_reply(MS, &CONFIG);
        let raised = l.send_rate();
        assert!(raised > 1.0 && raised <= 11.0, "{raised}");
        // Now we send faster than we receive, but only 10 ms later: no cut.
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
        l.sent_rate = 50.0;
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
        // An increase never lowers the rate (the curve is at 8 just after a decrease from 10).
        l.last_decrease_ns = (k_ms * 1e6) as u64 + 200 * MS;
        (l.rrate, l.sent_rate) = (50.0, 50.0);
        l.on_reply((k_ms * 1e6) as u64 + 200 * MS, &CONFIG);
        assert!((l.send_rate() - 20.0).abs() < 1e-3, "{}", l.send_rate());
    }

    #[test]
    fn never_below_the_floor() {
        let mut l = RateLimiter::new(&CONFIG, 0);
        l.rrate = 1e-9;
        l.sent_rate = 5.0;
        l.interval_index = 50; // the interval of 1 s: nothing rolls over
        for i in 0..100 {
            l.last_increase_ns = 0;
            l.on_reply(1_000 * MS + i, &CONFIG);
        }
        assert_eq!(l.send_rate(), 0.01);
    }
}
