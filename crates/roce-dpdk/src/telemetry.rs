//! DPDK's telemetry socket (`dpdk-telemetry.py`, `/var/run/dpdk/<prefix>/dpdk_telemetry.v2`):
//! commands of our own registered with `rte_telemetry_register_cmd`, answered by Rust closures on
//! DPDK's telemetry thread (never an lcore), and a small client for the socket, so `roce stats
//! --watch` can read what `dpdk-telemetry.py` reads. Not here: what the commands say (the metrics
//! module of the CLI registers them).

use std::ffi::{c_char, c_int, CStr, CString};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use dpdk_bindings as sys;

use crate::eal::Eal;
use crate::error::DpdkError;

/// One value of a telemetry answer.
#[derive(Clone, Debug, PartialEq)]
pub enum TelValue {
    /// An unsigned integer.
    U64(u64),
    /// Text (DPDK 22.11's telemetry has no floating point: fractions go as text).
    Str(String),
}

/// A command's answer.
#[derive(Clone, Debug, PartialEq)]
pub enum TelReply {
    /// Named values (at most 256, DPDK's limit; the rest are left out).
    Dict(Vec<(String, TelValue)>),
    /// A list of names.
    List(Vec<String>),
}

/// Answers a command: gets the text after the comma (`/roce/port,r` gives `r`), or `None` for a
/// parameter it does not know (the client sees `null`).
pub type TelHandler = Arc<dyn Fn(&str) -> Option<TelReply> + Send + Sync>;

/// DPDK 22.11's limits on one answer (`RTE_TEL_MAX_DICT_ENTRIES`, `RTE_TEL_MAX_STRING_LEN`).
const MAX_ENTRIES: usize = 256;
const MAX_STRING: usize = 127;

static HANDLERS: Mutex<Vec<(String, TelHandler)>> = Mutex::new(Vec::new());

/// Registers `cmd` (starting with `/`, e.g. `/roce/ports`) with DPDK's telemetry, answered by
/// `handler`. Registering a command again replaces its handler (DPDK cannot unregister).
pub fn register(_eal: &Eal, cmd: &str, help: &str, handler: TelHandler) -> Result<(), DpdkError> {
    let mut table = HANDLERS.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(entry) = table.iter_mut().find(|(c, _)| c == cmd) {
        entry.1 = handler;
        return Ok(());
    }
    let c = CString::new(cmd).map_err(|_| DpdkError::NulInName(cmd.into()))?;
    let h = CString::new(help).map_err(|_| DpdkError::NulInName(help.into()))?;
    // SAFETY: EAL is running; DPDK copies both strings; `answer` is a valid callback for the
    // process's lifetime.
    let ret = unsafe { sys::rte_telemetry_register_cmd(c.as_ptr(), Some(answer), h.as_ptr()) };
    crate::error::check("rte_telemetry_register_cmd", ret)?;
    table.push((cmd.to_owned(), handler));
    Ok(())
}

/// The callback DPDK calls for every command of ours: finds the handler, fills `d`.
unsafe extern "C" fn answer(
    cmd: *const c_char,
    params: *const c_char,
    d: *mut sys::rte_tel_data,
) -> c_int {
    let text = |p: *const c_char| {
        if p.is_null() {
            String::new()
        } else {
            // SAFETY: DPDK passes NUL-terminated strings valid for the call.
            unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
        }
    };
    let (cmd, params) = (text(cmd), text(params));
    let handler = {
        let table = HANDLERS.lock().unwrap_or_else(|p| p.into_inner());
        table
            .iter()
            .find(|(c, _)| *c == cmd)
            .map(|(_, h)| h.clone())
    };
    // A panic must not cross into C.
    let reply = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        handler.and_then(|h| h(&params))
    }));
    let Ok(Some(reply)) = reply else {
        return -1;
    };
    // SAFETY: `d` is the answer object DPDK handed us for this call.
    unsafe { fill(d, &reply) };
    0
}

/// Writes `reply` into DPDK's answer object.
///
/// # Safety
/// `d` must be the `rte_tel_data` of a command being answered.
unsafe fn fill(d: *mut sys::rte_tel_data, reply: &TelReply) {
    let c = |s: &str| {
        let s: String = s
            .chars()
            .filter(|&ch| ch != '\0')
            .take(MAX_STRING)
            .collect();
        CString::new(s).unwrap_or_default()
    };
    match reply {
        TelReply::Dict(entries) => {
            // SAFETY: `d` is the live answer object; strings are NUL-terminated and copied.
            unsafe { sys::rte_tel_data_start_dict(d) };
            for (name, v) in entries.iter().take(MAX_ENTRIES) {
                let n = c(name);
                match v {
                    // SAFETY: `d` is the live answer object; `n` is NUL-terminated and copied.
                    TelValue::U64(x) => unsafe {
                        sys::rte_tel_data_add_dict_u64(d, n.as_ptr(), *x);
                    },
                    TelValue::Str(s) => {
                        let v = c(s);
                        // SAFETY: `d` is the live answer object; strings are NUL-terminated and copied.
                        unsafe { sys::rte_tel_data_add_dict_string(d, n.as_ptr(), v.as_ptr()) };
                    }
                }
            }
        }
        TelReply::List(items) => {
            // SAFETY: `d` is the live answer object; strings are NUL-terminated and copied.
            unsafe { sys::rte_tel_data_start_array(d, sys::RTE_TEL_STRING_VAL) };
            for item in items.iter().take(MAX_ENTRIES) {
                let v = c(item);
                // SAFETY: `d` is the live answer object; strings are NUL-terminated and copied.
                unsafe { sys::rte_tel_data_add_array_string(d, v.as_ptr()) };
            }
        }
    }
}

