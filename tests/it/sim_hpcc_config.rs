//! `roce sim hpcc CONFIG`: an HPCC ns-3 simulator config file, with its topology and flow
//! files, runs through the real RC endpoints and writes its FCT file.

use std::path::{Path, PathBuf};
use std::process::Command;

use roce_fabric::experiment::hpcc_run::HpccRun;
use roce_fabric::hpcc::fct_file::{self, node_ip};
use roce_fabric::hpcc::pfc_file;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hpcc")
}

#[test]
fn dcqcn_config_runs_through_the_rc_engine() {
    let run = HpccRun::load(&fixtures().join("mix/config_topo8_flow8_dcqcn.txt")).unwrap();
    let s = &run.scenario;
    assert_eq!(s.cc, "dcqcn-mlx");
    for p in [
        "rpg_ai_rate=20",
        "rpg_hai_rate=200",
        "rpg_time_reset=300",
        "rpg_min_rate=1000",
        "clamp_tgt_rate=false",
        "rpg_threshold=1",
        "dce_tcp_rtt=1",
        "rate_reduce_monitor_period=4",
        "dce_tcp_g=1020",
    ] {
        assert!(
            s.cc_params.iter().any(|x| x == p),
            "{p} in {:?}",
            s.cc_params
        );
    }
    assert_eq!(s.mtu, 1024);
    assert_eq!(s.duration_us, 2002.0 * 1000.0);
    assert_eq!(s.switch.buffer_bytes, 32 << 20);
    let ecn = s.switch.ecn.unwrap();
    assert_eq!(
        (ecn.kmin_bytes, ecn.kmax_bytes, ecn.pmax),
        (400_000, 1_600_000, 0.2)
    );
    // The 400G ports mark with their own KMIN_MAP/KMAX_MAP entry; PFC is dynamic, alpha
    // scaled from the 100G NICs, headroom 3 x 400 Gbit/s x 1 us.
    let fast = s
        .switch
        .ecn_by_rate
        .iter()
        .find(|r| r.gbps == 400.0)
        .unwrap();
    assert_eq!(
        (fast.ecn.kmin_bytes, fast.ecn.kmax_bytes),
        (1_600_000, 6_400_000)
    );
    let pfc = s.switch.pfc_thresholds.unwrap();
    assert_eq!(pfc.headroom_bytes, 150_000);
    assert_eq!(pfc.dynamic.unwrap().nic_bps, 100_000_000_000);
    assert!(run
        .fct_output
        .ends_with("fixtures/hpcc/mix/fct_topo8_flow8_dcqcn.txt"));

    let (summary, _) = s.run(|_| {}).unwrap();
    assert_eq!(summary.failed_flows, 0);
    let records = run.fct_records(&summary).unwrap();
    assert_eq!(records.len(), 12, "every flow finishes");
    let r = records[0];
    assert_eq!(
        (r.sip, r.dip, r.sport, r.dport),
        (node_ip(0), node_ip(4), 10000, 100)
    );
    assert_eq!((r.size, r.start_ns), (20_000, 2_000_000_000));
    // third.cc: 4 links of 1 us, one 1000 B payload per hop (80 + 20 + 20 + 80 ns), 100G
    // bottleneck, 20 packets of 48 header bytes: 8200 + 20960 B * 8 / 100 Gbit/s.
    assert_eq!(r.standalone_ns, 8200 + 1676);
    // Host 0's second flow gets the next source port.
    let second = records
        .iter()
        .find(|x| x.sip == node_ip(0) && x.size == 700)
        .unwrap();
    assert_eq!(second.sport, 10001);
    assert!(records.iter().all(|x| x.fct_ns >= x.standalone_ns * 9 / 10));
    // The incast onto host 4 slows its flows down.
    assert!(records.iter().any(|x| x.slowdown() > 1.5));
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            copy_dir(&p, &to.join(p.file_name().unwrap()));
        } else {
            std::fs::copy(&p, to.join(p.file_name().unwrap())).unwrap();
        }
    }
}

