package io.replicalb.core.hwlb;

import java.util.Arrays;

/**
 * Coordinator redistribution ("network thrift"): each replica-coordinator's row of forwarding
 * fractions (a port of {@code crates/policy/src/hwlb/redistribution.rs}, step for step, so the
 * rows are the same numbers, not merely rows that satisfy the invariants).
 *
 * <p>Each of the N replica-coordinators receives 1/N of the requests. Coordinator c gets a row
 * pp_c over the N replicas such that, to 1e-9: sum_j pp_c[j] = 1 and 0 &lt;= pp_c[j] &lt;= 1/k;
 * pp_c[c] = min(N P_c, 1/k) (keep as much work local as allowed); (1/N) sum_c pp_c[j] = P_j.
 * With the diagonal fixed the off-diagonal cells form a transportation problem, solved by a
 * proportional fill completed exactly with augmenting paths (Edmonds-Karp).
 */
public final class Redistribution
{
    /** Residual amounts at or below this are treated as zero while augmenting. */
    public static final double EPS = 1e-13;

    private static final int NONE = -1;

    private Redistribution()
    {
    }

    /**
     * The N x N row-major matrix {@code rows[c * n + j]} for {@code shares} (each at most 1/k,
     * summing to 1) and {@code k} replicas per request, {@code n >= 2}, {@code 1 <= k < n}.
     *
     * @throws Infeasible when no transport within the 1/k cap exists (never seen so far)
     */
    public static double[] redistribute(double[] shares, int k) throws Infeasible
    {
        int n = shares.length;
        if (n < 2 || k < 1 || k >= n)
            throw new IllegalArgumentException("redistribution needs n >= 2 and 1 <= k < n (n=" + n + ", k=" + k + ")");
        double cap = 1.0 / k;
        double nf = n;

        // Diagonal: what each coordinator keeps; surplus a_c to forward; deficit b_j to receive.
        double[] diag = new double[n];
        double[] surplus = new double[n];
        double[] deficit = new double[n];
        for (int i = 0; i < n; i++)
        {
            diag[i] = Math.min(nf * shares[i], cap);
            surplus[i] = Math.max(1.0 - diag[i], 0.0);
            deficit[i] = Math.max(nf * shares[i] - diag[i], 0.0);
        }

        Transport t = new Transport(n, cap, surplus, deficit);
        t.proportionalFill();
        t.complete();

        double[] rows = t.cells;
        for (int c = 0; c < n; c++)
            rows[c * n + c] = diag[c];
        return rows;
    }

    /** The off-diagonal transport being built. */
    private static final class Transport
    {
        final int n;
        final double cap;
        /** Row targets a_c. */
        final double[] surplus;
        /** Column targets b_j. */
        final double[] deficit;
        /** Current cells x[c * n + j]; the diagonal stays 0. */
        final double[] cells;
        final double[] rowSum;
        final double[] colSum;

        Transport(int n, double cap, double[] surplus, double[] deficit)
        {
            this.n = n;
            this.cap = cap;
            this.surplus = surplus;
            this.deficit = deficit;
            this.cells = new double[n * n];
            this.rowSum = new double[n];
            this.colSum = new double[n];
        }

        /**
         * Step 1: x_cj = a_c * b_j / (sum of b over j != c), clipped to the cap, then scaled so
         * that no column and no row exceeds its target.
         */
        void proportionalFill()
        {
            double totalDeficit = 0.0;
            for (double d : deficit)
                totalDeficit += d;
            for (int c = 0; c < n; c++)
            {
                double others = totalDeficit - deficit[c];
                if (others <= EPS)
                    continue;
                for (int j = 0; j < n; j++)
                    if (j != c)
                        cells[c * n + j] = Math.min(surplus[c] * deficit[j] / others, cap);
            }
            for (int j = 0; j < n; j++)
            {
                double sum = 0.0;
                for (int c = 0; c < n; c++)
                    sum += cells[c * n + j];
                if (sum > deficit[j])
                {
                    double scale = deficit[j] / sum;
                    for (int c = 0; c < n; c++)
                        cells[c * n + j] *= scale;
                }
            }
            for (int c = 0; c < n; c++)
            {
                double sum = 0.0;
                for (int j = 0; j < n; j++)
                    sum += cells[c * n + j];
                if (sum > surplus[c])
                {
                    double scale = surplus[c] / sum;
                    for (int j = 0; j < n; j++)
                        cells[c * n + j] *= scale;
                }
            }
            recomputeSums();
        }

