//! Every main command as `roce ... | head` runs it: the reader goes away before the command
//! writes, and the command must end quietly (status 0, no panic message), whether it prints with
//! `io::Write` (the error reaches `main`) or still with `println!` (the panic hook catches it).

use std::io::Read;
use std::process::{Command, Stdio};

use roce_testkit::vectors;

fn vector(name: &str) -> String {
    vectors::path(name).display().to_string()
}

/// Runs `roce args` with its stdout a pipe whose reading end is closed at once; returns the exit
/// code and stderr.
fn run_into_closed_pipe(args: &[&str]) -> (Option<i32>, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_roce"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the roce binary runs");
    drop(child.stdout.take());
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    let status = child.wait().expect("roce exits");
    (status.code(), err)
}

fn assert_quiet_end(args: &[&str]) {
    let (code, err) = run_into_closed_pipe(args);
    assert!(
        !err.contains("panicked") && !err.contains("Broken pipe"),
        "{args:?}: {err}"
    );
    assert_eq!(code, Some(0), "{args:?}: {err}");
}

#[test]
fn commands_without_dpdk_end_quietly_when_the_reader_closes_the_pipe() {
    let write = vector("ib_write_bw_8192_mtu1024.pcap");
    let cases: &[&[&str]] = &[
        &["limits"],
        &["pcap", "check", &write],
        &["pcap", "check", &write, "--json"],
        &["pcap", "explain", &write],
        &["cc", "show", "dcqcn-mlx"],
        &["cc", "show", "dcqcn-mlx", "--json"],
        &[
            "cc",
            "replay",
            "--cc",
            "dcqcn-mlx",
            "--events",
            "cnp@0us,cnp@50us",
        ],
        &[
            "cc",
            "replay",
            "--cc",
            "dcqcn-mlx",
            "--events",
            "cnp@0us",
            "--csv",
        ],
        &["loopback", "--count", "50"],
        &["loopback", "--count", "50", "--json"],
        &["sim", "incast", "--senders", "2", "--duration", "200us"],
        &[
            "sim",
            "incast",
            "--senders",
            "2",
            "--duration",
            "200us",
            "--json",
        ],
        &["--help"],
    ];
    for args in cases {
        assert_quiet_end(args);
    }
}

#[test]
fn roce_stats_ends_quietly_when_the_reader_closes_the_pipe() {
    let dir = std::env::temp_dir().join(format!("roce-cli-pipe-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("loopback.json");
    let out = Command::new(env!("CARGO_BIN_EXE_roce"))
        .args(["loopback", "--count", "20", "--json"])
        .output()
        .expect("roce loopback runs");
    assert!(out.status.success());
    std::fs::write(&file, &out.stdout).expect("write the JSON");
    let path = file.to_str().expect("utf-8 path");
    assert_quiet_end(&["stats", path]);
    assert_quiet_end(&["stats", path, "--rdma"]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[cfg(feature = "dpdk")]
#[test]
fn dpdk_commands_end_quietly_when_the_reader_closes_the_pipe() {
    assert_quiet_end(&["port", "info", "--port", "null"]);
    assert_quiet_end(&["demo", "--duration", "200ms", "--senders", "1"]);
    assert_quiet_end(&["demo", "--duration", "200ms", "--senders", "1", "--json"]);
}
