package io.replicalb.core;

/**
 * The deterministic random-number generator every Java policy is handed: xoshiro256++ seeded
 * with SplitMix64, bit for bit the Rust {@code policy::rng::Rng} (rand_xoshiro's
 * {@code Xoshiro256PlusPlus::seed_from_u64}), so a Java policy and a Rust policy given the same
 * seed and the same events draw the same numbers. Not thread-safe: one per caller.
 */
public final class Rng {
    private long s0;
    private long s1;
    private long s2;
    private long s3;

    private Rng(long s0, long s1, long s2, long s3) {
        this.s0 = s0;
        this.s1 = s1;
        this.s2 = s2;
        this.s3 = s3;
    }

    /** A generator whose whole output is fixed by {@code seed} (an unsigned 64-bit value). */
    public static Rng seedFromU64(long seed) {
        long x = seed;
        long[] s = new long[4];
        for (int i = 0; i < 4; i++) {
            x += 0x9e3779b97f4a7c15L;
            long z = x;
            z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
            z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
            s[i] = z ^ (z >>> 31);
        }
        return new Rng(s[0], s[1], s[2], s[3]);
    }

    /** An independent stream derived from this one (Rust's {@code Rng::fork}). */
    public Rng fork() {
        return seedFromU64(nextLong());
    }

    /** 64 uniformly random bits (Rust's {@code next_u64}). */
    public long nextLong() {
        long result = Long.rotateLeft(s0 + s3, 23) + s0;
        long t = s1 << 17;
        s2 ^= s0;
        s3 ^= s1;
        s1 ^= s2;
        s0 ^= s3;
        s2 ^= t;
        s3 = Long.rotateLeft(s3, 45);
        return result;
    }

    /** A uniform double in [0, 1) with 53 bits of precision (Rust's {@code unit_f64}). */
    public double unitDouble() {
        return (nextLong() >>> 11) * 0x1.0p-53;
    }

    /** A uniform integer in {@code 0..n} by Lemire's multiply-shift (Rust's {@code below}). */
    public int below(int n) {
        if (n <= 0) {
            throw new IllegalArgumentException("Rng.below needs a positive bound, got " + n);
        }
        long x = nextLong();
        // The high 64 bits of the unsigned 128-bit product x * n (n is positive).
        long high = Math.multiplyHigh(x, n) + (x < 0 ? n : 0);
        return (int) high;
    }

    /** True with probability {@code p} (Rust's {@code chance}). */
    public boolean chance(double p) {
        return unitDouble() < p;
    }

    /** An exponentially distributed value with the given mean (Rust's {@code exponential}). */
    public double exponential(double mean) {
        return -mean * Math.log(1.0 - unitDouble());
    }
}
