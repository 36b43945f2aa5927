//! Programs on `libroce_verbs.so` against roce's own perftest and rc_pingpong (`roce perf
//! --peer-format perftest`, `roce pingpong`), both roles, two processes on net_tap ports in a
//! network namespace. Needs root and the `roce` CLI of the same build (`cargo test --workspace`
//! builds it); without root the tests say so and pass without running.
#![cfg(target_os = "linux")]

mod support;

use support::{Netns, Side};

const SERVER_ADDR: &str = "198.18.0.254";
const TCP_PORT: u16 = 18515;

/// The result row under perftest's bandwidth header.
fn bw_row(out: &str) -> Vec<String> {
    let mut lines = out.lines();
    lines
        .by_ref()
        .find(|l| {
            l.trim_start()
                .starts_with("#bytes     #iterations    BW peak")
        })
        .unwrap_or_else(|| panic!("no bandwidth header in:\n{out}"));
    let row = lines.next().unwrap_or_default();
    row.split_whitespace().map(str::to_owned).collect()
}

#[test]
fn ib_write_bw_on_the_library_against_roce_perf_both_ways() {
    let perf = [
        "perf",
        "write-bw",
        "--peer-format",
        "perftest",
        "-s",
        "65536",
        "-n",
        "200",
    ];
    let tool = [
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
    // roce perf serves, the library's ib_write_bw is the client.
    let Some(mut ns) = Netns::up("vs-perf") else {
        return;
    };
    let s = ns.spawn_roce(Side::A, &perf);
    ns.wait_listen(TCP_PORT, s);
    let mut client = tool.to_vec();
    client.push(SERVER_ADDR);
    let c = ns.spawn(Side::B, &client);
    for (i, what) in [(c, "ib_write_bw"), (s, "roce perf")] {
        let out = ns.wait_ok(i, what);
        assert_eq!(bw_row(&out)[..2], ["65536", "200"], "{what}:\n{out}");
    }
    drop(ns);
    // The library's ib_write_bw serves, roce perf is the client.
    let Some(mut ns) = Netns::up("vs-perf-2") else {
        return;
    };
    let s = ns.spawn(Side::A, &tool);
    ns.wait_listen(TCP_PORT, s);
    let mut client = perf.to_vec();
    client.push(SERVER_ADDR);
    let c = ns.spawn_roce(Side::B, &client);
    for (i, what) in [(c, "roce perf"), (s, "ib_write_bw")] {
        let out = ns.wait_ok(i, what);
        assert_eq!(bw_row(&out)[..2], ["65536", "200"], "{what}:\n{out}");
    }
}

#[test]
fn ibv_rc_pingpong_on_the_library_against_roce_pingpong() {
    let Some(mut ns) = Netns::up("vs-pingpong") else {
        return;
    };
    let s = ns.spawn_roce(
        Side::A,
        &["pingpong", "-g", "1", "-c", "-n", "100", "-s", "4096"],
    );
    ns.wait_listen(TCP_PORT, s);
    let tool = [
        "ibv_rc_pingpong",
        "-g",
        "1",
        "-c",
        "-n",
        "100",
        "-s",
        "4096",
        SERVER_ADDR,
    ];
    let c = ns.spawn(Side::B, &tool);
    for (i, what) in [(c, "ibv_rc_pingpong"), (s, "roce pingpong")] {
        let out = ns.wait_ok(i, what);
        assert!(out.contains("100 iters in"), "{what}:\n{out}");
    }
}
