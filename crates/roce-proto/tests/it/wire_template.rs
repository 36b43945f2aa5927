//! The per-flow `FrameTemplate` writes exactly the bytes of the generic `RoceRepr::emit` (every
//! opcode, both IP versions, with and without VLAN, payloads 0..=4096, any ECN set afterwards),
//! and fails with exactly its errors. The seed is printed; replay with WIRE_PROPTEST_SEED.

use crate::wire_strategies::{config, ecn, emit, frame_repr};
use proptest::prelude::*;
use roce_proto::psn::Psn;
use roce_proto::wire::{
    parse_frame, Ecn, ExtRepr, FrameTemplate, Opcode, PacketFields, RoceRepr, WireError,
};

/// What the template writes for `repr` into a buffer of `len` bytes (filled with `fill`).
fn template_emit(
    template: &FrameTemplate,
    repr: &RoceRepr,
    payload: &[u8],
    len: usize,
) -> (Result<usize, WireError>, Vec<u8>) {
    let mut buf = vec![0x3cu8; len];
    let result = template.emit(&PacketFields::from_repr(repr), payload, &mut buf);
    (result, buf)
}

fn generic_emit(
    repr: &RoceRepr,
    payload: &[u8],
    len: usize,
) -> (Result<usize, WireError>, Vec<u8>) {
    let mut buf = vec![0x3cu8; len];
    let result = repr.emit(payload, &mut buf);
    (result, buf)
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn template_emit_is_byte_identical_to_generic_emit((repr, payload) in frame_repr()) {
        let frame = emit(&repr, &payload);
        let template = FrameTemplate::new(&repr);
        let fields = PacketFields::from_repr(&repr);
        prop_assert_eq!(template.frame_len(&fields), Some(frame.len()));
        let (n, buf) = template_emit(&template, &repr, &payload, frame.len() + 7);
        prop_assert_eq!(n, Ok(frame.len()));
        prop_assert_eq!(&buf[..frame.len()], &frame[..]);
        prop_assert_eq!(&buf[frame.len()..], &[0x3c; 7][..], "wrote past the frame");
    }

    #[test]
    fn one_template_serves_every_packet_of_its_flow(
        (first, _) in frame_repr(),
        (other, payload) in frame_repr(),
    ) {
        // Same flow (addresses, ports, fixed BTH fields) as `first`, packet fields of `other`.
        let mut repr = first;
        repr.bth.opcode = other.bth.opcode;
        repr.bth.solicited = other.bth.solicited;
        repr.bth.ack_req = other.bth.ack_req;
        repr.bth.psn = other.bth.psn;
        repr.ext = other.ext;
        repr.payload_len = other.payload_len;
        repr.fill_lengths();
        let template = FrameTemplate::new(&first);
        let frame = emit(&repr, &payload);
        let (n, buf) = template_emit(&template, &repr, &payload, frame.len());
        prop_assert_eq!(n, Ok(frame.len()));
        prop_assert_eq!(buf, frame);
    }

    #[test]
    fn set_ecn_gives_the_frame_a_repr_with_that_ecn_emits((repr, payload) in frame_repr(), new in ecn()) {
        let mut template = FrameTemplate::new(&repr);
        template.set_ecn(new);
        let mut marked = repr;
        marked.ip.set_ecn(new);
        let frame = emit(&marked, &payload);
        let (_, buf) = template_emit(&template, &marked, &payload, frame.len());
        prop_assert_eq!(&buf, &frame);
        prop_assert_eq!(parse_frame(&buf).map(|p| p.repr.ip.ecn()), Ok(new));
    }

    #[test]
    fn emit_in_place_around_a_payload_already_in_the_buffer((repr, payload) in frame_repr()) {
        let frame = emit(&repr, &payload);
        let template = FrameTemplate::new(&repr);
        let fields = PacketFields::from_repr(&repr);
        let at = template.payload_offset(repr.bth.opcode).expect("known opcode");
        let mut buf = vec![0u8; frame.len()];
        buf[at..at + payload.len()].copy_from_slice(&payload);
        prop_assert_eq!(template.emit_in_place(&fields, &mut buf), Ok(frame.len()));
        prop_assert_eq!(buf, frame);
    }

    #[test]
    fn template_errors_are_the_generic_emitters(
        (repr, payload) in frame_repr(),
        opcode in any::<u8>(),
        extra in 0usize..5,
        short in 0usize..200,
        drop_ext in any::<bool>(),
    ) {
        let mut bad = repr;
        bad.bth.opcode = Opcode(opcode);
        if drop_ext {
            bad.ext = ExtRepr::default();
        }
        bad.payload_len += extra;
        let payload: Vec<u8> = payload.iter().copied().chain(std::iter::repeat_n(9, extra)).collect();
        let template = FrameTemplate::new(&repr);
        let len = bad.frame_len().saturating_sub(short);
        let (generic, _) = generic_emit(&bad, &payload, len);
        let (ours, _) = template_emit(&template, &bad, &payload, len);
        prop_assert_eq!(ours, generic);
        // A payload slice of the wrong length is BadLength for both.
        let (generic, _) = generic_emit(&bad, &payload[1.min(payload.len())..], len + 200);
        let (ours, _) = template_emit(&template, &bad, &payload[1.min(payload.len())..], len + 200);
        prop_assert_eq!(ours, generic);
    }
}

#[test]
fn a_payload_too_long_for_ip_is_bad_length_for_both() {
    let mut repr = RoceRepr::cnp(
        roce_proto::wire::ethernet::Repr {
            dst: roce_proto::wire::EthernetAddress([2, 0, 0, 0, 0, 1]),
            src: roce_proto::wire::EthernetAddress([2, 0, 0, 0, 0, 2]),
            vlan: None,
            ethertype: roce_proto::wire::EtherType::Ipv4,
        },
        roce_proto::wire::IpRepr::new_roce(
            [198, 18, 0, 1].into(),
            [198, 18, 0, 2].into(),
            0,
            Ecn::Ect0,
        ),
        0xc000,
        7,
    );
    repr.bth.opcode = Opcode::RC_SEND_ONLY;
    repr.bth.psn = Psn::new(5);
    repr.payload_len = 65_500;
    let payload = vec![0u8; repr.payload_len];
    let mut buf = vec![0u8; 70_000];
    let template = FrameTemplate::new(&repr);
    let fields = PacketFields::from_repr(&repr);
    assert_eq!(repr.emit(&payload, &mut buf), Err(WireError::BadLength));
    assert_eq!(
        template.emit(&fields, &payload, &mut buf),
        Err(WireError::BadLength)
    );
}
