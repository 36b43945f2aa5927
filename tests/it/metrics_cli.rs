//! `--metrics` end to end: a running `roce demo` serves OpenMetrics text that a Prometheus parser
//! reads, whose values are the counters of the run's `--json` output; the same counters answer
//! on DPDK's telemetry socket. Under attack (huge bodies, garbage, a thousand slow clients) the
//! demo still verifies every message, answers scrapes, and keeps its threads and memory.

use crate::support::cli_output;
use crate::support::http_attack;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};

use cli_output::roce;

/// Kills the child when the test ends, however it ends.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `GET /metrics` from `addr`: the body.
fn scrape(addr: &str) -> String {
    let mut s = TcpStream::connect(addr).expect("connect to the metrics endpoint");
    write!(s, "GET /metrics HTTP/1.0\r\nHost: {addr}\r\n\r\n").expect("request");
    let mut text = String::new();
    s.read_to_string(&mut text).expect("response");
    let (head, body) = text.split_once("\r\n\r\n").expect("HTTP response");
    assert!(
        head.starts_with("HTTP/1.") && head.contains(" 200 "),
        "{head}"
    );
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: application/openmetrics-text"),
        "{head}"
    );
    body.to_owned()
}

/// The value of `name` with labels `labels` in a parsed scrape.
/// `scrape` again until its exposition has samples: the run publishes its first snapshot when
/// its loops turn (EAL and the ports come up after the address is printed, slowly on a loaded
/// machine), and until then a scrape is a valid, empty exposition. Gives up after 20 s
/// (returning the last scrape, which the caller's assertions then reject).
fn populated<T>(mut scrape: impl FnMut() -> T, text: impl Fn(&T) -> String) -> T {
    let started = std::time::Instant::now();
    loop {
        let got = scrape();
        let samples = prometheus_parse::Scrape::parse(text(&got).lines().map(|l| Ok(l.to_owned())))
            .map_or(0, |s| s.samples.len());
        if samples > 0 || started.elapsed() > std::time::Duration::from_secs(20) {
            return got;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

fn value(scrape: &prometheus_parse::Scrape, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    scrape
        .samples
        .iter()
        .find(|s| s.metric == name && labels.iter().all(|(k, v)| s.labels.get(k) == Some(v)))
        .map(|s| match s.value {
            prometheus_parse::Value::Counter(v)
            | prometheus_parse::Value::Gauge(v)
            | prometheus_parse::Value::Untyped(v) => v,
            _ => f64::NAN,
        })
}

#[test]
fn metrics_endpoint_parses_and_equals_the_runs_json_counters_and_telemetry() {
    let child = Command::new(env!("CARGO_BIN_EXE_roce"))
        .args([
            "demo",
            "--json",
            "--duration",
            "1s",
            "--bottleneck-gbps",
            "0.2",
            "--seed",
            "3",
            "--metrics",
            "127.0.0.1:0",
            "--metrics-linger",
            "60s",
            // A telemetry socket of its own: the default prefix's belongs to whichever DPDK
            // process started first, and other tests (here or in other test runs) start some.
            "--eal=--file-prefix=roce-metrics-cli-test",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run roce demo");
    let mut child = Running(child);
    let mut err = BufReader::new(child.0.stderr.take().expect("stderr"));
    let (mut addr, mut socket) = (None, None);
    let mut line = String::new();
    while addr.is_none() || socket.is_none() {
        line.clear();
        assert!(
            err.read_line(&mut line).expect("stderr") > 0,
            "no metrics address on stderr"
        );
        if let Some(a) = line.trim().strip_prefix("metrics: http://") {
            addr = a.strip_suffix("/metrics").map(str::to_owned);
        }
        if let Some(s) = line.trim().strip_prefix("telemetry: ") {
            socket = s.split(' ').next().map(str::to_owned);
        }
    }
    let addr = addr.expect("address");
    // A scrape while traffic runs already shows CNPs (once the run's loops published their
    // first snapshot: before, a scrape is a valid, empty exposition).
    let live = populated(|| scrape(&addr), String::clone);
    let live =
        prometheus_parse::Scrape::parse(live.lines().map(|l| Ok(l.to_owned()))).expect("parses");
    assert!(live.samples.len() > 50, "{} samples", live.samples.len());
    // The JSON document comes when the run is over; the endpoint keeps serving (--metrics-linger).
    let mut out = BufReader::new(child.0.stdout.take().expect("stdout"));
    let mut json = String::new();
    loop {
        let mut l = String::new();
        assert!(
            out.read_line(&mut l).expect("stdout") > 0,
            "stdout ended before the JSON did"
        );
        json.push_str(&l);
        if l == "}\n" {
            break;
        }
    }
    let doc: serde_json::Value = serde_json::from_str(&json).expect("JSON summary");
    let text = scrape(&addr);
    let s = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_owned())))
        .expect("the exposition parses");
    let ports = doc["stats"]["ports"].as_array().expect("stats.ports");
    assert_eq!(ports.len(), 3, "r, s1, s2");
    let mut compared = 0;
    for p in ports {
        let device = p["link"]
            .as_str()
            .and_then(|l| l.strip_suffix("/1"))
            .expect("link NAME/1");
        for (name, v) in p["counters"].as_object().expect("counters") {
            let got = value(
                &s,
                &format!("roce_port_{name}_total"),
                &[("device", device), ("port", "1")],
            );
            assert_eq!(got, v.as_u64().map(|v| v as f64), "{device} {name}");
            compared += 1;
        }
    }
    for q in doc["stats"]["qps"].as_array().expect("stats.qps") {
        let device = q["link"]
            .as_str()
            .and_then(|l| l.strip_suffix("/1"))
            .expect("link");
        let qpn = q["lqpn"].to_string();
        for (name, v) in q["counters"].as_object().expect("counters") {
            let got = value(
                &s,
                &format!("roce_qp_{name}_total"),
                &[("device", device), ("qp", &qpn)],
            );
            assert_eq!(
                got,
                v.as_u64().map(|v| v as f64),
                "{device} qp {qpn} {name}"
            );
            compared += 1;
        }
    }
    assert!(compared > 100, "{compared} values compared");
    let cnps = doc["counters"]["np_cnp_sent"]
        .as_u64()
        .expect("np_cnp_sent");
    assert!(cnps > 0, "the run sent no CNP");
    assert_eq!(
        value(&s, "roce_port_np_cnp_sent_total", &[("device", "r")]),
        Some(cnps as f64)
    );
    let marked = doc["switch"]["ecn_marked"].as_u64().expect("ecn_marked");
    assert_eq!(
        value(
            &s,
            "roce_switch_ecn_marked_packets_total",
            &[("device", "switch")]
        ),
        Some(marked as f64)
    );
    // DPDK's telemetry socket answers the same counters.
    let socket = std::path::PathBuf::from(socket.expect("telemetry socket"));
    let reply = roce_dpdk::telemetry::query(&socket, "/roce/port,r").expect("telemetry answers");
    let t: serde_json::Value = serde_json::from_str(&reply).expect("telemetry JSON");
    assert_eq!(
        t["/roce/port"]["np_cnp_sent"].as_u64(),
        Some(cnps),
        "{reply}"
    );
    let devices = roce_dpdk::telemetry::query(&socket, "/roce/ports").expect("telemetry answers");
    assert_eq!(devices, r#"{"/roce/ports":["r","s1","s2"]}"#);
    // roce stats --watch shows the same table from either source.
    let table = |source: &str| {
        let (code, out, err) = roce(&["stats", "--watch", source, "--count", "1"]);
        assert_eq!(code, 0, "{err}");
        out
    };
    for source in [addr.as_str(), socket.to_str().expect("utf-8 path")] {
        let t = table(source);
        let row: Vec<&str> = t
            .lines()
            .find(|l| l.split_whitespace().next() == Some("np_cnp_sent"))
            .unwrap_or_else(|| panic!("no np_cnp_sent row from {source}:\n{t}"))
            .split_whitespace()
            .collect();
        // Columns r/1, s1/1, s2/1, total.
        assert_eq!(
            row.get(1).copied(),
            Some(cnps.to_string().as_str()),
            "{source}:\n{t}"
        );
        assert!(t.contains("Counters per QP"), "{t}");
    }
}

/// The role of this test binary's helper processes (slow clients).
const ROLE: &str = "ROCE_METRICS_CLI_TEST_ROLE";

/// How far a demo under attack may grow beyond its peak memory before the attack: the server's
/// own worst case is 2 MiB of head buffers plus the renderings unfinished answers hold.
const ATTACK_MEMORY_BOUND_KB: u64 = 32 * 1024;

#[test]
fn a_demo_under_http_attack_verifies_every_message_and_answers_scrapes() {
    const TEST: &str = "a_demo_under_http_attack_verifies_every_message_and_answers_scrapes";
    if http_attack::slow_helper_role(ROLE) {
        return;
    }
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let child = Command::new(env!("CARGO_BIN_EXE_roce"))
        .args([
            "demo",
            "--duration",
            "4s",
            "--bottleneck-gbps",
            "0.2",
            "--seed",
            "5",
            "--metrics",
            "127.0.0.1:0",
            "--metrics-linger",
            "2s",
            // No telemetry socket: it would be shared with the other test's demo.
            "--eal=--no-telemetry",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run roce demo");
    let mut child = Running(child);
    let pid = child.0.id();
    let mut err = BufReader::new(child.0.stderr.take().expect("stderr"));
    let addr: std::net::SocketAddr = loop {
        let mut line = String::new();
        assert!(
            err.read_line(&mut line).expect("stderr") > 0,
            "no metrics address on stderr"
        );
        if let Some(a) = line.trim().strip_prefix("metrics: http://") {
            break a
                .strip_suffix("/metrics")
                .and_then(|a| a.parse().ok())
                .expect("address");
        }
    };
    let stderr = std::thread::spawn(move || {
        let mut rest = String::new();
        let _ = err.read_to_string(&mut rest);
        rest
    });
    let parses = |r: &http_attack::Response| {
        assert_eq!(r.status, 200, "{}", r.head);
        let text = String::from_utf8_lossy(&r.body);
        let s = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_owned())))
            .expect("the exposition parses");
        assert!(s.samples.len() > 50, "{} samples", s.samples.len());
    };
    let first = populated(
        || http_attack::scrape(addr).0,
        |r| String::from_utf8_lossy(&r.body).into_owned(),
    );
    parses(&first);
    let threads = http_attack::proc_status(pid, "Threads");
    let hwm = http_attack::proc_status(pid, "VmHWM");

    // Huge bodies, garbage and oversize heads, over and over, until the run ends.
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    let noise = std::thread::spawn(move || {
        let mut post = b"POST /metrics HTTP/1.1\r\nContent-Length: 99999999999999\r\n\r\n".to_vec();
        post.resize(post.len() + 64 * 1024, b'x');
        let mut long = b"GET /metrics HTTP/1.1\r\nX: ".to_vec();
        long.resize(32 * 1024, b'a');
        let attacks: [(&[u8], u16); 4] = [
            (&post, 405),
            (
                b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03garbage\r\n\r\n",
                400,
            ),
            (&long, 431),
            (
                b"GET /metrics HTTP/1.1\r\nContent-Length: 99999999999999\r\n\r\n",
                413,
            ),
        ];
        let mut rounds = 0;
        while !s.load(Ordering::Relaxed) {
            for (bytes, status) in &attacks {
                let r = http_attack::exchange(addr, bytes);
                assert_eq!(r.status, *status, "{}", r.head);
            }
            rounds += 1;
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        rounds
    });
    let (slow, connected) =
        http_attack::slow_helpers(&http_attack::listed(module_path!(), TEST), ROLE, addr, 1000);
    assert!(
        connected >= 900,
        "{connected} of 1000 slow clients connected"
    );
    let (r, took) = http_attack::scrape(addr);
    parses(&r);
    let attacked_threads = http_attack::proc_status(pid, "Threads");
    let names = http_attack::proc_thread_names(pid);
    assert_eq!(attacked_threads, threads, "threads under attack: {names:?}");
    assert_eq!(
        names
            .iter()
            .filter(|n| n.starts_with("roce-metrics"))
            .count(),
        2,
        "{names:?}"
    );

    // The run ends on its own, every message verified.
    let mut stdout = BufReader::new(child.0.stdout.take().expect("stdout"));
    let mut out = String::new();
    while !out.lines().any(|l| l.starts_with("Verified: ")) {
        assert!(
            stdout.read_line(&mut out).expect("stdout") > 0,
            "no verdict: {out}"
        );
    }
    assert!(
        out.lines()
            .any(|l| l.starts_with("Verified: all ") && l.ends_with("; no transport errors.")),
        "{out}"
    );
    // Still lingering: its peak memory is there to read.
    let attacked_hwm = http_attack::proc_status(pid, "VmHWM");
    stop.store(true, Ordering::Relaxed);
    let rounds = noise.join().expect("the noise thread's answers");
    drop(slow);
    let status = child.0.wait().expect("wait");
    let err = stderr.join().expect("stderr");
    assert!(status.success(), "{status}: {err}");
    assert!(
        attacked_hwm <= hwm + ATTACK_MEMORY_BOUND_KB,
        "peak memory {attacked_hwm} kB under attack, {hwm} kB before"
    );
    assert!(rounds > 0);
    println!(
        "under attack: scrape answered in {took:?}; {rounds} rounds of hostile requests; threads {attacked_threads} (before: {threads}); VmHWM {attacked_hwm} kB (before: {hwm} kB)"
    );
}
