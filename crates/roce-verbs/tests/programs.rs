//! Unmodified RDMA programs on `libroce_verbs.so` (LD_PRELOAD): Debian's `ibv_devinfo`,
//! `ibv_rc_pingpong`, perftest's `ib_write_bw` / `ib_read_bw` / `ib_send_lat`, and our C
//! programs (`tests/c`), two processes on DPDK net_tap ports bridged in a network namespace
//! (`tools/netns.sh`, 198.18.0.0/15), TCP for their exchanges over the bridge's kernel address.
//! Needs root (CI runs as root); without it the tests say so and pass without running. The
//! programs come from the packages `ibverbs-utils` and `perftest` (tools/setup.sh).
#![cfg(target_os = "linux")]

mod support;

use support::{c_program, Netns, Side};

const SERVER_ADDR: &str = "198.18.0.254";

/// TCP port of the rdma-core and perftest exchanges.
const TCP_PORT: u16 = 18515;

/// Runs `server` and, once it listens on `tcp_port`, `client` (which gets the server's address
/// appended) on the library; returns their stdouts after asserting both succeeded.
fn pair_on(
    ns_tag: &str,
    tcp_port: u16,
    server: &[&str],
    client: &[&str],
) -> Option<(String, String)> {
    let mut ns = Netns::up(ns_tag)?;
    let s = ns.spawn(Side::A, server);
    ns.wait_listen(tcp_port, s);
    let mut client = client.to_vec();
    client.push(SERVER_ADDR);
    let c = ns.spawn(Side::B, &client);
    let cout = ns.wait_ok(c, "client");
    let sout = ns.wait_ok(s, "server");
    Some((sout, cout))
}

/// [`pair_on`] for programs exchanging on port 18515.
fn pair(ns_tag: &str, server: &[&str], client: &[&str]) -> Option<(String, String)> {
    pair_on(ns_tag, TCP_PORT, server, client)
}

/// The numbers of the result line under perftest's header.
fn result_row(stdout: &str, header: &str) -> Vec<f64> {
    let mut lines = stdout.lines();
    lines
        .by_ref()
        .find(|l| l.trim_start().starts_with(header))
        .unwrap_or_else(|| panic!("no {header:?} header in:\n{stdout}"));
    let row = lines.next().unwrap_or_default();
    row.split_whitespace()
        .map(|c| {
            c.parse()
                .unwrap_or_else(|_| panic!("not a number {c:?} in {row:?}"))
        })
        .collect()
}

const BW_HEADER: &str = "#bytes     #iterations    BW peak";
const LAT_HEADER: &str = "#bytes #iterations    t_min";

#[test]
fn ibv_devinfo_lists_roce0_with_the_ipv4_mapped_gid_at_index_1() {
    let Some(mut ns) = Netns::up("devinfo") else {
        return;
    };
    // Configured by a file alone this time.
    let config = "# roce-verbs\nport = tap:rtap0\nip = \"198.18.0.7/15\"\nmtu = 512\n";
    let i = ns.spawn_with_config(Side::A, &["ibv_devinfo", "-v"], config);
    let out = ns.wait_ok(i, "ibv_devinfo");
    for want in [
        "hca_id:\troce0",
        "state:\t\t\tPORT_ACTIVE (4)",
        "link_layer:\t\tEthernet",
        "active_mtu:\t\t512 (2)",
        "GID[  1]:\t\t::ffff:198.18.0.7, RoCE v2",
        "max_qp_rd_atom:\t\t\t16",
    ] {
        assert!(out.contains(want), "no {want:?} in:\n{out}");
    }
    assert!(out.contains("GID[  0]:\t\tfe80::"), "{out}");
    let i = ns.spawn(Side::A, &["ibv_devices"]);
    let out = ns.wait_ok(i, "ibv_devices");
    assert!(out.contains("roce0"), "{out}");
}

#[test]
fn ibv_rc_pingpong_checks_every_buffer_both_ways() {
    let args = [
        "ibv_rc_pingpong",
        "-g",
        "1",
        "-c",
        "-n",
        "200",
        "-s",
        "8192",
    ];
    let Some((s, c)) = pair("pingpong", &args, &args) else {
        return;
    };
    for out in [&s, &c] {
        assert!(out.contains("200 iters in"), "{out}");
        assert!(out.contains("remote address: LID 0x0000"), "{out}");
    }
}

#[test]
fn ibv_rc_pingpong_with_completion_events() {
    let args = ["ibv_rc_pingpong", "-g", "1", "-c", "-n", "100", "-e"];
    let Some((s, c)) = pair("pingpong-events", &args, &args) else {
        return;
    };
    assert!(
        s.contains("100 iters in") && c.contains("100 iters in"),
        "{s}\n{c}"
    );
}

