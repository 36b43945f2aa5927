//! Property tests of whole-frame parsing and emission: arbitrary bytes never panic, emit then
//! parse is the identity for every opcode, both IP versions, with and without VLAN, and every
//! truncation of a valid frame is an error. The seed is printed; replay with WIRE_PROPTEST_SEED.

use crate::wire_strategies::{config, emit, frame_repr};
use proptest::prelude::*;
use roce_proto::wire::{parse_frame, parse_frame_unverified};

proptest! {
    #![proptest_config(config())]

    #[test]
    fn parsing_arbitrary_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..1600)) {
        let _ = parse_frame(&bytes);
        let _ = parse_frame_unverified(&bytes);
    }

    #[test]
    fn parsing_a_valid_frame_with_random_byte_damage_never_panics(
        (repr, payload) in frame_repr(),
        damage in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..6),
    ) {
        let mut frame = emit(&repr, &payload);
        for (at, value) in damage {
            let len = frame.len();
            frame[at % len] = value;
        }
        let _ = parse_frame(&frame);
        let _ = parse_frame_unverified(&frame);
    }

    #[test]
    fn emit_then_parse_is_identity((repr, payload) in frame_repr()) {
        let frame = emit(&repr, &payload);
        let parsed = parse_frame(&frame).expect("own frame parses");
        prop_assert_eq!(parsed.repr, repr);
        prop_assert_eq!(parsed.payload, &payload[..]);
        let mut again = vec![0u8; parsed.repr.frame_len()];
        parsed.repr.emit(parsed.payload, &mut again).expect("re-emit");
        prop_assert_eq!(again, frame);
    }

    #[test]
    fn emit_with_gathers_the_same_frame_as_emit((repr, payload) in frame_repr()) {
        let frame = emit(&repr, &payload);
        let mut buf = vec![0x5au8; repr.frame_len()];
        let n = repr.emit_with(&mut buf, |dst| dst.copy_from_slice(&payload)).expect("emit_with");
        prop_assert_eq!(&buf[..n], &frame[..]);
    }

    #[test]
    fn every_truncation_of_a_valid_frame_is_an_error((repr, payload) in frame_repr()) {
        let frame = emit(&repr, &payload);
        for len in 0..frame.len() {
            prop_assert!(parse_frame(&frame[..len]).is_err(), "prefix of {} bytes parsed", len);
            prop_assert!(parse_frame_unverified(&frame[..len]).is_err());
        }
    }
}
