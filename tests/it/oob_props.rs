//! Property tests of the TCP exchanges' decoders against what a hostile peer sends: arbitrary
//! bytes, valid messages with damage, JSON with out-of-range, negative, huge, mistyped, missing,
//! repeated and deeply nested values; and the blocking driver fed arbitrary byte streams. Every
//! decoder keeps the contract in roce_testkit::oob_invariants (no panic, one short printable
//! error line, bounded values) in memory bounded by its input. The seed is printed; replay with
//! OOB_PROPTEST_SEED.

use roce_testkit::oob_invariants;

use std::io::Write;
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::time::Duration;

use proptest::prelude::*;
use proptest::test_runner::Config;

use roce::oob::perf::MAX_LINE;
use roce::oob::pingpong::PingpongDest;
use roce::oob::tcp::{ExchangeError, OobStream, Timeouts};
use roce::oob::DecodeError;

fn config(cases: u32) -> Config {
    roce_testkit::proptest_seed::config("oob", "OOB_PROPTEST_SEED", cases)
}

/// Runs every decoder on `bytes`, within 16 bytes of memory per input byte plus 64 KiB.
fn check_bounded(bytes: &[u8]) {
    let info = allocation_counter::measure(|| oob_invariants::all(bytes));
    let limit = 16 * bytes.len() as u64 + 64 * 1024;
    assert!(
        info.bytes_max <= limit,
        "{} bytes at peak for {} bytes of input",
        info.bytes_max,
        bytes.len()
    );
}

/// A valid message with `damage` applied: bytes replaced, then cut or extended.
fn damaged(mut msg: Vec<u8>, damage: &[(usize, u8)], cut: Option<usize>, extra: &[u8]) -> Vec<u8> {
    for &(at, value) in damage {
        let len = msg.len();
        if len > 0 {
            msg[at % len] = value;
        }
    }
    if let Some(n) = cut {
        msg.truncate(n % (msg.len() + 1));
    }
    msg.extend_from_slice(extra);
    msg
}

/// Numbers and values a hostile peer puts where a number belongs.
fn json_value() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "0",
            "-1",
            "-0",
            "1",
            "8",
            "8388608",
            "8388609",
            "16777215",
            "16777216",
            "4294967295",
            "4294967296",
            "1099511627776",
            "18446744073709551615",
            "18446744073709551616",
            "-9223372036854775808",
            "1e400",
            "1.5",
            "null",
            "true",
            "\"\"",
            "\"1024\"",
            "{}",
            "[]",
            "\"write-bw\"",
            "\"send-lat\"",
            "\"::ffff:198.18.0.1\"",
            "\"0000:0000:0000:0000:0000:ffff:c612:0001\"",
        ])
        .prop_map(str::to_owned),
        any::<u64>().prop_map(|v| v.to_string()),
        any::<i64>().prop_map(|v| v.to_string()),
        "[0-9]{1,60}",
        prop::collection::vec(
            any::<u64>().prop_map(|v| (v % (1 << 24)).to_string()),
            0..40
        )
        .prop_map(|v| format!("[{}]", v.join(","))),
        (1usize..300).prop_map(|d| format!("{}1{}", "[".repeat(d), "]".repeat(d))),
        "\"[ -~]{0,40}\"",
    ]
}

/// A JSON object line with the given keys (and strangers), some missing, some repeated.
fn json_line(keys: &'static [&'static str]) -> impl Strategy<Value = Vec<u8>> {
    let key = prop_oneof![
        8 => prop::sample::select(keys).prop_map(str::to_owned),
        1 => "[a-z_]{1,12}",
    ];
    (
        prop::collection::vec((key, json_value()), 0..12),
        any::<bool>(),
    )
        .prop_map(|(fields, newline)| {
            let body: Vec<String> = fields
                .iter()
                .map(|(k, v)| format!("\"{k}\": {v}"))
                .collect();
            let mut line = format!("{{{}}}", body.join(", ")).into_bytes();
            if newline {
                line.push(b'\n');
            }
            line
        })
}

const HELLO_KEYS: &[&str] = &["test", "sizes", "iters", "duration", "qps", "mtu", "bidir"];
const VERBS_KEYS: &[&str] = &["qpn", "psn", "gid", "addr", "rkey", "atomic_addr"];
const DEST_KEYS: &[&str] = &["qpn", "psn", "rkey", "addr", "gid"];

