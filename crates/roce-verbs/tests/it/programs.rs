//! Unmodified RDMA programs on `libroce_verbs.so` (LD_PRELOAD): Debian's `ibv_devinfo`,
//! `ibv_rc_pingpong`, perftest's `ib_write_bw` / `ib_read_bw` / `ib_send_lat`, and our C
//! programs (`tests/c`), two processes on DPDK net_tap ports bridged in a network namespace
//! (`tools/netns.sh`, 198.18.0.0/15), TCP for their exchanges over the bridge's kernel address.
//! Needs root (CI runs as root); without it the tests fail, unless `ROCE_TEST_SKIP=root`. The
//! programs come from the packages `ibverbs-utils` and `perftest` (tools/setup.sh).

use crate::support::{
    c_program, pair_over, result_row, Link, Netns, Side, BW_HEADER, LAT_HEADER, SERVER_ADDR,
    TCP_PORT, WRITE_BW_64K,
};

/// The result row of a perftest pair (`tool` with `args` both sides, over `link`): `[#bytes,
/// #iterations]` of the server's and the client's row under `header`, after asserting both
/// succeeded.
pub fn perftest(
    link: Link,
    tag: &str,
    tool: &str,
    args: &[&str],
    header: &str,
) -> Option<[[f64; 2]; 2]> {
    let mut full = vec![tool, "-d", "roce0", "-x", "1", "-F"];
    full.extend_from_slice(args);
    let (s, c) = pair_over(link, tag, TCP_PORT, &full, &full)?;
    Some([&s, &c].map(|out| {
        let row = result_row(out, header);
        assert!(row.len() > 3, "a short row in:\n{out}");
        [row[0], row[1]]
    }))
}

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

/// `iters` `ibv_rc_pingpong` round trips over `link` checking every buffer (`-g 1 -c -n ITERS`,
/// then `options`) both sides: the server's and the client's output once both say they ran
/// them all.
pub fn checked_pingpong(
    link: Link,
    tag: &str,
    iters: &str,
    options: &[&str],
) -> Option<(String, String)> {
    let mut args = vec!["ibv_rc_pingpong", "-g", "1", "-c", "-n", iters];
    args.extend(options);
    let (s, c) = pair_over(link, tag, TCP_PORT, &args, &args)?;
    let ran = format!("{iters} iters in");
    assert!(s.contains(&ran) && c.contains(&ran), "{s}\n{c}");
    Some((s, c))
}

#[test]
fn ibv_rc_pingpong_checks_every_buffer_both_ways() {
    let Some((s, c)) = checked_pingpong(Link::Tap, "pingpong", "200", &["-s", "8192"]) else {
        return;
    };
    for out in [&s, &c] {
        assert!(out.contains("remote address: LID 0x0000"), "{out}");
    }
}

#[test]
fn ibv_rc_pingpong_with_completion_events() {
    checked_pingpong(Link::Tap, "pingpong-events", "100", &["-e"]);
}

#[test]
fn ibv_rc_pingpong_with_the_extended_send_api() {
    // -N: ibv_create_qp_ex, ibv_qp_to_qp_ex and the ibv_wr_* calls.
    checked_pingpong(Link::Tap, "pingpong-new-send", "100", &["-N"]);
}

#[test]
fn ib_write_bw_between_two_processes_on_the_library() {
    let args = WRITE_BW_64K;
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
    let args = ["-s", "16384", "-n", "200"];
    if let Some(rows) = perftest(Link::Tap, "read-bw", "ib_read_bw", &args, BW_HEADER) {
        assert_eq!(rows, [[16384.0, 200.0]; 2]);
    }
}

#[test]
fn ib_send_lat_between_two_processes_on_the_library() {
    if let Some(rows) = perftest(
        Link::Tap,
        "send-lat",
        "ib_send_lat",
        &["-n", "200"],
        LAT_HEADER,
    ) {
        assert_eq!(rows, [[2.0, 200.0]; 2]);
    }
}