#[test]
fn ibv_rc_pingpong_with_the_extended_send_api() {
    // -N: ibv_create_qp_ex, ibv_qp_to_qp_ex and the ibv_wr_* calls.
    let args = ["ibv_rc_pingpong", "-g", "1", "-c", "-n", "100", "-N"];
    let Some((s, c)) = pair("pingpong-new-send", &args, &args) else {
        return;
    };
    assert!(
        s.contains("100 iters in") && c.contains("100 iters in"),
        "{s}\n{c}"
    );
}

#[test]
fn ib_write_bw_between_two_processes_on_the_library() {
    let args = [
        "ib_write_bw",
        "-d",
        "roce0",
        "-x",
        "1",
        "-F",
        "-s",
        "65536",
        "-n",
        "200",
    ];
    let Some(mut ns) = Netns::up("write-bw") else {
        return;
    };
    // The server's counters file (written every second and at exit), under the usual names.
    let counters = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("write-bw.counters");
    let _ = std::fs::remove_file(&counters);
    let path = counters.to_string_lossy().into_owned();
    let s = ns.spawn_env(Side::A, &args, &[("ROCE_VERBS_COUNTERS", &path)]);
    ns.wait_listen(TCP_PORT, s);
    let mut client = args.to_vec();
    client.push(SERVER_ADDR);
    let c = ns.spawn(Side::B, &client);
    for (i, what) in [(c, "client"), (s, "server")] {
        let out = ns.wait_ok(i, what);
        let row = result_row(&out, BW_HEADER);
        assert_eq!(row.first(), Some(&65536.0), "{out}");
        assert_eq!(row.get(1), Some(&200.0), "{out}");
        assert!(row.get(3).is_some_and(|bw| *bw > 0.0), "{out}");
    }
    let text = std::fs::read_to_string(&counters).unwrap_or_default();
    let value = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse::<u64>().ok())
    };
    assert_eq!(value("rx_write_requests"), Some(200), "{text}");
    assert_eq!(value("error_completions"), Some(0), "{text}");
    assert!(value("rcvd_pkts").is_some_and(|n| n >= 200 * 64), "{text}");
}

#[test]
fn ib_read_bw_between_two_processes_on_the_library() {
    let args = [
        "ib_read_bw",
        "-d",
        "roce0",
        "-x",
        "1",
        "-F",
        "-s",
        "16384",
        "-n",
        "200",
    ];
    let Some((s, c)) = pair("read-bw", &args, &args) else {
        return;
    };
    for out in [&s, &c] {
        let row = result_row(out, BW_HEADER);
        assert_eq!(
            (row.first(), row.get(1)),
            (Some(&16384.0), Some(&200.0)),
            "{out}"
        );
    }
}

#[test]
fn ib_send_lat_between_two_processes_on_the_library() {
    let args = ["ib_send_lat", "-d", "roce0", "-x", "1", "-F", "-n", "200"];
    let Some((s, c)) = pair("send-lat", &args, &args) else {
        return;
    };
    for out in [&s, &c] {
        let row = result_row(out, LAT_HEADER);
        assert_eq!(
            (row.first(), row.get(1)),
            (Some(&2.0), Some(&200.0)),
            "{out}"
        );
    }
}

#[test]
fn a_multithreaded_program_gets_every_byte_and_every_completion() {
    let prog = c_program("verbs_mt");
    let args = [
        prog.as_str(),
        "-t",
        "4",
        "-q",
        "3",
        "-n",
        "150",
        "-s",
        "3000",
    ];
    let Some((s, c)) = pair_on("mt", 18600, &args, &args) else {
        return;
    };
    let want =
        "4 threads, 3 QPs, 600 messages of 3000 bytes (+36 READs): 0 errors here, 0 on the peer";
    assert!(
        s.contains(want) && c.contains(want),
        "server:\n{s}\nclient:\n{c}"
    );
}

#[test]
fn unsupported_calls_fail_with_eopnotsupp_and_one_line_naming_them() {
    let prog = c_program("verbs_refuse");
    let Some(mut ns) = Netns::up("refuse") else {
        return;
    };
    let i = ns.spawn(Side::A, &[prog.as_str()]);
    let out = ns.wait(i);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(stdout.contains("verbs_refuse: 0 failed"), "{stdout}");
    for line in [
        "roce-verbs: ibv_create_qp: UD queue pairs (only RC) is not supported",
        "roce-verbs: ibv_create_qp: UC queue pairs (only RC) is not supported",
        "roce-verbs: ibv_create_qp: XRC queue pairs (only RC) is not supported",
        "roce-verbs: ibv_create_srq: this call is not supported",
        "roce-verbs: ibv_create_ah: this call is not supported",
        "roce-verbs: ibv_alloc_mw: this call is not supported",
        "roce-verbs: ibv_create_cq_ex: this call is not supported",
    ] {
        assert_eq!(
            stderr.lines().filter(|l| *l == line).count(),
            1,
            "{line:?} not once in:\n{stderr}"
        );
    }
}
