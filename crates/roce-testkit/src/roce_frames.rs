//! RoCEv2 RDMA WRITE Only frames for the DPDK tests and benches, built with `roce_proto::wire`.

use std::net::{IpAddr, Ipv4Addr};

use roce_proto::engine::Engine;
use roce_proto::psn::Psn;
use roce_proto::time::Instant;
use roce_proto::wire::{
    bth, ethernet, reth, Ecn, EtherType, EthernetAddress, ExtRepr, IpRepr, Opcode, RoceRepr,
};

/// Source MAC of the generated frames.
pub const SRC_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 1];
/// Destination MAC of the generated frames.
pub const DST_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 2];

/// The headers of an RDMA WRITE Only with `payload_len` bytes, PSN `psn`.
pub fn write_only(psn: u32, payload_len: usize) -> RoceRepr {
    let mut repr = RoceRepr {
        eth: ethernet::Repr {
            dst: EthernetAddress(DST_MAC),
            src: EthernetAddress(SRC_MAC),
            vlan: None,
            ethertype: EtherType::Ipv4,
        },
        ip: IpRepr::new_roce(
            IpAddr::V4(Ipv4Addr::new(198, 18, 0, 1)),
            IpAddr::V4(Ipv4Addr::new(198, 18, 0, 2)),
            26,
            Ecn::Ect0,
        ),
        udp_src_port: 0xc0de,
        bth: bth::Repr {
            opcode: Opcode::RC_RDMA_WRITE_ONLY,
            pkey: 0xffff,
            dest_qpn: 0x11,
            ack_req: true,
            psn: Psn::new(psn),
            ..bth::Repr::default()
        },
        ext: ExtRepr {
            reth: Some(reth::Repr {
                va: 0x7f00_0000_1000,
                rkey: 0x4242,
                dma_len: u32::try_from(payload_len).unwrap_or(u32::MAX),
            }),
            ..ExtRepr::default()
        },
        payload_len,
    };
    repr.fill_lengths();
    repr
}

/// A payload whose bytes depend on `seed`.
pub fn payload(seed: u32, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u32).wrapping_mul(31).wrapping_add(seed) as u8)
        .collect()
}

/// A whole frame: WRITE Only, PSN `psn`, payload from [`payload`].
pub fn frame(psn: u32, payload_len: usize) -> Vec<u8> {
    let repr = write_only(psn, payload_len);
    let mut buf = vec![0u8; repr.frame_len()];
    let n = repr
        .emit(&payload(psn, payload_len), &mut buf)
        .unwrap_or_default();
    buf.truncate(n);
    buf
}

/// What a [`TxOnly`] engine sends.
pub trait FrameSource {
    /// Writes the next frame into `buf` and returns its length; `None` when there is none.
    fn next_frame(&mut self, buf: &mut [u8]) -> Option<usize>;
}

/// An engine that only transmits its source's frames: what arrives is ignored, it has no timer.
pub struct TxOnly<S>(pub S);

impl<S: FrameSource> Engine for TxOnly<S> {
    fn handle_frame(&mut self, _now: Instant, _frame: &[u8]) {}
    fn handle_timeout(&mut self, _now: Instant) {}
    fn poll_transmit(&mut self, _now: Instant, buf: &mut [u8]) -> Option<usize> {
        self.0.next_frame(buf)
    }
    fn poll_timeout(&self) -> Option<Instant> {
        None
    }
}
