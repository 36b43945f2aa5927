//! The Environment Abstraction Layer: started once per process from an argument string with
//! sensible defaults. Not here: ports and pools (they take the [`Eal`] token as proof of init).

use std::ffi::{c_char, CStr, CString};
use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use dpdk_bindings as sys;

use super::error::{rte_errno, strerror, DpdkError};
use super::pmd::DEBIAN_PMD_DIR;

static STARTED: AtomicBool = AtomicBool::new(false);

/// While alive, descriptors 1 and 2 write into two anonymous in-memory files: EAL prints its
/// usage text (about a hundred lines) on stdout and its complaints on stderr when it refuses an
/// argument, and we want one line of our own instead. [`CapturedStdio::finish`] puts the real
/// descriptors back (so does dropping it) and returns what each received.
struct CapturedStdio {
    saved: [i32; 2],
    files: [File; 2],
    restored: bool,
}

impl CapturedStdio {
    fn start() -> Option<CapturedStdio> {
        use std::io::Write;
        let _ = std::io::stdout().flush();
        let _ = std::io::stderr().flush();
        let memfd = |name: &CStr| {
            // SAFETY: `name` is a valid C string; memfd_create returns a new descriptor or -1.
            let fd = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
            // SAFETY: a fresh descriptor that nothing else owns; the File closes it.
            (fd >= 0).then(|| unsafe { File::from_raw_fd(fd) })
        };
        let files = [memfd(c"roce-eal-stdout")?, memfd(c"roce-eal-stderr")?];
        // SAFETY: dup/dup2/close act on the process's own standard descriptors (no Rust object
        // owns 1 or 2: std's handles write to whatever they refer to) and on descriptors this
        // function duplicated; fflush(NULL) empties C's buffers before the switch.
        unsafe {
            let out = libc::dup(1);
            let err = libc::dup(2);
            if out < 0 || err < 0 {
                for fd in [out, err].into_iter().filter(|&fd| fd >= 0) {
                    libc::close(fd);
                }
                return None;
            }
            libc::fflush(std::ptr::null_mut());
            let mut guard = CapturedStdio {
                saved: [out, err],
                files,
                restored: false,
            };
            if libc::dup2(guard.files[0].as_raw_fd(), 1) < 0
                || libc::dup2(guard.files[1].as_raw_fd(), 2) < 0
            {
                guard.restore();
                return None;
            }
            Some(guard)
        }
    }

    fn restore(&mut self) {
        if std::mem::replace(&mut self.restored, true) {
            return;
        }
        // SAFETY: fflush(NULL) flushes every C stream into the capture before the switch back;
        // `saved` are descriptors this guard duplicated and still owns.
        unsafe {
            libc::fflush(std::ptr::null_mut());
            for (fd, saved) in [1, 2].into_iter().zip(self.saved) {
                libc::dup2(saved, fd);
                libc::close(saved);
            }
        }
    }

    /// Restores stdout and stderr; returns what was written to each meanwhile.
    fn finish(mut self) -> (String, String) {
        use std::io::{Read, Seek};
        self.restore();
        let read = |f: &mut File| {
            let mut bytes = Vec::new();
            let _ = f.rewind().and_then(|()| f.read_to_end(&mut bytes));
            String::from_utf8_lossy(&bytes).into_owned()
        };
        let [out, err] = &mut self.files;
        (read(out), read(err))
    }
}

impl Drop for CapturedStdio {
    fn drop(&mut self) {
        self.restore();
    }
}

/// What EAL said on stderr while it refused to start, as one line: its distinct complaints
/// (getopt's `dpdk: unrecognized option '--bogus'`, `EAL: ...` log lines) joined by "; ",
/// without the generic "Invalid 'command line' arguments" when a more precise line exists.
fn complaint(stderr: &str) -> String {
    const MAX_LINES: usize = 4;
    const MAX_LINE: usize = 200;
    let mut lines: Vec<String> = Vec::new();
    for line in stderr.lines().map(str::trim).filter(|l| !l.is_empty()) {
        // EAL says its fatal errors twice, once as "EAL: FATAL: X" and once as "EAL: X".
        let line = match line.strip_prefix("EAL: FATAL: ") {
            Some(rest) => format!("EAL: {rest}"),
            None => line.to_owned(),
        };
        let line: String = line.chars().take(MAX_LINE).collect();
        if !lines.contains(&line) {
            lines.push(line);
        }
    }
    let generic = |l: &String| l.contains("Invalid 'command line' arguments");
    if lines.iter().any(|l| !generic(l)) {
        lines.retain(|l| !generic(l));
    }
    lines.truncate(MAX_LINES);
    lines.join("; ")
}

