//! The out-of-band exchanges captured from the real tools (crates/roce-proto/tests/vectors) decode
//! with `roce::oob`, and our encoders reproduce every captured message byte for byte.

use crate::support::oob_capture;

use std::net::Ipv6Addr;

use oob_capture::{capture_streams, perftest_bw_sizes, split, vector};
use roce::oob::perftest;
use roce::oob::perftest::{BwReport, PerftestDest};
use roce::oob::pingpong;
use roce::oob::pingpong::PingpongDest;
use roce::oob::verbs_peer;
use roce::oob::verbs_peer::VerbsPeerInfo;
use roce::oob::DecodeError;
use roce::oob::{PINGPONG_PORT, VERBS_PEER_PORT};
use roce_proto::psn::Psn;

fn gid(s: &str) -> Ipv6Addr {
    s.parse().unwrap()
}

#[test]
fn rc_pingpong_exchanges_decode_and_reencode_exactly() {
    let cases = [
        (
            "rc_pingpong_send_64.pcap",
            "::ffff:198.18.0.12",
            "::ffff:198.18.0.11",
        ),
        (
            "rc_pingpong_send_8192_mtu1024.pcap",
            "::ffff:198.18.0.12",
            "::ffff:198.18.0.11",
        ),
        (
            "extra_rc_pingpong_1003_mtu256.pcap",
            "::ffff:198.18.0.12",
            "::ffff:198.18.0.11",
        ),
        ("v6_rc_pingpong_64.pcap", "2001:db8::12", "2001:db8::11"),
    ];
    for (file, client_gid, server_gid) in cases {
        let (to_server, to_client) = capture_streams(&vector(file), PINGPONG_PORT);
        let up = split(&to_server, &[pingpong::MESSAGE_LEN, pingpong::DONE.len()]);
        let down = split(&to_client, &[pingpong::MESSAGE_LEN]);
        let client = PingpongDest::decode(up[0]).unwrap_or_else(|e| panic!("{file}: {e}"));
        let server = PingpongDest::decode(down[0]).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!((client.lid, client.gid), (0, gid(client_gid)), "{file}");
        assert_eq!((server.lid, server.gid), (0, gid(server_gid)), "{file}");
        assert_eq!(&client.encode()[..], up[0], "{file}");
        assert_eq!(&server.encode()[..], down[0], "{file}");
        assert_eq!(pingpong::decode_done(up[1]), Ok(()), "{file}");
    }
}

#[test]
fn rc_pingpong_64_has_the_readme_values() {
    let (to_server, to_client) =
        capture_streams(&vector("rc_pingpong_send_64.pcap"), PINGPONG_PORT);
    let client = PingpongDest::decode(&to_server[..52]).unwrap();
    let server = PingpongDest::decode(&to_client[..52]).unwrap();
    assert_eq!((client.qpn, client.psn), (0x11, Psn::new(0x42f128)));
    assert_eq!((server.qpn, server.psn), (0x11, Psn::new(0x01f486)));
}

/// Walks one side of a perftest bandwidth test and checks every message; returns the keys and
/// the report it carried.
fn check_perftest_side(file: &str, msgs: &[&[u8]]) -> (PerftestDest, BwReport) {
    assert_eq!(
        perftest::decode_version(msgs[0]).as_deref(),
        Ok(perftest::DEBIAN12_VERSION),
        "{file}"
    );
    assert_eq!(
        &perftest::encode_version(perftest::DEBIAN12_VERSION)[..],
        msgs[0],
        "{file}"
    );
    assert_eq!(perftest::decode_i32("cycle", msgs[1]), Ok(4096), "{file}");
    assert_eq!(
        perftest::decode_i32("cache line", msgs[2]),
        Ok(64),
        "{file}"
    );
    assert_eq!(perftest::decode_mtu(msgs[3]), Ok(1024), "{file}");
    assert_eq!(
        perftest::encode_mtu(1024).as_ref().map(|m| &m[..]),
        Some(msgs[3]),
        "{file}"
    );
    let keys = PerftestDest::decode(msgs[4], true).unwrap_or_else(|e| panic!("{file}: {e}"));
    // Every hand shake repeats the same keys, and we write them identically.
    for &m in [msgs[4], msgs[5], msgs[6], msgs[7], msgs[13]].iter() {
        assert_eq!(keys.encode(), m, "{file}");
    }
    let report: [[u8; 8]; 5] = std::array::from_fn(|i| msgs[8 + i].try_into().unwrap());
    let decoded = BwReport::decode(&report);
    assert_eq!(decoded.encode(), report, "{file}");
    assert_eq!(msgs[14], perftest::DONE, "{file}");
    (keys, decoded)
}

