//! The Environment Abstraction Layer: started once per process from an argument string with
//! sensible defaults. Not here: ports and pools (they take the [`Eal`] token as proof of init).

use std::ffi::{c_char, CString};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use dpdk_bindings as sys;

use super::error::{rte_errno, strerror, DpdkError};

/// Where Debian 12 installs DPDK 22.11's PMD plugins.
pub const DEBIAN_PMD_DIR: &str = "/usr/lib/x86_64-linux-gnu/dpdk/pmds-23.0";

static STARTED: AtomicBool = AtomicBool::new(false);

/// While alive, file descriptor 1 points at stderr; dropping it flushes C's stdio buffers and
/// puts the real stdout back.
struct StdoutToStderr {
    saved: i32,
}

impl StdoutToStderr {
    fn redirect() -> Option<StdoutToStderr> {
        use std::io::Write;
        let _ = std::io::stdout().flush();
        // SAFETY: dup/dup2/close act on the process's own standard descriptors; no Rust object
        // owns descriptor 1 (std's stdout writes to whatever it refers to), and `saved` is ours.
        unsafe {
            let saved = libc::dup(1);
            if saved < 0 {
                return None;
            }
            if libc::dup2(2, 1) < 0 {
                libc::close(saved);
                return None;
            }
            Some(StdoutToStderr { saved })
        }
    }
}

impl Drop for StdoutToStderr {
    fn drop(&mut self) {
        // SAFETY: fflush(NULL) flushes every C stream (what DPDK printed goes to stderr before
        // the switch back); `saved` is a descriptor this guard duplicated and still owns.
        unsafe {
            libc::fflush(std::ptr::null_mut());
            libc::dup2(self.saved, 1);
            libc::close(self.saved);
        }
    }
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
        // DPDK prints its usage text to stdout on bad arguments: keep stdout for our own output
        // (a `--json` document, a table) and let our one-line error say what went wrong.
        let stdout_guard = StdoutToStderr::redirect();
        // SAFETY: argc/argv describe valid, NUL-terminated, leaked ('static) strings; STARTED
        // guarantees no concurrent or repeated successful call from this crate.
        let ret = unsafe { sys::rte_eal_init(argc, ptrs.as_mut_ptr()) };
        drop(stdout_guard);
        if ret < 0 {
            let errno = rte_errno();
            // rte_eal_init allows a retry after argument errors (it resets its run-once flag);
            // after other failures a retry returns EALREADY, which we report as such.
            STARTED.store(false, Ordering::Release);
            return Err(DpdkError::EalInit {
                args: joined,
                errno,
                reason: strerror(errno),
            });
        }
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
    let Some(ids) = core_affinity::get_core_ids() else {
        return false;
    };
    match ids.into_iter().find(|c| c.id == core) {
        Some(id) => core_affinity::set_for_current(id),
        None => false,
    }
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
    fn argv_rejects_unbalanced_quotes() {
        assert!(matches!(
            EalConfig::new("--vdev='net_null0").argv(),
            Err(DpdkError::BadArgs(_))
        ));
    }
}
