//! Which queue pair of host A talks to which of host B, as far as a capture shows it.
//!
//! A RoCE frame names only its destination QP, so the two ends of a connection are never seen
//! together: A's requests go to B's QP Qb, and B's ACKs, NAKs, READ responses and CNPs go to
//! A's QP Qa. Links that cross directions (a NAK or CNP to Qa and the requests to Qb that caused
//! it) need the pair. It is inferred from sequence numbers: a response to Qa carries a PSN that
//! A has already sent, so A's request flow to Qb is a candidate only while its PSNs, first to
//! highest so far, span every response PSN to Qa. Flows that start at the same PSN (every QP of
//! roce's demo starts at 0) are told apart by pace, and a QP whose peer is known is no longer a
//! candidate for another (each QP has one peer). Where this leaves several candidates, the links
//! consider all of them.

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::net::IpAddr;

use roce_proto::psn::Psn;

use super::facts::{FrameFacts, FrameKind};

/// Two hosts, in the order the pair's map reads them: (A, B) holds A's QPs' peers on B.
type Hosts = (IpAddr, IpAddr);

/// The PSNs a request flow has sent so far: the first and the highest.
#[derive(Clone, Copy)]
struct Span {
    first: Psn,
    highest: Psn,
}

impl Span {
    fn holds(self, psn: Psn) -> bool {
        !psn.before(self.first) && !psn.after(self.highest)
    }
}

/// The peers inferred for every QP that received a response in the capture.
#[derive(Debug, Default)]
pub struct Pairs {
    /// (A, B) → A's QP → the QPs of B that may be its peer, sorted.
    peers: HashMap<Hosts, HashMap<u32, Vec<u32>>>,
}

impl Pairs {
    /// Learns the pairs from `frames`, in capture order.
    pub fn learn(frames: &[FrameFacts]) -> Pairs {
        // (A, B) → B's QP → the span of A's requests to it.
        let mut spans: HashMap<Hosts, HashMap<u32, Span>> = HashMap::new();
        let mut pairs = Pairs::default();
        for f in frames {
            match f.kind {
                FrameKind::Request => {
                    let span = spans
                        .entry((f.src, f.dst))
                        .or_default()
                        .entry(f.dest_qpn)
                        .or_insert(Span {
                            first: f.psn,
                            highest: f.psn,
                        });
                    if f.psn.after(span.highest) {
                        span.highest = f.psn;
                    }
                }
                FrameKind::Response | FrameKind::Nak => {
                    let hosts = (f.dst, f.src);
                    let mut consistent: Vec<u32> = spans
                        .get(&hosts)
                        .into_iter()
                        .flatten()
                        .filter(|(_, span)| span.holds(f.psn))
                        .map(|(&q, _)| q)
                        .collect();
                    consistent.sort_unstable();
                    pairs.narrow(hosts, f.dest_qpn, consistent);
                }
                FrameKind::Cnp => {}
            }
        }
        pairs.exclude_known();
        pairs.mirror();
        pairs
    }

    /// The QPs of `b` that may be the peer of `a`'s QP `qpn`; `None` when the capture says
    /// nothing of it.
    pub fn peers(&self, a: IpAddr, b: IpAddr, qpn: u32) -> Option<&[u32]> {
        self.peers
            .get(&(a, b))
            .and_then(|m| m.get(&qpn))
            .map(Vec::as_slice)
    }

    /// Whether `b`'s QP `peer` may be the peer of `a`'s QP `qpn` (yes when nothing is known).
    pub fn may_pair(&self, a: IpAddr, b: IpAddr, qpn: u32, peer: u32) -> bool {
        self.peers(a, b, qpn)
            .is_none_or(|c| c.binary_search(&peer).is_ok())
    }

    /// One response to `qpn` allows only the `consistent` flows. A response no flow explains
    /// (sent before the capture started) tells nothing; one that contradicts everything
    /// learned so far (a QP number reused) starts over from it.
    fn narrow(&mut self, hosts: Hosts, qpn: u32, consistent: Vec<u32>) {
        if consistent.is_empty() {
            return;
        }
        match self.peers.entry(hosts).or_default().entry(qpn) {
            Entry::Vacant(v) => {
                v.insert(consistent);
            }
            Entry::Occupied(mut o) => {
                let candidates = o.get_mut();
                candidates.retain(|q| consistent.binary_search(q).is_ok());
                if candidates.is_empty() {
                    *candidates = consistent;
                }
            }
        }
    }

