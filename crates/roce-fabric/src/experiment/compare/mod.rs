//! Comparing variants: a scenario, overrides of its settings, and the grid of runs `roce sim
//! compare` makes of them (congestion controls × parameter values × seeds), then one row per
//! variant with the mean and spread of its runs' metrics.
//!
//! Runs are [`Scenario`]s, each deterministic on its own; [`run_grid`] runs them one per thread
//! and hands results back in grid order, so a grid's table is the same however it was run.
//!
//! Overrides name a setting by its path in the scenario file (`switch.ecn.kmin_bytes=50000`,
//! `duration_us=5ms` is not understood: values are TOML values, `duration_us=5000`), or a
//! congestion-control parameter as `cc.NAME=VALUE` (`cc.rpg_ai_rate=40`, as `roce cc show` lists
//! them), which becomes an entry of the scenario's `cc_params`.
//!
//! The table ([`metrics`]): goodput, bottleneck utilisation, Jain, queue mean and p99, PFC
//! frames, ECN marks, CNPs, retransmissions, failed flows, the FCT slowdown percentiles when the
//! flows are finite, and step times and slowdowns when the scenario runs collectives; per
//! metric the mean, standard deviation, extremes and 95% confidence interval over the seeds
//! ([`Stat`]), as text or CSV ([`table()`], [`table_csv`]).

use std::collections::HashMap;

use serde::Serialize;

use crate::experiment::scenario::{Scenario, ScenarioError};
use crate::experiment::summary::RunSummary;
use crate::limits::bounds::{at_most, clip_quoted, LimitError};
use roce_proto::cc::Rate;

pub mod metrics;
pub mod stat;
pub mod table;

pub use metrics::{metrics_of, Metric, COLLECTIVE_METRICS, FCT_METRICS, METRICS};
pub use stat::Stat;
pub use table::{csv_field, table, table_csv};

/// Why a grid could not be built.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    /// An override is not `PATH=VALUE` (or `PATH=V1,V2` for a parameter).
    #[error("{0:?} is not PATH=VALUE (e.g. switch.ecn.kmin_bytes=50000 or cc.rpg_ai_rate=40)")]
    Syntax(String),
    /// The path crosses a setting that is not a table.
    #[error("{path}: {what} is not a table of settings")]
    NotATable {
        /// The override's path.
        path: String,
        /// The part that is a value, not a table.
        what: String,
    },
    /// The scenario does not take the overridden value.
    #[error("with {overrides}: {error}")]
    Scenario {
        /// The overrides of the run, as given.
        overrides: String,
        /// What the scenario said (part of this error's one line, not a cause of its own).
        error: ScenarioError,
    },
    /// The grid is empty.
    #[error("nothing to compare: give --cc with at least one controller and --seeds >= 1")]
    Empty,
    /// The grid has more runs than [`MAX_RUNS`].
    #[error("{0}")]
    TooLarge(LimitError),
}

/// Runs a grid may have (each holds its scenario until the table is made).
pub const MAX_RUNS: u64 = 100_000;

/// One setting changed: a path into the scenario and its new value.
#[derive(Clone, Debug, PartialEq)]
pub struct Override {
    path: Vec<String>,
    value: toml::Value,
}

impl Override {
    /// Reads `PATH=VALUE`.
    pub fn parse(text: &str) -> Result<Override, CompareError> {
        let (path, values) = split(text)?;
        Ok(Override {
            path,
            value: value(values),
        })
    }

    /// `PATH=VALUE` as given.
    pub fn label(&self) -> String {
        format!("{}={}", self.path.join("."), show(&self.value))
    }

    /// Sets the value in `doc` (a scenario as a TOML table), creating missing tables.
    pub fn apply(&self, doc: &mut toml::Table) -> Result<(), CompareError> {
        if let [cc, name] = self.path.as_slice() {
            if cc == "cc" {
                let params = doc
                    .entry("cc_params")
                    .or_insert_with(|| toml::Value::Array(Vec::new()));
                let entry = toml::Value::String(format!("{name}={}", show(&self.value)));
                return match params {
                    toml::Value::Array(list) => {
                        list.push(entry);
                        Ok(())
                    }
                    _ => Err(self.not_a_table("cc_params")),
                };
            }
        }
        let Some((last, parents)) = self.path.split_last() else {
            return Err(CompareError::Syntax(self.label()));
        };
        let mut table = doc;
        for part in parents {
            let next = table
                .entry(part.as_str())
                .or_insert_with(|| toml::Value::Table(toml::Table::new()));
            table = match next {
                toml::Value::Table(t) => t,
                _ => return Err(self.not_a_table(part)),
            };
        }
        table.insert(last.clone(), self.value.clone());
        Ok(())
    }

