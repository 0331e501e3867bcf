package io.replicalb.cassandra.hwlb;

import java.nio.ByteBuffer;
import java.util.Map;
import java.util.function.BiFunction;
import java.util.function.Supplier;
import java.util.function.ToIntFunction;

import org.apache.cassandra.cql3.BatchQueryOptions;
import org.apache.cassandra.cql3.CQLStatement;
import org.apache.cassandra.cql3.QueryHandler;
import org.apache.cassandra.cql3.QueryOptions;
import org.apache.cassandra.cql3.QueryProcessor;
import org.apache.cassandra.cql3.statements.BatchStatement;
import org.apache.cassandra.db.SinglePartitionReadCommand;
import org.apache.cassandra.service.ClientState;
import org.apache.cassandra.service.QueryState;
import org.apache.cassandra.transport.Dispatcher;
import org.apache.cassandra.transport.messages.ResultMessage;
import org.apache.cassandra.utils.MD5Digest;

/**
 * Cassandra's query handler with two additions. Before a statement runs it records the table the
 * statement reads in {@link ReadTable}, and clears it afterwards (also when the statement
 * throws), so the snitch plans each read with its own table's hit rates. And it arms
 * {@link WarmupReads} for the statement: when {@code unified} left a cold replica out of the
 * statement's single-partition read and asked for a background read of it, the handler sends
 * that read once the statement succeeded (a failure to send is counted, never thrown). Installed
 * with the JVM property {@code -Dcassandra.custom_query_handler_class=io.replicalb.cassandra.hwlb.HwlbQueryHandler};
 * without it the plug-in plans every read with node-wide rates and a cold replica takes its HWLB
 * share. Everything else is {@link QueryProcessor#instance}'s. Batches only write: they run with
 * no table recorded, unarmed.
 */
public final class HwlbQueryHandler implements QueryHandler
{
    private final QueryHandler delegate;
    private final ToIntFunction<CQLStatement> tableOf;
    private final BiFunction<CQLStatement, QueryOptions, SinglePartitionReadCommand> commandOf;

    /** The handler Cassandra constructs: over {@link QueryProcessor#instance}. */
    public HwlbQueryHandler()
    {
        this(QueryProcessor.instance, ReadTable::keyOf, CassandraWarmup::commandOf);
    }

    /** A handler over {@code delegate}, naming a statement's table with {@code tableOf} (tests). */
    HwlbQueryHandler(QueryHandler delegate, ToIntFunction<CQLStatement> tableOf)
    {
        this(delegate, tableOf, CassandraWarmup::commandOf);
    }

    /**
     * A handler over {@code delegate}, naming a statement's table with {@code tableOf} and its
     * single-partition read with {@code commandOf} (tests).
     */
    HwlbQueryHandler(QueryHandler delegate, ToIntFunction<CQLStatement> tableOf,
                     BiFunction<CQLStatement, QueryOptions, SinglePartitionReadCommand> commandOf)
    {
        this.delegate = delegate;
        this.tableOf = tableOf;
        this.commandOf = commandOf;
    }

    /** Whether Cassandra runs this handler (the operator set the property), so reads name their table. */
    public static boolean installed()
    {
        return ClientState.getCQLQueryHandler() instanceof HwlbQueryHandler;
    }

    /**
     * Runs {@code run} with {@code statement}'s table recorded and warm-up reads armed, both
     * cleared afterwards even when it throws; on success, sends the background read asked for.
     */
    private <T> T withTable(CQLStatement statement, QueryOptions options, Supplier<T> run)
    {
        ReadTable.set(tableOf.applyAsInt(statement));
        WarmupReads.arm();
        try
        {
            T result = run.get();
            warmUp(statement, options);
            return result;
        }
        finally
        {
            ReadTable.clear();
            WarmupReads.disarm();
        }
    }

    /** Sends the background read the statement's read asked for, if any; never throws. */
    private void warmUp(CQLStatement statement, QueryOptions options)
    {
        int target = WarmupReads.take();
        if (target < 0)
            return;
        WarmupReads warmup = WarmupReads.installed();
        if (warmup == null)
            return;
        try
        {
            SinglePartitionReadCommand command = commandOf.apply(statement, options);
            if (command != null)
                warmup.send(command, target);
        }
        catch (RuntimeException | AssertionError e)
        {
            warmup.failed(e);
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
        return withTable(statement, options, () -> delegate.process(statement, state, options, customPayload, requestTime));
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
        return withTable(statement, options, () -> delegate.processPrepared(statement, state, options, customPayload, requestTime));
    }

    @Override
    public ResultMessage processBatch(BatchStatement statement, QueryState state, BatchQueryOptions options, Map<String, ByteBuffer> customPayload,
                                      Dispatcher.RequestTime requestTime)
    {
        ReadTable.clear();
        WarmupReads.disarm();
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
