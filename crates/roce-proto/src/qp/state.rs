//! The queue-pair state machine of IBTA 10.3: which `modify_qp` transitions exist and which
//! attributes each one requires or allows, with range checks on every attribute.
//!
//! Pure validation: applying the attributes and flushing queues happens in [`super::QueuePair`].

use thiserror::Error;

use crate::verbs::{QpAttr, QpState};

/// Most outstanding READ/atomic requests a QP supports in either direction.
pub const MAX_RD_ATOMIC: u8 = 16;

/// Why `modify_qp` (or a post) was refused.
#[derive(Clone, Copy, Debug, Error, PartialEq, Eq)]
pub enum QpError {
    /// No such transition.
    #[error("invalid QP state transition {from:?} -> {to:?}")]
    InvalidTransition {
        /// Current state.
        from: QpState,
        /// Requested state.
        to: QpState,
    },
    /// A required attribute was not given.
    #[error("attribute {0} is required for this transition")]
    MissingAttribute(&'static str),
    /// An attribute is out of range.
    #[error("attribute {0} is out of range")]
    InvalidAttribute(&'static str),
    /// An attribute may not be changed in this transition.
    #[error("attribute {0} may not be set in this transition")]
    AttributeNotAllowed(&'static str),
    /// The QP's state does not allow this operation.
    #[error("operation not allowed in QP state {0:?}")]
    InvalidState(QpState),
    /// The work queue is full.
    #[error("work queue full")]
    QueueFull,
    /// The work request is malformed (SGL too long, atomic SGE not 8 bytes, ...).
    #[error("invalid work request: {0}")]
    InvalidWorkRequest(&'static str),
    /// No QP with this number.
    #[error("no QP {0:#x}")]
    UnknownQp(u32),
    /// No CQ with this handle.
    #[error("no such completion queue")]
    UnknownCq,
}

/// Attribute names as bits, for the required/allowed tables.
mod bit {
    pub const PATH_MTU: u16 = 1 << 0;
    pub const DEST_QPN: u16 = 1 << 1;
    pub const AV: u16 = 1 << 2;
    pub const RQ_PSN: u16 = 1 << 3;
    pub const SQ_PSN: u16 = 1 << 4;
    pub const TIMEOUT: u16 = 1 << 5;
    pub const RETRY_CNT: u16 = 1 << 6;
    pub const RNR_RETRY: u16 = 1 << 7;
    pub const MIN_RNR_TIMER: u16 = 1 << 8;
    pub const MAX_RD_ATOMIC: u16 = 1 << 9;
    pub const MAX_DEST_RD_ATOMIC: u16 = 1 << 10;
    pub const ACCESS: u16 = 1 << 11;
}

const NAMES: [(u16, &str); 12] = [
    (bit::PATH_MTU, "path_mtu"),
    (bit::DEST_QPN, "dest_qp_num"),
    (bit::AV, "av"),
    (bit::RQ_PSN, "rq_psn"),
    (bit::SQ_PSN, "sq_psn"),
    (bit::TIMEOUT, "timeout"),
    (bit::RETRY_CNT, "retry_cnt"),
    (bit::RNR_RETRY, "rnr_retry"),
    (bit::MIN_RNR_TIMER, "min_rnr_timer"),
    (bit::MAX_RD_ATOMIC, "max_rd_atomic"),
    (bit::MAX_DEST_RD_ATOMIC, "max_dest_rd_atomic"),
    (bit::ACCESS, "access_flags"),
];

fn present(a: &QpAttr) -> u16 {
    let mut m = 0;
    let mut set = |on: bool, b: u16| {
        if on {
            m |= b
        }
    };
    set(a.path_mtu.is_some(), bit::PATH_MTU);
    set(a.dest_qp_num.is_some(), bit::DEST_QPN);
    set(a.av.is_some(), bit::AV);
    set(a.rq_psn.is_some(), bit::RQ_PSN);
    set(a.sq_psn.is_some(), bit::SQ_PSN);
    set(a.timeout.is_some(), bit::TIMEOUT);
    set(a.retry_cnt.is_some(), bit::RETRY_CNT);
    set(a.rnr_retry.is_some(), bit::RNR_RETRY);
    set(a.min_rnr_timer.is_some(), bit::MIN_RNR_TIMER);
    set(a.max_rd_atomic.is_some(), bit::MAX_RD_ATOMIC);
    set(a.max_dest_rd_atomic.is_some(), bit::MAX_DEST_RD_ATOMIC);
    set(a.access_flags.is_some(), bit::ACCESS);
    m
}

/// (required, allowed) attributes of a transition, or `None` when it does not exist.
fn transition(from: QpState, to: QpState) -> Option<(u16, u16)> {
    use bit::*;
    use QpState::*;
    let all = 0x0fff;
    match (from, to) {
        (_, Reset) | (_, Err) => Some((0, 0)),
        (Reset, Init) => Some((0, ACCESS)),
        (Init, Init) => Some((0, ACCESS)),
        (Init, Rtr) => Some((
            PATH_MTU | DEST_QPN | AV | RQ_PSN | MIN_RNR_TIMER | MAX_DEST_RD_ATOMIC,
            PATH_MTU | DEST_QPN | AV | RQ_PSN | MIN_RNR_TIMER | MAX_DEST_RD_ATOMIC | ACCESS,
        )),
        (Rtr, Rts) => Some((
            SQ_PSN | TIMEOUT | RETRY_CNT | RNR_RETRY | MAX_RD_ATOMIC,
            SQ_PSN | TIMEOUT | RETRY_CNT | RNR_RETRY | MAX_RD_ATOMIC | MIN_RNR_TIMER | ACCESS,
        )),
        (Rts, Rts) => Some((0, MIN_RNR_TIMER | ACCESS)),
        (Rts, Sqd) => Some((0, 0)),
        (Sqd, Sqd) => Some((0, all & !(DEST_QPN | RQ_PSN))),
        (Sqd, Rts) | (Sqe, Rts) => Some((0, MIN_RNR_TIMER | ACCESS)),
        _ => None,
    }
}

fn check_range(a: &QpAttr) -> Result<(), QpError> {
    let bad = QpError::InvalidAttribute;
    if a.dest_qp_num.is_some_and(|q| q > crate::psn::PSN_MASK) {
        return Err(bad("dest_qp_num"));
    }
    if a.timeout.is_some_and(|t| t > 31) {
        return Err(bad("timeout"));
    }
    if a.retry_cnt.is_some_and(|t| t > 7) {
        return Err(bad("retry_cnt"));
    }
    if a.rnr_retry.is_some_and(|t| t > 7) {
        return Err(bad("rnr_retry"));
    }
    if a.min_rnr_timer.is_some_and(|t| t > 31) {
        return Err(bad("min_rnr_timer"));
    }
    if a.max_rd_atomic.is_some_and(|t| t > MAX_RD_ATOMIC) {
        return Err(bad("max_rd_atomic"));
    }
    if a.max_dest_rd_atomic
        .is_some_and(|t| t == 0 || t > MAX_RD_ATOMIC)
    {
        return Err(bad("max_dest_rd_atomic"));
    }
    if let Some(av) = a.av {
        if av.remote_ip.is_unspecified() || av.remote_ip.is_multicast() {
            return Err(bad("av.remote_ip"));
        }
        if av.remote_mac.0 == [0; 6] || av.remote_mac.0[0] & 1 == 1 {
            return Err(bad("av.remote_mac"));
        }
    }
    Ok(())
}

/// Checks that `attr` is a valid `modify_qp` from `from`; returns the target state.
pub fn validate(from: QpState, attr: &QpAttr) -> Result<QpState, QpError> {
    let to = attr.state.unwrap_or(from);
    let (required, allowed) =
        transition(from, to).ok_or(QpError::InvalidTransition { from, to })?;
    let given = present(attr);
    for (b, name) in NAMES {
        if required & b != 0 && given & b == 0 {
            return Err(QpError::MissingAttribute(name));
        }
        if allowed & b == 0 && given & b != 0 {
            return Err(QpError::AttributeNotAllowed(name));
        }
    }
    check_range(attr)?;
    Ok(to)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verbs::Mtu;

    #[test]
    fn refused_modifies_say_what_is_wrong() {
        let cases = [
            // RESET to RTS needs INIT and RTR first.
            (
                QpState::Reset,
                QpAttr {
                    state: Some(QpState::Rts),
                    ..Default::default()
                },
                QpError::InvalidTransition {
                    from: QpState::Reset,
                    to: QpState::Rts,
                },
            ),
            // INIT to RTR names the first missing attribute.
            (
                QpState::Init,
                QpAttr {
                    state: Some(QpState::Rtr),
                    path_mtu: Some(Mtu::Mtu1024),
                    ..Default::default()
                },
                QpError::MissingAttribute("dest_qp_num"),
            ),
            // Out-of-range attributes are refused.
            (
                QpState::Rtr,
                QpAttr {
                    state: Some(QpState::Rts),
                    sq_psn: Some(crate::psn::Psn::new(0)),
                    timeout: Some(14),
                    retry_cnt: Some(8),
                    rnr_retry: Some(7),
                    max_rd_atomic: Some(1),
                    ..Default::default()
                },
                QpError::InvalidAttribute("retry_cnt"),
            ),
        ];
        for (from, attr, err) in cases {
            assert_eq!(
                validate(from, &attr),
                Err(err),
                "from {from:?} with {attr:?}"
            );
        }
    }

    #[test]
    fn any_state_may_go_to_error_and_reset() {
        for s in [QpState::Init, QpState::Rts, QpState::Sqe] {
            let to_err = QpAttr {
                state: Some(QpState::Err),
                ..Default::default()
            };
            assert_eq!(validate(s, &to_err), Ok(QpState::Err));
        }
    }
}
