package io.replicalb.driver.runner;

import java.io.BufferedWriter;
import java.io.IOException;
import java.io.OutputStream;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.LinkedBlockingQueue;

/**
 * The lines to the parent, written by one thread of their own: the driver's I/O threads only
 * queue a line and never block on the pipe; the writer flushes whenever the queue is empty.
 */
final class Output implements AutoCloseable {
    private static final String CLOSE = new String("close");

    private final LinkedBlockingQueue<String> queue = new LinkedBlockingQueue<>();
    private final Writer out;
    private final Thread writer;
    private volatile boolean broken;

    Output(OutputStream stream) {
        this.out = new BufferedWriter(new OutputStreamWriter(stream, StandardCharsets.UTF_8), 1 << 16);
        this.writer = new Thread(this::write, "replica-lb-output");
        this.writer.setDaemon(true);
        this.writer.start();
    }

    /** Queues one line (without its line break). */
    void line(String line) {
        queue.add(line);
    }

    /** Whether writing failed (the parent is gone). */
    boolean broken() {
        return broken;
    }

    private void write() {
        try {
            while (true) {
                String s = queue.take();
                do {
                    if (s == CLOSE) {
                        out.flush();
                        return;
                    }
                    out.write(s);
                    out.write('\n');
                    s = queue.poll();
                } while (s != null);
                out.flush();
            }
        } catch (IOException e) {
            broken = true;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Writes every line queued so far, then stops the writer. */
    @Override
    public void close() {
        queue.add(CLOSE);
        try {
            writer.join(10_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
