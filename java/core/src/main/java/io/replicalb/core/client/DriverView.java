package io.replicalb.core.client;

/**
 * What the Java-driver-style policies learn through the feedback path (the Rust
 * {@code policy::health::DriverView}): requests in flight per node, the last few response
 * times for the Java driver's "unhealthy node" rule, and when each node last came up. The rule:
 * a node is unhealthy when at least {@code in_flight_threshold} of this client's requests are
 * in flight to it AND fewer than {@code min_responses} responses (replies or errors, not
 * time-outs) came from it within {@code response_window_ms}.
 */
final class DriverView {
    /** The most responses the rule can be asked to count. */
    static final int MAX_MIN_RESPONSES = 8;

    private final int inFlightThreshold;
    private final int minResponses;
    private final long responseWindowNs;
    private final int[] inFlight = new int[ClientPolicy.MAX_NODES];
    /** Per node, its last {@code minResponses} response times, oldest first. */
    private final long[] responsesNs;
    private final int[] seen = new int[ClientPolicy.MAX_NODES];
    private final long[] upSinceNs = new long[ClientPolicy.MAX_NODES];
    private final boolean[] cameUp = new boolean[ClientPolicy.MAX_NODES];

    DriverView(int inFlightThreshold, int minResponses, long responseWindowNs) {
        if (minResponses < 1 || minResponses > MAX_MIN_RESPONSES) {
            throw new IllegalArgumentException("min_responses " + minResponses + " is outside 1.." + MAX_MIN_RESPONSES);
        }
        this.inFlightThreshold = inFlightThreshold;
        this.minResponses = minResponses;
        this.responseWindowNs = responseWindowNs;
        this.responsesNs = new long[ClientPolicy.MAX_NODES * minResponses];
    }

    /** This client's requests in flight to {@code node}. */
    int inFlight(int node) {
        return inFlight[node];
    }

    /**
     * Learns from a send, a reply, a failure (an error counts as a response, a time-out or a
     * lost connection does not) or {@code node} coming up; other events change nothing.
     */
    void observe(Event event, int node, long nowNs) {
        switch (event) {
            case SENT -> inFlight[Order.node(node)]++;
            case REPLY, ERROR, TIMEOUT, CONNECTION_LOST -> {
                int i = Order.node(node);
                inFlight[i] = Math.max(0, inFlight[i] - 1);
                if (event == Event.REPLY || event == Event.ERROR) {
                    responded(i, nowNs);
                }
            }
            case UP -> {
                int i = Order.node(node);
                upSinceNs[i] = nowNs;
                cameUp[i] = true;
            }
            default -> {}
        }
    }

    private void responded(int node, long nowNs) {
        int base = node * minResponses;
        System.arraycopy(responsesNs, base + 1, responsesNs, base, minResponses - 1);
        responsesNs[base + minResponses - 1] = nowNs;
        if (seen[node] < Integer.MAX_VALUE) {
            seen[node]++;
        }
    }

    /** Whether {@code node} was seen coming up since this policy started. */
    boolean cameUp(int node) {
        return cameUp[node];
    }

    /** When {@code node} last came up, ns (see {@link #cameUp(int)}). */
    long upSinceNs(int node) {
        return upSinceNs[node];
    }

    /** The rule: busy (in-flight at the threshold) and too few responses in the window. */
    boolean isUnhealthy(int node, int inFlightNow, long nowNs) {
        if (inFlightNow < inFlightThreshold) {
            return false;
        }
        if (seen[node] < minResponses) {
            return true;
        }
        return nowNs - responsesNs[node * minResponses] > responseWindowNs;
    }
}