    fn not_a_table(&self, what: &str) -> CompareError {
        CompareError::NotATable {
            path: self.path.join("."),
            what: what.to_owned(),
        }
    }
}

/// A setting swept over values: `PATH=V1,V2,...`.
#[derive(Clone, Debug, PartialEq)]
pub struct Sweep {
    path: Vec<String>,
    values: Vec<toml::Value>,
}

impl Sweep {
    /// Reads `PATH=V1,V2,...`.
    pub fn parse(text: &str) -> Result<Sweep, CompareError> {
        let (path, values) = split(text)?;
        let values: Vec<toml::Value> = values.split(',').map(|v| value(v.trim())).collect();
        Ok(Sweep { path, values })
    }

    fn at(&self, i: usize) -> Override {
        Override {
            path: self.path.clone(),
            value: self.values[i].clone(),
        }
    }
}

fn split(text: &str) -> Result<(Vec<String>, &str), CompareError> {
    let syntax = || CompareError::Syntax(text.to_owned());
    let (path, value) = text.split_once('=').ok_or_else(syntax)?;
    let path: Vec<String> = path.trim().split('.').map(str::to_owned).collect();
    if value.trim().is_empty() || path.iter().any(|p| p.is_empty()) {
        return Err(syntax());
    }
    Ok((path, value.trim()))
}

/// A TOML value (`40`, `0.5`, `true`, `"x"`, `[1, 2]`), or the text as a string (`dcqcn-mlx`).
fn value(text: &str) -> toml::Value {
    format!("v = {text}")
        .parse::<toml::Table>()
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| toml::Value::String(text.to_owned()))
}

fn show(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The scenario `base` with `overrides` applied in order (later ones win).
pub fn with_overrides(base: &Scenario, overrides: &[Override]) -> Result<Scenario, CompareError> {
    let wrap = |error| CompareError::Scenario {
        overrides: overrides
            .iter()
            .map(Override::label)
            .collect::<Vec<_>>()
            .join(" "),
        error,
    };
    let mut doc =
        toml::Table::try_from(base).map_err(|e| wrap(ScenarioError::Parse(e.to_string())))?;
    for o in overrides {
        o.apply(&mut doc)?;
    }
    let mut s: Scenario = toml::Value::Table(doc)
        .try_into()
        .map_err(|e: toml::de::Error| wrap(ScenarioError::Parse(clip_quoted(e.message()))))?;
    // Not in the file: the controllers the base scenario may name.
    s.controllers = base.controllers.clone();
    s.validate().map_err(wrap)?;
    Ok(s)
}

/// What to compare.
#[derive(Clone, Debug, Default)]
pub struct Grid {
    /// Congestion controls, by name; empty keeps the scenario's.
    pub ccs: Vec<String>,
    /// Runs per variant, seeded `seed`, `seed + 1`, ... from the scenario's seed.
    pub seeds: u64,
    /// Settings changed in every run.
    pub sets: Vec<Override>,
    /// Settings swept: every combination of their values is a variant.
    pub sweeps: Vec<Sweep>,
}

/// One run of a grid.
#[derive(Clone, Debug)]
pub struct Run {
    /// Index of its variant in [`Grid::expand`]'s variant list.
    pub variant: usize,
    /// Its seed.
    pub seed: u64,
    /// The scenario to run.
    pub scenario: Scenario,
}

/// A variant: a congestion control and one value of every sweep.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Variant {
    /// Congestion control.
    pub cc: String,
    /// The swept settings' values, `PATH=VALUE`.
    pub params: Vec<String>,
}

impl Variant {
    /// `cc` and the swept values, as the table shows it.
    pub fn label(&self) -> String {
        std::iter::once(self.cc.clone())
            .chain(self.params.iter().cloned())
            .collect::<Vec<_>>()
            .join(" ")
    }
}

