package io.replicalb.cassandra.hwlb;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.cassandra.cql3.BatchQueryOptions;
import org.apache.cassandra.cql3.CQLStatement;
import org.apache.cassandra.cql3.QueryHandler;
import org.apache.cassandra.cql3.QueryOptions;
import org.apache.cassandra.cql3.statements.BatchStatement;
import org.apache.cassandra.db.SinglePartitionReadCommand;
import org.apache.cassandra.service.ClientState;
import org.apache.cassandra.service.QueryState;
import org.apache.cassandra.transport.Dispatcher;
import org.apache.cassandra.transport.messages.ResultMessage;
import org.apache.cassandra.utils.MD5Digest;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * The query handler names each statement's table for the read path, and always clears it; it
 * sends the warm-up read a statement's single read asked for, only after it succeeded.
 */
class QueryHandlerTest
{
    /**
     * A delegate that records the table the snitch would see while the statement runs, orders
     * reads as the router would (each asking to warm {@code warm}), and may throw.
     */
    private static final class Recording implements QueryHandler
    {
        final AtomicInteger seen = new AtomicInteger(-1);
        RuntimeException toThrow;
        int reads;
        int warm = -1;

        private ResultMessage run()
        {
            seen.set(ReadTable.current());
            for (int i = 0; i < reads; i++)
                WarmupReads.current().offer(warm);
            if (toThrow != null)
                throw toThrow;
            return new ResultMessage.Void();
        }

        @Override
        public CQLStatement parse(String queryString, QueryState queryState, QueryOptions options)
        {
            return null;
        }

        @Override
        public ResultMessage process(CQLStatement statement, QueryState state, QueryOptions options, Map<String, ByteBuffer> customPayload,
                                     Dispatcher.RequestTime requestTime)
        {
            return run();
        }

        @Override
        public ResultMessage.Prepared prepare(String query, ClientState clientState, Map<String, ByteBuffer> customPayload)
        {
            return null;
        }

        @Override
        public QueryHandler.Prepared getPrepared(MD5Digest id)
        {
            return null;
        }

        @Override
        public ResultMessage processPrepared(CQLStatement statement, QueryState state, QueryOptions options, Map<String, ByteBuffer> customPayload,
                                             Dispatcher.RequestTime requestTime)
        {
            return run();
        }

        @Override
        public ResultMessage processBatch(BatchStatement statement, QueryState state, BatchQueryOptions options,
                                          Map<String, ByteBuffer> customPayload, Dispatcher.RequestTime requestTime)
        {
            return run();
        }
    }

    private static final CQLStatement READS_A = dummy();

    private static final int A = 0x1a2b3c4d;

    @Test
    void eachStatementRunsWithItsTableAndLeavesNoneBehind()
    {
        Recording d = new Recording();
        HwlbQueryHandler h = new HwlbQueryHandler(d, st -> st == READS_A ? A : ReadTable.NONE);
        ReadTable.clear();
        h.process(READS_A, null, null, Map.of(), null);
        assertEquals(A, d.seen.get(), "a simple statement");
        assertEquals(ReadTable.NONE, ReadTable.current(), "cleared after it");
        h.processPrepared(READS_A, null, null, Map.of(), null);
        assertEquals(A, d.seen.get(), "a prepared statement");
        assertEquals(ReadTable.NONE, ReadTable.current());
        // A statement of no table (DDL, USE...) runs with none, even after a table was left set.
        ReadTable.set(A);
        h.process(dummy(), null, null, Map.of(), null);
        assertEquals(ReadTable.NONE, d.seen.get());
        // A batch runs with none, even if a table was left set on the thread.
        ReadTable.set(A);
        h.processBatch(null, null, null, Map.of(), null);
        assertEquals(ReadTable.NONE, d.seen.get(), "a batch");
        assertEquals(ReadTable.NONE, ReadTable.current());
    }

    /** A transport that records what it was asked to read and answers at once. */
    private static final class Sent implements WarmupReads.Transport
    {
        final List<Integer> to = new ArrayList<>();
        final List<SinglePartitionReadCommand> commands = new ArrayList<>();

        @Override
        public void read(SinglePartitionReadCommand command, int id, Runnable done)
        {
            to.add(id);
            commands.add(command);
            done.run();
        }
    }

    /**
     * A command object the fake transport only compares (building a real one needs a schema):
     * allocated without a constructor.
     */
    private static SinglePartitionReadCommand opaqueCommand() throws Exception
    {
        java.lang.reflect.Field f = sun.misc.Unsafe.class.getDeclaredField("theUnsafe");
        f.setAccessible(true);
        return (SinglePartitionReadCommand) ((sun.misc.Unsafe) f.get(null)).allocateInstance(SinglePartitionReadCommand.class);
    }

