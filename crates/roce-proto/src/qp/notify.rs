//! Completion events (verbs' `ibv_req_notify_cq` and `ibv_get_cq_event`): an application that
//! armed a CQ learns that it holds completions without polling it, so a host with many QPs
//! looks only at the CQs that got something.
//!
//! Level-triggered on the endpoint's calls: after any call that may have completed work on a
//! QP, each armed CQ of that QP that holds a completion is disarmed and queued as an event
//! (once, until armed again). Arming a CQ that already holds completions queues it at once.

use super::QueuePair;
use crate::verbs::{CompletionQueue, CqHandle};

/// Armed CQs and the queued events of an endpoint.
#[derive(Debug, Default)]
pub(crate) struct CqEvents {
    /// Armed, by CQ index.
    armed: Vec<bool>,
    /// How many are armed: with none (an endpoint that only polls) the checks cost a word.
    armed_count: usize,
    /// CQs that got completions while armed, oldest first.
    events: Vec<CqHandle>,
}

impl CqEvents {
    /// Arms `cq` (known to exist in `cqs`).
    pub(crate) fn arm(&mut self, cq: CqHandle, cqs: &[CompletionQueue]) {
        let i = cq.index();
        if self.armed.len() <= i {
            self.armed.resize(i + 1, false);
        }
        if let Some(a @ false) = self.armed.get_mut(i) {
            *a = true;
            self.armed_count += 1;
        }
        self.check(cq, cqs);
    }

    /// Whether any CQ is armed (else there is nothing to check).
    #[inline]
    pub(crate) fn any_armed(&self) -> bool {
        self.armed_count > 0
    }

    /// Queues an event for each armed CQ of `qp` holding a completion.
    #[inline]
    pub(crate) fn check_qp(&mut self, qp: &QueuePair, cqs: &[CompletionQueue]) {
        if !self.any_armed() {
            return;
        }
        let (send, recv) = qp.cqs();
        self.check(send, cqs);
        if recv != send {
            self.check(recv, cqs);
        }
    }

    fn check(&mut self, cq: CqHandle, cqs: &[CompletionQueue]) {
        let Some(a @ true) = self.armed.get_mut(cq.index()) else {
            return;
        };
        if cqs.get(cq.index()).is_some_and(|q| !q.is_empty()) {
            *a = false;
            self.armed_count -= 1;
            self.events.push(cq);
        }
    }

    /// The queued events, oldest first (each CQ is disarmed until armed again).
    pub(crate) fn drain(&mut self) -> std::vec::Drain<'_, CqHandle> {
        self.events.drain(..)
    }
}
