package io.replicalb.core;

import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.File;
import java.io.IOException;

/**
 * The shared client-policy traces ({@code testdata/client-policy-traces.json}, written by the
 * Rust test {@code crates/policy/tests/client_policy_traces.rs}), found through the path
 * Surefire passes as {@code -Dclient.traces} (relative to this module: {@code ../../testdata}).
 */
public final class TraceFile {
    private TraceFile() {}

    /** The parsed file. */
    public static JsonNode read() throws IOException {
        String path = System.getProperty("client.traces");
        assertTrue(path != null && !path.isEmpty(), "Surefire passes -Dclient.traces");
        File file = new File(path);
        assertTrue(file.isFile(), "traces at " + file.getAbsolutePath());
        return new ObjectMapper().readTree(file);
    }
}
