//! The shared component vectors: `testdata/hwlb-component-vectors.json` holds, for fixed inputs
//! (hand-picked edge cases and a splitmix64 sweep from a fixed seed), what the Rust systematic
//! sampler (`sampling.rs`), hit-rate tracker (`tracker.rs`) and publication rule (`publish.rs`)
//! produce. The Cassandra plug-in's `HwlbComponentVectorsTest` replays every case through
//! `SystematicSampler`, `HitRateTracker` and `RatePublisher` and asserts the same outputs
//! (indices and publication decisions exactly, rates to 1e-12), as `testdata/hwlb-vectors.json`
//! does for the plan. This test checks the file is what the Rust code produces now; after a
//! deliberate change, regenerate it with
//! `REPLICA_LB_WRITE_VECTORS=1 cargo test --release -p replica-lb-policy --test hwlb_component_vectors`.

use replica_lb_policy::hwlb::{HitRateTracker, HwlbPlan, PlanConfig, RatePublisher, SamplingRow};
use serde_json::{json, Value};
use std::path::PathBuf;

const S: u64 = 1_000_000_000;
const MS: u64 = 1_000_000;

fn vectors_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/hwlb-component-vectors.json")
}

/// splitmix64 from a fixed seed: the same cases on every machine.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform number in [0, 1) on the 2^-53 grid, as `Rng::unit_f64`.
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// The largest uniform number below 1.
const UNIT_MAX: f64 = 1.0 - 1.0 / (1u64 << 53) as f64;

fn next_up(x: f64) -> f64 {
    debug_assert!(x >= 0.0 && x.is_finite());
    f64::from_bits(x.to_bits() + 1)
}

fn next_down(x: f64) -> f64 {
    debug_assert!(x > 0.0 && x.is_finite());
    f64::from_bits(x.to_bits() - 1)
}

// ---------------------------------------------------------------------------------------------
// Systematic sampler
// ---------------------------------------------------------------------------------------------

/// The cumulative sums as the sampler forms them (before the +inf from the last positive entry).
fn cumulative(pp: &[f64]) -> Vec<f64> {
    let mut acc = 0.0;
    pp.iter()
        .map(|&p| {
            acc += p;
            acc
        })
        .collect()
}

/// Units that put a point u/k + i/k exactly on a finite cumulative bound (as the sampler computes
/// the point), with their neighbours one ulp either side; or, where no unit lands exactly, the
/// nearest ones.
fn boundary_units(pp: &[f64], k: usize) -> Vec<f64> {
    let step = 1.0 / k as f64;
    let upper = cumulative(pp);
    let last_positive = pp.iter().rposition(|&p| p > 0.0).unwrap_or(0);
    let mut out = Vec::new();
    for &bound in &upper[..last_positive] {
        for i in 0..k {
            let guess = bound * k as f64 - i as f64;
            if !(0.0..1.0).contains(&guess) {
                continue;
            }
            // Walk a few ulps around the guess for a unit whose point is exactly the bound.
            let mut lo = guess;
            for _ in 0..4 {
                if lo > 0.0 {
                    lo = next_down(lo);
                }
            }
            let mut unit = lo;
            let mut exact = None;
            for _ in 0..9 {
                if unit < 1.0 && unit * step + i as f64 * step == bound {
                    exact = Some(unit);
                    break;
                }
                unit = next_up(unit);
            }
            let centre = exact.unwrap_or(guess);
            out.push(centre);
            if centre > 0.0 {
                out.push(next_down(centre));
            }
            if next_up(centre) < 1.0 {
                out.push(next_up(centre));
            }
        }
    }
    out
}

fn sample(pp: &[f64], k: usize, unit: f64) -> Vec<usize> {
    let row = SamplingRow::new(pp);
    let mut chosen = Vec::with_capacity(k);
    row.sample_each_unit(k, unit, |j| chosen.push(j));
    chosen
}

