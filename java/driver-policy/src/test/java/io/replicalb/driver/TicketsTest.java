package io.replicalb.driver;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The same cases as crates/driver/src/inflight.rs's tests. */
class TicketsTest {
    private static final long MS = 1_000_000;

    @Test
    void an_attempt_ends_its_own_plan_and_a_lost_one_expires() {
        Tickets t = new Tickets(1_000 * MS, 50 * MS, 1_000);
        assertFalse(t.opened(0, 10 * MS, null)); // no connection: never ends
        assertFalse(t.opened(0, 20 * MS, null));
        assertFalse(t.opened(0, 21 * MS, null));
        // The attempt that started at 21 ms ends the ticket of 21, then the one of 20.
        assertTrue(t.take(0, 21 * MS, null));
        assertTrue(t.take(0, 20 * MS, null));
        assertEquals(1, t.open());
        // A retry started at 500 ms has no ticket in its window: untracked.
        assertFalse(t.take(0, 500 * MS, null));
        List<Integer> gone = new ArrayList<>();
        assertFalse(t.expire(1_009 * MS, 8, gone::add));
        assertTrue(gone.isEmpty(), "not yet");
        assertFalse(t.expire(1_010 * MS, 8, gone::add));
        assertEquals(List.of(0), gone);
        t.expire(5_000 * MS, 8, gone::add);
        assertEquals(1, gone.size());
        assertEquals(0, t.open());
    }

    @Test
    void an_end_takes_the_latest_plan_before_it_started_else_one_just_after() {
        Tickets t = new Tickets(1_000 * MS, 50 * MS, 1_000);
        t.opened(3, 10 * MS, null);
        t.opened(3, 70 * MS, null);
        t.opened(3, 80 * MS, null);
        // Started at 75 ms: the 70 ms plan (not the later 80, not the 10, out of the window).
        assertTrue(t.take(3, 75 * MS, null));
        assertEquals(2, t.openFor(3));
        // Started a little before its plan's stamp (clocks read apart): within the skew.
        assertTrue(t.take(3, 80 * MS - Tickets.SKEW_NS / 2, null));
        // Out of the window: the 10 ms plan is 190 ms older than a start at 200 ms.
        assertFalse(t.take(3, 200 * MS, null));
        assertTrue(t.take(3, 10 * MS, null));
        assertEquals(0, t.open());
        assertFalse(t.take(9, 0, null), "a node never planned has no tickets");
    }

    @Test
    void an_end_of_the_planning_request_ends_that_requests_ticket_whatever_the_clocks_say() {
        Tickets t = new Tickets(1_000 * MS, 50 * MS, 1_000);
        Object a = new Object();
        Object b = new Object();
        t.opened(0, 0, a);
        t.opened(0, 10 * MS, b);
        // a's end, by time, seems to have started at 12 ms (its callback ran late), after b's
        // plan, and would take b's ticket. Its request says which is its own.
        assertTrue(t.take(0, 12 * MS, a));
        assertEquals(1, t.openFor(0));
        assertTrue(t.take(0, 11 * MS, b));
        // A retry of a after its ticket ended is untracked, not b's next ticket.
        t.opened(0, 20 * MS, b);
        assertFalse(t.take(0, 21 * MS, a));
        // A ticket planned without a request is matched by time, also by an end with one.
        t.opened(0, 30 * MS, null);
        assertTrue(t.take(0, 31 * MS, a));
        // And an end without a request is matched by time among them all.
        assertTrue(t.take(0, 20 * MS, null));
        assertEquals(0, t.open());
    }

    @Test
    void a_request_finds_its_ticket_behind_many_newer_plans() {
        Tickets t = new Tickets(1_000 * MS, 50 * MS, 10_000);
        Object[] requests = new Object[Tickets.MAX_SCAN * 2];
        for (int i = 0; i < requests.length; i++) {
            requests[i] = new Object();
            t.opened(3, i * 1_000L, requests[i]);
        }
        // The first plan's end, long after: more than MAX_SCAN newer plans, out of the window.
        assertTrue(t.take(3, 900 * MS, requests[0]));
        assertEquals(requests.length - 1, t.openFor(3));
    }

    @Test
    void the_per_node_bound_pushes_out_the_oldest_open_ticket() {
        Tickets t = new Tickets(1_000 * MS, 50 * MS, 2);
        assertFalse(t.opened(1, 0, null));
        assertFalse(t.opened(1, 1, null));
        assertTrue(t.opened(1, 2, null));
        assertEquals(2, t.openFor(1));
        assertEquals(2, t.open());
    }

    @Test
    void expiry_hands_out_at_most_the_batch_and_says_more_are_due() {
        Tickets t = new Tickets(10 * MS, 5 * MS, 100);
        for (int i = 0; i < 10; i++) {
            t.opened(i % 3, i, null);
        }
        List<Integer> gone = new ArrayList<>();
        assertTrue(t.expire(100 * MS, 4, gone::add));
        assertEquals(4, gone.size());
        assertFalse(t.expire(100 * MS, 100, gone::add));
        assertEquals(10, gone.size());
        assertEquals(0, t.open());
    }
}
