package io.replicalb.driver;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.datastax.oss.driver.api.core.config.DefaultDriverOption;
import com.datastax.oss.driver.api.core.config.DriverConfigLoader;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ReplicaLbSettingsTest {
    /** The settings of an application.conf with {@code body} inside {@code datastax-java-driver}. */
    private static ReplicaLbSettings conf(String body) {
        try (DriverConfigLoader loader = DriverConfigLoader.fromString("datastax-java-driver {\n" + body + "\n}")) {
            return ReplicaLbSettings.of(loader.getInitialConfig().getDefaultProfile());
        }
    }

    private static void refused(String body, String... says) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> conf(body), body);
        String m = e.getMessage();
        assertFalse(m.contains("\n"), m);
        for (String s : says) {
            assertTrue(m.contains(s), body + " -> " + m);
        }
    }

    @Test
    void an_application_conf_sets_every_option() {
        ReplicaLbSettings s = conf("""
                basic.request.timeout = 3 seconds
                advanced.replica-lb {
                  policy = unified
                  params { rate_control = false, concurrency_weight = 4, beta = 0.5, mode = fast }
                  seed = 7
                  local-rack = r1
                  hit-rate-poll-interval = 500 milliseconds
                  hit-rate-poll-timeout = 200 milliseconds
                  ticket-match-window = 20 milliseconds
                  max-open-tickets-per-node = 16
                  shards = 3
                }
                """);
        assertEquals("unified", s.policy());
        assertEquals(Map.of("rate_control", "false", "concurrency_weight", "4", "beta", "0.5", "mode", "fast"), s.params());
        assertEquals(7, s.seed());
        assertEquals("r1", s.localRack());
        assertEquals(Duration.ofMillis(500).toNanos(), s.hitRatePollIntervalNs());
        assertEquals(Duration.ofMillis(200).toNanos(), s.hitRatePollTimeoutNs());
        assertEquals(Duration.ofSeconds(4).toNanos(), s.ticketTtlNs(), "the request time-out plus 1 s");
        assertEquals(Duration.ofMillis(20).toNanos(), s.ticketMatchWindowNs());
        assertEquals(16, s.maxOpenTicketsPerNode());
        assertEquals(3, s.shards());
    }

    @Test
    void the_defaults_need_only_the_policy() {
        ReplicaLbSettings s = conf("advanced.replica-lb.policy = p2c");
        assertEquals(Map.of(), s.params());
        assertEquals(0, s.seed());
        assertNull(s.localRack());
        assertEquals(Duration.ofSeconds(1).toNanos(), s.hitRatePollIntervalNs());
        // The driver's reference.conf request time-out (2 s) plus 1 s.
        assertEquals(Duration.ofSeconds(3).toNanos(), s.ticketTtlNs());
        assertEquals(4096, s.maxOpenTicketsPerNode());
        assertEquals(Math.min(Runtime.getRuntime().availableProcessors(), 256), s.shards(), "one shard per core");
        assertEquals(ReplicaLbSettings.defaultShards(), s.shards());
        assertEquals(0, conf("advanced.replica-lb { policy = p2c, hit-rate-poll-interval = 0 }").hitRatePollIntervalNs(), "0 turns polling off");
    }

    @Test
    void the_programmatic_loader_works_too() {
        try (DriverConfigLoader loader = DriverConfigLoader.programmaticBuilder()
                .withString(ReplicaLbOption.POLICY, "c3")
                .withStringMap(ReplicaLbOption.PARAMS, Map.of("concurrency_weight", "2"))
                .withLong(ReplicaLbOption.SEED, -5)
                .withDuration(DefaultDriverOption.REQUEST_TIMEOUT, Duration.ofMillis(500))
                .build()) {
            ReplicaLbSettings s = ReplicaLbSettings.of(loader.getInitialConfig().getDefaultProfile());
            assertEquals("c3", s.policy());
            assertEquals(Map.of("concurrency_weight", "2"), s.params());
            assertEquals(-5, s.seed());
            assertEquals(Duration.ofMillis(1500).toNanos(), s.ticketTtlNs());
        }
        try (DriverConfigLoader loader = DriverConfigLoader.programmaticBuilder()
                .withString(ReplicaLbOption.POLICY, "c3")
                .withInt(ReplicaLbOption.SHARDS, 1)
                .build()) {
            assertEquals(1, ReplicaLbSettings.of(loader.getInitialConfig().getDefaultProfile()).shards());
        }
    }

    @Test
    void a_bad_value_is_one_line_naming_the_option_and_the_value() {
        refused("", "datastax-java-driver.advanced.replica-lb.policy is not set");
        refused("advanced.replica-lb.policy = \"  \"", "advanced.replica-lb.policy is not set");
        refused("advanced.replica-lb { policy = p2c, seed = lots }", "datastax-java-driver.advanced.replica-lb.seed", "lots");
        refused("advanced.replica-lb { policy = p2c, params = 3 }", "datastax-java-driver.advanced.replica-lb.params");
        refused("advanced.replica-lb { policy = p2c, local-rack = \"\" }", "advanced.replica-lb.local-rack '' is empty");
        refused("advanced.replica-lb { policy = p2c, hit-rate-poll-interval = 5 milliseconds }", "hit-rate-poll-interval 5 ms", "0 (off)");
        refused("advanced.replica-lb { policy = p2c, hit-rate-poll-interval = often }", "hit-rate-poll-interval", "often");
        refused("advanced.replica-lb { policy = p2c, hit-rate-poll-timeout = 0 }", "hit-rate-poll-timeout 0 ms");
        refused("advanced.replica-lb { policy = p2c, ticket-ttl = 2 hours }", "ticket-ttl 7200000 ms", "1 hour");
        refused("advanced.replica-lb { policy = p2c, ticket-ttl = 1 second, ticket-match-window = 2 seconds }",
                "ticket-match-window 2000 ms", "ticket-ttl 1000 ms");
        refused("advanced.replica-lb { policy = p2c, max-open-tickets-per-node = 0 }", "max-open-tickets-per-node 0");
        refused("advanced.replica-lb { policy = p2c, shards = 0 }", "datastax-java-driver.advanced.replica-lb.shards 0: must be within [1, 256]");
        refused("advanced.replica-lb { policy = p2c, shards = 257 }", "advanced.replica-lb.shards 257: must be within [1, 256]", "number of cores");
        refused("advanced.replica-lb { policy = p2c, shards = -1 }", "advanced.replica-lb.shards -1: must be within [1, 256]");
        refused("advanced.replica-lb { policy = p2c, shards = many }", "datastax-java-driver.advanced.replica-lb.shards 'many'");
        refused("advanced.replica-lb { policy = p2c, shards = 1.5 }", "datastax-java-driver.advanced.replica-lb.shards '1.5'");
        assertEquals(256, conf("advanced.replica-lb { policy = p2c, shards = 256 }").shards());
    }
}