/// A row of `n` entries, `k` of them at least positive, each at most 1/k, summing to 1: random
/// weights (some zero) capped at 1/k, the rest spread in proportion.
fn capped_row(rng: &mut SplitMix, n: usize, k: usize) -> Vec<f64> {
    let mut w: Vec<f64> = (0..n)
        .map(|_| if rng.below(4) == 0 { 0.0 } else { (1 + rng.below(1000)) as f64 })
        .collect();
    let mut positive = w.iter().filter(|&&x| x > 0.0).count();
    let mut j = 0;
    while positive < k {
        if w[j] == 0.0 {
            w[j] = (1 + rng.below(1000)) as f64;
            positive += 1;
        }
        j += 1;
    }
    let cap = 1.0 / k as f64;
    let mut p = vec![0.0; n];
    let mut capped = vec![false; n];
    loop {
        let free = 1.0 - capped.iter().filter(|&&c| c).count() as f64 * cap;
        let weight: f64 = (0..n).filter(|&j| !capped[j]).map(|j| w[j]).sum();
        let mut more = false;
        for j in 0..n {
            if capped[j] {
                p[j] = cap;
            } else {
                p[j] = if w[j] == 0.0 { 0.0 } else { free * w[j] / weight };
                if p[j] > cap {
                    capped[j] = true;
                    more = true;
                }
            }
        }
        if !more {
            return p;
        }
    }
}

