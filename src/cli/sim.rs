//! `roce sim`: run a scenario file or a built-in experiment in the virtual-time fabric, print a
//! summary table (or JSON) and optionally write time series and plots.
//!
//! Built-ins are scenarios made from flags; `--out DIR` saves the scenario they ran as TOML, so
//! any run can be replayed with `roce sim run DIR/scenario.toml`.

use std::io::Write as _;
use std::path::PathBuf;
use std::time::{Duration as WallDuration, Instant as WallInstant};

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand, ValueEnum};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use roce::sim::report;
use roce::sim::scenario::{LinkEvent, Scenario, SwitchSpec, TopologySpec};
use roce::sim::workload::Workload;
use roce::sim::{EcnConfig, LinkConfig};

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
        out: OutputArgs,
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
}

/// Where results go.
#[derive(Args, Debug)]
pub struct OutputArgs {
    /// Print the summary as JSON.
    #[arg(long)]
    json: bool,
    /// Write summary, scenario, time-series CSVs and SVG plots here.
    #[arg(long)]
    out: Option<PathBuf>,
}

/// PFC switch.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnOff {
    /// Enabled.
    On,
    /// Disabled.
    Off,
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
    /// ECN Kmin, bytes (suffix K or M allowed).
    #[arg(long, value_parser = parse_bytes, default_value = "100K")]
    kmin: u64,
    /// ECN Kmax, bytes (suffix K or M allowed).
    #[arg(long, value_parser = parse_bytes, default_value = "400K")]
    kmax: u64,
    /// ECN marking probability at Kmax (0 turns marking off).
    #[arg(long, default_value_t = 0.2)]
    pmax: f64,
    /// Congestion control of the senders.
    #[arg(long, default_value = "none")]
    cc: String,
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
    #[command(flatten)]
    out: OutputArgs,
}

fn parse_bytes(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let (num, mult) = match s.char_indices().last() {
        Some((i, 'k' | 'K')) => (&s[..i], 1_000),
        Some((i, 'm' | 'M')) => (&s[..i], 1_000_000),
        _ => (s, 1),
    };
    num.parse::<f64>()
        .ok()
        .filter(|v| *v >= 0.0)
        .map(|v| (v * mult as f64) as u64)
        .ok_or_else(|| format!("{s:?} is not a byte count (e.g. 100K)"))
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
    fn base(&self, name: &str, topology: TopologySpec, default_us: f64) -> Scenario {
        let ecn = (self.pmax > 0.0).then_some(EcnConfig {
            kmin_bytes: self.kmin,
            kmax_bytes: self.kmax,
            pmax: self.pmax,
            step_bytes: None,
        });
        Scenario {
            name: name.into(),
            seed: self.seed,
            duration_us: self.duration.unwrap_or(default_us),
            warmup_us: self.warmup,
            sample_us: 1.0,
            cc: self.cc.clone(),
            mtu: 1024,
            message_bytes: 1 << 20,
            cnp_interval_us: 50.0,
            topology,
            switch: SwitchSpec {
                pfc: self.pfc == OnOff::On,
                ecn,
                ..SwitchSpec::default()
            },
            workloads: Vec::new(),
            link_events: Vec::new(),
            monitor_host: None,
        }
    }

    fn link(&self) -> LinkConfig {
        LinkConfig::new(self.link_gbps, (self.delay_us * 1000.0).round() as u64)
    }
}

