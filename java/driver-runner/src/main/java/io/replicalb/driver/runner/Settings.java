package io.replicalb.driver.runner;

import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * What the parent's {@code hello} line sets, checked once: where the cluster is, the client
 * policy, the consistency level, the request time-out and the table the load generator's
 * {@code load} wrote.
 *
 * @param contactPoints the nodes to connect to first ({@code contact_points=HOST:PORT,...})
 * @param policy the load-balancing policy ({@code policy=NAME}), its parameters
 *     ({@code param.NAME=VALUE}, any number), the seed of its random stream ({@code seed=N},
 *     unsigned, default 0) and how often it reads the nodes' hit rates
 *     ({@code hit_rate_poll_ms=N}, default 0: never)
 * @param consistency the consistency level of every request ({@code consistency=QUORUM})
 * @param timeoutMs the request time-out, ms ({@code timeout_ms=N}): the driver's
 *     {@code basic.request.timeout}
 * @param keyspace the keyspace ({@code keyspace=NAME})
 * @param table the table of keys {@code k blob} and values {@code v blob} ({@code table=NAME})
 * @param localDc the local datacenter ({@code local_dc=NAME}); {@code null}: the datacenter of
 *     the first contact point that answers
 */
public record Settings(
        List<InetSocketAddress> contactPoints,
        ClientPolicy policy,
        String consistency,
        long timeoutMs,
        String keyspace,
        String table,
        String localDc) {

    /** The consistency levels the load generator sends. */
    static final Set<String> LEVELS = Set.of("ONE", "TWO", "THREE", "QUORUM", "ALL", "LOCAL_ONE", "LOCAL_QUORUM");

    private static final Set<String> KNOWN =
            Set.of("contact_points", "policy", "consistency", "timeout_ms", "keyspace", "table", "local_dc", "seed", "hit_rate_poll_ms");

    /** The prefix of a policy parameter's setting, {@code param.NAME=VALUE}. */
    static final String PARAM = "param.";

    /** The settings of a {@code hello} line; the message of a bad one names it. */
    public static Settings of(Protocol.Hello hello) throws Protocol.ProtocolException {
        if (hello.version() != Protocol.VERSION) {
            throw new Protocol.ProtocolException("the load generator speaks protocol version " + hello.version()
                    + "; this program speaks " + Protocol.VERSION + " (rebuild it from the same checkout)");
        }
        Map<String, String> s = hello.settings();
        Map<String, String> params = new TreeMap<>();
        for (String name : s.keySet()) {
            if (name.startsWith(PARAM) && name.length() > PARAM.length()) {
                params.put(name.substring(PARAM.length()), s.get(name));
            } else if (!KNOWN.contains(name)) {
                throw new Protocol.ProtocolException("hello: unknown setting '" + name + "'");
            }
        }
        List<InetSocketAddress> contacts = new ArrayList<>();
        for (String item : need(s, "contact_points").split(",", -1)) {
            contacts.add(hostPort(item));
        }
        long seed;
        try {
            seed = Long.parseUnsignedLong(s.getOrDefault("seed", "0"));
        } catch (NumberFormatException e) {
            throw new Protocol.ProtocolException("hello: seed '" + s.get("seed") + "' is not an unsigned 64-bit number");
        }
        long pollMs;
        try {
            pollMs = Long.parseLong(s.getOrDefault("hit_rate_poll_ms", "0"));
        } catch (NumberFormatException e) {
            pollMs = -1;
        }
        if (pollMs != 0 && (pollMs < 10 || pollMs > 3_600_000)) {
            throw new Protocol.ProtocolException("hello: hit_rate_poll_ms '" + s.get("hit_rate_poll_ms") + "' must be 0 (never) or a number of ms in [10, 3600000]");
        }
        ClientPolicy policy = ClientPolicy.parse(need(s, "policy"), params, seed, pollMs);
        String cl = need(s, "consistency");
        if (!LEVELS.contains(cl)) {
            throw new Protocol.ProtocolException("hello: consistency '" + cl + "' is not one of " + String.join(", ", LEVELS));
        }
        long timeoutMs;
        try {
            timeoutMs = Long.parseLong(need(s, "timeout_ms"));
        } catch (NumberFormatException e) {
            timeoutMs = -1;
        }
        if (timeoutMs < 1 || timeoutMs > 3_600_000) {
            throw new Protocol.ProtocolException("hello: timeout_ms '" + s.get("timeout_ms") + "' must be a number of ms in [1, 3600000]");
        }
        String localDc = s.get("local_dc");
        return new Settings(
                List.copyOf(contacts),
                policy,
                cl,
                timeoutMs,
                identifier(s, "keyspace"),
                identifier(s, "table"),
                localDc == null || localDc.isEmpty() ? null : localDc);
    }

    private static String need(Map<String, String> s, String name) throws Protocol.ProtocolException {
        String v = s.get(name);
        if (v == null || v.isEmpty()) {
            throw new Protocol.ProtocolException("hello: no " + name);
        }
        return v;
    }

    /** A CQL identifier the statements are built from: letters, digits and underscores only. */
    private static String identifier(Map<String, String> s, String name) throws Protocol.ProtocolException {
        String v = need(s, name);
        if (!v.matches("[A-Za-z][A-Za-z0-9_]*")) {
            throw new Protocol.ProtocolException("hello: " + name + " '" + v + "' is not a plain CQL name");
        }
        return v;
    }

    /** {@code HOST:PORT} or {@code [V6]:PORT}, unresolved names refused (no DNS here). */
    static InetSocketAddress hostPort(String item) throws Protocol.ProtocolException {
        int colon = item.lastIndexOf(':');
        if (colon <= 0) {
            throw new Protocol.ProtocolException("hello: contact point '" + item + "' is not HOST:PORT");
        }
        String host = item.substring(0, colon);
        if (host.startsWith("[") && host.endsWith("]")) {
            host = host.substring(1, host.length() - 1);
        }
        int port;
        try {
            port = Integer.parseInt(item.substring(colon + 1));
        } catch (NumberFormatException e) {
            port = -1;
        }
        if (port < 1 || port > 65535 || !(host.matches("[0-9.]+") || host.contains(":"))) {
            throw new Protocol.ProtocolException("hello: contact point '" + item + "' is not IP:PORT");
        }
        InetSocketAddress a = new InetSocketAddress(host, port);
        if (a.isUnresolved()) {
            throw new Protocol.ProtocolException("hello: contact point '" + item + "' is not IP:PORT");
        }
        return a;
    }
}
