//! Sharding a `roce sim compare` grid across machines with a batch system (GNU parallel, a Slurm
//! array): `--shard I/N --out DIR_I` runs the grid's runs whose index is I - 1 modulo N and
//! leaves `shard.json` in `DIR_I`; `--merge DIR_1 ... DIR_N` reads the shards, checks they are
//! one grid and together hold every run exactly once, and reports as one run over the whole grid
//! would (every run is deterministic on its own, so the table is the same).

use std::path::{Path, PathBuf};
use std::str::FromStr;

use anyhow::{bail, ensure, Context, Result};
use serde::{Deserialize, Serialize};

use roce::report::compare::Trace;
use roce_fabric::experiment::summary::RunSummary;

/// Bytes of a shard file (summaries of every run of the shard, with their traces).
const MAX_SHARD_BYTES: u64 = 1 << 30;

/// What a shard file says it is.
const FORMAT: &str = "roce-compare-shard/1";

/// The file a shard leaves in its `--out` directory.
pub const SHARD_FILE: &str = "shard.json";

/// `I/N`: this task is shard I (1-based) of N.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    /// 0-based index.
    index: usize,
    /// Number of shards.
    count: usize,
}

impl FromStr for Shard {
    type Err = String;
    fn from_str(s: &str) -> Result<Shard, String> {
        let bad =
            || format!("{s:?} is not I/N with 1 <= I <= N (e.g. 3/8, or $SLURM_ARRAY_TASK_ID/8)");
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let (i, n): (usize, usize) = (
            i.trim().parse().map_err(|_| bad())?,
            n.trim().parse().map_err(|_| bad())?,
        );
        if i == 0 || i > n {
            return Err(bad());
        }
        Ok(Shard {
            index: i - 1,
            count: n,
        })
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index + 1, self.count)
    }
}

impl Shard {
    /// Whether grid run `run` belongs to this shard.
    pub fn takes(&self, run: usize) -> bool {
        run % self.count == self.index
    }
}

/// The grid a shard belongs to: the scenario text and the comparison's flags. Shards of one
/// grid agree on all of it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GridSpec {
    /// The scenario file's text.
    pub scenario_toml: String,
    /// `--cc`.
    pub ccs: Vec<String>,
    /// `--seeds`.
    pub seeds: u64,
    /// `--set`.
    pub sets: Vec<String>,
    /// `--param`.
    pub params: Vec<String>,
}

/// One run's result in a shard.
#[derive(Debug, Serialize, Deserialize)]
pub struct ShardRun {
    /// Index of the run in the grid.
    pub index: usize,
    /// Its summary.
    pub summary: RunSummary,
    /// Its series for the overlay plots (empty without `--out`).
    pub trace: Trace,
}

/// `shard.json`.
#[derive(Debug, Serialize, Deserialize)]
struct ShardFile {
    format: String,
    grid: GridSpec,
    /// `I/N` as given.
    shard: String,
    total_runs: usize,
    runs: Vec<ShardRun>,
}

/// Writes `dir/shard.json` for shard `shard` of `grid` (`total_runs` runs in all).
pub fn write(
    dir: &Path,
    grid: &GridSpec,
    shard: Shard,
    total_runs: usize,
    runs: Vec<ShardRun>,
) -> Result<PathBuf> {
    let file = ShardFile {
        format: FORMAT.to_owned(),
        grid: grid.clone(),
        shard: shard.to_string(),
        total_runs,
        runs,
    };
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let path = dir.join(SHARD_FILE);
    std::fs::write(&path, serde_json::to_string(&file)?)
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(path)
}

/// Reads the shards in `dirs` (each a shard's `--out` directory or its `shard.json`): their
/// common grid and every run's result in grid order.
pub fn merge(dirs: &[PathBuf]) -> Result<(GridSpec, Vec<ShardRun>)> {
    let mut grid: Option<(GridSpec, usize, PathBuf)> = None;
    let mut slots: Vec<Option<ShardRun>> = Vec::new();
    for dir in dirs {
        let path = if dir.is_dir() {
            dir.join(SHARD_FILE)
        } else {
            dir.clone()
        };
        let text = roce_fabric::limits::input::read_text(&path, MAX_SHARD_BYTES)?;
        let file: ShardFile = serde_json::from_str(&text)
            .with_context(|| format!("{} is not a compare shard", path.display()))?;
        ensure!(
            file.format == FORMAT,
            "{}: format {:?}, expected {FORMAT:?}",
            path.display(),
            file.format
        );
        match &grid {
            None => {
                slots = (0..file.total_runs).map(|_| None).collect();
                grid = Some((file.grid.clone(), file.total_runs, path.clone()));
            }
            Some((g, total, first)) => ensure!(
                *g == file.grid && *total == file.total_runs,
                "{} is a shard of another grid than {} (scenario or flags differ)",
                path.display(),
                first.display()
            ),
        }
        for run in file.runs {
            let Some(slot) = slots.get_mut(run.index) else {
                bail!(
                    "{}: run {} is outside the grid of {} runs",
                    path.display(),
                    run.index,
                    file.total_runs
                );
            };
            ensure!(
                slot.is_none(),
                "{}: run {} is in two shards",
                path.display(),
                run.index
            );
            *slot = Some(run);
        }
    }
    let Some((grid, total, _)) = grid else {
        bail!("--merge needs at least one shard directory");
    };
    let missing: Vec<String> = slots
        .iter()
        .enumerate()
        .filter(|(_, s)| s.is_none())
        .map(|(i, _)| i.to_string())
        .collect();
    ensure!(
        missing.is_empty(),
        "the shards hold {} of {total} runs; missing runs: {}",
        total - missing.len(),
        missing.join(", ")
    );
    Ok((grid, slots.into_iter().flatten().collect()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_split_the_grid_round_robin_and_refuse_bad_specs() {
        let s: Shard = "2/3".parse().unwrap();
        let mine: Vec<usize> = (0..8).filter(|&i| s.takes(i)).collect();
        assert_eq!(mine, [1, 4, 7]);
        for bad in ["0/3", "4/3", "3", "a/b", "1/0"] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
    }
}
