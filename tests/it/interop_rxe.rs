//! Interoperability with the Linux kernel's Soft-RoCE (rdma_rxe): runs tools/interop/run.sh
//! (two qemu guests on a private bridge; minutes, root), then checks what it captured with our
//! own code: the out-of-band exchanges decode and re-encode byte for byte, and our ARP resolver
//! answers a Linux ARP request exactly as Linux did.
//!
//! Ignored by default because it boots VMs; run it with
//! `cargo test --test it interop_rxe -- --ignored --nocapture`. It fails (never skips) when the
//! guests cannot boot, with run.sh's reason and the console tail. With
//! `ROCE_INTEROP_RESULTS=<dir of an earlier run>` it re-checks that run's captures instead of
//! booting again.

use crate::support::oob_capture;

use std::net::{Ipv4Addr, Ipv6Addr};
use std::path::{Path, PathBuf};
use std::process::Command;

use oob_capture::{capture_streams, frames, perftest_bw_sizes, split};
use roce::oob::perftest::PerftestDest;
use roce::oob::pingpong;
use roce::oob::pingpong::PingpongDest;
use roce::oob::verbs_peer::VerbsPeerInfo;
use roce::oob::{PINGPONG_PORT, VERBS_PEER_PORT};
use roce_proto::arp::{Config, Resolver};
use roce_proto::time::Instant;
use roce_proto::wire::arp::Operation;
use roce_proto::wire::{arp, ndp, EthernetAddress};

fn run_interop(results: &Path) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tools/interop/run.sh");
    let out = Command::new(&script)
        .env("RESULTS", results)
        .env("ROCE_BIN", env!("CARGO_BIN_EXE_roce"))
        .output()
        .expect("tools/interop/run.sh runs");
    let summary = std::fs::read_to_string(results.join("summary.txt")).unwrap_or_default();
    let stderr = String::from_utf8_lossy(&out.stderr);
    match out.status.code() {
        Some(0) => {
            println!("{summary}");
            let not_passed: Vec<&str> = summary.lines().filter(|l| !l.contains(" PASS ")).collect();
            assert!(
                not_passed.is_empty(),
                "not every check passed:\n{}",
                not_passed.join("\n")
            );
        }
        Some(2) => panic!("the rxe guests cannot boot:\n{summary}\n{stderr}"),
        Some(3) => panic!("interop setup failed (deps, image or roce build):\n{stderr}"),
        code => panic!("interop checks failed (exit {code:?}):\n{summary}\n{stderr}"),
    }
}

fn check_pingpong_capture(pcap: &Path) {
    let (up, down) = capture_streams(pcap, PINGPONG_PORT);
    let up = split(&up, &[pingpong::MESSAGE_LEN, pingpong::DONE.len()]);
    let client = PingpongDest::decode(up[0]).expect("client message");
    let server = PingpongDest::decode(&down).expect("server message");
    assert_eq!(client.encode().as_slice(), up[0]);
    assert_eq!(server.encode().as_slice(), down.as_slice());
    assert_eq!(
        client.gid,
        "::ffff:198.18.0.12".parse::<std::net::Ipv6Addr>().unwrap()
    );
}

fn check_write_bw_capture(pcap: &Path) {
    let (up, down) = capture_streams(pcap, PINGPONG_PORT);
    for stream in [&up, &down] {
        let msgs = split(stream, &perftest_bw_sizes());
        let keys = PerftestDest::decode(msgs[4], true).expect("perftest keys");
        assert_eq!(keys.encode(), msgs[4]);
    }
}

fn check_verbs_peer_capture(pcap: &Path) {
    let (up, down) = capture_streams(pcap, VERBS_PEER_PORT);
    let end = up.iter().position(|&b| b == b'\n').expect("client line") + 1;
    let client = VerbsPeerInfo::decode(&up[..end]).expect("client line");
    assert_eq!(client.encode(), &up[..end]);
    assert_eq!(
        VerbsPeerInfo::decode(&down).expect("server line").encode(),
        down
    );
}

