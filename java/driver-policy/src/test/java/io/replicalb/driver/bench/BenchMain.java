package io.replicalb.driver.bench;

import io.replicalb.core.client.ClientPolicies;
import java.util.ArrayList;
import java.util.List;
import org.openjdk.jmh.results.format.ResultFormatType;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.RunnerException;
import org.openjdk.jmh.runner.options.Options;
import org.openjdk.jmh.runner.options.OptionsBuilder;

/**
 * Runs {@link PlanBench} and writes JMH's JSON: {@code BenchMain OUT.json [--shards=N,...]
 * [POLICY ...]} ({@code --shards}: the adapter's shard counts to measure; default its own, one
 * per core). The
 * policies default to {@code default} and every client policy registered in replica-lb-core
 * ({@code adapter-floor}, the adapter's own cost, only when named);
 * a name given that is not registered (yet) is skipped with a line saying so. java/driver-policy/
 * bench.sh builds the classpath and calls it.
 */
public final class BenchMain {
    private BenchMain() {}

    /** Whether replica-lb-core has a client policy called {@code name}. */
    static boolean registered(String name) {
        for (String n : ClientPolicies.names()) {
            if (n.equals(name)) {
                return true;
            }
        }
        return false;
    }

    /** The policies to measure: {@code asked} (or default and every registered one), the unregistered left out. */
    static List<String> policies(List<String> asked) {
        List<String> names = new ArrayList<>();
        if (asked.isEmpty()) {
            names.add("default");
            ClientPolicies.names().forEach(names::add);
            return names;
        }
        for (String name : asked) {
            if (name.equals("default") || name.equals(PlanBench.FLOOR) || registered(name)) {
                names.add(name);
            } else {
                System.err.println("skipping '" + name + "': not registered in replica-lb-core yet (registered: "
                        + String.join(", ", ClientPolicies.names()) + ")");
            }
        }
        return names;
    }

    /** {@code OUT.json [POLICY ...]}. */
    public static void main(String[] args) throws RunnerException {
        if (args.length < 1 || args[0].startsWith("-")) {
            System.err.println("usage: BenchMain OUT.json [--shards=N,...] [POLICY ...]   (policies: default and the registered client policies)");
            System.exit(2);
        }
        List<String> rest = new ArrayList<>(List.of(args).subList(1, args.length));
        String[] shards = {"0"};
        if (!rest.isEmpty() && rest.get(0).startsWith("--shards=")) {
            shards = rest.remove(0).substring("--shards=".length()).split(",");
            for (String n : shards) {
                if (!n.matches("[0-9]{1,3}") || Integer.parseInt(n) < 1 || Integer.parseInt(n) > 256) {
                    System.err.println("--shards: '" + n + "' is not a shard count in [1, 256]");
                    System.exit(2);
                }
            }
        }
        List<String> names = policies(rest);
        if (names.isEmpty()) {
            System.err.println("no policy to measure");
            System.exit(2);
        }
        Options opts = new OptionsBuilder()
                .include(PlanBench.class.getName() + "\\.")
                .param("policy", names.toArray(new String[0]))
                .param("shards", shards)
                .resultFormat(ResultFormatType.JSON)
                .result(args[0])
                .build();
        new Runner(opts).run();
    }
}
