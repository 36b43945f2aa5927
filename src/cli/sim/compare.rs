//! `roce sim compare SCENARIO --cc a,b,c [--seeds N] [--set P=V ...] [--param P=V1,V2 ...]`:
//! the grid of runs (`roce_fabric::compare`), one run per thread, progress on stderr, one
//! table.
//!
//! Every run is deterministic on its own and results are put back in grid order, so the table is
//! the same whatever the thread count and whichever run finishes first.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};

use roce::report::compare::{write_compare, Trace};
use roce::report::sim::write_all;
use roce_fabric::compare::{rows, run_grid, table, Grid, Override, Run, Sweep};
use roce_fabric::scenario::Scenario;
use roce_fabric::summary::Summary;

/// Flags of `roce sim compare`.
#[derive(Args, Debug)]
pub struct CompareArgs {
    /// The scenario (TOML).
    scenario: PathBuf,
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
    /// `--json` prints the variants' rows (mean, sd, min, max of each metric) and every run's
    /// summary; `--out DIR` also gets the table, runs.csv, overlay plots and each run's files
    /// under runs/.
    #[command(flatten)]
    out: super::OutputArgs,
}

/// What one run gives back.
struct Done {
    summary: Summary,
    trace: Trace,
}

/// Runs `roce sim compare`.
pub fn run(args: CompareArgs) -> Result<()> {
    let text = std::fs::read_to_string(&args.scenario)
        .with_context(|| format!("reading {}", args.scenario.display()))?;
    let base =
        Scenario::from_toml(&text).with_context(|| format!("in {}", args.scenario.display()))?;
    let grid = Grid {
        ccs: args.cc.clone(),
        seeds: args.seeds,
        sets: args
            .sets
            .iter()
            .map(|s| Override::parse(s))
            .collect::<Result<_, _>>()?,
        sweeps: args
            .params
            .iter()
            .map(|s| Sweep::parse(s))
            .collect::<Result<_, _>>()?,
    };
    let (variants, runs) = grid.expand(&base)?;
    let threads = args
        .threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .clamp(1, runs.len());
    tracing::info!(
        runs = runs.len(),
        variants = variants.len(),
        threads,
        "comparing"
    );
    let bar = ProgressBar::new(runs.len() as u64);
    bar.set_style(
        ProgressStyle::with_template("{msg} [{bar:40}] {pos}/{len} runs, {elapsed}, ETA {eta}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar.set_message(base.name.clone());
    if args.out.json {
        bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    let labels: Vec<String> = runs
        .iter()
        .map(|r| format!("{}-seed{}", file_name(&variants[r.variant].label()), r.seed))
        .collect();
    let results = run_all(&runs, &labels, threads, args.out.out.as_deref(), &bar)?;
    bar.finish_and_clear();

    let summaries: Vec<Summary> = results.iter().map(|d| d.summary.clone()).collect();
    let traces: Vec<Trace> = results.into_iter().map(|d| d.trace).collect();
    let rows = rows(&variants, &runs, &summaries);
    let table = table(&rows);
    if let Some(dir) = &args.out.out {
        write_compare(dir, &rows, &table, &variants, &runs, &summaries, &traces)?;
    }
    let text = if args.out.json {
        serde_json::to_string_pretty(&serde_json::json!({
            "scenario": base.name,
            "rows": rows,
            "runs": runs.iter().zip(&summaries).map(|(r, s)| serde_json::json!({
                "variant": variants[r.variant].label(),
                "seed": r.seed,
                "summary": s,
            })).collect::<Vec<_>>(),
        }))? + "\n"
    } else {
        table
    };
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
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
    if !failed.is_empty() && !args.out.allow_failures {
        bail!(
            "{} of {} runs had failed or stalled flows: {} (--allow-failures accepts this)",
            failed.len(),
            runs.len(),
            failed.join("; ")
        );
    }
    Ok(())
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

/// Runs every run of the grid on `threads` threads; results in grid order. With `out`, each
/// run also leaves its own files in `out/runs/<label>`.
fn run_all(
    runs: &[Run],
    labels: &[String],
    threads: usize,
    out: Option<&Path>,
    bar: &ProgressBar,
) -> Result<Vec<Done>> {
    run_grid(runs, threads, |i, run| {
        let dir = out.map(|d| d.join("runs").join(&labels[i]));
        let done = run_one(run, dir.as_deref()).with_context(|| format!("run {}", labels[i]));
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
