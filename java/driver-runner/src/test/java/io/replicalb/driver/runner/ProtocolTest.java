package io.replicalb.driver.runner;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.datastax.oss.driver.api.core.DriverTimeoutException;
import com.datastax.oss.driver.api.core.config.DefaultDriverOption;
import com.datastax.oss.driver.api.core.config.DriverConfigLoader;
import com.datastax.oss.driver.api.core.config.DriverExecutionProfile;
import com.datastax.oss.driver.api.core.config.ProgrammaticDriverConfigLoaderBuilder;
import io.replicalb.driver.ReplicaLbLoadBalancingPolicy;
import io.replicalb.driver.ReplicaLbOption;
import io.replicalb.driver.ReplicaLbSettings;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CompletionException;
import org.junit.jupiter.api.Test;

/** The protocol's lines, both ways; the Rust side's tests check the same lines. */
class ProtocolTest {
    private static final String HELLO =
            "hello 1 contact_points=127.0.1.1:9042,127.0.1.2:9042 policy=default consistency=QUORUM timeout_ms=2000 keyspace=replica_lb table=kv seed=0 hit_rate_poll_ms=0";

    @Test
    void requestsParse() throws Exception {
        Protocol.Read r = assertInstanceOf(Protocol.Read.class, Protocol.parse("r 7 3432"));
        assertEquals(7, r.id());
        assertArrayEquals("42".getBytes(StandardCharsets.US_ASCII), r.key());
        Protocol.Write w = assertInstanceOf(Protocol.Write.class, Protocol.parse("w 18446744073709551615 31 76FF00"));
        assertEquals(-1L, w.id(), "ids are unsigned 64-bit");
        assertArrayEquals(new byte[] {0x76, (byte) 0xff, 0}, w.value());
        Protocol.Multi p = assertInstanceOf(Protocol.Multi.class, Protocol.parse("p 9 31,32,33"));
        assertEquals(false, p.in());
        assertEquals(3, p.keys().size());
        Protocol.Multi i = assertInstanceOf(Protocol.Multi.class, Protocol.parse("i 10 31,32"));
        assertTrue(i.in());
        assertInstanceOf(Protocol.End.class, Protocol.parse("end"));
        Protocol.Hello h = assertInstanceOf(Protocol.Hello.class, Protocol.parse(HELLO));
        assertEquals(1, h.version());
        assertEquals("kv", h.settings().get("table"));
    }

    @Test
    void malformedLinesAreRefusedNamingThem() {
        for (String[] c : new String[][] {
            {"", "unknown message ''"},
            {"x 1 31", "unknown message 'x'"},
            {"r 1", "expected 3 fields, got 2"},
            {"r -1 31", "'-1' is not an unsigned number"},
            {"r 1 3", "'3' is not hex bytes"},
            {"r 1 zz", "'zz' is not hex bytes"},
            {"p 1 31,,32", "'' is not hex bytes"},
            {"w 1 31", "expected 4 fields"},
            {"end now", "expected 1 fields"},
            {"hello one", "not a number"},
            {"hello 1 policy", "'policy' is not NAME=VALUE"},
            {"hello 1 a=1 a=2", "'a' is given twice"},
        }) {
            Protocol.ProtocolException e = assertThrows(Protocol.ProtocolException.class, () -> Protocol.parse(c[0]), c[0]);
            assertTrue(e.getMessage().startsWith("malformed line '" + c[0] + "'"), e.getMessage());
            assertTrue(e.getMessage().contains(c[1]), c[0] + ": " + e.getMessage());
        }
    }

    @Test
    void repliesAreOneLineEach() {
        assertEquals("ok 3 127.0.1.2:9042", Protocol.ok(3, new InetSocketAddress("127.0.1.2", 9042)));
        assertEquals("ok 3 [0:0:0:0:0:0:0:1]:9042", Protocol.ok(3, new InetSocketAddress("::1", 9042)));
        assertEquals("ok 18446744073709551615 -", Protocol.ok(-1L, null));
        assertEquals("timeout 4", Protocol.timeout(4));
        assertEquals("error 5 a b", Protocol.error(5, "a\nb"));
        assertEquals("error 5 (no message)", Protocol.error(5, " \n"));
        Map<String, Long> c = new LinkedHashMap<>();
        c.put("picks", 10L);
        c.put("open", 0L);
        assertEquals("stats picks=10 open=0", Protocol.stats(c));
        assertEquals("stats", Protocol.stats(Map.of()));
        Map<String, String> info = new LinkedHashMap<>();
        info.put("driver", "4.19.4");
        info.put("local_dc", "dc 1");
        assertEquals("ready 1 driver=4.19.4 local_dc=dc_1", Protocol.ready(info));
        assertEquals("fatal x y", Protocol.fatal("x\r\ny"));
    }

    @Test
    void outcomesFollowTheRustTransportsTimeOutSemantics() {
        InetSocketAddress a = new InetSocketAddress("127.0.1.1", 9042);
        assertEquals("ok 1 127.0.1.1:9042", Outcomes.reply(1, a, null));
        assertEquals("timeout 2", Outcomes.reply(2, null, new CompletionException(new DriverTimeoutException("late"))));
        assertEquals("error 3 IllegalStateException: no", Outcomes.reply(3, null, new CompletionException(new IllegalStateException("no"))));
    }

