//! `roce stats --watch SOURCE`: the counters of a running roce command, refreshed: SOURCE is its
//! `--metrics` endpoint (`127.0.0.1:9464` or `http://...`; the OpenMetrics text is parsed with
//! `prometheus-parse`) or its DPDK telemetry socket (a path: `/roce/ports`, `/roce/port,DEV`,
//! `/roce/qps,DEV`, `/roce/qp,DEV,QPN`, as `dpdk-telemetry.py` asks). Either becomes the same
//! [`StatsReport`] the end-of-run table shows.

use std::collections::BTreeMap;
use std::io::{IsTerminal, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use anyhow::{anyhow, bail, Context};
use serde_json::{Map, Value};

use roce::stats::{PortStats, QpStats, StatsReport};
use roce_proto::counters::RdmaCounters;

/// Where the counters come from.
#[derive(Debug, Clone)]
pub enum Source {
    /// A `--metrics` endpoint (host:port).
    Http(String),
    /// A DPDK telemetry socket.
    #[cfg_attr(not(feature = "dpdk"), allow(dead_code))]
    Telemetry(std::path::PathBuf),
}

impl Source {
    /// `http://HOST:PORT[/metrics]` or `HOST:PORT`: HTTP; a path: a telemetry socket.
    pub fn parse(text: &str) -> anyhow::Result<Source> {
        let t = text.trim();
        if let Some(rest) = t.strip_prefix("http://") {
            let host = rest.split('/').next().unwrap_or(rest);
            return Ok(Source::Http(host.to_owned()));
        }
        if t.starts_with('/') || t.starts_with('.') {
            return Ok(Source::Telemetry(t.into()));
        }
        if t.to_socket_addrs().is_ok() {
            return Ok(Source::Http(t.to_owned()));
        }
        bail!("--watch {text:?}: expected a metrics address (127.0.0.1:9464, http://...) or a telemetry socket path")
    }

    /// The counters now.
    pub fn read(&self) -> anyhow::Result<StatsReport> {
        match self {
            Source::Http(host) => from_openmetrics(&http_get(host)?),
            Source::Telemetry(path) => from_telemetry(path),
        }
    }
}

fn http_get(host: &str) -> anyhow::Result<String> {
    let addr = host
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(|| anyhow!("--watch {host}: not an address"))?;
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2))
        .with_context(|| format!("--watch {host}: nothing serves metrics there"))?;
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    write!(s, "GET /metrics HTTP/1.0\r\nHost: {host}\r\n\r\n")?;
    let mut text = String::new();
    s.read_to_string(&mut text)?;
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| anyhow!("--watch {host}: not an HTTP answer"))?;
    if !head.lines().next().is_some_and(|l| l.contains(" 200 ")) {
        bail!("--watch {host}: {}", head.lines().next().unwrap_or(""));
    }
    Ok(body.to_owned())
}

/// Sets counter `name` of `map` (a JSON object deserialized into [`RdmaCounters`]).
fn counters(map: Map<String, Value>) -> RdmaCounters {
    serde_json::from_value(Value::Object(map)).unwrap_or_default()
}

/// `roce_port_<counter>_total{device}` and `roce_qp_<counter>_total{device,qp}` samples.
pub fn from_openmetrics(text: &str) -> anyhow::Result<StatsReport> {
    let scrape = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_owned())))
        .context("the metrics do not parse")?;
    let mut ports: BTreeMap<String, Map<String, Value>> = BTreeMap::new();
    let mut qps: BTreeMap<(String, u32), Map<String, Value>> = BTreeMap::new();
    for s in &scrape.samples {
        // OpenMetrics names a counter family without its `_total`: some parsers then see the
        // samples as untyped.
        let (prometheus_parse::Value::Counter(v) | prometheus_parse::Value::Untyped(v)) = s.value
        else {
            continue;
        };
        let Some(device) = s.labels.get("device") else {
            continue;
        };
        let value = Value::from(v as u64);
        if let Some(name) = s
            .metric
            .strip_prefix("roce_port_")
            .and_then(|n| n.strip_suffix("_total"))
        {
            ports
                .entry(device.to_owned())
                .or_default()
                .insert(name.to_owned(), value);
        } else if let Some(name) = s
            .metric
            .strip_prefix("roce_qp_")
            .and_then(|n| n.strip_suffix("_total"))
        {
            if let Some(qp) = s.labels.get("qp").and_then(|q| q.parse().ok()) {
                qps.entry((device.to_owned(), qp))
                    .or_default()
                    .insert(name.to_owned(), value);
            }
        }
    }
    Ok(StatsReport {
        ports: ports
            .into_iter()
            .map(|(d, m)| PortStats {
                link: format!("{d}/1"),
                counters: counters(m),
            })
            .collect(),
        qps: qps
            .into_iter()
            .map(|((d, qp), m)| QpStats {
                link: format!("{d}/1"),
                lqpn: qp,
                rqpn: 0,
                counters: counters(m),
            })
            .collect(),
    })
}

