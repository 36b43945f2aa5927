//! A typo in a simulator input must not eat the machine: counts above the ceilings of
//! `roce_fabric::limits::bounds` (nodes, flows, hosts, durations, collectives, flaps), files that
//! never end (`/dev/zero`, `/dev/urandom`) and binary files each end in one error naming the
//! file and line, before anything is allocated for them; errors quote a short excerpt of what
//! they refuse; and once its flows are done, a run's memory and time no longer grow with its
//! duration.

use std::path::{Path, PathBuf};

use roce_fabric::experiment::hpcc_run::HpccRun;
use roce_fabric::experiment::scenario::Scenario;
use roce_fabric::hpcc::config::HpccConfig;
use roce_fabric::hpcc::flow_file;
use roce_fabric::hpcc::topology_file::TopologyFile;
use roce_fabric::limits::bounds::{Limits, MAX_FLOWS};
use roce_testkit::fixtures;

/// Eight hosts under two switches joined by a third (the root fixture's topology).
const TOPO: &str = "11 3 10
8 9 10
0 8 100Gbps 1000ns 0
1 8 100Gbps 1000ns 0
2 8 100Gbps 1000ns 0
3 8 100Gbps 1000ns 0
4 9 100Gbps 1000ns 0
5 9 100Gbps 1000ns 0
6 9 100Gbps 1000ns 0
7 9 100Gbps 1000ns 0
8 10 400Gbps 1000ns 0
9 10 400Gbps 1000ns 0
";

/// Three flows at 2 s: done within a millisecond.
const FLOWS: &str = "3
0 4 3 100 20000 2.000000000
1 4 3 100 30000 2.000001000
5 0 3 100 10000 2.000002000
";

