//! Lost causes say what was lost: a run that verified nothing does not report "verified", a
//! refused EAL argument is one line (not DPDK's usage text), a tap port without the privilege
//! names it, and a TCP peer that resets the exchange is named with what it did.

use crate::support::cli_output;

use std::process::{Command, Output, Stdio};

use cli_output::error_lines;

fn roce(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_roce"))
        .args(args)
        .stdin(Stdio::null())
        .env("RUST_BACKTRACE", "0")
        .output()
        .expect("the roce binary runs")
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

#[cfg(feature = "dpdk")]
#[test]
fn bad_eal_flag_is_one_line_naming_it_without_dpdk_usage() {
    let out = roce(&[
        "perf",
        "write-bw",
        "--ip",
        "198.18.0.1/15",
        "--port",
        "null",
        "--eal",
        "--bogus",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Nothing but our line: DPDK's ~100 lines of usage and its repeated complaints are gone.
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with(
            "roce: DPDK port --port null: EAL initialisation failed: \
             dpdk: unrecognized option '--bogus' (Invalid argument, rte_errno 22); arguments: "
        ),
        "{stderr}"
    );
    assert!(out.stdout.is_empty());
}

#[cfg(feature = "dpdk")]
#[test]
fn tap_port_without_cap_net_admin_names_the_missing_privilege() {
    use roce_testkit::skip;
    let setpriv = std::path::Path::new("/usr/bin/setpriv");
    let why = "dropping CAP_NET_ADMIN needs root and setpriv (util-linux)";
    if !skip::require("root", skip::is_root(), why)
        || !skip::require("setpriv", skip::tool("/usr/bin/setpriv"), why)
    {
        return;
    }
    // Root without CAP_NET_ADMIN (bounding and inheritable sets), as an unprivileged user is.
    let out = Command::new(setpriv)
        .args(["--bounding-set", "-net_admin", "--inh-caps", "-net_admin"])
        .arg(env!("CARGO_BIN_EXE_roce"))
        .args([
            "perf",
            "write-bw",
            "--ip",
            "198.18.0.1/15",
            "-p",
            "0",
            "--port",
            "tap:rnocap0",
        ])
        .stdin(Stdio::null())
        .output()
        .expect("setpriv runs roce");
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        error_lines(&out),
        ["roce: no DPDK port: --port tap:rnocap0: creating a tap interface needs CAP_NET_ADMIN, \
          which this process lacks (run as root)"]
    );
}

#[cfg(feature = "dpdk")]
#[test]
fn a_server_that_resets_the_exchange_is_named_with_what_it_did() {
    // A "server" that takes the client's parameters unread and closes: the kernel resets.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let resetter = std::thread::spawn(move || {
        let (s, _) = listener.accept().unwrap();
        let mut buf = [0u8; 1];
        s.peek(&mut buf).unwrap();
        drop(s);
    });
    let port = addr.port().to_string();
    let out = roce(&cli_output::null_perf_client("10", &port));
    resetter.join().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        error_lines(&out),
        [format!(
            "roce: peer: read parameters: connection reset by {addr}"
        )]
    );
}