impl Grid {
    /// The variants and their runs, variant by variant, seeds in order.
    pub fn expand(&self, base: &Scenario) -> Result<(Vec<Variant>, Vec<Run>), CompareError> {
        let ccs = if self.ccs.is_empty() {
            vec![base.cc.clone()]
        } else {
            self.ccs.clone()
        };
        if self.seeds == 0 || self.sweeps.iter().any(|s| s.values.is_empty()) {
            return Err(CompareError::Empty);
        }
        let count = self
            .sweeps
            .iter()
            .fold(ccs.len() as u64, |n, s| {
                n.saturating_mul(s.values.len() as u64)
            })
            .saturating_mul(self.seeds);
        at_most("runs (controls x values x seeds)", count, MAX_RUNS)
            .map_err(CompareError::TooLarge)?;
        // Every combination of sweep values, the last sweep varying fastest.
        let mut combos: Vec<Vec<usize>> = vec![Vec::new()];
        for sweep in &self.sweeps {
            combos = combos
                .into_iter()
                .flat_map(|c| {
                    (0..sweep.values.len()).map(move |i| {
                        let mut c = c.clone();
                        c.push(i);
                        c
                    })
                })
                .collect();
        }
        let mut variants = Vec::new();
        let mut runs = Vec::new();
        for cc in &ccs {
            // A `cc.NAME` sweep varies only controllers that have NAME: the others run once,
            // labelled `cc.NAME=n/a`, instead of once per value with nothing changed.
            let live: Vec<bool> = self.sweeps.iter().map(|s| has(base, cc, &s.path)).collect();
            for combo in &combos {
                if combo.iter().zip(&live).any(|(&i, &l)| !l && i > 0) {
                    continue;
                }
                let params = combo
                    .iter()
                    .zip(&self.sweeps)
                    .zip(&live)
                    .map(|((&i, s), &l)| {
                        if l {
                            s.at(i).label()
                        } else {
                            format!("{}=n/a", s.path.join("."))
                        }
                    })
                    .collect();
                let swept: Vec<Override> = combo
                    .iter()
                    .zip(&self.sweeps)
                    .zip(&live)
                    .filter(|(_, &l)| l)
                    .map(|((&i, s), _)| s.at(i))
                    .collect();
                let variant = variants.len();
                variants.push(Variant {
                    cc: cc.clone(),
                    params,
                });
                let mut overrides = self.sets.clone();
                overrides.extend(swept);
                overrides.push(Override {
                    path: vec!["cc".into()],
                    value: toml::Value::String(cc.clone()),
                });
                for k in 0..self.seeds {
                    let seed = base.seed.wrapping_add(k);
                    let mut all = overrides.clone();
                    all.push(Override {
                        path: vec!["seed".into()],
                        value: toml::Value::Integer(seed as i64),
                    });
                    runs.push(Run {
                        variant,
                        seed,
                        scenario: with_overrides(base, &all)?,
                    });
                }
            }
        }
        Ok((variants, runs))
    }
}

/// Whether the controller `cc` has what `path` sets: a `cc.NAME` path needs a controller with
/// the parameter NAME ("none" has none); every other path applies to every controller. An
/// unknown controller is left to fail where the scenario is built.
fn has(base: &Scenario, cc: &str, path: &[String]) -> bool {
    match path {
        [head, name] if head == "cc" => {
            cc != "none"
                && base
                    .controllers
                    .config(cc, Rate::from_bps(1_000_000_000))
                    .map_or(true, |c| c.describe().iter().any(|p| p.name == name))
        }
        _ => true,
    }
}

/// Calls `each(i, run)` for every item (a [`Run`], or a caller's record that holds one),
/// `threads` at a time (a rayon pool of its own), and returns the results in grid order.
pub fn run_grid<R: Sync, T: Send>(
    runs: &[R],
    threads: usize,
    each: impl Fn(usize, &R) -> T + Sync + Send,
) -> Result<Vec<T>, rayon::ThreadPoolBuildError> {
    use rayon::prelude::*;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads.max(1))
        .thread_name(|i| format!("roce-grid{i}"))
        .build()?;
    Ok(pool.install(|| {
        runs.par_iter()
            .enumerate()
            .map(|(i, r)| each(i, r))
            .collect()
    }))
}

/// One variant's row.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    /// The variant.
    pub variant: Variant,
    /// Runs (seeds).
    pub runs: usize,
    /// Per metric of [`metrics_of`] the grid, by name.
    pub metrics: Vec<(String, Stat)>,
}

/// The rows of `variants` from the summaries of `runs` (the same order as [`Grid::expand`]).
pub fn rows(variants: &[Variant], runs: &[Run], summaries: &[RunSummary]) -> Vec<Row> {
    let metrics = metrics_of(summaries);
    variants
        .iter()
        .enumerate()
        .map(|(v, variant)| {
            let mine: Vec<&RunSummary> = runs
                .iter()
                .zip(summaries)
                .filter(|(r, _)| r.variant == v)
                .map(|(_, s)| s)
                .collect();
            let metrics = metrics
                .iter()
                .map(|(name, get)| {
                    let xs: Vec<f64> = mine.iter().map(|s| get(s)).collect();
                    ((*name).to_owned(), Stat::of(&xs))
                })
                .collect();
            Row {
                variant: variant.clone(),
                runs: mine.len(),
                metrics,
            }
        })
        .collect()
}

