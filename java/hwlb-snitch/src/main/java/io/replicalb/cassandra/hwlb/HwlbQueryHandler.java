package io.replicalb.cassandra.hwlb;

import java.nio.ByteBuffer;
import java.util.Map;
import java.util.function.Supplier;
import java.util.function.ToIntFunction;

import org.apache.cassandra.cql3.BatchQueryOptions;
import org.apache.cassandra.cql3.CQLStatement;
import org.apache.cassandra.cql3.QueryHandler;
import org.apache.cassandra.cql3.QueryOptions;
import org.apache.cassandra.cql3.QueryProcessor;
import org.apache.cassandra.cql3.statements.BatchStatement;
import org.apache.cassandra.service.ClientState;
import org.apache.cassandra.service.QueryState;
import org.apache.cassandra.transport.Dispatcher;
import org.apache.cassandra.transport.messages.ResultMessage;
import org.apache.cassandra.utils.MD5Digest;

/**
 * Cassandra's query handler with one addition: before a statement runs it records the table the
 * statement reads in {@link ReadTable}, and clears it afterwards (also when the statement
 * throws), so the snitch plans each read with its own table's hit rates. Installed with the JVM
 * property {@code -Dcassandra.custom_query_handler_class=io.replicalb.cassandra.hwlb.HwlbQueryHandler};
 * without it the plug-in plans every read with node-wide rates. Everything else is
 * {@link QueryProcessor#instance}'s. Batches only write: they run with no table recorded.
 */
public final class HwlbQueryHandler implements QueryHandler
{
    private final QueryHandler delegate;
    private final ToIntFunction<CQLStatement> tableOf;

    /** The handler Cassandra constructs: over {@link QueryProcessor#instance}. */
    public HwlbQueryHandler()
    {
        this(QueryProcessor.instance, ReadTable::keyOf);
    }

    /** A handler over {@code delegate}, naming a statement's table with {@code tableOf} (tests). */
    HwlbQueryHandler(QueryHandler delegate, ToIntFunction<CQLStatement> tableOf)
    {
        this.delegate = delegate;
        this.tableOf = tableOf;
    }

    /** Whether Cassandra runs this handler (the operator set the property), so reads name their table. */
    public static boolean installed()
    {
        return ClientState.getCQLQueryHandler() instanceof HwlbQueryHandler;
    }

    /** Runs {@code run} with {@code statement}'s table recorded, cleared afterwards even when it throws. */
    private <T> T withTable(CQLStatement statement, Supplier<T> run)
    {
        ReadTable.set(tableOf.applyAsInt(statement));
        try
        {
            return run.get();
        }
        finally
        {
            ReadTable.clear();
        }
    }

    @Override
    public CQLStatement parse(String queryString, QueryState queryState, QueryOptions options)
    {
        return delegate.parse(queryString, queryState, options);
    }

    @Override
    public ResultMessage process(CQLStatement statement, QueryState state, QueryOptions options, Map<String, ByteBuffer> customPayload,
                                 Dispatcher.RequestTime requestTime)
    {
        return withTable(statement, () -> delegate.process(statement, state, options, customPayload, requestTime));
    }

    @Override
    public ResultMessage.Prepared prepare(String query, ClientState clientState, Map<String, ByteBuffer> customPayload)
    {
        return delegate.prepare(query, clientState, customPayload);
    }

    @Override
    public QueryHandler.Prepared getPrepared(MD5Digest id)
    {
        return delegate.getPrepared(id);
    }

    @Override
    public ResultMessage processPrepared(CQLStatement statement, QueryState state, QueryOptions options, Map<String, ByteBuffer> customPayload,
                                         Dispatcher.RequestTime requestTime)
    {
        return withTable(statement, () -> delegate.processPrepared(statement, state, options, customPayload, requestTime));
    }

    @Override
    public ResultMessage processBatch(BatchStatement statement, QueryState state, BatchQueryOptions options, Map<String, ByteBuffer> customPayload,
                                      Dispatcher.RequestTime requestTime)
    {
        ReadTable.clear();
        try
        {
            return delegate.processBatch(statement, state, options, customPayload, requestTime);
        }
        finally
        {
            ReadTable.clear();
        }
    }
}
