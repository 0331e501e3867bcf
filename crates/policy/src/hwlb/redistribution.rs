//! Coordinator redistribution ("network thrift"): each replica-coordinator's row of forwarding
//! fractions.
//!
//! Each of the N replica-coordinators receives 1/N of the requests. Coordinator c builds a row
//! pp_c over the N replicas such that, exactly (to 1e-9), for every N >= 2 and 1 <= k < N:
//! - sum_j pp_c[j] = 1 and 0 <= pp_c[j] <= 1/k;
//! - pp_c[c] = min(N P_c, 1/k) (keep as much work local as allowed);
//! - (1/N) sum_c pp_c[j] = P_j (together the coordinators produce the target shares).
//!
//! With the diagonal fixed, the off-diagonal cells form a transportation problem: row sums
//! a_c = 1 - pp_c[c], column sums b_j = N P_j - pp_j[j], every cell in [0, 1/k], zero diagonal.
//! The published level-by-level algorithm breaks the 1/k cap for some inputs (which yields
//! duplicate replicas and silently weakens the consistency level). This module instead:
//! 1. starts from a smooth proportional fill (coordinator c forwards its surplus a_c to the
//!    others in proportion to their deficits b_j; for k = 1 this is exactly the published
//!    surplus/deficit split and already optimal), clipped to the cap and scaled down until no
//!    row or column is over-full;
//! 2. completes it exactly with augmenting paths (Edmonds-Karp on the tiny bipartite graph),
//!    which finds a full transport whenever one exists. Because step 2 only tops up what
//!    step 1 left, a small change of H gives a small change of the rows in the common case.

/// Residual amounts at or below this are treated as zero while augmenting.
const EPS: f64 = 1e-13;

/// Why no set of rows satisfies the invariants.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("no redistribution exists: {shortfall:e} of the forwarded reads cannot be placed within the 1/k cap")]
pub struct Infeasible {
    /// How much of the total off-diagonal flow could not be placed.
    pub shortfall: f64,
}

/// Computes the N x N row-major matrix `rows[c * n + j]` for shares `shares` (each <= 1/k,
/// summing to 1) and `k` replicas per request.
pub fn redistribute(shares: &[f64], k: usize) -> Result<Vec<f64>, Infeasible> {
    let n = shares.len();
    assert!(
        n >= 2 && k >= 1 && k < n,
        "redistribution needs n >= 2 and 1 <= k < n (n={n}, k={k})"
    );
    let cap = 1.0 / k as f64;
    let nf = n as f64;

    // Diagonal: what each coordinator keeps; surplus a_c to forward; deficit b_j to receive.
    let diag: Vec<f64> = shares.iter().map(|&p| (nf * p).min(cap)).collect();
    let surplus: Vec<f64> = diag.iter().map(|&d| (1.0 - d).max(0.0)).collect();
    let deficit: Vec<f64> = shares.iter().zip(&diag).map(|(&p, &d)| (nf * p - d).max(0.0)).collect();

    let mut t = Transport::new(n, cap, surplus, deficit);
    t.proportional_fill();
    t.complete()?;

    let mut rows = t.cells;
    for c in 0..n {
        rows[c * n + c] = diag[c];
    }
    Ok(rows)
}

/// The off-diagonal transport being built.
struct Transport {
    n: usize,
    cap: f64,
    /// Row targets a_c.
    surplus: Vec<f64>,
    /// Column targets b_j.
    deficit: Vec<f64>,
    /// Current cells x[c * n + j]; the diagonal stays 0.
    cells: Vec<f64>,
    row_sum: Vec<f64>,
    col_sum: Vec<f64>,
}

impl Transport {
    fn new(n: usize, cap: f64, surplus: Vec<f64>, deficit: Vec<f64>) -> Self {
        Transport {
            n,
            cap,
            surplus,
            deficit,
            cells: vec![0.0; n * n],
            row_sum: vec![0.0; n],
            col_sum: vec![0.0; n],
        }
    }

    /// Step 1: x_cj = a_c * b_j / (sum of b over j != c), clipped to the cap, then scaled so
    /// that no column and no row exceeds its target.
    fn proportional_fill(&mut self) {
        let n = self.n;
        let total_deficit: f64 = self.deficit.iter().sum();
        for c in 0..n {
            let others = total_deficit - self.deficit[c];
            if others <= EPS {
                continue;
            }
            for j in (0..n).filter(|&j| j != c) {
                self.cells[c * n + j] = (self.surplus[c] * self.deficit[j] / others).min(self.cap);
            }
        }
        for j in 0..n {
            let sum: f64 = (0..n).map(|c| self.cells[c * n + j]).sum();
            if sum > self.deficit[j] {
                let scale = self.deficit[j] / sum;
                (0..n).for_each(|c| self.cells[c * n + j] *= scale);
            }
        }
        for c in 0..n {
            let sum: f64 = self.cells[c * n..(c + 1) * n].iter().sum();
            if sum > self.surplus[c] {
                let scale = self.surplus[c] / sum;
                self.cells[c * n..(c + 1) * n].iter_mut().for_each(|x| *x *= scale);
            }
        }
        self.recompute_sums();
    }