fn sampler_cases() -> Vec<Value> {
    let third = 1.0 / 3.0;
    let mut rows: Vec<(&str, Vec<f64>, Vec<usize>)> = vec![
        ("one replica", vec![1.0], vec![1]),
        ("two halves: entries exactly 1/k at k = 2", vec![0.5, 0.5], vec![1, 2]),
        ("thirds: cumulative 1/3 and 2/3 on the points", vec![third; 3], vec![1, 2, 3]),
        ("quarters: every bound on a point", vec![0.25; 4], vec![1, 2, 3, 4]),
        ("fifths, k = n - 1", vec![0.2; 5], vec![1, 4, 5]),
        ("sixths", vec![1.0 / 6.0; 6], vec![1, 2, 3, 5, 6]),
        ("tenths: the sum is 0.9999999999999999", vec![0.1; 10], vec![1, 2, 3, 5, 9, 10]),
        ("zeros between halves", vec![0.5, 0.0, 0.5, 0.0], vec![1, 2]),
        ("zeros first and last", vec![0.0, 0.5, 0.5, 0.0], vec![1, 2]),
        ("zeros inside", vec![0.5, 0.0, 0.0, 0.5], vec![1, 2]),
        ("only the last", vec![0.0, 0.0, 1.0], vec![1]),
        ("only the middle", vec![0.0, 1.0, 0.0], vec![1]),
        ("only the first", vec![1.0, 0.0, 0.0], vec![1]),
        ("the Rust marginals test", vec![0.1, 0.2, 0.3, 0.15, 0.25], vec![1, 2, 3]),
        ("k = n - 1 with one at 1/k", vec![0.3, 0.3, third, 1.0 - 0.6 - third], vec![1, 2, 3]),
        (
            "the overshoot fix {1/3, 1/3, 1/6, 1/6}",
            vec![third, third, 1.0 / 6.0, 1.0 / 6.0],
            vec![1, 2, 3],
        ),
        ("a tiny first entry", vec![1e-300, 0.5, 0.5], vec![1, 2]),
        ("a subnormal entry", vec![0.5, 5e-324, 0.5], vec![1, 2]),
        ("1/3 not representable, k = 2", vec![third, third, third], vec![2]),
    ];
    // Rows of real plans: the published counterexamples and cases of testdata/hwlb-vectors.json.
    let picked: [(&[f64], &[usize]); 5] = [
        (&[0.0, 0.8, 0.8], &[1, 2]),
        (&[0.0, 0.5, 0.75], &[1, 2]),
        (&[0.0, 0.7777777777777778, 0.7777777777777778, 0.9], &[1, 2, 3]),
        (&[0.95, 0.91667, 0.75, 0.75], &[1, 2, 3]),
        (&[0.66, 0.66, 0.34, 0.32], &[1, 2, 3]),
    ];
    let mut cases = Vec::new();
    let mut rng = SplitMix(0x5eed_0002);
    let mut push = |rng: &mut SplitMix, name: String, pp: &[f64], k: usize| {
        let mut units = vec![0.0, 1.0 / (1u64 << 53) as f64, 0.25, 0.5, next_down(0.5), 0.75, UNIT_MAX];
        units.extend((0..4).map(|_| rng.unit()));
        units.extend(boundary_units(pp, k));
        let mut seen = Vec::new();
        units.retain(|u| {
            let fresh = !seen.contains(&u.to_bits());
            seen.push(u.to_bits());
            fresh
        });
        units.truncate(48);
        let selected: Vec<Vec<usize>> = units.iter().map(|&u| sample(pp, k, u)).collect();
        for (u, s) in units.iter().zip(&selected) {
            assert_eq!(s.len(), k, "{name}, u {u}");
            assert!(s.windows(2).all(|w| w[0] < w[1]), "{name}, u {u}: {s:?} not distinct, increasing");
            assert!(s.iter().all(|&j| pp[j] > 0.0), "{name}, u {u}: {s:?} holds a zero entry");
        }
        cases.push(json!({"name": name, "pp": pp, "k": k, "units": units, "selected": selected}));
    };
    for (name, pp, ks) in rows.drain(..) {
        for k in ks {
            push(&mut rng, format!("{name}, k = {k}"), &pp, k);
        }
    }
    let cfg = PlanConfig::default();
    for (h, ks) in picked {
        for &k in ks {
            let plan = HwlbPlan::compute(h, k, &cfg);
            for c in 0..h.len() {
                push(&mut rng, format!("plan {h:?}, k = {k}, row {c}"), plan.row(c), k);
            }
        }
    }
    // A sweep of plan rows: hit rates of 4 decimals with zeros and ones mixed in.
    for n in 2..=8usize {
        for k in 1..n {
            let h: Vec<f64> = (0..n)
                .map(|_| match rng.below(10) {
                    0 => 0.0,
                    1 => 1.0,
                    _ => rng.below(10_001) as f64 / 10_000.0,
                })
                .collect();
            let plan = HwlbPlan::compute(&h, k, &cfg);
            let c = rng.below(n as u64) as usize;
            push(&mut rng, format!("plan {h:?}, k = {k}, row {c}"), plan.row(c), k);
        }
    }
    // A sweep of capped random rows, up to the 64 replicas the Java mask form holds.
    for &n in &[2usize, 3, 5, 7, 9, 12, 16, 64] {
        for _ in 0..3 {
            let k = 1 + rng.below(n as u64) as usize;
            let pp = capped_row(&mut rng, n, k);
            push(&mut rng, format!("random row, n = {n}, k = {k}"), &pp, k);
        }
    }
    cases
}

// ---------------------------------------------------------------------------------------------
// Hit-rate tracker
// ---------------------------------------------------------------------------------------------

/// One step: record `hits` and `misses`, then advance to `at_ns`.
type Step = (u64, u64, u64);

fn tracker_case(name: &str, tick_ns: u64, window_ns: u64, start_ns: u64, steps: &[Step]) -> Value {
    let mut t = HitRateTracker::new(tick_ns, window_ns, start_ns);
    let out: Vec<Value> = steps
        .iter()
        .map(|&(hits, misses, at_ns)| {
            t.record(hits, misses);
            let advanced = t.advance(at_ns);
            let (h, m) = t.averages_per_s();
            json!({"hits": hits, "misses": misses, "at_ns": at_ns, "advanced": advanced, "rate": t.hit_rate(),
                   "avg_hits_per_s": h, "avg_misses_per_s": m, "next_tick_ns": t.next_tick_ns()})
        })
        .collect();
    json!({"name": name, "tick_ns": tick_ns, "window_ns": window_ns, "start_ns": start_ns, "steps": out})
}

