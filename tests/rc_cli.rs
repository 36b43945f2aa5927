//! `roce loopback` end to end: verified runs exit 0 with `"verified": true`, failed verification
//! and bad input exit non-zero with one clear line.

use std::process::Command;

fn roce(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_roce"))
        .args(args)
        .output()
        .expect("run roce");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

#[test]
fn lossy_loopback_across_the_psn_wrap_verifies_every_byte() {
    let (code, out, _) = roce(&[
        "loopback",
        "--count",
        "60",
        "--qps",
        "2",
        "--size",
        "3000",
        "--mtu",
        "1024",
        "--start-psn",
        "16777200",
        "--loss",
        "0.03",
        "--dup",
        "0.03",
        "--reorder",
        "0.03",
        "--corrupt",
        "0.03",
        "--seed",
        "9",
        "--json",
    ]);
    assert_eq!(code, 0, "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON summary");
    assert_eq!(v["verified"], serde_json::Value::Bool(true));
    assert_eq!(v["messages"], 120);
    assert!(v["retransmissions"].as_u64().unwrap() > 0);
}

#[test]
fn failed_verification_exits_non_zero() {
    let (code, out, err) = roce(&["loopback", "--count", "5", "--loss", "0.95", "--json"]);
    assert_eq!(code, 1);
    assert!(out.contains("\"verified\": false"));
    assert!(err.starts_with("roce: verification failed"), "{err}");
}

#[test]
fn bad_input_gives_one_clear_error_line() {
    for (args, want) in [
        (&["loopback", "--mtu", "300"][..], "--mtu 300 is not one of"),
        (
            &["loopback", "--ops", "write,teleport"][..],
            "unknown operation \"teleport\"",
        ),
        (
            &["loopback", "--loss", "1.5"][..],
            "--loss 1.5 must be in [0, 1)",
        ),
        (
            &["loopback", "--port", "teleport"][..],
            "--port \"teleport\" is not one of memory, ring",
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
    let (code, out, err) = roce(&[
        "loopback",
        "--port",
        "ring",
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
        "--start-psn",
        "16777210",
        "--loss",
        "0.05",
        "--dup",
        "0.05",
        "--reorder",
        "0.05",
        "--corrupt",
        "0.05",
        "--seed",
        "4",
        "--json",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON summary");
    assert_eq!(v["verified"], serde_json::Value::Bool(true));
    assert_eq!(v["port"], "ring");
    assert_eq!(v["messages"], 80);
    assert!(v["retransmissions"].as_u64().unwrap() > 0);
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