/// Guest a's (Linux's) answer to guest b's request is what our resolver, configured as a,
/// answers to the same request.
fn check_arp_capture(pcap: &Path) {
    let frames = frames(pcap);
    let a_ip = Ipv4Addr::new(198, 18, 0, 11);
    let b_ip = Ipv4Addr::new(198, 18, 0, 12);
    let a_mac = EthernetAddress([0x52, 0x54, 0x00, 0x12, 0x00, 0x11]);
    let find = |op: Operation, sender: Ipv4Addr, target: Ipv4Addr| {
        frames
            .iter()
            .find(|f| {
                arp::parse_frame(f).is_ok_and(|(_, a)| {
                    a.operation == op && a.sender_ip == sender && a.target_ip == target
                })
            })
            .expect("ARP frame in arp.pcap")
    };
    let request = find(Operation::Request, b_ip, a_ip);
    let reply = find(Operation::Reply, a_ip, b_ip);
    let mut resolver = Resolver::new(Config::new(a_mac, a_ip));
    resolver
        .handle_frame(Instant::ZERO, request)
        .expect("request taken");
    let mut buf = [0u8; 64];
    let len = resolver
        .poll_transmit(Instant::ZERO, &mut buf)
        .unwrap()
        .expect("a reply");
    assert_eq!(
        &buf[..len],
        &reply[..len.min(reply.len())],
        "our reply vs Linux's"
    );
}

/// Guest b's solicitation is what our responder, as b, sends; guest a's advertisement is what
/// our responder, as a, answers.
fn check_ndp_capture(pcap: &Path) {
    let frames = frames(pcap);
    let a_ip: Ipv6Addr = "2001:db8::11".parse().unwrap();
    let b_ip: Ipv6Addr = "2001:db8::12".parse().unwrap();
    let a_mac = EthernetAddress([0x52, 0x54, 0x00, 0x12, 0x00, 0x11]);
    let b_mac = EthernetAddress([0x52, 0x54, 0x00, 0x12, 0x00, 0x12]);
    let find = |want: fn(&ndp::NdpFrame) -> bool| {
        frames
            .iter()
            .find(|f| ndp::parse_frame(f).is_ok_and(|p| want(&p)))
            .expect("frame in ndp.pcap")
    };
    let solicit = find(|p| matches!(p.ndp, ndp::NdpRepr::Solicit { .. }) && p.eth.src.0[5] == 0x12);
    let advert = find(|p| matches!(p.ndp, ndp::NdpRepr::Advert { .. }) && p.eth.src.0[5] == 0x11);
    let mut buf = [0u8; 128];
    let len = roce_proto::ndp::Responder::new(b_mac, b_ip)
        .solicit(a_ip, &mut buf)
        .unwrap();
    assert_eq!(&buf[..len], &solicit[..], "our solicitation vs Linux's");
    let mut as_a = roce_proto::ndp::Responder::new(a_mac, a_ip);
    as_a.handle_frame(solicit).expect("solicitation taken");
    let len = as_a
        .poll_transmit(&mut buf)
        .unwrap()
        .expect("an advertisement");
    assert_eq!(&buf[..len], &advert[..], "our advertisement vs Linux's");
}

#[test]
#[ignore = "boots two qemu guests (minutes, root): cargo test --test it interop_rxe -- --ignored"]
fn rxe_guests_interoperate_and_captures_decode_with_roce() {
    let results = match std::env::var_os("ROCE_INTEROP_RESULTS") {
        Some(dir) => PathBuf::from(dir),
        None => {
            let dir = std::env::temp_dir().join(format!("roce-interop-{}", std::process::id()));
            run_interop(&dir);
            dir
        }
    };
    println!("checking the captures in {}", results.display());
    let pcaps = results.join("pcaps");
    check_pingpong_capture(&pcaps.join("rxe_rc_pingpong.pcap"));
    check_write_bw_capture(&pcaps.join("rxe_write_bw.pcap"));
    check_verbs_peer_capture(&pcaps.join("rxe_verbs_peer.pcap"));
    check_arp_capture(&pcaps.join("arp.pcap"));
    check_ndp_capture(&pcaps.join("ndp.pcap"));
}
