//! Why a verb failed, and the errno libibverbs would report for it.

use roce_proto::mr::MrError;
use roce_proto::qp::QpError;
use thiserror::Error;

use crate::sys::mapping::MappingError;

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
    /// The memory to register cannot be (what the kernel's pinning would refuse).
    #[error("{0}")]
    Mapping(MappingError),
    /// The object is still in use (a CQ a QP uses).
    #[error("{0} is still in use")]
    Busy(&'static str),
    /// Called in a child forked from the process that started the device.
    #[error("this process was forked from the one that opened the device; verbs work only there")]
    Forked,
}

impl VerbsError {
    /// The errno libibverbs (and its providers) report for this failure.
    pub fn errno(&self) -> i32 {
        match self {
            VerbsError::Start(_) => libc::ENODEV,
            VerbsError::Gone | VerbsError::Internal(_) | VerbsError::Forked => libc::EIO,
            VerbsError::Mr(MrError::TableFull) => libc::ENOMEM,
            VerbsError::Mapping(MappingError::TooLarge { .. }) => libc::ENOMEM,
            VerbsError::Mapping(MappingError::NotMapped { .. }) => libc::EFAULT,
            VerbsError::Mapping(MappingError::Overflow) => libc::EINVAL,
            VerbsError::Mapping(MappingError::Unreadable(_)) => libc::EIO,
            VerbsError::Busy(_) => libc::EBUSY,
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
        assert_eq!(VerbsError::Busy("completion queue").errno(), libc::EBUSY);
        let huge = MappingError::TooLarge { len: 1, memory: 0 };
        assert_eq!(VerbsError::Mapping(huge).errno(), libc::ENOMEM);
        let unmapped = MappingError::NotMapped { at: 0x1000 };
        assert_eq!(VerbsError::Mapping(unmapped).errno(), libc::EFAULT);
        assert_eq!(VerbsError::Mr(MrError::TableFull).errno(), libc::ENOMEM);
        assert_eq!(VerbsError::Forked.errno(), libc::EIO);
    }
}
