//! The contract of every decoder of the TCP exchanges, checked on one input: no panic; an error
//! is one short printable line; a success meets its format's bounds and re-encodes to itself.
//! Shared by the property tests (tests/it/oob_props.rs) and the cargo-fuzz targets (fuzz/).

use std::fmt::Display;

use roce::oob::perf::{self, decode_line, Dest, Hello};
use roce::oob::perftest::{self, PerftestDest};
use roce::oob::pingpong::{self, PingpongDest};
use roce::oob::verbs_peer::VerbsPeerInfo;
use roce_proto::psn::PSN_MASK;

/// The longest error line a decoder may produce.
pub const MAX_ERROR_LEN: usize = 600;

/// An error is one line of printable text, short.
pub fn one_short_line(e: &impl Display) {
    let text = e.to_string();
    assert!(
        !text.chars().any(char::is_control),
        "control characters in {text:?}"
    );
    assert!(text.len() <= MAX_ERROR_LEN, "{} bytes: {text}", text.len());
}

/// ibv_rc_pingpong's 52-byte message and its `done`.
pub fn pingpong(bytes: &[u8]) {
    match PingpongDest::decode(bytes) {
        Ok(d) => {
            assert_eq!(bytes.len(), pingpong::MESSAGE_LEN);
            assert!(d.qpn <= PSN_MASK);
            assert_eq!(PingpongDest::decode(&d.encode()), Ok(d));
        }
        Err(e) => one_short_line(&e),
    }
    if let Err(e) = pingpong::decode_done(bytes) {
        one_short_line(&e);
    }
}

/// perftest's key messages (both formats), version, MTU and system data.
pub fn perftest(bytes: &[u8]) {
    for with_gid in [false, true] {
        match PerftestDest::decode(bytes, with_gid) {
            Ok(d) => {
                assert_eq!(bytes.len(), PerftestDest::message_len(with_gid));
                assert!(d.qpn <= PSN_MASK);
                assert_eq!(d.gid.is_some(), with_gid);
                assert_eq!(PerftestDest::decode(&d.encode(), with_gid), Ok(d));
            }
            Err(e) => one_short_line(&e),
        }
    }
    match perftest::decode_version(bytes) {
        Ok(v) => assert!(v.len() < perftest::VERSION_LEN),
        Err(e) => one_short_line(&e),
    }
    match perftest::decode_mtu(bytes) {
        Ok(mtu) => assert!(perf::MTUS.contains(&u32::from(mtu))),
        Err(e) => one_short_line(&e),
    }
    if let Err(e) = perftest::decode_i32("perftest cycle buffer", bytes) {
        one_short_line(&e);
    }
}

/// rc_verbs_peer.py's JSON line.
pub fn verbs_peer(bytes: &[u8]) {
    match VerbsPeerInfo::decode(bytes) {
        Ok(i) => {
            assert!(i.qpn <= PSN_MASK && i.psn.value() <= PSN_MASK);
            assert_eq!(VerbsPeerInfo::decode(&i.encode()), Ok(i));
        }
        Err(e) => one_short_line(&e),
    }
}

/// `roce perf`'s own lines: parameters (which, once checked, bound the run) and keys.
pub fn roce_perf(bytes: &[u8]) {
    match decode_line::<Hello>("parameters", bytes) {
        Ok(h) => match h.check(perf::DEFAULT_MAX_MEMORY) {
            Ok(()) => {
                assert!(!h.sizes.is_empty() && h.sizes.len() <= perf::MAX_SIZES);
                assert!(h.sizes.iter().all(|&s| (1..=perf::MAX_SIZE).contains(&s)));
                assert!((1..=perf::MAX_ITERS).contains(&h.iters));
                assert!(h.duration <= perf::MAX_DURATION_S);
                assert!((1..=perf::MAX_QPS).contains(&h.qps));
                assert!(perf::MTUS.contains(&h.mtu));
                let bytes = h.buffer_bytes().expect("checked buffers fit in u64");
                assert!(bytes <= perf::DEFAULT_MAX_MEMORY);
            }
            Err(e) => one_short_line(&e),
        },
        Err(e) => one_short_line(&e),
    }
    match decode_line::<Vec<Dest>>("keys", bytes) {
        Ok(keys) => assert!(keys.len() <= bytes.len()),
        Err(e) => one_short_line(&e),
    }
}

/// Every decoder on the same bytes.
pub fn all(bytes: &[u8]) {
    pingpong(bytes);
    perftest(bytes);
    verbs_peer(bytes);
    roce_perf(bytes);
}
