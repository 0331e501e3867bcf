package io.replicalb.core.client;

import io.replicalb.core.Rng;
import java.util.Map;

/**
 * {@code weighted-least-loaded} (the (Un)Balance talk's policy; the Rust
 * {@code policy::weighted_least_loaded}): up to {@code max_candidates} (8) candidates drawn at
 * random are scored by {@code min(in_flight_cap, 1 + in flight)}, multiplied by
 * {@code remote_zone_weight} (4) for a node outside the client's zone, {@code unhealthy_weight}
 * (64) for an unhealthy node (the Java driver's rule) and {@code starting_weight} (16), with
 * probability {@code 1 - time up / ramp}, for a node that came up less than a ramp ago (each
 * client draws its ramp in [{@code ramp_min_s}, {@code ramp_max_s}] on its first plan, so
 * clients do not ramp in lockstep). The scored nodes go first, lowest score first (ties in
 * random order), the others after them.
 *
 * <p>The candidates of a {@link ClientPolicy} are the key's replicas (or every node), so
 * {@code non_replica_weight} is accepted, as in Rust, but never applies here.
 */
public final class WeightedLeastLoaded extends OrderingPolicy {
    /** The name it is registered under. */
    public static final String NAME = "weighted-least-loaded";

    static final Params.Spec[] PARAMS = {
        Params.whole("max_candidates", 8, 1, Order.MAX_CANDIDATES),
        Params.real("in_flight_cap", 32_768.0, 1.0, 1e12),
        Params.real("remote_zone_weight", 4.0, 1.0, 1e9),
        Params.real("non_replica_weight", 12.0, 1.0, 1e9),
        Params.real("unhealthy_weight", 64.0, 1.0, 1e9),
        Params.real("starting_weight", 16.0, 1.0, 1e9),
        Params.real("ramp_min_s", 30.0, 0.0, 86_400.0),
        Params.real("ramp_max_s", 45.0, 0.0, 86_400.0),
        Params.whole("in_flight_threshold", 10, 1, 1_000_000),
        Params.whole("min_responses", 2, 1, DriverView.MAX_MIN_RESPONSES),
        Params.real("response_window_ms", 200.0, 0.001, 3_600_000.0),
    };

    private final int maxCandidates;
    private final double inFlightCap;
    private final double remoteZoneWeight;
    private final double unhealthyWeight;
    private final double startingWeight;
    private final double rampMinNs;
    private final double rampMaxNs;
    /** This client's ramp, ns; NaN until drawn on the first plan. */
    private double rampNs = Double.NaN;
    private final DriverView view;
    /** Zone per node, -1 when unknown. */
    private final int[] zones = new int[MAX_NODES];
    private int localZone = -1;
    private final double[] scores = new double[Order.MAX_CANDIDATES];

    /** Built from the Rust parameters and defaults. */
    public WeightedLeastLoaded(Map<String, String> params) {
        super();
        Params p = Params.resolve(NAME, PARAMS, params);
        double rampMinS = p.real("ramp_min_s");
        double rampMaxS = p.real("ramp_max_s");
        if (rampMaxS < rampMinS) {
            throw new IllegalArgumentException("policy '" + NAME + "' parameter 'ramp_max_s' = '" + rampMaxS + "': must be at least ramp_min_s ("
                    + rampMinS + ")");
        }
        maxCandidates = (int) p.whole("max_candidates");
        inFlightCap = p.real("in_flight_cap");
        remoteZoneWeight = p.real("remote_zone_weight");
        unhealthyWeight = p.real("unhealthy_weight");
        startingWeight = p.real("starting_weight");
        rampMinNs = rampMinS * 1e9;
        rampMaxNs = rampMaxS * 1e9;
        view = new DriverView((int) p.whole("in_flight_threshold"), (int) p.whole("min_responses"), (long) (p.real("response_window_ms") * 1e6));
        java.util.Arrays.fill(zones, -1);
    }

    @Override
    void order(int[] candidates, int count, long nowNs, Rng rng, int[] out) {
        if (Double.isNaN(rampNs)) {
            rampNs = rampMinNs + rng.unitDouble() * (rampMaxNs - rampMinNs);
        }
        Order.copy(candidates, count, out);
        int m = Math.min(Math.max(maxCandidates, 1), count);
        Order.shufflePrefix(out, 0, m, count, rng);
        for (int i = 0; i < m; i++) {
            scores[i] = score(out[i], nowNs, rng);
        }
        Order.sortByScore(out, scores, m);
    }

    /** The score of {@code node} at {@code nowNs} (the starting weight drawn from {@code rng}). */
    private double score(int node, long nowNs, Rng rng) {
        int inFlight = view.inFlight(node);
        double score = Math.min(1.0 + inFlight, inFlightCap);
        if (localZone >= 0 && zones[node] >= 0 && zones[node] != localZone) {
            score *= remoteZoneWeight;
        }
        if (view.isUnhealthy(node, inFlight, nowNs)) {
            score *= unhealthyWeight;
        }
        if (view.cameUp(node)) {
            double since = Order.elapsedNs(view.upSinceNs(node), nowNs);
            if (since < rampNs && rng.chance(1.0 - since / rampNs)) {
                score *= startingWeight;
            }
        }
        return score;
    }

    @Override
    public void observe(Event event, int node, long latencyNs, double hitRate, long nowNs) {
        view.observe(event, node, nowNs);
    }

    @Override
    public void onTopology(int[] zoneOfNode, int localZone) {
        java.util.Arrays.fill(zones, -1);
        for (int i = 0; i < Math.min(zoneOfNode.length, MAX_NODES); i++) {
            zones[i] = zoneOfNode[i] < 0 ? -1 : zoneOfNode[i];
        }
        this.localZone = localZone < 0 ? -1 : localZone;
    }
}
