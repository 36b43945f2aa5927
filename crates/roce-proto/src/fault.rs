//! Fault injection as port middleware: wraps any [`Port`] and, on transmit, drops, duplicates,
//! holds back (reorders) or corrupts frames at configured fractions, from a seeded RNG so every
//! run can be replayed from its seed.
//!
//! It changes only what leaves through the wrapped port; wrap both ends for both directions.
//! Frames the wrapped port itself refuses (its queue is full) are dropped here and counted as
//! [`FaultCounters::refused`], never reported sent: after duplication and reordering they no
//! longer match the caller's burst, so they cannot be handed back for a retry.

use std::collections::VecDeque;

use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64;
use serde::Serialize;

use crate::port::{FrameBuf, Port};

/// Fractions (each in `[0, 1)`, see [`FaultConfig::check`]) of transmitted frames each fault
/// hits.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FaultConfig {
    /// Dropped.
    pub loss: f64,
    /// Sent twice.
    pub duplicate: f64,
    /// Held back behind 1-4 later frames.
    pub reorder: f64,
    /// One byte flipped.
    pub corrupt: f64,
}

/// A fault fraction outside `[0, 1)` (NaN included), named by its command-line knob.
#[derive(Clone, Copy, Debug, PartialEq, thiserror::Error)]
#[error("--{knob} {value} must be in [0, 1)")]
pub struct BadFraction {
    /// `loss`, `dup`, `reorder` or `corrupt`.
    pub knob: &'static str,
    /// The value given.
    pub value: f64,
}

impl FaultConfig {
    /// Checks every fraction is in `[0, 1)`: a link that loses, duplicates, reorders or corrupts
    /// every frame carries nothing a transport could finish on. The one rule every command with
    /// fault knobs applies.
    pub fn check(&self) -> Result<(), BadFraction> {
        for (knob, value) in [
            ("loss", self.loss),
            ("dup", self.duplicate),
            ("reorder", self.reorder),
            ("corrupt", self.corrupt),
        ] {
            if !(0.0..1.0).contains(&value) {
                return Err(BadFraction { knob, value });
            }
        }
        Ok(())
    }
}

/// What the injector did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FaultCounters {
    /// Frames seen.
    pub frames: u64,
    /// Frames dropped.
    pub dropped: u64,
    /// Extra copies sent.
    pub duplicated: u64,
    /// Frames held back.
    pub reordered: u64,
    /// Frames with a flipped byte.
    pub corrupted: u64,
    /// Frames the wrapped port refused (dropped here, not reported sent).
    pub refused: u64,
}

/// What the injector did to one transmitted frame (see [`FaultPort::record_fates`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FrameFate {
    /// Dropped (nothing else happened to it).
    pub dropped: bool,
    /// One bit flipped: the receiver sees a bad ICRC.
    pub corrupted: bool,
    /// Sent twice.
    pub duplicated: bool,
    /// Held back behind this many later frames (reordered).
    pub held_behind: Option<u32>,
}

impl FrameFate {
    /// Whether the frame left untouched.
    pub fn is_clean(&self) -> bool {
        *self == FrameFate::default()
    }
}

impl std::fmt::Display for FrameFate {
    /// One phrase, as a capture comment shows it (`"fault: dropped"`, `"fault: duplicated,
    /// held behind 2 later frames"`); empty for a clean frame.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut parts = Vec::new();
        if self.dropped {
            parts.push("dropped".to_string());
        }
        if self.corrupted {
            parts.push("corrupted (one bit flipped, bad ICRC at the receiver)".to_string());
        }
        if self.duplicated {
            parts.push("duplicated".to_string());
        }
        if let Some(n) = self.held_behind {
            parts.push(format!("reordered (held behind {n} later frames)"));
        }
        if !parts.is_empty() {
            write!(f, "fault: {}", parts.join(", "))?;
        }
        Ok(())
    }
}

/// A port that misbehaves on purpose.
#[derive(Debug)]
pub struct FaultPort<P: Port> {
    inner: P,
    cfg: FaultConfig,
    rng: Pcg64,
    held: VecDeque<(P::Buf, u32)>,
    out: Vec<P::Buf>,
    counters: FaultCounters,
    /// Per-frame fates in transmit order, kept only when a capture asks for them.
    fates: Option<Vec<FrameFate>>,
}

