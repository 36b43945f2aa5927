//! The blocking TCP driver of `roce::oob::tcp` on loopback: against replays of the real tools'
//! captured bytes (our side must send exactly what the tool's peer sent), against itself, and
//! against silent or absent peers (each wait ends in its own error).

use crate::support::oob_capture;

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::thread;
use std::time::Duration;

use oob_capture::{capture_streams, perftest_bw_sizes, split, vector};
use roce::oob::perftest;
use roce::oob::perftest::{BwReport, PerftestDest, SysData};
use roce::oob::pingpong::PingpongDest;
use roce::oob::tcp;
use roce::oob::tcp::{ExchangeError, OobStream, PerftestConn, Timeouts};
use roce::oob::verbs_peer::VerbsPeerInfo;
use roce::oob::{PINGPONG_PORT, VERBS_PEER_PORT};

fn short() -> Timeouts {
    Timeouts {
        connect: Duration::from_secs(2),
        accept: Duration::from_millis(300),
        io: Duration::from_millis(300),
    }
}

/// Guest b's data as ibv_rc_pingpong sent it (rc_pingpong_send_64.pcap).
fn guest_b() -> PingpongDest {
    PingpongDest::decode(b"0000:000011:42f128:00000000000000000000ffffc612000c\0").unwrap()
}

/// How guest b's rc_pingpong client exchange with `addr` fails (it must).
fn pingpong_client_err(addr: SocketAddr) -> ExchangeError {
    tcp::pingpong_client(addr, &guest_b(), short()).unwrap_err()
}

fn listener() -> (TcpListener, SocketAddr) {
    let l = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let addr = l.local_addr().unwrap();
    (l, addr)
}

/// A fake peer: for each step, reads as many bytes as `expect[i]` holds, then writes `reply[i]`.
/// Returns everything it read.
fn replay_server(l: TcpListener, steps: Vec<(usize, Vec<u8>)>) -> thread::JoinHandle<Vec<u8>> {
    thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut got = Vec::new();
        for (n, reply) in steps {
            let mut buf = vec![0u8; n];
            s.read_exact(&mut buf).unwrap();
            got.extend_from_slice(&buf);
            s.write_all(&reply).unwrap();
        }
        got
    })
}

#[test]
fn pingpong_client_talks_to_a_replayed_rc_pingpong_server() {
    let (to_server, to_client) =
        capture_streams(&vector("rc_pingpong_send_64.pcap"), PINGPONG_PORT);
    let (l, addr) = listener();
    let server = replay_server(l, vec![(52, to_client.clone()), (5, Vec::new())]);
    let mine = PingpongDest::decode(&to_server[..52]).unwrap();
    let theirs = tcp::pingpong_client(addr, &mine, short()).unwrap();
    assert_eq!(theirs, PingpongDest::decode(&to_client).unwrap());
    assert_eq!(
        server.join().unwrap(),
        to_server,
        "we sent what ibv_rc_pingpong's client sent"
    );
}

#[test]
fn pingpong_server_and_client_agree_over_loopback() {
    let (to_server, to_client) =
        capture_streams(&vector("rc_pingpong_send_64.pcap"), PINGPONG_PORT);
    let client_dest = PingpongDest::decode(&to_server[..52]).unwrap();
    let server_dest = PingpongDest::decode(&to_client).unwrap();
    let (l, addr) = listener();
    let server = thread::spawn(move || {
        tcp::pingpong_server(&l, Timeouts::default(), |remote| {
            assert_eq!(*remote, client_dest);
            Ok::<_, String>(server_dest)
        })
    });
    assert_eq!(
        tcp::pingpong_client(addr, &client_dest, short()).unwrap(),
        server_dest
    );
    assert_eq!(server.join().unwrap().unwrap(), client_dest);
}

#[test]
fn pingpong_server_reports_a_failed_qp_connect() {
    let (to_server, _) = capture_streams(&vector("rc_pingpong_send_64.pcap"), PINGPONG_PORT);
    let (l, addr) = listener();
    let client = thread::spawn(move || {
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(&to_server[..52]).unwrap();
        let mut rest = Vec::new();
        let _ = s.read_to_end(&mut rest);
        rest
    });
    let err = tcp::pingpong_server(&l, short(), |_| Err("modify_qp(RTR): ETIMEDOUT")).unwrap_err();
    assert!(
        matches!(&err, ExchangeError::Local { step: "connect QP", reason } if reason.contains("ETIMEDOUT")),
        "{err}"
    );
    assert!(
        client.join().unwrap().is_empty(),
        "nothing is sent after a failed connect"
    );
}

