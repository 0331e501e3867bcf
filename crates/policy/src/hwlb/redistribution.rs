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
    let mut scratch = Scratch::default();
    redistribute_with(shares, k, &mut scratch)?;
    Ok(scratch.cells)
}

/// The working memory of [`redistribute_with`], reused from one plan to the next so that
/// recomputing a plan allocates nothing once it has grown.
#[derive(Clone, Debug, Default)]
pub struct Scratch {
    diag: Vec<f64>,
    surplus: Vec<f64>,
    deficit: Vec<f64>,
    /// The rows, once computed.
    cells: Vec<f64>,
    row_sum: Vec<f64>,
    col_sum: Vec<f64>,
    row_from: Vec<usize>,
    col_from: Vec<usize>,
    row_seen: Vec<bool>,
    col_seen: Vec<bool>,
    queue: Vec<(bool, usize)>,
}

impl Scratch {
    /// The rows of the last successful [`redistribute_with`].
    pub fn rows(&self) -> &[f64] {
        &self.cells
    }
}

/// [`redistribute`] in `scratch` (the rows in [`Scratch::rows`]): the same computation, with
/// the working memory of the previous call.
pub fn redistribute_with(shares: &[f64], k: usize, scratch: &mut Scratch) -> Result<(), Infeasible> {
    let n = shares.len();
    assert!(
        n >= 2 && k >= 1 && k < n,
        "redistribution needs n >= 2 and 1 <= k < n (n={n}, k={k})"
    );
    let cap = 1.0 / k as f64;
    let nf = n as f64;

    // Diagonal: what each coordinator keeps; surplus a_c to forward; deficit b_j to receive.
    let mut diag = std::mem::take(&mut scratch.diag);
    diag.clear();
    diag.extend(shares.iter().map(|&p| (nf * p).min(cap)));
    scratch.surplus.clear();
    scratch.surplus.extend(diag.iter().map(|&d| (1.0 - d).max(0.0)));
    scratch.deficit.clear();
    scratch
        .deficit
        .extend(shares.iter().zip(&diag).map(|(&p, &d)| (nf * p - d).max(0.0)));

    let mut t = Transport::new(n, cap, scratch);
    t.proportional_fill();
    let done = t.complete();
    t.give_back(scratch);
    for (c, &d) in diag.iter().enumerate() {
        scratch.cells[c * n + c] = d;
    }
    scratch.diag = diag;
    done
}

/// The off-diagonal transport being built, in the working memory of [`Scratch`] (`cells` the
/// current x[c * n + j], the diagonal staying 0; `surplus` and `deficit` the row and column
/// targets a_c and b_j; the search's labels and queue, see [`Self::complete`]).
struct Transport {
    n: usize,
    cap: f64,
    w: Scratch,
}

/// `v` emptied and filled with `len` copies of `x` (its memory kept).
fn refill<T: Clone>(mut v: Vec<T>, len: usize, x: T) -> Vec<T> {
    v.clear();
    v.resize(len, x);
    v
}

impl Transport {
    /// Takes `s`'s memory, its `surplus` and `deficit` already set (the caller holds the diagonal).
    fn new(n: usize, cap: f64, s: &mut Scratch) -> Self {
        let mut w = std::mem::take(s);
        w.cells = refill(w.cells, n * n, 0.0);
        w.row_sum = refill(w.row_sum, n, 0.0);
        w.col_sum = refill(w.col_sum, n, 0.0);
        w.row_from = refill(w.row_from, n, usize::MAX);
        w.col_from = refill(w.col_from, n, usize::MAX);
        w.row_seen = refill(w.row_seen, n, false);
        w.col_seen = refill(w.col_seen, n, false);
        w.queue.clear();
        w.queue.reserve(2 * n);
        Transport { n, cap, w }
    }

    /// Hands its memory back to `s` (the rows in `s.cells`).
    fn give_back(self, s: &mut Scratch) {
        *s = self.w;
    }

    /// Step 1: x_cj = a_c * b_j / (sum of b over j != c), clipped to the cap, then scaled so
    /// that no column and no row exceeds its target.
    fn proportional_fill(&mut self) {
        let n = self.n;
        let total_deficit: f64 = self.w.deficit.iter().sum();
        for c in 0..n {
            let others = total_deficit - self.w.deficit[c];
            if others <= EPS {
                continue;
            }
            for j in (0..n).filter(|&j| j != c) {
                self.w.cells[c * n + j] = (self.w.surplus[c] * self.w.deficit[j] / others).min(self.cap);
            }
        }
        for j in 0..n {
            let sum: f64 = (0..n).map(|c| self.w.cells[c * n + j]).sum();
            if sum > self.w.deficit[j] {
                let scale = self.w.deficit[j] / sum;
                (0..n).for_each(|c| self.w.cells[c * n + j] *= scale);
            }
        }
        for c in 0..n {
            let sum: f64 = self.w.cells[c * n..(c + 1) * n].iter().sum();
            if sum > self.w.surplus[c] {
                let scale = self.w.surplus[c] / sum;
                self.w.cells[c * n..(c + 1) * n].iter_mut().for_each(|x| *x *= scale);
            }
        }
        self.recompute_sums();
    }

