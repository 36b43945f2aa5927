//! Bad input to the everyday commands is one clear line on stderr (`roce: ...`) and a non-zero
//! exit, never a panic or a hang: usage errors (status 2), bad values, missing files and ports
//! (status 1). Each case names the word the line must contain, so a vague message fails.

use std::process::{Command, Output, Stdio};

fn roce(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_roce"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("the roce binary runs")
}

/// The last line of stderr (EAL may log before it) is the only `roce:` line and says `needle`.
fn assert_one_line_error(args: &[&str], code: i32, needle: &str) {
    let out = roce(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
    assert!(!err.contains("panicked"), "{args:?}: {err}");
    let ours: Vec<&str> = err.lines().filter(|l| l.starts_with("roce: ")).collect();
    assert_eq!(ours.len(), 1, "{args:?}: {err}");
    assert!(ours[0].contains(needle), "{args:?}: {err}");
    assert_eq!(err.lines().last(), Some(ours[0]), "{args:?}: {err}");
}

#[test]
fn usage_errors_are_one_line_with_status_2() {
    assert_one_line_error(
        &["nosuchcommand"],
        2,
        "unrecognized subcommand 'nosuchcommand'",
    );
    assert_one_line_error(&["limits", "--bogus"], 2, "unexpected argument '--bogus'");
    assert_one_line_error(
        &["cc", "replay", "--cc", "dcqcn-mlx", "--mtu", "big"],
        2,
        "'--mtu <MTU>'",
    );
}

#[test]
fn cc_bad_names_values_and_scripts_are_one_line_errors() {
    assert_one_line_error(
        &["cc", "show", "bogus"],
        1,
        "unknown congestion control `bogus`",
    );
    assert_one_line_error(
        &["cc", "show", "dcqcn-mlx", "--set", "foo=1"],
        1,
        "no parameter `foo`",
    );
    let replay = ["cc", "replay", "--cc", "dcqcn-mlx"];
    let with = |extra: &[&'static str]| -> Vec<&'static str> {
        replay.iter().chain(extra).copied().collect()
    };
    assert_one_line_error(&with(&["--duration", "5x"]), 1, "--duration");
    assert_one_line_error(&with(&["--events", "cnp@zz"]), 1, "--events");
    assert_one_line_error(&with(&["--mtu", "0"]), 1, "--mtu 0");
    assert_one_line_error(&with(&["--line-gbps", "0"]), 1, "--line-gbps");
}

#[test]
fn stats_of_a_missing_unreadable_or_counterless_file_is_one_line_error() {
    assert_one_line_error(
        &["stats", "/nonexistent/run.json"],
        1,
        "cannot read /nonexistent/run.json",
    );
    let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
    assert_one_line_error(&["stats", manifest], 1, "is not JSON");
    let dir = std::env::temp_dir().join(format!("roce-cli-errors-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("summary.json");
    std::fs::write(&file, r#"{"verified":true,"errors":[]}"#).expect("write");
    assert_one_line_error(
        &["stats", file.to_str().expect("utf-8")],
        1,
        "has no counters",
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[cfg(feature = "dpdk")]
#[test]
fn port_info_for_a_missing_or_malformed_port_is_one_line_error() {
    assert_one_line_error(
        &["port", "info", "--port", "pci:0000:99:00.0"],
        1,
        "--port pci:0000:99:00.0: DPDK did not find this port",
    );
    assert_one_line_error(
        &["port", "info", "--port", "nic0"],
        2,
        "bad port spec \"nic0\"",
    );
}

#[cfg(feature = "dpdk")]
#[test]
fn demo_bad_mtu_ops_status_and_paths_are_one_line_errors_before_any_traffic() {
    assert_one_line_error(
        &["demo", "--mtu", "2048"],
        1,
        "--mtu 2048 is not one of 256, 512, 1024",
    );
    assert_one_line_error(&["demo", "--mtu", "1000"], 1, "--mtu 1000");
    assert_one_line_error(
        &["demo", "--ops", "write,atomic"],
        1,
        "--ops: unknown operation `atomic` (expected write, send, read)",
    );
    assert_one_line_error(&["demo", "--status", "0"], 1, "--status");
    assert_one_line_error(&["demo", "--senders", "0"], 1, "--senders 0");
    assert_one_line_error(&["demo", "--depth", "0"], 1, "--depth 0");
    assert_one_line_error(
        &["demo", "--kmin", "9", "--kmax", "9"],
        1,
        "--kmin < --kmax",
    );
    assert_one_line_error(
        &["demo", "--pcap", "/nonexistent/dir/demo.pcap"],
        1,
        "cannot write /nonexistent/dir/demo.pcap",
    );
    assert_one_line_error(
        &["demo", "--out", "/proc/version/x"],
        1,
        "--out /proc/version/x: cannot create",
    );
}

#[test]
fn sim_with_an_unknown_engine_is_a_one_line_usage_error_naming_the_choices() {
    assert_one_line_error(
        &["sim", "incast", "--transport", "bogus"],
        2,
        "engine \"bogus\" is not \"rc\" or \"stand-in\"",
    );
}
