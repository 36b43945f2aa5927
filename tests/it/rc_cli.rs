//! `roce loopback` end to end: verified runs exit 0 with `"verified": true`, failed verification
//! and bad input exit non-zero with one clear line.

use crate::support::cli_output;

use cli_output::roce;

/// A lossy, PSN-wrapping run on `port` (every fault at `fault`) with `extra` arguments; returns
/// the JSON summary after checking the exit status and that it verified.
fn lossy_run(port: &str, fault: &str, start_psn: &str, extra: &[&str]) -> serde_json::Value {
    let mut args = vec![
        "loopback",
        "--port",
        port,
        "--start-psn",
        start_psn,
        "--json",
    ];
    for knob in ["--loss", "--dup", "--reorder", "--corrupt"] {
        args.extend([knob, fault]);
    }
    args.extend(extra);
    let (code, out, err) = roce(&args);
    assert_eq!(code, 0, "{out}{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON summary");
    assert_eq!(v["verified"], serde_json::Value::Bool(true));
    assert_eq!(v["port"], port);
    assert!(v["retransmissions"].as_u64().unwrap() > 0);
    v
}

#[test]
fn lossy_loopback_across_the_psn_wrap_verifies_every_byte() {
    let v = lossy_run(
        "memory",
        "0.03",
        "16777200",
        &[
            "--count", "60", "--qps", "2", "--size", "3000", "--mtu", "1024", "--seed", "9",
        ],
    );
    assert_eq!(v["messages"], 120);
    // The summary carries the mlx5 / rxe counter names, per port and per QP, that `roce stats`
    // reads; the totals agree with the summary's own retransmission count.
    assert_eq!(
        v["counters"]["retransmitted_packets"], v["retransmissions"],
        "{v}"
    );
    assert!(
        v["counters"]["duplicate_request"].as_u64().unwrap() > 0,
        "{v}"
    );
    assert_eq!(v["stats"]["ports"].as_array().map(Vec::len), Some(2));
    assert_eq!(v["stats"]["qps"].as_array().map(Vec::len), Some(4));
}

#[test]
fn failed_verification_exits_non_zero() {
    let (code, out, err) = roce(&["loopback", "--count", "5", "--loss", "0.95", "--json"]);
    assert_eq!(code, 1);
    assert!(out.contains("\"verified\": false"));
    assert!(err.starts_with("roce: verification failed"), "{err}");
}

/// `--recovery selective` on a link that only loses frames: every byte verified, and far fewer
/// packets resent than go-back-N resends over the same link.
#[test]
fn selective_repeat_resends_a_fraction_of_what_go_back_n_does() {
    let run = |recovery: &str| {
        let args = [
            "loopback",
            "--loss",
            "0.05",
            "--ops",
            "write,send",
            "--size",
            "16K",
            "--count",
            "100",
            "--seed",
            "3",
            "--recovery",
            recovery,
            "--json",
        ];
        let (code, out, err) = roce(&args);
        assert_eq!(code, 0, "{out}{err}");
        let v: serde_json::Value = serde_json::from_str(&out).expect("JSON summary");
        assert_eq!(v["verified"], serde_json::Value::Bool(true));
        let lost = v["faults_a_to_b"]["dropped"].as_u64().unwrap()
            + v["faults_b_to_a"]["dropped"].as_u64().unwrap();
        (v["retransmissions"].as_u64().unwrap(), lost, v)
    };
    let (gbn, gbn_lost, _) = run("go-back-n");
    let (sr, sr_lost, v) = run("selective");
    assert!(
        gbn > 5 * gbn_lost,
        "go-back-n resent {gbn} for {gbn_lost} lost"
    );
    assert!(
        sr <= 2 * sr_lost,
        "selective resent {sr} for {sr_lost} lost"
    );
    assert!(
        v["counters"]["out_of_order_placed"].as_u64().unwrap() > 0,
        "{v}"
    );
}

#[test]
fn bad_input_gives_one_clear_error_line() {
    for (args, want) in [
        (&["loopback", "--mtu", "300"][..], "--mtu 300 is not one of"),
        (
            &["loopback", "--ops", "write,teleport"][..],
            "unknown operation `teleport`",
        ),
        (
            &["loopback", "--loss", "1.5"][..],
            "--loss 1.5 must be in [0, 1)",
        ),
        (
            &["loopback", "--port", "teleport"][..],
            "--port \"teleport\" is not one of memory, ring",
        ),
        (
            &["loopback", "--reorder-window", "5"][..],
            "--reorder-window applies to --recovery selective only",
        ),
    ] {
        let (code, _, err) = roce(args);
        assert_eq!(code, 1, "{args:?}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(want), "{err}");
    }
}

#[cfg(feature = "dpdk")]
#[test]
fn ring_loopback_verifies_every_byte_through_lossy_dpdk_ports() {
    let v = lossy_run(
        "ring",
        "0.05",
        "16777210",
        &[
            "--eal",
            "--log-level=1",
            "--count",
            "40",
            "--qps",
            "2",
            "--size",
            "5000",
            "--mtu",
            "4096",
            "--seed",
            "4",
        ],
    );
    assert_eq!(v["messages"], 80);
    assert!(v["faults_a_to_b"]["corrupted"].as_u64().unwrap() > 0);
}

#[cfg(feature = "dpdk")]
#[test]
fn ring_loopback_with_bad_eal_arguments_ends_in_one_roce_error_line() {
    let (code, _, err) = roce(&["loopback", "--port", "ring", "--eal", "--no-such-eal-flag"]);
    assert_eq!(code, 1);
    // EAL prints its own usage first; our error is the one last line.
    let last = err.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("roce: --port ring: starting DPDK: EAL initialisation failed"),
        "{err}"
    );
}
