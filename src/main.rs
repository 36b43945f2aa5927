//! The `roce` command line.

use clap::{Parser, Subcommand};

#[cfg(feature = "dpdk")]
mod cli {
    pub mod port;
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
    /// Print the compile-time limits.
    Limits,
    /// Inspect DPDK ports.
    #[cfg(feature = "dpdk")]
    #[command(subcommand)]
    Port(cli::port::PortCommand),
}

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    match cli.command {
        Command::Limits => {
            println!("burst_size {}", roce::limits::BURST_SIZE);
            println!("max_frame {}", roce::limits::MAX_FRAME);
            println!("max_qps {}", roce::limits::MAX_QPS);
        }
        #[cfg(feature = "dpdk")]
        Command::Port(cmd) => cli::port::run(cmd)?,
    }
    Ok(())
}
