//! The `roce` command line.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod cli {
    pub mod cc;
    #[cfg(feature = "dpdk")]
    pub mod demo;
    pub mod loopback;
    pub mod oob;
    pub mod pcap;
    #[cfg(feature = "dpdk")]
    pub mod perf;
    #[cfg(feature = "dpdk")]
    pub mod pingpong;
    #[cfg(feature = "dpdk")]
    pub mod port;
    pub mod sim;
}

/// A userspace RoCEv2 transport on DPDK, with the tools to study it.
#[derive(Parser, Debug)]
#[command(name = "roce", version, about)]
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
    /// Speak only the connection-setup exchange of ibv_rc_pingpong, perftest or the pyverbs peer.
    #[command(subcommand)]
    Oob(cli::oob::OobCommand),
    /// Print the compile-time limits.
    Limits,
}

fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Pcap(cmd) => cli::pcap::run(cmd)?,
        Command::Cc { cmd } => cli::cc::run(cmd)?,
        Command::Oob(cmd) => cli::oob::run(cmd)?,
        Command::Loopback(args) => cli::loopback::run(args)?,
        Command::Sim(cmd) => cli::sim::run(cmd)?,
        #[cfg(feature = "dpdk")]
        Command::Demo(args) => cli::demo::run(args)?,
        Command::Limits => {
            println!("burst_size {}", roce::limits::BURST_SIZE);
            println!("max_frame {}", roce::limits::MAX_FRAME);
            println!("max_qps {}", roce::limits::MAX_QPS);
        }
        #[cfg(feature = "dpdk")]
        Command::Port(cmd) => cli::port::run(cmd)?,
        #[cfg(feature = "dpdk")]
        Command::Perf(cmd) => cli::perf::run(cmd)?,
        #[cfg(feature = "dpdk")]
        Command::Pingpong(args) => cli::pingpong::run(args)?,
    }
    Ok(())
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        // A reader that went away (`roce pcap check f | head`) is not an error.
        Err(e)
            if e.chain().any(|c| {
                c.downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            }) =>
        {
            ExitCode::SUCCESS
        }
        Err(e) => {
            // One clear line: the error and its causes, joined.
            eprintln!("roce: {e:#}");
            ExitCode::FAILURE
        }
    }
}
