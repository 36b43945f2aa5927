//! `roce perf` and `roce pingpong` refuse bad input with one clear line and a non-zero exit, and
//! every wait ends: a busy TCP port, bad sizes and MTUs, a server nobody listens at, a port that
//! does not exist.

use crate::support::cli_output;

use std::process::Command;

use cli_output::{error_lines, null_perf_client};

/// Runs `roce` with the words of `command_line`, which must fail, and returns its `roce:` lines.
fn refused(command_line: &str) -> String {
    let args: Vec<&str> = command_line.split_whitespace().collect();
    let out = Command::new(env!("CARGO_BIN_EXE_roce"))
        .args(&args)
        .output()
        .expect("run roce");
    assert!(!out.status.success(), "{args:?} succeeded");
    error_lines(&out).join("\n")
}

/// Command lines refused before any port opens, each with the one line it must print.
const REFUSED: &[(&str, &str)] = &[
    (
        "perf write-bw --ip 198.18.0.1/15 -m 1000",
        "roce: -m 1000: the MTU must be 256, 512, 1024, 2048 or 4096",
    ),
    (
        "perf send-bw --ip 198.18.0.1/15 -s 0",
        "roce: -s 0: the size must be 1..=8388608 bytes",
    ),
    (
        "perf send-bw --ip 198.18.0.1/15 -s 8388609",
        "roce: -s 8388609: the size must be 1..=8388608 bytes",
    ),
    (
        "perf send-lat --ip 198.18.0.1/15 -D 2",
        "roce: -D is supported by the bandwidth tests only",
    ),
    (
        "perf send-lat --ip 198.18.0.1/15 -b",
        "roce: -b is supported by the bandwidth tests only",
    ),
    (
        "perf write-bw --ip 198.18.0.1/40",
        "roce: --ip \"198.18.0.1/40\": prefix length must be 0..=32",
    ),
    (
        "pingpong --ip 198.18.0.1/15 -m 9000",
        "roce: -m 9000: the MTU must be 256, 512, 1024, 2048 or 4096",
    ),
    (
        "perf write-bw --ip 198.18.0.2/15 --port pci:0000:99:00.0 127.0.0.1",
        "roce: no DPDK port: --port pci:0000:99:00.0 created nothing",
    ),
    (
        "perf write-bw --ip 198.18.0.1/15 -a --peer-format perftest",
        "roce: --peer-format perftest: one size, one QP, no -D or -b",
    ),
    // The same rule and words as `roce loopback` (FaultConfig::check).
    (
        "perf write-bw --ip 198.18.0.1/15 --port null --loss 1.5",
        "roce: --loss 1.5 must be in [0, 1)",
    ),
];

#[test]
fn bad_input_is_refused_with_one_line() {
    for (command_line, line) in REFUSED {
        assert_eq!(refused(command_line), *line, "{command_line}");
    }
}

#[test]
fn busy_tcp_port_is_one_line() {
    let busy = std::net::TcpListener::bind("0.0.0.0:0").unwrap();
    let port = busy.local_addr().unwrap().port().to_string();
    let err = refused(&format!("perf write-bw --ip 198.18.0.1/15 -p {port}"));
    assert_eq!(err, format!("roce: TCP port {port} is busy"));
}

#[test]
fn client_without_a_server_gives_up_after_the_timeout() {
    // A port nobody listens on: bind and drop.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
        .to_string();
    let err = refused(&null_perf_client("1", &port).join(" "));
    assert_eq!(
        err,
        format!("roce: no server listens at 127.0.0.1:{port} (refused for 1 s)")
    );
}

#[test]
fn peer_that_accepts_but_never_answers_is_one_line() {
    // A listener that takes the connection and then says nothing.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port().to_string();
    let holder = std::thread::spawn(move || listener.accept().map(|(s, _)| s));
    let err = refused(&null_perf_client("1", &port).join(" "));
    drop(holder.join());
    assert_eq!(err, "roce: peer: read parameters: peer silent for 1s");
}

#[test]
fn vdev_names_the_raw_device_in_its_error_and_gid_index_is_accepted() {
    // --vdev replaces --port with a raw DPDK device; perftest's -x is taken as it is.
    let err = refused("perf write-bw --ip 198.18.0.2/15 -x 1 --vdev net_nosuchdriver0 127.0.0.1");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("--vdev net_nosuchdriver0"), "{err}");
}

#[test]
fn vdev_and_port_together_are_refused() {
    let err = refused("perf write-bw --ip 198.18.0.2/15 --vdev net_null0 --port null");
    assert!(err.contains("--vdev") && err.contains("--port"), "{err}");
}
