//! The HPCC simulator's experiment in our scenario format: fat trees, flow files, Poisson
//! arrivals from a size CDF, and FCT slowdown (a lone flow's is 1.0).

use roce_fabric::experiment::scenario::Scenario;

use crate::support::scenario_files;

fn lone_flow(bytes: u64, src: usize, dst: usize) -> f64 {
    let toml = format!(
        r#"
name = "lone"
duration_us = 300.0
cc = "none"
[topology]
kind = "fat_tree"
k = 4
link = {{ gbps = 100.0, delay_ns = 1000 }}
[[workloads]]
kind = "flow"
src = {src}
dst = {dst}
bytes = {bytes}
start_us = 10.0
"#
    );
    let s = Scenario::from_toml(&toml).unwrap();
    let (sum, _) = s.run(|_| {}).unwrap();
    let fct = sum.fct.expect("a finished flow");
    assert_eq!(fct.flows.len(), 1);
    let r = &fct.flows[0];
    println!(
        "{bytes} B {src}->{dst}: fct {} ns ideal {} ns",
        r.run.fct_ns, r.ideal_ns
    );
    r.slowdown
}

/// Same pod and ToR, across pods, several messages, a tail packet, one small packet.
#[test]
fn a_lone_flow_has_slowdown_one() {
    for (bytes, src, dst) in [
        (1000, 0, 1),
        (1024, 0, 1),
        (2048, 0, 1),
        (10240, 0, 1),
        (102400, 0, 1),
        (1000, 0, 15),
        (102400, 0, 15),
        (100_000, 0, 15),
        (2_500_000, 3, 9),
        (52, 5, 4),
    ] {
        let s = lone_flow(bytes, src, dst);
        // Within a few ns (the ACK path's carried picoseconds) of the model.
        assert!(
            (s - 1.0).abs() < 0.001,
            "{bytes} B {src}->{dst}: slowdown {s}"
        );
    }
}

/// FB_Hadoop flows at 50% load on a k = 4 fat tree with real RC endpoints.
fn fb_hadoop_run() -> roce_fabric::flows::fct::FctReport {
    let toml = r#"
name = "fb-hadoop-k4"
seed = 3
duration_us = 1500.0
cc = "dcqcn-mlx"
[topology]
kind = "fat_tree"
k = 4
link = { gbps = 100.0, delay_ns = 1000 }
[[workloads]]
kind = "poisson_cdf"
load = 0.5
cdf = "fb_hadoop"
duration_us = 60.0
"#;
    let s = Scenario::from_toml(toml).unwrap();
    let (sum, _) = s.run(|_| {}).unwrap();
    sum.fct.expect("finished flows")
}

#[test]
fn fct_file_round_trips_through_the_python_port_of_fct_analysis() {
    use roce_fabric::flows::fct::slowdown_bins;
    use roce_fabric::hpcc::fct_file;

    let report = fb_hadoop_run();
    let records = report.hpcc_records(None, 100);
    assert!(records.len() >= 40, "{} finished flows", records.len());
    let text = fct_file::write(&records);
    assert_eq!(fct_file::parse("fct.txt", &text).unwrap(), records);
    // Host 0 is 11.0.0.1; each host's source ports count from 10000.
    assert!(text
        .lines()
        .any(|l| l.starts_with("0b000001 ") && l.split(' ').nth(2) == Some("10000")));

    let dir = std::env::temp_dir().join(format!("roce-fct-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("fct_k4_fbhdp_dcqcn.txt");
    std::fs::write(&file, &text).unwrap();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tools/hpcc/fct_analysis.py");
    let out = std::process::Command::new("python3")
        .args([script, "-s", "10"])
        .arg(&file)
        .output()
        .expect("python3 runs");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        out.status.success(),
        "fct_analysis.py failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();

    // The script drops the largest flow (its split('\n')[:-2]); our bins over the rest.
    let mut pairs: Vec<(u64, f64)> = records.iter().map(|r| (r.size, r.slowdown())).collect();
    pairs.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
    pairs.pop();
    let ours = slowdown_bins(&pairs, 10);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 10, "{stdout}");
    assert_eq!(ours.len(), 10);
    for (line, bin) in lines.iter().zip(&ours) {
        let v: Vec<f64> = line
            .split_whitespace()
            .map(|x| x.parse().unwrap())
            .collect();
        assert_eq!(v.len(), 5, "{line}");
        assert_eq!(v[0], f64::from(bin.pct - 10) / 100.0, "{line}");
        assert_eq!(v[1] as u64, bin.max_bytes, "{line}");
        for (theirs, ours) in v[2..].iter().zip([bin.p50, bin.p95, bin.p99]) {
            assert!((theirs - ours).abs() < 0.0011, "{line}: ours {ours}");
        }
    }
    // Something was slowed down: the table is not all ones.
    assert!(ours.iter().any(|b| b.p99 > 1.01), "{stdout}");
}

/// The shipped 320-host experiments parse and describe the HPCC shape (not run here).
#[test]
fn shipped_hpcc_scenarios_parse_with_the_320_host_fat_tree() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/hpcc");
    let mut names = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        let s = Scenario::from_toml(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let t = s.topology();
        assert_eq!(
            (t.hosts.len(), t.switches.len(), t.cables.len()),
            (320, 56, 480)
        );
        names.push(s.name);
    }
    names.sort();
    assert_eq!(
        names,
        [
            "hpcc-fb_hadoop-30",
            "hpcc-fb_hadoop-50",
            "hpcc-websearch-30",
            "hpcc-websearch-50"
        ]
    );
}

/// `--out DIR` leaves the per-flow CSV, the HPCC FCT file and the slowdown plot.
#[test]
fn sim_run_out_writes_fct_csv_hpcc_file_and_plot() {
    let dir = std::env::temp_dir().join(format!("roce-fct-out-{}", std::process::id()));
    let scenario = scenario_files::FAT_TREE_FB_HADOOP;
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_roce"))
        .args(["sim", "run", scenario, "--out"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("fct slowdown by size (50 finished flows"),
        "{stdout}"
    );
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap();
    let (csv, txt, svg, json) = (
        read("fct.csv"),
        read("fct.txt"),
        read("fct.svg"),
        read("summary.json"),
    );
    let _ = std::fs::remove_dir_all(&dir);
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("flow,src,dst,size_bytes,start_ns,fct_ns,ideal_fct_ns,slowdown")
    );
    assert_eq!(lines.count(), 50);
    assert_eq!(
        roce_fabric::hpcc::fct_file::parse("fct.txt", &txt)
            .unwrap()
            .len(),
        50
    );
    assert!(svg.contains("FCT slowdown against flow size"));
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["fct"]["flows"].as_array().map(Vec::len), Some(50));
    assert_eq!(v["fct"]["bins"].as_array().map(Vec::len), Some(20));
    assert!(v["fct"]["bins"][0]["p99"].as_f64().is_some());
}
