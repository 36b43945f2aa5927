//! The egress scheduler of a switch port, as switches ship it: strict priority for the classes
//! that must never wait behind data (CNPs and control, DSCP 48 → priority 6), then DWRR over
//! the other classes with ETS weights, so that each class gets its share of the line when all
//! are busy and any class may use what the others leave. Without weights every class gets an
//! equal turn, one packet at a time (round robin).
//!
//! Per-class buffer limits bound what one class may hold of the shared buffer.

use serde::{Deserialize, Serialize};

use roce_proto::wire::pfc::PRIORITIES;

/// Bytes of deficit a class earns per round for each unit of its ETS weight.
pub const QUANTUM_PER_WEIGHT: u64 = 1500;

/// The strict classes of a port with ETS weights and no `strict` list: CNPs (DSCP 48) and
/// network control (DSCP 56).
pub const DEFAULT_STRICT: [u8; 2] = [6, 7];

/// How a port picks the next class to send, and how much buffer each class may hold.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Scheduling {
    /// Priorities served before all others, highest first (e.g. `[6, 7]` for CNPs and
    /// network control). Unset: [`DEFAULT_STRICT`] when ETS weights are set (a weight-0 CNP
    /// class would otherwise wait behind all weighted data), none otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub strict: Option<Vec<u8>>,
    /// ETS weights indexed by priority (e.g. `[30, 0, 0, 70]`: best effort 30 %, RDMA 70 %);
    /// empty: an equal turn each. A class with weight 0 (or beyond the list) sends only when
    /// no weighted class can.
    pub ets_weights: Vec<u32>,
    /// Most bytes each priority may hold in the shared buffer, indexed by priority (0 or
    /// beyond the list: no limit beyond the buffer's).
    pub class_limit_bytes: Vec<u64>,
}

impl Scheduling {
    fn weight(&self, prio: usize) -> u64 {
        self.ets_weights.get(prio).copied().map_or(0, u64::from)
    }

    /// The strict-priority classes as a bit set (bit `p` for priority `p`).
    pub(crate) fn strict_mask(&self) -> u32 {
        let strict = match &self.strict {
            Some(s) => s.as_slice(),
            None if self.ets_weights.is_empty() => &[],
            None => &DEFAULT_STRICT,
        };
        strict
            .iter()
            .filter(|&&p| usize::from(p) < PRIORITIES)
            .fold(0, |m, &p| m | 1 << p)
    }

    /// The byte limit of class `prio`, if it has one.
    pub fn class_limit(&self, prio: usize) -> Option<u64> {
        self.class_limit_bytes.get(prio).copied().filter(|&l| l > 0)
    }
}

/// A port's scheduling state: whose turn it is and the deficits of DWRR.
#[derive(Clone, Debug, Default)]
pub struct SchedState {
    rr: usize,
    deficit: [u64; PRIORITIES],
    /// Whether the class at `rr` already got its quantum this visit.
    credited: bool,
}

impl SchedState {
    /// The priority to send next among those for which `head(prio)` gives the length of a
    /// packet that may go now (not paused), or `None`. Charges DWRR deficits.
    pub fn pick(&mut self, cfg: &Scheduling, head: impl Fn(usize) -> Option<u64>) -> Option<usize> {
        // Strict classes first, highest priority first. A bit set, not a list: this runs for
        // every packet a port sends.
        let strict = cfg.strict_mask();
        let is_strict = |p: usize| strict & (1 << p) != 0;
        if let Some(p) = (0..PRIORITIES)
            .rev()
            .find(|&p| is_strict(p) && head(p).is_some())
        {
            return Some(p);
        }
        let normal = |p: usize| !is_strict(p);
        if cfg.ets_weights.is_empty() {
            // Round robin, one packet per turn.
            let start = self.rr;
            let p = (1..=PRIORITIES)
                .map(|i| (start + i) % PRIORITIES)
                .find(|&p| normal(p) && head(p).is_some())?;
            self.rr = p;
            return Some(p);
        }
        // DWRR: stay on a class while its deficit covers its head packet, then move on; each
        // visit earns weight × quantum. Enough visits for the smallest weight to afford a jumbo
        // frame, after which only unweighted classes remain.
        let rounds = PRIORITIES * (1 + 9216 / QUANTUM_PER_WEIGHT as usize);
        for _ in 0..rounds {
            let p = self.rr;
            let w = cfg.weight(p);
            match head(p).filter(|_| normal(p) && w > 0) {
                Some(len) => {
                    if !self.credited {
                        self.deficit[p] += w * QUANTUM_PER_WEIGHT;
                        self.credited = true;
                    }
                    if len <= self.deficit[p] {
                        self.deficit[p] -= len;
                        return Some(p);
                    }
                }
                // An idle (or paused) class keeps no credit.
                None => self.deficit[p] = 0,
            }
            self.rr = (p + 1) % PRIORITIES;
            self.credited = false;
        }
        (0..PRIORITIES).find(|&p| normal(p) && head(p).is_some())
    }

    /// [`SchedState::pick`] where `ready` (bit `p`) says exactly which classes `head` gives a
    /// length for: strict classes and round robin read the mask, not `head`. `strict` is
    /// `cfg`'s `Scheduling::strict_mask` (the caller keeps it: this runs for every packet).
    pub fn pick_ready(
        &mut self,
        cfg: &Scheduling,
        strict: u8,
        ready: u8,
        head: impl Fn(usize) -> Option<u64>,
    ) -> Option<usize> {
        if !cfg.ets_weights.is_empty() {
            return self.pick(cfg, head);
        }
        if ready & strict != 0 {
            return Some(7 - (ready & strict).leading_zeros() as usize);
        }
        let normal = ready & !strict;
        if normal == 0 {
            return None;
        }
        // The first class with a packet after `rr`, wrapping.
        let from = (self.rr + 1) % PRIORITIES;
        let p = (from + normal.rotate_right(from as u32).trailing_zeros() as usize) % PRIORITIES;
        self.rr = p;
        Some(p)
    }

