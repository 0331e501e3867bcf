//! C3's replica ranking: each server reports its queue size `q` and the request's service time
//! `1/mu` on every reply; the client measures the response time `R`. Per server, EWMAs with
//! weight `ewma_new_weight` (0.9, as in the authors' simulator: `new = 0.9 * sample + 0.1 *
//! old`) of `q`, `1/mu` and `R - 1/mu`. With `os` this client's requests outstanding at that
//! server and `n` the number of clients (`concurrency_weight`), the estimated queue is
//! `q^ = 1 + os * n + q_bar` (concurrency compensation: every other client probably has about
//! as many in flight as we do) and the score is `(R - 1/mu)_bar + q^^b * (1/mu)_bar` with
//! `b = 3`: long queues are penalised cubically, so a fast server is preferred only while its
//! queue stays short. A server without feedback yet scores 0 (tried first). Lower is better.

/// The ranking's parameters.
#[derive(Clone, Copy, Debug)]
pub struct Ranking {
    /// `n`: how much this client's outstanding requests count (the number of clients).
    pub concurrency_weight: f64,
    /// `b`: the exponent on the estimated queue.
    pub queue_exponent: f64,
    /// The weight of a new sample in the EWMAs.
    pub ewma_new_weight: f64,
}

/// What a client knows of one server.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ServerEstimate {
    known: bool,
    queue: f64,
    service_ns: f64,
    response_minus_service_ns: f64,
}

impl ServerEstimate {
    /// Folds in one reply: the measured response time, the reported service time and queue.
    pub fn observe(&mut self, response_ns: f64, service_ns: f64, queue: f64, new_weight: f64) {
        let wait_ns = (response_ns - service_ns).max(0.0);
        if !self.known {
            *self = ServerEstimate {
                known: true,
                queue,
                service_ns,
                response_minus_service_ns: wait_ns,
            };
            return;
        }
        let ewma = |old: f64, new: f64| new_weight * new + (1.0 - new_weight) * old;
        self.queue = ewma(self.queue, queue);
        self.service_ns = ewma(self.service_ns, service_ns);
        self.response_minus_service_ns = ewma(self.response_minus_service_ns, wait_ns);
    }

    /// Whether any feedback arrived.
    pub fn known(&self) -> bool {
        self.known
    }

    /// The score with `outstanding` requests of ours at the server (0 without feedback).
    #[inline]
    pub fn score(&self, outstanding: u32, ranking: &Ranking) -> f64 {
        if !self.known {
            return 0.0;
        }
        let q_hat = 1.0 + outstanding as f64 * ranking.concurrency_weight + self.queue;
        let penalty = if ranking.queue_exponent == 3.0 {
            q_hat * q_hat * q_hat
        } else {
            q_hat.powf(ranking.queue_exponent)
        };
        self.response_minus_service_ns + penalty * self.service_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RANKING: Ranking = Ranking {
        concurrency_weight: 1.0,
        queue_exponent: 3.0,
        ewma_new_weight: 0.9,
    };

    #[test]
    fn score_follows_the_formula() {
        let mut s = ServerEstimate::default();
        assert_eq!(s.score(5, &RANKING), 0.0, "no feedback: tried first");
        s.observe(5e6, 2e6, 3.0, 0.9);
        // (5 - 2) + (1 + 2 + 3)^3 * 2 = 3 + 432 ms
        assert_eq!(s.score(2, &RANKING), 3e6 + 216.0 * 2e6);
        // EWMA: 0.9 on the new sample.
        s.observe(5e6, 4e6, 13.0, 0.9);
        assert!((s.service_ns - (0.9 * 4e6 + 0.1 * 2e6)).abs() < 1e-6);
        assert!((s.queue - 12.0).abs() < 1e-12);
    }

    #[test]
    fn a_long_queue_outweighs_a_fast_service() {
        // The slide's example: 4 ms with 20 queued vs 20 ms with 4 queued... the cubic term
        // makes the short queue win despite 5x the service time.
        let mut fast = ServerEstimate::default();
        fast.observe(4e6, 4e6, 20.0, 0.9);
        let mut slow = ServerEstimate::default();
        slow.observe(20e6, 20e6, 4.0, 0.9);
        assert!(slow.score(0, &RANKING) < fast.score(0, &RANKING));
    }
}
