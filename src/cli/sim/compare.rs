//! `roce sim compare SCENARIO --cc a,b,c [--seeds N] [--set P=V ...] [--param P=V1,V2 ...]`:
//! the grid of runs (`roce_fabric::experiment::compare`), one run per thread, progress on stderr, one
//! table. `--shard I/N` and `--merge DIR...` split a grid over machines ([`super::shard`]).
//!
//! Every run is deterministic on its own and results are put back in grid order, so the table is
//! the same whatever the thread count and whichever run finishes first.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};

use super::shard::{self, GridSpec, Shard, ShardRun};
use roce::report::compare::{write_compare, Trace};
use roce::report::sim::write_all;
use roce_fabric::experiment::compare::{
    inert_sweeps, rows, run_grid, table, Grid, Override, Run, Sweep, Variant,
};
use roce_fabric::experiment::scenario::Scenario;
use roce_fabric::experiment::summary::RunSummary;

use crate::cli::output::{note, write_json, Json};

/// Flags of `roce sim compare`.
#[derive(Args, Debug)]
pub struct CompareArgs {
    /// The scenario (TOML).
    #[arg(required_unless_present = "merge")]
    scenario: Option<PathBuf>,
    /// Congestion controls to compare, comma-separated (default: the scenario's).
    #[arg(long, value_delimiter = ',')]
    cc: Vec<String>,
    /// Runs per variant, seeded from the scenario's seed upwards.
    #[arg(long, default_value_t = 1)]
    seeds: u64,
    /// A setting for every run: a path in the scenario file (`switch.ecn.kmin_bytes=50000`) or
    /// a congestion-control parameter (`cc.rpg_ai_rate=40`). Repeatable.
    #[arg(long = "set", value_name = "PATH=VALUE")]
    sets: Vec<String>,
    /// A setting swept over values; every combination is a variant. Repeatable.
    #[arg(long = "param", value_name = "PATH=V1,V2,...")]
    params: Vec<String>,
    /// Runs at once (default: every CPU).
    #[arg(long)]
    threads: Option<usize>,
    /// Run only shard I of N of the grid (the runs whose index is I - 1 modulo N) and leave
    /// `shard.json` in `--out`, for `--merge`: one task of a Slurm array or GNU parallel job.
    #[arg(long, value_name = "I/N", requires = "out")]
    shard: Option<Shard>,
    /// Merge the `--out` directories of a sharded grid's tasks (the scenario and flags come
    /// from the shards) and report as one run over the whole grid.
    #[arg(long, value_name = "DIR", num_args = 1.., conflicts_with_all = ["scenario", "shard", "cc", "sets", "params"])]
    merge: Vec<PathBuf>,
    /// `--json` prints the variants' rows (mean, sd, min, max and 95% confidence half-width
    /// `ci95` of each metric) and every run's summary; `--out DIR` also gets the table (text,
    /// JSON and table.csv), runs.csv, overlay plots (mean over seeds, band min..max) and each
    /// run's files under runs/.
    #[command(flatten)]
    out: super::OutputArgs,
}

/// What one run gives back.
struct Done {
    summary: RunSummary,
    trace: Trace,
}

