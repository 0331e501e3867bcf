package io.replicalb.driver;

import io.replicalb.core.Rng;
import io.replicalb.core.client.ClientPolicy;
import io.replicalb.core.client.Event;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * A client policy for the tests: orders the candidates by a fixed preference (the highest
 * {@code rank[id]} first; ties in candidate order), remembers the last candidates it was
 * offered, and records every callback as a line ({@code send 3}, {@code reply 3},
 * {@code failure 3 TIMEOUT}, {@code up 2}, {@code down 2}, {@code rate 1 0.5}, {@code topology}).
 * {@code broken} makes it answer a wrong count; {@code draws} holds the next number of its
 * random stream at each plan; {@code beforePlan} (if set) runs at the start of every plan, under
 * the adapter's lock. The adapter serialises every call, so plain fields do.
 */
final class TestPolicy implements ClientPolicy {
    final int[] rank = new int[MAX_NODES];
    final List<String> log = new ArrayList<>();
    int[] lastCandidates = new int[0];
    int[] zones = new int[0];
    int localZone = -2;
    boolean broken;
    int inFlight;
    final List<Long> draws = new ArrayList<>();
    Runnable beforePlan;

    @Override
    public int plan(int[] candidates, int count, long nowNs, Rng rng, int[] out) {
        if (beforePlan != null) {
            beforePlan.run();
        }
        draws.add(rng.nextLong());
        lastCandidates = Arrays.copyOf(candidates, count);
        Integer[] boxed = new Integer[count];
        for (int i = 0; i < count; i++) {
            boxed[i] = candidates[i];
        }
        Arrays.sort(boxed, (a, b) -> Integer.compare(rank[b], rank[a]));
        for (int i = 0; i < count; i++) {
            out[i] = boxed[i];
        }
        return broken ? count + 1 : count;
    }

    @Override
    public void observe(Event event, int node, long latencyNs, double hitRate, long nowNs) {
        switch (event) {
            case SENT -> {
                inFlight++;
                log.add("send " + node);
            }
            case REPLY -> {
                inFlight--;
                log.add("reply " + node);
            }
            case ERROR, TIMEOUT, CONNECTION_LOST -> {
                inFlight--;
                log.add("failure " + node + " " + event.failure());
            }
            case HIT_RATE -> log.add("rate " + node + " " + hitRate);
            case UP -> log.add("up " + node);
            case DOWN -> log.add("down " + node);
        }
    }

    @Override
    public void onTopology(int[] zoneOfNode, int localZone) {
        this.zones = zoneOfNode.clone();
        this.localZone = localZone;
        log.add("topology");
    }
}