#[test]
fn perftest_client_sends_exactly_what_ib_write_bw_sent() {
    let (to_server, to_client) = capture_streams(&vector("ib_write_bw_64.pcap"), PINGPONG_PORT);
    let sizes = perftest_bw_sizes();
    let up = split(&to_server, &sizes);
    let down = split(&to_client, &sizes);
    // The replayed server answers each step with its captured message (perftest's "done" is
    // written without waiting for anything, so it goes with the last keys).
    let mut steps: Vec<(usize, Vec<u8>)> = Vec::new();
    for i in 0..sizes.len() - 1 {
        steps.push((sizes[i], down[i].to_vec()));
    }
    let last = sizes.len() - 1;
    steps.push((sizes[last], Vec::new()));
    let (l, addr) = listener();
    let server = replay_server(l, steps);

    let keys = PerftestDest::decode(up[4], true).unwrap();
    let report = BwReport::decode(&std::array::from_fn(|i| up[8 + i].try_into().unwrap()));
    let mut conn = PerftestConn::new(OobStream::connect(addr, short()).unwrap(), true);
    let pre = conn
        .preamble(perftest::DEBIAN12_VERSION, SysData::default(), 1024)
        .unwrap();
    assert_eq!((pre.remote_version.as_str(), pre.path_mtu), ("6.06", 1024));
    let remote = conn.hand_shake(&keys).unwrap();
    assert_eq!(remote, PerftestDest::decode(down[4], true).unwrap());
    for _ in 0..3 {
        assert_eq!(conn.hand_shake(&keys).unwrap(), remote);
    }
    let _server_report = conn.xchg_bw_report(&report).unwrap();
    conn.close(&keys).unwrap();
    assert_eq!(
        server.join().unwrap(),
        to_server,
        "byte for byte the ib_write_bw client stream"
    );
}

#[test]
fn perftest_server_and_client_agree_over_loopback() {
    let (to_server, to_client) = capture_streams(&vector("ib_write_bw_64.pcap"), PINGPONG_PORT);
    let sizes = perftest_bw_sizes();
    let client_keys = PerftestDest::decode(split(&to_server, &sizes)[4], true).unwrap();
    let server_keys = PerftestDest::decode(split(&to_client, &sizes)[4], true).unwrap();
    let (l, addr) = listener();
    let server = thread::spawn(move || {
        let mut conn = PerftestConn::new(OobStream::accept(&l, Timeouts::default()).unwrap(), true);
        let pre = conn.preamble("6.06", SysData::default(), 4096).unwrap();
        let remote = conn.hand_shake(&server_keys).unwrap();
        (pre.path_mtu, remote)
    });
    let mut conn = PerftestConn::new(OobStream::connect(addr, short()).unwrap(), true);
    let pre = conn.preamble("6.06", SysData::default(), 1024).unwrap();
    assert_eq!(pre.path_mtu, 1024, "the smaller MTU wins");
    assert_eq!(conn.hand_shake(&client_keys).unwrap(), server_keys);
    assert_eq!(server.join().unwrap(), (1024, client_keys));
}

