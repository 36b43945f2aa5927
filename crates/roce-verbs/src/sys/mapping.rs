//! What the kernel's pinning checks before a region is registered (`ib_umem_get`): the range is
//! mapped, readable, writable where the region may be written, and not larger than the
//! machine's memory. Read from `/proc/self/maps`; nothing is pinned (the progress thread copies
//! through the application's pointer, see [`super::memory`]).

use std::fmt;

/// Why a range cannot be registered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MappingError {
    /// Longer than the machine's memory (libibverbs: ENOMEM from pinning).
    TooLarge {
        /// The length asked for.
        len: u64,
        /// The machine's memory.
        memory: u64,
    },
    /// Part of the range is not mapped, or not with the rights the region needs (EFAULT).
    NotMapped {
        /// The first address that is not mapped as needed.
        at: u64,
    },
    /// The address plus the length overflows.
    Overflow,
    /// `/proc/self/maps` cannot be read.
    Unreadable(String),
}

impl fmt::Display for MappingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MappingError::TooLarge { len, memory } => write!(
                f,
                "{len} bytes is more than this machine's {memory} bytes of memory"
            ),
            MappingError::NotMapped { at } => {
                write!(
                    f,
                    "address {at:#x} is not mapped with the rights the region needs"
                )
            }
            MappingError::Overflow => write!(f, "the range wraps around the address space"),
            MappingError::Unreadable(e) => write!(f, "cannot read /proc/self/maps: {e}"),
        }
    }
}

/// The machine's physical memory in bytes (0 when unknown).
pub fn physical_memory() -> u64 {
    // SAFETY: sysconf only reads configuration values.
    let (pages, size) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    u64::try_from(pages)
        .unwrap_or(0)
        .saturating_mul(u64::try_from(size).unwrap_or(0))
}

/// Checks that `addr..addr + len` may be registered: at most the machine's memory, and every
/// byte mapped readable (and writable when `write`).
pub fn check(addr: u64, len: u64, write: bool) -> Result<(), MappingError> {
    let memory = physical_memory();
    if memory > 0 && len > memory {
        return Err(MappingError::TooLarge { len, memory });
    }
    let end = addr.checked_add(len).ok_or(MappingError::Overflow)?;
    if len == 0 {
        return Ok(());
    }
    let maps = std::fs::read_to_string("/proc/self/maps")
        .map_err(|e| MappingError::Unreadable(e.to_string()))?;
    covered(&maps, addr, end, write)
}

/// Whether the mappings listed in `maps` (the `/proc/PID/maps` format, sorted by address)
/// cover `start..end` without a gap, readable and (when `write`) writable.
fn covered(maps: &str, start: u64, end: u64, write: bool) -> Result<(), MappingError> {
    let mut at = start;
    for line in maps.lines() {
        let Some((lo, hi, perms)) = parse_line(line) else {
            continue;
        };
        if hi <= at {
            continue;
        }
        let usable = perms.starts_with('r') && (!write || perms.get(1..2) == Some("w"));
        if lo > at || !usable {
            break;
        }
        at = hi;
        if at >= end {
            return Ok(());
        }
    }
    Err(MappingError::NotMapped { at })
}

/// `start-end perms ...` of one line.
fn parse_line(line: &str) -> Option<(u64, u64, &str)> {
    let mut fields = line.split_ascii_whitespace();
    let (lo, hi) = fields.next()?.split_once('-')?;
    let perms = fields.next()?;
    Some((
        u64::from_str_radix(lo, 16).ok()?,
        u64::from_str_radix(hi, 16).ok()?,
        perms,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAPS: &str = "\
00400000-00452000 r-xp 00000000 08:02 173521 /usr/bin/prog
00651000-00652000 rw-p 00051000 08:02 173521 /usr/bin/prog
00652000-00655000 rw-p 00000000 00:00 0 [heap]
7f0000000000-7f0000001000 ---p 00000000 00:00 0
7f0000001000-7f0000003000 rw-p 00000000 00:00 0
";

    #[test]
    fn a_range_must_be_mapped_without_gaps_and_with_the_rights_it_needs() {
        // Across two adjacent writable mappings.
        assert_eq!(covered(MAPS, 0x651800, 0x654000, true), Ok(()));
        // Read-only code: readable, not writable.
        assert_eq!(covered(MAPS, 0x400000, 0x401000, false), Ok(()));
        assert_eq!(
            covered(MAPS, 0x400000, 0x401000, true),
            Err(MappingError::NotMapped { at: 0x400000 })
        );
        // A gap between the code and the data.
        assert_eq!(
            covered(MAPS, 0x451000, 0x651800, false),
            Err(MappingError::NotMapped { at: 0x452000 })
        );
        // A guard page (no rights) before a writable mapping.
        assert_eq!(
            covered(MAPS, 0x7f00_0000_0800, 0x7f00_0000_2000, false),
            Err(MappingError::NotMapped {
                at: 0x7f00_0000_0800
            })
        );
        // Past the last mapping, and nowhere at all.
        assert_eq!(
            covered(MAPS, 0x7f00_0000_2000, 0x7f00_0000_4000, false),
            Err(MappingError::NotMapped {
                at: 0x7f00_0000_3000
            })
        );
        assert_eq!(
            covered(MAPS, 0x1000, 0x2000, false),
            Err(MappingError::NotMapped { at: 0x1000 })
        );
    }

    #[test]
    fn this_processs_own_memory_checks_as_the_kernel_would() {
        let buf = vec![7u8; 1 << 20];
        let addr = buf.as_ptr() as u64;
        assert_eq!(check(addr, buf.len() as u64, true), Ok(()));
        assert!(matches!(
            check(0x1000, 4096, false),
            Err(MappingError::NotMapped { .. })
        ));
        assert!(matches!(
            check(addr, 1 << 44, true),
            Err(MappingError::TooLarge { .. })
        ));
        assert_eq!(check(u64::MAX - 8, 64, false), Err(MappingError::Overflow));
        // Code is readable, not writable.
        let code = check as *const () as u64;
        assert_eq!(check(code, 16, false), Ok(()));
        assert!(matches!(
            check(code, 16, true),
            Err(MappingError::NotMapped { .. })
        ));
    }
}