/// `verbs_mt` both sides over `link` (4 threads, 3 QPs, 150 messages of 3000 bytes each and
/// READs back): every byte and completion checked by the program, both sides report 0 errors.
pub fn multithreaded(link: Link, tag: &str) {
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
    let Some((s, c)) = pair_over(link, tag, 18600, &args, &args) else {
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
fn a_multithreaded_program_gets_every_byte_and_every_completion() {
    multithreaded(Link::Tap, "mt");
}

/// Two QPs of one process talking to each other at the device's own GID (both GIDs) loop back
/// inside the library, as rxe loops them: every operation's bytes and completion fields
/// checked by the program, also through an extended CQ (`ibv_create_cq_ex`), and the
/// library's counters say the frames looped and none went to the port.
#[test]
fn two_qps_of_one_process_talk_at_the_devices_own_gid() {
    let prog = c_program("verbs_self");
    let Some(mut ns) = Netns::up("self") else {
        return;
    };
    let counters = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("self.counters");
    let _ = std::fs::remove_file(&counters);
    let path = counters.to_string_lossy().into_owned();
    let i = ns.spawn_env(Side::A, &[prog.as_str()], &[("ROCE_VERBS_COUNTERS", &path)]);
    let out = ns.wait_ok(i, "verbs_self");
    assert!(out.contains("verbs_self: 0 failed"), "{out}");
    assert_eq!(
        out.lines().filter(|l| l.starts_with("ok: ")).count(),
        55,
        "{out}"
    );
    let text = std::fs::read_to_string(&counters).unwrap_or_default();
    let value = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse::<u64>().ok())
    };
    // Per GID: 8 SEND and 8 WRITE packets, 8 READ responses, 2 atomics; and their ACKs.
    assert!(value("looped_back").is_some_and(|n| n >= 2 * 26), "{text}");
    assert_eq!(value("looped_back"), value("sent_pkts"), "{text}");
    // What reached the port is the start-up announcement (a gratuitous ARP request) alone.
    assert_eq!(value("port_tx_packets"), Some(1), "{text}");
    assert_eq!(value("arp_tx_requests"), Some(1), "{text}");
    assert_eq!(value("error_completions"), Some(0), "{text}");
}

/// A region's bytes are the application's memory, lent, not mirrored: registering 1 GiB
/// costs no resident memory, a WRITE lands in the application's pages, `ibv_rereg_mr` moves a
/// region (and refuses bad input, keeping it), and a region
/// deregistered while WRITEs stream in is never touched after `ibv_dereg_mr` returns (its
/// pages are sealed at once: a late write would kill the program).
#[test]
fn regions_are_lent_and_never_touched_after_deregistration() {
    let prog = c_program("verbs_lent");
    let Some(mut ns) = Netns::up("lent") else {
        return;
    };
    let i = ns.spawn(Side::A, &[prog.as_str()]);
    let out = ns.wait_ok(i, "verbs_lent");
    assert!(out.contains("verbs_lent: 0 failed"), "{out}");
    assert_eq!(
        out.lines().filter(|l| l.starts_with("ok: ")).count(),
        24,
        "{out}"
    );
}

#[test]
fn local_misuse_fails_as_libibverbs_reports_it() {
    let prog = c_program("verbs_misuse");
    let Some(mut ns) = Netns::up("misuse") else {
        return;
    };
    let i = ns.spawn(Side::A, &[prog.as_str()]);
    let out = ns.wait(i);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(stdout.contains("verbs_misuse: 0 failed"), "{stdout}");
    assert_eq!(
        stdout.lines().filter(|l| l.starts_with("ok: ")).count(),
        22,
        "{stdout}"
    );
    let fork = "roce-verbs: ibv_alloc_pd: this process was forked from the one that opened the device; verbs work only there";
    assert_eq!(stderr.lines().filter(|l| *l == fork).count(), 1, "{stderr}");
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
        "roce-verbs: ibv_create_cq_ex: completion fields 0x80 beyond IBV_WC_STANDARD_FLAGS is not supported",
    ] {
        assert_eq!(
            stderr.lines().filter(|l| *l == line).count(),
            1,
            "{line:?} not once in:\n{stderr}"
        );
    }
}
