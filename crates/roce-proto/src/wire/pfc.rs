//! IEEE 802.1Qbb priority flow control (PFC) frames: MAC control frames, ethertype 0x8808,
//! opcode 0x0101, a class-enable vector and eight pause times in quanta of 512 bit times.
//!
//! The frame format lives here, with the one rule that gives a frame its priority
//! ([`priority`], [`priority_of`]); when to send a pause and what it stops is the business of the
//! switch element (`roce_fabric::switch`) and of the transmitter's
//! [`PauseState`](crate::pause::PauseState).

use super::ethernet;
use super::ethernet::field;

/// Ethertype of MAC control frames (defined with the other EtherTypes, in [`ethernet`]).
pub const MAC_CONTROL_ETHERTYPE: u16 = ethernet::ETHERTYPE_MAC_CONTROL;
/// MAC control opcode of a priority-based (per-class) pause.
pub const PFC_OPCODE: u16 = 0x0101;
/// The reserved multicast address pause frames are sent to.
pub const PAUSE_DST: [u8; 6] = [0x01, 0x80, 0xc2, 0x00, 0x00, 0x01];
/// Frame length without FCS (the minimum Ethernet frame: 64 bytes with FCS).
pub const FRAME_LEN: usize = 60;
/// Largest pause time, in quanta.
pub const MAX_QUANTA: u16 = 0xffff;
/// Bit times in one pause quantum.
pub const BITS_PER_QUANTUM: u64 = 512;

/// Priorities (traffic classes) of 802.1Qbb.
pub const PRIORITIES: usize = 8;

/// The priority of a frame from its header fields: the 802.1Q PCP if it is tagged, else the
/// class-selector bits of the IP DSCP (DSCP >> 3: RoCE data at DSCP 26 is priority 3, CNPs at
/// DSCP 48 priority 6), else 0. Every classifier (switch, NIC) applies this rule.
#[inline]
pub fn priority_of(pcp: Option<u8>, dscp: Option<u8>) -> usize {
    match (pcp, dscp) {
        (Some(pcp), _) => usize::from(pcp & 7),
        (None, Some(dscp)) => usize::from((dscp & 0x3f) >> 3),
        (None, None) => 0,
    }
}

/// The priority of an Ethernet frame ([`priority_of`] its PCP or its IPv4/IPv6 DSCP). Never
/// panics: what a runt lacks counts as absent.
pub fn priority(frame: &[u8]) -> usize {
    let be16 = |at: usize| {
        frame
            .get(at..at + 2)
            .map_or(0, |b| u16::from_be_bytes([b[0], b[1]]))
    };
    match be16(field::ETHERTYPE) {
        ethernet::ETHERTYPE_VLAN => priority_of(Some(frame.get(14).map_or(0, |b| b >> 5)), None),
        ethernet::ETHERTYPE_IPV4 => {
            priority_of(None, Some(frame.get(15).map_or(0, |tos| tos >> 2)))
        }
        ethernet::ETHERTYPE_IPV6 => priority_of(None, Some((be16(14) >> 6) as u8 & 0x3f)),
        _ => priority_of(None, None),
    }
}

/// A parsed PFC frame: for each priority whose enable bit is set, how long to pause it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PauseRepr {
    /// Source MAC of the sender.
    pub src: [u8; 6],
    /// Pause time per priority in quanta; `None` where the class-enable bit is clear.
    /// `Some(0)` resumes the priority at once (XON).
    pub quanta: [Option<u16>; PRIORITIES],
}

impl PauseRepr {
    /// A frame pausing (or, with `quanta == 0`, resuming) a single priority.
    pub fn single(src: [u8; 6], priority: u8, quanta: u16) -> Self {
        let mut q = [None; PRIORITIES];
        if let Some(slot) = q.get_mut(usize::from(priority)) {
            *slot = Some(quanta);
        }
        PauseRepr { src, quanta: q }
    }

    /// Parses a PFC frame; `None` if `frame` is not one (too short, other ethertype or opcode).
    pub fn parse(frame: &[u8]) -> Option<Self> {
        let hdr = frame.get(..34)?;
        let ethertype = u16::from_be_bytes([hdr[field::ETHERTYPE], hdr[field::ETHERTYPE + 1]]);
        let opcode = u16::from_be_bytes([hdr[14], hdr[15]]);
        if ethertype != MAC_CONTROL_ETHERTYPE || opcode != PFC_OPCODE {
            return None;
        }
        let mut src = [0u8; 6];
        src.copy_from_slice(&hdr[field::SRC]);
        let enable = u16::from_be_bytes([hdr[16], hdr[17]]);
        let mut quanta = [None; PRIORITIES];
        for (prio, q) in quanta.iter_mut().enumerate() {
            if enable & (1 << prio) != 0 {
                let at = 18 + 2 * prio;
                *q = Some(u16::from_be_bytes([hdr[at], hdr[at + 1]]));
            }
        }
        Some(PauseRepr { src, quanta })
    }

