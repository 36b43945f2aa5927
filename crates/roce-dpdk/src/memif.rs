//! Getting a memif port's socket ready before DPDK opens it: a server's stale socket file (left
//! by a process that died) is removed and a live one refused in one line; a client waits until
//! the server listens, so the two sides can start in either order. Used by the CLI and the
//! verbs library alike. Not here: the port itself (DPDK's net_memif, through
//! [`crate::PortSpec`]).

use std::io::ErrorKind;
use std::os::unix::fs::FileTypeExt;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

use thiserror::Error;

use crate::{MemifRole, PortSpec};

/// Why a memif socket is not ready.
#[derive(Debug, Error)]
pub enum MemifError {
    /// The socket's directory is missing.
    #[error("the socket's directory {0} does not exist")]
    NoDirectory(String),
    /// A server is asked to listen where one already does.
    #[error("a memif server already listens on {0}")]
    InUse(String),
    /// Something that is not a socket is at the path.
    #[error("{0} exists and is not a socket")]
    NotSocket(String),
    /// A client waited for a server in vain.
    #[error("no memif server listens on {path} (waited {waited_s} s)")]
    NoServer {
        /// The socket path.
        path: String,
        /// Seconds waited.
        waited_s: u64,
    },
    /// The path could not be looked at or cleared.
    #[error("{path}: {source}")]
    Io {
        /// The socket path.
        path: String,
        /// The error.
        source: std::io::Error,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> MemifError + '_ {
    move |source| MemifError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// How often a client looks for the server's socket.
const POLL: Duration = Duration::from_millis(20);

/// Prepares the socket of `spec` when it is a memif port (nothing otherwise); a client waits up
/// to `timeout` for the server.
pub fn prepare(spec: &PortSpec, timeout: Duration) -> Result<(), MemifError> {
    let PortSpec::Memif { socket, role } = spec else {
        return Ok(());
    };
    let path = Path::new(socket);
    let dir = match path.parent() {
        Some(d) if d.as_os_str().is_empty() => Path::new("."),
        Some(d) => d,
        None => Path::new("/"),
    };
    if !dir.is_dir() {
        return Err(MemifError::NoDirectory(dir.display().to_string()));
    }
    match role.unwrap_or(MemifRole::Server) {
        MemifRole::Server => clear_stale(path),
        MemifRole::Client => wait_for_server(path, timeout),
    }
}

/// What is at a socket path.
#[derive(Debug, PartialEq, Eq)]
enum Probe {
    /// Nothing.
    Absent,
    /// A socket file nobody listens on (its process died).
    Stale,
    /// A socket something listens on.
    Live,
    /// Something else.
    NotSocket,
}

/// Looks at `path` without disturbing a memif server there: a stream connect to its seqpacket
/// socket fails with EPROTOTYPE before any connection exists, and with ECONNREFUSED when no
/// socket is bound to the file any more.
fn probe(path: &Path) -> std::io::Result<Probe> {
    const EPROTOTYPE: i32 = 91;
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Probe::Absent),
        Err(e) => return Err(e),
    };
    if !meta.file_type().is_socket() {
        return Ok(Probe::NotSocket);
    }
    match UnixStream::connect(path) {
        Ok(_) => Ok(Probe::Live),
        Err(e) if e.raw_os_error() == Some(EPROTOTYPE) => Ok(Probe::Live),
        Err(e) if e.kind() == ErrorKind::ConnectionRefused => Ok(Probe::Stale),
        Err(e) => Err(e),
    }
}

/// A server's socket path must be free: a socket nobody listens on is removed, anything else
/// there is an error.
fn clear_stale(path: &Path) -> Result<(), MemifError> {
    match probe(path).map_err(io(path))? {
        Probe::Absent => Ok(()),
        Probe::Stale => {
            tracing::info!(socket = %path.display(), "removing a stale memif socket");
            std::fs::remove_file(path).map_err(io(path))
        }
        Probe::Live => Err(MemifError::InUse(path.display().to_string())),
        Probe::NotSocket => Err(MemifError::NotSocket(path.display().to_string())),
    }
}

/// Waits until a server listens on its socket at `path` (a stale socket left there does not
/// count: the server replaces it when it starts).
fn wait_for_server(path: &Path, timeout: Duration) -> Result<(), MemifError> {
    let start = Instant::now();
    loop {
        match probe(path).map_err(io(path))? {
            Probe::Live => return Ok(()),
            Probe::NotSocket => return Err(MemifError::NotSocket(path.display().to_string())),
            Probe::Absent | Probe::Stale => {}
        }
        if start.elapsed() >= timeout {
            return Err(MemifError::NoServer {
                path: path.display().to_string(),
                waited_s: timeout.as_secs(),
            });
        }
        std::thread::sleep(POLL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::os::unix::net::UnixListener;

    /// A directory of its own for `name`, emptied first.
    fn scratch(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("roce-memif-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn probe_tells_absent_stale_live_and_other_files_apart() {
        let dir = scratch("probe");
        let path = dir.join("m.sock");
        assert_eq!(probe(&path).unwrap(), Probe::Absent);
        let listener = UnixListener::bind(&path).unwrap();
        assert_eq!(probe(&path).unwrap(), Probe::Live);
        drop(listener);
        assert_eq!(probe(&path).unwrap(), Probe::Stale);
        let file = dir.join("plain");
        std::fs::write(&file, b"x").unwrap();
        assert_eq!(probe(&file).unwrap(), Probe::NotSocket);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_server_removes_a_stale_socket_and_refuses_a_live_one() {
        let dir = scratch("server");
        let path = dir.join("m.sock");
        let spec = |p: &Path| PortSpec::Memif {
            socket: p.display().to_string(),
            role: Some(MemifRole::Server),
        };
        let listener = UnixListener::bind(&path).unwrap();
        let live = prepare(&spec(&path), Duration::ZERO).unwrap_err();
        assert_eq!(
            live.to_string(),
            format!("a memif server already listens on {}", path.display())
        );
        drop(listener);
        prepare(&spec(&path), Duration::ZERO).unwrap();
        assert!(!path.exists());
        let missing = dir.join("no/m.sock");
        let err = prepare(&spec(&missing), Duration::ZERO).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "the socket's directory {} does not exist",
                dir.join("no").display()
            )
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_client_waits_for_a_listening_server_not_a_stale_socket() {
        let dir = scratch("client");
        let path = dir.join("m.sock");
        let spec = PortSpec::Memif {
            socket: path.display().to_string(),
            role: Some(MemifRole::Client),
        };
        drop(UnixListener::bind(&path).unwrap());
        let err = prepare(&spec, Duration::from_millis(50)).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("no memif server listens on {} (waited 0 s)", path.display())
        );
        std::fs::remove_file(&path).unwrap();
        let server = {
            let path = path.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(100));
                UnixListener::bind(path).unwrap()
            })
        };
        prepare(&spec, Duration::from_secs(10)).unwrap();
        drop(server.join().unwrap());
        std::fs::remove_dir_all(dir).unwrap();
    }
}