/// A fresh directory for one test's files.
fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("roce-fabric-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A DCQCN config over `topo` and `flows` (paths as written), then `extra` lines.
fn config(dir: &Path, topo: &str, flows: &str, extra: &str) -> PathBuf {
    let path = dir.join("config.txt");
    let text = format!(
        "CC_MODE 1\nTOPOLOGY_FILE {topo}\nFLOW_FILE {flows}\nHAS_WIN 0\nSIMULATOR_STOP_TIME 2.01\n{extra}"
    );
    std::fs::write(&path, text).unwrap();
    path
}

/// The error of loading the config at `path`.
fn load_error(path: &Path) -> String {
    HpccRun::load(path).unwrap_err().to_string()
}

#[test]
fn topology_node_counts_above_the_ceiling_are_refused_before_any_allocation() {
    let e = TopologyFile::parse("topo.txt", "18446744073709551615 3 10\n8 9 10\n").unwrap_err();
    assert_eq!(
        e.to_string(),
        "topo.txt:1: 18446744073709551615 nodes is more than this build supports (at most 131072)"
    );
    let e = TopologyFile::parse("topo.txt", "4000000000 3 10\n8 9 10\n").unwrap_err();
    assert_eq!(
        e.to_string(),
        "topo.txt:1: 4000000000 nodes is more than this build supports (at most 131072)"
    );
    let e = TopologyFile::parse("topo.txt", "100 3 4000000000\n8 9 10\n").unwrap_err();
    assert_eq!(
        e.to_string(),
        "topo.txt:1: 4000000000 links is more than this build supports (at most 1048576)"
    );
    let e = TopologyFile::parse("topo.txt", "70000 1 10\n8\n").unwrap_err();
    assert_eq!(
        e.to_string(),
        "topo.txt:1: 69999 hosts is more than this build supports (at most 65536)"
    );
}

#[test]
fn flow_counts_above_the_ceiling_or_the_memory_are_refused_before_reading_the_flows() {
    let e = flow_file::parse("flow.txt", "4000000000\n0 1 3 100 1000 2\n").unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "flow.txt:1: 4000000000 flows is more than this build supports (at most {MAX_FLOWS})"
        )
    );
    let dir = scratch("flow-memory");
    let path = dir.join("flow.txt");
    std::fs::write(&path, "5000\n0 1 3 100 1000 2\n").unwrap();
    let e = flow_file::load(&path, &Limits::for_memory(100 << 20)).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "{}:1: 5000 flows need about 133.1 MB, more than the 104.9 MB of memory here",
            path.display()
        )
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn flow_and_topology_files_that_never_end_fail_at_their_first_line() {
    let dir = scratch("devices");
    std::fs::write(dir.join("topo.txt"), TOPO).unwrap();
    std::fs::write(dir.join("flow.txt"), FLOWS).unwrap();
    let cases = [
        (
            "topo.txt",
            "/dev/zero",
            "/dev/zero:1: the line is longer than 4096 bytes",
        ),
        (
            "topo.txt",
            "/dev/urandom",
            "/dev/urandom:1: not text (a NUL byte, or bytes that are not UTF-8)",
        ),
        (
            "/dev/zero",
            "flow.txt",
            "/dev/zero:1: the line is longer than 1048576 bytes",
        ),
    ];
    for (topo, flows, want) in cases {
        let cfg = config(&dir, topo, flows, "");
        assert_eq!(load_error(&cfg), want, "{topo} {flows}");
    }
    // /dev/urandom as a topology: its first line is short and binary (or, rarely, longer
    // than the megabyte a topology line may have).
    let cfg = config(&dir, "/dev/urandom", "flow.txt", "");
    let e = load_error(&cfg);
    assert!(
        e == "/dev/urandom:1: not text (a NUL byte, or bytes that are not UTF-8)"
            || e == "/dev/urandom:1: the line is longer than 1048576 bytes",
        "{e}"
    );
    // The config itself.
    assert_eq!(
        load_error(Path::new("/dev/zero")),
        "/dev/zero:1: the line is longer than 16384 bytes"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn binary_garbage_names_the_file_and_the_line() {
    let dir = scratch("garbage");
    std::fs::write(dir.join("topo.txt"), TOPO).unwrap();
    let mut flows = b"3\n0 4 3 100 20000 2\n".to_vec();
    flows.extend_from_slice(&[0xff, 0xfe, 0x00, 0x9c, b'\n']);
    std::fs::write(dir.join("flow.txt"), flows).unwrap();
    let cfg = config(&dir, "topo.txt", "flow.txt", "");
    assert_eq!(
        load_error(&cfg),
        format!(
            "{}:3: not text (a NUL byte, or bytes that are not UTF-8)",
            dir.join("flow.txt").display()
        )
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_unknown_key_is_quoted_as_a_short_excerpt() {
    let key = "K".repeat(10_000);
    let e = HpccConfig::parse("config.txt", &format!("CC_MODE 1\n{key} 1\n")).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!("config.txt:2: unknown key \"{}...\"", "K".repeat(64))
    );
    // A 50 MB key is a line longer than any config line.
    let dir = scratch("long-key");
    let path = dir.join("config.txt");
    std::fs::write(&path, format!("{} 1\n", "K".repeat(50 << 20))).unwrap();
    let e = HpccConfig::load(&path).unwrap_err().to_string();
    assert_eq!(
        e,
        format!("{}:1: the line is longer than 16384 bytes", path.display())
    );
    // The same in a scenario file: TOML's message quotes the key, cut short.
    let text = format!(
        "name = \"x\"\nduration_us = 10\n{} = 1\n",
        "K".repeat(1 << 20)
    );
    let e = Scenario::from_toml(&text).unwrap_err().to_string();
    assert!(
        e.starts_with(&format!(
            "scenario: unknown field `{}...`, expected",
            "K".repeat(64)
        )),
        "{}",
        &e[..e.len().min(300)]
    );
    assert!(e.len() < 1000, "{} bytes", e.len());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_stop_time_above_the_ceiling_is_refused() {
    let e = HpccConfig::parse("config.txt", "SIMULATOR_STOP_TIME 1e9\n").unwrap_err();
    assert_eq!(
        e.to_string(),
        "config.txt:1: SIMULATOR_STOP_TIME 1000000000 s is more than this build supports (at most 10000 s)"
    );
}

/// The run of the config in `dir` stopping at `stop` s: its summary as JSON, rows, samples,
/// idle samples and events.
fn run_until(dir: &Path, stop: &str) -> (String, usize, u64, u64, u64) {
    let cfg = config(dir, "topo.txt", "flow.txt", "");
    let text = std::fs::read_to_string(&cfg).unwrap().replace(
        "SIMULATOR_STOP_TIME 2.01",
        &format!("SIMULATOR_STOP_TIME {stop}"),
    );
    std::fs::write(&cfg, text).unwrap();
    let run = HpccRun::load(&cfg).unwrap();
    let (summary, built) = run.scenario.run(|_| {}).unwrap();
    assert_eq!(summary.failed_flows, 0);
    assert!(summary.flows.iter().all(|f| f.completion_us.is_some()));
    let rec = built.fabric.recorder().unwrap();
    let flows = serde_json::to_string(&summary.flows).unwrap();
    (
        flows,
        rec.rows.len(),
        rec.samples(),
        built.fabric.idle_samples(),
        summary.events,
    )
}

#[test]
fn memory_and_time_do_not_grow_with_the_stop_time_once_the_flows_are_done() {
    let dir = scratch("stop-time");
    std::fs::write(dir.join("topo.txt"), TOPO).unwrap();
    std::fs::write(dir.join("flow.txt"), FLOWS).unwrap();
    let started = std::time::Instant::now();
    let short = run_until(&dir, "2.01");
    let long = run_until(&dir, "10000");
    // The same flows, the same rows; the long run's 9,998 s after them are one row's repeats,
    // taken at once: a sample a millisecond, each counted as the event it stands for.
    assert_eq!(short.0, long.0);
    assert_eq!(short.1, long.1, "rows");
    assert_eq!(short.2, 2010);
    assert_eq!(long.2, 10_000_000);
    assert_eq!(long.4 - short.4, 10_000_000 - 2010);
    assert!(long.3 >= 10_000_000 - 2010, "{} idle samples", long.3);
    assert!(started.elapsed().as_secs() < 30, "{:?}", started.elapsed());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn on_two_threads_the_idle_tail_is_taken_at_once_too() {
    let dir = scratch("stop-time-threads");
    std::fs::write(dir.join("topo.txt"), TOPO).unwrap();
    std::fs::write(dir.join("flow.txt"), FLOWS).unwrap();
    let cfg = config(&dir, "topo.txt", "flow.txt", "");
    let text = std::fs::read_to_string(&cfg)
        .unwrap()
        .replace("SIMULATOR_STOP_TIME 2.01", "SIMULATOR_STOP_TIME 1000");
    std::fs::write(&cfg, text).unwrap();
    let run = HpccRun::load(&cfg).unwrap();
    let s = &run.scenario;
    let on = |threads: usize| {
        let mut built = s.build().unwrap();
        assert_eq!(built.fabric.set_threads(threads).unwrap(), threads);
        let (summary, built) = s.run_built(built, |_| {}).unwrap();
        let rec = built.fabric.recorder().unwrap();
        (
            serde_json::to_string(&summary).unwrap(),
            rec.rows.clone(),
            built.fabric.idle_samples(),
        )
    };
    let (one, two) = (on(1), on(2));
    assert_eq!(one.0, two.0);
    assert_eq!(one.1, two.1);
    assert!(one.2 > 990_000 && two.2 > 990_000, "{} {}", one.2, two.2);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A scenario over a star of `hosts` hosts lasting `duration_us`, then `extra` TOML.
fn star(hosts: &str, duration_us: &str, extra: &str) -> String {
    format!(
        "name = \"x\"\nduration_us = {duration_us}\n{extra}\n[topology]\nkind = \"star\"\nhosts = {hosts}\nlink = {{ gbps = 100, delay_ns = 1000 }}\n"
    )
}

/// The error of parsing (and so validating) `text`.
fn scenario_error(text: &str) -> String {
    Scenario::from_toml(text).unwrap_err().to_string()
}

#[test]
fn huge_scenarios_are_refused_with_one_line() {
    assert_eq!(
        scenario_error(&star("4000000000", "100", "")),
        "scenario: 4000000000 hosts is more than this build supports (at most 65536)"
    );
    assert_eq!(
        scenario_error(&star("2", "1e15", "")),
        "scenario: 1000000000000000 µs of virtual time (duration_us) is more than this build supports (at most 10000000000)"
    );
    assert_eq!(
        scenario_error(&star("2", "inf", "")),
        "scenario: inf µs of virtual time (duration_us) is more than this build supports (at most 10000000000)"
    );
    assert_eq!(
        scenario_error(&star("2", "1e9", "sample_us = 1")),
        "scenario: 1000000000 samples of the time series (duration_us / sample_us) is more than this build supports (at most 10000000)"
    );
    assert_eq!(
        scenario_error(&star("2", "1000", "bin_us = 0.001")),
        "scenario: 1000000 telemetry bins (duration_us / bin_us) is more than this build supports (at most 100000)"
    );
    let leaf_spine = "name = \"x\"\nduration_us = 10\n[topology]\nkind = \"leaf_spine\"\nleaves = 4294967296\nspines = 2\nhosts_per_leaf = 4294967296\nrails = 1\nlink = { gbps = 100, delay_ns = 1 }\nuplink = { gbps = 100, delay_ns = 1 }\n";
    assert_eq!(
        scenario_error(leaf_spine),
        "scenario: 18446744073709551615 hosts is more than this build supports (at most 65536)"
    );
}

#[test]
fn workloads_that_make_too_many_flows_are_refused_before_making_them() {
    let burst = "[[workloads]]\nkind = \"microburst\"\nsenders = [0, 1]\nreceiver = 2\nburst_bytes = 1000\nperiod_us = 1\ncount = 4000000000\n";
    let s = Scenario::from_toml(&star("3", "100", burst)).unwrap();
    assert_eq!(
        s.build().err().map(|e| e.to_string()).unwrap_or_default(),
        format!("scenario: workload 0: 8000000000 flows is more than this build supports (at most {MAX_FLOWS})")
    );
    let sizes = "[[workloads]]\nkind = \"flow_sizes\"\nhosts = [0, 1]\nload = 0.5\nflows = 4000000000\nsizes = { kind = \"fixed\", bytes = 1000 }\n";
    let s = Scenario::from_toml(&star("3", "100", sizes)).unwrap();
    assert_eq!(
        s.build().err().map(|e| e.to_string()).unwrap_or_default(),
        format!("scenario: workload 0: 4000000000 flows is more than this build supports (at most {MAX_FLOWS})")
    );
    // Poisson arrivals for a year: refused as soon as they pass what the memory holds.
    let poisson = "[[workloads]]\nkind = \"poisson_cdf\"\nload = 0.5\ncdf = \"fb_hadoop\"\nduration_us = 3e13\n";
    let s = Scenario::from_toml(&star("3", "100", poisson)).unwrap();
    let e = s
        .build_within(&Limits::for_memory(24 << 20), 1)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert_eq!(
        e,
        "scenario: workload 0: poisson_cdf draws more flows than allowed: 946 flows need about 25.2 MB, more than the 25.2 MB of memory here"
    );
}

#[test]
fn a_collective_too_large_to_schedule_is_refused_before_scheduling() {
    let hosts: Vec<String> = (0..10_000).map(|h| h.to_string()).collect();
    let ring = format!(
        "[[workloads]]\nkind = \"all_reduce\"\nhosts = [{}]\nbytes = 1000000\niterations = 1\n",
        hosts.join(", ")
    );
    assert_eq!(
        scenario_error(&star("10000", "100", &ring)),
        "scenario: workload 0: ring among 10000 hosts has 399960000 schedule entries, more than this build supports (at most 16777216)"
    );
}

#[test]
fn flaps_threads_and_memory_are_bounded() {
    let flap = "[[failures]]\nkind = \"flap\"\na = \"sw0\"\nb = \"h0\"\nat_us = 1\ndown_us = 1\nup_us = 1\ncount = 4000000000\n";
    assert_eq!(
        scenario_error(&star("3", "100", flap)),
        "scenario: 4000000000 flaps is more than this build supports (at most 1000000)"
    );
    let s = Scenario::from_toml(&star("3", "100", "")).unwrap();
    assert_eq!(
        s.build_within(&Limits::default(), 1000)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default(),
        "scenario: 1000 threads is more than this build supports (at most 256)"
    );
    let s = Scenario::from_toml(&star("60000", "100", "")).unwrap();
    let e = s
        .build_within(&Limits::for_memory(1 << 30), 1)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        e.starts_with("scenario: 60000 hosts, 1 switches, 60000 cables, 0 flows need about "),
        "{e}"
    );
    assert!(
        e.ends_with(" GB, more than the 1.1 GB of memory here"),
        "{e}"
    );
}

#[test]
fn a_cable_end_that_does_not_exist_is_quoted_short() {
    let name = "s".repeat(100_000);
    let text = format!(
        "name = \"x\"\nduration_us = 10\n[topology]\nkind = \"custom\"\nswitches = [\"sw0\"]\nhosts = 1\ncables = [{{ a = \"sw0\", b = \"{name}\" }}]\nlink = {{ gbps = 100, delay_ns = 1 }}\n"
    );
    assert_eq!(
        scenario_error(&text),
        format!(
            "scenario: cable end \"{}...\" is neither a switch nor one of the 1 hosts h0, h1, ...",
            "s".repeat(64)
        )
    );
}

/// The shipped scenarios' shapes stay within every ceiling and, on a machine of 4 GB, within
/// its memory.
#[test]
fn shipped_scenarios_fit_the_ceilings() {
    let dir = fixtures::SCENARIOS;
    let mut n = 0;
    for sub in ["", "hpcc", "scale"] {
        for entry in std::fs::read_dir(Path::new(dir).join(sub)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().and_then(|e| e.to_str()) != Some("toml") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let s =
                Scenario::from_toml(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let f = s.footprint(20_000, 2).unwrap();
            f.check(4_000_000_000)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            n += 1;
        }
    }
    assert!(n >= 10, "{n} scenarios");
}
