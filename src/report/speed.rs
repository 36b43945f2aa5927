//! How fast a simulation ran, in OMNeT++'s terms: events per wall second (ev/sec), virtual
//! seconds per wall second (simsec/sec), events per virtual second (ev/simsec), the
//! process's peak memory and CPU time, and how much of the machine a hypervisor took meanwhile.
//!
//! Not here: counting events (the fabric does) or the progress line (`cli::sim`).

use std::time::Duration;

use serde::Serialize;

/// The speed of one run.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct RunSpeed {
    /// Events handled.
    pub events: u64,
    /// Events of the model the run had no need to handle (a switch port's end of frame with
    /// nothing queued behind it); the summary's `events` counts them, `events` here does not.
    pub events_elided: u64,
    /// Samples of the time series taken at once because nothing was left to happen (the
    /// summary's `events` counts them, `events` here does not).
    pub idle_samples: u64,
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
    /// The CPU time the run took and what a hypervisor took meanwhile.
    #[serde(flatten)]
    pub cpu: CpuUse,
    /// What the run's flows held: QPs made, retired and live at most, pooled CQs, and the
    /// bytes a live and a finished flow take (RC engine runs only).
    pub flows: Option<roce_fabric::engines::FlowFootprint>,
}

/// CPU time during a run, where the OS says.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct CpuUse {
    /// CPU seconds (user + system, all threads) the process spent in the run.
    pub cpu_s: Option<f64>,
    /// The share of all CPUs' time a hypervisor gave to other guests during the run (`steal` of
    /// /proc/stat). Above [`STEAL_WARN`], wall-clock figures say more about the host than about
    /// the simulator.
    pub host_steal_share: Option<f64>,
}

/// The steal share above which [`RunSpeed::line`] warns.
pub const STEAL_WARN: f64 = 0.05;

/// CPU clocks read when a run starts, for [`RunSpeed::new`].
#[derive(Clone, Copy, Debug)]
pub struct RunStart {
    wall: std::time::Instant,
    cpu: Option<f64>,
    host: Option<HostTicks>,
}

impl RunStart {
    /// Reads the clocks now.
    pub fn now() -> Self {
        RunStart {
            wall: std::time::Instant::now(),
            cpu: process_cpu_s(),
            host: host_ticks(),
        }
    }

    /// Wall time since the start.
    pub fn elapsed(&self) -> Duration {
        self.wall.elapsed()
    }
}

impl RunSpeed {
    /// The figures of `events` over `virtual_s` virtual seconds since `start` (ratios are 0
    /// for a zero divisor), with the peak memory and the CPU clocks read now.
    pub fn new(events: u64, virtual_s: f64, start: &RunStart) -> Self {
        let mut s = Self::of_wall(events, virtual_s, start.elapsed());
        s.cpu.cpu_s = start.cpu.zip(process_cpu_s()).map(|(a, b)| b - a);
        s.cpu.host_steal_share = start
            .host
            .zip(host_ticks())
            .and_then(|(a, b)| b.steal_share_since(&a));
        s
    }

    /// The figures of `events` over `virtual_s` virtual seconds in `wall`, with the peak memory
    /// read now and no CPU clocks.
    fn of_wall(events: u64, virtual_s: f64, wall: Duration) -> Self {
        let wall_s = wall.as_secs_f64();
        let per = |x: f64, d: f64| if d > 0.0 { x / d } else { 0.0 };
        RunSpeed {
            events,
            events_elided: 0,
            idle_samples: 0,
            wall_s,
            virtual_s,
            events_per_sec: per(events as f64, wall_s),
            simsec_per_sec: per(virtual_s, wall_s),
            events_per_simsec: per(events as f64, virtual_s),
            peak_rss_bytes: peak_rss_bytes(),
            cpu: CpuUse::default(),
            flows: None,
        }
    }