/// How to start the EAL: the user's arguments plus the defaults we add when they are missing.
#[derive(Clone, Debug)]
pub struct EalConfig {
    /// EAL arguments as one shell-quoted string, e.g. `-l 0 --vdev=net_ring0`.
    pub args: String,
    /// Add `--no-huge` when no hugepages are free (default true).
    pub auto_no_huge: bool,
    /// Add `--in-memory` (`--no-shconf` with `--no-huge`) unless a `--file-prefix`,
    /// `--in-memory` or `--no-shconf` is given, so several processes can run at once (default
    /// true).
    pub auto_in_memory: bool,
    /// Add `-d <DEBIAN_PMD_DIR>` when that directory exists, no `-d` is given and DPDK is linked
    /// as shared libraries (default true).
    pub auto_pmd_dir: bool,
    /// Add `-l 0` when no core list is given (default true).
    pub auto_lcores: bool,
    /// Add `--no-pci` unless a PCI device is named (`-a`/`--allow`/`-b`/`--block`), so a run on
    /// virtual ports never probes, let alone takes over, the machine's own NICs (default true).
    pub auto_no_pci: bool,
    /// Fail with [`DpdkError::NoPorts`] when EAL finds no port (default true).
    pub require_ports: bool,
}

impl EalConfig {
    /// A configuration from an argument string, with every default on.
    pub fn new(args: impl Into<String>) -> Self {
        EalConfig {
            args: args.into(),
            auto_no_huge: true,
            auto_in_memory: true,
            auto_pmd_dir: true,
            auto_lcores: true,
            auto_no_pci: true,
            require_ports: true,
        }
    }

    /// The full argument vector (without argv\[0\]) EAL will see.
    pub fn argv(&self) -> Result<Vec<String>, DpdkError> {
        let mut argv =
            shlex::split(&self.args).ok_or_else(|| DpdkError::BadArgs(self.args.clone()))?;
        let has = |argv: &[String], names: &[&str]| {
            argv.iter().any(|a| {
                names
                    .iter()
                    .any(|n| a == n || (n.starts_with("--") && a.starts_with(&format!("{n}="))))
            })
        };
        if self.auto_lcores && !has(&argv, &["-l", "-c", "--lcores"]) {
            argv.extend(["-l".into(), "0".into()]);
        }
        if self.auto_no_pci
            && !has(&argv, &["-a", "--allow", "-b", "--block", "--no-pci"])
            && !argv
                .iter()
                .any(|a| a.starts_with("-a") || a.starts_with("-b"))
        {
            argv.push("--no-pci".into());
        }
        if self.auto_no_huge && !has(&argv, &["--no-huge", "--huge-dir"]) && !hugepages_available()
        {
            argv.push("--no-huge".into());
        }
        if self.auto_in_memory && !has(&argv, &["--in-memory", "--file-prefix", "--no-shconf"]) {
            // --in-memory is --no-shconf plus hugepage unlinking, and EAL refuses it together
            // with --no-huge (which implies legacy memory): use plain --no-shconf there.
            if has(&argv, &["--no-huge"]) {
                argv.push("--no-shconf".into());
            } else {
                argv.push("--in-memory".into());
            }
        }
        if self.auto_pmd_dir
            && !sys::LINKED_STATICALLY
            && !argv.iter().any(|a| a == "-d" || a.starts_with("-d"))
            && Path::new(DEBIAN_PMD_DIR).is_dir()
        {
            argv.extend(["-d".into(), DEBIAN_PMD_DIR.into()]);
        }
        Ok(argv)
    }
}

impl Default for EalConfig {
    fn default() -> Self {
        EalConfig::new("")
    }
}

