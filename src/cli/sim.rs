//! `roce sim`: run a scenario file or a built-in experiment in the virtual-time fabric, print a
//! summary table (or JSON) and optionally write time series and plots.
//!
//! Built-ins are scenarios made from flags; `--out DIR` saves the scenario they ran as TOML, so
//! any run can be replayed with `roce sim run DIR/scenario.toml`.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration as WallDuration;

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand, ValueEnum};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::cli::output::{self, Json};
use crate::cli::progress::sim_status;

use roce::report::sim as report;
use roce::report::speed::{RunSpeed, RunStart};
use roce_fabric::engines::EngineKind;
use roce_fabric::experiment::builtin::{Builtin, BuiltinKind};
use roce_fabric::experiment::compare::{with_overrides, Override};
use roce_fabric::experiment::hpcc_run::HpccRun;
use roce_fabric::experiment::scenario::{Built, Scenario};
use roce_fabric::hpcc::pfc_file;
use roce_fabric::limits::bounds::{at_most, Limits, MAX_HOSTS, MAX_SCENARIO_BYTES};
use roce_fabric::limits::input::read_text;
use roce_fabric::net::fabric::parallel::ParallelStats;
use roce_fabric::{EcnThresholds, MarkPoint};
use roce_proto::size::parse_bytes;

/// `roce sim` subcommands.
#[derive(Subcommand, Debug)]
pub enum SimCommand {
    /// Run a scenario file.
    Run {
        /// The scenario (TOML).
        scenario: PathBuf,
        /// Override the scenario's seed.
        #[arg(long)]
        seed: Option<u64>,
        #[command(flatten)]
        set: OverrideArgs,
        #[command(flatten)]
        out: OutputArgs,
        #[command(flatten)]
        capture: CaptureArgs,
    },
    /// Run an HPCC ns-3 simulator config file (its topology, flow file, CC_MODE and
    /// parameters) through the real RC endpoints; writes its FCT_OUTPUT_FILE and
    /// PFC_OUTPUT_FILE.
    Hpcc {
        /// The config (e.g. mix/config_fat_flow_dcqcn.txt).
        config: PathBuf,
        /// `--cc` runs another controller in place of the config's CC_MODE (its parameters
        /// from `--set cc.PARAM=...`; those derived from the config are for CC_MODE's and are
        /// dropped); `--set` changes the scenario built from the config.
        #[command(flatten)]
        set: OverrideArgs,
        #[command(flatten)]
        out: OutputArgs,
        #[command(flatten)]
        capture: CaptureArgs,
    },
    /// N senders to one receiver through one switch.
    Incast(BuiltinArgs),
    /// N long flows sharing one bottleneck (dumbbell); reports Jain's index.
    Fairness(BuiltinArgs),
    /// A victim flow beside an incast it shares no bottleneck with: slowed only by PFC.
    PfcSpreading(BuiltinArgs),
    /// Ring AllReduce among N hosts on one switch; per-iteration times.
    Allreduce(BuiltinArgs),
    /// Leaf-spine flows while a leaf-spine cable fails and recovers.
    LinkFailure(BuiltinArgs),
    /// Run a scenario for several congestion controls, parameter values and seeds, one run per
    /// thread, and print one table (mean ± sd and 95% confidence interval over seeds).
    Compare(compare::CompareArgs),
}

mod capture;
mod compare;
mod memory;
mod shard;

use capture::CaptureArgs;

/// Settings that change a scenario file before it runs (`roce sim run`).
#[derive(Args, Debug)]
pub struct OverrideArgs {
    /// Congestion control of every sender (overrides the scenario's `cc`; see `roce cc list`).
    #[arg(long = "cc")]
    cc: Option<String>,
    /// A setting: a path in the scenario file (`switch.ecn.kmin_bytes=50000`) or a
    /// congestion-control parameter (`cc.rpg_ai_rate=40`). Repeatable.
    #[arg(long = "set", value_name = "PATH=VALUE")]
    sets: Vec<String>,
}

impl OverrideArgs {
    /// `scenario` with `--cc` and every `--set` applied.
    fn apply(&self, scenario: Scenario) -> Result<Scenario> {
        let cc = self.cc.iter().map(|cc| format!("cc={cc}"));
        apply_sets(scenario, cc.chain(self.sets.iter().cloned()))
    }

