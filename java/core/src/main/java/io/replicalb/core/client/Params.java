package io.replicalb.core.client;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * A policy's named parameters, as the Rust {@code policy::params}: each declared with its
 * published default, type and range; overrides come as text (a driver's configuration) and are
 * checked here, so a bad name or value is refused with one line that names it and says what is
 * allowed.
 */
final class Params {
    /** The declared shape of one parameter. */
    static final class Spec {
        final String name;
        final char kind; // 'f' real, 'i' whole, 'b' switch
        final double defaultValue;
        final double min;
        final double max;

        private Spec(String name, char kind, double defaultValue, double min, double max) {
            this.name = name;
            this.kind = kind;
            this.defaultValue = defaultValue;
            this.min = min;
            this.max = max;
        }
    }

    /** A real-number parameter with its default and allowed range. */
    static Spec real(String name, double defaultValue, double min, double max) {
        return new Spec(name, 'f', defaultValue, min, max);
    }

    /** A whole-number parameter with its default and allowed range. */
    static Spec whole(String name, long defaultValue, long min, long max) {
        return new Spec(name, 'i', defaultValue, min, max);
    }

    /** A switch with its default. */
    static Spec flag(String name, boolean defaultValue) {
        return new Spec(name, 'b', defaultValue ? 1 : 0, 0, 1);
    }

    private final Map<String, Double> values = new TreeMap<>();

    private Params() {}

    /**
     * The defaults of {@code specs} with {@code given} applied (null means none).
     *
     * @throws IllegalArgumentException naming the policy, the parameter, the value and what is
     *     allowed
     */
    static Params resolve(String policy, Spec[] specs, Map<String, String> given) {
        Params p = new Params();
        for (Spec s : specs) {
            p.values.put(s.name, s.defaultValue);
        }
        if (given == null) {
            return p;
        }
        for (Map.Entry<String, String> e : new TreeMap<>(given).entrySet()) {
            Spec spec = null;
            for (Spec s : specs) {
                if (s.name.equals(e.getKey())) {
                    spec = s;
                }
            }
            if (spec == null) {
                List<String> known = new ArrayList<>();
                for (Spec s : specs) {
                    known.add(s.name);
                }
                throw new IllegalArgumentException("policy '" + policy + "' has no parameter '" + e.getKey() + "'; its parameters: "
                        + (known.isEmpty() ? "(none)" : String.join(", ", known)));
            }
            p.values.put(spec.name, check(policy, spec, e.getValue()));
        }
        return p;
    }

    private static double check(String policy, Spec spec, String text) {
        String value = text == null ? "" : text.trim();
        String bad = "policy '" + policy + "' parameter '" + spec.name + "' = '" + value + "': ";
        switch (spec.kind) {
            case 'b':
                if (value.equals("true") || value.equals("false")) {
                    return value.equals("true") ? 1 : 0;
                }
                throw new IllegalArgumentException(bad + "must be true or false");
            case 'i':
                try {
                    long v = Long.parseLong(value);
                    if (v >= spec.min && v <= spec.max) {
                        return v;
                    }
                } catch (NumberFormatException e) {
                    // falls through to the message
                }
                throw new IllegalArgumentException(bad + "must be an integer in [" + number(spec.min) + ", " + number(spec.max) + "]");
            default:
                try {
                    double v = Double.parseDouble(value);
                    if (Double.isFinite(v) && v >= spec.min && v <= spec.max && !value.endsWith("d") && !value.endsWith("f")) {
                        return v;
                    }
                } catch (NumberFormatException e) {
                    // falls through to the message
                }
                throw new IllegalArgumentException(bad + "must be a number in [" + number(spec.min) + ", " + number(spec.max) + "]");
        }
    }

    /** A bound as the Rust message prints it: whole numbers without a fraction. */
    private static String number(double x) {
        return x == Math.rint(x) && Math.abs(x) < 1e15 ? Long.toString((long) x) : Double.toString(x);
    }

    /** A real-number parameter. */
    double real(String name) {
        return get(name);
    }

    /** A whole-number parameter. */
    long whole(String name) {
        return (long) get(name);
    }

    /** A switch. */
    boolean flag(String name) {
        return get(name) != 0;
    }

    private double get(String name) {
        Double v = values.get(name);
        if (v == null) {
            throw new IllegalStateException("a policy reads undeclared parameter " + name);
        }
        return v;
    }

    /** Refuses {@code name} = {@code true}: a driver cannot hold a request back (rate control). */
    static void refuseRateControl(String policy, Params p, String name) {
        if (p.flag(name)) {
            throw new IllegalArgumentException("policy '" + policy + "' parameter '" + name
                    + "' = 'true': a driver cannot hold a request back (its query plan is needed at once); allowed: false");
        }
    }
}