    @Test
    void settingsAreCheckedOnce() throws Exception {
        Settings s = Settings.of((Protocol.Hello) Protocol.parse(HELLO));
        assertEquals(2, s.contactPoints().size());
        assertEquals(new InetSocketAddress("127.0.1.2", 9042), s.contactPoints().get(1));
        assertEquals(ClientPolicy.DEFAULT, s.policy().policyName());
        assertTrue(s.policy().isDriverDefault());
        assertEquals(0, s.policy().seed());
        assertEquals(0, s.policy().hitRatePollMs());
        assertEquals(2000, s.timeoutMs());
        assertEquals(null, s.localDc());
        for (String[] c : new String[][] {
            {HELLO.replace("hello 1", "hello 2"), "protocol version 2; this program speaks 1"},
            {HELLO.replace("policy=default", "policy=nonesuch"), "unknown client policy 'nonesuch'"},
            {HELLO + " param.x=1", "the driver's default policy takes no parameters, got x"},
            {HELLO.replace("seed=0", "seed=-1"), "seed '-1' is not an unsigned 64-bit number"},
            {HELLO.replace("hit_rate_poll_ms=0", "hit_rate_poll_ms=5"), "hit_rate_poll_ms '5' must be 0 (never)"},
            {HELLO.replace("QUORUM", "EACH"), "consistency 'EACH'"},
            {HELLO.replace("2000", "0"), "timeout_ms '0'"},
            {HELLO.replace("table=kv", "table=kv;drop"), "not a plain CQL name"},
            {HELLO.replace("127.0.1.1:9042", "localhost:9042"), "'localhost:9042' is not IP:PORT"},
            {HELLO.replace("127.0.1.1:9042", "127.0.1.1"), "'127.0.1.1' is not HOST:PORT"},
            {HELLO + " speed=9", "unknown setting 'speed'"},
            {HELLO.replace(" keyspace=replica_lb", ""), "no keyspace"},
        }) {
            Protocol.ProtocolException e = assertThrows(
                    Protocol.ProtocolException.class, () -> Settings.of((Protocol.Hello) Protocol.parse(c[0])), c[0]);
            assertTrue(e.getMessage().contains(c[1]), c[1] + ": " + e.getMessage());
        }
    }

    @Test
    void theSeedAndPollingAreRead() throws Exception {
        Settings s = Settings.of((Protocol.Hello) Protocol.parse(HELLO.replace("seed=0 hit_rate_poll_ms=0", "seed=18446744073709551615 hit_rate_poll_ms=500")));
        assertEquals(-1L, s.policy().seed(), "unsigned 64-bit, as the Rust side sends it");
        assertEquals(500, s.policy().hitRatePollMs());
    }

    @Test
    void aReplicaLbPolicyIsConfiguredAsAnApplicationWould() {
        ClientPolicy p = new ClientPolicy("unified", Map.of("concurrency_weight", "4"), 7, 500);
        assertFalse(p.isDriverDefault());
        ProgrammaticDriverConfigLoaderBuilder b = DriverConfigLoader.programmaticBuilder();
        p.configure(b, "dc1");
        try (DriverConfigLoader loader = b.build()) {
            DriverExecutionProfile profile = loader.getInitialConfig().getDefaultProfile();
            assertEquals(ReplicaLbLoadBalancingPolicy.class.getName(), profile.getString(DefaultDriverOption.LOAD_BALANCING_POLICY_CLASS));
            assertEquals("dc1", profile.getString(DefaultDriverOption.LOAD_BALANCING_LOCAL_DATACENTER));
            // Read back by the policy's own option reader.
            ReplicaLbSettings s = ReplicaLbSettings.of(profile);
            assertEquals("unified", s.policy());
            assertEquals(Map.of("concurrency_weight", "4"), s.params());
            assertEquals(7, s.seed());
            assertEquals(500_000_000L, s.hitRatePollIntervalNs());
        }
        ProgrammaticDriverConfigLoaderBuilder d = DriverConfigLoader.programmaticBuilder();
        new ClientPolicy(ClientPolicy.DEFAULT, Map.of(), 0, 0).configure(d, "dc2");
        try (DriverConfigLoader loader = d.build()) {
            DriverExecutionProfile profile = loader.getInitialConfig().getDefaultProfile();
            assertEquals("DefaultLoadBalancingPolicy", profile.getString(DefaultDriverOption.LOAD_BALANCING_POLICY_CLASS));
            assertFalse(profile.isDefined(ReplicaLbOption.POLICY));
        }
    }

    @Test
    void aBadFirstLineIsFatalAndTheProgramStops() {
        for (String[] c : new String[][] {
            {"r 1 31\n", "fatal malformed line 'r 1 31': "},
            {"r 1 31", "the first line must be hello"},
            {HELLO.replace("policy=default", "policy=nonesuch") + "\n", "fatal the Java driver's client policy: unknown client policy 'nonesuch'"},
        }) {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            int status = Main.run(new ByteArrayInputStream(c[0].getBytes(StandardCharsets.UTF_8)), out);
            String text = out.toString(StandardCharsets.UTF_8);
            assertEquals(2, status, text);
            assertTrue(text.startsWith("fatal ") && text.endsWith("\n") && text.indexOf('\n') == text.length() - 1, text);
            assertTrue(text.contains(c[1].replace("fatal malformed line 'r 1 31': ", "")), c[1] + ": " + text);
        }
        // End of input before hello: nothing to do.
        assertEquals(0, Main.run(new ByteArrayInputStream(new byte[0]), new ByteArrayOutputStream()));
    }
}
