//! How long a congestion notification takes: from the moment a switch marks a packet CE to the
//! moment the CNP that answers it reaches the sender's reaction point, where the controller
//! cuts its rate (DCQCN cuts as it handles the CNP; a controller that ignores CNPs still has
//! them delivered and counted). The delay is the marked packet's remaining queueing and flight
//! to the notification point, the CNP's wait at that host's NIC, and its flight back.
//!
//! A notification point answers a marked packet at once unless it sent that QP a CNP within its
//! CNP interval, in which case the mark is dropped (mlx5, rxe and roce's own NP do this). So a
//! CNP answers the latest mark before it: per host, the notification point's side keeps, per
//! peer that sent it marked packets, the time of the latest mark no CNP has answered yet; the
//! CNP it sends to that peer carries it (in the fabric's packet slot, not on the wire). The
//! reaction point's side counts the delays of the CNPs it receives. Marks are matched per host
//! pair, not per QP: with several QPs between two hosts, a CNP answers the latest mark of any.

use crate::switching::frame::{IpKey, MixMap};
use crate::switching::sojourn::Sojourn;
use roce_proto::time::Instant;

/// One host's CNP bookkeeping.
#[derive(Clone, Debug, Default)]
pub struct CnpDelay {
    /// Per peer (its IP key): the latest CE mark on its packets not yet answered.
    unanswered: MixMap<IpKey, Instant>,
    /// Delays of the CNPs this host received (made on the first).
    delays: Option<Sojourn>,
}

impl CnpDelay {
    /// A packet from `peer` that a switch marked CE at `at` arrived.
    pub fn on_marked(&mut self, peer: IpKey, at: Instant) {
        self.unanswered.insert(peer, at);
    }

    /// This host sends a CNP to `peer`: the mark it answers, if one is waiting.
    pub fn on_cnp_sent(&mut self, peer: IpKey) -> Option<Instant> {
        self.unanswered.remove(&peer)
    }

    /// A CNP answering the mark made at `marked` reached this host at `now`.
    pub fn on_cnp_received(&mut self, marked: Instant, now: Instant) {
        self.delays
            .get_or_insert_with(Sojourn::default)
            .record(now.saturating_since(marked));
    }

    /// The delays of the CNPs received, if any.
    pub fn delays(&self) -> Option<&Sojourn> {
        self.delays.as_ref()
    }

    /// Forgets the delays counted so far (the warm-up's); unanswered marks stay.
    pub fn clear(&mut self) {
        self.delays = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use roce_proto::time::Duration;

    #[test]
    fn a_cnp_answers_the_latest_unanswered_mark_of_its_peer() {
        let t = |us| Instant::ZERO + Duration::from_micros(us);
        let mut np = CnpDelay::default();
        np.on_marked(1, t(10));
        np.on_marked(1, t(12));
        np.on_marked(2, t(11));
        assert_eq!(np.on_cnp_sent(1), Some(t(12)));
        // Answered: the next CNP to the same peer has no mark to answer.
        assert_eq!(np.on_cnp_sent(1), None);
        assert_eq!(np.on_cnp_sent(2), Some(t(11)));
        let mut rp = CnpDelay::default();
        assert!(rp.delays().is_none());
        rp.on_cnp_received(t(10), t(25));
        rp.on_cnp_received(t(11), t(14));
        let d = rp.delays().unwrap();
        assert_eq!((d.packets(), d.max()), (2, Duration::from_micros(15)));
        rp.clear();
        assert!(rp.delays().is_none());
    }
}