    /// One line: `speed: 6.68 M events in 8.0 s wall: 0.84 M ev/s, ...`.
    pub fn line(&self) -> String {
        let rss = self.peak_rss_bytes.map_or_else(
            || "unknown".to_owned(),
            |b| format!("{:.0} MB", b as f64 / 1e6),
        );
        let cpu = self
            .cpu
            .cpu_s
            .map_or_else(String::new, |c| format!(", {c:.2} CPU s"));
        let steal = match self.cpu.host_steal_share {
            Some(share) if share > STEAL_WARN => format!(
                "\nwarning: the hypervisor took {:.0}% of the CPUs' time during the run; wall-clock figures are not comparable\n",
                share * 100.0
            ),
            _ => "\n".to_owned(),
        };
        let mut elided = match self.events_elided {
            0 => String::new(),
            n => format!("; {n} idle-port events elided"),
        };
        if self.idle_samples > 0 {
            elided.push_str(&format!(
                "; {} idle samples taken at once",
                self.idle_samples
            ));
        }
        if let Some(f) = &self.flows {
            elided.push_str(&format!("; {}", f.line()));
        }
        format!(
            "speed: {} events in {:.2} s wall{cpu}: {:.3} M ev/s, {:.3e} simsec/s, {:.3e} ev/simsec; peak memory {rss}{elided}{steal}",
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

/// The process's CPU time so far (utime + stime of /proc/self/stat), seconds.
fn process_cpu_s() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    cpu_ticks(&stat).map(|t| t as f64 / USER_HZ)
}

/// Linux reports process and CPU times in ticks of 1/100 s to user space on every
/// architecture (`USER_HZ`, fixed by the ABI whatever the kernel's own HZ).
const USER_HZ: f64 = 100.0;

/// utime + stime of a /proc/PID/stat text, ticks. The command name (field 2) may hold spaces
/// and parentheses, so fields are counted after its closing parenthesis.
fn cpu_ticks(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace().skip(11);
    let utime = fields.next()?.parse::<u64>().ok()?;
    let stime = fields.next()?.parse::<u64>().ok()?;
    Some(utime + stime)
}

/// The machine's CPU time so far, from the `cpu` line of /proc/stat.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct HostTicks {
    total: u64,
    steal: u64,
}

impl HostTicks {
    /// The share of the ticks since `earlier` that were stolen (`None` when none passed).
    fn steal_share_since(&self, earlier: &HostTicks) -> Option<f64> {
        let total = self.total.checked_sub(earlier.total).filter(|&t| t > 0)?;
        let steal = self.steal.saturating_sub(earlier.steal);
        Some(steal as f64 / total as f64)
    }
}

fn host_ticks() -> Option<HostTicks> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    parse_host_ticks(stat.lines().next()?)
}

/// `cpu  user nice system idle iowait irq softirq steal guest guest_nice`: the total counts
/// the first eight (guest time is already inside user and nice).
fn parse_host_ticks(line: &str) -> Option<HostTicks> {
    let mut fields = line.strip_prefix("cpu ")?.split_whitespace();
    let ticks: Vec<u64> = fields
        .by_ref()
        .take(8)
        .map(|f| f.parse().ok())
        .collect::<Option<_>>()?;
    let steal = *ticks.get(7)?;
    Some(HostTicks {
        total: ticks.iter().sum(),
        steal,
    })
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
        let s = RunSpeed::of_wall(3_000_000, 0.002, Duration::from_millis(1500));
        assert_eq!(s.events_per_sec, 2_000_000.0);
        assert!((s.simsec_per_sec - 0.002 / 1.5).abs() < 1e-15);
        assert_eq!(s.events_per_simsec, 1.5e9);
        let zero = RunSpeed::of_wall(5, 0.0, Duration::ZERO);
        assert_eq!((zero.events_per_sec, zero.events_per_simsec), (0.0, 0.0));
    }

    #[test]
    fn peak_memory_is_read_from_vm_hwm() {
        let status = "Name:\troce\nVmPeak:\t  9000 kB\nVmHWM:\t    3312 kB\nVmRSS:\t 100 kB\n";
        assert_eq!(vm_hwm_bytes(status), Some(3312 * 1024));
        assert_eq!(vm_hwm_bytes("VmRSS:\t1 kB\n"), None);
    }

    #[test]
    fn cpu_time_is_utime_plus_stime_after_the_command_name() {
        // Fields 14 and 15 (utime 250, stime 17); the name holds a space and a parenthesis.
        let stat = "4242 (roce (x) y) R 1 2 3 4 5 6 7 8 9 10 250 17 0 0 20 0 3 0 99";
        assert_eq!(cpu_ticks(stat), Some(267));
        assert_eq!(cpu_ticks("4242 (roce) R 1 2"), None);
    }

    #[test]
    fn steal_share_is_steal_over_all_ticks_between_two_readings() {
        let a = parse_host_ticks("cpu  100 0 50 800 10 0 0 40 0 0").unwrap();
        let b = parse_host_ticks("cpu  300 0 70 900 10 0 0 120 5 0").unwrap();
        assert_eq!(
            a,
            HostTicks {
                total: 1000,
                steal: 40
            }
        );
        // 400 ticks passed, 80 of them stolen.
        assert_eq!(b.steal_share_since(&a), Some(0.2));
        assert_eq!(a.steal_share_since(&a), None);
        assert_eq!(parse_host_ticks("cpu0 1 2 3 4 5 6 7 8"), None);
    }

    #[test]
    fn the_line_warns_when_the_hypervisor_took_the_cpus() {
        let mut s = RunSpeed::of_wall(10, 0.001, Duration::from_secs(1));
        s.cpu.cpu_s = Some(1.5);
        assert!(s.line().contains(", 1.50 CPU s:"));
        assert!(!s.line().contains("warning"));
        s.cpu.host_steal_share = Some(0.31);
        assert!(s
            .line()
            .contains("warning: the hypervisor took 31% of the CPUs' time"));
    }
}
