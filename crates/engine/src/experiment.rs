//! A scenario run on a real cluster of either engine: its runs resolved once from the
//! `--policy` items for the engine ([`Experiment::new`]), what its runs share started once
//! ([`Experiment::start`]), then each run in turn ([`Started::run`]). The CLI chooses the
//! engine and writes what comes back; it never asks which engine runs.
//!
//! - The node cluster: every run a fresh cluster of the project's nodes running the item's
//!   coordinator policy, with the load generator running its client policy
//!   ([`replica_lb_experiment::run_real`]).
//! - Cassandra: one cluster for every run, each a client policy through the scylla driver and a
//!   coordinator policy inside Cassandra ([`replica_lb_experiment::cassandra`]).

use replica_lb_cassandra::config::NodeSettings;
use replica_lb_cassandra::plugin::PluginSettings;
use replica_lb_cassandra::Engine;
use replica_lb_experiment::cassandra::{self as cass_exp, CassandraRun};
use replica_lb_experiment::plan::{policy_run, real_plan, refuse_kept_caches};
pub use replica_lb_experiment::tables::Tables;
use replica_lb_experiment::{PolicyRun, RealPlan, RunOptions};
use replica_lb_launcher::{NodeCommand, CLUSTER_FILE};
use replica_lb_metrics::RunMetrics;
use replica_lb_workload::scenario::Speculative;
use replica_lb_workload::{RunSpec, Scenario};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Why an experiment cannot be set up (one line naming the bad value).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SetupError {
    /// A `--policy` item the engine cannot run.
    Policy(String),
    /// A scenario setting the engine cannot run.
    Scenario(String),
}

/// One run of an experiment.
#[derive(Clone, Debug)]
pub struct Run {
    /// Its label (the item as given; summary's `policy`).
    pub label: String,
    /// Its directory under the experiment's output.
    pub dir: String,
    /// The same run in the simulator, labelled and placed as this one.
    pub sim: RunSpec,
}

/// What the runs of each engine need.
enum Runs {
    Node(Vec<PolicyRun>),
    Cassandra {
        runs: Vec<CassandraRun>,
        settings: NodeSettings,
        plugin: Option<PluginSettings>,
        row_cache: bool,
    },
}

/// A scenario's runs on one engine, resolved and checked.
pub struct Experiment {
    engine: Engine,
    plan: RealPlan,
    runs: Vec<Run>,
    by_engine: Runs,
}

impl Experiment {
    /// Resolves `items` (comma-separated; `None`: the scenario's own list) for `engine` and
    /// plans `scenario` on it; settings only the simulator models are listed in `notes`.
    pub fn new(engine: Engine, scenario: &Scenario, items: Option<&str>, notes: &mut Vec<String>) -> Result<Experiment, SetupError> {
        match engine {
            Engine::Node => Self::node(scenario, items, notes),
            Engine::Cassandra => Self::cassandra(scenario, items, notes),
        }
    }

    fn node(scenario: &Scenario, items: Option<&str>, notes: &mut Vec<String>) -> Result<Experiment, SetupError> {
        let specs = replica_lb_workload::parse_list(items, scenario).map_err(SetupError::Policy)?;
        let plan = real_plan(scenario, notes).map_err(SetupError::Scenario)?;
        refuse_kept_caches(scenario).map_err(SetupError::Scenario)?;
        let policies = specs.iter().map(policy_run).collect::<Result<_, _>>().map_err(SetupError::Policy)?;
        let runs = specs
            .into_iter()
            .map(|s| Run {
                label: s.label.clone(),
                dir: s.dir.clone(),
                sim: s,
            })
            .collect();
        Ok(Experiment {
            engine: Engine::Node,
            plan,
            runs,
            by_engine: Runs::Node(policies),
        })
    }

