//! An earliest-departure-time pacer (a token bucket in time form): turns a controller's rate into
//! the instant each packet may leave. It keeps the ideal schedule with sub-nanosecond precision,
//! so no drift accrues at any rate from 1 bit/s to 400 Gbit/s and beyond. It does not queue or
//! send anything: the scheduler asks [`Pacer::earliest_departure`] and reports [`Pacer::on_sent`].
//!
//! The schedule is "virtual finish time of everything sent so far", stored as whole nanoseconds
//! plus a remainder in units of 1/rate ns; a packet of `len` bytes adds exactly
//! `len·8·10^9 / rate` ns, quotient and remainder in integer arithmetic. A burst allowance lets up
//! to `burst_bytes` leave back to back after an idle period; idle time beyond it is forgotten.

use super::Rate;
use crate::time::Instant;

const NS_PER_S: u64 = 1_000_000_000;

/// Paces one flow at a [`Rate`].
#[derive(Clone, Debug)]
pub struct Pacer {
    rate: u64,
    burst_bytes: u64,
    /// The burst allowance as time at the current rate (ns, rounded down).
    burst_ns: u64,
    /// Whole nanoseconds of the ideal next departure.
    next_ns: u64,
    /// Fraction of a nanosecond of the ideal next departure, in units of 1/rate ns (< rate).
    frac: u64,
    /// Cached cost of the last length seen: (len, whole ns, remainder).
    cost: (u64, u64, u64),
}

impl Pacer {
    /// A pacer at `rate`. After an idle period `burst_bytes` of credit (and the packet that
    /// spends the last of it) may leave back to back; 0 gives strict spacing.
    pub fn new(rate: Rate, burst_bytes: u64) -> Self {
        let mut p = Pacer {
            rate: rate.as_bps(),
            burst_bytes,
            burst_ns: 0,
            next_ns: 0,
            frac: 0,
            cost: (u64::MAX, 0, 0),
        };
        p.burst_ns = p.span(burst_bytes).0;
        p
    }

    /// The rate in force for packets after the next departure.
    pub fn rate(&self) -> Rate {
        Rate::from_bps(self.rate)
    }

    /// The burst allowance in bytes.
    pub fn burst_bytes(&self) -> u64 {
        self.burst_bytes
    }

    /// `len` bytes at the current rate, as (whole ns, remainder in 1/rate ns).
    #[inline]
    fn span(&self, len: u64) -> (u64, u64) {
        if self.rate == 0 {
            return (0, 0);
        }
        match len.checked_mul(8 * NS_PER_S) {
            Some(bits_ns) => (bits_ns / self.rate, bits_ns % self.rate),
            None => {
                let bits_ns = u128::from(len) * u128::from(8 * NS_PER_S);
                let rate = u128::from(self.rate);
                (
                    u64::try_from(bits_ns / rate).unwrap_or(u64::MAX),
                    u64::try_from(bits_ns % rate).unwrap_or(0),
                )
            }
        }
    }

    /// The earliest instant a packet of `len` bytes may leave (never before `now`). A paused
    /// pacer (rate zero) answers [`Instant::FAR_FUTURE`].
    #[inline]
    #[must_use]
    pub fn earliest_departure(&self, now: Instant, len: u64) -> Instant {
        let _ = len; // departure depends on what was sent before; `len` is charged in on_sent
        if self.rate == 0 {
            return Instant::FAR_FUTURE;
        }
        let ideal = self.next_ns + u64::from(self.frac > 0);
        Instant::from_nanos(ideal).max(now)
    }

    /// Whether a packet of `len` bytes may leave at `now`.
    #[inline]
    #[must_use]
    pub fn can_send(&self, now: Instant, len: u64) -> bool {
        self.earliest_departure(now, len) <= now
    }

    /// A packet of `len` bytes left at `now`.
    #[inline]
    pub fn on_sent(&mut self, now: Instant, len: u64) {
        let floor = now.as_nanos().saturating_sub(self.burst_ns);
        if self.next_ns + u64::from(self.frac > 0) < floor {
            // Idle longer than the burst allowance: the unused credit is gone.
            self.next_ns = floor;
            self.frac = 0;
        }
        let (q, r) = if self.cost.0 == len {
            (self.cost.1, self.cost.2)
        } else {
            let (q, r) = self.span(len);
            self.cost = (len, q, r);
            (q, r)
        };
        self.next_ns = self.next_ns.saturating_add(q);
        self.frac += r;
        if self.frac >= self.rate && self.rate > 0 {
            self.frac -= self.rate;
            self.next_ns = self.next_ns.saturating_add(1);
        }
    }

    /// Changes the rate. The next departure keeps the time the old rate gave it; packets after it
    /// are spaced at the new rate.
    #[inline]
    pub fn set_rate(&mut self, now: Instant, rate: Rate) {
        let new = rate.as_bps();
        if new != self.rate {
            self.change_rate(now, new);
        }
    }

    /// Changes the rate as a NIC's rate limiter does: the wait still owed for what was sent
    /// drains at the new rate (a cut delays the next departure, a recovery brings it closer),
    /// so a packet held at a collapsed rate does not wait on after the rate recovered. Packets
    /// after it are spaced at the new rate, as with [`Pacer::set_rate`].
    pub fn set_rate_draining(&mut self, now: Instant, rate: Rate) {
        let (old, new, now_ns) = (self.rate, rate.as_bps(), now.as_nanos());
        if old > 0 && new > 0 && new != old && self.next_ns > now_ns {
            let owed = u128::from(self.next_ns - now_ns) * u128::from(old) / u128::from(new);
            self.next_ns = now_ns.saturating_add(u64::try_from(owed).unwrap_or(u64::MAX));
        }
        self.set_rate(now, rate);
    }

    /// [`Pacer::set_rate`] to a different rate (kept out of line: it is rare, the check is per
    /// packet).
    #[cold]
    fn change_rate(&mut self, now: Instant, new: u64) {
        if self.rate == 0 {
            // Resuming from a pause: the schedule restarts now.
            self.next_ns = self.next_ns.max(now.as_nanos());
        }
        self.frac = if self.rate == 0 || new == 0 {
            0
        } else {
            // The sub-nanosecond remainder only needs to stay below one new unit; f64 keeps this
            // off the u128 division path.
            let scaled = self.frac as f64 * (new as f64 / self.rate as f64);
            (scaled as u64).min(new - 1)
        };
        self.rate = new;
        self.cost = (u64::MAX, 0, 0);
        if self.burst_bytes > 0 {
            self.burst_ns = self.span(self.burst_bytes).0;
        }
    }
}