        void recomputeSums()
        {
            for (int c = 0; c < n; c++)
            {
                double s = 0.0;
                for (int j = 0; j < n; j++)
                    s += cells[c * n + j];
                rowSum[c] = s;
            }
            for (int j = 0; j < n; j++)
            {
                double s = 0.0;
                for (int c = 0; c < n; c++)
                    s += cells[c * n + j];
                colSum[j] = s;
            }
        }

        /**
         * Step 2: augmenting paths source -> row -> column (-> row -> column ...) -> sink,
         * found by breadth-first search, until every row has forwarded its surplus.
         */
        void complete() throws Infeasible
        {
            // BFS labels: for a row, the column it was reached from (NONE = from the source);
            // for a column, the row it was reached from.
            int[] rowFrom = new int[n];
            int[] colFrom = new int[n];
            Arrays.fill(rowFrom, NONE);
            Arrays.fill(colFrom, NONE);
            boolean[] rowSeen = new boolean[n];
            boolean[] colSeen = new boolean[n];
            // Queue entries: v for row v, n + v for column v.
            int[] queue = new int[2 * n];
            while (true)
            {
                Arrays.fill(rowSeen, false);
                Arrays.fill(colSeen, false);
                int tail = 0;
                for (int c = 0; c < n; c++)
                {
                    if (surplus[c] - rowSum[c] > EPS)
                    {
                        rowSeen[c] = true;
                        rowFrom[c] = NONE;
                        queue[tail++] = c;
                    }
                }
                if (tail == 0)
                    return;
                int sinkCol = NONE;
                int head = 0;
                while (head < tail && sinkCol == NONE)
                {
                    int entry = queue[head++];
                    if (entry < n)
                    {
                        int v = entry;
                        for (int j = 0; j < n; j++)
                        {
                            if (j != v && !colSeen[j] && cap - cells[v * n + j] > EPS)
                            {
                                colSeen[j] = true;
                                colFrom[j] = v;
                                if (deficit[j] - colSum[j] > EPS)
                                {
                                    sinkCol = j;
                                    break;
                                }
                                queue[tail++] = n + j;
                            }
                        }
                    }
                    else
                    {
                        int v = entry - n;
                        for (int c = 0; c < n; c++)
                        {
                            if (c != v && !rowSeen[c] && cells[c * n + v] > EPS)
                            {
                                rowSeen[c] = true;
                                rowFrom[c] = v;
                                queue[tail++] = c;
                            }
                        }
                    }
                }
                if (sinkCol == NONE)
                {
                    double shortfall = 0.0;
                    for (int c = 0; c < n; c++)
                        shortfall += surplus[c] - rowSum[c];
                    throw new Infeasible(shortfall);
                }
                augment(sinkCol, rowFrom, colFrom);
            }
        }

        /** Pushes the bottleneck amount along the path ending at column {@code end}. */
        void augment(int end, int[] rowFrom, int[] colFrom)
        {
            // Walk back once to find the bottleneck.
            double delta = deficit[end] - colSum[end];
            int j = end;
            int startRow;
            while (true)
            {
                int c = colFrom[j];
                delta = Math.min(delta, cap - cells[c * n + j]);
                int prevCol = rowFrom[c];
                if (prevCol == NONE)
                {
                    startRow = c;
                    break;
                }
                delta = Math.min(delta, cells[c * n + prevCol]);
                j = prevCol;
            }
            delta = Math.min(delta, surplus[startRow] - rowSum[startRow]);
            assert delta > 0.0 : "an augmenting path carries a positive amount";
            // Walk back again to apply it: forward edges gain, backward edges lose.
            j = end;
            colSum[end] += delta;
            while (true)
            {
                int c = colFrom[j];
                cells[c * n + j] = Math.min(cells[c * n + j] + delta, cap);
                int prevCol = rowFrom[c];
                if (prevCol == NONE)
                {
                    rowSum[c] += delta;
                    break;
                }
                cells[c * n + prevCol] = Math.max(cells[c * n + prevCol] - delta, 0.0);
                j = prevCol;
            }
        }
    }
}