impl<P: Port> FaultPort<P> {
    /// Wraps `inner`; `seed` fixes every decision.
    pub fn new(inner: P, cfg: FaultConfig, seed: u64) -> Self {
        FaultPort {
            inner,
            cfg,
            rng: Pcg64::seed_from_u64(seed),
            held: VecDeque::new(),
            out: Vec::new(),
            counters: FaultCounters::default(),
            fates: None,
        }
    }

    /// Starts keeping what happened to each transmitted frame, in transmit order, for
    /// [`take_fates`](Self::take_fates) (a capture annotates its frames with them). Off by
    /// default: the data path then records nothing.
    pub fn record_fates(&mut self) {
        self.fates.get_or_insert_with(Vec::new);
    }

    /// The fates recorded since the last call, one per frame handed to `tx_burst`, in order.
    pub fn take_fates(&mut self) -> Vec<FrameFate> {
        self.fates.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// What the injector did so far.
    pub fn counters(&self) -> FaultCounters {
        self.counters
    }

    /// The wrapped port.
    pub fn inner(&self) -> &P {
        &self.inner
    }

    fn note(&mut self, fate: FrameFate) {
        if let Some(fates) = self.fates.as_mut() {
            fates.push(fate);
        }
    }

    fn hit(&mut self, p: f64) -> bool {
        p > 0.0 && self.rng.random_bool(p.min(1.0))
    }

    /// Counts down held frames and sends those whose turn has come; returns how many frames
    /// the wrapped port refused (dropped and counted).
    fn release_held(&mut self) -> usize {
        for (_, n) in self.held.iter_mut() {
            *n = n.saturating_sub(1);
        }
        while self.held.front().is_some_and(|(_, n)| *n == 0) {
            if let Some((buf, _)) = self.held.pop_front() {
                self.out.push(buf);
            }
        }
        if self.out.is_empty() {
            return 0;
        }
        self.inner.tx_burst(&mut self.out);
        let refused = self.out.len();
        self.counters.refused += refused as u64;
        self.out.clear();
        refused
    }
}

impl<P: Port> Port for FaultPort<P> {
    type Buf = P::Buf;
    crate::port_caps_and_pool_of!(inner);

    fn rx_burst(&mut self, out: &mut Vec<P::Buf>, max: usize) -> usize {
        let _refused = self.release_held();
        self.inner.rx_burst(out, max)
    }

