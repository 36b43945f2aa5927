//! `--pcap FILE --pcap-port NODE:PORT`: capture what crosses one simulated port into a pcapng
//! file with nanosecond timestamps (virtual time from the start of the run) and each frame's
//! direction as its comment. The fabric keeps the frames ([`roce_fabric::record::capture`]); writing
//! the file is done here.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::Args;

use roce::pcap::CaptureWriter;
use roce_fabric::engines::ScenarioEngine;
use roce_fabric::experiment::scenario::Built;
use roce_fabric::Fabric;
use roce_proto::time::Instant;

/// Capture and engine flags of `roce sim run`, `roce sim hpcc` and the built-ins (not of
/// `compare`, whose `--threads` runs whole scenarios side by side).
#[derive(Args, Debug, Default)]
pub struct CaptureArgs {
    /// Run the fabric on up to N threads (partitioned by switch; the results are those of one
    /// thread, bit for bit, link failures and switch reboots included).
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub threads: usize,
    /// Write every frame crossing one port (both directions, ICRCs as sent) to this pcapng
    /// file, with nanosecond virtual timestamps and "sent"/"received" as each frame's comment.
    #[arg(long, value_name = "FILE")]
    pub pcap: Option<PathBuf>,
    /// The port to capture: NODE:PORT with NODE a switch or host name (sw0, leaf1r0, h3) or
    /// host<N> / switch<N>; a host alone means its NIC. Default: the bottleneck egress.
    #[arg(long, value_name = "NODE:PORT", requires = "pcap")]
    pub pcap_port: Option<String>,
}

impl CaptureArgs {
    /// Starts the capture on `built`'s fabric, if asked for.
    pub fn attach(&self, built: &mut Built) -> Result<()> {
        if self.pcap.is_none() {
            return Ok(());
        }
        let (node, port) = match (&self.pcap_port, built.bottleneck) {
            (Some(spec), _) => built
                .fabric
                .find_port(spec)
                .with_context(|| format!("--pcap-port {spec}"))?,
            (None, Some(at)) => at,
            (None, None) => {
                bail!("this topology has no bottleneck port: give --pcap-port NODE:PORT")
            }
        };
        built.fabric.capture_port(node, port);
        Ok(())
    }

    /// Writes the captured frames; returns how many.
    pub fn write(&self, fabric: &mut Fabric<ScenarioEngine>) -> Result<usize> {
        let Some(path) = &self.pcap else {
            return Ok(0);
        };
        let mut w = CaptureWriter::create_pcapng(path)?;
        for f in fabric.drain_captured() {
            let way = if f.outbound { "sent" } else { "received" };
            let since_start = f.at.saturating_since(Instant::ZERO).into();
            w.write_annotated(since_start, &f.frame, Some(way))
                .with_context(|| format!("writing {}", path.display()))?;
        }
        let n = w.frames_written();
        w.finish()
            .with_context(|| format!("writing {}", path.display()))?;
        Ok(n)
    }
}