    /// [`Self::apply`] to a scenario whose `cc_params` were derived for its own `cc`: a `--cc`
    /// drops them first.
    fn apply_replacing(&self, scenario: Scenario) -> Result<Scenario> {
        let clear = self.cc.iter().map(|_| "cc_params=[]".to_owned());
        let cc = self.cc.iter().map(|cc| format!("cc={cc}"));
        apply_sets(scenario, clear.chain(cc).chain(self.sets.iter().cloned()))
    }
}

/// `scenario` with the `PATH=VALUE` settings applied in order.
fn apply_sets(scenario: Scenario, sets: impl Iterator<Item = String>) -> Result<Scenario> {
    let all = sets
        .map(|s| Override::parse(&s))
        .collect::<Result<Vec<_>, _>>()?;
    if all.is_empty() {
        return Ok(scenario);
    }
    Ok(with_overrides(&scenario, &all)?)
}

/// Where results go.
#[derive(Args, Debug)]
pub struct OutputArgs {
    /// Print the summary as JSON.
    #[arg(long)]
    json: bool,
    /// With --json: add the run's speed (events/s, simsec/s, ev/simsec), peak memory and what
    /// its flows held (QPs made, retired and live at most) under `speed`. Off by default, so
    /// the JSON stays a function of scenario and seed alone.
    #[arg(long, requires = "json")]
    speed: bool,
    /// Write summary, scenario, time-series CSVs and SVG plots here (`compare`: also the table
    /// as text, JSON and CSV, the per-run CSV and overlay plots).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Exit 0 even when flows failed (a QP in the error state) or stalled; they are still
    /// reported in the summary.
    #[arg(long)]
    allow_failures: bool,
}

/// PFC switch.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnOff {
    /// Enabled.
    On,
    /// Disabled.
    Off,
}

/// Where switches mark CE.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum EcnAt {
    /// On arrival.
    Enqueue,
    /// On departure.
    Dequeue,
}

/// Flags of the built-in experiments.
#[derive(Args, Debug)]
pub struct BuiltinArgs {
    /// Senders (incast, fairness flows, spreading incast senders, ring size, flows per leaf).
    #[arg(long)]
    senders: Option<usize>,
    /// Host link rate, Gbit/s.
    #[arg(long, default_value_t = 100.0)]
    link_gbps: f64,
    /// One-way link propagation delay, µs.
    #[arg(long, default_value_t = 1.0)]
    delay_us: f64,
    /// ECN Kmin, bytes (suffixes as everywhere: 100KB = 100000, 100K = 102400).
    #[arg(long, value_parser = parse_bytes, default_value = "100KB")]
    kmin: u64,
    /// ECN Kmax, bytes (suffixes as everywhere).
    #[arg(long, value_parser = parse_bytes, default_value = "400KB")]
    kmax: u64,
    /// ECN marking probability at Kmax (0 turns marking off).
    #[arg(long, default_value_t = 0.2)]
    pmax: f64,
    /// Congestion control of the senders (see `roce cc list`).
    #[arg(long, default_value = "none")]
    cc: String,
    /// Minimum time between CNPs per QP at the receivers (notification point), µs; 0 turns
    /// CNPs off. Default: what the controller is designed with (dcqcn-mlx its
    /// min_time_between_cnps of 4 µs, dcqcn-paper 50 µs, dctcp 1 ns: every mark).
    #[arg(long)]
    cnp_interval_us: Option<f64>,
    /// Where switches decide ECN marks: at `enqueue` (merchant ASICs' WRED) or at `dequeue` (the
    /// DCQCN and HPCC authors' ns-3 switches: the mark skips the queueing delay).
    #[arg(long, value_enum, default_value = "enqueue")]
    ecn_at: EcnAt,
    /// Virtual run time (e.g. 2ms, 500us; a bare number is µs).
    #[arg(long, value_parser = parse_micros)]
    duration: Option<f64>,
    /// Measurement starts after this (default: a fifth of the run).
    #[arg(long, value_parser = parse_micros)]
    warmup: Option<f64>,
    /// RNG seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// PFC on the lossless class.
    #[arg(long, value_enum, default_value = "on")]
    pfc: OnOff,
    /// Host transport: `rc` (the real endpoint: QPs, DCQCN, notification point) or `stand-in`
    /// (the fabric's stand-in senders, faster, never retransmit; `test` is its old name).
    #[arg(long, alias = "engine", default_value = "rc")]
    transport: EngineKind,
    /// A setting of the scenario the experiment builds: a path in the scenario file
    /// (`switch.buffer_bytes=4000000`) or a congestion-control parameter (`cc.rpg_ai_rate=40`).
    /// Repeatable.
    #[arg(long = "set", value_name = "PATH=VALUE")]
    sets: Vec<String>,
    #[command(flatten)]
    out: OutputArgs,
    #[command(flatten)]
    capture: CaptureArgs,
}