/// True when a hugetlbfs is mounted and has free pages.
fn hugepages_available() -> bool {
    let mounted = std::fs::read_to_string("/proc/mounts")
        .map(|m| {
            m.lines()
                .any(|l| l.split_whitespace().nth(2) == Some("hugetlbfs"))
        })
        .unwrap_or(false);
    let free = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find(|l| l.starts_with("HugePages_Free:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        })
        .unwrap_or(0);
    mounted && free > 0
}

/// Proof that the EAL is running. There is at most one per process; pools and ports borrow it.
#[derive(Debug)]
pub struct Eal {
    argv: Vec<String>,
}

impl Eal {
    /// Starts the EAL. A second call in the same process returns
    /// [`DpdkError::AlreadyInitialised`]; a call that fails on bad arguments may be retried.
    pub fn init(config: &EalConfig) -> Result<Eal, DpdkError> {
        let argv = config.argv()?;
        if STARTED
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return Err(DpdkError::AlreadyInitialised);
        }
        let joined = argv.join(" ");
        tracing::info!(args = %joined, "starting DPDK EAL");
        // argv[0] is what getopt names in its complaints ("dpdk: unrecognized option"), kept
        // apart from our own "roce: " error line.
        let mut owned = Vec::with_capacity(argv.len() + 1);
        for a in std::iter::once("dpdk").chain(argv.iter().map(String::as_str)) {
            match CString::new(a) {
                Ok(c) => owned.push(c),
                Err(_) => {
                    STARTED.store(false, Ordering::Release);
                    return Err(DpdkError::NulInName(a.to_owned()));
                }
            }
        }
        // EAL keeps pointers into argv (it may permute it and store it): leak it on purpose,
        // once per process.
        let ptrs: &'static mut [*mut c_char] = Box::leak(
            owned
                .into_iter()
                .map(CString::into_raw)
                .collect::<Vec<_>>()
                .into_boxed_slice(),
        );
        let argc = i32::try_from(ptrs.len()).unwrap_or(i32::MAX);
        // DPDK prints its usage text and its complaints on bad arguments: keep them out of our
        // stdout (a `--json` document, a table) and turn them into our one error line.
        let capture = CapturedStdio::start();
        // SAFETY: argc/argv describe valid, NUL-terminated, leaked ('static) strings; STARTED
        // guarantees no concurrent or repeated successful call from this crate.
        let ret = unsafe { sys::rte_eal_init(argc, ptrs.as_mut_ptr()) };
        let (said_out, said_err) = capture.map(CapturedStdio::finish).unwrap_or_default();
        if ret < 0 {
            let errno = rte_errno();
            // rte_eal_init allows a retry after argument errors (it resets its run-once flag);
            // after other failures a retry returns EALREADY, which we report as such.
            STARTED.store(false, Ordering::Release);
            return Err(DpdkError::EalInit {
                args: joined,
                errno,
                reason: strerror(errno),
                said: complaint(&said_err),
            });
        }
        // Started: EAL's notices go to stderr as they always did (stdout stays ours).
        eprint!("{said_out}{said_err}");
        let eal = Eal { argv };
        if config.require_ports && eal.port_count() == 0 {
            return Err(DpdkError::NoPorts);
        }
        Ok(eal)
    }

    /// The arguments EAL was started with (without argv\[0\]).
    pub fn args(&self) -> &[String] {
        &self.argv
    }

    /// Number of usable ethdev ports.
    pub fn port_count(&self) -> u16 {
        // SAFETY: EAL is initialised (self exists).
        unsafe { sys::rte_eth_dev_count_avail() }
    }

    /// Ids of all usable ethdev ports.
    pub fn port_ids(&self) -> Vec<u16> {
        let mut ids = Vec::new();
        let mut next = 0u16;
        loop {
            // SAFETY: EAL is initialised; the function only reads the port table.
            let id = unsafe { sys::rte_eth_find_next_owned_by(next, sys::RTE_ETH_DEV_NO_OWNER) };
            if id >= sys::RTE_MAX_ETHPORTS as u64 {
                break;
            }
            let Ok(id) = u16::try_from(id) else { break };
            ids.push(id);
            next = id.saturating_add(1);
        }
        ids
    }

    /// Hot-plugs a device from a devargs string (e.g. `net_tap0,iface=rtap0`) and returns the
    /// id of the ethdev port it created.
    pub fn probe_device(&self, devargs: &str) -> Result<u16, DpdkError> {
        let c = CString::new(devargs).map_err(|_| DpdkError::NulInName(devargs.into()))?;
        // SAFETY: EAL is initialised; `c` is a valid C string for the call's duration.
        let ret = unsafe { sys::rte_dev_probe(c.as_ptr()) };
        super::error::check("rte_dev_probe", ret)?;
        let name = devargs.split(',').next().unwrap_or(devargs);
        self.port_by_name(name)
    }

    /// The port id of the ethdev called `name`.
    pub fn port_by_name(&self, name: &str) -> Result<u16, DpdkError> {
        let c = CString::new(name).map_err(|_| DpdkError::NulInName(name.into()))?;
        let mut id = 0u16;
        // SAFETY: valid C string and a valid out pointer.
        let ret = unsafe { sys::rte_eth_dev_get_port_by_name(c.as_ptr(), &mut id) };
        super::error::check("rte_eth_dev_get_port_by_name", ret)?;
        Ok(id)
    }

    /// Checks that `port` exists.
    pub fn check_port(&self, port: u16) -> Result<(), DpdkError> {
        // SAFETY: EAL is initialised; the function only reads the port table.
        if unsafe { sys::rte_eth_dev_is_valid_port(port) } == 1 {
            Ok(())
        } else {
            Err(DpdkError::NoSuchPort {
                port,
                available: self.port_count(),
            })
        }
    }

    /// The lcore id of the calling thread (`u32::MAX` for threads EAL does not know).
    pub fn lcore_id(&self) -> u32 {
        // SAFETY: reads a thread-local; no preconditions.
        unsafe { sys::roce_shim_lcore_id() }
    }
}

