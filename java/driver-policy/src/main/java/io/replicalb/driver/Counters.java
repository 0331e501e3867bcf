package io.replicalb.driver;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * What {@link ReplicaLbLoadBalancingPolicy} did so far, for reports (the load generator's bench
 * JSON shows them as the Rust adapter's): the plans, how their attempts' ends were matched, and
 * the hit-rate polls.
 *
 * @param picks plans that chose a node and opened its ticket
 * @param matched attempt ends matched to a plan's ticket
 * @param untracked attempt ends with no ticket (retries, speculative executions, late ends),
 *     counted as sends ended at once
 * @param expired tickets that expired (their end never came) or were pushed out by the bound
 * @param open tickets open now
 * @param overridden plans the policy answered with something other than an order of the
 *     candidates (or threw): served in candidate order instead
 * @param unmapped callbacks about nodes without an id (the table was full), ignored
 * @param hitRatePolls hit rates read off the request path and told the policy
 * @param hitRateMissing reads of nodes without the plug-in's table (skipped for a minute)
 * @param hitRateFailed reads that failed otherwise (time-outs, a bad value)
 */
public record Counters(
        long picks,
        long matched,
        long untracked,
        long expired,
        long open,
        long overridden,
        long unmapped,
        long hitRatePolls,
        long hitRateMissing,
        long hitRateFailed) {

    /** By name, in a fixed order: the names the load generator's runner reports. */
    public Map<String, Long> asMap() {
        Map<String, Long> m = new LinkedHashMap<>();
        m.put("picks", picks);
        m.put("matched", matched);
        m.put("untracked", untracked);
        m.put("expired", expired);
        m.put("open", open);
        m.put("overridden", overridden);
        m.put("unmapped", unmapped);
        m.put("hit_rate_polls", hitRatePolls);
        m.put("hit_rate_missing", hitRateMissing);
        m.put("hit_rate_failed", hitRateFailed);
        return m;
    }
}
