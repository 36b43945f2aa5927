//! Fuzzes the whole-frame parser: it must never panic, and whatever it accepts must re-emit to
//! a frame that parses again to the same packet (pad bytes and reserved bits are normalised).
#![no_main]

use libfuzzer_sys::fuzz_target;
use roce_proto::wire::{parse_frame, parse_frame_unverified, pretty};

fuzz_target!(|data: &[u8]| {
    let _ = parse_frame(data);
    let Ok(packet) = parse_frame_unverified(data) else {
        return;
    };
    let _ = pretty::summary(&packet);
    let _ = pretty::explain_frame(data);
    let mut buf = vec![0u8; packet.repr.frame_len()];
    let n = packet.repr.emit(packet.payload, &mut buf).expect("a parsed repr emits");
    let again = parse_frame(&buf[..n]).expect("an emitted frame parses");
    assert_eq!(again.repr, packet.repr);
    assert_eq!(again.payload, packet.payload);
});