    /// Each QP has one peer: a QP of B known to pair with one of A's is no candidate for A's
    /// others. Repeats until nothing changes.
    fn exclude_known(&mut self) {
        for qps in self.peers.values_mut() {
            loop {
                let known: Vec<(u32, u32)> = qps
                    .iter()
                    .filter(|(_, c)| c.len() == 1)
                    .map(|(&q, c)| (q, c[0]))
                    .collect();
                let mut changed = false;
                for (q, c) in qps.iter_mut() {
                    if c.len() < 2 {
                        continue;
                    }
                    let before = c.len();
                    c.retain(|p| !known.iter().any(|&(k, kp)| k != *q && kp == *p));
                    changed |= c.len() != before;
                }
                // Every candidate was another QP's known peer: the capture contradicts itself,
                // so this QP's peer is unknown.
                qps.retain(|_, c| !c.is_empty());
                if !changed {
                    break;
                }
            }
        }
    }

    /// A known pair read from the other side: when A's Qa pairs with B's Qb alone, B's Qb pairs
    /// with Qa (what a CNP for a CE-marked READ response, sent by A to Qb, needs).
    fn mirror(&mut self) {
        let known: Vec<(Hosts, u32, u32)> = self
            .peers
            .iter()
            .flat_map(|(&hosts, qps)| {
                qps.iter()
                    .filter(|(_, c)| c.len() == 1)
                    .map(move |(&q, c)| (hosts, q, c[0]))
            })
            .collect();
        for ((a, b), qa, qb) in known {
            self.peers
                .entry((b, a))
                .or_default()
                .entry(qb)
                .or_insert_with(|| vec![qa]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    const A: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(198, 18, 0, 1));
    const B: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(198, 18, 0, 2));

    fn fact(frame: usize, src: IpAddr, kind: FrameKind, qpn: u32, psn: u32) -> FrameFacts {
        FrameFacts {
            frame,
            time: Duration::from_micros(frame as u64),
            src,
            dst: if src == A { B } else { A },
            dest_qpn: qpn,
            psn: Psn::new(psn),
            kind,
            ce: false,
        }
    }

    #[test]
    fn the_faster_flow_is_paired_by_pace_and_the_slower_by_elimination() {
        use FrameKind::*;
        // A's QPs 17 and 18 talk to B's 33 and 34; both start at PSN 0, 34 runs ahead.
        let frames = [
            fact(1, A, Request, 33, 0),
            fact(2, A, Request, 34, 0),
            fact(3, A, Request, 34, 1),
            fact(4, A, Request, 34, 2),
            fact(5, B, Response, 18, 2), // only 34 has sent PSN 2
            fact(6, B, Response, 17, 0), // both have sent PSN 0
        ];
        let pairs = Pairs::learn(&frames);
        assert_eq!(pairs.peers(A, B, 18), Some(&[34][..]));
        assert_eq!(pairs.peers(A, B, 17), Some(&[33][..]));
        assert_eq!(pairs.peers(B, A, 34), Some(&[18][..]), "mirrored");
        assert!(pairs.may_pair(A, B, 17, 33));
        assert!(!pairs.may_pair(A, B, 17, 34));
        assert!(pairs.may_pair(A, B, 99, 34), "nothing known of QP 99");
    }

    #[test]
    fn flows_that_keep_pace_stay_candidates() {
        use FrameKind::*;
        let frames = [
            fact(1, A, Request, 33, 0),
            fact(2, A, Request, 34, 0),
            fact(3, B, Nak, 17, 0),
        ];
        let pairs = Pairs::learn(&frames);
        assert_eq!(pairs.peers(A, B, 17), Some(&[33, 34][..]));
    }

    #[test]
    fn a_response_no_flow_explains_teaches_nothing() {
        use FrameKind::*;
        let frames = [
            fact(1, A, Request, 33, 100),
            fact(2, B, Response, 17, 5), // acknowledges what was sent before the capture
        ];
        assert_eq!(Pairs::learn(&frames).peers(A, B, 17), None);
    }

    #[test]
    fn spans_follow_the_psn_ring() {
        use FrameKind::*;
        let top = (1 << 24) - 2;
        let frames = [
            fact(1, A, Request, 33, top),
            fact(2, A, Request, 33, 1), // wrapped
            fact(3, A, Request, 34, 0x80_0000),
            fact(4, B, Response, 17, 0),
        ];
        assert_eq!(Pairs::learn(&frames).peers(A, B, 17), Some(&[33][..]));
    }
}