    @Test
    void aBackgroundReadGoesOutOnlyForASucceededSinglePartitionReadThatAskedForIt() throws Exception
    {
        SinglePartitionReadCommand command = opaqueCommand();
        WarmupReads previous = WarmupReads.installed();
        WarmupReads w = new WarmupReads(WarmupConfig.DEFAULT, 0L);
        Sent sent = new Sent();
        WarmupReads.install(w, sent);
        try
        {
            Recording d = new Recording();
            HwlbQueryHandler h = new HwlbQueryHandler(d, st -> A, (st, o) -> command);
            // One read asking to warm node 7: sent once the statement succeeded.
            d.reads = 1;
            d.warm = 7;
            h.process(READS_A, null, null, Map.of(), null);
            assertEquals(List.of(7), sent.to);
            assertSame(command, sent.commands.get(0));
            h.processPrepared(READS_A, null, null, Map.of(), null);
            assertEquals(List.of(7, 7), sent.to, "a prepared statement too");
            // A read that asked for nothing, two reads (which key went where is not known), a
            // statement that failed, a batch: nothing sent.
            d.warm = -1;
            h.process(READS_A, null, null, Map.of(), null);
            d.warm = 7;
            d.reads = 2;
            h.process(READS_A, null, null, Map.of(), null);
            d.reads = 1;
            d.toThrow = new IllegalStateException("read failed");
            assertThrows(IllegalStateException.class, () -> h.process(READS_A, null, null, Map.of(), null));
            d.toThrow = null;
            h.processBatch(null, null, null, Map.of(), null);
            assertEquals(2, sent.to.size(), "only the two asked for: " + sent.to);
            assertEquals(2, w.sent());
            // Not armed outside a statement: an order on this thread asks for nothing.
            assertFalse(WarmupReads.current().armed());
            // A command that cannot be built is counted, never thrown into the request.
            HwlbQueryHandler broken = new HwlbQueryHandler(d, st -> A, (st, o) -> {
                throw new IllegalArgumentException("no such partition");
            });
            broken.process(READS_A, null, null, Map.of(), null);
            assertEquals(1, w.failures());
        }
        finally
        {
            WarmupReads.setInstalled(previous);
        }
    }

    @Test
    void backgroundReadsStopAtTheInFlightLimitAndResumeAsTheyEnd() throws Exception
    {
        SinglePartitionReadCommand command = opaqueCommand();
        WarmupReads w = new WarmupReads(new WarmupConfig(1.0, 2, 900.0, 0.0), 0L);
        List<Runnable> pending = new ArrayList<>();
        w.connect((c, id, done) -> pending.add(done));
        assertTrue(w.send(command, 3));
        assertTrue(w.send(command, 3));
        assertFalse(w.send(command, 3), "two unanswered at node 3");
        assertTrue(w.send(command, 4), "the limit is per node");
        pending.get(0).run();
        assertTrue(w.send(command, 3), "one answered: room again");
        assertEquals(4, w.sent());
        assertEquals(1, w.skippedBusy());
        assertEquals(2, w.inFlight(3));
    }

    @Test
    void aNodeWarmsForTheWindowAfterItCameUpOrThePluginStarted()
    {
        long s = 1_000_000_000L;
        WarmupReads w = new WarmupReads(new WarmupConfig(1.0, 4, 60.0, 0.0), 5 * s);
        assertTrue(w.warming(1, 6 * s), "every node just after the start");
        assertFalse(w.warming(1, 65 * s), "the window is over");
        w.cameUp(1, 100 * s);
        assertTrue(w.warming(1, 159 * s));
        assertFalse(w.warming(1, 160 * s));
        assertFalse(w.warming(2, 100 * s), "another node stays warm");
    }

    private static CQLStatement dummy()
    {
        return new CQLStatement()
        {
            @Override
            public void authorize(ClientState state)
            {
            }

            @Override
            public void validate(ClientState state)
            {
            }

            @Override
            public ResultMessage execute(QueryState state, QueryOptions options, Dispatcher.RequestTime requestTime)
            {
                return null;
            }

            @Override
            public ResultMessage executeLocally(QueryState state, QueryOptions options)
            {
                return null;
            }

            @Override
            public org.apache.cassandra.audit.AuditLogContext getAuditLogContext()
            {
                return null;
            }
        };
    }

    @Test
    void theTableIsClearedWhenTheStatementThrows()
    {
        Recording d = new Recording();
        d.toThrow = new IllegalStateException("read timed out");
        HwlbQueryHandler h = new HwlbQueryHandler(d, st -> A);
        ReadTable.clear();
        RuntimeException e = assertThrows(IllegalStateException.class, () -> h.process(READS_A, null, null, Map.of(), null));
        assertSame(d.toThrow, e);
        assertEquals(A, d.seen.get());
        assertEquals(ReadTable.NONE, ReadTable.current(), "cleared after process threw");
        assertThrows(IllegalStateException.class, () -> h.processPrepared(READS_A, null, null, Map.of(), null));
        assertEquals(ReadTable.NONE, ReadTable.current(), "cleared after processPrepared threw");
        assertThrows(IllegalStateException.class, () -> h.processBatch(null, null, null, Map.of(), null));
        assertEquals(ReadTable.NONE, ReadTable.current(), "cleared after processBatch threw");
    }

    @Test
    void theTableIsPerThread() throws InterruptedException
    {
        ReadTable.set(A);
        AtomicInteger other = new AtomicInteger(-1);
        Thread t = new Thread(() -> other.set(ReadTable.current()));
        t.start();
        t.join();
        assertEquals(ReadTable.NONE, other.get(), "another thread sees no table");
        assertEquals(A, ReadTable.current());
        ReadTable.clear();
    }
}