    /// Takes every frame of `bufs`; returns how many of them left, less those the wrapped port
    /// refused (a refused copy or held-back frame counts against the burst it left with).
    fn tx_burst(&mut self, bufs: &mut Vec<P::Buf>) -> usize {
        let n = bufs.len();
        let mut pending = std::mem::take(&mut self.out);
        for mut buf in bufs.drain(..) {
            self.counters.frames += 1;
            let mut fate = FrameFate::default();
            if self.hit(self.cfg.loss) {
                self.counters.dropped += 1;
                fate.dropped = true;
                self.note(fate);
                continue;
            }
            if self.hit(self.cfg.corrupt) {
                let len = buf.frame().len();
                if len > 0 {
                    let at = self.rng.random_range(0..len);
                    let bit = 1u8 << self.rng.random_range(0..8u32);
                    if let Some(b) = buf.frame_mut().get_mut(at) {
                        *b ^= bit;
                    }
                    self.counters.corrupted += 1;
                    fate.corrupted = true;
                }
            }
            if self.hit(self.cfg.duplicate) {
                if let Some(mut copy) = self.inner.alloc() {
                    if copy.set_frame_len(buf.frame().len()) {
                        copy.frame_mut().copy_from_slice(buf.frame());
                        pending.push(copy);
                        self.counters.duplicated += 1;
                        fate.duplicated = true;
                    }
                }
            }
            if self.hit(self.cfg.reorder) {
                let behind = self.rng.random_range(1..=4u32);
                self.held.push_back((buf, behind));
                self.counters.reordered += 1;
                fate.held_behind = Some(behind);
                self.note(fate);
                continue;
            }
            self.note(fate);
            pending.push(buf);
        }
        self.out = pending;
        let refused = self.release_held();
        n.saturating_sub(refused)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::loopback::loopback_pair;

    #[test]
    fn frames_the_port_refuses_are_counted_and_not_reported_sent() {
        // The peer's queue holds three frames: the port takes three of five.
        let (a, mut b) = loopback_pair(1500, 3);
        let mut port = FaultPort::new(a, FaultConfig::default(), 1);
        let mut bufs = Vec::new();
        for _ in 0..5 {
            let mut buf = port.alloc().expect("a buffer");
            assert!(buf.set_frame_len(60));
            bufs.push(buf);
        }
        assert_eq!(port.tx_burst(&mut bufs), 3);
        assert!(bufs.is_empty());
        let c = port.counters();
        assert_eq!((c.frames, c.dropped, c.refused), (5, 0, 2));
        let mut got = Vec::new();
        assert_eq!(b.rx_burst(&mut got, 16), 3);
    }

    #[test]
    fn recorded_fates_match_the_counters_frame_by_frame() {
        let (a, mut b) = loopback_pair(1500, 4096);
        let cfg = FaultConfig {
            loss: 0.2,
            duplicate: 0.2,
            reorder: 0.2,
            corrupt: 0.2,
        };
        let mut port = FaultPort::new(a, cfg, 7);
        port.record_fates();
        let mut fates = Vec::new();
        for _ in 0..50 {
            let mut bufs = Vec::new();
            for _ in 0..4 {
                let mut buf = port.alloc().expect("a buffer");
                assert!(buf.set_frame_len(60));
                bufs.push(buf);
            }
            port.tx_burst(&mut bufs);
            fates.extend(port.take_fates());
        }
        let c = port.counters();
        assert_eq!(fates.len() as u64, c.frames);
        let count = |f: fn(&FrameFate) -> bool| fates.iter().filter(|x| f(x)).count() as u64;
        assert_eq!(count(|f| f.dropped), c.dropped);
        assert_eq!(count(|f| f.corrupted), c.corrupted);
        assert_eq!(count(|f| f.duplicated), c.duplicated);
        assert_eq!(count(|f| f.held_behind.is_some()), c.reordered);
        assert!(c.dropped > 0 && c.duplicated > 0 && c.reordered > 0 && c.corrupted > 0);
        assert!(fates.iter().any(FrameFate::is_clean));
        // A dropped frame is only dropped.
        assert!(fates
            .iter()
            .filter(|f| f.dropped)
            .all(|f| !f.corrupted && !f.duplicated && f.held_behind.is_none()));
        let mut got = Vec::new();
        while b.rx_burst(&mut got, 256) > 0 {}
        let still_held = port.held.len() as u64;
        assert_eq!(
            got.len() as u64 + c.dropped + still_held,
            c.frames + c.duplicated
        );
        assert_eq!(
            FrameFate {
                dropped: true,
                ..FrameFate::default()
            }
            .to_string(),
            "fault: dropped"
        );
        assert_eq!(FrameFate::default().to_string(), "");
    }

    #[test]
    fn check_accepts_fractions_below_one_and_names_the_first_bad_knob() {
        let ok = FaultConfig {
            loss: 0.0,
            duplicate: 0.5,
            reorder: 0.999,
            corrupt: 0.1,
        };
        assert_eq!(ok.check(), Ok(()));
        for (bad, knob) in [
            (FaultConfig { loss: 1.0, ..ok }, "loss"),
            (
                FaultConfig {
                    duplicate: -0.1,
                    ..ok
                },
                "dup",
            ),
            (
                FaultConfig {
                    reorder: f64::NAN,
                    ..ok
                },
                "reorder",
            ),
            (FaultConfig { corrupt: 2.0, ..ok }, "corrupt"),
        ] {
            let err = bad.check().expect_err("out of range");
            assert_eq!(err.knob, knob);
        }
        let msg = FaultConfig { loss: 1.5, ..ok }
            .check()
            .unwrap_err()
            .to_string();
        assert_eq!(msg, "--loss 1.5 must be in [0, 1)");
    }
}
