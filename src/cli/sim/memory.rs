//! How much memory a simulation may take here: the machine's (`MemTotal` in /proc/meminfo),
//! or less when the process runs under an address-space limit (`ulimit -v`, `prlimit --as`).
//! The simulator library knows no machine; the CLI hands it this figure (see
//! `roce_fabric::limits::bounds::Limits`).

/// The memory a run may take, bytes (`None` where neither figure can be read).
pub fn available() -> Option<u64> {
    let total = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| mem_total(&t));
    let limit = std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|t| address_space_limit(&t));
    match (total, limit) {
        (Some(t), Some(l)) => Some(t.min(l)),
        (t, l) => t.or(l),
    }
}

/// `MemTotal:       24000000 kB` in bytes.
fn mem_total(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let mut f = line.split_whitespace().skip(1);
    let kb: u64 = f.next()?.parse().ok()?;
    (f.next() == Some("kB")).then(|| kb.saturating_mul(1024))
}

/// The soft `Max address space` of /proc/self/limits, bytes (`None` when unlimited).
fn address_space_limit(limits: &str) -> Option<u64> {
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max address space"))?;
    line.trim_start_matches("Max address space")
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_mem_total_and_the_address_space_limit() {
        let meminfo = "MemTotal:       24557712 kB\nMemFree:        23000000 kB\n";
        assert_eq!(mem_total(meminfo), Some(24_557_712 * 1024));
        assert_eq!(mem_total("MemFree: 1 kB\n"), None);
        let limits = "Limit                     Soft Limit           Hard Limit           Units     \n\
                      Max stack size            8388608              unlimited            bytes     \n\
                      Max address space         2000000000           unlimited            bytes     \n";
        assert_eq!(address_space_limit(limits), Some(2_000_000_000));
        let unlimited =
            "Max address space         unlimited            unlimited            bytes\n";
        assert_eq!(address_space_limit(unlimited), None);
        assert!(available().is_some_and(|m| m > 0));
    }
}
