//! Cause and effect across the frames of a capture, for `roce pcap explain`: which CE-marked
//! frame made the receiver send each CNP, and which frames a sender resent because a NAK asked
//! for them (or with no NAK: its retransmit timer).
//!
//! A CNP from B to A answers a CE-marked frame from A to B; a NAK from B to A asks A to resend,
//! on one of its request flows to B (a flow is A, B and the destination QP), from the NAK's PSN.
//! The CNP and the NAK name A's QP, the frames they answer name B's, so which QPs are the two
//! ends of one connection is inferred first ([`super::pairs`]); a CNP or a NAK is then linked
//! only to frames of its QP's peer (to any of A's flows to B where the capture cannot tell). A
//! CNP answers the earliest such CE-marked frame not yet answered, and covers the other
//! unanswered CE-marked frames to the same destination QP (the notification point sends at most
//! one CNP per QP and interval); a NAK is answered by the first resend of its PSN on its flow.

use std::collections::HashMap;
use std::fmt;
use std::net::IpAddr;
use std::time::Duration;

use roce_proto::psn::Psn;

use super::facts::{FrameFacts, FrameKind};
use super::pairs::Pairs;

/// One fact linking a frame to others (frame numbers are the capture's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Link {
    /// This CE-marked frame made the receiver send the CNP in frame `cnp`, `after` later.
    CausedCnp {
        /// The CNP's frame.
        cnp: usize,
        /// Time from this frame to the CNP.
        after: Duration,
    },
    /// CE-marked, but the receiver had already answered an earlier CE-marked frame (`trigger`)
    /// with the CNP in frame `cnp`: one CNP per notification-point interval.
    CoveredByCnp {
        /// The CNP's frame.
        cnp: usize,
        /// The CE-marked frame that caused it.
        trigger: usize,
    },
    /// CE-marked, and no CNP followed before the capture ended.
    NoCnp,
    /// A CNP answering the CE-marked frame `ce`, and `covered` more CE-marked frames that
    /// arrived before it.
    CnpFor {
        /// The CE-marked frame that caused it.
        ce: usize,
        /// Further CE-marked frames it answers.
        covered: usize,
    },
    /// A CNP with no unanswered CE-marked frame to its QP's peer before it in the capture: the
    /// mark happened elsewhere or before the capture started, or the frame that caused it was
    /// still on its way to the receiver when an earlier CNP was captured, which covered it
    /// (a capture at the switch sees a frame before the receiver does).
    CnpWithoutCe,
    /// A NAK: the sender resent `count` frames, `first`..=`last`, starting at the NAK's PSN
    /// (first sent in frame `original`, when the capture has it).
    NakResends {
        /// First resent frame.
        first: usize,
        /// Last resent frame.
        last: usize,
        /// Resent frames.
        count: usize,
        /// The frame that first carried the PSN the NAK asks for.
        original: Option<usize>,
    },
    /// A NAK the capture shows no resend for.
    NakNoResend,
    /// A resent frame the NAK in frame `nak` asked for; first sent in frame `original`.
    ResentForNak {
        /// The NAK's frame.
        nak: usize,
        /// The frame that first carried this PSN.
        original: Option<usize>,
    },
    /// A resent frame no NAK asked for: the sender's retransmit timer expired, or it saw a gap
    /// in read responses.
    ResentWithoutNak {
        /// The frame that first carried this PSN.
        original: Option<usize>,
    },
}