proptest! {
    #![proptest_config(config(512))]

    #[test]
    fn arbitrary_bytes_keep_every_decoder_contract(
        bytes in prop::collection::vec(any::<u8>(), 0..300)
    ) {
        check_bounded(&bytes);
    }

    #[test]
    fn damaged_valid_messages_keep_every_decoder_contract(
        which in 0usize..4,
        damage in prop::collection::vec((any::<usize>(), any::<u8>()), 0..6),
        cut in prop::option::of(any::<usize>()),
        extra in prop::collection::vec(any::<u8>(), 0..4),
    ) {
        let valid: &[u8] = match which {
            0 => b"0000:000011:42f128:00000000000000000000ffffc612000c\0",
            1 => b"0000:0001:000013:775df5:0000048b:000055fc6186f000:00:00:00:00:00:00:00:00:00:00:ff:ff:c6:12:00:0c:00000000:\0",
            2 => br#"{"qpn": 25, "psn": 9837772, "gid": "0000:0000:0000:0000:0000:ffff:c612:000c", "addr": 140361510559744, "rkey": 2566, "atomic_addr": 140361510576128}"#,
            _ => br#"{"test":"write-bw","sizes":[65536],"iters":5000,"duration":0,"qps":1,"mtu":1024,"bidir":false}"#,
        };
        check_bounded(&damaged(valid.to_vec(), &damage, cut, &extra));
    }

    #[test]
    fn hostile_parameter_lines_keep_the_contract(line in json_line(HELLO_KEYS)) {
        check_bounded(&line);
    }

    #[test]
    fn hostile_verbs_peer_lines_keep_the_contract(line in json_line(VERBS_KEYS)) {
        check_bounded(&line);
    }

    #[test]
    fn hostile_key_lists_keep_the_contract(
        entries in prop::collection::vec(json_line(DEST_KEYS), 0..8)
    ) {
        let mut line = b"[".to_vec();
        for (i, e) in entries.iter().enumerate() {
            if i > 0 {
                line.push(b',');
            }
            line.extend(e.iter().filter(|&&b| b != b'\n'));
        }
        line.extend_from_slice(b"]\n");
        check_bounded(&line);
    }
}

/// Sends `chunks` to a fresh connection and closes it; returns the accepted end.
fn stream_of(chunks: Vec<Vec<u8>>) -> (OobStream, std::thread::JoinHandle<()>) {
    let l = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let addr = l.local_addr().unwrap();
    let writer = std::thread::spawn(move || {
        let mut s = TcpStream::connect(addr).unwrap();
        for c in chunks {
            if s.write_all(&c).is_err() {
                break;
            }
        }
    });
    let t = Timeouts {
        io: Duration::from_secs(10),
        ..Timeouts::default()
    };
    (OobStream::accept(&l, t).unwrap(), writer)
}

proptest! {
    #![proptest_config(config(48))]

    #[test]
    fn arbitrary_streams_give_bounded_lines_then_one_error(
        chunks in prop::collection::vec(
            prop::collection::vec(prop_oneof![9 => any::<u8>(), 1 => Just(b'\n')], 0..700),
            0..6,
        ),
        max in 1usize..600,
    ) {
        let total: usize = chunks.iter().map(Vec::len).sum();
        let (mut s, writer) = stream_of(chunks);
        let mut got = 0;
        let err = loop {
            match s.recv_line("read line", max) {
                Ok(line) => {
                    prop_assert!(line.len() <= max && line.ends_with(b"\n"));
                    got += line.len();
                }
                Err(e) => break e,
            }
        };
        writer.join().unwrap();
        prop_assert!(got <= total);
        let expected = matches!(
            &err,
            ExchangeError::Closed { .. }
                | ExchangeError::Decode { source: DecodeError::TooLong { .. }, .. }
        );
        prop_assert!(expected, "{err:?}");
        oob_invariants::one_short_line(&err);
    }

    #[test]
    fn arbitrary_streams_give_whole_messages_then_one_error(
        chunks in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..200), 0..6),
    ) {
        let total: usize = chunks.iter().map(Vec::len).sum();
        let (mut s, writer) = stream_of(chunks);
        let mut messages = 0;
        let err = loop {
            match s.recv_exact("read rc_pingpong dest", roce::oob::pingpong::MESSAGE_LEN) {
                Ok(msg) => {
                    oob_invariants::pingpong(&msg);
                    let _ = PingpongDest::decode(&msg);
                    messages += 1;
                }
                Err(e) => break e,
            }
        };
        writer.join().unwrap();
        prop_assert_eq!(messages, total / roce::oob::pingpong::MESSAGE_LEN);
        let closed = matches!(err, ExchangeError::Closed { .. });
        prop_assert!(closed, "{err:?}");
        oob_invariants::one_short_line(&err);
    }
}

#[test]
fn a_parameter_line_at_the_bound_decodes_in_bounded_memory() {
    // The longest line a peer may send, all sizes: refused by the check, in memory a small
    // multiple of the line.
    let mut line =
        br#"{"test":"write-bw","iters":1,"duration":0,"qps":1,"mtu":1024,"sizes":["#.to_vec();
    while line.len() < MAX_LINE - 8 {
        line.extend_from_slice(b"1,");
    }
    line.extend_from_slice(b"1]}");
    assert!(line.len() <= MAX_LINE);
    check_bounded(&line);
    let mut longer = line.clone();
    longer.resize(MAX_LINE + 1, b' ');
    assert!(matches!(
        roce::oob::perf::decode_line::<roce::oob::perf::Hello>("parameters", &longer),
        Err(DecodeError::TooLong { .. })
    ));
}
