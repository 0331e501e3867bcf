package io.replicalb.cassandra.hwlb;

import java.util.concurrent.atomic.AtomicBoolean;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.apache.cassandra.concurrent.Stage;
import org.apache.cassandra.cql3.CQLStatement;
import org.apache.cassandra.cql3.QueryOptions;
import org.apache.cassandra.cql3.statements.SelectStatement;
import org.apache.cassandra.db.ReadCommand;
import org.apache.cassandra.db.ReadExecutionController;
import org.apache.cassandra.db.ReadQuery;
import org.apache.cassandra.db.ReadResponse;
import org.apache.cassandra.db.SinglePartitionReadCommand;
import org.apache.cassandra.db.partitions.UnfilteredPartitionIterator;
import org.apache.cassandra.db.rows.UnfilteredRowIterator;
import org.apache.cassandra.exceptions.RequestFailureReason;
import org.apache.cassandra.locator.InetAddressAndPort;
import org.apache.cassandra.net.Message;
import org.apache.cassandra.net.MessagingService;
import org.apache.cassandra.net.RequestCallback;
import org.apache.cassandra.transport.Dispatcher;
import org.apache.cassandra.utils.FBUtilities;

/**
 * {@link WarmupReads.Transport} over Cassandra: a peer reads the key as for any read (a
 * {@code READ_REQ} with a callback that only ends the read: the answer is dropped, its latency
 * and an expiry feed the latency subscribers as a read's do); this node's own replica reads it
 * on the read stage, as {@code LocalReadRunnable} does. Either way the replica's row cache is
 * filled as by a request.
 */
public final class CassandraWarmup implements WarmupReads.Transport
{
    private static final Logger logger = LoggerFactory.getLogger(CassandraWarmup.class);

    private final PeerDirectory directory;
    private final InetAddressAndPort local;

    /** Reads for coordinator {@code local}, finding nodes by id in {@code directory}. */
    public CassandraWarmup(PeerDirectory directory, InetAddressAndPort local)
    {
        this.directory = directory;
        this.local = local;
    }

    /**
     * The single-partition read {@code statement} runs with {@code options}, or null when it
     * reads no partition or several (a range, an IN).
     */
    public static SinglePartitionReadCommand commandOf(CQLStatement statement, QueryOptions options)
    {
        if (!(statement instanceof SelectStatement))
            return null;
        ReadQuery query = ((SelectStatement) statement).getQuery(options, FBUtilities.nowInSeconds());
        if (query instanceof SinglePartitionReadCommand)
            return (SinglePartitionReadCommand) query;
        if (query instanceof SinglePartitionReadCommand.Group)
        {
            SinglePartitionReadCommand.Group group = (SinglePartitionReadCommand.Group) query;
            return group.queries.size() == 1 ? group.queries.get(0) : null;
        }
        return null;
    }

    @Override
    public void read(SinglePartitionReadCommand command, int id, Runnable done)
    {
        AtomicBoolean ended = new AtomicBoolean();
        Runnable once = () -> {
            if (ended.compareAndSet(false, true))
                done.run();
        };
        try
        {
            InetAddressAndPort to = directory.endpoint(id);
            if (to == null)
            {
                once.run();
                return;
            }
            if (to.equals(local))
            {
                Stage.READ.execute(() -> readLocally(command, once));
                return;
            }
            Message<ReadCommand> message = command.createMessage(false, Dispatcher.RequestTime.forImmediateExecution());
            MessagingService.instance().sendWithCallback(message, to, new RequestCallback<ReadResponse>()
            {
                @Override
                public void onResponse(Message<ReadResponse> msg)
                {
                    once.run();
                }

                @Override
                public void onFailure(InetAddressAndPort from, RequestFailureReason reason)
                {
                    once.run();
                }

                @Override
                public boolean invokeOnFailure()
                {
                    return true;
                }

                @Override
                public boolean trackLatencyForSnitch()
                {
                    return true;
                }
            });
        }
        catch (RuntimeException e)
        {
            once.run();
            throw e;
        }
    }

    private static void readLocally(SinglePartitionReadCommand command, Runnable done)
    {
        try (ReadExecutionController controller = command.executionController();
             UnfilteredPartitionIterator partitions = command.executeLocally(controller))
        {
            while (partitions.hasNext())
            {
                try (UnfilteredRowIterator rows = partitions.next())
                {
                    while (rows.hasNext())
                        rows.next();
                }
            }
        }
        catch (RuntimeException e)
        {
            logger.debug("HWLB: a local warm-up read failed", e);
        }
        finally
        {
            done.run();
        }
    }
}
