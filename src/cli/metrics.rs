//! The live-metrics flags every port-using command shares: `--metrics ADDR:PORT` serves the
//! run's counters as OpenMetrics text (and they are on DPDK's telemetry socket as `/roce/...`),
//! `--metrics-linger` keeps serving the final values after the run (for a last scrape).

use std::net::SocketAddr;
use std::sync::Arc;

use clap::Args;

use roce::metrics::server::MetricsServer;
use roce::metrics::MetricsHub;
use roce_dpdk::Eal;

use crate::cli::output::note;
use crate::cli::progress::parse_interval;

/// `--metrics` and `--metrics-linger`.
#[derive(Args, Debug, Clone, Default)]
pub struct MetricsArgs {
    /// Serve live counters (OpenMetrics/Prometheus text) at http://ADDR:PORT/metrics (port 0:
    /// any free port; the address is printed on stderr).
    #[arg(long, value_name = "ADDR:PORT")]
    pub metrics: Option<SocketAddr>,
    /// After the run, keep serving the final counters this long (e.g. 10s) before exiting.
    #[arg(long, value_name = "DURATION", requires = "metrics")]
    pub metrics_linger: Option<String>,
}

impl MetricsArgs {
    /// Registers the `/roce/...` telemetry commands and starts the HTTP endpoint if asked.
    pub fn start(&self, eal: &Eal, hub: &Arc<MetricsHub>) -> anyhow::Result<Option<MetricsServer>> {
        if let Err(e) = roce::metrics::telemetry::register(eal, hub) {
            tracing::warn!(error = %e, "DPDK telemetry: /roce commands not registered");
        }
        if let Some(s) = &self.metrics_linger {
            parse_interval(s).map_err(|e| anyhow::anyhow!("--metrics-linger {e}"))?;
        }
        let Some(addr) = self.metrics else {
            return Ok(None);
        };
        let server = MetricsServer::start(addr, hub.clone())?;
        note(format_args!("metrics: http://{}/metrics", server.addr()));
        let socket = roce_dpdk::telemetry::socket_path(eal);
        match roce_dpdk::telemetry::owner(&socket) {
            Some(pid) if pid == std::process::id() => note(format_args!(
                "telemetry: {} (dpdk-telemetry.py: /roce/ports, /roce/port,DEVICE, /roce/qp,DEVICE,QPN)",
                socket.display()
            )),
            Some(pid) => note(format_args!(
                "telemetry: {} belongs to process {pid}; for a socket of this process's own, start it with --eal --file-prefix=NAME",
                socket.display()
            )),
            None => note("telemetry: no DPDK telemetry socket (EAL started with --no-telemetry?)"),
        }
        Ok(Some(server))
    }

    /// Sleeps for `--metrics-linger` (checked by [`MetricsArgs::start`]).
    pub fn linger(&self) {
        if let Some(d) = self
            .metrics_linger
            .as_deref()
            .and_then(|s| parse_interval(s).ok())
        {
            std::thread::sleep(d);
        }
    }
}