/// The swept settings whose values changed nothing: every pair of variants that differ only in
/// that setting's value got the same figures in every metric (a parameter the controller reads
/// only in situations the runs never reached, or one a scenario setting overrides). Named by
/// path, in sweep order; a sweep no two variants differ in alone (`n/a` for a controller
/// without the parameter) is not judged.
pub fn inert_sweeps(rows: &[Row]) -> Vec<String> {
    /// A variant's controller and its values of every other sweep.
    type OtherValues<'a> = (&'a str, Vec<&'a str>);
    let Some(width) = rows.first().map(|r| r.variant.params.len()) else {
        return Vec::new();
    };
    (0..width)
        .filter_map(|j| {
            // The rows that differ only in this sweep's value, by controller and other values.
            let mut groups: HashMap<OtherValues, Vec<(&str, &Row)>> = HashMap::new();
            let mut name = None;
            for r in rows {
                let (path, value) = r.variant.params.get(j)?.split_once('=')?;
                name = Some(path);
                if value == "n/a" {
                    continue;
                }
                let mut rest: Vec<&str> = r.variant.params.iter().map(String::as_str).collect();
                rest.remove(j);
                groups
                    .entry((r.variant.cc.as_str(), rest))
                    .or_default()
                    .push((value, r));
            }
            let mut compared = false;
            for group in groups.values() {
                let Some(&(first_value, first)) = group.first() else {
                    continue;
                };
                if group.iter().all(|&(v, _)| v == first_value) {
                    continue;
                }
                if group.iter().any(|(_, r)| r.metrics != first.metrics) {
                    return None;
                }
                compared = true;
            }
            name.filter(|_| compared).map(str::to_owned)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> Scenario {
        Scenario::from_toml(
            r#"
name = "t"
seed = 5
duration_us = 100
topology = { kind = "star", hosts = 3, link = { gbps = 100, delay_ns = 1000 } }
[switch]
buffer_bytes = 12582912
queue_limit_bytes = 1048576
lossless = [3]
pfc = true
pfc_thresholds = { xoff_bytes = 200000, xon_bytes = 180000, headroom_bytes = 150000, quanta = 65535 }
ecn = { kmin_bytes = 100000, kmax_bytes = 400000, pmax = 0.2 }
[[workloads]]
kind = "incast"
senders = [0, 1]
receiver = 2
"#,
        )
        .expect("scenario")
    }

    #[test]
    fn overrides_reach_nested_settings_and_cc_parameters() {
        let s = with_overrides(
            &base(),
            &[
                Override::parse("switch.ecn.kmin_bytes=50000").unwrap(),
                Override::parse("cc=dcqcn-mlx").unwrap(),
                Override::parse("cc.rpg_ai_rate=40").unwrap(),
                Override::parse("duration_us = 250.5").unwrap(),
            ],
        )
        .unwrap();
        assert_eq!(s.switch.ecn.as_ref().map(|e| e.kmin_bytes), Some(50_000));
        assert_eq!(s.cc, "dcqcn-mlx");
        assert_eq!(s.cc_params, vec!["rpg_ai_rate=40".to_owned()]);
        assert_eq!(s.duration_us, 250.5);
    }

    #[test]
    fn bad_overrides_say_which_and_why() {
        assert!(matches!(
            Override::parse("kmin"),
            Err(CompareError::Syntax(_))
        ));
        assert!(matches!(
            Override::parse("a..b=1"),
            Err(CompareError::Syntax(_))
        ));
        let err = with_overrides(&base(), &[Override::parse("name.x=1").unwrap()]).unwrap_err();
        assert_eq!(err.to_string(), "name.x: name is not a table of settings");
        let err = with_overrides(&base(), &[Override::parse("duration_us=-1").unwrap()])
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("with duration_us=-1: "), "{err}");
        assert!(err.contains("duration_us must be positive"), "{err}");
    }

    #[test]
    fn a_cc_parameter_sweep_varies_only_the_controllers_that_have_it() {
        let grid = Grid {
            ccs: vec!["dcqcn-mlx".into(), "none".into(), "dctcp".into()],
            seeds: 1,
            sets: Vec::new(),
            sweeps: vec![
                Sweep::parse("cc.rpg_ai_rate=5,10").unwrap(),
                Sweep::parse("switch.ecn.pmax=0.1,0.5").unwrap(),
            ],
        };
        let (variants, runs) = grid.expand(&base()).unwrap();
        let labels: Vec<String> = variants.iter().map(Variant::label).collect();
        assert_eq!(
            labels,
            [
                "dcqcn-mlx cc.rpg_ai_rate=5 switch.ecn.pmax=0.1",
                "dcqcn-mlx cc.rpg_ai_rate=5 switch.ecn.pmax=0.5",
                "dcqcn-mlx cc.rpg_ai_rate=10 switch.ecn.pmax=0.1",
                "dcqcn-mlx cc.rpg_ai_rate=10 switch.ecn.pmax=0.5",
                "none cc.rpg_ai_rate=n/a switch.ecn.pmax=0.1",
                "none cc.rpg_ai_rate=n/a switch.ecn.pmax=0.5",
                "dctcp cc.rpg_ai_rate=n/a switch.ecn.pmax=0.1",
                "dctcp cc.rpg_ai_rate=n/a switch.ecn.pmax=0.5",
            ]
        );
        assert_eq!(runs.len(), 8);
        assert_eq!(runs[2].scenario.cc_params, ["rpg_ai_rate=10"]);
        assert!(runs[4..].iter().all(|r| r.scenario.cc_params.is_empty()));
    }

    #[test]
    fn a_sweep_whose_values_changed_no_figure_is_named() {
        let row = |cc: &str, params: &[&str], goodput: f64| Row {
            variant: Variant {
                cc: cc.into(),
                params: params.iter().map(|p| (*p).to_owned()).collect(),
            },
            runs: 1,
            metrics: vec![("goodput_gbps".into(), Stat::of(&[goodput]))],
        };
        let rows = [
            row(
                "dcqcn-mlx",
                &["cc.rpg_ai_rate=5", "switch.ecn.pmax=0.1"],
                9.0,
            ),
            row(
                "dcqcn-mlx",
                &["cc.rpg_ai_rate=5", "switch.ecn.pmax=0.5"],
                8.0,
            ),
            row(
                "dcqcn-mlx",
                &["cc.rpg_ai_rate=10", "switch.ecn.pmax=0.1"],
                9.0,
            ),
            row(
                "dcqcn-mlx",
                &["cc.rpg_ai_rate=10", "switch.ecn.pmax=0.5"],
                8.0,
            ),
            row("none", &["cc.rpg_ai_rate=n/a", "switch.ecn.pmax=0.1"], 7.0),
            row("none", &["cc.rpg_ai_rate=n/a", "switch.ecn.pmax=0.5"], 7.0),
        ];
        assert_eq!(inert_sweeps(&rows), ["cc.rpg_ai_rate"]);
        let mut moved = rows.clone();
        moved[2].metrics[0].1 = Stat::of(&[9.5]);
        assert!(inert_sweeps(&moved).is_empty());
        // Where the controller lacks the parameter, only the other sweep is judged.
        assert_eq!(inert_sweeps(&rows[4..]), ["switch.ecn.pmax"]);
        assert!(inert_sweeps(&[]).is_empty());
    }

    #[test]
    fn the_grid_is_every_cc_times_every_sweep_value_times_seeds() {
        let grid = Grid {
            ccs: vec!["none".into(), "dctcp".into()],
            seeds: 2,
            sets: vec![Override::parse("duration_us=200").unwrap()],
            sweeps: vec![Sweep::parse("switch.ecn.pmax=0.1,0.5").unwrap()],
        };
        let (variants, runs) = grid.expand(&base()).unwrap();
        let labels: Vec<String> = variants.iter().map(Variant::label).collect();
        assert_eq!(
            labels,
            [
                "none switch.ecn.pmax=0.1",
                "none switch.ecn.pmax=0.5",
                "dctcp switch.ecn.pmax=0.1",
                "dctcp switch.ecn.pmax=0.5"
            ]
        );
        assert_eq!(runs.len(), 8);
        let r = &runs[7];
        assert_eq!((r.variant, r.seed), (3, 6));
        assert_eq!(r.scenario.cc, "dctcp");
        assert_eq!(r.scenario.seed, 6);
        assert_eq!(r.scenario.duration_us, 200.0);
        assert_eq!(r.scenario.switch.ecn.as_ref().map(|e| e.pmax), Some(0.5));
        assert_eq!(runs[0].seed, 5);
        assert!(matches!(
            Grid { seeds: 0, ..grid }.expand(&base()),
            Err(CompareError::Empty)
        ));
    }
}