    /// What [`SchedState::pick`] does when no class has a packet: DWRR goes once round the
    /// classes clearing deficits and ends where it began, with no class credited.
    pub fn idle(&mut self, cfg: &Scheduling) {
        if !cfg.ets_weights.is_empty() {
            self.deficit = [0; PRIORITIES];
            self.credited = false;
        }
    }

    /// Class `prio` emptied: it keeps no credit (DWRR).
    pub fn emptied(&mut self, prio: usize) {
        if let Some(d) = self.deficit.get_mut(prio) {
            *d = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bytes each class sends when all are backlogged with `len`-byte packets, over `n` picks.
    fn shares(cfg: &Scheduling, busy: &[usize], len: u64, n: usize) -> [u64; PRIORITIES] {
        let mut st = SchedState::default();
        let mut sent = [0; PRIORITIES];
        for _ in 0..n {
            let p = st
                .pick(cfg, |p| busy.contains(&p).then_some(len))
                .expect("something to send");
            sent[p] += len;
        }
        sent
    }

    #[test]
    fn ets_weights_split_the_line_and_strict_classes_go_first() {
        let ets = Scheduling {
            ets_weights: vec![30, 0, 0, 70],
            ..Scheduling::default()
        };
        let s = shares(&ets, &[0, 3], 1000, 10_000);
        let share3 = s[3] as f64 / (s[0] + s[3]) as f64;
        assert!((share3 - 0.7).abs() < 0.01, "{s:?}");
        // Alone, a class takes the whole line (work conserving).
        assert_eq!(shares(&ets, &[0], 1000, 100)[0], 100_000);
        // Unweighted round robin: equal turns.
        let rr = shares(&Scheduling::default(), &[0, 3], 1000, 1000);
        assert_eq!((rr[0], rr[3]), (500_000, 500_000));
        // A strict class with a packet waiting always goes first.
        let strict = Scheduling {
            strict: Some(vec![6]),
            ..ets
        };
        assert_eq!(shares(&strict, &[0, 3, 6], 1000, 50)[6], 50_000);
    }

    #[test]
    fn pick_ready_picks_what_pick_picks() {
        let strict = Scheduling {
            strict: Some(vec![6, 2]),
            ..Scheduling::default()
        };
        let ets = Scheduling {
            ets_weights: vec![30, 0, 0, 70],
            ..Scheduling::default()
        };
        for cfg in [Scheduling::default(), strict, ets] {
            let (mut a, mut b) = (SchedState::default(), SchedState::default());
            for n in 0..2000u32 {
                let ready = (n.wrapping_mul(0x9e37_79b9) >> 24) as u8;
                let head = |p: usize| (ready & (1 << p) != 0).then_some(1000);
                assert_eq!(
                    a.pick(&cfg, head),
                    b.pick_ready(&cfg, cfg.strict_mask() as u8, ready, head),
                    "{n}"
                );
                assert_eq!(format!("{a:?}"), format!("{b:?}"));
            }
        }
    }

    #[test]
    fn idle_does_what_a_pick_with_nothing_to_send_does() {
        let ets = Scheduling {
            ets_weights: vec![30, 0, 0, 70],
            ..Scheduling::default()
        };
        for cfg in [ets, Scheduling::default()] {
            let mut st = SchedState::default();
            for n in 0..40 {
                st.pick(&cfg, |p| [0, 3].contains(&p).then_some(700 + 100 * n));
                let (mut picked, mut idle) = (st.clone(), st.clone());
                assert_eq!(picked.pick(&cfg, |_| None), None);
                idle.idle(&cfg);
                assert_eq!(format!("{picked:?}"), format!("{idle:?}"), "{n}");
            }
        }
    }
}

/// What one class sent through the bottleneck egress after warm-up.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClassShare {
    /// Priority.
    pub prio: usize,
    /// Its ETS weight (0: none).
    pub weight: u32,
    /// Frame bytes it sent.
    pub bytes: u64,
    /// Its fraction of all bytes sent, 0..=1.
    pub share: f64,
    /// Its rate, Gbit/s of frame bytes.
    pub gbps: f64,
}

/// The classes that sent anything, from per-priority byte counts over `secs` seconds.
pub fn class_shares(cfg: &Scheduling, bytes: &[u64; PRIORITIES], secs: f64) -> Vec<ClassShare> {
    let total: u64 = bytes.iter().sum();
    (0..PRIORITIES)
        .filter(|&p| bytes[p] > 0)
        .map(|p| ClassShare {
            prio: p,
            weight: cfg.ets_weights.get(p).copied().unwrap_or(0),
            bytes: bytes[p],
            share: bytes[p] as f64 / total.max(1) as f64,
            gbps: bytes[p] as f64 * 8.0 / secs.max(1e-12) / 1e9,
        })
        .collect()
}

/// The summary table's line for `shares`.
pub fn shares_line(shares: &[ClassShare]) -> String {
    let v: Vec<String> = shares
        .iter()
        .map(|c| {
            format!(
                "prio {} (weight {}) {:.1}% {:.1} Gbit/s",
                c.prio,
                c.weight,
                c.share * 100.0,
                c.gbps
            )
        })
        .collect();
    format!("bottleneck classes: {}\n", v.join(", "))
}
