package io.replicalb.driver.runner;

import java.net.Inet6Address;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The line protocol between the Rust load generator (the parent) and this program (the child),
 * version {@value #VERSION}. Every message is one line of UTF-8 text, fields separated by one
 * space; the Rust side is crates/harness/src/loadgen/java/protocol.rs, and both test suites
 * check the same lines.
 *
 * <p>Parent to child, on stdin:
 *
 * <ul>
 *   <li>{@code hello 1 NAME=VALUE ...}: first, once: the protocol version and the settings
 *       ({@link Settings});
 *   <li>{@code r ID KEY}: read key {@code KEY} (hex of its bytes);
 *   <li>{@code w ID KEY VALUE}: write {@code VALUE} (hex) to {@code KEY};
 *   <li>{@code p ID KEY,KEY,...}: read every key at once, one prepared read each; the request
 *       ends with the last, failed with the first failure;
 *   <li>{@code i ID KEY,KEY,...}: read every key in one {@code IN} query;
 *   <li>{@code end}: no more requests; answer the ones still out, then the counters.
 * </ul>
 *
 * <p>Child to parent, on stdout:
 *
 * <ul>
 *   <li>{@code ready 1 NAME=VALUE ...}: connected, statements prepared (what the driver runs);
 *   <li>{@code ok ID HOST:PORT}: request {@code ID} answered; the node that coordinated it
 *       ({@code -} when the driver does not say);
 *   <li>{@code timeout ID}: it timed out (the driver's request time-out, or the coordinator's
 *       read or write time-out);
 *   <li>{@code error ID MESSAGE}: it failed otherwise;
 *   <li>{@code stats NAME=COUNT ...}: after {@code end}, the policy's counters (none for the
 *       driver's own policy; ReplicaLbLoadBalancingPolicy's {@code Counters} otherwise);
 *   <li>{@code bye}: the last line;
 *   <li>{@code fatal MESSAGE}: the program cannot go on (then it exits).
 * </ul>
 *
 * <p>Request ids are the parent's (decimal, unsigned 64-bit). A line that does not follow the
 * protocol is refused with a message naming it.
 */
public final class Protocol {
    /** The protocol version this program speaks. */
    public static final int VERSION = 1;

    private Protocol() {}

    /** A message from the parent. */
    public sealed interface Request permits Hello, Read, Write, Multi, End {}

    /** {@code hello VERSION NAME=VALUE ...}. */
    public record Hello(int version, Map<String, String> settings) implements Request {}

    /** {@code r ID KEY}. */
    public record Read(long id, byte[] key) implements Request {}

    /** {@code w ID KEY VALUE}. */
    public record Write(long id, byte[] key, byte[] value) implements Request {}

    /** {@code p ID KEYS} ({@code in} false) or {@code i ID KEYS} ({@code in} true). */
    public record Multi(long id, boolean in, List<byte[]> keys) implements Request {}

    /** {@code end}. */
    public record End() implements Request {}

    /** A line that does not follow the protocol; the message names it. */
    public static final class ProtocolException extends Exception {
        ProtocolException(String message) {
            super(message);
        }
    }

    /** Parses one line from the parent. */
    public static Request parse(String line) throws ProtocolException {
        String[] f = line.split(" ", -1);
        switch (f[0]) {
            case "hello": {
                if (f.length < 2) {
                    throw bad(line, "no protocol version");
                }
                int version;
                try {
                    version = Integer.parseInt(f[1]);
                } catch (NumberFormatException e) {
                    throw bad(line, "the version is not a number");
                }
                Map<String, String> settings = new LinkedHashMap<>();
                for (int i = 2; i < f.length; i++) {
                    int eq = f[i].indexOf('=');
                    if (eq <= 0) {
                        throw bad(line, "'" + f[i] + "' is not NAME=VALUE");
                    }
                    if (settings.put(f[i].substring(0, eq), f[i].substring(eq + 1)) != null) {
                        throw bad(line, "'" + f[i].substring(0, eq) + "' is given twice");
                    }
                }
                return new Hello(version, Collections.unmodifiableMap(settings));
            }
            case "r":
                fields(line, f, 3);
                return new Read(id(line, f[1]), hex(line, f[2]));
            case "w":
                fields(line, f, 4);
                return new Write(id(line, f[1]), hex(line, f[2]), hex(line, f[3]));
            case "p":
            case "i": {
                fields(line, f, 3);
                List<byte[]> keys = new ArrayList<>();
                for (String k : f[2].split(",", -1)) {
                    keys.add(hex(line, k));
                }
                return new Multi(id(line, f[1]), f[0].equals("i"), keys);
            }
            case "end":
                fields(line, f, 1);
                return new End();
            default:
                throw bad(line, "unknown message '" + f[0] + "'");
        }
    }

