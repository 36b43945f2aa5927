//! `roce perf` end to end: two processes on DPDK net_tap ports bridged in a network namespace
//! (tools/netns.sh), TCP for the exchange over the namespace's kernel address. Needs root (CI
//! runs as root); without it the tests fail, unless `ROCE_TEST_SKIP=root` lets them skip.

use roce_testkit::{perftest_output, skip};

use std::process::{Child, Command, Output, Stdio};
use std::sync::Mutex;

use perftest_output::result_row;

/// One namespace at a time: each test runs two busy-polling processes.
static SERIAL: Mutex<()> = Mutex::new(());

const NETNS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tools/netns.sh");
const ROCE: &str = env!("CARGO_BIN_EXE_roce");

/// The namespace and the processes in it; dropping it kills what is left and deletes the
/// namespace (taps and bridge go with it), also when the test fails.
struct Netns {
    ns: String,
    children: Vec<Child>,
}

impl Netns {
    fn up(ns: &str) -> Netns {
        let n = Netns {
            ns: ns.to_owned(),
            children: vec![],
        };
        n.script(&["up"]);
        n
    }
    fn script(&self, args: &[&str]) -> Output {
        let out = Command::new(NETNS)
            .args(args)
            .env("NS", &self.ns)
            .env("BR", "rbr0")
            .output()
            .expect("run tools/netns.sh");
        assert!(
            out.status.success(),
            "netns.sh {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }
    fn spawn(&mut self, args: &[&str]) -> usize {
        let child = Command::new("ip")
            .args(["netns", "exec", &self.ns, ROCE])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn roce");
        self.children.push(child);
        self.children.len() - 1
    }
    fn wait(&mut self, i: usize) -> Output {
        let child = self.children.remove(i);
        child.wait_with_output().expect("wait for roce")
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = Command::new(NETNS).arg("down").env("NS", &self.ns).status();
    }
}

/// Runs `test` server and client; returns the client's result row and the server's stdout.
fn run_pair(test: &str, ns: &str, extra: &[&str]) -> Option<(Vec<f64>, String)> {
    let header = if test.ends_with("-bw") {
        "#bytes     #iterations    BW peak"
    } else {
        "#bytes #iterations    t_min"
    };
    let (cout, sout, _) = run_processes(&["perf", test], ns, extra)?;
    Some((result_row(&cout, header), sout))
}

/// Runs `cmd` as server and client in a fresh namespace; returns both stdouts and the client's
/// stderr.
fn run_processes(cmd: &[&str], ns: &str, extra: &[&str]) -> Option<(String, String, String)> {
    if !skip::require(
        "root",
        skip::is_root(),
        "creating namespaces and taps needs root",
    ) {
        return None;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut n = Netns::up(ns);
    let common = ["-n", "200", "--timeout", "20"];
    let mut server_args = cmd.to_vec();
    server_args.extend(["--port", "tap:rtap0", "--ip", "198.18.0.1/15"]);
    server_args.extend(common);
    server_args.extend(extra);
    let server = n.spawn(&server_args);
    n.script(&["attach", "rtap0"]);
    let mut client_args = cmd.to_vec();
    client_args.extend(["--port", "tap:rtap1", "--ip", "198.18.0.2/15"]);
    client_args.extend(common);
    client_args.extend(extra);
    client_args.push("198.18.0.254");
    let client = n.spawn(&client_args);
    n.script(&["attach", "rtap1"]);
    let c = n.wait(client);
    let s = n.wait(server - usize::from(server > client));
    let (cout, sout) = (
        String::from_utf8_lossy(&c.stdout).into_owned(),
        String::from_utf8_lossy(&s.stdout).into_owned(),
    );
    assert!(
        c.status.success() && s.status.success(),
        "client {:?}:\n{cout}\n{}\nserver {:?}:\n{sout}\n{}",
        c.status,
        String::from_utf8_lossy(&c.stderr),
        s.status,
        String::from_utf8_lossy(&s.stderr)
    );
    Some((cout, sout, String::from_utf8_lossy(&c.stderr).into_owned()))
}

/// A perftest result row: `columns` numbers, the first two the message size and 200 iterations.
fn assert_row(row: &[f64], columns: usize, size: f64) {
    assert_eq!(row.len(), columns, "{row:?}");
    assert_eq!((row[0], row[1]), (size, 200.0));
}

/// A 4096-byte bandwidth `test` (with `args`) in namespace `ns` reports perftest's columns on
/// the client, and the server prints the same row.
fn assert_bw(test: &str, ns: &str, args: &[&str]) {
    let Some((row, server_out)) = run_pair(test, ns, &[&["-s", "4096"], args].concat()) else {
        return;
    };
    assert_row(&row, 5, 4096.0);
    assert!(row[2..].iter().all(|&x| x > 0.0), "{row:?}");
    // The server prints the client's report, as perftest's server does.
    let srow = result_row(&server_out, "#bytes     #iterations    BW peak");
    assert_eq!(srow, row);
}

#[test]
fn write_bw_between_two_processes_reports_perftest_columns() {
    assert_bw("write-bw", "roce-perf-wbw", &[]);
}

#[test]
fn read_bw_between_two_processes_reports_perftest_columns() {
    assert_bw("read-bw", "roce-perf-rbw", &[]);
}

#[test]
fn send_bw_between_two_processes_reports_perftest_columns() {
    assert_bw("send-bw", "roce-perf-sbw", &[]);
}

#[test]
fn send_lat_between_two_processes_reports_perftest_columns() {
    let Some((row, _)) = run_pair("send-lat", "roce-perf-slat", &["-s", "64"]) else {
        return;
    };
    assert_row(&row, 9, 64.0);
    assert!(row[2..].iter().all(|&x| x > 0.0), "{row:?}");
    // min <= typical <= max, avg within [min, max].
    assert!(row[2] <= row[4] && row[4] <= row[3], "{row:?}");
    assert!(row[2] <= row[5] && row[5] <= row[3], "{row:?}");
}

#[test]
fn pingpong_checks_every_buffer_and_prints_rc_pingpong_lines() {
    let Some((cout, sout, _)) = run_processes(&["pingpong"], "roce-perf-pp", &["-s", "4096", "-c"])
    else {
        return;
    };
    for out in [&cout, &sout] {
        assert!(
            out.contains("  local address:  LID 0x0000, QPN 0x"),
            "{out}"
        );
        let bytes = out
            .lines()
            .find(|l| l.contains(" bytes in "))
            .unwrap_or_else(|| panic!("no bytes line in {out}"));
        assert!(bytes.starts_with("1638400 bytes in "), "{bytes}");
        assert!(out.contains("200 iters in "), "{out}");
    }
}

#[test]
fn write_lat_ping_pong_reports_on_both_sides() {
    let Some((row, server_out)) = run_pair("write-lat", "roce-perf-wlat", &["-s", "64"]) else {
        return;
    };
    assert_row(&row, 9, 64.0);
    // The server (which writes first, as perftest's) prints its own latency line.
    let srow = result_row(&server_out, "#bytes #iterations    t_min");
    assert_row(&srow, 9, 64.0);
}

#[test]
fn bidirectional_write_bw_prints_the_sum_on_both_sides() {
    assert_bw("write-bw", "roce-perf-bidir", &["-b"]);
}

#[test]
fn duration_run_prints_a_status_line_every_second() {
    let Some((cout, _, cerr)) = run_processes(
        &["perf", "write-bw"],
        "roce-perf-dur",
        &["-s", "4096", "-D", "3"],
    ) else {
        return;
    };
    let status: Vec<&str> = cerr.lines().filter(|l| l.starts_with("[")).collect();
    assert_eq!(status.len(), 2, "{cerr}");
    assert!(status[0].starts_with("[  1/3 s] "), "{status:?}");
    assert!(status[1].starts_with("[  2/3 s] "), "{status:?}");
    assert!(cout.contains("BW peak"), "{cout}");
}

/// `-q 4 --cores 2` on both sides: each side's port gets two queue pairs, the four QPs run two
/// per lcore, the client prints the total under perftest's header and one line per lcore whose
/// message rates add up to it; the server prints the same total.
#[test]
fn write_bw_over_two_lcores_reports_each_lcore_and_the_total() {
    let extra = ["-s", "4096", "-q", "4", "--cores", "2"];
    let Some((cout, sout, _)) = run_processes(&["perf", "write-bw"], "roce-perf-lc", &extra) else {
        return;
    };
    let header = "#bytes     #iterations    BW peak";
    let total = result_row(&cout, header);
    assert_eq!((total[0], total[1]), (4096.0, 200.0), "{cout}");
    assert!(total[2..].iter().all(|&x| x > 0.0), "{cout}");
    let lanes: Vec<Vec<f64>> = cout
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("lcore "))
        .map(|l| {
            let (_, row) = l.split_once(':').expect("lcore N: row");
            row.split_whitespace()
                .map(|c| c.parse().expect("number"))
                .collect()
        })
        .collect();
    assert_eq!(lanes.len(), 2, "{cout}");
    for l in &lanes {
        assert_eq!((l[0], l[1]), (4096.0, 200.0), "{cout}");
    }
    let rate: f64 = lanes.iter().map(|l| l[4]).sum();
    assert!(
        (rate - total[4]).abs() < 1e-5,
        "lcores {rate} vs total {}",
        total[4]
    );
    assert_eq!(result_row(&sout, header), total);
    assert_eq!(cout.matches("local address: LID").count(), 4, "{cout}");
}

#[test]
fn pingpong_on_two_cores_is_refused_in_one_line() {
    let out = Command::new(ROCE)
        .args([
            "pingpong",
            "--port",
            "null",
            "--ip",
            "198.18.0.1/15",
            "--cores",
            "2",
        ])
        .output()
        .expect("run roce");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.lines().any(|l| l == "roce: --cores 0,1: this command runs its QP on one core (--cores 1; roce perf's bandwidth tests take more)"),
        "{err}"
    );
}
