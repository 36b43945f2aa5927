//! Multipath from the sender: a host's NIC changes the UDP source port of a QP's RoCEv2 packets,
//! the entropy every switch's ECMP hash reads, per packet (spraying) or per flowlet, over a
//! fixed set of ports per QP. The frame is rewritten as it leaves the NIC, its ICRC (which
//! covers the UDP source port) recomputed, so every hop, capture and receiver sees the port it
//! travelled on. The engines are not involved: a QP's frames come out of its engine with the
//! port its path gave it, which is port 0 of its set.

use serde::{Deserialize, Serialize};

use crate::switching::frame::{classify, mix64, MixMap};
use roce_proto::time::{Duration, Instant};
use roce_proto::wire::{compute_icrc, ROCE_UDP_PORT};

/// UDP header length, and where its source port and checksum sit in it.
const UDP_LEN: usize = 8;
const UDP_SPORT: usize = 0;
const UDP_CHECKSUM: usize = 6;
/// Where the destination QPN (24 bits) sits in the BTH, which follows the UDP header.
const BTH_DEST_QPN: usize = 5;
/// ICRC length.
const ICRC_LEN: usize = 4;

/// How hosts spread each QP's packets over paths (`[spray]` in a scenario; off by default).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spray {
    /// UDP source ports (paths, as the ECMP hashes see them) per QP, 2 or more: the QP's own
    /// and `paths - 1` derived from it.
    pub paths: u16,
    /// Flowlet gap, µs: a QP keeps its port until it sends after a gap longer than this since
    /// its previous packet, then takes the next port of its set. 0 (the default): the next port
    /// on every packet.
    #[serde(default)]
    pub flowlet_us: f64,
}

impl Spray {
    /// Whether the settings make sense: at least 2 paths and a finite, non-negative gap.
    pub fn check(&self) -> Result<(), String> {
        if self.paths < 2 {
            return Err(format!("spray.paths is {}: at least 2", self.paths));
        }
        if !(self.flowlet_us.is_finite() && self.flowlet_us >= 0.0) {
            return Err(format!(
                "spray.flowlet_us is {}: a duration of 0 or more µs",
                self.flowlet_us
            ));
        }
        Ok(())
    }
}

/// Port `k` of the set of a QP whose own port is `base`: `base` itself for 0, else a port of
/// the RoCEv2 range 0xC000..=0xFFFF derived from both.
pub fn port_of(base: u16, k: u16) -> u16 {
    if k == 0 {
        return base;
    }
    let h = mix64((u64::from(base) << 16) | u64::from(k));
    0xc000 | (h as u16 & 0x3fff)
}

/// One QP's place in its port set.
#[derive(Clone, Copy, Debug)]
struct QpPath {
    /// The port index the QP's last packet took.
    k: u16,
    /// When it sent it.
    last: Instant,
}

/// A host NIC's spraying: the settings and where each of its QPs is in its port set.
#[derive(Clone, Debug)]
pub struct Sprayer {
    cfg: Spray,
    flowlet: Duration,
    /// Per QP (destination IP key, destination QPN, own source port).
    qps: MixMap<(u128, u32, u16), QpPath>,
}

impl Sprayer {
    /// A NIC spraying as `cfg` says.
    pub fn new(cfg: Spray) -> Self {
        Sprayer {
            cfg,
            flowlet: Duration::from_micros_f64(cfg.flowlet_us),
            qps: MixMap::default(),
        }
    }

    /// Gives the RoCEv2 packet in `frame`, sent at `now`, its QP's source port for this packet
    /// and a correct ICRC; returns the port. Anything else (not RoCEv2, unreadable, a UDP
    /// checksum set) is left alone (`None`).
    pub fn apply(&mut self, now: Instant, frame: &mut [u8]) -> Option<u16> {
        let ip = classify(frame).ip?;
        if ip.dport != ROCE_UDP_PORT || ip.l4 == 0 {
            return None;
        }
        let (l4, ip_at) = (usize::from(ip.l4), usize::from(ip.offset));
        let end = l4 + usize::from(ip.udp_len);
        let checksum = frame.get(l4 + UDP_CHECKSUM..l4 + UDP_LEN)?;
        if checksum != [0, 0] || end > frame.len() || end < l4 + UDP_LEN + 12 + ICRC_LEN {
            return None;
        }
        let qpn_at = l4 + UDP_LEN + BTH_DEST_QPN;
        let qpn = frame.get(qpn_at..qpn_at + 3)?;
        let qpn = u32::from_be_bytes([0, qpn[0], qpn[1], qpn[2]]);
        let (n, flowlet) = (self.cfg.paths.max(1), self.flowlet);
        let path = self
            .qps
            .entry((ip.dst.key(), qpn, ip.sport))
            .and_modify(|p| {
                if flowlet == Duration::ZERO || now - p.last > flowlet {
                    p.k = (p.k + 1) % n;
                }
                p.last = now;
            })
            .or_insert(QpPath { k: 0, last: now });
        let port = port_of(ip.sport, path.k);
        let sport = l4 + UDP_SPORT;
        frame
            .get_mut(sport..sport + 2)?
            .copy_from_slice(&port.to_be_bytes());
        let Some(icrc) = frame
            .get(ip_at..end - ICRC_LEN)
            .and_then(|p| compute_icrc(p).ok())
        else {
            // Put the port back: the frame stays as the engine wrote it.
            frame
                .get_mut(sport..sport + 2)?
                .copy_from_slice(&ip.sport.to_be_bytes());
            return None;
        };
        frame
            .get_mut(end - ICRC_LEN..end)?
            .copy_from_slice(&icrc.to_le_bytes());
        Some(port)
    }
}

/// What the receivers saw of the reordering multipath causes (runs with adaptive routing or
/// spraying only): the responders' sequence counters, summed over every host, under the names
/// ConnectX uses. A loss shows here too.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reordering {
    /// Request packets received beyond the expected PSN (go-back-N drops each and NAKs).
    pub out_of_sequence: u64,
    /// Request packets received again (resent after a NAK, already placed).
    pub duplicate_request: u64,
    /// With selective repeat only: request packets the receivers placed beyond the expected
    /// PSN (counted in `out_of_sequence` too; go-back-N would have dropped them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub out_of_order_placed: Option<u64>,
    /// With selective repeat only: NAKs the senders received that name a packet the receiver
    /// holds (each resends only what is missing below it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selective_naks: Option<u64>,
}

impl Reordering {
    /// The line the summary table prints.
    pub fn line(&self) -> String {
        let mut line = format!(
            "receivers: out_of_sequence {}  duplicate_request {}",
            self.out_of_sequence, self.duplicate_request
        );
        if let Some(n) = self.out_of_order_placed {
            line += &format!("  out_of_order_placed {n}");
        }
        if let Some(n) = self.selective_naks {
            line += &format!("  (senders: selective_naks {n})");
        }
        line + "\n"
    }
}

#[cfg(test)]
#[path = "spray_tests.rs"]
mod tests;