#[test]
fn perftest_bw_exchanges_follow_the_documented_sequence() {
    for (file, size) in [
        ("ib_write_bw_64.pcap", 64),
        ("ib_write_bw_8192_mtu1024.pcap", 8192),
        ("ib_read_bw_8192_mtu1024.pcap", 8192),
    ] {
        let (to_server, to_client) = capture_streams(&vector(file), PINGPONG_PORT);
        let sizes = perftest_bw_sizes();
        let (client, report) = check_perftest_side(file, &split(&to_server, &sizes));
        let (server, _) = check_perftest_side(file, &split(&to_client, &sizes));
        assert_eq!(client.gid, Some(gid("::ffff:198.18.0.12")), "{file}");
        assert_eq!(server.gid, Some(gid("::ffff:198.18.0.11")), "{file}");
        assert_eq!(
            (report.size, report.iters),
            (size, 5),
            "{file}: the client's report"
        );
        assert!(report.bw_avg > 0.0, "{file}");
    }
}

/// Guest b's keys in ib_write_bw_64.pcap.
const WRITE_BW_B: &[u8] = b"0000:0001:000013:775df5:0000048b:000055fc6186f000:00:00:00:00:00:00:00:00:00:00:ff:ff:c6:12:00:0c:00000000:\0";

/// What `WRITE_BW_B` says.
fn write_bw_b() -> PerftestDest {
    PerftestDest {
        lid: 0,
        out_reads: 1,
        qpn: 0x13,
        psn: Psn::new(0x775df5),
        rkey: 0x48b,
        vaddr: 0x55fc_6186_f000,
        gid: Some(gid("::ffff:198.18.0.12")),
        srqn: 0,
    }
}

#[test]
fn perftest_write_bw_64_keys_match_capture() {
    let (to_server, _) = capture_streams(&vector("ib_write_bw_64.pcap"), PINGPONG_PORT);
    let msgs = split(&to_server, &perftest_bw_sizes());
    let keys = PerftestDest::decode(msgs[4], true).unwrap();
    assert_eq!(keys, write_bw_b());
}

#[test]
fn perftest_gid_keys_round_trip_byte_for_byte() {
    assert_eq!(WRITE_BW_B.len(), perftest::KEY_MSG_SIZE_GID);
    assert_eq!(PerftestDest::decode(WRITE_BW_B, true), Ok(write_bw_b()));
    assert_eq!(write_bw_b().encode(), WRITE_BW_B);
}

#[test]
fn perftest_plain_keys_are_59_bytes_without_trailing_colon() {
    let plain = PerftestDest {
        gid: None,
        ..write_bw_b()
    };
    let msg = plain.encode();
    assert_eq!(
        msg,
        b"0000:0001:000013:775df5:0000048b:000055fc6186f000:00000000\0"
    );
    assert_eq!(msg.len(), perftest::KEY_MSG_SIZE);
    assert_eq!(PerftestDest::decode(&msg, false), Ok(plain));
}

#[test]
fn perftest_keys_of_the_other_format_are_rejected() {
    assert!(matches!(
        PerftestDest::decode(WRITE_BW_B, false),
        Err(DecodeError::Length {
            expected: 59,
            got: 108,
            ..
        })
    ));
}

#[test]
fn verbs_peer_lines_decode_and_reencode_exactly() {
    for file in ["verbs_imm_atomic.pcap", "host_peer_to_guest.pcap"] {
        let (to_server, to_client) = capture_streams(&vector(file), VERBS_PEER_PORT);
        let line_end = to_server.iter().position(|&b| b == b'\n').unwrap() + 1;
        let up = split(&to_server, &[line_end, verbs_peer::DONE.len()]);
        let client = VerbsPeerInfo::decode(up[0]).unwrap_or_else(|e| panic!("{file}: {e}"));
        let server = VerbsPeerInfo::decode(&to_client).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(client.encode(), up[0], "{file}");
        assert_eq!(server.encode(), to_client, "{file}");
        assert_eq!(up[1], verbs_peer::DONE, "{file}");
        assert_eq!(
            server.atomic_addr,
            server.addr + 16 * 1024,
            "{file}: pyverbs MR layout"
        );
    }
}