fn tracker_cases() -> Vec<Value> {
    let d = (10 * S, 60 * S);
    let mut cases = vec![
        tracker_case("no rate before the first tick", d.0, d.1, 0, &[(80, 20, 9 * S), (0, 0, 10 * S)]),
        tracker_case("only misses: rate 0", d.0, d.1, 0, &[(0, 50, 10 * S), (0, 30, 20 * S)]),
        tracker_case(
            "no traffic at all: rate 0",
            d.0,
            d.1,
            0,
            &[(0, 0, 10 * S), (0, 0, 20 * S), (0, 0, 90 * S)],
        ),
        tracker_case(
            "the published formula: misses, then a minute of hits",
            d.0,
            d.1,
            0,
            &(1..9)
                .map(|i| if i == 1 { (0, 100, 10 * S) } else { (100, 0, i * 10 * S) })
                .collect::<Vec<Step>>(),
        ),
        tracker_case(
            "three idle ticks in one call",
            S,
            4 * S,
            0,
            &[(10, 10, S), (0, 0, 4 * S), (2, 1, 5 * S)],
        ),
        tracker_case(
            "tick boundaries: 1 ns early, on it, twice on it, 1 ns late",
            d.0,
            d.1,
            123_456_789,
            &[
                (5, 5, 10 * S + 123_456_788),
                (5, 0, 10 * S + 123_456_789),
                (1, 1, 10 * S + 123_456_789),
                (7, 3, 20 * S + 123_456_790),
                (0, 0, 30 * S + 123_456_788),
                (0, 0, 30 * S + 123_456_789),
            ],
        ),
        tracker_case(
            "a long idle gap (1000 ticks), then traffic",
            d.0,
            d.1,
            0,
            &[(90, 10, 10 * S), (0, 0, 10_010 * S), (50, 50, 10_020 * S)],
        ),
        tracker_case(
            "an idle gap that underflows the averages to 0",
            d.0,
            d.1,
            0,
            &[(90, 10, 10 * S), (0, 0, 100_000_010 * S), (1, 3, 100_000_020 * S)],
        ),
        tracker_case(
            "a cold node warming",
            d.0,
            d.1,
            0,
            &(1..=12).map(|i| (i * 8, 100 - i * 8, i * 10 * S)).collect::<Vec<Step>>(),
        ),
        tracker_case(
            "all hits, then all misses",
            d.0,
            d.1,
            0,
            &(1..=10)
                .map(|i| if i <= 4 { (100, 0, i * 10 * S) } else { (0, 100, i * 10 * S) })
                .collect::<Vec<Step>>(),
        ),
        tracker_case(
            "tick longer than the window",
            10 * S,
            S,
            0,
            &[(30, 70, 10 * S), (90, 10, 20 * S), (0, 0, 40 * S)],
        ),
        tracker_case("tick equal to the window", S, S, 0, &[(30, 70, S), (90, 10, 2 * S), (0, 0, 5 * S)]),
        tracker_case(
            "the settings' extremes: 100 ms tick, 1 day window",
            100 * MS,
            86_400_000 * MS,
            0,
            &[
                (3, 1, 100 * MS),
                (0, 9, 200 * MS),
                (5, 5, 250 * MS),
                (2, 0, 300 * MS),
                (0, 0, 10 * S),
            ],
        ),
        tracker_case(
            "huge counts, an odd tick (7 ms)",
            7 * MS,
            60 * S,
            0,
            &[
                (1_000_000_000_000, 300_000_000_000, 7 * MS),
                (999_999_999_999, 1, 14 * MS),
                (0, 0, 70 * MS),
            ],
        ),
        tracker_case(
            "a start near 4e18 ns",
            d.0,
            d.1,
            4_000_000_000_000_000_000,
            &[
                (70, 30, 4_000_000_010_000_000_000),
                (60, 40, 4_000_000_020_000_000_001),
                (0, 0, 4_000_000_055_000_000_000),
            ],
        ),
    ];
    let mut rng = SplitMix(0x5eed_0003);
    let ticks = [10 * S, S, 100 * MS, 7 * MS, 2_500 * MS];
    let windows = [60 * S, 4 * S, S, 30 * S, 86_400 * S];
    for c in 0..24 {
        let tick = ticks[rng.below(ticks.len() as u64) as usize];
        let window = windows[rng.below(windows.len() as u64) as usize];
        let start = rng.below(1_000_000_000_000_000);
        let mut now = start;
        let steps: Vec<Step> = (0..(15 + rng.below(26)))
            .map(|_| {
                now += match rng.below(10) {
                    0 => 0,
                    1 => tick * (2 + rng.below(20)),
                    2 => tick,
                    _ => rng.below(2 * tick),
                };
                let hits = if rng.below(6) == 0 { 0 } else { rng.below(5000) };
                let misses = if rng.below(6) == 0 { 0 } else { rng.below(5000) };
                (hits, misses, now)
            })
            .collect();
        cases.push(tracker_case(&format!("random {c}"), tick, window, start, &steps));
    }
    cases
}

