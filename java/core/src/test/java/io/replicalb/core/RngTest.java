package io.replicalb.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Test;

/** {@link Rng} gives the Rust generator's values bit for bit (the traces file's "rng" part). */
class RngTest {
    @Test
    void gives_the_rust_values_bit_for_bit() throws Exception {
        JsonNode items = TraceFile.read().get("rng");
        assertTrue(items != null && items.size() >= 5, "the traces hold the generator's values");
        int checked = 0;
        for (JsonNode item : items) {
            long seed = Long.parseUnsignedLong(item.get("seed").asText());
            Rng r = Rng.seedFromU64(seed);
            for (JsonNode v : item.get("next_u64")) {
                assertEquals(Long.parseUnsignedLong(v.asText()), r.nextLong(), "next_u64, seed " + item.get("seed").asText());
                checked++;
            }
            r = Rng.seedFromU64(seed);
            for (JsonNode v : item.get("unit_f64")) {
                assertEquals(Double.doubleToRawLongBits(v.asDouble()), Double.doubleToRawLongBits(r.unitDouble()), "unit_f64");
                checked++;
            }
            for (JsonNode pair : item.get("below")) {
                assertEquals(pair.get(1).asInt(), r.below(pair.get(0).asInt()), "below(" + pair.get(0).asInt() + ")");
                checked++;
            }
            Rng fork = r.fork();
            for (JsonNode v : item.get("fork_next_u64")) {
                assertEquals(Long.parseUnsignedLong(v.asText()), fork.nextLong(), "fork");
                checked++;
            }
            for (JsonNode v : item.get("after_fork_next_u64")) {
                assertEquals(Long.parseUnsignedLong(v.asText()), r.nextLong(), "the stream after a fork");
                checked++;
            }
        }
        System.out.println("rng: " + checked + " values agree with Rust");
    }

    @Test
    void below_refuses_an_empty_range() {
        assertThrows(IllegalArgumentException.class, () -> Rng.seedFromU64(1).below(0));
    }
}