    fn recompute_sums(&mut self) {
        let n = self.n;
        for c in 0..n {
            self.w.row_sum[c] = self.w.cells[c * n..(c + 1) * n].iter().sum();
        }
        for j in 0..n {
            self.w.col_sum[j] = (0..n).map(|c| self.w.cells[c * n + j]).sum();
        }
    }

    /// Step 2: augmenting paths source -> row -> column (-> row -> column ...) -> sink, found
    /// by breadth-first search (shortest first, so the number of augmentations is bounded
    /// independently of the values), until every row has forwarded its surplus.
    fn complete(&mut self) -> Result<(), Infeasible> {
        let mut row_from = std::mem::take(&mut self.w.row_from);
        let mut col_from = std::mem::take(&mut self.w.col_from);
        let mut row_seen = std::mem::take(&mut self.w.row_seen);
        let mut col_seen = std::mem::take(&mut self.w.col_seen);
        let mut queue = std::mem::take(&mut self.w.queue);
        let done = self.search(&mut row_from, &mut col_from, &mut row_seen, &mut col_seen, &mut queue);
        (self.w.row_from, self.w.col_from, self.w.row_seen, self.w.col_seen, self.w.queue) =
            (row_from, col_from, row_seen, col_seen, queue);
        done
    }

    /// [`Self::complete`]'s loop. BFS labels: for a row, the column it was reached from
    /// (`usize::MAX` = from the source); for a column, the row it was reached from.
    fn search(
        &mut self,
        row_from: &mut [usize],
        col_from: &mut [usize],
        row_seen: &mut [bool],
        col_seen: &mut [bool],
        queue: &mut Vec<(bool, usize)>,
    ) -> Result<(), Infeasible> {
        let n = self.n;
        loop {
            row_seen.iter_mut().for_each(|s| *s = false);
            col_seen.iter_mut().for_each(|s| *s = false);
            queue.clear();
            for c in 0..n {
                if self.w.surplus[c] - self.w.row_sum[c] > EPS {
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
                        if j != v && !col_seen[j] && self.cap - self.w.cells[v * n + j] > EPS {
                            col_seen[j] = true;
                            col_from[j] = v;
                            if self.w.deficit[j] - self.w.col_sum[j] > EPS {
                                sink_col = Some(j);
                                break;
                            }
                            queue.push((false, j));
                        }
                    }
                } else {
                    for c in 0..n {
                        if c != v && !row_seen[c] && self.w.cells[c * n + v] > EPS {
                            row_seen[c] = true;
                            row_from[c] = v;
                            queue.push((true, c));
                        }
                    }
                }
            }
            let Some(end) = sink_col else {
                let shortfall: f64 = (0..n).map(|c| self.w.surplus[c] - self.w.row_sum[c]).sum();
                return Err(Infeasible { shortfall });
            };
            self.augment(end, row_from, col_from);
        }
    }

    /// Pushes the bottleneck amount along the path ending at column `end`.
    fn augment(&mut self, end: usize, row_from: &[usize], col_from: &[usize]) {
        let n = self.n;
        // Walk back once to find the bottleneck.
        let mut delta = self.w.deficit[end] - self.w.col_sum[end];
        let mut j = end;
        let start_row = loop {
            let c = col_from[j];
            delta = delta.min(self.cap - self.w.cells[c * n + j]);
            match row_from[c] {
                usize::MAX => break c,
                prev_col => {
                    delta = delta.min(self.w.cells[c * n + prev_col]);
                    j = prev_col;
                }
            }
        };
        delta = delta.min(self.w.surplus[start_row] - self.w.row_sum[start_row]);
        debug_assert!(delta > 0.0);
        // Walk back again to apply it: forward edges gain, backward edges lose.
        let mut j = end;
        self.w.col_sum[end] += delta;
        loop {
            let c = col_from[j];
            self.w.cells[c * n + j] = (self.w.cells[c * n + j] + delta).min(self.cap);
            match row_from[c] {
                usize::MAX => {
                    self.w.row_sum[c] += delta;
                    break;
                }
                prev_col => {
                    self.w.cells[c * n + prev_col] = (self.w.cells[c * n + prev_col] - delta).max(0.0);
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