// ---------------------------------------------------------------------------------------------
// Publication rule
// ---------------------------------------------------------------------------------------------

fn publisher_case(name: &str, offers: &[(u64, f64)]) -> Value {
    let mut p = RatePublisher::new();
    let out: Vec<Value> = offers
        .iter()
        .map(|&(at_ns, rate)| {
            let published = p.offer(rate, at_ns);
            json!({"at_ns": at_ns, "rate": rate, "published": published, "last": p.last()})
        })
        .collect();
    json!({"name": name, "offers": out})
}

fn publisher_cases() -> Vec<Value> {
    let mut cases = vec![
        publisher_case(
            "the Rust unit test: first, small too soon, below 0.01, small after 5 s, big at once",
            &[
                (0, 0.5),
                (S, 0.55),
                (6 * S, 0.505),
                (6 * S, 0.52),
                (6 * S + 1, 0.70),
                (7 * S, 0.715),
            ],
        ),
        publisher_case("the first rate, even 0", &[(0, 0.0), (S, 0.0), (60 * S, 0.0), (61 * S, 0.005)]),
        publisher_case(
            "a move of 0.1 in decimal: 0.5 -> 0.6 is 0.09999999999999998, held for 5 s",
            &[(0, 0.5), (S, 0.6), (5 * S - 1, 0.6), (5 * S, 0.6)],
        ),
        publisher_case(
            "a move of 0.1 in decimal: 0.3 -> 0.4 is 0.10000000000000003, at once",
            &[(0, 0.3), (1, 0.4), (2, 0.3)],
        ),
        publisher_case("0 -> 0.1 is exactly 0.1: not big", &[(0, 0.0), (S, 0.1), (5 * S, 0.1)]),
        publisher_case(
            "a move of 0.01 in decimal: 0 -> 0.01 is exactly 0.01, 0.5 -> 0.51 is 0.010000000000000009",
            &[(0, 0.0), (5 * S, 0.01), (10 * S, 0.01), (10 * S, 0.5), (15 * S, 0.51)],
        ),
        publisher_case(
            "exactly 5 s after the last publication, and 1 ns before",
            &[(0, 0.5), (5 * S - 1, 0.52), (5 * S, 0.52), (10 * S - 1, 0.54), (10 * S, 0.54)],
        ),
        publisher_case(
            "time going backwards: small held, big at once",
            &[(10 * S, 0.5), (3 * S, 0.55), (0, 0.7), (S, 0.72), (6 * S, 0.72)],
        ),
        publisher_case(
            "a drift measured from the last published rate, not the last offered",
            &[
                (0, 0.5),
                (6 * S, 0.505),
                (12 * S, 0.509),
                (13 * S, 0.511),
                (19 * S, 0.52),
                (25 * S, 0.529),
            ],
        ),
        publisher_case(
            "falls count as moves",
            &[(0, 0.9), (S, 0.79), (2 * S, 0.77), (8 * S, 0.77), (9 * S, 0.675), (10 * S, 0.674)],
        ),
        publisher_case("0 and 1", &[(0, 1.0), (1, 0.0), (2, 1.0), (3, 0.95), (4, 0.9)]),
        publisher_case(
            "times near 4e18 ns",
            &[
                (4_000_000_000_000_000_000, 0.4),
                (4_000_000_004_999_999_999, 0.42),
                (4_000_000_005_000_000_000, 0.42),
                (4_000_000_005_000_000_001, 0.6),
            ],
        ),
    ];
    let mut rng = SplitMix(0x5eed_0004);
    // Random walks: small, middling and big moves, at random intervals.
    for c in 0..24 {
        let mut now = rng.below(100 * S);
        let mut rate = rng.below(10_001) as f64 / 10_000.0;
        let offers: Vec<(u64, f64)> = (0..(10 + rng.below(31)))
            .map(|i| {
                if i > 0 {
                    now += rng.below(8 * S);
                    let scale = [0.004, 0.03, 0.25][rng.below(3) as usize];
                    rate = (rate + (rng.unit() * 2.0 - 1.0) * scale).clamp(0.0, 1.0);
                }
                (now, rate)
            })
            .collect();
        cases.push(publisher_case(&format!("random walk {c}"), &offers));
    }
    // The tracker feeding the rule, as a node's tick does: each new rate is offered.
    for c in 0..6 {
        let tick = [10 * S, S, 2_500 * MS][c % 3];
        let mut t = HitRateTracker::new(tick, 60 * S, 0);
        let mut offers = Vec::new();
        let mut now = 0;
        let mut warmth = rng.below(100);
        for _ in 0..30 {
            now += tick * if rng.below(8) == 0 { 3 } else { 1 };
            warmth = (warmth + rng.below(20)).saturating_sub(8).min(100);
            let reads = 200 + rng.below(2000);
            let hits = reads * warmth / 100;
            t.record(hits, reads - hits);
            if t.advance(now) {
                offers.push((now, t.hit_rate()));
            }
        }
        cases.push(publisher_case(&format!("tracker rates {c}"), &offers));
    }
    cases
}