    fn recompute_sums(&mut self) {
        let n = self.n;
        for c in 0..n {
            self.row_sum[c] = self.cells[c * n..(c + 1) * n].iter().sum();
        }
        for j in 0..n {
            self.col_sum[j] = (0..n).map(|c| self.cells[c * n + j]).sum();
        }
    }

    /// Step 2: augmenting paths source -> row -> column (-> row -> column ...) -> sink, found
    /// by breadth-first search (shortest first, so the number of augmentations is bounded
    /// independently of the values), until every row has forwarded its surplus.
    fn complete(&mut self) -> Result<(), Infeasible> {
        let n = self.n;
        // BFS labels: for a row, the column it was reached from (usize::MAX = from the source);
        // for a column, the row it was reached from.
        let mut row_from = vec![usize::MAX; n];
        let mut col_from = vec![usize::MAX; n];
        let mut row_seen = vec![false; n];
        let mut col_seen = vec![false; n];
        let mut queue: Vec<(bool, usize)> = Vec::with_capacity(2 * n);
        loop {
            row_seen.iter_mut().for_each(|s| *s = false);
            col_seen.iter_mut().for_each(|s| *s = false);
            queue.clear();
            for c in 0..n {
                if self.surplus[c] - self.row_sum[c] > EPS {
                    row_seen[c] = true;
                    row_from[c] = usize::MAX;
                    queue.push((true, c));
                }
            }
            if queue.is_empty() {
                return Ok(());
            }
            let mut sink_col = None;
            let mut head = 0;
            while head < queue.len() && sink_col.is_none() {
                let (is_row, v) = queue[head];
                head += 1;
                if is_row {
                    for j in 0..n {
                        if j != v && !col_seen[j] && self.cap - self.cells[v * n + j] > EPS {
                            col_seen[j] = true;
                            col_from[j] = v;
                            if self.deficit[j] - self.col_sum[j] > EPS {
                                sink_col = Some(j);
                                break;
                            }
                            queue.push((false, j));
                        }
                    }
                } else {
                    for c in 0..n {
                        if c != v && !row_seen[c] && self.cells[c * n + v] > EPS {
                            row_seen[c] = true;
                            row_from[c] = v;
                            queue.push((true, c));
                        }
                    }
                }
            }
            let Some(end) = sink_col else {
                let shortfall: f64 = (0..n).map(|c| self.surplus[c] - self.row_sum[c]).sum();
                return Err(Infeasible { shortfall });
            };
            self.augment(end, &row_from, &col_from);
        }
    }

    /// Pushes the bottleneck amount along the path ending at column `end`.
    fn augment(&mut self, end: usize, row_from: &[usize], col_from: &[usize]) {
        let n = self.n;
        // Walk back once to find the bottleneck.
        let mut delta = self.deficit[end] - self.col_sum[end];
        let mut j = end;
        let start_row = loop {
            let c = col_from[j];
            delta = delta.min(self.cap - self.cells[c * n + j]);
            match row_from[c] {
                usize::MAX => break c,
                prev_col => {
                    delta = delta.min(self.cells[c * n + prev_col]);
                    j = prev_col;
                }
            }
        };
        delta = delta.min(self.surplus[start_row] - self.row_sum[start_row]);
        debug_assert!(delta > 0.0);
        // Walk back again to apply it: forward edges gain, backward edges lose.
        let mut j = end;
        self.col_sum[end] += delta;
        loop {
            let c = col_from[j];
            self.cells[c * n + j] = (self.cells[c * n + j] + delta).min(self.cap);
            match row_from[c] {
                usize::MAX => {
                    self.row_sum[c] += delta;
                    break;
                }
                prev_col => {
                    self.cells[c * n + prev_col] = (self.cells[c * n + prev_col] - delta).max(0.0);
                    j = prev_col;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hwlb::shares::compute_shares;

    fn rows_for(h: &[f64], k: usize) -> (Vec<f64>, Vec<f64>) {
        let mut p = vec![0.0; h.len()];
        compute_shares(h, 0.95, k, &mut p);
        (p.clone(), redistribute(&p, k).unwrap())
    }

    #[test]
    fn k1_is_the_published_surplus_deficit_split() {
        // P = 1/7, 2/7, 4/7; N P = 3/7, 6/7, 12/7: coordinators 0 and 1 forward their surplus
        // (4/7 and 1/7) to 2, the only deficit node.
        let (_, rows) = rows_for(&[0.0, 0.5, 0.75], 1);
        let expect = [3.0 / 7.0, 0.0, 4.0 / 7.0, 0.0, 6.0 / 7.0, 1.0 / 7.0, 0.0, 0.0, 1.0];
        for (a, b) in rows.iter().zip(expect) {
            assert!((a - b).abs() < 1e-12, "{rows:?}");
        }
    }

    #[test]
    fn published_counterexample_cold_coordinator_stays_under_cap() {
        // The published code gave the cold coordinator [.2, 0, 0, .8] here (0.8 > 1/2).
        let (_, rows) = rows_for(&[0.0, 7.0 / 9.0, 7.0 / 9.0, 0.9], 2);
        assert!(rows.iter().all(|&x| x <= 0.5 + 1e-12), "{rows:?}");
        let (_, rows) = rows_for(&[0.66, 0.66, 0.34, 0.32], 3);
        assert!(rows.iter().all(|&x| x <= 1.0 / 3.0 + 1e-12), "{rows:?}");
    }
}
