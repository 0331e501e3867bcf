package io.replicalb.driver;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.datastax.oss.driver.api.core.ConsistencyLevel;
import com.datastax.oss.driver.api.core.DriverTimeoutException;
import com.datastax.oss.driver.api.core.cql.AsyncResultSet;
import com.datastax.oss.driver.api.core.cql.Row;
import com.datastax.oss.driver.api.core.cql.Statement;
import com.datastax.oss.driver.api.core.metadata.Node;
import com.datastax.oss.driver.api.core.servererrors.InvalidQueryException;
import com.datastax.oss.driver.api.core.session.Request;
import com.datastax.oss.driver.api.core.session.Session;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.function.Function;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class HitRatePollerTest {
    private FakeCluster cluster;

    @AfterEach
    void close() {
        cluster.close();
    }

    @SuppressWarnings("unchecked")
    private static <T> T proxy(Class<T> type, Function<Object[], Object> onCall, String method) {
        return (T) Proxy.newProxyInstance(type.getClassLoader(), new Class<?>[] {type}, (self, m, args) -> {
            if (m.getName().equals(method)) {
                return onCall.apply(args);
            }
            throw new UnsupportedOperationException(m.getName());
        });
    }

    /** A row whose hit_rate is {@code rate} (null: no value). */
    private static AsyncResultSet answer(Double rate) {
        Row row = (Row) Proxy.newProxyInstance(Row.class.getClassLoader(), new Class<?>[] {Row.class}, (self, m, args) -> switch (m.getName()) {
            case "isNull" -> rate == null;
            case "getDouble" -> rate == null ? 0.0 : rate;
            default -> throw new UnsupportedOperationException(m.getName());
        });
        return proxy(AsyncResultSet.class, a -> row, "one");
    }

    @Test
    void every_live_local_node_is_read_and_its_rate_told_the_policy() {
        cluster = FakeCluster.oneDc(4, 1, 3, b -> b.withString(ReplicaLbOption.POLICY, "test").withInt(ReplicaLbOption.SHARDS, 1));
        TestLbPolicy p = cluster.init(new TestLbPolicy(cluster.context(), new TestPolicy()));
        Node good = cluster.nodes.get(0);
        Node noPlugin = cluster.nodes.get(1);
        Node slow = cluster.nodes.get(2);
        Node outOfRange = cluster.nodes.get(3);
        List<Request> sent = new ArrayList<>();
        Map<Node, Object> answers = Map.of(
                good, answer(0.75),
                noPlugin, new InvalidQueryException(noPlugin, "Keyspace replica_lb_hwlb does not exist"),
                slow, new DriverTimeoutException("Query timed out after PT1S"),
                outOfRange, answer(2.0));
        Session session = proxy(Session.class, args -> {
            Request r = (Request) args[0];
            sent.add(r);
            Object a = answers.get(r.getNode());
            return a instanceof Throwable t ? CompletableFuture.failedFuture(t) : CompletableFuture.completedFuture(a);
        }, "execute");
        HitRatePoller poller = p.poller();
        assertNotNull(poller, "polling is on by default");
        poller.pollOnce(session);
        assertEquals(4, sent.size());
        for (Request r : sent) {
            assertTrue(HitRatePoller.isPoll(r), "pinned to its node, the poller's query: the tracker ignores it");
            assertEquals(ConsistencyLevel.ONE, ((Statement<?>) r).getConsistencyLevel());
        }
        assertTrue(p.test.log.contains("rate " + p.nodeId(good) + " 0.75"), p.test.log.toString());
        assertEquals(1, p.test.log.stream().filter(l -> l.startsWith("rate ")).count());
        Counters c = p.counters();
        assertEquals(1, c.hitRatePolls());
        assertEquals(1, c.hitRateMissing());
        assertEquals(2, c.hitRateFailed());
        // The node without the table is left alone for a while; the others are read again.
        sent.clear();
        poller.pollOnce(session);
        assertEquals(3, sent.size());
        assertTrue(sent.stream().noneMatch(r -> r.getNode() == noPlugin));
        assertEquals(1, p.counters().hitRateMissing());
        assertEquals(0, p.counters().picks(), "polls are not requests of the policy");
    }

    @Test
    void an_interval_of_zero_turns_polling_off() {
        cluster = FakeCluster.oneDc(3, 1, 3, b -> b
                .withString(ReplicaLbOption.POLICY, "test")
                .withInt(ReplicaLbOption.SHARDS, 1)
                .withString(ReplicaLbOption.HIT_RATE_POLL_INTERVAL, "0"));
        TestLbPolicy p = cluster.init(new TestLbPolicy(cluster.context(), new TestPolicy()));
        assertNull(p.poller());
        p.onSessionReady(cluster.session);
    }
}
