//! What a finished `roce` process said: its one-line errors, its JSON, the numbers in its lines;
//! and the command lines the CLI tests share.

use std::process::{Command, Output};

/// Runs `roce args` without panic backtraces: its exit code (-1 when a signal ended it), stdout
/// and stderr.
pub fn roce(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_roce"))
        .args(args)
        .env("RUST_BACKTRACE", "0")
        .output()
        .expect("run roce");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A fresh directory for one test's files, named after the test and this process (removed
/// with `std::fs::remove_dir_all` when the test is done).
pub fn scratch_dir(test: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("roce-{test}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// `text` parsed as JSON (a test failure naming the text when it is not).
pub fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// What `roce pcap explain PCAP --links` prints; it must succeed.
pub fn explain_links(pcap: &str) -> String {
    let (code, out, err) = roce(&["pcap", "explain", pcap, "--links"]);
    assert_eq!(code, 0, "stderr: {err}");
    out
}

/// The numbers after `before` in `line` (`"... frame 12; first sent in frame 3"` -> 12, 3).
pub fn numbers_after(line: &str, before: &str) -> Vec<usize> {
    line.split(before)
        .skip(1)
        .filter_map(|rest| {
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        })
        .collect()
}

/// The `roce:` lines of stderr (our errors; DPDK and warnings say other things).
pub fn error_lines(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.starts_with("roce: "))
        .map(str::to_owned)
        .collect()
}

/// `roce perf write-bw` as a client over the null port, at 198.18.0.2/15, to the server at
/// 127.0.0.1:`tcp_port`, giving up after `timeout` seconds. (DPDK ports: used only with it.)
#[cfg(feature = "dpdk")]
pub fn null_perf_client<'a>(timeout: &'a str, tcp_port: &'a str) -> [&'a str; 11] {
    [
        "perf",
        "write-bw",
        "--ip",
        "198.18.0.2/15",
        "--port",
        "null",
        "--timeout",
        timeout,
        "-p",
        tcp_port,
        "127.0.0.1",
    ]
}