    fn cassandra(scenario: &Scenario, items: Option<&str>, notes: &mut Vec<String>) -> Result<Experiment, SetupError> {
        let names: Vec<String> = match items {
            Some(list) => list.split(',').map(|s| s.trim().to_string()).collect(),
            None => scenario.policy.compare_items(),
        };
        let policies = cass_exp::runs(&names, scenario).map_err(SetupError::Policy)?;
        // Cassandra's coordinators retry slow replicas on their own (speculative_retry = 99p);
        // the rest of the plan is the node cluster's.
        let mut plannable = scenario.clone();
        plannable.requests.speculative = Speculative::None;
        let plan = real_plan(&plannable, notes).map_err(SetupError::Scenario)?;
        cass_exp::check_faults(&plan, &scenario.cassandra).map_err(SetupError::Scenario)?;
        cass_exp::check_restart_caches(scenario).map_err(SetupError::Scenario)?;
        let plugin = match cass_exp::needs_plugin(&policies) {
            true => {
                let hwlb = scenario.policy.params_of(replica_lb_policy::hwlb::policy::NAME);
                let unified = scenario.policy.params_of(replica_lb_policy::unified::policy::NAME);
                Some(cass_exp::plugin_settings(&plan, &hwlb, &unified).map_err(SetupError::Scenario)?)
            }
            false => None,
        };
        let runs = policies
            .iter()
            .map(|r| Run {
                label: r.label.clone(),
                dir: r.label.clone(),
                sim: r.sim.clone(),
            })
            .collect();
        Ok(Experiment {
            engine: Engine::Cassandra,
            plan,
            runs,
            by_engine: Runs::Cassandra {
                runs: policies,
                settings: cass_exp::node_settings(&scenario.cassandra),
                plugin,
                row_cache: scenario.cassandra.row_cache_mb > 0,
            },
        })
    }

    /// Its engine.
    pub fn engine(&self) -> Engine {
        self.engine
    }

    /// Its runs, in order.
    pub fn runs(&self) -> &[Run] {
        &self.runs
    }

    /// The same runs in the simulator.
    pub fn sim_specs(&self) -> Vec<RunSpec> {
        self.runs.iter().map(|r| r.sim.clone()).collect()
    }

    /// What ran where, for the report.
    pub fn description(&self) -> &'static str {
        match self.engine {
            Engine::Node => "Real cluster on this machine",
            Engine::Cassandra => "Apache Cassandra on this machine, through the scylla driver",
        }
    }

    /// The tables that sum it up: the cache tables where the nodes count their cache (always on
    /// the node cluster; on Cassandra with the plug-in or a row cache).
    pub fn tables(&self) -> Tables {
        match &self.by_engine {
            Runs::Node(_) => Tables::Cache,
            Runs::Cassandra { plugin, row_cache, .. } if plugin.is_some() || *row_cache => Tables::CacheAndRolling,
            Runs::Cassandra { .. } => Tables::Tail,
        }
    }

    /// A scratch directory for its clusters (kept only when the user gives one).
    pub fn scratch_dir(&self) -> PathBuf {
        let what = match self.engine {
            Engine::Node => "experiment",
            Engine::Cassandra => "cassandra",
        };
        std::env::temp_dir().join(format!("replica-lb-{what}-{}", std::process::id()))
    }

    /// Starts what its runs share, with the clusters in `root`: the Cassandra cluster, its keys
    /// written and flushed (stopped when the result is dropped); the node cluster starts one
    /// of its own per run.
    pub fn start(&self, root: &Path, progress: &mut dyn FnMut(&str)) -> Result<Started<'_>, String> {
        let shared = match &self.by_engine {
            Runs::Node(_) => Shared::Node(NodeCommand::current_exe_node().map_err(|e| e.to_string())?),
            Runs::Cassandra { settings, plugin, .. } => {
                let down = CassandraDown::watch(root);
                cass_exp::prepare(&self.plan, settings.clone(), plugin.as_ref(), root, progress)?;
                Shared::Cassandra { _down: down }
            }
        };
        Ok(Started {
            exp: self,
            root: root.to_path_buf(),
            shared,
        })
    }
}

/// What an engine's runs share once started.
enum Shared {
    /// How to start a node process.
    Node(NodeCommand),
    /// The one Cassandra cluster, stopped when dropped.
    Cassandra { _down: CassandraDown },
}

