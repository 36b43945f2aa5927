//! `roce cc`: list the registered congestion controllers, print one's parameters, or replay a
//! scripted sequence of CNPs, ACKs with RTT samples, INT records and losses against it and print
//! how rate, target rate and alpha evolve.

use std::io::Write;

use anyhow::{anyhow, bail};
use clap::Subcommand;
use roce_proto::cc::replay::{parse_events, parse_time, replay, ReplayConfig};
use roce_proto::cc::{CcConfig, CcEntry, CcRegistry, Rate, Sample};

use crate::cli::output::{write_json, Json};

/// `roce cc ...`
#[derive(Subcommand, Debug)]
pub enum CcCommand {
    /// List every congestion controller `--cc` and scenario files accept, with a line each.
    List {
        /// Print JSON (name, aliases, about, parameters with defaults, units and help).
        #[arg(long)]
        json: bool,
    },
    /// Print a controller's full parameter set (see `roce cc list` for the names).
    Show {
        /// The controller (see `roce cc list`).
        name: String,
        /// Override a parameter (repeatable): --set rpg_ai_rate=10
        #[arg(long = "set", value_name = "PARAM=VALUE")]
        set: Vec<String>,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Feed a controller a scripted sequence of congestion signals while it sends at its allowed
    /// rate.
    ///
    /// The script (--events, or --script FILE with one event per line; `#` comments) lists
    /// events KIND@TIME [FIELDS], separated by commas or newlines:
    ///   cnp@TIME                          a CNP (DCQCN, DCTCP)
    ///   loss@TIME                         a loss (NAK sequence error or timeout)
    ///   ack@TIME [bytes=SIZE] [rtt=TIME]  an ACK, with an RTT sample if given
    ///   rtt@TIME RTT                      short for ack@TIME rtt=RTT (TIMELY)
    ///   int@TIME hop=QLEN/TX/TS/RATE ...  INT records, one hop= per switch (HPCC): queue
    ///                                     bytes, tx byte counter, switch timestamp, link rate
    /// e.g. "rtt@10us 60us, rtt@20us 80us" or "int@10us hop=50KB/0/10us/100G".
    /// A malformed event is one error line naming its line number.
    #[command(verbatim_doc_comment)]
    Replay {
        /// The controller (see `roce cc list`).
        #[arg(long)]
        cc: String,
        /// Override a parameter (repeatable): --set rpg_ai_rate=10
        #[arg(long = "set", value_name = "PARAM=VALUE")]
        set: Vec<String>,
        /// Line rate in Gbit/s.
        #[arg(long, default_value_t = 100.0)]
        line_gbps: f64,
        /// The script inline: events separated by commas, e.g. "cnp@0us,cnp@12us".
        #[arg(long, default_value = "")]
        events: String,
        /// The script from a file, one event per line (after --events' events).
        #[arg(long, value_name = "FILE")]
        script: Option<std::path::PathBuf>,
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

/// One controller as `roce cc list --json` prints it.
#[derive(serde::Serialize)]
struct Listed {
    name: &'static str,
    aliases: &'static [&'static str],
    about: &'static str,
    params: Vec<roce_proto::cc::params::ParamInfo>,
}

/// `roce cc list`: every registered controller.
fn list(out: &mut dyn Write, json: bool) -> anyhow::Result<()> {
    let controllers = CcRegistry::builtin();
    let entries: Vec<&CcEntry> = controllers.entries().collect();
    if json {
        let listed: Vec<Listed> = entries
            .iter()
            .map(|e| Listed {
                name: e.name,
                aliases: e.aliases,
                about: e.about,
                params: e.params(),
            })
            .collect();
        write_json(out, &listed, Json::Pretty)?;
        return Ok(());
    }
    for e in entries {
        let name = match e.aliases {
            [] => e.name.to_string(),
            aliases => format!("{} ({})", e.name, aliases.join(", ")),
        };
        writeln!(out, "{name:<24} {}", e.about)?;
    }
    Ok(())
}

/// Runs one `roce cc` command, writing to `out`.
pub fn run(cmd: CcCommand, out: &mut dyn Write) -> anyhow::Result<()> {
    match cmd {
        CcCommand::List { json } => list(out, json)?,
        CcCommand::Show { name, set, json } => {
            let cfg = config(&name, Rate::from_gbps(100), &set)?;
            let params = cfg.describe();
            if json {
                write_json(out, &params, Json::Pretty)?;
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
            script,
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
            let mut events = parse_events(&events).map_err(|e| anyhow!("--events: {e}"))?;
            if let Some(path) = script {
                let text = std::fs::read_to_string(&path)
                    .map_err(|e| anyhow!("--script {}: {e}", path.display()))?;
                let more =
                    parse_events(&text).map_err(|e| anyhow!("--script {}: {e}", path.display()))?;
                events.extend(more);
                events.sort_by_key(|e| e.at);
            }
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
                write_json(out, &points, Json::Line)?;
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