    /// Writes the frame (exactly [`FRAME_LEN`] bytes) into `buf`; returns the length, or `None`
    /// when `buf` is too small.
    pub fn emit(&self, buf: &mut [u8]) -> Option<usize> {
        let out = buf.get_mut(..FRAME_LEN)?;
        out.fill(0);
        out[field::DST].copy_from_slice(&PAUSE_DST);
        out[field::SRC].copy_from_slice(&self.src);
        out[field::ETHERTYPE..field::ETHERTYPE + 2]
            .copy_from_slice(&MAC_CONTROL_ETHERTYPE.to_be_bytes());
        out[14..16].copy_from_slice(&PFC_OPCODE.to_be_bytes());
        let mut enable = 0u16;
        for (prio, q) in self.quanta.iter().enumerate() {
            if let Some(q) = q {
                enable |= 1 << prio;
                let at = 18 + 2 * prio;
                out[at..at + 2].copy_from_slice(&q.to_be_bytes());
            }
        }
        out[16..18].copy_from_slice(&enable.to_be_bytes());
        Some(FRAME_LEN)
    }
}

/// How long `quanta` pause quanta last on a port running at `rate_bps`, in nanoseconds (rounded up).
pub fn quanta_to_nanos(quanta: u16, rate_bps: u64) -> u64 {
    let bits = u64::from(quanta) * BITS_PER_QUANTUM;
    (bits * 1_000_000_000).div_ceil(rate_bps.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pause_frame_round_trips_with_802_1qbb_layout() {
        let src = [2, 0, 0, 0, 0, 7];
        let repr = PauseRepr::single(src, 3, 0x1234);
        let mut buf = [0xa5u8; 64];
        assert_eq!(repr.emit(&mut buf), Some(60));
        assert_eq!(&buf[0..6], &[0x01, 0x80, 0xc2, 0, 0, 1]);
        assert_eq!(&buf[12..18], &[0x88, 0x08, 0x01, 0x01, 0x00, 0x08]);
        assert_eq!(&buf[24..26], &[0x12, 0x34]);
        assert_eq!(PauseRepr::parse(&buf[..60]), Some(repr));
    }

    #[test]
    fn priorities_come_from_pcp_or_dscp() {
        use ethernet::{ETHERTYPE_IPV4, ETHERTYPE_IPV6, ETHERTYPE_VLAN};
        let mut ipv4 = vec![0u8; 60];
        ipv4[12..14].copy_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
        ipv4[15] = 26 << 2 | 0b10;
        assert_eq!(priority(&ipv4), 3);
        ipv4[15] = 48 << 2;
        assert_eq!(priority(&ipv4), 6);
        let mut ipv6 = vec![0u8; 60];
        ipv6[12..14].copy_from_slice(&ETHERTYPE_IPV6.to_be_bytes());
        // Version 6, traffic class DSCP 26 with ECT(0).
        ipv6[14..16].copy_from_slice(&(0x6000u16 | ((26 << 2 | 0b10) << 4)).to_be_bytes());
        assert_eq!(priority(&ipv6), 3);
        let mut vlan = vec![0u8; 60];
        vlan[12..14].copy_from_slice(&ETHERTYPE_VLAN.to_be_bytes());
        vlan[14] = 5 << 5;
        assert_eq!(priority(&vlan), 5);
        assert_eq!(priority(&[0u8; 3]), 0, "runts are priority 0, not a panic");
        // The rule itself: the PCP wins over the DSCP, which counts by its class selector.
        assert_eq!(priority_of(Some(2), Some(48)), 2);
        assert_eq!(priority_of(None, Some(26)), 3);
        assert_eq!(priority_of(None, None), 0);
    }

    #[test]
    fn one_full_quantum_set_lasts_512_bit_times() {
        assert_eq!(quanta_to_nanos(1, 100_000_000_000), 6); // 5.12 ns rounded up
        assert_eq!(quanta_to_nanos(0xffff, 100_000_000_000), 335_540);
        assert_eq!(quanta_to_nanos(0, 100_000_000_000), 0);
    }
}
