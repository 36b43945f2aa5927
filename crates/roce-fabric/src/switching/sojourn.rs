//! How long packets waited in an egress queue (their sojourn time, enqueue to dequeue): a
//! log-linear histogram, eight sub-buckets per power of two of nanoseconds (each within 12.5 %
//! of its value), fixed size and allocation-free once made, with its percentiles. The CNP delay
//! (a CE mark to the reaction point) is counted in the same histogram.

use serde::Serialize;

use roce_proto::time::Duration;

/// Sub-buckets per power of two (3 bits).
const SUB_BITS: u32 = 3;
const SUB: usize = 1 << SUB_BITS;
/// Powers of two covered: up to 2^40 ns (18 minutes) and the overflow bucket above.
const POWERS: usize = 41;
const BUCKETS: usize = POWERS * SUB;

/// Sojourn times of one queue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sojourn {
    /// Packets per bucket (saturating: 4 billion in one bucket is more than a run holds).
    counts: Box<[u32; BUCKETS]>,
    packets: u64,
    total_ns: u128,
    max: Duration,
}

impl Default for Sojourn {
    fn default() -> Self {
        Sojourn {
            counts: Box::new([0; BUCKETS]),
            packets: 0,
            total_ns: 0,
            max: Duration::ZERO,
        }
    }
}

/// The bucket of `ns`: below 8 ns one per value, then 8 per power of two.
fn bucket(ns: u64) -> usize {
    if ns < SUB as u64 {
        return ns as usize;
    }
    let power = 63 - ns.leading_zeros(); // >= SUB_BITS
    let sub = (ns >> (power - SUB_BITS)) as usize & (SUB - 1);
    ((power - SUB_BITS + 1) as usize * SUB + sub).min(BUCKETS - 1)
}

/// The smallest value of bucket `i`, ns.
fn bucket_low(i: usize) -> u64 {
    if i < SUB {
        return i as u64;
    }
    let power = (i / SUB) as u32 + SUB_BITS - 1;
    (1u64 << power) + ((i % SUB) as u64) * (1u64 << (power - SUB_BITS))
}

impl Sojourn {
    /// Counts one packet that waited `d`.
    pub fn record(&mut self, d: Duration) {
        let ns = d.as_nanos();
        if let Some(c) = self.counts.get_mut(bucket(ns)) {
            *c = c.saturating_add(1);
        }
        self.packets += 1;
        self.total_ns += u128::from(ns);
        self.max = self.max.max(d);
    }

    /// Adds `other`'s counts into `self`.
    pub fn merge(&mut self, other: &Sojourn) {
        for (c, o) in self.counts.iter_mut().zip(other.counts.iter()) {
            *c = c.saturating_add(*o);
        }
        self.packets += other.packets;
        self.total_ns += other.total_ns;
        self.max = self.max.max(other.max);
    }

    /// Packets counted.
    pub fn packets(&self) -> u64 {
        self.packets
    }

    /// The longest wait.
    pub fn max(&self) -> Duration {
        self.max
    }

    /// The mean wait (zero without packets).
    pub fn mean(&self) -> Duration {
        let n = u128::from(self.packets.max(1));
        Duration::from_nanos(u64::try_from(self.total_ns / n).unwrap_or(u64::MAX))
    }

    /// The `p` quantile (0..=1): the low end of the bucket holding it, within 12.5 % below the
    /// true value, and never above the maximum.
    pub fn quantile(&self, p: f64) -> Duration {
        if self.packets == 0 {
            return Duration::ZERO;
        }
        let rank = ((self.packets as f64 * p.clamp(0.0, 1.0)).ceil() as u64).clamp(1, self.packets);
        let mut seen = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += u64::from(c);
            if seen >= rank {
                return Duration::from_nanos(bucket_low(i)).min(self.max);
            }
        }
        self.max
    }

    /// The non-empty buckets: (low µs, high µs, packets).
    pub fn buckets(&self) -> Vec<SojournBucket> {
        self.counts
            .iter()
            .enumerate()
            .filter(|(_, &c)| c > 0)
            .map(|(i, &c)| SojournBucket {
                from_us: bucket_low(i) as f64 / 1e3,
                to_us: bucket_low(i + 1) as f64 / 1e3,
                packets: u64::from(c),
            })
            .collect()
    }
}

/// What a [`Sojourn`] histogram says, in µs: how many waits, their mean, median, 99th
/// percentile and maximum, and the non-empty buckets.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct DelayStats {
    /// Waits counted (packets, or CNPs).
    pub packets: u64,
    /// Mean wait, µs.
    pub mean_us: f64,
    /// Median wait, µs (the low end of its histogram bucket: at most 12.5 % below).
    pub p50_us: f64,
    /// 99th percentile, µs (the same).
    pub p99_us: f64,
    /// Longest wait, µs.
    pub max_us: f64,
    /// The non-empty buckets of the histogram.
    pub histogram: Vec<SojournBucket>,
}

impl Sojourn {
    /// The figures of the histogram.
    pub fn stats(&self) -> DelayStats {
        DelayStats {
            packets: self.packets(),
            mean_us: self.mean().as_micros_f64(),
            p50_us: self.quantile(0.5).as_micros_f64(),
            p99_us: self.quantile(0.99).as_micros_f64(),
            max_us: self.max().as_micros_f64(),
            histogram: self.buckets(),
        }
    }
}

/// One bucket of a [`Sojourn`] histogram: packets that waited at least `from_us` and less than
/// `to_us`.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct SojournBucket {
    /// Low end, µs.
    pub from_us: f64,
    /// High end, µs.
    pub to_us: f64,
    /// Packets.
    pub packets: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_contiguous_and_within_an_eighth() {
        for i in 0..BUCKETS - 1 {
            let (lo, hi) = (bucket_low(i), bucket_low(i + 1));
            assert!(hi > lo, "{i}");
            assert_eq!(bucket(lo), i);
            assert_eq!(bucket(hi - 1), i);
            if lo >= SUB as u64 {
                assert!((hi - lo) * 8 <= lo, "bucket {i}: {lo}..{hi}");
            }
        }
    }

    #[test]
    fn quantiles_of_known_waits() {
        let mut s = Sojourn::default();
        for us in 1..=100u64 {
            s.record(Duration::from_micros(us));
        }
        assert_eq!(s.packets(), 100);
        assert_eq!(s.max(), Duration::from_micros(100));
        assert_eq!(s.mean(), Duration::from_nanos(50_500));
        for (p, want_us) in [(0.5, 50.0), (0.99, 99.0), (1.0, 100.0)] {
            let got = s.quantile(p).as_micros_f64();
            assert!(got <= want_us && got >= want_us * 0.875, "p{p}: {got}");
        }
        let b = s.buckets();
        assert_eq!(b.iter().map(|b| b.packets).sum::<u64>(), 100);
        // Two halves merged are the whole.
        let (mut low, mut high) = (Sojourn::default(), Sojourn::default());
        for us in 1..=100u64 {
            let half = if us <= 50 { &mut low } else { &mut high };
            half.record(Duration::from_micros(us));
        }
        low.merge(&high);
        assert_eq!(low, s);
        assert_eq!(Sojourn::default().quantile(0.5), Duration::ZERO);
    }
}
