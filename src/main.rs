//! The `roce` command line.

use std::io::Write;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// jemalloc, built to back the heap with transparent huge pages (`.cargo/config.toml`): a
/// datacenter-sized simulation is memory-bound, and on 4 KB pages the 320-host run took a third
/// more CPU time (BENCHMARKS.md, 2026-12-03, d76c8a2).
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

mod cli {
    pub mod cc;
    #[cfg(feature = "dpdk")]
    pub mod demo;
    pub mod faults;
    pub mod loopback;
    #[cfg(feature = "dpdk")]
    pub mod metrics;
    pub mod oob;
    #[cfg_attr(not(feature = "dpdk"), allow(dead_code))]
    pub mod ops;
    pub mod output;
    pub mod pcap;
    #[cfg(feature = "dpdk")]
    pub mod perf;
    #[cfg(feature = "dpdk")]
    pub mod pingpong;
    #[cfg(feature = "dpdk")]
    pub mod port;
    #[cfg_attr(not(feature = "dpdk"), allow(dead_code))]
    pub mod progress;
    pub mod recovery;
    #[cfg(feature = "dpdk")]
    pub mod session;
    pub mod sim;
    pub mod stats;
}

/// A userspace RoCEv2 transport on DPDK, with the tools to study it.
#[derive(Parser, Debug)]
#[command(name = "roce", version = concat!(env!("CARGO_PKG_VERSION"), " (", env!("ROCE_COMMIT"), ")"), about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Senders and a receiver on DPDK virtual ports through a bottlenecked ECN switch: WRITE,
    /// SEND and READ flows, ECN marks, CNPs and DCQCN in real time, every byte verified.
    #[cfg(feature = "dpdk")]
    Demo(cli::demo::DemoArgs),
    /// Two endpoints in one process over an in-memory (optionally lossy) link, every byte verified.
    Loopback(cli::loopback::LoopbackArgs),
    /// perftest's bandwidth and latency tests over a DPDK port (write-bw, send-lat, ...).
    #[cfg(feature = "dpdk")]
    #[command(subcommand)]
    Perf(cli::perf::PerfCommand),
    /// ibv_rc_pingpong over a DPDK port (speaks its TCP exchange: the real tool can be the peer).
    #[cfg(feature = "dpdk")]
    Pingpong(cli::pingpong::PingpongArgs),
    /// Run experiments in the deterministic virtual-time fabric.
    #[command(subcommand)]
    Sim(cli::sim::SimCommand),
    /// Congestion control: show a controller's parameters, replay a CNP script against it.
    Cc {
        #[command(subcommand)]
        cmd: cli::cc::CcCommand,
    },
    /// Check and explain packet captures.
    #[command(subcommand)]
    Pcap(cli::pcap::PcapCommand),
    /// Inspect DPDK ports.
    #[cfg(feature = "dpdk")]
    #[command(subcommand)]
    Port(cli::port::PortCommand),
    /// Counters of a finished run, as `rdma statistic` shows them: reads any command's `--json`
    /// output (a file, or stdin: `roce demo --json | roce stats`).
    Stats(cli::stats::StatsArgs),
    /// Speak only the connection-setup exchange of ibv_rc_pingpong, perftest or the pyverbs peer.
    #[command(subcommand)]
    Oob(cli::oob::OobCommand),
    /// Print the compile-time limits.
    Limits,
}

/// Runs the command, its results written to `out`.
fn run(cli: Cli, out: &mut dyn Write) -> anyhow::Result<()> {
    match cli.command {
        Command::Pcap(cmd) => cli::pcap::run(cmd, out)?,
        Command::Cc { cmd } => cli::cc::run(cmd, out)?,
        Command::Oob(cmd) => cli::oob::run(cmd, out)?,
        Command::Loopback(args) => cli::loopback::run(args, out)?,
        Command::Sim(cmd) => cli::sim::run(cmd, out)?,
        #[cfg(feature = "dpdk")]
        Command::Demo(args) => cli::demo::run(args, out)?,
        Command::Stats(args) => cli::stats::run(args, out)?,
        Command::Limits => {
            writeln!(out, "burst_size {}", roce_proto::limits::BURST_SIZE)?;
            writeln!(out, "max_frame {}", roce_proto::limits::MAX_FRAME)?;
            writeln!(out, "max_qps {}", roce_proto::limits::MAX_QPS)?;
        }
        #[cfg(feature = "dpdk")]
        Command::Port(cmd) => cli::port::run(cmd, out)?,
        #[cfg(feature = "dpdk")]
        Command::Perf(cmd) => cli::perf::run(cmd, out)?,
        #[cfg(feature = "dpdk")]
        Command::Pingpong(args) => cli::pingpong::run(args, out)?,
    }
    Ok(())
}

/// A write to a closed stdout (`roce ... | head`): the reader has what it wanted.
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    let pipe = Some(std::io::ErrorKind::BrokenPipe);
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>().map(std::io::Error::kind) == pipe
            || c.downcast_ref::<serde_json::Error>()
                .and_then(serde_json::Error::io_error_kind)
                == pipe
    })
}

/// `println!` panics when stdout is a closed pipe. Commands write through `io::Write` and return
/// the error (ended quietly below); this hook is the backstop for a `println!` in a dependency:
/// such a panic ends the process quietly with status 0 instead of printing a panic message.
fn end_quietly_on_closed_stdout() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let p = info.payload();
        let msg = p
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| p.downcast_ref::<&str>().copied())
            .unwrap_or("");
        if msg.starts_with("failed printing to stdout") && msg.contains("os error 32") {
            std::process::exit(0);
        }
        default(info);
    }));
}

/// Help and version go to stdout as clap prints them; a usage error becomes one line
/// (`roce: invalid value 'x' for '--depth <DEPTH>': ...; see --help`) and status 2.
fn usage_error(e: &clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        let _ = e.print();
        return if e.use_stderr() {
            ExitCode::from(2)
        } else {
            ExitCode::SUCCESS
        };
    }
    // The message is the first paragraph (a missing-arguments error lists them on more lines).
    let text = e.render().to_string();
    let para: Vec<&str> = text
        .lines()
        .take_while(|l| !l.trim().is_empty())
        .map(str::trim)
        .collect();
    let msg = para.join(" ");
    let msg = msg.strip_prefix("error: ").unwrap_or(&msg);
    cli::output::error(format_args!("{msg} (see --help)"));
    ExitCode::from(2)
}

fn main() -> ExitCode {
    end_quietly_on_closed_stdout();
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage_error(&e),
    };
    let mut out = cli::output::stdout();
    let result = run(cli, &mut out);
    // What the command wrote comes out before its error line, if any.
    let flushed = out.flush();
    drop(out);
    match result.and_then(|()| Ok(flushed?)) {
        Ok(()) => ExitCode::SUCCESS,
        // A reader that went away (`roce pcap check f | head`) is not an error.
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            // One clear line: the error and its causes, joined.
            cli::output::error(format_args!("{e:#}"));
            ExitCode::FAILURE
        }
    }
}