fn parse_micros(s: &str) -> Result<f64, String> {
    let s = s.trim();
    let (num, mult) = if let Some(n) = s.strip_suffix("ms") {
        (n, 1_000.0)
    } else if let Some(n) = s.strip_suffix("us") {
        (n, 1.0)
    } else if let Some(n) = s.strip_suffix("ns") {
        (n, 1e-3)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1e6)
    } else {
        (s, 1.0)
    };
    num.parse::<f64>()
        .ok()
        .filter(|v| *v > 0.0)
        .map(|v| v * mult)
        .ok_or_else(|| format!("{s:?} is not a duration (e.g. 2ms, 500us)"))
}

impl BuiltinArgs {
    fn params(&self) -> Builtin {
        Builtin {
            senders: self.senders,
            link_gbps: self.link_gbps,
            delay_us: self.delay_us,
            ecn: (self.pmax > 0.0).then_some(EcnThresholds {
                kmin_bytes: self.kmin,
                kmax_bytes: self.kmax,
                pmax: self.pmax,
                step_bytes: None,
            }),
            cc: self.cc.clone(),
            duration_us: self.duration,
            warmup_us: self.warmup,
            seed: self.seed,
            pfc: self.pfc == OnOff::On,
            engine: self.transport,
        }
    }
}

/// The scenario a built-in experiment runs (`None` for the other commands); more senders than
/// a scenario may have hosts are refused before the experiment lists them.
fn builtin(cmd: &SimCommand) -> Option<Result<(Scenario, &BuiltinArgs)>> {
    let (kind, a) = match cmd {
        SimCommand::Run { .. } | SimCommand::Compare(_) | SimCommand::Hpcc { .. } => return None,
        SimCommand::Incast(a) => (BuiltinKind::Incast, a),
        SimCommand::Fairness(a) => (BuiltinKind::Fairness, a),
        SimCommand::PfcSpreading(a) => (BuiltinKind::PfcSpreading, a),
        SimCommand::Allreduce(a) => (BuiltinKind::Allreduce, a),
        SimCommand::LinkFailure(a) => (BuiltinKind::LinkFailure, a),
    };
    let senders = a.senders.unwrap_or(0) as u64;
    if let Err(e) = at_most("senders (--senders)", senders, MAX_HOSTS as u64) {
        return Some(Err(e.into()));
    }
    let mut s = a.params().scenario(kind);
    s.cnp_interval_us = a.cnp_interval_us;
    s.switch.ecn_at = match a.ecn_at {
        EcnAt::Enqueue => MarkPoint::Enqueue,
        EcnAt::Dequeue => MarkPoint::Dequeue,
    };
    Some(Ok((s, a)))
}

/// Runs `roce sim ...` (errors become one line in `main`), the results written to `stdout`.
pub fn run(cmd: SimCommand, stdout: &mut dyn Write) -> Result<()> {
    if let SimCommand::Compare(args) = cmd {
        return compare::run(args, stdout);
    }
    // What this machine holds: counts in the input are checked against it before anything
    // is allocated for them.
    let limits = memory::available().map_or_else(Limits::default, Limits::for_memory);
    let plan = plan(&cmd, &limits)?;
    let done = execute(&plan, &limits)?;
    report(stdout, &plan, done)
}

/// What a `roce sim` command runs: the scenario, where its results go, what it captures, and
/// the HPCC configuration it came from (`roce sim hpcc`).
struct Plan<'a> {
    scenario: Scenario,
    out: &'a OutputArgs,
    capture: &'a CaptureArgs,
    hpcc: Option<HpccRun>,
}