fn render(sampler: &[Value], tracker: &[Value], publisher: &[Value]) -> String {
    fn list(text: &mut String, key: &str, cases: &[Value], last: bool) {
        text.push_str(&format!(" \"{key}\": [\n"));
        for (i, case) in cases.iter().enumerate() {
            text.push_str("  ");
            text.push_str(&case.to_string());
            text.push_str(if i + 1 < cases.len() { ",\n" } else { "\n" });
        }
        text.push_str(if last { " ]\n" } else { " ],\n" });
    }
    let mut text = String::from(
        "{\"about\": \"the Rust systematic sampler (selected indices for a row pp, k and the uniform unit in [0, 1), \
         start point unit / k), hit-rate tracker (record hits and misses, then advance to at_ns) and publication rule \
         (offer rate at at_ns) for fixed inputs; the Java SystematicSampler, HitRateTracker and RatePublisher must \
         agree (indices and decisions exactly, rates to 1e-12) (crates/policy/tests/hwlb_component_vectors.rs writes it)\",\n",
    );
    list(&mut text, "sampler", sampler, false);
    list(&mut text, "tracker", tracker, false);
    list(&mut text, "publisher", publisher, true);
    text.push_str("}\n");
    text
}

#[test]
fn the_component_vectors_are_what_the_rust_code_produces() {
    let sampler = sampler_cases();
    let tracker = tracker_cases();
    let publisher = publisher_cases();
    assert!(sampler.len() > 100 && tracker.len() > 30 && publisher.len() > 30);
    let text = render(&sampler, &tracker, &publisher);
    let path = vectors_path();
    if std::env::var_os("REPLICA_LB_WRITE_VECTORS").is_some() {
        std::fs::write(&path, &text).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == text,
        "{} is not what the Rust sampler, tracker and publisher produce now; if one changed on purpose, \
         regenerate it: REPLICA_LB_WRITE_VECTORS=1 cargo test --release -p replica-lb-policy --test hwlb_component_vectors",
        path.display()
    );
}
