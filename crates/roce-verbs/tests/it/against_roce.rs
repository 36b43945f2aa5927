//! Programs on `libroce_verbs.so` against roce's own perftest and rc_pingpong (`roce perf
//! --peer-format perftest`, `roce pingpong`), both roles, two processes on net_tap ports in a
//! network namespace. Needs root and the `roce` CLI of the same build (`cargo test --workspace`
//! builds it); without root the tests fail, unless `ROCE_TEST_SKIP=root` lets them skip.

use crate::support::{
    result_row, Link, Netns, Side, BW_HEADER, SERVER_ADDR, TCP_PORT, WRITE_BW_64K,
};

/// Runs `server` (a `roce` command when `roce_serves`, else a program on the library) and then
/// `client` the other way round, their ports meeting over `link`; asserts both succeeded and
/// printed a bandwidth row of 200 messages of 65536 bytes.
pub fn bw_pair(link: Link, tag: &str, roce_serves: bool, perf: &[&str], tool: &[&str]) {
    let Some(mut ns) = Netns::up_with(tag, link) else {
        return;
    };
    let (server, client) = if roce_serves {
        (perf, tool)
    } else {
        (tool, perf)
    };
    let mut client = client.to_vec();
    client.push(SERVER_ADDR);
    let s = if roce_serves {
        ns.spawn_roce(Side::A, server)
    } else {
        ns.spawn(Side::A, server)
    };
    ns.wait_listen(TCP_PORT, s);
    let c = if roce_serves {
        ns.spawn(Side::B, &client)
    } else {
        ns.spawn_roce(Side::B, &client)
    };
    for (i, what) in [(c, "client"), (s, "server")] {
        let out = ns.wait_ok(i, what);
        assert_eq!(
            result_row(&out, BW_HEADER)[..2],
            [65536.0, 200.0],
            "{what}:\n{out}"
        );
    }
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
    let tool = WRITE_BW_64K;
    bw_pair(Link::Tap, "vs-perf", true, &perf, &tool);
    bw_pair(Link::Tap, "vs-perf-2", false, &perf, &tool);
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