/// Runs `roce sim compare`, the table (or JSON) written to `stdout`.
pub fn run(args: CompareArgs, stdout: &mut dyn Write) -> Result<()> {
    if !args.merge.is_empty() {
        let (spec, done) = shard::merge(&args.merge)?;
        let (base, variants, runs) = expand(&spec, Path::new("<merged shards>"))?;
        let (summaries, traces) = done.into_iter().map(|r| (r.summary, r.trace)).unzip();
        return report(
            stdout, &args.out, &base, &variants, &runs, summaries, traces,
        );
    }
    let path = args
        .scenario
        .clone()
        .context("a scenario file is required")?;
    let spec = GridSpec {
        scenario_toml: roce_fabric::limits::input::read_text(
            &path,
            roce_fabric::limits::bounds::MAX_SCENARIO_BYTES,
        )?,
        ccs: args.cc.clone(),
        seeds: args.seeds,
        sets: args.sets.clone(),
        params: args.params.clone(),
    };
    let (base, variants, runs) = expand(&spec, &path)?;
    let mine: Vec<usize> = (0..runs.len())
        .filter(|&i| args.shard.is_none_or(|s| s.takes(i)))
        .collect();
    let threads = args
        .threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .clamp(1, mine.len().max(1));
    tracing::info!(
        runs = mine.len(),
        grid = runs.len(),
        variants = variants.len(),
        threads,
        "comparing"
    );
    let bar = ProgressBar::new(mine.len() as u64);
    bar.set_style(
        ProgressStyle::with_template("{msg} [{bar:40}] {pos}/{len} runs, {elapsed}, ETA {eta}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar.set_message(base.name.clone());
    if args.out.json {
        bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    let label = |r: &Run| format!("{}-seed{}", file_name(&variants[r.variant].label()), r.seed);
    let todo: Vec<(usize, &Run, String)> = mine
        .iter()
        .map(|&i| (i, &runs[i], label(&runs[i])))
        .collect();
    let results = run_all(&todo, threads, args.out.out.as_deref(), &bar)?;
    bar.finish_and_clear();
    if let (Some(shard), Some(dir)) = (args.shard, &args.out.out) {
        let failed = results
            .iter()
            .filter(|r| r.summary.failed_flows > 0)
            .count();
        let done = mine
            .iter()
            .zip(results)
            .map(|(&index, d)| ShardRun {
                index,
                summary: d.summary,
                trace: d.trace,
            })
            .collect();
        let file = shard::write(dir, &spec, shard, runs.len(), done)?;
        writeln!(
            stdout,
            "shard {shard}: {} of {} runs in {}; merge the shards with `roce sim compare --merge DIR...`",
            mine.len(),
            runs.len(),
            file.display()
        )?;
        if failed > 0 && !args.out.allow_failures {
            bail!("{failed} of this shard's runs had failed or stalled flows (--allow-failures accepts this)");
        }
        return Ok(());
    }
    let (summaries, traces) = results.into_iter().map(|d| (d.summary, d.trace)).unzip();
    report(
        stdout, &args.out, &base, &variants, &runs, summaries, traces,
    )
}

/// The scenario of `spec` (read from `path`, for messages) and its grid.
fn expand(spec: &GridSpec, path: &Path) -> Result<(Scenario, Vec<Variant>, Vec<Run>)> {
    let base = Scenario::from_toml(&spec.scenario_toml)
        .with_context(|| format!("in {}", path.display()))?;
    let grid = Grid {
        ccs: spec.ccs.clone(),
        seeds: spec.seeds,
        sets: spec
            .sets
            .iter()
            .map(|s| Override::parse(s))
            .collect::<Result<_, _>>()?,
        sweeps: spec
            .params
            .iter()
            .map(|s| Sweep::parse(s))
            .collect::<Result<_, _>>()?,
    };
    let (variants, runs) = grid.expand(&base)?;
    Ok((base, variants, runs))
}

/// The table (or JSON) on stdout, the files in `--out`, and the exit status of a whole grid.
fn report(
    stdout: &mut dyn Write,
    out: &super::OutputArgs,
    base: &Scenario,
    variants: &[Variant],
    runs: &[Run],
    summaries: Vec<RunSummary>,
    traces: Vec<Trace>,
) -> Result<()> {
    let rows = rows(variants, runs, &summaries);
    let table = table(&rows);
    let inert = inert_sweeps(&rows);
    if let Some(dir) = &out.out {
        write_compare(dir, &rows, &table, variants, runs, &summaries, &traces)?;
    }
    let written = if out.json {
        let doc = serde_json::json!({
            "scenario": base.name,
            "rows": rows,
            "inert_sweeps": inert,
            "runs": runs.iter().zip(&summaries).map(|(r, s)| serde_json::json!({
                "variant": variants[r.variant].label(),
                "seed": r.seed,
                "summary": s,
            })).collect::<Vec<_>>(),
        });
        write_json(stdout, &doc, Json::Pretty)
    } else {
        stdout.write_all(table.as_bytes())
    };
    for path in &inert {
        note(format_args!(
            "note: {path} changed nothing: its values gave the same figures in every variant"
        ));
    }
    // Why a run's figures may not describe its controller settled, once per variant.
    let mut noted = std::collections::BTreeSet::new();
    for (r, s) in runs.iter().zip(&summaries) {
        for w in &s.warnings {
            if noted.insert((r.variant, &w.message)) {
                note(format_args!(
                    "warning: {}: {}",
                    variants[r.variant].label(),
                    w.message
                ));
            }
        }
    }
    let failed: Vec<String> = runs
        .iter()
        .zip(&summaries)
        .filter(|(_, s)| s.failed_flows > 0)
        .map(|(r, s)| {
            format!(
                "{} seed {} ({} of {} flows)",
                variants[r.variant].label(),
                r.seed,
                s.failed_flows,
                s.flows.len()
            )
        })
        .collect();
    if !failed.is_empty() && !out.allow_failures {
        bail!(
            "{} of {} runs had failed or stalled flows: {} (--allow-failures accepts this)",
            failed.len(),
            runs.len(),
            failed.join("; ")
        );
    }
    // After the verdict: failed runs are said even when the reader went away (`| head`).
    Ok(written?)
}

/// `label` as a directory name.
fn file_name(label: &str) -> String {
    label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Runs `todo` (grid index, run, label) on `threads` threads; results in `todo`'s order. With
/// `out`, each run also leaves its own files in `out/runs/<label>`.
fn run_all(
    todo: &[(usize, &Run, String)],
    threads: usize,
    out: Option<&Path>,
    bar: &ProgressBar,
) -> Result<Vec<Done>> {
    run_grid(todo, threads, |_, (_, run, label)| {
        let dir = out.map(|d| d.join("runs").join(label));
        let done = run_one(run, dir.as_deref()).with_context(|| format!("run {label}"));
        bar.inc(1);
        done
    })?
    .into_iter()
    .collect()
}

fn run_one(run: &Run, out: Option<&Path>) -> Result<Done> {
    let (summary, built) = run.scenario.run(|_| {})?;
    let rec = built.fabric.recorder();
    let mut trace = Trace::default();
    if let Some(dir) = out {
        write_all(dir, &run.scenario, &summary, rec)?;
        trace = rec.map(Trace::of).unwrap_or_default();
    }
    Ok(Done { summary, trace })
}
