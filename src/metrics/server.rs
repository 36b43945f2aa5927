//! The `--metrics ADDR:PORT` endpoint: `GET /metrics` answers the hub's exposition as
//! OpenMetrics text, from a thread of its own (`tiny_http` does HTTP). Anything else is a 404.

use std::net::SocketAddr;
use std::sync::Arc;
use std::thread::JoinHandle;

use anyhow::anyhow;

use super::{exposition, MetricsHub};

/// A running metrics endpoint; stops when dropped.
pub struct MetricsServer {
    server: Arc<tiny_http::Server>,
    thread: Option<JoinHandle<()>>,
    addr: SocketAddr,
}

impl MetricsServer {
    /// Listens on `addr` (port 0: any free port) and serves `hub`.
    pub fn start(addr: SocketAddr, hub: Arc<MetricsHub>) -> anyhow::Result<MetricsServer> {
        let server = tiny_http::Server::http(addr)
            .map_err(|e| anyhow!("--metrics {addr}: cannot listen: {e}"))?;
        let addr = server
            .server_addr()
            .to_ip()
            .ok_or_else(|| anyhow!("--metrics {addr}: not an IP listener"))?;
        let server = Arc::new(server);
        let s = server.clone();
        let thread = std::thread::Builder::new()
            .name("roce-metrics".into())
            .spawn(move || {
                for req in s.incoming_requests() {
                    answer(req, &hub);
                }
            })
            .map_err(|e| anyhow!("cannot start the metrics thread: {e}"))?;
        tracing::info!(%addr, "serving metrics");
        Ok(MetricsServer {
            server,
            thread: Some(thread),
            addr,
        })
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

fn answer(req: tiny_http::Request, hub: &MetricsHub) {
    let path = req.url().split('?').next().unwrap_or("");
    let resp = if *req.method() == tiny_http::Method::Get && path == "/metrics" {
        let text = exposition::render(&hub.collect());
        let mut resp = tiny_http::Response::from_string(text);
        if let Ok(h) =
            tiny_http::Header::from_bytes(&b"Content-Type"[..], exposition::CONTENT_TYPE.as_bytes())
        {
            resp.add_header(h);
        }
        resp
    } else {
        tiny_http::Response::from_string("roce serves /metrics only\n").with_status_code(404)
    };
    if let Err(e) = req.respond(resp) {
        tracing::debug!(error = %e, "metrics client went away");
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.server.unblock();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
