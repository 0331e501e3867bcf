package io.replicalb.cassandra.hwlb;

import java.nio.ByteBuffer;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.cassandra.cql3.BatchQueryOptions;
import org.apache.cassandra.cql3.CQLStatement;
import org.apache.cassandra.cql3.QueryHandler;
import org.apache.cassandra.cql3.QueryOptions;
import org.apache.cassandra.cql3.statements.BatchStatement;
import org.apache.cassandra.service.ClientState;
import org.apache.cassandra.service.QueryState;
import org.apache.cassandra.transport.Dispatcher;
import org.apache.cassandra.transport.messages.ResultMessage;
import org.apache.cassandra.utils.MD5Digest;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** The query handler names each statement's table for the read path, and always clears it. */
class QueryHandlerTest
{
    /** A delegate that records the table the snitch would see while the statement runs, and may throw. */
    private static final class Recording implements QueryHandler
    {
        final AtomicInteger seen = new AtomicInteger(-1);
        RuntimeException toThrow;

        private ResultMessage run()
        {
            seen.set(ReadTable.current());
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