/// `roce sim hpcc` on the fixture config, in a fresh copy of the fixtures (named by `tag`),
/// with the config's `set` lines (`KEY value`) in place of the fixture's for those keys.
fn sim_hpcc_in_copy(tag: &str, set: &[&str]) -> (PathBuf, std::process::Output) {
    sim_hpcc_in_copy_with(tag, set, &[])
}

/// [`sim_hpcc_in_copy`] with `args` after the config's name.
fn sim_hpcc_in_copy_with(
    tag: &str,
    set: &[&str],
    args: &[&str],
) -> (PathBuf, std::process::Output) {
    let dir = std::env::temp_dir().join(format!("roce-hpcc-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    copy_dir(&fixtures(), &dir);
    let cfg = dir.join("mix/config_topo8_flow8_dcqcn.txt");
    let key = |l: &str| l.split_whitespace().next().unwrap_or_default().to_owned();
    let text: String = std::fs::read_to_string(&cfg)
        .unwrap()
        .lines()
        .map(|l| match set.iter().find(|s| key(s) == key(l)) {
            Some(s) => format!("{s}\n"),
            None => format!("{l}\n"),
        })
        .collect();
    std::fs::write(&cfg, text).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_roce"))
        .args(["sim", "hpcc", "mix/config_topo8_flow8_dcqcn.txt"])
        .args(args)
        .current_dir(&dir)
        .output()
        .unwrap();
    (dir, out)
}

#[test]
fn sim_hpcc_writes_the_fct_file_and_lists_ignored_keys_once() {
    let (dir, out) = sim_hpcc_in_copy("cli", &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stdout.contains("fct slowdown by size (12 finished flows"),
        "{stdout}"
    );
    assert_eq!(
        stderr.matches("keys that change nothing").count(),
        1,
        "{stderr}"
    );
    assert!(stderr.contains("ENABLE_TRACE"), "{stderr}");
    // Dynamic PFC and the per-rate ECN maps are mapped now; the ACK priority is not.
    assert!(stderr.contains("not modelled: ACK_HIGH_PRIO"), "{stderr}");
    assert!(!stderr.contains("USE_DYNAMIC_PFC_THRESHOLD"), "{stderr}");
    assert!(!stderr.contains("KMIN_MAP"), "{stderr}");
    let fct = std::fs::read_to_string(dir.join("mix/fct_topo8_flow8_dcqcn.txt")).unwrap();
    let records = fct_file::parse("fct", &fct).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(records.len(), 12);
    assert!(
        fct.starts_with("0b000001 0b000401 10000 100 20000 2000000000 "),
        "{fct}"
    );
}

/// `--cc` runs another controller over the config's fabric and flows, without the parameters
/// derived for the config's CC_MODE (DCQCN's, which Swift does not have): every flow finishes.
#[test]
fn sim_hpcc_runs_another_controller_with_cc() {
    let args = ["--cc", "swift", "--set", "cc.base_target=10", "--json"];
    let (dir, out) = sim_hpcc_in_copy_with("swift", &[], &args);
    let _ = std::fs::remove_dir_all(&dir);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // Only the parameter given: none of the config's DCQCN ones.
    assert_eq!(v["cc"], "swift (base_target=10)");
    let flows = v["flows"].as_array().unwrap();
    assert_eq!(flows.len(), 12);
    assert!(flows.iter().all(|f| f["state"] == "done"), "{flows:?}");
}

/// The summary line of a `roce sim hpcc` run's stdout (ECN marks, CNPs, PFC frames).
fn summary_line(out: &std::process::Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().find(|l| l.starts_with("jain "));
    line.unwrap_or_default().to_owned()
}

/// A successful [`sim_hpcc_in_copy`] run's PFC file and its summary line (the copy removed).
fn sim_hpcc_pfc(tag: &str, set: &[&str]) -> (String, String) {
    let (dir, out) = sim_hpcc_in_copy(tag, set);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let text = std::fs::read_to_string(dir.join("mix/pfc_topo8_flow8_dcqcn.txt")).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    (text, summary_line(&out))
}

/// With the fixture's 32 MiB buffer, the simulator's dynamic threshold at switch 9 (4 host
/// ports and a 400G uplink, headroom 150 KB each: (32 MiB − 750 KB − buffered) >> 3 at a host
/// port, >> 1 at the uplink) is far above the 1.8 MB the incast onto host 4 brings, so no port
/// pauses (the static 200 KB XOFF of our own default paused 16 times); the queue toward host 4
/// passes Kmin (400 KB) and the dequeue-time marking marks five times (with switch 9's own
/// marking stream), answered by three CNPs (marks closer than the CNP interval share one).
#[test]
fn sim_hpcc_with_a_32_mib_buffer_marks_but_does_not_pause() {
    let (text, line) = sim_hpcc_pfc("pfc32", &[]);
    assert_eq!(text, "");
    assert!(
        line.contains("ecn 5  cnp 3/3  pfc 0 (hosts got 0, paused 0.0 us)  drops 0"),
        "{line}"
    );
}

/// With `BUFFER_SIZE 1` the dynamic thresholds bite: switch 9's free buffer is 1 MiB − 5 x
/// 150 KB = 298,576 B, and its 400G ingress from switch 10 (alpha 1/2) sends XOFF once it holds
/// more than (298,576 − buffered) / 2, about 99.5 KB; switch 10 in turn pauses switch 8's
/// uplink (its fifth link, interface 5), and switch 8 (alpha 1/8 at its 100G host ports)
/// pauses hosts 1-3: `third.cc`'s `get_pfc` lines, `time node type if_index 1|0`, by the port
/// that receives the frame.
#[test]
fn sim_hpcc_writes_the_pfc_file_with_pauses_and_resumes_where_ns3_would() {
    let (text, line) = sim_hpcc_pfc("pfc", &["BUFFER_SIZE 1"]);
    let lines = pfc_file::parse("pfc", &text).unwrap();
    assert_eq!(pfc_file::write(&lines), text, "five plain numbers per line");
    let mut ports: Vec<(usize, u8, u32)> = lines
        .iter()
        .map(|r| (r.node, r.node_type, r.if_index))
        .collect();
    ports.sort_unstable();
    ports.dedup();
    assert_eq!(
        ports,
        [(1, 0, 1), (2, 0, 1), (3, 0, 1), (8, 1, 5), (10, 1, 2)],
        "{text}"
    );
    let count = |node: usize| lines.iter().filter(|r| r.node == node).count();
    assert_eq!([1, 2, 3, 8, 10].map(count), [4, 4, 4, 6, 14], "{text}");
    assert!(text.starts_with("2000009475 10 1 2 1\n"), "{text}");
    for port in [(1, 1), (2, 1), (3, 1), (8, 5), (10, 2)] {
        let at: Vec<_> = lines
            .iter()
            .filter(|r| (r.node, r.if_index) == port)
            .collect();
        // A port's lines alternate pause, resume, ... from a pause, and end resumed.
        assert_eq!(at.len() % 2, 0, "{text}");
        for (i, r) in at.iter().enumerate() {
            assert_eq!(r.pause, i % 2 == 0, "{text}");
        }
    }
    // Times are the simulator's (flows start at 2 s), in order.
    assert!(lines.windows(2).all(|w| w[0].t_ns <= w[1].t_ns));
    assert!(lines.iter().all(|r| r.t_ns > 2_000_000_000));
    assert!(
        line.contains("pfc 32 (hosts got 12, paused 37.4 us)  drops 0"),
        "{line}"
    );
}

#[test]
fn sim_hpcc_names_file_and_line_of_a_bad_config() {
    let dir = std::env::temp_dir().join(format!("roce-hpcc-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = dir.join("config.txt");
    std::fs::write(&cfg, "CC_MODE 1\nRATE_AI 5Mb/s\nWHAT_IS_THIS 1\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_roce"))
        .args(["sim", "hpcc"])
        .arg(&cfg)
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("config.txt:3: unknown key \"WHAT_IS_THIS\""),
        "{stderr}"
    );
}
