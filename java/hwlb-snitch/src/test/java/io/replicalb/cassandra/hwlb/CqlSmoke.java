package io.replicalb.cassandra.hwlb;

import java.util.Collections;
import java.util.List;
import java.net.InetSocketAddress;

import com.datastax.driver.core.Cluster;
import com.datastax.driver.core.ColumnDefinitions;
import com.datastax.driver.core.ConsistencyLevel;
import com.datastax.driver.core.PreparedStatement;
import com.datastax.driver.core.QueryTrace;
import com.datastax.driver.core.ResultSet;
import com.datastax.driver.core.Row;
import com.datastax.driver.core.Session;
import com.datastax.driver.core.SimpleStatement;
import com.datastax.driver.core.Statement;
import com.datastax.driver.core.policies.RoundRobinPolicy;
import com.datastax.driver.core.policies.WhiteListPolicy;

/**
 * A small CQL client for the smoke test of a real node (not part of the plug-in): every request
 * is coordinated by the one node given (a white-list policy), so the node's snitch orders it.
 * Uses the DataStax 3.x driver that Cassandra's own classpath carries.
 *
 * <pre>
 * CqlSmoke HOST query "CQL" ...          print every row of each statement
 * CqlSmoke HOST exec "CQL" ...           run statements, print errors
 * CqlSmoke HOST load KEYS                create replica_lb_smoke.kv (RF 3, row cache) and write KEYS rows
 * CqlSmoke HOST read KEYS READS CL       read READS random keys of the first KEYS at CL
 * CqlSmoke HOST trace CL KEY             one traced read of KEY at CL: who served it
 * </pre>
 */
public final class CqlSmoke
{
    private CqlSmoke()
    {
    }

    /** Runs one command against HOST:9042. */
    public static void main(String[] args) throws Exception
    {
        String host = args[0];
        String cmd = args[1];
        InetSocketAddress addr = new InetSocketAddress(host, 9042);
        try (Cluster cluster = Cluster.builder()
                                      .addContactPointsWithPorts(Collections.singletonList(addr))
                                      .withLoadBalancingPolicy(new WhiteListPolicy(new RoundRobinPolicy(), List.of(addr)))
                                      .withoutJMXReporting()
                                      .withoutMetrics()
                                      .build();
             Session session = cluster.connect())
        {
            switch (cmd)
            {
                case "query":
                    for (int i = 2; i < args.length; i++)
                        print(session.execute(args[i]));
                    break;
                case "exec":
                    for (int i = 2; i < args.length; i++)
                    {
                        try
                        {
                            session.execute(args[i]);
                            System.out.println("OK: " + args[i]);
                        }
                        catch (RuntimeException e)
                        {
                            System.out.println("ERROR " + e.getClass().getSimpleName() + ": " + e.getMessage());
                        }
                    }
                    break;
                case "load":
                {
                    int keys = Integer.parseInt(args[2]);
                    session.execute("CREATE KEYSPACE IF NOT EXISTS replica_lb_smoke WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}");
                    session.execute("CREATE TABLE IF NOT EXISTS replica_lb_smoke.kv (k int PRIMARY KEY, v text) WITH caching = {'keys': 'ALL', 'rows_per_partition': 'ALL'}");
                    PreparedStatement ps = session.prepare("INSERT INTO replica_lb_smoke.kv (k, v) VALUES (?, ?)");
                    String value = "x".repeat(200);
                    for (int k = 0; k < keys; k++)
                        session.execute(ps.bind(k, value).setConsistencyLevel(ConsistencyLevel.ALL));
                    System.out.println("loaded " + keys + " keys");
                    break;
                }
                case "read":
                {
                    int keys = Integer.parseInt(args[2]);
                    int reads = Integer.parseInt(args[3]);
                    ConsistencyLevel cl = ConsistencyLevel.valueOf(args[4]);
                    PreparedStatement ps = session.prepare("SELECT v FROM replica_lb_smoke.kv WHERE k = ?");
                    java.util.SplittableRandom rnd = new java.util.SplittableRandom(1);
                    long t0 = System.nanoTime();
                    int errors = 0;
                    for (int i = 0; i < reads; i++)
                    {
                        try
                        {
                            session.execute(ps.bind(rnd.nextInt(keys)).setConsistencyLevel(cl));
                        }
                        catch (RuntimeException e)
                        {
                            errors++;
                        }
                    }
                    System.out.printf("%d reads at %s in %.1f s, %d errors%n", reads, cl, (System.nanoTime() - t0) / 1e9, errors);
                    break;
                }
                case "trace":
                {
                    ConsistencyLevel cl = ConsistencyLevel.valueOf(args[2]);
                    Statement st = new SimpleStatement("SELECT v FROM replica_lb_smoke.kv WHERE k = " + Integer.parseInt(args[3]))
                                   .setConsistencyLevel(cl).enableTracing();
                    ResultSet rs = session.execute(st);
                    QueryTrace trace = rs.getExecutionInfo().getQueryTrace();
                    System.out.println("coordinator " + trace.getCoordinator());
                    for (QueryTrace.Event e : trace.getEvents())
                        System.out.println("  " + e.getSource() + "  " + e.getDescription());
                    break;
                }
                default:
                    throw new IllegalArgumentException("unknown command " + cmd);
            }
        }
    }

    private static void print(ResultSet rs)
    {
        ColumnDefinitions defs = rs.getColumnDefinitions();
        for (Row row : rs)
        {
            StringBuilder sb = new StringBuilder();
            for (int i = 0; i < defs.size(); i++)
            {
                if (i > 0)
                    sb.append(", ");
                sb.append(defs.getName(i)).append('=').append(row.getObject(i));
            }
            System.out.println(sb);
        }
    }
}
