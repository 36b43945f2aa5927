//! Why a verb failed, and the errno libibverbs would report for it.

use roce_proto::mr::MrError;
use roce_proto::qp::QpError;
use thiserror::Error;

/// A failed verb.
#[derive(Debug, Error)]
pub enum VerbsError {
    /// The device could not be started (configuration, EAL, port).
    #[error("{0}")]
    Start(String),
    /// The progress thread has stopped.
    #[error("the progress thread has stopped")]
    Gone,
    /// The transport refused a QP operation.
    #[error("{0}")]
    Qp(#[from] QpError),
    /// The transport refused a memory-region operation.
    #[error("{0}")]
    Mr(#[from] MrError),
    /// A work queue is full.
    #[error("work queue full")]
    QueueFull,
    /// An argument is out of range or inconsistent.
    #[error("{0}")]
    Invalid(String),
    /// The call (or this use of it) is not supported.
    #[error("{0} is not supported")]
    Unsupported(String),
    /// No such object.
    #[error("no such {0}")]
    Unknown(&'static str),
    /// An operating-system call failed.
    #[error("{0}")]
    Io(std::io::Error),
    /// Our own bookkeeping is inconsistent (a bug).
    #[error("internal error: {0}")]
    Internal(&'static str),
}

impl VerbsError {
    /// The errno libibverbs (and its providers) report for this failure.
    pub fn errno(&self) -> i32 {
        match self {
            VerbsError::Start(_) => libc::ENODEV,
            VerbsError::Gone | VerbsError::Internal(_) => libc::EIO,
            VerbsError::QueueFull => libc::ENOMEM,
            VerbsError::Unsupported(_) => libc::EOPNOTSUPP,
            VerbsError::Io(e) => e.raw_os_error().unwrap_or(libc::EIO),
            VerbsError::Qp(_)
            | VerbsError::Mr(_)
            | VerbsError::Invalid(_)
            | VerbsError::Unknown(_) => libc::EINVAL,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_map_to_libibverbs_errnos() {
        assert_eq!(VerbsError::QueueFull.errno(), libc::ENOMEM);
        assert_eq!(
            VerbsError::Unsupported("UD".into()).errno(),
            libc::EOPNOTSUPP
        );
        assert_eq!(VerbsError::Qp(QpError::QueueFull).errno(), libc::EINVAL);
        let again = std::io::Error::from_raw_os_error(libc::EAGAIN);
        assert_eq!(VerbsError::Io(again).errno(), libc::EAGAIN);
    }
}
