//! `roce port info` end to end, each run in its own process (and so its own EAL).

use crate::support::cli_output;

/// Runs `roce args`: whether it succeeded, stdout and stderr.
fn roce(args: &[&str]) -> (bool, String, String) {
    let (code, stdout, stderr) = cli_output::roce(args);
    (code == 0, stdout, stderr)
}

/// Runs `roce args`, which must fail with exactly one `roce:` line on stderr: stdout and that
/// line.
fn fails_in_one_line(args: &[&str]) -> (String, String) {
    let (ok, stdout, stderr) = roce(args);
    assert!(!ok);
    let error: Vec<&str> = stderr.lines().filter(|l| l.starts_with("roce: ")).collect();
    assert_eq!(error.len(), 1, "{stderr}");
    (stdout, error[0].to_owned())
}

#[test]
fn port_info_lists_driver_mac_mtu_link_and_offloads() {
    let (ok, stdout, stderr) = roce(&[
        "port",
        "info",
        "--eal",
        "--no-pci --log-level=1",
        "--port",
        "null",
        "--port",
        "ring",
    ]);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("2 port(s)"), "{stdout}");
    let null = stdout
        .lines()
        .find(|l| l.starts_with("port 0 net_null0 driver=net_null mac="));
    assert!(
        null.is_some_and(|l| l.contains(" mtu=1500 ") && l.contains(" link=")),
        "{stdout}"
    );
    let ring = stdout
        .lines()
        .find(|l| l.starts_with("port 1 net_ring1 driver=net_ring"));
    assert!(
        ring.is_some_and(|l| l.contains("offloads=rx-scatter,tx-multi-segs")),
        "{stdout}"
    );
}

#[test]
fn port_info_without_ports_explains_what_to_do() {
    let (stdout, error) = fails_in_one_line(&["port", "info", "--eal", "--no-pci --log-level=1"]);
    assert!(stdout.contains("0 ports"), "{stdout}");
    assert!(
        error.contains("--vdev=net_null0") && error.contains("-d /usr/lib"),
        "{error}"
    );
}

#[test]
fn port_info_rejects_a_bad_port_spec_in_one_line() {
    let (ok, _, stderr) = roce(&["port", "info", "--port", "tap:"]);
    assert!(!ok);
    assert!(stderr.contains("bad port spec \"tap:\""), "{stderr}");
}

#[test]
fn bad_eal_arguments_end_in_one_error_line_and_leave_stdout_clean() {
    // DPDK prints its usage text on bad arguments; it must not land in our stdout (where a
    // `--json` document or a table would go), and our error names the failing argument list.
    let (stdout, error) =
        fails_in_one_line(&["port", "info", "--port", "null", "--eal", "--bogus"]);
    assert!(stdout.trim().is_empty(), "stdout: {stdout}");
    assert!(error.contains("--bogus"), "{error}");
}