/// An experiment whose shared parts are up.
pub struct Started<'e> {
    exp: &'e Experiment,
    root: PathBuf,
    shared: Shared,
}

impl Started<'_> {
    /// Runs the experiment's run `i` and returns what it measured.
    pub fn run(&mut self, i: usize, progress: &mut dyn FnMut(&str)) -> Result<RunMetrics, String> {
        let run = self.exp.runs.get(i).ok_or_else(|| format!("the experiment has no run {i}"))?;
        let measured = match (&self.exp.by_engine, &self.shared) {
            (Runs::Node(policies), Shared::Node(command)) => {
                let mut opts = RunOptions {
                    cluster_dir: self.root.join(&run.dir),
                    command: command.clone(),
                    progress,
                };
                replica_lb_experiment::run_real(&self.exp.plan, &policies[i], &mut opts)
            }
            (Runs::Cassandra { runs, .. }, Shared::Cassandra { .. }) => {
                cass_exp::run_policy(&self.exp.plan, &self.root, &runs[i], progress)
            }
            _ => Err("started for the other engine".to_string()),
        };
        measured.map_err(|e| format!("{}: {e}", run.label))
    }
}

/// Stops the experiment's Cassandra cluster when dropped, whatever happened, and when the
/// process is interrupted before.
struct CassandraDown(PathBuf);

impl CassandraDown {
    /// The cluster that will be in `dir`, watched from now on.
    fn watch(dir: &Path) -> Self {
        replica_lb_experiment::watch_cassandra_dir(dir);
        CassandraDown(dir.to_path_buf())
    }
}

impl Drop for CassandraDown {
    fn drop(&mut self) {
        if self.0.join(CLUSTER_FILE).exists() {
            let _ = replica_lb_cassandra::down(&self.0, Duration::from_secs(20));
        }
        replica_lb_experiment::forget_cassandra_dir(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(name: &str) -> Scenario {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../scenarios/{name}.toml"));
        replica_lb_workload::scenario_file::load(&path, &[]).unwrap()
    }

    #[test]
    fn each_engine_resolves_its_runs_once() {
        let sc = scenario("cold-restart-real");
        let exp = Experiment::new(Engine::Node, &sc, Some("naive,c3/hwlb"), &mut Vec::new()).unwrap();
        let runs: Vec<(&str, &str, &str, &str)> = exp
            .runs()
            .iter()
            .map(|r| (r.label.as_str(), r.dir.as_str(), r.sim.client.name(), r.sim.coordinator.name()))
            .collect();
        assert_eq!(runs, [("naive", "naive", "random", "naive"), ("c3/hwlb", "c3+hwlb", "c3", "hwlb")]);
        assert_eq!(exp.tables(), Tables::Cache);

        let sc = scenario("gc-pause-cassandra");
        let exp = Experiment::new(Engine::Cassandra, &sc, None, &mut Vec::new()).unwrap();
        let labels: Vec<&str> = exp.runs().iter().map(|r| r.label.as_str()).collect();
        assert_eq!(labels, ["dynamic-snitch", "naive", "hwlb", "unified"]);
        assert_eq!(exp.tables(), Tables::CacheAndRolling, "the plug-in counts the cache");
        let only_shipped = Experiment::new(Engine::Cassandra, &sc, Some("c3"), &mut Vec::new()).unwrap();
        assert_eq!(only_shipped.tables(), Tables::Tail);
    }

    #[test]
    fn what_an_engine_cannot_run_is_refused_naming_it() {
        let sc = scenario("cold-restart-real");
        let e = Experiment::new(Engine::Node, &sc, Some("nonesuch"), &mut Vec::new()).err().unwrap();
        assert!(matches!(&e, SetupError::Policy(m) if m.contains("nonesuch")), "{e:?}");
        let sc = scenario("gc-pause-cassandra");
        let e = Experiment::new(Engine::Cassandra, &sc, Some("c3/c3"), &mut Vec::new())
            .err()
            .unwrap();
        assert!(
            matches!(&e, SetupError::Policy(m) if m.contains("does not run inside Cassandra")),
            "{e:?}"
        );
    }
}
