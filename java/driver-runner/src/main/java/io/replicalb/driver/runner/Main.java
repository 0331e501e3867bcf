package io.replicalb.driver.runner;

import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.config.DefaultDriverOption;
import com.datastax.oss.driver.api.core.config.DriverConfigLoader;
import com.datastax.oss.driver.api.core.config.ProgrammaticDriverConfigLoaderBuilder;
import com.datastax.oss.driver.api.core.cql.AsyncResultSet;
import com.datastax.oss.driver.api.core.cql.PreparedStatement;
import com.datastax.oss.driver.api.core.cql.Row;
import com.datastax.oss.driver.api.core.metadata.Node;
import com.datastax.oss.driver.api.core.session.Session;
import java.io.BufferedReader;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The program the load generator starts: reads the parent's {@code hello}, connects the Java
 * driver with the policy it names, prepares the load generator's statements (the same
 * keyspace, table and queries as the Rust driver's transport), answers {@code ready}, then
 * executes every request line asynchronously and writes one reply line per request
 * ({@link Protocol}). It keeps no schedule of its own: the parent's open loop decides when each
 * request is sent and measures its latency. End of input (the parent gone) stops it.
 */
public final class Main {
    private Main() {}

    /** Runs on stdin and stdout; the exit status is 0 after {@code end} or end of input. */
    public static void main(String[] args) {
        // The driver's warnings only (slf4j-simple writes them to stderr, which the parent keeps).
        if (System.getProperty("org.slf4j.simpleLogger.defaultLogLevel") == null) {
            System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
        }
        System.exit(run(System.in, System.out));
    }

    /** Serves one parent on {@code input} and {@code output}; returns the exit status. */
    static int run(InputStream input, OutputStream output) {
        BufferedReader in = new BufferedReader(new InputStreamReader(input, StandardCharsets.UTF_8), 1 << 16);
        try (Output out = new Output(output)) {
            Settings settings;
            try {
                String first = in.readLine();
                if (first == null) {
                    return 0;
                }
                if (!(Protocol.parse(first) instanceof Protocol.Hello hello)) {
                    throw new Protocol.ProtocolException("the first line must be hello, not '" + Protocol.oneLine(first) + "'");
                }
                settings = Settings.of(hello);
            } catch (Protocol.ProtocolException e) {
                out.line(Protocol.fatal(e.getMessage()));
                return 2;
            }
            try {
                return serve(settings, in, out);
            } catch (Protocol.ProtocolException e) {
                out.line(Protocol.fatal(e.getMessage()));
                return 2;
            } catch (Exception e) {
                out.line(Protocol.fatal(e.getClass().getSimpleName() + ": " + e.getMessage()));
                return 1;
            }
        } catch (Exception e) {
            return 1;
        }
    }

    private static int serve(Settings s, BufferedReader in, Output out) throws Exception {
        String dc = s.localDc() != null ? s.localDc() : localDatacenter(s);
        try (CqlSession session = connect(s, dc)) {
            Requests requests = new Requests(session, s, out);
            Map<String, String> info = new LinkedHashMap<>();
            info.put("driver", Session.OSS_DRIVER_COORDINATES.getVersion().toString());
            info.put("policy", s.policy().policyName());
            info.put("local_dc", dc);
            out.line(Protocol.ready(info));
            String line;
            while ((line = in.readLine()) != null) {
                Protocol.Request r = Protocol.parse(line);
                if (r instanceof Protocol.End) {
                    requests.drain(Duration.ofMillis(s.timeoutMs() + 2_000));
                    out.line(Protocol.stats(s.policy().counters(session)));
                    out.line(Protocol.bye());
                    return 0;
                }
                if (r instanceof Protocol.Hello) {
                    throw new Protocol.ProtocolException("hello given twice");
                }
                requests.submit(r);
            }
            // The parent is gone: nothing to answer to.
            return 0;
        }
    }

    /** The driver's options every policy shares: the time-out and the consistency level. */
    private static ProgrammaticDriverConfigLoaderBuilder config(Settings s) {
        return DriverConfigLoader.programmaticBuilder()
                .withDuration(DefaultDriverOption.REQUEST_TIMEOUT, Duration.ofMillis(s.timeoutMs()))
                .withString(DefaultDriverOption.REQUEST_CONSISTENCY, s.consistency());
    }

    /** The session of the run, with the policy of {@code s} in datacenter {@code dc}. */
    private static CqlSession connect(Settings s, String dc) {
        ProgrammaticDriverConfigLoaderBuilder config = config(s);
        s.policy().configure(config, dc);
        return CqlSession.builder().addContactPoints(s.contactPoints()).withConfigLoader(config.build()).build();
    }