/// The scenario of `cmd` (a file, an HPCC configuration or a built-in experiment) with its
/// overrides, validated.
fn plan<'a>(cmd: &'a SimCommand, limits: &Limits) -> Result<Plan<'a>> {
    let mut hpcc = None;
    let (scenario, out, capture) = match cmd {
        SimCommand::Hpcc {
            config,
            set,
            out,
            capture,
        } => {
            let run = HpccRun::load_within(config, limits)?;
            if !run.config.ignored.is_empty() {
                output::note(format_args!(
                    "{}: keys that change nothing in this model: {}",
                    config.display(),
                    run.config.ignored.join(" ")
                ));
            }
            for n in &run.not_modelled {
                output::note(format_args!("{}: not modelled: {n}", config.display()));
            }
            let s = set.apply_replacing(run.scenario.clone())?;
            hpcc = Some(run);
            (s, out, capture)
        }
        SimCommand::Run {
            scenario,
            seed,
            set,
            out,
            capture,
        } => {
            let text = read_text(scenario, MAX_SCENARIO_BYTES)?;
            let mut s = set.apply(Scenario::from_toml(&text)?)?;
            if let Some(seed) = seed {
                s.seed = *seed;
            }
            (s, out, capture)
        }

        other => match builtin(other) {
            Some(built) => {
                let (s, a) = built?;
                (apply_sets(s, a.sets.iter().cloned())?, &a.out, &a.capture)
            }
            None => bail!("unknown experiment"),
        },
    };
    scenario.validate()?;
    tracing::info!(seed = scenario.seed, name = %scenario.name, "running scenario (replay with --seed)");
    Ok(Plan {
        scenario,
        out,
        capture,
        hpcc,
    })
}

/// A finished run: its summary, the fabric as it ended, and how fast it went.
struct Done {
    summary: roce_fabric::experiment::summary::RunSummary,
    built: Built,
    speed: RunSpeed,
}

