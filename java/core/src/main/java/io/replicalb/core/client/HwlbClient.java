package io.replicalb.core.client;

import io.replicalb.core.Rng;
import io.replicalb.core.hwlb.HwlbPlan;
import io.replicalb.core.hwlb.PeerRates;
import io.replicalb.core.hwlb.PlanConfig;
import io.replicalb.core.hwlb.SystematicSampler;
import java.util.Map;

/**
 * {@code hwlb-client}: heat-weighted load balancing at a client (the Rust
 * {@code policy::hwlb::Hwlb::new_client}). A client is a coordinator that is not a replica, so
 * it draws the node it sends a read to with HWLB's shares themselves: every replica should
 * see the same cache misses per second, so a node gets reads in proportion to
 * {@code 1 / (1 - hit rate)} (rates capped at {@code hit_rate_cap}, HWLB stepping aside when
 * they are within {@code min_spread}). Hit rates come from replies that carry one or, in a
 * driver, from a poller off the request path ({@link #onHitRate}); a rate older than
 * {@code stale_after_ms} counts as {@code stale_rate}, a node with none as 0 (just restarted).
 * The drawn node goes first, then (with {@code extra_replica}) one more uniform among the
 * others, then the rest in candidate order. When HWLB steps aside the first two are uniform.
 *
 * <p>The plan is recomputed only when the candidates' effective rates change (the only step
 * that allocates); the per-request path draws from the cached sampler. A driver sends no
 * background reads, so {@code warmup_reads} must stay 0 (its published default); the other
 * warm-up parameters are accepted and checked, as in Rust, and shape nothing without it.
 */
public final class HwlbClient extends OrderingPolicy {
    /** The name it is registered under. */
    public static final String NAME = "hwlb-client";

    static final Params.Spec[] PARAMS = {
        Params.real("hit_rate_cap", PlanConfig.DEFAULT_HIT_RATE_CAP, 0.0, 0.999),
        Params.real("min_spread", PlanConfig.DEFAULT_MIN_SPREAD, 0.0, 1.0),
        Params.real("stale_after_ms", 1000.0, 0.001, 86_400_000.0),
        Params.real("stale_rate", 0.95, 0.0, 1.0),
        Params.flag("extra_replica", true),
        Params.flag("enabled", true),
        Params.real("warmup_reads", 0.0, 0.0, 10.0),
        Params.whole("warmup_max_in_flight", 4, 1, 1_000_000),
        Params.real("warmup_ramp_s", 0.0, 0.0, 3_600.0),
        Params.real("warmup_window_s", 900.0, 1.0, 86_400.0),
    };

    /** Cached plans, one per candidate list (direct-mapped by a hash of it). */
    private static final int CACHE_SLOTS = 64;

    /** A plan for one candidate list, with the rates it was made from. */
    private static final class Cached {
        final int[] nodes = new int[Order.MAX_CANDIDATES];
        final double[] rates = new double[Order.MAX_CANDIDATES];
        int n = -1;
        boolean active;
        SystematicSampler sampler;

        /** Whether this plan was made for exactly these candidates and rates. */
        boolean same(int[] candidates, int count, double[] now) {
            if (n != count) {
                return false;
            }
            for (int i = 0; i < count; i++) {
                if (nodes[i] != candidates[i] || Double.compare(rates[i], now[i]) != 0) {
                    return false;
                }
            }
            return true;
        }

        /** Recomputes the plan (HWLB's shares for one target) from {@code now}'s rates. */
        void rebuild(int[] candidates, int count, double[] now, PlanConfig config) {
            System.arraycopy(candidates, 0, nodes, 0, count);
            System.arraycopy(now, 0, rates, 0, count);
            n = count;
            HwlbPlan plan = HwlbPlan.compute(java.util.Arrays.copyOf(now, count), 1, config);
            active = plan.active();
            sampler = active ? new SystematicSampler(plan.shares()) : null;
        }
    }

    private final PlanConfig config;
    private final boolean extraReplica;
    private final boolean enabled;
    private final PeerRates peers;
    private final Cached[] cache = new Cached[CACHE_SLOTS];
    private final double[] rates = new double[Order.MAX_CANDIDATES];
    private final int[] drawn = new int[1];

    /** Built from the Rust parameters; {@code warmup_reads} other than 0 is refused. */
    public HwlbClient(Map<String, String> params) {
        super();
        Params p = Params.resolve(NAME, PARAMS, params);
        if (p.real("warmup_reads") != 0.0) {
            throw new IllegalArgumentException("policy '" + NAME + "' parameter 'warmup_reads' = '" + p.real("warmup_reads")
                    + "': a driver sends no background reads; allowed: 0");
        }
        config = new PlanConfig(p.real("hit_rate_cap"), p.real("min_spread"));
        extraReplica = p.flag("extra_replica");
        enabled = p.flag("enabled");
        peers = new PeerRates((long) (p.real("stale_after_ms") * 1e6), p.real("stale_rate"));
        for (int i = 0; i < CACHE_SLOTS; i++) {
            cache[i] = new Cached();
        }
    }

    @Override
    void order(int[] candidates, int count, long nowNs, Rng rng, int[] out) {
        if (!enabled) {
            Order.firstTwoRandom(candidates, count, rng, out);
            return;
        }
        int hash = 0;
        for (int i = 0; i < count; i++) {
            double r = peers.effective(candidates[i], nowNs);
            if (Double.isNaN(r)) {
                // A node that reports no rate: HWLB steps aside.
                Order.firstTwoRandom(candidates, count, rng, out);
                return;
            }
            rates[i] = r;
            hash = hash * 31 + candidates[i];
        }
        Cached c = cache[Math.floorMod(hash, CACHE_SLOTS)];
        if (!c.same(candidates, count, rates)) {
            c.rebuild(candidates, count, rates, config);
        }
        if (!c.active) {
            Order.firstTwoRandom(candidates, count, rng, out);
            return;
        }
        c.sampler.sample(1, rng.unitDouble(), drawn);
        int first = drawn[0];
        out[0] = candidates[first];
        int len = 1;
        int extra = -1;
        if (extraReplica && count > 1) {
            // The r-th of the others, r uniform.
            int r = rng.below(count - 1);
            extra = r < first ? r : r + 1;
            out[len++] = candidates[extra];
        }
        for (int j = 0; j < count; j++) {
            if (j != first && j != extra) {
                out[len++] = candidates[j];
            }
        }
    }

    @Override
    public void observe(Event event, int node, long latencyNs, double hitRate, long nowNs) {
        int i = Order.node(node);
        switch (event) {
            case REPLY -> {
                if (!Double.isNaN(hitRate)) {
                    peers.record(i, hitRate, nowNs, nowNs);
                }
            }
            case HIT_RATE -> peers.record(i, hitRate, nowNs, nowNs);
            case CONNECTION_LOST, DOWN -> peers.forget(i);
            case UP -> {
                peers.forget(i);
                peers.setSupported(node, true);
            }
            default -> {}
        }
    }
}