impl fmt::Display for Link {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let first_sent = |o: &Option<usize>| match o {
            Some(n) => format!("first sent in frame {n}"),
            None => "no earlier frame starts at this PSN (it was dropped before it reached \
                     the capture point, lies inside an earlier READ request's range, or was \
                     sent before the capture started)"
                .to_string(),
        };
        match self {
            Link::CausedCnp { cnp, after } => write!(
                f,
                "CE-marked: the receiver answered with the CNP in frame {cnp}, {:.3} us later",
                after.as_secs_f64() * 1e6
            ),
            Link::CoveredByCnp { cnp, trigger } => write!(
                f,
                "CE-marked: covered by the CNP in frame {cnp}, which answered frame {trigger} \
                 (one CNP per notification-point interval)"
            ),
            Link::NoCnp => write!(f, "CE-marked: no CNP followed in the capture"),
            Link::CnpFor { ce, covered: 0 } => {
                write!(f, "CNP: answers the CE-marked frame {ce}")
            }
            Link::CnpFor { ce, covered } => write!(
                f,
                "CNP: answers the CE-marked frame {ce} and {covered} more CE-marked frame(s) \
                 before it"
            ),
            Link::CnpWithoutCe => write!(
                f,
                "CNP: no unanswered CE-marked frame to its QP before it in the capture"
            ),
            Link::NakResends {
                first,
                last,
                count,
                original,
            } => write!(
                f,
                "NAK: the sender resends {count} frame(s), frames {first}..{last}, from the PSN \
                 it asks for ({})",
                first_sent(original)
            ),
            Link::NakNoResend => write!(f, "NAK: no resend follows in the capture"),
            Link::ResentForNak { nak, original } => write!(
                f,
                "resent: asked for by the NAK in frame {nak}; {}",
                first_sent(original)
            ),
            Link::ResentWithoutNak { original } => write!(
                f,
                "resent without a NAK (retransmit timer, or a gap in read responses); {}",
                first_sent(original)
            ),
        }
    }
}

/// Counts over a capture's links.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkCounts {
    /// CE-marked frames.
    pub ce_marked: usize,
    /// CNPs.
    pub cnps: usize,
    /// CE-marked frames that caused a CNP of their own.
    pub ce_with_cnp: usize,
    /// NAKs.
    pub naks: usize,
    /// Frames resent because a NAK asked.
    pub resent_for_nak: usize,
    /// Frames resent with no NAK.
    pub resent_without_nak: usize,
}

/// Every link found in a capture, by frame.
#[derive(Debug, Default)]
pub struct Links {
    by_frame: HashMap<usize, Vec<Link>>,
    counts: LinkCounts,
}

impl Links {
    /// The links of frame `frame` (empty for most frames).
    pub fn of(&self, frame: usize) -> &[Link] {
        self.by_frame.get(&frame).map_or(&[], Vec::as_slice)
    }

    /// Every link, by frame number.
    pub fn all(&self) -> impl Iterator<Item = (usize, &Link)> {
        let mut frames: Vec<_> = self.by_frame.keys().copied().collect();
        frames.sort_unstable();
        frames
            .into_iter()
            .flat_map(move |n| self.of(n).iter().map(move |l| (n, l)))
    }

    /// The counts.
    pub fn counts(&self) -> LinkCounts {
        self.counts
    }

    fn add(&mut self, frame: usize, link: Link) {
        self.by_frame.entry(frame).or_default().push(link);
    }
}

/// A CE-marked frame waiting for its CNP: frame number, time and destination QP.
type CeFrame = (usize, Duration, u32);

/// A request flow: source, destination and destination QP.
type FlowKey = (IpAddr, IpAddr, u32);

#[derive(Default)]
struct Flow {
    highest: Option<Psn>,
    first_sent: HashMap<u32, usize>,
    /// The NAK being answered: its frame and the last PSN sent before it.
    answering: Option<(usize, Psn)>,
}

struct PendingNak {
    frame: usize,
    /// The QP it was sent to, on the sender A.
    qpn: u32,
    psn: Psn,
    resent: Vec<usize>,
    original: Option<usize>,
}

/// Finds the links among `frames` (in capture order).
pub fn find_links(frames: impl IntoIterator<Item = FrameFacts>) -> Links {
    let frames: Vec<FrameFacts> = frames.into_iter().collect();
    let mut linker = Linker {
        pairs: Pairs::learn(&frames),
        ..Linker::default()
    };
    for f in &frames {
        linker.frame(f);
    }
    linker.finish()
}