#[test]
fn perftest_refuses_old_peer_versions() {
    let (l, addr) = listener();
    let _server = replay_server(l, vec![(16, perftest::encode_version("5.20").to_vec())]);
    let mut conn = PerftestConn::new(OobStream::connect(addr, short()).unwrap(), true);
    let err = conn.preamble("6.06", SysData::default(), 1024).unwrap_err();
    assert!(
        matches!(
            err,
            ExchangeError::Local {
                step: "perftest version",
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn verbs_peer_client_talks_to_a_replayed_pyverbs_server() {
    let (to_server, to_client) = capture_streams(&vector("verbs_imm_atomic.pcap"), VERBS_PEER_PORT);
    let line_end = to_server.iter().position(|&b| b == b'\n').unwrap() + 1;
    let (l, addr) = listener();
    let server = replay_server(l, vec![(line_end, to_client.clone()), (5, Vec::new())]);
    let mine = VerbsPeerInfo::decode(&to_server[..line_end]).unwrap();
    let (theirs, stream) = tcp::verbs_peer_client(addr, &mine, short()).unwrap();
    assert_eq!(theirs, VerbsPeerInfo::decode(&to_client).unwrap());
    tcp::verbs_peer_finish(stream).unwrap();
    assert_eq!(server.join().unwrap(), to_server);
}

#[test]
fn silent_peer_ends_in_a_read_timeout_naming_the_step() {
    let (l, addr) = listener();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let hold = thread::spawn(move || {
        let (s, _) = l.accept().unwrap();
        // Stay connected and silent until the client has given up.
        let _ = done_rx.recv_timeout(Duration::from_secs(10));
        drop(s);
    });
    let err = pingpong_client_err(addr);
    assert!(
        matches!(
            err,
            ExchangeError::Timeout {
                step: "read rc_pingpong dest",
                ..
            }
        ),
        "{err}"
    );
    done_tx.send(()).unwrap();
    hold.join().unwrap();
}

#[test]
fn peer_closing_early_is_reported_with_byte_counts() {
    let (l, addr) = listener();
    let _server = replay_server(l, vec![(52, b"0000:0000".to_vec())]);
    let err = pingpong_client_err(addr);
    assert!(
        matches!(
            err,
            ExchangeError::Closed {
                got: 9,
                expected: 52,
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn refused_connect_and_absent_client_are_distinct_errors() {
    let (l, addr) = listener();
    drop(l);
    let err = pingpong_client_err(addr);
    assert!(matches!(err, ExchangeError::Connect { .. }), "{err}");
    let (l, _) = listener();
    let err = OobStream::accept(&l, short()).unwrap_err();
    assert!(matches!(err, ExchangeError::AcceptTimeout(_)), "{err}");
}

#[test]
fn trickling_peer_meets_one_deadline_for_the_whole_message() {
    // One byte every 50 ms of a 52-byte message: each read is quick, the message is not. The
    // deadline (400 ms) covers the message, so the read gives up with the message incomplete.
    let (l, addr) = listener();
    let trickle = thread::spawn(move || {
        let mut s = TcpStream::connect(addr).unwrap();
        let mut sent = 0;
        for b in guest_b().encode() {
            if s.write_all(&[b]).is_err() {
                break;
            }
            sent += 1;
            thread::sleep(Duration::from_millis(50));
        }
        sent
    });
    let t = Timeouts {
        io: Duration::from_millis(400),
        ..Timeouts::default()
    };
    let mut server = OobStream::accept(&l, t).unwrap();
    let err = server.recv_exact("read rc_pingpong dest", 52).unwrap_err();
    let ExchangeError::Timeout { got, timeout, .. } = err else {
        panic!("{err}");
    };
    assert!(got > 0 && got < 52, "{got} bytes");
    assert_eq!(timeout, Duration::from_millis(400));
    assert!(
        err.to_string().starts_with(
            "read rc_pingpong dest: timed out after 400ms with the message incomplete ("
        ),
        "{err}"
    );
    drop(server);
    assert!(trickle.join().unwrap() < 52, "the peer never finished");
}

#[test]
fn peer_reset_is_named_with_the_peer_address() {
    let (l, addr) = listener();
    let resetter = thread::spawn(move || {
        let (s, _) = l.accept().unwrap();
        // Close with the client's message unread: the kernel answers with a reset.
        let mut buf = [0u8; 1];
        s.peek(&mut buf).unwrap();
        drop(s);
    });
    let err = pingpong_client_err(addr);
    resetter.join().unwrap();
    assert_eq!(
        err.to_string(),
        format!("read rc_pingpong dest: connection reset by {addr}")
    );
}

#[test]
fn a_line_without_an_end_is_refused_at_its_bound() {
    let (l, addr) = listener();
    let _server = replay_server(l, vec![(0, vec![b'x'; 300])]);
    let mut s = OobStream::connect(addr, short()).unwrap();
    let err = s.recv_line("read line", 100).unwrap_err();
    assert_eq!(
        err.to_string(),
        "read line",
        "the step, with the cause in the chain"
    );
    assert!(
        matches!(
            err,
            ExchangeError::Decode {
                source: roce::oob::DecodeError::TooLong { max: 100, .. },
                ..
            }
        ),
        "{err:?}"
    );
}
