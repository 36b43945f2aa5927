//! A typo in a simulator input must not eat the machine: `roce sim hpcc` and `roce sim run`
//! given a topology of 2^64-1 or 4e9 nodes, `FLOW_FILE /dev/zero` or `/dev/urandom`, a stop
//! time of 1e9 s, 4e9 hosts, a duration of 1e15 µs, a 50 MB unknown key or 1000 threads each
//! exit 1 with one `roce:` line (quoting a short excerpt at most), quickly, in an address
//! space of 2 GB; and the shipped inputs still run within it.

use crate::support::cli_output;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use cli_output::scratch_dir;

/// The address space every run here gets, bytes.
const ADDRESS_SPACE: u64 = 2_000_000_000;
/// How long a run may take before the test calls it a hang. Generous: a debug build parses
/// 50 MB here while the binary's other tests run beside it on a loaded 2-core machine (30 s was
/// exceeded so); a hang never ends.
const HANG_GUARD: Duration = Duration::from_secs(180);

/// What a finished run said.
struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// `roce args` in `dir`, in an address space of [`ADDRESS_SPACE`] (`prlimit --as`, or
/// `ulimit -v` through `sh` where util-linux has no prlimit), killed after [`HANG_GUARD`].
fn roce_in(dir: &Path, args: &[&str]) -> Run {
    let bin = env!("CARGO_BIN_EXE_roce");
    let mut cmd = if Path::new("/usr/bin/prlimit").exists() {
        let mut c = Command::new("/usr/bin/prlimit");
        c.arg(format!("--as={ADDRESS_SPACE}")).arg("--").arg(bin);
        c
    } else {
        let mut c = Command::new("sh");
        c.arg("-c")
            .arg(format!(
                "ulimit -v {}; exec \"$0\" \"$@\"",
                ADDRESS_SPACE / 1024
            ))
            .arg(bin);
        c
    };
    let mut child = cmd
        .args(args)
        .current_dir(dir)
        .env("RUST_BACKTRACE", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("roce starts");
    let mut out = child.stdout.take().expect("stdout");
    let mut err = child.stderr.take().expect("stderr");
    let readers = (
        std::thread::spawn(move || {
            let mut s = Vec::new();
            let _ = out.read_to_end(&mut s);
            s
        }),
        std::thread::spawn(move || {
            let mut s = Vec::new();
            let _ = err.read_to_end(&mut s);
            s
        }),
    );
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if started.elapsed() > HANG_GUARD {
            let _ = child.kill();
            let _ = child.wait();
            panic!("roce {args:?} still ran after {HANG_GUARD:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let text = |b: Vec<u8>| String::from_utf8_lossy(&b).into_owned();
    Run {
        code: status.code(),
        stdout: text(readers.0.join().expect("stdout reader")),
        stderr: text(readers.1.join().expect("stderr reader")),
    }
}

/// Asserts `run` failed with exactly one line on stderr, `roce: ` and `want`.
fn refused_with(run: &Run, want: &str) {
    assert_eq!(run.code, Some(1), "stderr: {}", excerpt(&run.stderr));
    assert_eq!(
        run.stderr.lines().collect::<Vec<_>>(),
        [format!("roce: {want}")],
        "stderr: {}",
        excerpt(&run.stderr)
    );
}

/// The start of `text`, for a failure message.
fn excerpt(text: &str) -> String {
    text.chars().take(2000).collect()
}

/// The HPCC fixture (config, topology, flow file) copied into a fresh directory, the config's
/// lines for the keys of `set` replaced by them.
fn hpcc_copy(tag: &str, set: &[&str]) -> PathBuf {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hpcc/mix");
    let dir = scratch_dir(&format!("bounds-{tag}"));
    std::fs::create_dir_all(dir.join("mix")).expect("mix/");
    for f in ["config_topo8_flow8_dcqcn.txt", "topo8.txt", "flow8.txt"] {
        std::fs::copy(fixtures.join(f), dir.join("mix").join(f)).expect("copy");
    }
    let cfg = dir.join("mix/config_topo8_flow8_dcqcn.txt");
    let key = |l: &str| l.split_whitespace().next().unwrap_or_default().to_owned();
    let text: String = std::fs::read_to_string(&cfg)
        .expect("config")
        .lines()
        .map(|l| match set.iter().find(|s| key(s) == key(l)) {
            Some(s) => format!("{s}\n"),
            None => format!("{l}\n"),
        })
        .collect();
    std::fs::write(&cfg, text).expect("config");
    dir
}

/// `roce sim hpcc` on the copied fixture config in `dir`, then `extra` arguments.
fn sim_hpcc(dir: &Path, extra: &[&str]) -> Run {
    let mut args = vec!["sim", "hpcc", "mix/config_topo8_flow8_dcqcn.txt"];
    args.extend_from_slice(extra);
    roce_in(dir, &args)
}

#[test]
fn a_topology_of_2_64_minus_1_or_4e9_nodes_is_one_line() {
    for nodes in ["18446744073709551615", "4000000000"] {
        let dir = hpcc_copy(&format!("nodes-{nodes}"), &[]);
        std::fs::write(dir.join("mix/topo8.txt"), format!("{nodes} 3 10\n8 9 10\n")).unwrap();
        refused_with(
            &sim_hpcc(&dir, &[]),
            &format!(
                "mix/topo8.txt:1: {nodes} nodes is more than this build supports (at most 131072)"
            ),
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
fn a_flow_file_that_never_ends_is_one_line() {
    let dir = hpcc_copy("dev-zero", &["FLOW_FILE /dev/zero"]);
    refused_with(
        &sim_hpcc(&dir, &[]),
        "/dev/zero:1: the line is longer than 4096 bytes",
    );
    std::fs::remove_dir_all(&dir).unwrap();
    let dir = hpcc_copy("dev-urandom", &["FLOW_FILE /dev/urandom"]);
    let run = sim_hpcc(&dir, &[]);
    assert_eq!(run.code, Some(1));
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{}", excerpt(&run.stderr));
    // Its first line is binary, or (one time in a few thousand) longer than a flow line.
    assert!(
        lines[0] == "roce: /dev/urandom:1: not text (a NUL byte, or bytes that are not UTF-8)"
            || lines[0] == "roce: /dev/urandom:1: the line is longer than 4096 bytes",
        "{}",
        lines[0]
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_stop_time_of_1e9_s_is_one_line_and_10000_s_runs_as_2_s_does() {
    let dir = hpcc_copy("stop-1e9", &["SIMULATOR_STOP_TIME 1e9"]);
    refused_with(
        &sim_hpcc(&dir, &[]),
        "mix/config_topo8_flow8_dcqcn.txt:58: SIMULATOR_STOP_TIME 1000000000 s is more than this build supports (at most 10000 s)",
    );
    std::fs::remove_dir_all(&dir).unwrap();
    // Every flow is done by 2.002 s: 10,000 s ends as fast, with the same FCT file, on one
    // thread and on two.
    let fct = |stop: &str, threads: &str| {
        let dir = hpcc_copy(
            &format!("stop-{stop}-{threads}"),
            &[&format!("SIMULATOR_STOP_TIME {stop}")],
        );
        let run = sim_hpcc(&dir, &["--threads", threads]);
        assert_eq!(run.code, Some(0), "{}", excerpt(&run.stderr));
        assert!(run.stdout.contains("12 done"), "{}", run.stdout);
        let text = std::fs::read_to_string(dir.join("mix/fct_topo8_flow8_dcqcn.txt")).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        (text, run.stdout)
    };
    let (short, _) = fct("2.002", "1");
    let (long, stdout) = fct("10000", "1");
    assert_eq!(short.lines().count(), 12);
    assert_eq!(short, long);
    assert!(stdout.contains("idle samples taken at once"), "{stdout}");
    let (two, _) = fct("10000", "2");
    assert_eq!(short, two);
}

#[test]
fn a_50_mb_unknown_key_is_not_echoed() {
    let dir = hpcc_copy("long-key", &[]);
    let cfg = dir.join("mix/config_topo8_flow8_dcqcn.txt");
    let mut text = std::fs::read_to_string(&cfg).unwrap();
    text.push_str(&"K".repeat(50 << 20));
    text.push_str(" 1\n");
    std::fs::write(&cfg, text).unwrap();
    refused_with(
        &sim_hpcc(&dir, &[]),
        "mix/config_topo8_flow8_dcqcn.txt:59: the line is longer than 16384 bytes",
    );
    // Shorter than a line's limit, it is quoted as an excerpt.
    let mut text = std::fs::read_to_string(dir.join("mix/config_topo8_flow8_dcqcn.txt"))
        .unwrap()
        .lines()
        .take(58)
        .collect::<Vec<_>>()
        .join("\n");
    text.push_str(&format!("\n{} 1\n", "K".repeat(16_000)));
    std::fs::write(&cfg, text).unwrap();
    refused_with(
        &sim_hpcc(&dir, &[]),
        &format!(
            "mix/config_topo8_flow8_dcqcn.txt:59: unknown key \"{}...\"",
            "K".repeat(64)
        ),
    );
    // A scenario's unknown key of 50 MB: TOML's message, its quote cut.
    let toml = format!(
        "name = \"x\"\nduration_us = 10\n{} = 1\ntopology = {{ kind = \"back_to_back\", link = {{ gbps = 100, delay_ns = 1 }} }}\n",
        "K".repeat(50 << 20)
    );
    std::fs::write(dir.join("key.toml"), toml).unwrap();
    let run = roce_in(&dir, &["sim", "run", "key.toml"]);
    assert_eq!(run.code, Some(1));
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{}", excerpt(&run.stderr));
    let want = format!(
        "roce: scenario: unknown field `{}...`, expected one of `name`",
        "K".repeat(64)
    );
    assert!(lines[0].starts_with(&want), "{}", excerpt(lines[0]));
    assert!(lines[0].len() < 1000, "{} bytes", lines[0].len());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A scenario file in a fresh directory: a star of `hosts` hosts with one endless flow,
/// lasting `duration_us`.
fn scenario(tag: &str, hosts: &str, duration_us: &str) -> PathBuf {
    let dir = scratch_dir(&format!("bounds-{tag}"));
    let text = format!(
        "name = \"x\"\nduration_us = {duration_us}\n[topology]\nkind = \"star\"\nhosts = {hosts}\nlink = {{ gbps = 100, delay_ns = 1000 }}\n[[workloads]]\nkind = \"flow\"\nsrc = 0\ndst = 1\n"
    );
    std::fs::write(dir.join("s.toml"), text).unwrap();
    dir
}

#[test]
fn sim_run_refuses_4e9_hosts_a_huge_duration_and_1000_threads_in_one_line() {
    let dir = scenario("hosts", "4000000000", "100");
    refused_with(
        &roce_in(&dir, &["sim", "run", "s.toml"]),
        "scenario: 4000000000 hosts is more than this build supports (at most 65536)",
    );
    std::fs::remove_dir_all(&dir).unwrap();
    let dir = scenario("duration", "2", "1e15");
    refused_with(
        &roce_in(&dir, &["sim", "run", "s.toml"]),
        "scenario: 1000000000000000 µs of virtual time (duration_us) is more than this build supports (at most 10000000000)",
    );
    std::fs::remove_dir_all(&dir).unwrap();
    let dir = scenario("set-duration", "2", "100");
    refused_with(
        &roce_in(&dir, &["sim", "run", "s.toml", "--set", "duration_us=1e15"]),
        "with duration_us=1000000000000000.0: scenario: 1000000000000000 µs of virtual time (duration_us) is more than this build supports (at most 10000000000)",
    );
    refused_with(
        &roce_in(
            &dir,
            &[
                "sim",
                "run",
                "s.toml",
                "--set",
                "duration_us=100",
                "--threads",
                "1000",
            ],
        ),
        "scenario: 1000 threads is more than this build supports (at most 256)",
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_scenario_bigger_than_the_address_space_is_refused_before_it_is_built() {
    let dir = scenario("memory", "60000", "100");
    let run = roce_in(&dir, &["sim", "run", "s.toml"]);
    assert_eq!(run.code, Some(1), "{}", excerpt(&run.stderr));
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{}", excerpt(&run.stderr));
    assert!(
        lines[0].starts_with(
            "roce: scenario: 60000 hosts, 1 switches, 60000 cables, 0 flows need about "
        ),
        "{}",
        lines[0]
    );
    assert!(
        lines[0].ends_with(" GB, more than the 2.0 GB of memory here"),
        "{}",
        lines[0]
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn device_files_as_scenarios_or_configs_are_one_line() {
    let dir = scratch_dir("bounds-devices");
    let not_text = "not text (a NUL byte, or bytes that are not UTF-8)";
    refused_with(
        &roce_in(&dir, &["sim", "run", "/dev/zero"]),
        &format!("/dev/zero:1: {not_text}"),
    );
    // Random bytes are refused on the line that holds the first bytes that are not UTF-8: the
    // first, unless it happened to be short and valid (a leading newline, 1 time in 256).
    let run = roce_in(&dir, &["sim", "run", "/dev/urandom"]);
    let line = run
        .stderr
        .strip_prefix("roce: /dev/urandom:")
        .and_then(|r| r.split_once(':'))
        .and_then(|(n, rest)| Some((n.parse::<u64>().ok()?, rest)));
    let (n, _) = line.unwrap_or_else(|| panic!("stderr: {}", excerpt(&run.stderr)));
    refused_with(&run, &format!("/dev/urandom:{n}: {not_text}"));
    refused_with(
        &roce_in(&dir, &["sim", "hpcc", "/dev/zero"]),
        "/dev/zero:1: the line is longer than 16384 bytes",
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_shipped_inputs_still_run_in_the_same_address_space() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<PathBuf> = std::fs::read_dir(root.join("scenarios"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().and_then(|e| e.to_str()) == Some("toml"))
        .collect();
    files.sort();
    // The 320-host fat tree of the HPCC experiments with its 6,897 web-search flows (the
    // FB_Hadoop ones, with 14 and 24 times as many, need more than 2 GB).
    files.push(root.join("scenarios/hpcc/websearch-30.toml"));
    assert!(files.len() >= 12, "{files:?}");
    for f in &files {
        let path = f.display().to_string();
        // Everything is built (every flow's QPs); the run is cut to 5 us.
        let args = [
            "sim",
            "run",
            &path,
            "--set",
            "duration_us=5",
            "--set",
            "warmup_us=0",
            "--allow-failures",
            "--threads",
            "2",
        ];
        let run = roce_in(root, &args);
        assert_eq!(run.code, Some(0), "{path}: {}", excerpt(&run.stderr));
    }
    // The HPCC fixture, whole.
    let dir = hpcc_copy("fixture", &[]);
    let run = sim_hpcc(&dir, &[]);
    assert_eq!(run.code, Some(0), "{}", excerpt(&run.stderr));
    assert!(run.stdout.contains("flows 12: 12 done"), "{}", run.stdout);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn built_ins_and_compare_refuse_counts_above_the_ceilings_in_one_line() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    refused_with(
        &roce_in(root, &["sim", "incast", "--senders", "4000000000"]),
        "4000000000 senders (--senders) is more than this build supports (at most 65536)",
    );
    refused_with(
        &roce_in(
            root,
            &["sim", "compare", "scenarios/incast.toml", "--seeds", "4000000000"],
        ),
        "4000000000 runs (controls x values x seeds) is more than this build supports (at most 100000)",
    );
}