/// The scenario a built-in experiment runs.
pub fn builtin(cmd: &SimCommand) -> Option<(Scenario, &OutputArgs)> {
    let (name, a) = match cmd {
        SimCommand::Run { .. } => return None,
        SimCommand::Incast(a) => ("incast", a),
        SimCommand::Fairness(a) => ("fairness", a),
        SimCommand::PfcSpreading(a) => ("pfc-spreading", a),
        SimCommand::Allreduce(a) => ("allreduce", a),
        SimCommand::LinkFailure(a) => ("link-failure", a),
    };
    let link = a.link();
    let s = match name {
        "incast" => {
            let n = a.senders.unwrap_or(16);
            let mut s = a.base(name, TopologySpec::Star { hosts: n + 1, link }, 2_000.0);
            s.workloads.push(Workload::Incast {
                senders: (0..n).collect(),
                receiver: n,
                bytes: None,
                start_us: 0.0,
            });
            s
        }
        "fairness" => {
            let n = a.senders.unwrap_or(4);
            let mut s = a.base(name, TopologySpec::Dumbbell { left: n, right: n, link, core: link }, 2_000.0);
            for i in 0..n {
                s.workloads.push(flow(i, n + i, 0.0));
            }
            s
        }
        "pfc-spreading" => {
            // Left: victim sender 0 and incast senders 1..=k; right: incast receiver, victim
            // receiver, then k more incast senders. The core has room for everything.
            let k = a.senders.unwrap_or(4).div_ceil(2).max(1);
            let core = LinkConfig::new((a.link_gbps * (k as f64 + 2.0)).min(800.0), link.delay_ns);
            let left = k + 1;
            let right = k + 2;
            let mut s = a.base(name, TopologySpec::Dumbbell { left, right, link, core }, 2_000.0);
            let receiver = left;
            let victim_dst = left + 1;
            let mut senders: Vec<usize> = (1..=k).collect();
            senders.extend(left + 2..left + 2 + k);
            s.workloads.push(flow(0, victim_dst, 0.0));
            s.workloads.push(Workload::Incast {
                senders,
                receiver,
                bytes: None,
                start_us: 0.0,
            });
            s.monitor_host = Some(receiver);
            s
        }
        "allreduce" => {
            let n = a.senders.unwrap_or(8);
            let mut s = a.base(name, TopologySpec::Star { hosts: n, link }, 2_000.0);
            s.workloads.push(Workload::AllReduce {
                hosts: (0..n).collect(),
                bytes: 4 << 20,
                iterations: 1000,
            });
            s
        }
        _ => {
            let n = a.senders.unwrap_or(4);
            let topo = TopologySpec::LeafSpine {
                leaves: 2,
                spines: 2,
                hosts_per_leaf: n,
                rails: 1,
                link,
                uplink: link,
            };
            let mut s = a.base(name, topo, 3_000.0);
            for i in 0..n {
                s.workloads.push(flow(i, n + i, 0.0));
            }
            let t = s.duration_us;
            for (at_us, up) in [(t / 3.0, false), (2.0 * t / 3.0, true)] {
                s.link_events.push(LinkEvent {
                    a: "leaf0r0".into(),
                    b: "spine0r0".into(),
                    at_us,
                    up,
                });
            }
            s
        }
    };
    Some((s, &a.out))
}

fn flow(src: usize, dst: usize, start_us: f64) -> Workload {
    Workload::Flow {
        src,
        dst,
        bytes: None,
        start_us,
        rate_gbps: None,
        dscp: 26,
        send: false,
    }
}

/// Runs `roce sim ...`; a failure prints one line (`error: what: why`) and exits with status 2.
pub fn run(cmd: SimCommand) -> Result<()> {
    if let Err(e) = run_inner(cmd) {
        eprintln!("error: {e:#}");
        std::process::exit(2);
    }
    Ok(())
}

fn run_inner(cmd: SimCommand) -> Result<()> {
    let (scenario, out) = match &cmd {
        SimCommand::Run { scenario, seed, out } => {
            let text = std::fs::read_to_string(scenario).with_context(|| format!("reading {}", scenario.display()))?;
            let mut s = Scenario::from_toml(&text)?;
            if let Some(seed) = seed {
                s.seed = *seed;
            }
            (s, out)
        }
        other => match builtin(other) {
            Some(x) => x,
            None => bail!("unknown experiment"),
        },
    };
    scenario.validate()?;
    tracing::info!(seed = scenario.seed, name = %scenario.name, "running scenario (replay with --seed)");
    let started = WallInstant::now();
    let bar = ProgressBar::with_draw_target(Some(1000), ProgressDrawTarget::hidden());
    bar.set_style(
        ProgressStyle::with_template("{spinner} {msg} [{bar:40}] {percent}% virtual time, {elapsed}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar.set_message(scenario.name.clone());
    let mut shown = false;
    let (summary, built) = scenario.run(|frac| {
        if !shown && started.elapsed() > WallDuration::from_secs(1) {
            bar.set_draw_target(ProgressDrawTarget::stderr());
            shown = true;
        }
        bar.set_position((frac * 1000.0) as u64);
    })?;
    bar.finish_and_clear();
    if let Some(dir) = &out.out {
        report::write_all(dir, &scenario, &summary, built.fabric.recorder())?;
    }
    let text = if out.json {
        serde_json::to_string_pretty(&summary)? + "\n"
    } else {
        summary.table()
    };
    // A closed pipe (`| head`) is not an error worth a panic.
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
    Ok(())
}
