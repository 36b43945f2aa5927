//! The file descriptor of a completion channel (and of a context's async events): an eventfd in
//! semaphore mode, one count per event, so a program can `poll()`/`select()` on `channel->fd`
//! and `ibv_get_cq_event` blocks, or fails with `EAGAIN` once the program made it non-blocking.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// An eventfd (`EFD_SEMAPHORE | EFD_CLOEXEC`).
#[derive(Debug)]
pub struct EventFd {
    file: File,
}

impl EventFd {
    /// A new eventfd with a count of zero.
    pub fn new() -> std::io::Result<EventFd> {
        // SAFETY: eventfd takes no pointers; the result is checked before use.
        let fd = unsafe { libc::eventfd(0, libc::EFD_SEMAPHORE | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: fd is a freshly created descriptor nothing else owns.
        let owned = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(EventFd {
            file: File::from(owned),
        })
    }

    /// The descriptor programs poll.
    pub fn raw(&self) -> RawFd {
        self.file.as_raw_fd()
    }

    /// Adds one event.
    pub fn signal(&self) {
        if let Err(e) = (&self.file).write_all(&1u64.to_ne_bytes()) {
            tracing::warn!(error = %e, "cannot signal a completion channel");
        }
    }

    /// Takes one event: blocks until there is one, unless the program set `O_NONBLOCK` on the
    /// descriptor (then `WouldBlock`).
    pub fn wait(&self) -> std::io::Result<()> {
        let mut buf = [0u8; 8];
        (&self.file).read_exact(&mut buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_signal_is_one_wait() {
        let e = EventFd::new().expect("eventfd");
        e.signal();
        e.signal();
        assert!(e.wait().is_ok());
        assert!(e.wait().is_ok());
        // SAFETY (test): fcntl on our own descriptor.
        let flags = unsafe { libc::fcntl(e.raw(), libc::F_GETFL) };
        // SAFETY (test): as above.
        unsafe { libc::fcntl(e.raw(), libc::F_SETFL, flags | libc::O_NONBLOCK) };
        assert_eq!(
            e.wait().map_err(|e| e.kind()),
            Err(std::io::ErrorKind::WouldBlock)
        );
    }
}
