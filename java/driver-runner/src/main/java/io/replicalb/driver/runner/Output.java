package io.replicalb.driver.runner;

import java.io.BufferedWriter;
import java.io.IOException;
import java.io.OutputStream;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;

/**
 * The lines to the parent, each written and flushed at once by the thread that has it (the
 * driver's I/O thread that completed a request): no hand-over to another thread on the reply's
 * way, whose wake-up would add to every latency the parent measures. The parent reads all the
 * time, so a write does not wait on a full pipe for long.
 */
final class Output implements AutoCloseable {
    private final Writer out;
    private boolean broken;

    Output(OutputStream stream) {
        this.out = new BufferedWriter(new OutputStreamWriter(stream, StandardCharsets.UTF_8), 1 << 12);
    }

    /** Writes one line (without its line break) and flushes it; nothing once the parent is gone. */
    synchronized void line(String line) {
        if (broken) {
            return;
        }
        try {
            out.write(line);
            out.write('\n');
            out.flush();
        } catch (IOException e) {
            broken = true;
        }
    }

    /** Flushes what is left. */
    @Override
    public synchronized void close() {
        try {
            out.flush();
        } catch (IOException e) {
            broken = true;
        }
    }
}
