//! The light receive view (`parse_view`) agrees with the full checked parser (`parse_frame`) on
//! every frame of every real capture in crates/roce-proto/tests/vectors and on generated frames:
//! same packet when both accept, the same error otherwise, under truncation and bit flips too. The
//! seed is printed; replay with WIRE_PROPTEST_SEED.

use std::path::Path;

use crate::wire_strategies::{config, emit, frame_repr};
use proptest::prelude::*;
use roce_proto::wire::{
    parse_frame, parse_frame_unverified, parse_view, parse_view_fast, parse_view_unverified,
    RocePacket, WireError,
};
use roce_testkit::vectors;

/// What the view gives, as the full parser's type.
fn via_view(frame: &[u8], verify: bool) -> Result<RocePacket<'_>, WireError> {
    let view = if verify {
        parse_view(frame)
    } else {
        parse_view_unverified(frame)
    }?;
    Ok(view.to_packet())
}

fn full(frame: &[u8], verify: bool) -> Result<RocePacket<'_>, WireError> {
    if verify {
        parse_frame(frame)
    } else {
        parse_frame_unverified(frame)
    }
}

/// The fast path alone gives the view exactly for untagged frames `parse_view` accepts.
fn fast_path_agrees(frame: &[u8]) {
    let expected = parse_view(frame).ok().filter(|v| v.ip_offset() == 14);
    assert_eq!(parse_view_fast(frame), expected);
}

/// The view's own accessors match the full parse.
fn accessors_agree(frame: &[u8]) {
    fast_path_agrees(frame);
    let (Ok(view), Ok(packet)) = (parse_view(frame), parse_frame(frame)) else {
        return;
    };
    let r = &packet.repr;
    assert_eq!(view.bth, r.bth);
    assert_eq!(view.ecn, r.ip.ecn());
    assert_eq!(view.ip_src(), r.ip.src());
    assert_eq!(view.ip_dst(), r.ip.dst());
    assert_eq!(view.eth_dst(), r.eth.dst);
    assert_eq!(view.eth_src(), r.eth.src);
    assert_eq!(view.udp_src_port(), r.udp_src_port);
    assert_eq!(view.reth(), r.ext.reth);
    assert_eq!(view.aeth(), r.ext.aeth);
    assert_eq!(view.atomic_eth(), r.ext.atomic_eth);
    assert_eq!(view.atomic_ack_eth(), r.ext.atomic_ack_eth);
    assert_eq!(view.immdt(), r.ext.immdt);
    assert_eq!(view.ieth(), r.ext.ieth);
    assert_eq!(view.ext(), r.ext);
    assert_eq!(view.payload(), packet.payload);
    assert_eq!(view.icrc, packet.icrc);
    assert_eq!(
        view.is_ipv6(),
        matches!(r.ip, roce_proto::wire::IpRepr::V6(_))
    );
}

#[test]
fn view_equals_full_parse_on_every_vector_frame() {
    let mut names: Vec<_> = std::fs::read_dir(vectors::DIR)
        .expect("vectors dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "pcap"))
        .collect();
    names.sort();
    assert!(names.len() >= 5, "vectors missing: {names:?}");
    let (mut frames, mut accepted) = (0, 0);
    for path in &names {
        let file = std::fs::File::open(Path::new(path)).expect("vector file");
        let mut reader = pcap_file::pcap::PcapReader::new(file).expect("pcap header");
        while let Some(packet) = reader.next_packet() {
            let data = packet.expect("pcap record").data.into_owned();
            for verify in [true, false] {
                assert_eq!(via_view(&data, verify), full(&data, verify), "{path:?}");
            }
            accessors_agree(&data);
            frames += 1;
            accepted += usize::from(parse_view(&data).is_ok());
        }
    }
    println!("{frames} frames, {accepted} accepted by both");
    assert!(accepted > 100, "only {accepted} RoCE frames in the vectors");
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn view_equals_full_parse_on_generated_frames((repr, payload) in frame_repr()) {
        let frame = emit(&repr, &payload);
        let packet = via_view(&frame, true).expect("own frame parses");
        prop_assert_eq!(packet.repr, repr);
        prop_assert_eq!(packet.payload, &payload[..]);
        accessors_agree(&frame);
    }

    #[test]
    fn view_errors_equal_full_parse_errors_under_truncation((repr, payload) in frame_repr()) {
        let frame = emit(&repr, &payload);
        for len in 0..frame.len() {
            let prefix = &frame[..len];
            let err = parse_view(prefix).err();
            prop_assert!(err.is_some(), "prefix of {} bytes accepted", len);
            prop_assert_eq!(parse_view_fast(prefix), None);
            prop_assert_eq!(err, parse_frame(prefix).err());
            prop_assert_eq!(parse_view_unverified(prefix).err(), parse_frame_unverified(prefix).err());
        }
    }

    #[test]
    fn view_equals_full_parse_under_bit_flips(
        (repr, payload) in frame_repr(),
        flips in proptest::collection::vec((any::<usize>(), 0u8..8), 1..4),
    ) {
        let mut frame = emit(&repr, &payload);
        for (at, bit) in flips {
            let len = frame.len();
            frame[at % len] ^= 1 << bit;
        }
        for verify in [true, false] {
            prop_assert_eq!(via_view(&frame, verify), full(&frame, verify));
        }
        accessors_agree(&frame);
    }

    #[test]
    fn view_rejects_any_bit_flip_in_bth_extension_headers_or_payload(
        (repr, payload) in frame_repr(),
        pick in any::<usize>(),
        bit in 0u8..8,
    ) {
        let mut frame = emit(&repr, &payload);
        let view = parse_view(&frame).expect("own frame parses");
        let bth_at = view.payload_offset() - view.info.ext_len - roce_proto::wire::bth::HEADER_LEN;
        let end = view.payload_offset() + payload.len();
        // BTH byte 4 (FECN, BECN, reserved) is masked by the ICRC: flipping it is allowed.
        let covered: Vec<usize> = (bth_at..end).filter(|&at| at != bth_at + 4).collect();
        let at = covered[pick % covered.len()];
        frame[at] ^= 1 << bit;
        prop_assert!(parse_view(&frame).is_err(), "flip of bit {} at byte {} accepted", bit, at);
        prop_assert_eq!(parse_view(&frame).err(), parse_frame(&frame).err());
    }
}
