//! DPDK failures as one typed error, each carrying DPDK's own explanation (`rte_strerror`).

use core::ffi::CStr;

use dpdk_bindings as sys;

use super::pmd::DEBIAN_PMD_DIR;

/// Why a DPDK operation failed.
#[derive(Debug, thiserror::Error)]
pub enum DpdkError {
    /// `Eal::init` was called a second time; DPDK cannot re-initialise its EAL in one process.
    #[error(
        "the DPDK EAL is already initialised in this process (it can be initialised only once)"
    )]
    AlreadyInitialised,
    /// The EAL argument string could not be split into words.
    #[error("cannot parse EAL arguments {0:?} (unbalanced quotes?)")]
    BadArgs(String),
    /// `rte_eal_init` refused the arguments or the environment.
    #[error("EAL initialisation failed: {}; arguments: {args}", eal_failure(.said, .reason, *.errno))]
    EalInit {
        /// The arguments EAL was given.
        args: String,
        /// `rte_errno`.
        errno: i32,
        /// `rte_strerror(rte_errno)`.
        reason: String,
        /// What EAL printed on stderr meanwhile, as one line (its usage text is dropped).
        said: String,
    },
    /// EAL came up without a single ethdev port.
    #[error(
        "DPDK found no ethernet ports: name a device (`--port null`, `--vdev=net_null0`, `-a <PCI>`) \
         and make sure its PMD plugin is loaded (`-d {dir}` or the driver .so)",
        dir = DEBIAN_PMD_DIR
    )]
    NoPorts,
    /// A port id that no device has.
    #[error("no DPDK port {port} (ports available: {available})")]
    NoSuchPort {
        /// The id asked for.
        port: u16,
        /// How many ports exist.
        available: u16,
    },
    /// A DPDK call failed.
    #[error("{op} failed: {reason} (errno {errno})")]
    Call {
        /// The DPDK function.
        op: &'static str,
        /// The positive errno value.
        errno: i32,
        /// `rte_strerror(errno)`.
        reason: String,
    },
    /// The port cannot carry the MTU asked for.
    #[error(
        "port {port} cannot use MTU {mtu} (supported {min}..={max}, mbuf data room allows {room})"
    )]
    Mtu {
        /// The port.
        port: u16,
        /// The MTU asked for.
        mtu: usize,
        /// Smallest MTU the device takes.
        min: usize,
        /// Largest MTU the device takes.
        max: usize,
        /// Largest MTU one mbuf of the pool can hold.
        room: usize,
    },
    /// The link did not come up in time.
    #[error("link of port {port} still down after {waited_ms} ms")]
    LinkDown {
        /// The port.
        port: u16,
        /// How long we waited.
        waited_ms: u64,
    },
    /// A `--port` specification could not be understood.
    #[error("bad port spec {spec:?}: {why} (expected null | ring | tap[:IFNAME] | af_packet:IFNAME | memif:SOCKET[,server|client] | af_xdp:IFNAME[,QUEUE] | pci:ADDRESS)")]
    BadPortSpec {
        /// What was given.
        spec: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// The device has fewer queue pairs than lcores asked for.
    #[error("port {port} cannot have {asked} queue pairs (it offers {rx} RX and {tx} TX queues): use fewer cores")]
    Queues {
        /// The port.
        port: u16,
        /// Queue pairs asked for.
        asked: u16,
        /// Most RX queues.
        rx: u16,
        /// Most TX queues.
        tx: u16,
    },
    /// A flow rule was refused.
    #[error("flow rule refused: {0}")]
    Flow(String),
    /// A name given to DPDK contains a NUL byte.
    #[error("name {0:?} contains a NUL byte")]
    NulInName(String),
}

/// `dpdk: unrecognized option '--x' (Invalid argument, rte_errno 22)`, or without what EAL
/// said when it said nothing.
fn eal_failure(said: &str, reason: &str, errno: i32) -> String {
    if said.is_empty() {
        format!("{reason} (rte_errno {errno})")
    } else {
        format!("{said} ({reason}, rte_errno {errno})")
    }
}

/// DPDK's text for an errno value.
pub(crate) fn strerror(errno: i32) -> String {
    // SAFETY: rte_strerror returns a pointer to a static or thread-local NUL-terminated string
    // valid until the next call on this thread; we copy it out at once.
    let ptr = unsafe { sys::rte_strerror(errno) };
    if ptr.is_null() {
        return format!("errno {errno}");
    }
    // SAFETY: non-null and NUL-terminated per rte_strerror's contract.
    unsafe { CStr::from_ptr(ptr) }
        .to_string_lossy()
        .into_owned()
}

/// The calling thread's `rte_errno`.
pub(crate) fn rte_errno() -> i32 {
    // SAFETY: reads a thread-local int; no preconditions.
    unsafe { sys::roce_shim_errno() }
}

/// A [`DpdkError::Call`] for `op`; `ret` is the function's negative return value, or 0 to use
/// `rte_errno` (for functions returning NULL / -1).
pub(crate) fn call_error(op: &'static str, ret: i32) -> DpdkError {
    let errno = if ret < -1 { -ret } else { rte_errno() };
    DpdkError::Call {
        op,
        errno,
        reason: strerror(errno),
    }
}

/// `Ok(ret)` for a non-negative DPDK return value, else a [`DpdkError::Call`].
pub(crate) fn check(op: &'static str, ret: i32) -> Result<i32, DpdkError> {
    if ret >= 0 {
        Ok(ret)
    } else {
        Err(call_error(op, ret))
    }
}
