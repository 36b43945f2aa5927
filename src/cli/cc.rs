//! `roce cc`: print a congestion controller's parameters, or replay a scripted CNP sequence
//! against it and print how rate, target rate and alpha evolve.

use std::io::Write as _;

use anyhow::{anyhow, bail};
use clap::Subcommand;
use roce_proto::cc::replay::{parse_events, parse_time, replay, ReplayConfig};
use roce_proto::cc::{CcConfig, Rate, Sample};

/// `roce cc ...`
#[derive(Subcommand, Debug)]
pub enum CcCommand {
    /// Print a controller's full parameter set (names: none, dcqcn-paper, dcqcn-mlx, dctcp,
    /// timely, patched-timely, hpcc).
    Show {
        /// The controller.
        name: String,
        /// Override a parameter (repeatable): --set rpg_ai_rate=10
        #[arg(long = "set", value_name = "PARAM=VALUE")]
        set: Vec<String>,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Feed a controller a scripted CNP sequence while it sends at its allowed rate.
    Replay {
        /// The controller.
        #[arg(long)]
        cc: String,
        /// Override a parameter (repeatable): --set rpg_ai_rate=10
        #[arg(long = "set", value_name = "PARAM=VALUE")]
        set: Vec<String>,
        /// Line rate in Gbit/s.
        #[arg(long, default_value_t = 100.0)]
        line_gbps: f64,
        /// The script: comma-separated cnp@TIME / loss@TIME, e.g. "cnp@0us,cnp@12us".
        #[arg(long, default_value = "")]
        events: String,
        /// How long to run, e.g. 5ms.
        #[arg(long, default_value = "5ms")]
        duration: String,
        /// Frame size of the packets sent, bytes.
        #[arg(long, default_value_t = 4096)]
        mtu: u64,
        /// Print JSON: a list of {t_us, rate_gbps, target_gbps, alpha} at every change.
        #[arg(long)]
        json: bool,
        /// Print CSV with every recorded sample instead.
        #[arg(long, conflicts_with = "json")]
        csv: bool,
    },
}

/// One printed point of a replay.
#[derive(serde::Serialize)]
struct Point {
    t_us: f64,
    rate_gbps: f64,
    target_gbps: f64,
    alpha: f64,
}

fn config(name: &str, line: Rate, set: &[String]) -> anyhow::Result<CcConfig> {
    let mut cfg = CcConfig::new(name, line)?;
    for s in set {
        cfg.apply(s)?;
    }
    Ok(cfg)
}

/// Keeps the first sample and every one whose rate, target or alpha differ from the previous.
fn changes(samples: &[Sample]) -> Vec<Sample> {
    let mut out: Vec<Sample> = Vec::new();
    for s in samples {
        let same = out.last().is_some_and(|l| {
            l.rate_bps == s.rate_bps && l.target_bps == s.target_bps && l.alpha == s.alpha
        });
        if !same {
            out.push(*s);
        }
    }
    out
}

/// Runs one `roce cc` command.
pub fn run(cmd: CcCommand) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match cmd {
        CcCommand::Show { name, set, json } => {
            let cfg = config(&name, Rate::from_gbps(100), &set)?;
            let params = cfg.describe();
            if json {
                writeln!(out, "{}", serde_json::to_string_pretty(&params)?)?;
            } else {
                writeln!(out, "{} ({} parameters)", cfg.name(), params.len())?;
                for p in params {
                    writeln!(out, "  {p}")?;
                }
            }
        }
        CcCommand::Replay {
            cc,
            set,
            line_gbps,
            events,
            duration,
            mtu,
            json,
            csv,
        } => {
            if !(line_gbps.is_finite() && line_gbps > 0.0 && line_gbps <= 10_000.0) {
                bail!("bad --line-gbps {line_gbps}: expected a rate in (0, 10000] Gbit/s");
            }
            if mtu == 0 || mtu > 1 << 20 {
                bail!("bad --mtu {mtu}: expected 1..=1048576 bytes");
            }
            let line = Rate::from_bps_f64(line_gbps * 1e9);
            let cfg = config(&cc, line, &set)?;
            let duration = parse_time(&duration).map_err(|e| anyhow!("--duration: {e}"))?;
            let events = parse_events(&events).map_err(|e| anyhow!("--events: {e}"))?;
            let samples = replay(
                cfg.build(),
                &ReplayConfig {
                    mtu,
                    duration,
                    events,
                },
            );
            if csv {
                write!(out, "{}", roce_proto::cc::recorder::to_csv(&samples))?;
                return Ok(());
            }
            let points: Vec<Point> = changes(&samples)
                .iter()
                .map(|s| Point {
                    t_us: s.t_ns as f64 / 1e3,
                    rate_gbps: s.rate_bps as f64 / 1e9,
                    target_gbps: s.target_bps as f64 / 1e9,
                    alpha: s.alpha,
                })
                .collect();
            if json {
                writeln!(out, "{}", serde_json::to_string(&points)?)?;
            } else {
                writeln!(
                    out,
                    "{:>12} {:>12} {:>12} {:>10}",
                    "t_us", "rate_gbps", "target_gbps", "alpha"
                )?;
                for p in points {
                    writeln!(
                        out,
                        "{:>12.3} {:>12.6} {:>12.6} {:>10.6}",
                        p.t_us, p.rate_gbps, p.target_gbps, p.alpha
                    )?;
                }
            }
        }
    }
    Ok(())
}