/// Where this process's telemetry socket is: `dpdk_telemetry.v2` in EAL's runtime directory, or,
/// when another process of the same file prefix holds that name, the `:N` one DPDK took instead
/// (the first name when none answers with our pid).
pub fn socket_path(_eal: &Eal) -> PathBuf {
    // SAFETY: EAL is running; the directory string is static for the process.
    let dir = unsafe { sys::rte_eal_get_runtime_dir() };
    let dir = if dir.is_null() {
        "/var/run/dpdk/rte".to_owned()
    } else {
        // SAFETY: non-null, NUL-terminated.
        unsafe { CStr::from_ptr(dir) }
            .to_string_lossy()
            .into_owned()
    };
    let first = Path::new(&dir).join("dpdk_telemetry.v2");
    let me = std::process::id();
    std::iter::once(first.clone())
        .chain((1..32).map(|i| Path::new(&dir).join(format!("dpdk_telemetry.v2:{i}"))))
        .filter(|p| p.exists())
        .find(|p| owner(p) == Some(me))
        .unwrap_or(first)
}

/// Asks the telemetry socket at `path` one command (`/roce/port,r`) and returns its JSON answer,
/// as `dpdk-telemetry.py` does (a SOCK_SEQPACKET socket: a greeting, then one reply per command).
pub fn query(path: &Path, cmd: &str) -> io::Result<String> {
    exchange(path, Some(cmd))
}

/// The process that answers on the socket at `path` (from its greeting), if any: a second DPDK
/// process with the same file prefix cannot take the socket over.
pub fn owner(path: &Path) -> Option<u32> {
    let greeting = exchange(path, None).ok()?;
    let at = greeting.find("\"pid\":")? + 6;
    let digits: String = greeting[at..]
        .trim_start()
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// Connects, reads the greeting, and sends `cmd` and returns its answer (or, without one,
/// returns the greeting).
fn exchange(path: &Path, cmd: Option<&str>) -> io::Result<String> {
    use std::os::unix::ffi::OsStrExt;
    // SAFETY: plain socket call; the descriptor is owned by the OwnedFd below.
    let fd = unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor nothing else owns.
    let fd = unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) };
    let raw = std::os::fd::AsRawFd::as_raw_fd(&fd);
    // SAFETY: sockaddr_un is plain old data; all zeroes is a valid (empty) address.
    let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
    let bytes = path.as_os_str().as_bytes();
    if bytes.len() >= addr.sun_path.len() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "socket path too long",
        ));
    }
    for (dst, &b) in addr.sun_path.iter_mut().zip(bytes) {
        *dst = b as c_char;
    }
    let timeout = libc::timeval {
        tv_sec: 2,
        tv_usec: 0,
    };
    // SAFETY: valid descriptor, address and option buffers of the sizes given.
    unsafe {
        libc::setsockopt(
            raw,
            libc::SOL_SOCKET,
            libc::SO_RCVTIMEO,
            (&timeout as *const libc::timeval).cast(),
            std::mem::size_of::<libc::timeval>() as u32,
        );
        if libc::connect(
            raw,
            (&addr as *const libc::sockaddr_un).cast(),
            std::mem::size_of::<libc::sockaddr_un>() as u32,
        ) < 0
        {
            return Err(io::Error::last_os_error());
        }
    }
    let mut buf = vec![0u8; 1 << 16];
    let recv = |buf: &mut [u8]| {
        // SAFETY: valid descriptor and buffer.
        let n = unsafe { libc::recv(raw, buf.as_mut_ptr().cast(), buf.len(), 0) };
        if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(n as usize)
        }
    };
    let n = recv(&mut buf)?;
    let Some(cmd) = cmd else {
        return Ok(String::from_utf8_lossy(&buf[..n]).into_owned());
    };
    // SAFETY: valid descriptor and buffer.
    if unsafe { libc::send(raw, cmd.as_ptr().cast(), cmd.len(), 0) } < 0 {
        return Err(io::Error::last_os_error());
    }
    let n = recv(&mut buf)?;
    Ok(String::from_utf8_lossy(&buf[..n]).into_owned())
}
