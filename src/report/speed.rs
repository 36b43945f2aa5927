//! How fast a simulation ran, in OMNeT++'s terms: events per wall second (ev/sec), virtual
//! seconds per wall second (simsec/sec), events per virtual second (ev/simsec), and the
//! process's peak memory.
//!
//! Not here: counting events (the fabric does) or the progress line (`cli::sim`).

use std::time::Duration;

use serde::Serialize;

/// The speed of one run.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct RunSpeed {
    /// Events processed.
    pub events: u64,
    /// Wall-clock seconds the run took.
    pub wall_s: f64,
    /// Virtual seconds simulated.
    pub virtual_s: f64,
    /// Events per wall second.
    pub events_per_sec: f64,
    /// Virtual seconds per wall second.
    pub simsec_per_sec: f64,
    /// Events per virtual second.
    pub events_per_simsec: f64,
    /// The process's peak resident memory (VmHWM), bytes, where the OS says.
    pub peak_rss_bytes: Option<u64>,
}

impl RunSpeed {
    /// The figures of `events` over `virtual_s` virtual seconds in `wall` (ratios are 0 for a
    /// zero divisor), with the peak memory read now.
    pub fn new(events: u64, virtual_s: f64, wall: Duration) -> Self {
        let wall_s = wall.as_secs_f64();
        let per = |x: f64, d: f64| if d > 0.0 { x / d } else { 0.0 };
        RunSpeed {
            events,
            wall_s,
            virtual_s,
            events_per_sec: per(events as f64, wall_s),
            simsec_per_sec: per(virtual_s, wall_s),
            events_per_simsec: per(events as f64, virtual_s),
            peak_rss_bytes: peak_rss_bytes(),
        }
    }

    /// One line: `speed: 6.68 M events in 8.0 s wall: 0.84 M ev/s, ...`.
    pub fn line(&self) -> String {
        let rss = self.peak_rss_bytes.map_or_else(
            || "unknown".to_owned(),
            |b| format!("{:.0} MB", b as f64 / 1e6),
        );
        format!(
            "speed: {} events in {:.2} s wall: {:.3} M ev/s, {:.3e} simsec/s, {:.3e} ev/simsec; peak memory {rss}\n",
            self.events,
            self.wall_s,
            self.events_per_sec / 1e6,
            self.simsec_per_sec,
            self.events_per_simsec,
        )
    }
}

/// The process's peak resident set (`VmHWM` of /proc/self/status), bytes.
pub fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    vm_hwm_bytes(&status)
}

/// `VmHWM` of a /proc/PID/status text, bytes.
fn vm_hwm_bytes(status: &str) -> Option<u64> {
    let line = status.lines().find_map(|l| l.strip_prefix("VmHWM:"))?;
    let kb = line.trim().strip_suffix("kB")?.trim().parse::<u64>().ok()?;
    Some(kb * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios_follow_from_events_virtual_and_wall_time() {
        let s = RunSpeed::new(3_000_000, 0.002, Duration::from_millis(1500));
        assert_eq!(s.events_per_sec, 2_000_000.0);
        assert!((s.simsec_per_sec - 0.002 / 1.5).abs() < 1e-15);
        assert_eq!(s.events_per_simsec, 1.5e9);
        let zero = RunSpeed::new(5, 0.0, Duration::ZERO);
        assert_eq!((zero.events_per_sec, zero.events_per_simsec), (0.0, 0.0));
    }

    #[test]
    fn peak_memory_is_read_from_vm_hwm() {
        let status = "Name:\troce\nVmPeak:\t  9000 kB\nVmHWM:\t    3312 kB\nVmRSS:\t 100 kB\n";
        assert_eq!(vm_hwm_bytes(status), Some(3312 * 1024));
        assert_eq!(vm_hwm_bytes("VmRSS:\t1 kB\n"), None);
    }
}