/// One pass over a capture: the links found so far and what still waits for its answer.
#[derive(Default)]
struct Linker {
    /// Which QPs are the two ends of a connection, learned from the whole capture.
    pairs: Pairs,
    links: Links,
    /// CE-marked frames from A to B (frame, time, destination QP) not yet answered by a CNP.
    unanswered: HashMap<(IpAddr, IpAddr), Vec<CeFrame>>,
    flows: HashMap<FlowKey, Flow>,
    /// NAKs from B to A, keyed by (A, B): the sender and its peer.
    naks: HashMap<(IpAddr, IpAddr), Vec<PendingNak>>,
    /// NAKs whose resends have started.
    answered: Vec<PendingNak>,
}

impl Linker {
    /// The next frame of the capture.
    fn frame(&mut self, f: &FrameFacts) {
        if f.ce && f.kind != FrameKind::Cnp {
            self.links.counts.ce_marked += 1;
            self.unanswered
                .entry((f.src, f.dst))
                .or_default()
                .push((f.frame, f.time, f.dest_qpn));
        }
        match f.kind {
            FrameKind::Cnp => self.cnp(f),
            FrameKind::Nak => {
                self.links.counts.naks += 1;
                self.naks
                    .entry((f.dst, f.src))
                    .or_default()
                    .push(PendingNak {
                        frame: f.frame,
                        qpn: f.dest_qpn,
                        psn: f.psn,
                        resent: Vec::new(),
                        original: None,
                    });
            }
            FrameKind::Request => self.request(f),
            FrameKind::Response => {}
        }
    }

    /// A CNP answers the oldest CE-marked frame toward its sender's peer QP, and covers the
    /// later ones to the same QP.
    fn cnp(&mut self, f: &FrameFacts) {
        let links = &mut self.links;
        links.counts.cnps += 1;
        let (a, b) = (f.dst, f.src);
        let waiting = self.unanswered.entry((a, b)).or_default();
        let pairs = &self.pairs;
        let Some(&(trigger, at, qpn)) = waiting
            .iter()
            .find(|&&(_, _, q)| pairs.may_pair(a, b, f.dest_qpn, q))
        else {
            links.add(f.frame, Link::CnpWithoutCe);
            return;
        };
        let mut covered = Vec::new();
        waiting.retain(|&(n, _, q)| {
            let answered = q == qpn;
            if answered && n != trigger {
                covered.push(n);
            }
            !answered
        });
        links.counts.ce_with_cnp += 1;
        links.add(
            trigger,
            Link::CausedCnp {
                cnp: f.frame,
                after: f.time.saturating_sub(at),
            },
        );
        for &n in &covered {
            links.add(
                n,
                Link::CoveredByCnp {
                    cnp: f.frame,
                    trigger,
                },
            );
        }
        links.add(
            f.frame,
            Link::CnpFor {
                ce: trigger,
                covered: covered.len(),
            },
        );
    }

    /// A request: new, or a resend (for a NAK, or without one).
    fn request(&mut self, f: &FrameFacts) {
        let flow = self.flows.entry((f.src, f.dst, f.dest_qpn)).or_default();
        let resent = flow.highest.is_some_and(|h| !f.psn.after(h));
        if !resent {
            flow.highest = Some(f.psn);
            flow.first_sent.insert(f.psn.value(), f.frame);
            flow.answering = None;
            return;
        }
        let original = flow.first_sent.get(&f.psn.value()).copied();
        // A resend at a NAK's PSN starts answering that NAK; later resends up to the highest
        // PSN sent continue it.
        let pending = self.naks.entry((f.src, f.dst)).or_default();
        let pairs = &self.pairs;
        if let Some(i) = pending
            .iter()
            .position(|n| n.psn == f.psn && pairs.may_pair(f.src, f.dst, n.qpn, f.dest_qpn))
        {
            let mut nak = pending.remove(i);
            nak.original = original;
            flow.answering = Some((self.answered.len(), flow.highest.unwrap_or(f.psn)));
            self.answered.push(nak);
        }
        let links = &mut self.links;
        match flow.answering {
            Some((i, upto)) if !f.psn.after(upto) => {
                let nak = &mut self.answered[i];
                nak.resent.push(f.frame);
                links.add(
                    f.frame,
                    Link::ResentForNak {
                        nak: nak.frame,
                        original,
                    },
                );
                links.counts.resent_for_nak += 1;
            }
            _ => {
                flow.answering = None;
                links.add(f.frame, Link::ResentWithoutNak { original });
                links.counts.resent_without_nak += 1;
            }
        }
    }