/// Pins the calling thread to CPU `core`; returns `false` when the core does not exist or the
/// OS refused.
pub fn pin_current_thread(core: usize) -> bool {
    // Not only among the CPUs this thread may run on now: EAL pins its main thread (`-l 0`) and
    // threads inherit that, yet may be moved to any online CPU.
    online_cpus().contains(&core)
        && core_affinity::set_for_current(core_affinity::CoreId { id: core })
}

/// The CPUs the calling thread may run on (its affinity).
pub fn thread_cpus() -> Vec<usize> {
    core_affinity::get_core_ids()
        .unwrap_or_default()
        .into_iter()
        .map(|c| c.id)
        .collect()
}

/// The machine's online CPUs (`/sys/devices/system/cpu/online`, e.g. `0-3,6`), whatever the
/// calling thread's affinity; the thread's own CPUs when that file cannot be read.
pub fn online_cpus() -> Vec<usize> {
    let parsed = std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|text| {
            let mut cpus = Vec::new();
            for part in text.trim().split(',').filter(|p| !p.is_empty()) {
                let (a, b) = part.split_once('-').unwrap_or((part, part));
                let (a, b): (usize, usize) = (a.parse().ok()?, b.parse().ok()?);
                cpus.extend(a..=b.min(a + 4096));
            }
            Some(cpus)
        })
        .filter(|c| !c.is_empty());
    parsed.unwrap_or_else(thread_cpus)
}

/// Registers the calling (non-EAL) thread with EAL, which gives it an lcore id: mempools then
/// keep a per-lcore cache for it. `None` when EAL has no free lcore id left.
pub(crate) fn register_thread() -> Option<u32> {
    // SAFETY: EAL is running (callers hold an Eal); registers the calling thread only.
    let ret = unsafe { sys::rte_thread_register() };
    if ret < 0 {
        tracing::debug!("rte_thread_register failed: no lcore id for this thread");
        return None;
    }
    // SAFETY: reads a thread-local; no preconditions.
    Some(unsafe { sys::roce_shim_lcore_id() })
}

/// Gives back the lcore id [`register_thread`] took.
pub(crate) fn unregister_thread() {
    // SAFETY: the calling thread registered itself with rte_thread_register.
    unsafe { sys::rte_thread_unregister() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argv_adds_defaults_only_when_missing() {
        let mut c = EalConfig::new("-l 1 --file-prefix=x --vdev='net_null0,size=64'");
        c.auto_no_huge = false;
        c.auto_pmd_dir = false;
        assert_eq!(
            c.argv().unwrap_or_default(),
            [
                "-l",
                "1",
                "--file-prefix=x",
                "--vdev=net_null0,size=64",
                "--no-pci"
            ]
        );
        let mut c = EalConfig::new("--vdev=net_ring0");
        c.auto_no_huge = false;
        c.auto_pmd_dir = false;
        assert_eq!(
            c.argv().unwrap_or_default(),
            ["--vdev=net_ring0", "-l", "0", "--no-pci", "--in-memory"]
        );
        let mut c = EalConfig::new("-a 0000:03:00.0");
        c.auto_no_huge = false;
        c.auto_pmd_dir = false;
        let argv = c.argv().unwrap_or_default();
        assert!(!argv.contains(&"--no-pci".to_string()), "{argv:?}");
    }

    #[test]
    fn complaint_keeps_the_precise_lines_once() {
        let said = "dpdk: unrecognized option '--bogus'\n\
                    dpdk: unrecognized option '--bogus'\n\
                    EAL: FATAL: Invalid 'command line' arguments.\n\
                    EAL: Invalid 'command line' arguments.\n";
        assert_eq!(complaint(said), "dpdk: unrecognized option '--bogus'");
        assert_eq!(
            complaint("EAL: FATAL: Invalid 'command line' arguments.\n"),
            "EAL: Invalid 'command line' arguments."
        );
        assert_eq!(
            complaint("EAL: Cannot create lock\nEAL: FATAL: Cannot init config\n"),
            "EAL: Cannot create lock; EAL: Cannot init config"
        );
        assert_eq!(complaint(""), "");
    }

    #[test]
    fn argv_rejects_unbalanced_quotes() {
        assert!(matches!(
            EalConfig::new("--vdev='net_null0").argv(),
            Err(DpdkError::BadArgs(_))
        ));
    }
}