    /** {@code ready VERSION NAME=VALUE ...}. */
    public static String ready(Map<String, String> info) {
        StringBuilder b = new StringBuilder("ready ").append(VERSION);
        info.forEach((k, v) -> b.append(' ').append(k).append('=').append(token(v)));
        return b.toString();
    }

    /** {@code ok ID HOST:PORT}, or {@code ok ID -} when the coordinator is not known. */
    public static String ok(long id, InetSocketAddress coordinator) {
        return "ok " + Long.toUnsignedString(id) + " " + address(coordinator);
    }

    /** {@code timeout ID}. */
    public static String timeout(long id) {
        return "timeout " + Long.toUnsignedString(id);
    }

    /** {@code error ID MESSAGE} (the message on one line, never empty). */
    public static String error(long id, String message) {
        return "error " + Long.toUnsignedString(id) + " " + oneLine(message);
    }

    /** {@code stats NAME=COUNT ...}. */
    public static String stats(Map<String, Long> counters) {
        StringBuilder b = new StringBuilder("stats");
        counters.forEach((k, v) -> b.append(' ').append(token(k)).append('=').append(v));
        return b.toString();
    }

    /** {@code bye}. */
    public static String bye() {
        return "bye";
    }

    /** {@code fatal MESSAGE}. */
    public static String fatal(String message) {
        return "fatal " + oneLine(message);
    }

    /** {@code HOST:PORT} ({@code [V6]:PORT}), or {@code -}. */
    static String address(InetSocketAddress a) {
        if (a == null || a.getAddress() == null) {
            return "-";
        }
        String host = a.getAddress().getHostAddress();
        if (a.getAddress() instanceof Inet6Address) {
            int zone = host.indexOf('%');
            host = "[" + (zone >= 0 ? host.substring(0, zone) : host) + "]";
        }
        return host + ":" + a.getPort();
    }

    /** {@code message} on one line: line breaks become spaces; empty becomes a word. */
    public static String oneLine(String message) {
        String s = message == null ? "" : message.replaceAll("[\\r\\n\\t]+", " ").strip();
        return s.isEmpty() ? "(no message)" : s;
    }

    /** A value as one token (spaces would split it). */
    private static String token(String s) {
        return oneLine(s).replace(' ', '_');
    }

    private static void fields(String line, String[] f, int n) throws ProtocolException {
        if (f.length != n) {
            throw bad(line, "expected " + n + " fields, got " + f.length);
        }
    }

    private static long id(String line, String s) throws ProtocolException {
        try {
            return Long.parseUnsignedLong(s);
        } catch (NumberFormatException e) {
            throw bad(line, "request id '" + s + "' is not an unsigned number");
        }
    }

    /** Decodes lowercase or uppercase hex. */
    static byte[] hex(String line, String s) throws ProtocolException {
        if (s.isEmpty() || s.length() % 2 != 0) {
            throw bad(line, "'" + s + "' is not hex bytes");
        }
        byte[] out = new byte[s.length() / 2];
        for (int i = 0; i < out.length; i++) {
            int hi = Character.digit(s.charAt(2 * i), 16);
            int lo = Character.digit(s.charAt(2 * i + 1), 16);
            if (hi < 0 || lo < 0) {
                throw bad(line, "'" + s + "' is not hex bytes");
            }
            out[i] = (byte) (hi << 4 | lo);
        }
        return out;
    }

    private static ProtocolException bad(String line, String why) {
        String shown = line.length() > 120 ? line.substring(0, 120) + "..." : line;
        return new ProtocolException("malformed line '" + shown.replaceAll("[\\r\\n\\t]+", " ") + "': " + why);
    }
}