    /// The links, with what never got its answer: CE marks without a CNP, NAKs without a
    /// resend.
    fn finish(self) -> Links {
        let mut links = self.links;
        for waiting in self.unanswered.into_values() {
            for (frame, _, _) in waiting {
                links.add(frame, Link::NoCnp);
            }
        }
        for nak in self.answered {
            let (Some(&first), Some(&last)) = (nak.resent.first(), nak.resent.last()) else {
                continue;
            };
            links.add(
                nak.frame,
                Link::NakResends {
                    first,
                    last,
                    count: nak.resent.len(),
                    original: nak.original,
                },
            );
        }
        for nak in self.naks.into_values().flatten() {
            links.add(nak.frame, Link::NakNoResend);
        }
        links
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(198, 18, 0, 1));
    const B: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(198, 18, 0, 2));

    fn fact(frame: usize, src: IpAddr, kind: FrameKind, psn: u32, ce: bool) -> FrameFacts {
        let dst = if src == A { B } else { A };
        FrameFacts {
            frame,
            time: Duration::from_micros(frame as u64),
            src,
            dst,
            dest_qpn: if src == A { 0x12 } else { 0x11 },
            psn: Psn::new(psn),
            kind,
            ce,
        }
    }

    #[test]
    fn cnps_for_different_queue_pairs_answer_their_own_frames() {
        use FrameKind::*;
        let to = |f: FrameFacts, qpn| FrameFacts { dest_qpn: qpn, ..f };
        let links = find_links([
            to(fact(1, A, Response, 7, true), 22),
            to(fact(2, A, Request, 9, true), 21),
            to(fact(3, A, Request, 9, true), 22),
            to(fact(4, B, Cnp, 0, false), 19),
            to(fact(5, B, Cnp, 0, false), 18),
        ]);
        assert_eq!(links.of(4), [Link::CnpFor { ce: 1, covered: 1 }]);
        assert_eq!(links.of(3), [Link::CoveredByCnp { cnp: 4, trigger: 1 }]);
        assert_eq!(links.of(5), [Link::CnpFor { ce: 2, covered: 0 }]);
    }

    #[test]
    fn a_cnp_answers_the_first_unanswered_ce_frame_and_covers_the_rest() {
        use FrameKind::*;
        let links = find_links([
            fact(1, A, Request, 0, false),
            fact(2, A, Request, 1, true),
            fact(3, A, Request, 2, true),
            fact(4, B, Cnp, 0, false),
            fact(5, A, Request, 3, true),
            fact(6, B, Cnp, 0, false),
            fact(7, B, Cnp, 0, false),
            fact(8, A, Request, 4, true),
        ]);
        assert_eq!(
            links.of(2),
            [Link::CausedCnp {
                cnp: 4,
                after: Duration::from_micros(2)
            }]
        );
        assert_eq!(links.of(3), [Link::CoveredByCnp { cnp: 4, trigger: 2 }]);
        assert_eq!(links.of(4), [Link::CnpFor { ce: 2, covered: 1 }]);
        assert_eq!(links.of(6), [Link::CnpFor { ce: 5, covered: 0 }]);
        assert_eq!(links.of(7), [Link::CnpWithoutCe]);
        assert_eq!(links.of(8), [Link::NoCnp]);
        assert!(links.of(1).is_empty());
        let c = links.counts();
        assert_eq!((c.ce_marked, c.cnps, c.ce_with_cnp), (4, 3, 2));
    }

    #[test]
    fn a_nak_links_to_the_frames_resent_from_its_psn() {
        use FrameKind::*;
        let links = find_links([
            fact(1, A, Request, 10, false),
            fact(2, A, Request, 11, false), // lost on the way
            fact(3, A, Request, 12, false),
            fact(4, A, Request, 13, false),
            fact(5, B, Nak, 11, false),
            fact(6, A, Request, 11, false),
            fact(7, A, Request, 12, false),
            fact(8, A, Request, 13, false),
            fact(9, A, Request, 14, false),
            fact(10, A, Request, 14, false), // timer
        ]);
        assert_eq!(
            links.of(5),
            [Link::NakResends {
                first: 6,
                last: 8,
                count: 3,
                original: Some(2)
            }]
        );
        assert_eq!(
            links.of(7),
            [Link::ResentForNak {
                nak: 5,
                original: Some(3)
            }]
        );
        assert!(links.of(9).is_empty(), "a new PSN is not a resend");
        assert_eq!(links.of(10), [Link::ResentWithoutNak { original: Some(9) }]);
        let c = links.counts();
        assert_eq!((c.naks, c.resent_for_nak, c.resent_without_nak), (1, 3, 1));
    }

    /// Two connections between the same hosts, both from PSN 0: A's QP 17 talks to B's 33,
    /// A's 18 to B's 34 (the ACKs show it: only 34's flow had sent PSN 3 when 18's ACK came).
    fn two_connections() -> Vec<FrameFacts> {
        use FrameKind::*;
        let to = |f: FrameFacts, qpn| FrameFacts { dest_qpn: qpn, ..f };
        vec![
            to(fact(1, A, Request, 0, false), 33),
            to(fact(2, A, Request, 0, false), 34),
            to(fact(3, A, Request, 1, false), 34),
            to(fact(4, A, Request, 2, false), 34),
            to(fact(5, A, Request, 3, false), 34),
            to(fact(6, B, Response, 3, false), 18),
            to(fact(7, B, Response, 0, false), 17),
        ]
    }

    #[test]
    fn a_nak_is_answered_on_its_own_connection_only() {
        use FrameKind::*;
        let to = |f: FrameFacts, qpn| FrameFacts { dest_qpn: qpn, ..f };
        let mut frames = two_connections();
        frames.extend([
            to(fact(8, A, Request, 1, false), 33), // lost on the way
            to(fact(9, A, Request, 2, false), 33),
            to(fact(10, B, Nak, 1, false), 17),
            to(fact(11, A, Request, 4, true), 34), // the other connection goes on
            to(fact(12, A, Request, 1, false), 34), // its timer: not for 17's NAK
            to(fact(13, A, Request, 1, false), 33),
            to(fact(14, A, Request, 2, false), 33),
        ]);
        let links = find_links(frames);
        assert_eq!(
            links.of(10),
            [Link::NakResends {
                first: 13,
                last: 14,
                count: 2,
                original: Some(8)
            }]
        );
        assert_eq!(links.of(12), [Link::ResentWithoutNak { original: Some(3) }]);
    }

    #[test]
    fn a_cnp_answers_its_own_connection_even_when_another_was_marked_first() {
        use FrameKind::*;
        let to = |f: FrameFacts, qpn| FrameFacts { dest_qpn: qpn, ..f };
        let mut frames = two_connections();
        frames.extend([
            to(fact(8, A, Request, 4, true), 34),
            to(fact(9, A, Request, 1, true), 33),
            to(fact(10, B, Cnp, 0, false), 17),
            to(fact(11, B, Cnp, 0, false), 18),
        ]);
        let links = find_links(frames);
        assert_eq!(links.of(10), [Link::CnpFor { ce: 9, covered: 0 }]);
        assert_eq!(links.of(11), [Link::CnpFor { ce: 8, covered: 0 }]);
        assert_eq!(links.counts().ce_with_cnp, 2);
    }

    #[test]
    fn a_nak_without_a_resend_says_so() {
        use FrameKind::*;
        let links = find_links([fact(1, A, Request, 5, false), fact(2, B, Nak, 6, false)]);
        assert_eq!(links.of(2), [Link::NakNoResend]);
        assert_eq!(
            links.all().map(|(n, _)| n).collect::<Vec<_>>(),
            vec![2],
            "only the NAK has a link"
        );
    }
}