#[cfg(feature = "dpdk")]
fn from_telemetry(path: &std::path::Path) -> anyhow::Result<StatsReport> {
    let ask = |cmd: &str| -> anyhow::Result<Value> {
        let reply = roce_dpdk::telemetry::query(path, cmd)
            .with_context(|| format!("--watch {}: no telemetry socket answers", path.display()))?;
        let v: Value = serde_json::from_str(&reply)
            .with_context(|| format!("telemetry answered {reply:?}"))?;
        let key = cmd.split(',').next().unwrap_or(cmd);
        Ok(v.get(key).cloned().unwrap_or(Value::Null))
    };
    let mut report = StatsReport::default();
    let devices = ask("/roce/ports")?;
    for d in devices
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        if let Value::Object(m) = ask(&format!("/roce/port,{d}"))? {
            report.ports.push(PortStats {
                link: format!("{d}/1"),
                counters: counters(m),
            });
        }
        for q in ask(&format!("/roce/qps,{d}"))?
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            if let Value::Object(m) = ask(&format!("/roce/qp,{d},{q}"))? {
                let rqpn = m.get("dest_qpn").and_then(Value::as_u64).unwrap_or(0) as u32;
                report.qps.push(QpStats {
                    link: format!("{d}/1"),
                    lqpn: q.parse().unwrap_or(0),
                    rqpn,
                    counters: counters(m),
                });
            }
        }
    }
    Ok(report)
}

#[cfg(not(feature = "dpdk"))]
fn from_telemetry(path: &std::path::Path) -> anyhow::Result<StatsReport> {
    bail!(
        "--watch {}: reading DPDK telemetry needs roce built with DPDK",
        path.display()
    )
}

/// Writes the table from `source` to `out` (flushed) every `interval`, `count` times (0: until interrupted); on a
/// terminal each refresh replaces the last.
pub fn watch(
    out: &mut dyn Write,
    source: &Source,
    interval: Duration,
    count: u64,
    all: bool,
) -> anyhow::Result<()> {
    let clear = std::io::stdout().is_terminal();
    let mut n = 0u64;
    loop {
        let report = source.read()?;
        if clear {
            write!(out, "\x1b[H\x1b[2J")?;
        }
        writeln!(out, "{}", report.table(all))?;
        out.flush()?;
        n += 1;
        if count > 0 && n >= count {
            return Ok(());
        }
        std::thread::sleep(interval);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openmetrics_counters_become_ports_and_qps() {
        let text = "# TYPE roce_port_np_cnp_sent counter\nroce_port_np_cnp_sent_total{device=\"r\",port=\"1\"} 12\n\
                    # TYPE roce_qp_packet_seq_err counter\nroce_qp_packet_seq_err_total{device=\"s1\",port=\"1\",qp=\"18\"} 3\n\
                    # TYPE roce_qp_cc_alpha_ratio gauge\nroce_qp_cc_alpha_ratio{device=\"s1\",port=\"1\",qp=\"18\"} 0.5\n# EOF\n";
        let r = from_openmetrics(text).expect("parses");
        assert_eq!(r.ports.len(), 1);
        assert_eq!(
            (r.ports[0].link.as_str(), r.ports[0].counters.np_cnp_sent),
            ("r/1", 12)
        );
        assert_eq!(
            (
                r.qps[0].link.as_str(),
                r.qps[0].lqpn,
                r.qps[0].counters.packet_seq_err
            ),
            ("s1/1", 18, 3)
        );
    }

    #[test]
    fn sources_are_told_apart() {
        assert!(
            matches!(Source::parse("127.0.0.1:9464"), Ok(Source::Http(h)) if h == "127.0.0.1:9464")
        );
        assert!(
            matches!(Source::parse("http://127.0.0.1:9/metrics"), Ok(Source::Http(h)) if h == "127.0.0.1:9")
        );
        assert!(matches!(
            Source::parse("/var/run/dpdk/rte/dpdk_telemetry.v2"),
            Ok(Source::Telemetry(_))
        ));
        assert!(Source::parse("nonsense").is_err());
    }
}
