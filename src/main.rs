//! The `roce` command line.

use clap::{Parser, Subcommand};

mod cli {
    pub mod cc;
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
    /// Print the compile-time limits.
    Limits,
    /// Run experiments in the deterministic virtual-time fabric.
    #[command(subcommand)]
    Sim(cli::sim::SimCommand),
    /// Congestion control: show a controller's parameters, replay a CNP script against it.
    Cc {
        #[command(subcommand)]
        cmd: cli::cc::CcCommand,
    },
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
        Command::Sim(cmd) => cli::sim::run(cmd)?,
        Command::Cc { cmd } => cli::cc::main(cmd),
    }
    Ok(())
}