/// Builds the fabric within `limits`, starts the capture and runs the scenario, with a progress
/// bar after a second of wall time (on a terminal, never beside JSON).
fn execute(plan: &Plan, limits: &Limits) -> Result<Done> {
    let (scenario, capture) = (&plan.scenario, plan.capture);
    let started = RunStart::now();
    let bar = ProgressBar::with_draw_target(Some(1000), ProgressDrawTarget::hidden());
    bar.set_style(
        ProgressStyle::with_template("{spinner} {prefix} [{bar:30}] {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar.set_prefix(scenario.name.clone());
    let mut shown = false;
    let mut calls = 0u64;
    let mut built = scenario.build_within(limits, capture.threads)?;
    capture.attach(&mut built)?;
    built.fabric.set_threads(capture.threads)?;
    let (summary, built) = scenario.run_built(built, |frac| {
        calls += 1;
        let wall = started.elapsed();
        // Shown after a second of wall time, on a terminal only (indicatif checks), never
        // beside JSON output.
        if !shown && !plan.out.json && wall > WallDuration::from_secs(1) {
            bar.set_draw_target(ProgressDrawTarget::stderr());
            shown = true;
        }
        if shown {
            let events = calls * roce_fabric::PROGRESS_EVERY;
            let total = scenario.duration_us;
            bar.set_message(sim_status(frac * total, total, events, wall));
        }
        bar.set_position((frac * 1000.0) as u64);
    })?;
    bar.finish_and_clear();
    let idle = built.fabric.idle_samples();
    let handled = summary.events.saturating_sub(summary.events_elided + idle);
    let mut speed = RunSpeed::new(handled, scenario.duration_us / 1e6, &started);
    speed.events_elided = summary.events_elided;
    speed.idle_samples = idle;
    speed.flows = roce_fabric::engines::FlowFootprint::of(&built.fabric);
    Ok(Done {
        summary,
        built,
        speed,
    })
}

/// The capture, the `--out` files and the HPCC output files, then the summary (table or JSON)
/// on `stdout`; a run with failed or stalled flows is an error unless `--allow-failures`.
fn report(stdout: &mut dyn Write, plan: &Plan, done: Done) -> Result<()> {
    let Done {
        summary,
        mut built,
        speed,
    } = done;
    let out = plan.out;
    plan.capture.write(&mut built.fabric)?;
    if let Some(dir) = &out.out {
        report::write_all(dir, &plan.scenario, &summary, built.fabric.recorder())?;
    }
    if let Some(run) = &plan.hpcc {
        // A line at a time, as the flow file is read again.
        let file = std::fs::File::create(&run.fct_output)
            .with_context(|| format!("writing {}", run.fct_output.display()))?;
        run.write_fct(&summary, &mut std::io::BufWriter::new(file))?;
        let pfc = pfc_file::write(&run.pfc_records(built.fabric.pfc_events()));
        std::fs::write(&run.pfc_output, pfc)
            .with_context(|| format!("writing {}", run.pfc_output.display()))?;
    }
    let parallel = built.fabric.parallel_stats();
    let written = if out.json && out.speed {
        let with_speed = SummaryWithSpeed {
            summary: &summary,
            speed,
            parallel,
        };
        output::write_json(stdout, &with_speed, Json::Pretty)
    } else if out.json {
        output::write_json(stdout, &summary, Json::Pretty)
    } else {
        let text = report::text(&summary)
            + &speed.line()
            + &parallel.map_or_else(String::new, parallel_line);
        stdout.write_all(text.as_bytes())
    };
    // Failed flows are said even when the reader went away (`| head`).
    failed_flows(&summary, out.allow_failures)?;
    Ok(written?)
}

/// The error of a run with failed or stalled flows, unless they are allowed.
fn failed_flows(
    summary: &roce_fabric::experiment::summary::RunSummary,
    allowed: bool,
) -> Result<()> {
    let mut failures = summary.failures();
    match failures.next() {
        Some(first) if !allowed => bail!(
            "{} of {} flows failed or stalled ({} QPs in the error state); first: flow {} {} {}: {} (--allow-failures accepts this)",
            summary.failed_flows,
            summary.flows.len(),
            summary.qp_errors,
            first.id,
            first.name,
            first.state.name(),
            first.error.as_deref().unwrap_or("no progress")
        ),
        _ => Ok(()),
    }
}

/// The JSON summary: the fabric's, how fast the run went under `speed`, and on several threads
/// where their time went under `parallel`.
#[derive(serde::Serialize)]
struct SummaryWithSpeed<'a> {
    #[serde(flatten)]
    summary: &'a roce_fabric::experiment::summary::RunSummary,
    speed: RunSpeed,
    #[serde(skip_serializing_if = "Option::is_none")]
    parallel: Option<&'a ParallelStats>,
}

/// `parallel: 2 threads, 1000 windows, ...`: what bounds a split run's speed-up.
fn parallel_line(p: &ParallelStats) -> String {
    let waits: Vec<String> = (0..p.busy_ns.len())
        .map(|k| format!("{:.0}%", p.idle_share(k) * 100.0))
        .collect();
    format!(
        "parallel: {} threads, {} windows, {} crossings; the split's balance allows {:.2}x; waiting at the barrier {}\n",
        p.busy_ns.len(),
        p.windows,
        p.crossings,
        p.balance_bound(),
        waits.join(" / "),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(subcommand)]
        sim: SimCommand,
    }

    /// The ECN thresholds a `roce sim ...` command line gives its switches.
    fn ecn_of(args: &[&str]) -> EcnThresholds {
        let cli = Cli::try_parse_from(std::iter::once("sim").chain(args.iter().copied()))
            .unwrap_or_else(|e| panic!("{args:?}: {e}"));
        let (s, _) = builtin(&cli.sim)
            .expect("a built-in experiment")
            .expect("within the ceilings");
        s.switch.ecn.expect("ECN on")
    }

    #[test]
    fn kmin_and_kmax_take_the_suffixes_of_every_size() {
        let e = ecn_of(&["incast", "--kmin", "5KB", "--kmax", "1MiB"]);
        assert_eq!((e.kmin_bytes, e.kmax_bytes), (5_000, 1 << 20));
        let e = ecn_of(&["incast", "--kmin", "5K", "--kmax", "0.5MB"]);
        assert_eq!((e.kmin_bytes, e.kmax_bytes), (5_120, 500_000));
        // The defaults keep their values: 100 kB and 400 kB.
        let e = ecn_of(&["fairness"]);
        assert_eq!((e.kmin_bytes, e.kmax_bytes), (100_000, 400_000));
        assert!(Cli::try_parse_from(["sim", "incast", "--kmin", "5XB"]).is_err());
    }
}
