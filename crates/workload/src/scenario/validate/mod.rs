//! Checks a raw scenario and converts it to a [`Scenario`]; every error names its line.

use super::raw::*;
use super::run_spec::parse_item;
use super::*;
use crate::dist::Dist;
use crate::keys::{KeyPattern, KeySpec};
use toml::Spanned;

mod timeline;
mod topology;
mod traffic;

use timeline::{faults, phases};
use topology::{cassandra, cluster, network, node};
use traffic::{clients, feedback, policies, requests, run};

type Res<T> = Result<T, ScenarioError>;

struct Ctx<'a> {
    text: &'a str,
}

impl Ctx<'_> {
    fn line(&self, offset: usize) -> usize {
        self.text[..offset.min(self.text.len())].bytes().filter(|&b| b == b'\n').count() + 1
    }

    fn err<T>(&self, span: std::ops::Range<usize>, message: impl Into<String>) -> Res<T> {
        Err(ScenarioError {
            line: Some(self.line(span.start)),
            message: message.into(),
        })
    }

    fn at<T>(&self, s: &Spanned<T>, message: impl Into<String>) -> ScenarioError {
        ScenarioError {
            line: Some(self.line(s.span().start)),
            message: message.into(),
        }
    }

    fn int(&self, v: &Spanned<i64>, name: &str, min: i64, max: i64) -> Res<i64> {
        let x = *v.get_ref();
        if x < min || x > max {
            return self.err(v.span(), format!("{name} = {x}: must be an integer in [{min}, {max}]"));
        }
        Ok(x)
    }

    fn num(&self, v: &Spanned<f64>, name: &str, min: f64, max: f64) -> Res<f64> {
        let x = *v.get_ref();
        if !x.is_finite() || x < min || x > max {
            return self.err(v.span(), format!("{name} = {x}: must be a number in [{min}, {max}]"));
        }
        Ok(x)
    }

    fn opt_num(&self, v: &Option<Spanned<f64>>, name: &str, min: f64, max: f64, default: f64) -> Res<f64> {
        match v {
            Some(v) => self.num(v, name, min, max),
            None => Ok(default),
        }
    }

    fn dist(&self, span: std::ops::Range<usize>, name: &str, d: &str, mean_us: f64, sigma: Option<f64>, shape: Option<f64>) -> Res<Dist> {
        Dist::new(d, mean_us, sigma, shape).or_else(|e| self.err(span, format!("{name}: {e}")))
    }

    fn cl(&self, v: &Option<Spanned<String>>, default: ConsistencyLevel) -> Res<ConsistencyLevel> {
        match v {
            Some(s) => ConsistencyLevel::parse(s.get_ref()).map_err(|e| self.at(s, e)),
            None => Ok(default),
        }
    }
}

const MS: f64 = 1e6;
const US: f64 = 1e3;
const S: f64 = 1e9;

