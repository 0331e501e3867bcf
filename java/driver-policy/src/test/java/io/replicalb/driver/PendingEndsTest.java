package io.replicalb.driver;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class PendingEndsTest {
    @Test
    void ends_come_out_in_order_with_their_fields_and_a_full_queue_refuses() {
        PendingEnds q = new PendingEnds();
        List<long[]> out = new ArrayList<>();
        List<Object> requests = new ArrayList<>();
        PendingEnds.Sink sink = (node, outcome, latency, now, request) -> {
            out.add(new long[] {node, outcome, latency, now});
            requests.add(request);
        };
        Object request = new Object();
        assertTrue(q.offer(4095, 3, 123, 456, request));
        assertTrue(q.offer(0, 0, 0, 1, null));
        q.drain(sink);
        assertEquals(2, out.size());
        assertTrue(requests.get(0) == request && requests.get(1) == null, "each end carries its own request");
        assertEquals(List.of(4095L, 3L, 123L, 456L), List.of(out.get(0)[0], out.get(0)[1], out.get(0)[2], out.get(0)[3]));
        assertEquals(0L, out.get(1)[0]);
        for (int i = 0; i < PendingEnds.CAPACITY; i++) {
            assertTrue(q.offer(i % 7, 0, i, i, null));
        }
        assertFalse(q.offer(1, 0, 0, 0, null), "full");
        out.clear();
        q.drain(sink);
        assertEquals(PendingEnds.CAPACITY, out.size());
        for (int i = 0; i < out.size(); i++) {
            assertEquals(i, out.get(i)[2]);
        }
        assertTrue(q.offer(1, 0, 0, 0, null), "room again");
    }

    @Test
    void producers_on_threads_lose_nothing() throws Exception {
        PendingEnds q = new PendingEnds();
        int each = 100_000;
        long[] seen = new long[2];
        long[] last = {-1, -1};
        PendingEnds.Sink sink = (node, outcome, latency, now, request) -> {
            seen[node]++;
            assertTrue(latency > last[node], "each producer's ends in its order");
            last[node] = latency;
        };
        List<Thread> producers = new ArrayList<>();
        for (int p = 0; p < 2; p++) {
            int node = p;
            Thread t = new Thread(() -> {
                for (int i = 0; i < each; i++) {
                    while (!q.offer(node, 0, i, i, null)) {
                        Thread.onSpinWait();
                    }
                }
            });
            t.start();
            producers.add(t);
        }
        while (producers.stream().anyMatch(Thread::isAlive)) {
            q.drain(sink);
        }
        q.drain(sink);
        assertEquals(each, seen[0]);
        assertEquals(each, seen[1]);
    }
}
