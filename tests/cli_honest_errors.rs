//! Lost causes say what was lost: a run that verified nothing does not report "verified", a
//! refused EAL argument is one line (not DPDK's usage text), a tap port without the privilege
//! names it, and a TCP peer that resets the exchange is named with what it did.

use std::process::{Command, Output, Stdio};

fn roce(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_roce"))
        .args(args)
        .stdin(Stdio::null())
        .env("RUST_BACKTRACE", "0")
        .output()
        .expect("the roce binary runs")
}

/// The `roce:` lines of stderr.
fn error_lines(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.starts_with("roce: "))
        .map(str::to_owned)
        .collect()
}

#[test]
fn loopback_with_zero_messages_is_refused_not_verified() {
    for extra in [&[][..], &["--json"][..]] {
        let mut args = vec!["loopback", "--count", "0"];
        args.extend(extra);
        let out = roce(&args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(!stdout.contains("verified"), "{args:?}: {stdout}");
        assert_eq!(
            error_lines(&out),
            ["roce: --count 0: at least one message per QP (nothing sent is nothing verified)"]
        );
    }
}