    /**
     * The datacenter of the contact points, asked of the first that answers through a session
     * of the driver's DcInferringLoadBalancingPolicy (the driver's default policy needs it set
     * when contact points are given).
     */
    private static String localDatacenter(Settings s) {
        ProgrammaticDriverConfigLoaderBuilder config =
                config(s).withString(DefaultDriverOption.LOAD_BALANCING_POLICY_CLASS, "DcInferringLoadBalancingPolicy");
        try (CqlSession probe = CqlSession.builder().addContactPoints(s.contactPoints()).withConfigLoader(config.build()).build()) {
            Row row = probe.execute("SELECT data_center FROM system.local").one();
            if (row == null || row.getString("data_center") == null) {
                throw new IllegalStateException("system.local names no data_center");
            }
            return row.getString("data_center");
        }
    }

    /** The requests of a run: prepared statements, and the count of requests still out. */
    static final class Requests {
        private final CqlSession session;
        private final PreparedStatement read;
        private final PreparedStatement write;
        private final PreparedStatement readIn;
        private final Output out;
        private final AtomicLong inFlight = new AtomicLong();
        private final Object idle = new Object();

        Requests(CqlSession session, Settings s, Output out) {
            this.session = session;
            this.out = out;
            String table = s.keyspace() + "." + s.table();
            this.read = session.prepare("SELECT v FROM " + table + " WHERE k = ?");
            this.write = session.prepare("INSERT INTO " + table + " (k, v) VALUES (?, ?)");
            this.readIn = session.prepare("SELECT k, v FROM " + table + " WHERE k IN ?");
        }

        /** Sends request {@code r}; its reply line is written when it ends. */
        void submit(Protocol.Request r) {
            inFlight.incrementAndGet();
            long id;
            CompletionStage<AsyncResultSet> stage;
            try {
                if (r instanceof Protocol.Read q) {
                    id = q.id();
                    stage = session.executeAsync(read.bind(ByteBuffer.wrap(q.key())));
                } else if (r instanceof Protocol.Write q) {
                    id = q.id();
                    stage = session.executeAsync(write.bind(ByteBuffer.wrap(q.key()), ByteBuffer.wrap(q.value())));
                } else if (r instanceof Protocol.Multi q && q.in()) {
                    id = q.id();
                    List<ByteBuffer> keys = new ArrayList<>(q.keys().size());
                    q.keys().forEach(k -> keys.add(ByteBuffer.wrap(k)));
                    stage = session.executeAsync(readIn.bind(keys));
                } else if (r instanceof Protocol.Multi q) {
                    id = q.id();
                    stage = parallel(q.keys());
                } else {
                    throw new IllegalArgumentException("not a request: " + r);
                }
            } catch (RuntimeException e) {
                ended();
                throw e;
            }
            long requestId = id;
            stage.whenComplete((rs, failure) -> {
                out.line(Outcomes.reply(requestId, failure == null ? coordinator(rs) : null, failure));
                ended();
            });
        }

        /**
         * One prepared read per key, all at once: done when the last ends; the answer is the
         * first key's, the failure the first failure in key order (as the Rust transport).
         */
        private CompletionStage<AsyncResultSet> parallel(List<byte[]> keys) {
            List<CompletableFuture<AsyncResultSet>> all = new ArrayList<>(keys.size());
            for (byte[] k : keys) {
                all.add(session.executeAsync(read.bind(ByteBuffer.wrap(k))).toCompletableFuture());
            }
            return CompletableFuture.allOf(all.toArray(new CompletableFuture<?>[0])).handle((none, failure) -> {
                for (CompletableFuture<AsyncResultSet> f : all) {
                    if (f.isCompletedExceptionally()) {
                        return f;
                    }
                }
                return all.get(0);
            }).thenCompose(f -> f);
        }

        private void ended() {
            if (inFlight.decrementAndGet() == 0) {
                synchronized (idle) {
                    idle.notifyAll();
                }
            }
        }

        /** Waits until every request ended, at most {@code limit}. */
        void drain(Duration limit) throws InterruptedException {
            long deadline = System.nanoTime() + limit.toNanos();
            synchronized (idle) {
                while (inFlight.get() > 0) {
                    long left = deadline - System.nanoTime();
                    if (left <= 0) {
                        return;
                    }
                    idle.wait(Math.max(1, left / 1_000_000));
                }
            }
        }

        private static InetSocketAddress coordinator(AsyncResultSet rs) {
            Node node = rs.getExecutionInfo().getCoordinator();
            if (node == null) {
                return null;
            }
            SocketAddress a = node.getEndPoint().resolve();
            return a instanceof InetSocketAddress i ? i : null;
        }
    }
}
