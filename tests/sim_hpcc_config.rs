//! `roce sim hpcc CONFIG`: an HPCC ns-3 simulator config file, with its topology and flow
//! files, runs through the real RC endpoints and writes its FCT file.

use std::path::{Path, PathBuf};
use std::process::Command;

use roce_fabric::hpcc::fct_file::{self, node_ip};
use roce_fabric::hpcc::pfc_file;
use roce_fabric::hpcc_run::HpccRun;

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
    assert!(run
        .fct_output
        .ends_with("fixtures/hpcc/mix/fct_topo8_flow8_dcqcn.txt"));

    let (summary, _) = s.run(|_| {}).unwrap();
    assert_eq!(summary.failed_flows, 0);
    let records = run.fct_records(&summary);
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

/// `roce sim hpcc` on the fixture config, in a fresh copy of the fixtures (named by `tag`).
fn sim_hpcc_in_copy(tag: &str) -> (PathBuf, std::process::Output) {
    let dir = std::env::temp_dir().join(format!("roce-hpcc-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    copy_dir(&fixtures(), &dir);
    let out = Command::new(env!("CARGO_BIN_EXE_roce"))
        .args(["sim", "hpcc", "mix/config_topo8_flow8_dcqcn.txt"])
        .current_dir(&dir)
        .output()
        .unwrap();
    (dir, out)
}

#[test]
fn sim_hpcc_writes_the_fct_file_and_lists_ignored_keys_once() {
    let (dir, out) = sim_hpcc_in_copy("cli");
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
    assert!(
        stderr.contains("not modelled: USE_DYNAMIC_PFC_THRESHOLD"),
        "{stderr}"
    );
    let fct = std::fs::read_to_string(dir.join("mix/fct_topo8_flow8_dcqcn.txt")).unwrap();
    let records = fct_file::parse("fct", &fct).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(records.len(), 12);
    assert!(
        fct.starts_with("0b000001 0b000401 10000 100 20000 2000000000 "),
        "{fct}"
    );
}

/// The fixture's incast (hosts 0-3 under switch 8 onto host 4 under switch 9, the two joined
/// through switch 10 at 400G) backs up into switch 9, which pauses switch 10's port toward it
/// (its second link, interface 2), and switch 10 in turn pauses switch 8's uplink (its fifth
/// link, interface 5): `third.cc`'s `get_pfc` lines, `time node type if_index 1|0`.
#[test]
fn sim_hpcc_writes_the_pfc_file_with_pauses_and_resumes_where_ns3_would() {
    let (dir, out) = sim_hpcc_in_copy("pfc");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let text = std::fs::read_to_string(dir.join("mix/pfc_topo8_flow8_dcqcn.txt")).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let lines = pfc_file::parse("pfc", &text).unwrap();
    assert_eq!(pfc_file::write(&lines), text, "five plain numbers per line");
    let mut ports: Vec<(usize, u8, u32)> = lines
        .iter()
        .map(|r| (r.node, r.node_type, r.if_index))
        .collect();
    ports.sort_unstable();
    ports.dedup();
    assert_eq!(ports, [(8, 1, 5), (10, 1, 2)], "{text}");
    for port in [(8, 5), (10, 2)] {
        let at: Vec<_> = lines
            .iter()
            .filter(|r| (r.node, r.if_index) == port)
            .collect();
        // A port's lines alternate pause, resume, ... from a pause.
        assert!(at.len() >= 2, "{text}");
        for (i, r) in at.iter().enumerate() {
            assert_eq!(r.pause, i % 2 == 0, "{text}");
        }
    }
    // Times are the simulator's (flows start at 2 s), in order.
    assert!(lines.windows(2).all(|w| w[0].t_ns <= w[1].t_ns));
    assert!(lines.iter().all(|r| r.t_ns > 2_000_000_000));
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