/// Parses and checks a scenario file. `default_name` (the file stem) names it when the file
/// does not.
pub fn parse(text: &str, default_name: &str) -> Result<Scenario, ScenarioError> {
    let raw: RawScenario = toml::from_str(text).map_err(|e| {
        let cx = Ctx { text };
        ScenarioError {
            line: e.span().map(|s| cx.line(s.start)),
            message: e.message().trim().replace('\n', " "),
        }
    })?;
    let cx = Ctx { text };
    let cluster = cluster(&cx, &raw)?;
    let node = node(&cx, raw.node.get_ref())?;
    let network = network(&cx, &raw, &cluster)?;
    let run = run(&cx, &raw)?;
    let clients = clients(&cx, raw.clients.get_ref(), &cluster)?;
    let requests = requests(&cx, &raw, &cluster, &clients)?;
    let feedback = feedback(&cx, &raw)?;
    let policy = policies(&cx, &raw, cluster.routing)?;
    let phases = phases(&cx, &raw, run.duration_s)?;
    let faults = faults(&cx, &raw, &cluster, &run)?;
    let cassandra = cassandra(&cx, &raw)?;
    let seed = match &raw.seed {
        Some(s) => cx.int(s, "seed", 0, i64::MAX)? as u64,
        None => 1,
    };
    let name = match &raw.name {
        Some(n) if n.get_ref().is_empty() || n.get_ref().contains(['/', '\\']) => {
            return Err(cx.at(n, "name must be non-empty and contain no path separator"));
        }
        Some(n) => n.get_ref().clone(),
        None => default_name.to_string(),
    };
    Ok(Scenario {
        name,
        description: raw.description.clone().unwrap_or_default(),
        seed,
        cluster,
        node,
        network,
        clients,
        requests,
        run,
        feedback,
        policy,
        phases,
        faults,
        cassandra,
        edits: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINIMAL: &str = r#"
name = "t"
[cluster]
nodes = 3
replication_factor = 3
[node]
cpu_concurrency = 4
cpu_service = { dist = "exponential", mean_us = 100 }
[clients]
count = 2
arrival = "poisson"
rate_per_s = 1000
keys = { pattern = "uniform", count = 1000 }
[run]
duration_s = 5
[policy]
coordinator = "naive"
"#;

    fn err_of(text: &str) -> ScenarioError {
        parse(text, "x").unwrap_err()
    }

    #[test]
    fn minimal_parses() {
        let s = parse(MINIMAL, "x").unwrap();
        assert_eq!(s.name, "t");
        assert_eq!(s.cluster.nodes, 3);
        assert_eq!(s.policy.client.name(), "random");
    }

    #[test]
    fn unknown_key_names_its_line() {
        let text = MINIMAL.replace("count = 2\n", "count = 2\nbogus = 1\n");
        let e = err_of(&text);
        assert_eq!(e.line, Some(11), "{e}");
        assert!(e.message.contains("bogus"), "{e}");
    }

    #[test]
    fn impossible_topology_names_its_line() {
        let e = err_of(&MINIMAL.replace("replication_factor = 3", "replication_factor = 4"));
        assert_eq!(e.line, Some(5), "{e}");
        assert!(e.message.contains("more than the 3 nodes"), "{e}");
        let e = err_of(&MINIMAL.replace("replication_factor = 3", "replication_factor = 3\nvnodes = 0"));
        assert_eq!(e.line, Some(6), "{e}");
        assert!(e.message.contains("cluster.vnodes"), "{e}");
        let e = err_of(&MINIMAL.replace("replication_factor = 3", "replication_factor = 3\nplacement = \"nts\""));
        assert_eq!(e.line, Some(6), "{e}");
        assert!(e.message.contains("placement 'nts' is not one of: ring, one-per-zone"), "{e}");
        let s = parse(
            &MINIMAL.replace("replication_factor = 3", "replication_factor = 3\nvnodes = 16"),
            "x",
        )
        .unwrap();
        assert_eq!(s.cluster.vnodes, 16);
    }

    #[test]
    fn the_cassandra_node_keys_are_checked() {
        let disk = "cpu_service = { dist = \"exponential\", mean_us = 100 }\ndisk_concurrency = 1\ndisk_service = { dist = \"exponential\", mean_us = 160 }\n";
        let with = |extra: &str| {
            MINIMAL.replace(
                "cpu_service = { dist = \"exponential\", mean_us = 100 }\n",
                &format!("{disk}{extra}"),
            )
        };
        let s = parse(
            &with("disk_iops = 220\ndisk_reads_per_miss = 1.2\nindex_pages = 390\nread_threads = 8\n"),
            "x",
        )
        .unwrap();
        let t = s.node.disk_throttle.unwrap();
        assert_eq!(
            (t.reads_per_s, t.burst_ns),
            (220.0, 100e6),
            "the burst defaults to blk-throttle's slice"
        );
        assert_eq!(
            (s.node.disk_reads_per_miss, s.node.index_pages, s.node.read_threads),
            (1.2, Some(390), Some(8))
        );
        let plain = parse(MINIMAL, "x").unwrap();
        assert_eq!(
            (plain.node.disk_throttle, plain.node.disk_reads_per_miss, plain.node.read_threads),
            (None, 1.0, None)
        );
        let cases = [
            (
                MINIMAL.replace("cpu_concurrency = 4", "cpu_concurrency = 4\ndisk_iops = 220"),
                "node.disk_iops needs a disk stage",
            ),
            (with("disk_burst_ms = 50\n"), "node.disk_burst_ms needs node.disk_iops too"),
            (with("disk_iops = 0\n"), "node.disk_iops = 0: must be a number in"),
            (
                with("disk_iops = 220\ndisk_burst_ms = -1\n"),
                "node.disk_burst_ms = -1: must be a number in",
            ),
            (
                with("disk_reads_per_miss = 0.5\n"),
                "node.disk_reads_per_miss = 0.5: must be a number in [1, 16]",
            ),
            (
                MINIMAL.replace("cpu_concurrency = 4", "cpu_concurrency = 4\nindex_pages = 10"),
                "node.index_pages needs a disk stage",
            ),
            (with("index_pages = 0\n"), "node.index_pages = 0: must be an integer in"),
            (
                MINIMAL.replace("cpu_concurrency = 4", "cpu_concurrency = 4\nread_threads = 0"),
                "node.read_threads = 0: must be an integer in",
            ),
            (
                MINIMAL.replace("duration_s = 5", "duration_s = 5\nrestart_start_ms = -5"),
                "run.restart_start_ms = -5: must be a number in",
            ),
        ];
        for (text, want) in cases {
            let e = err_of(&text);
            assert!(e.message.contains(want), "{e}, wanted {want}");
            assert!(e.line.is_some(), "{e}");
        }
    }

    #[test]
    fn bad_values_name_their_line() {
        let e = err_of(&MINIMAL.replace("\"exponential\"", "\"gaussian\""));
        assert_eq!(e.line, Some(8), "{e}");
        let e = err_of(&MINIMAL.replace("coordinator = \"naive\"", "coordinator = \"nope\""));
        assert_eq!(e.line, Some(17), "{e}");
        let e = err_of(&MINIMAL.replace("rate_per_s = 1000", "rate_per_s = -1"));
        assert_eq!(e.line, Some(12), "{e}");
        let e = err_of(&format!("{MINIMAL}[[fault]]\nkind = \"restart\"\nnode = 7\nduration_s = 3\n"));
        assert!(matches!(e.line, Some(18 | 19)), "{e}");
        assert!(e.message.contains("node 7"), "{e}");
    }

    /// `two` with one replica per key cannot be met: refused at its line, not run as `one`.
    #[test]
    fn a_consistency_above_the_replication_factor_is_refused() {
        let one_replica = MINIMAL.replace("replication_factor = 3", "replication_factor = 1");
        let with = |cl: &str| format!("{one_replica}[requests]\nconsistency = \"{cl}\"\n");
        let e = err_of(&with("two"));
        assert_eq!(e.line, Some(19), "{e}");
        assert!(
            e.message.contains("requests.consistency = \"two\" needs 2 replicas") && e.message.contains("replication_factor = 1"),
            "{e}"
        );
        for fine in ["one", "quorum", "all"] {
            parse(&with(fine), "x").unwrap();
        }
        let e = err_of(&format!("{one_replica}[requests]\nwarmup_consistency = \"two\"\n"));
        assert!(e.message.contains("requests.warmup_consistency"), "{e}");
    }

    #[test]
    fn the_cassandra_section_is_checked() {
        let s = parse(MINIMAL, "x").unwrap();
        assert_eq!(s.cassandra, CassandraModel::default());
        let with = |body: &str| format!("{MINIMAL}[cassandra]\n{body}");
        let s = parse(
            &with("row_cache_mb = 24\nchunk_cache_mb = 0\npage_cache_mb = 16\ndisk_read_iops = 300\nrow_cache_save_period_s = 10\ncache_load_timeout_s = 600\n"),
            "x",
        )
        .unwrap();
        assert_eq!(
            s.cassandra,
            CassandraModel {
                heap_mb: 768,
                row_cache_mb: 24,
                chunk_cache_mb: 0,
                disk: Some((16, 300)),
                row_cache_save_period_s: 10,
                cache_load_timeout_s: 600,
            }
        );
        let e = err_of(&with("page_cache_mb = 16\n"));
        assert!(e.message.contains("needs cassandra.disk_read_iops"), "{e}");
        assert_eq!(e.line, Some(19), "{e}");
        let e = err_of(&with("cache_load_timeout_s = 0\n"));
        assert!(e.message.contains("cassandra.cache_load_timeout_s = 0"), "{e}");
        let e = err_of(&with("heap_mb = 100\n"));
        assert!(e.message.contains("cassandra.heap_mb = 100"), "{e}");
        let e = err_of(&with("row_cache = 1\n"));
        assert!(e.message.contains("row_cache"), "{e}");
    }

    #[test]
    fn shadow_read_fraction_is_a_share() {
        let with = |v: &str| format!("{MINIMAL}[requests]\nshadow_read_fraction = {v}\n");
        assert_eq!(parse(&with("0.1"), "x").unwrap().requests.shadow_read_fraction, 0.1);
        assert_eq!(parse(MINIMAL, "x").unwrap().requests.shadow_read_fraction, 0.0);
        for bad in ["1.5", "-0.1"] {
            let e = err_of(&with(bad));
            assert_eq!(e.line, Some(19), "{e}");
            assert!(e.message.contains("shadow_read_fraction"), "{e}");
        }
    }

    /// A large cluster: zones cycled over the nodes, limits past the old 64 nodes and 2^24
    /// keys, and the limits' messages naming the value and what is allowed.
    #[test]
    fn large_clusters_and_key_spaces_parse() {
        let big = MINIMAL
            .replace(
                "nodes = 3\n",
                "nodes = 2000\nzones = [\"a\", \"b\", \"c\"]\nplacement = \"one-per-zone\"\n",
            )
            .replace("count = 1000 }", "count = 1000000000 }");
        let s = parse(&big, "x").unwrap();
        assert_eq!(s.cluster.nodes, 2000);
        assert_eq!(s.cluster.zone_names, ["a", "b", "c"]);
        assert_eq!(&s.cluster.node_zone[..4], [0, 1, 2, 0]);
        assert_eq!(s.clients.keys.count, 1_000_000_000);
        let e = err_of(&MINIMAL.replace("nodes = 3\n", "nodes = 5000\n"));
        assert!(e.message.contains("cluster.nodes = 5000") && e.message.contains("4096"), "{e}");
        let e = err_of(&MINIMAL.replace("nodes = 3\n", "nodes = 3\nzones = [\"a\", \"b\", \"c\", \"d\"]\n"));
        assert!(e.message.contains("4 zones for 3 nodes"), "{e}");
    }

    /// A fault on a zone takes its nodes in id order; `stagger_s` spaces them out.
    #[test]
    fn a_fault_names_a_zone_and_staggers_its_nodes() {
        let text = MINIMAL.replace("nodes = 3\n", "nodes = 6\nzones = [\"a\", \"b\"]\n")
            + "[[fault]]\nkind = \"restart\"\nzone = \"b\"\nat_s = 1\nduration_s = 0.5\nstagger_s = 1\n";
        let s = parse(&text, "x").unwrap();
        assert_eq!(s.faults[0].nodes, [1, 3, 5]);
        assert_eq!(s.faults[0].stagger_ns, 1_000_000_000);
        let plan = crate::faults::FaultPlan::new(&s, 0, 10_000_000_000);
        let downs: Vec<(u64, u16)> = plan
            .actions
            .iter()
            .filter(|a| matches!(a.action, crate::faults::Action::Down { .. }))
            .map(|a| (a.t_ns / 1_000_000, a.node))
            .collect();
        assert_eq!(downs, [(1_000, 1), (2_000, 3), (3_000, 5)]);
        let e = err_of(&text.replace("zone = \"b\"", "zone = \"q\""));
        assert!(e.message.contains("zone 'q'") && e.message.contains("a, b"), "{e}");
        let e = err_of(&text.replace("zone = \"b\"", "zone = \"b\"\nnode = 1"));
        assert!(e.message.contains("one of node, nodes or zone"), "{e}");
    }

    /// A restart's `cache`: `empty` by default, `kept` carried to its crash action; anything
    /// else, or on another kind of fault, refused naming the value.
    #[test]
    fn a_restarts_cache_is_checked() {
        use crate::faults::{Action, FaultPlan};
        let with = |body: &str| format!("{MINIMAL}[[fault]]\nkind = \"restart\"\nnode = 1\nat_s = 1\nduration_s = 1\n{body}");
        let crash = |s: &Scenario| {
            let plan = FaultPlan::new(s, 0, 10_000_000_000);
            plan.actions.iter().find_map(|a| match a.action {
                Action::Down { cache } => Some(cache),
                _ => None,
            })
        };
        assert_eq!(crash(&parse(&with(""), "x").unwrap()), Some(RestartCache::Empty));
        let kept = parse(&with("cache = \"kept\"\n"), "x").unwrap();
        assert_eq!(kept.faults[0].kind, FaultKind::Restart { cache: RestartCache::Kept });
        assert_eq!(crash(&kept), Some(RestartCache::Kept));
        let e = err_of(&with("cache = \"warm\"\n"));
        assert!(e.message.contains("cache = \"warm\" is not one of: empty, kept"), "{e}");
        let e = err_of(&with("cache = \"kept\"\n").replace("\"restart\"", "\"pause\""));
        assert!(e.message.contains("fault pause: cache is a restart's"), "{e}");
    }

    /// A restart's gate: `warm` plans only its first node (the engine paces the rest),
    /// `watch` the fixed interval; each gate field is checked, its message naming the value.
    #[test]
    fn a_rolling_restart_gate_is_checked() {
        use crate::faults::{Action, FaultPlan};
        let base = MINIMAL.replace("nodes = 3\n", "nodes = 6\nzones = [\"a\", \"b\"]\n");
        let with = |body: &str| format!("{base}[[fault]]\nkind = \"restart\"\nzone = \"b\"\nat_s = 1\nduration_s = 0.5\n{body}");
        let downs = |s: &Scenario| -> Vec<(u64, u16)> {
            let plan = FaultPlan::new(s, 0, 10_000_000_000);
            let d = plan.actions.iter().filter(|a| matches!(a.action, Action::Down { .. }));
            d.map(|a| (a.t_ns / 1_000_000, a.node)).collect()
        };
        let s = parse(&with("gate = \"warm\"\n"), "x").unwrap();
        let g = s.faults[0].gate.unwrap();
        assert_eq!(
            (g.mode, g.rule.within(), g.window_s, g.timeout_ns),
            (GateMode::Warm, 0.2, 30, 300_000_000_000)
        );
        assert_eq!(downs(&s), [(1_000, 1)], "the warm gate plans the first restart only");
        let plan = FaultPlan::new(&s, 0, 10_000_000_000);
        assert_eq!(
            (plan.rolls.len(), plan.rolls[0].nodes.clone(), plan.rolls[0].down_ns),
            (1, vec![1, 3, 5], 500_000_000)
        );
        let s = parse(
            &with("gate = \"watch\"\nstagger_s = 2\ngate_within = 0.5\ngate_window_s = 5\ngate_timeout_s = 20\n"),
            "x",
        )
        .unwrap();
        let g = s.faults[0].gate.unwrap();
        assert_eq!(
            (g.mode, g.rule.within(), g.window_s, g.timeout_ns),
            (GateMode::Watch, 0.5, 5, 20_000_000_000)
        );
        assert_eq!(downs(&s), [(1_000, 1), (3_000, 3), (5_000, 5)], "watched: the fixed interval");
        assert!(parse(MINIMAL, "x").unwrap().faults.is_empty());
        for (body, says) in [
            ("gate = \"cold\"\n", "fault restart: gate = \"cold\" is not one of: warm, watch"),
            (
                "gate_within = 0.3\n",
                "fault restart: gate_within needs gate = \"warm\" or \"watch\"",
            ),
            ("gate_timeout_s = 9\nstagger_s = 1\n", "fault restart: gate_timeout_s needs gate"),
            (
                "gate = \"warm\"\ngate_within = 11\n",
                "fault restart: gate_within 11: must be a number from 0 to 10",
            ),
            (
                "gate = \"warm\"\ngate_within = -0.1\n",
                "gate_within -0.1: must be a number from 0 to 10",
            ),
            (
                "gate = \"warm\"\ngate_window_s = 0\n",
                "gate_window_s = 0 must be a whole number of seconds from 1 to 3600",
            ),
            (
                "gate = \"warm\"\ngate_timeout_s = -1\n",
                "gate_timeout_s = -1 must be a number of seconds above 0",
            ),
            ("gate = \"warm\"\nstagger_s = 3\n", "paces the restarts itself: drop stagger_s = 3"),
            ("gate = \"watch\"\n", "gate = \"watch\" needs stagger_s"),
            ("gate = \"warm\"\nevery_s = 5\n", "gate = \"warm\" cannot repeat: drop every_s = 5"),
        ] {
            let e = err_of(&with(body));
            assert!(e.message.contains(says) && e.line.is_some(), "{body}: {e}");
            assert!(!e.message.contains('\n'), "one line: {e}");
        }
        let e = err_of(&with("gate = \"warm\"\n").replace("kind = \"restart\"", "kind = \"pause\""));
        assert!(
            e.message
                .contains("fault pause: gate = \"warm\" is for a rolling restart (kind = \"restart\") only"),
            "{e}"
        );
        let e = err_of(&with("gate = \"warm\"\n").replace("zone = \"b\"", "node = 1"));
        assert!(
            e.message.contains("needs 2 nodes or more to restart one after another, got 1"),
            "{e}"
        );
        let early = with("gate = \"warm\"\n")
            .replace("duration_s = 5\n", "duration_s = 5\nwarmup_s = 5\n")
            .replace("at_s = 1\n", "at_s = -1\n");
        let e = err_of(&early);
        assert!(
            e.message.contains("gate = \"warm\" needs at_s >= 0") && e.message.contains("got -1"),
            "{e}"
        );
    }
}
