//! Two real endpoints with one RC QP each on virtual time (a [`Transfer`] of SENDs from A to B)
//! with the [`Forger`] on the link between them for a while; then the verdict: once the forging
//! stops, within the transport's own retry budget, either every SEND arrived intact, or a QP is
//! in ERR and every work request of A completed, those not done with an error. Never both QPs
//! in RTS with work outstanding and nothing moving, nor a livelock of NAKs.
//!
//! Deterministic: every decision comes from one seed, which every failure message carries.

use std::collections::VecDeque;

use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64;
use roce_proto::connect::RcOptions;
use roce_proto::counters::QpCounters;
use roce_proto::endpoint::Endpoint;
use roce_proto::psn::Psn;
use roce_proto::qp::timer::{ack_timeout, rnr_timeout};
use roce_proto::time::{Duration, Instant};
use roce_proto::verbs::{AccessFlags, Mtu, Recovery};
use roce_proto::wire::parse_frame;

use super::forger::{Dir, Forger, Mix};
use super::transfer::{Transfer, DEPTH, SLOT};

/// Virtual time a frame takes across the link, and a busy round.
const TICK: Duration = Duration::from_micros(1);

/// One run.
#[derive(Clone, Copy, Debug)]
pub struct Scenario {
    /// Replays the run: QP attributes, message sizes, every forged frame.
    pub seed: u64,
    /// SENDs A posts.
    pub sends: usize,
    /// What the attacker forges.
    pub mix: Mix,
    /// Forging events before the attacker stops.
    pub events: u32,
    /// Mean virtual time between forging events.
    pub gap: Duration,
}

impl Scenario {
    /// The scenario of `seed` in a sweep: 1,500 SENDs, the attacker forging one kind of frame
    /// alone, every kind together, or a mix drawn from the seed, for up to 2,000 events.
    pub fn of_seed(seed: u64) -> Scenario {
        let mut rng = Pcg64::seed_from_u64(seed ^ 0x5eed_5eed);
        let only = |k: u64| {
            let w = |i: u64| u32::from(k == i);
            Mix {
                acks: w(0),
                seq_naks: w(1),
                rnr_naks: w(2),
                fatal_naks: 0,
                read_responses: w(3),
                requests: w(4),
                replays: w(5),
                reverse: w(6),
                storm_percent: 20,
            }
        };
        let mix = match seed % 12 {
            0 => Mix::ALL,
            1 => Mix::RESPONSES,
            2 => Mix::REQUESTS,
            k @ 3..=9 => only(k - 3),
            10 => Mix {
                acks: 3,
                seq_naks: 3,
                rnr_naks: 1,
                ..only(0)
            },
            _ => Mix::from_bytes(rng.random()),
        };
        Scenario {
            seed,
            sends: 1500,
            mix,
            events: rng.random_range(1..2000),
            gap: Duration::from_nanos(rng.random_range(100..100_000)),
        }
    }

    /// The scenario a byte string encodes (for the fuzz target): seed, sends, mix, events, gap.
    pub fn from_bytes(data: &[u8]) -> Scenario {
        let mut b = [0u8; 16];
        for (d, s) in b.iter_mut().zip(data) {
            *d = *s;
        }
        let seed = u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]);
        Scenario {
            seed,
            sends: 100 + usize::from(u16::from_le_bytes([b[8], b[9]]) % 1401),
            mix: Mix::from_bytes([b[10], b[11], b[12], b[13]]),
            events: 1 + u32::from(b[14]) * 8,
            gap: Duration::from_nanos(200 << (b[15] % 10)),
        }
    }
}

/// How a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Every SEND completed successfully at A and every one arrived intact at B, but those the
    /// attacker's frames made away with (see `Transfer::excused`).
    Delivered,
    /// A QP went to ERR and every work request of A completed, those not done with an error.
    Ended,
}

/// What a run did.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// How it ended.
    pub verdict: Verdict,
    /// The QP attributes the seed chose.
    pub options: RcOptions,
    /// Frames the attacker forged.
    pub forged: u64,
    /// When the attacker stopped.
    pub stopped_at: Instant,
    /// When the verdict was reached.
    pub ended_at: Instant,
    /// Counters of A's QP at the end.
    pub a: QpCounters,
    /// Counters of B's QP at the end.
    pub b: QpCounters,
    /// Counters of A's QP when the attacker stopped.
    pub a_at_stop: QpCounters,
    /// Counters of B's QP when the attacker stopped.
    pub b_at_stop: QpCounters,
}

/// A one-way link: frames, when they arrive, and whether the attacker made them up (a replay
/// of a real frame is not made up).
type Link = VecDeque<(Instant, Vec<u8>, bool)>;

/// Polls `ep` dry onto `link`, showing each frame to the attacker; returns how many, and the
/// PSN of each request among them.
fn transmit(
    ep: &mut Endpoint,
    now: Instant,
    link: &mut Link,
    forger: &mut Forger,
    dir: Dir,
) -> (usize, Vec<Psn>) {
    let mut buf = vec![0u8; 9100];
    let (mut n, mut requests) = (0, Vec::new());
    while let Some(len) = ep.poll_transmit(now, &mut buf) {
        let frame = buf[..len].to_vec();
        if let Ok(p) = parse_frame(&frame) {
            if p.repr.bth.opcode.is_request() {
                requests.push(p.repr.bth.psn);
            }
        }
        forger.observe(dir, &frame);
        link.push_back((now + TICK, frame, false));
        n += 1;
    }
    (n, requests)
}

/// The QP attributes and message lengths of a seed.
fn options(rng: &mut Pcg64, sends: usize) -> (RcOptions, Vec<usize>) {
    let o = RcOptions {
        mtu: [Mtu::Mtu256, Mtu::Mtu1024, Mtu::Mtu4096][rng.random_range(0..3)],
        // Just below the 24-bit wrap, so every run crosses it.
        a_psn: Psn::new(0xff_ffff - rng.random_range(0..2048)),
        b_psn: Psn::new(rng.random_range(0..1 << 24)),
        timeout: rng.random_range(12..=16),
        retry_cnt: rng.random_range(1..=7),
        rnr_retry: rng.random_range(0..=7),
        min_rnr_timer: 1,
        max_rd_atomic: 4,
        access: AccessFlags::REMOTE_WRITE | AccessFlags::REMOTE_READ | AccessFlags::REMOTE_ATOMIC,
        max_send_wr: DEPTH as u32,
        max_recv_wr: DEPTH as u32,
        recovery: Recovery::GoBackN,
    };
    let lens = (0..sends).map(|_| rng.random_range(4..=SLOT)).collect();
    (o, lens)
}

/// Runs `s`: the outcome, or what went wrong (with the seed).
pub fn run(s: &Scenario) -> Result<Outcome, String> {
    run_inner(s).map_err(|e| format!("seed {:#x} ({s:?}): {e}", s.seed))
}

fn run_inner(s: &Scenario) -> Result<Outcome, String> {
    let mut rng = Pcg64::seed_from_u64(s.seed);
    let (o, lens) = options(&mut rng, s.sends);
    let mut t = Transfer::new(s.seed, &o, lens)?;
    let mut forger = Forger::new(s.mix, o.mtu.bytes() as usize);
    let (mut a2b, mut b2a) = (Link::new(), Link::new());
    let mut now = Instant::ZERO;
    let mut events_left = s.events;
    let mean = s.gap.as_nanos().max(1);
    let gap = |rng: &mut Pcg64| Duration::from_nanos(rng.random_range(1..=2 * mean));
    let mut next_forge = Some(now + gap(&mut rng));
    let mut stopped: Option<(Instant, QpCounters, QpCounters)> = None;
    // The transport's budget once the attacker is gone: every retry of A's local ACK timeout
    // and one more, the longest RNR wait a forged RNR NAK may have asked for, and ample time
    // to move the messages themselves.
    let timeout = ack_timeout(o.timeout).ok_or("no ACK timeout")?;
    let budget = timeout.saturating_mul(u64::from(o.retry_cnt) + 2)
        + rnr_timeout(0)
        + TICK.saturating_mul(16 * s.sends as u64 + 1000);
    loop {
        t.a.handle_timeout(now);
        t.b.handle_timeout(now);
        let (mut moved, requests) = transmit(&mut t.a, now, &mut a2b, &mut forger, Dir::AtoB);
        for psn in requests {
            t.note_sent(psn);
        }
        moved += transmit(&mut t.b, now, &mut b2a, &mut forger, Dir::BtoA).0;
        if next_forge.is_some_and(|at| at <= now) {
            for f in forger.forge(&mut rng) {
                let link = match f.dir {
                    Dir::AtoB => &mut a2b,
                    Dir::BtoA => &mut b2a,
                };
                // Anywhere among the frames in flight.
                let at = rng.random_range(0..=link.len());
                link.insert(at, (now + TICK, f.frame, !f.replay));
                moved += 1;
            }
            events_left = events_left.saturating_sub(1);
            next_forge = (events_left > 0).then(|| now + gap(&mut rng));
        }
        // Frames arrive in order. A made-up request B executes, and a made-up response that
        // completes A's work, are noted: their effects are the attacker's, not the transport's.
        while a2b.front().is_some_and(|(at, _, _)| *at <= now) {
            let Some((_, f, made_up)) = a2b.pop_front() else {
                break;
            };
            moved += 1;
            let before = t.b_expected();
            t.b.handle_frame(now, &f);
            match (before, t.b_expected()) {
                (Some(b), Some(a)) if made_up && a != b => t.note_forged_executed(b, a),
                _ => {}
            }
        }
        while b2a.front().is_some_and(|(at, _, _)| *at <= now) {
            let Some((_, f, made_up)) = b2a.pop_front() else {
                break;
            };
            moved += 1;
            t.a.handle_frame(now, &f);
            t.poll_a(made_up)?;
        }
        t.run_verbs()?;
        if stopped.is_none() && next_forge.is_none() {
            let (a, b) = t.counters();
            stopped = Some((now, a, b));
        }
        if let Some((stop, a_at_stop, b_at_stop)) = stopped {
            if let Some(delivered) = t.outcome()? {
                let (a, b) = t.counters();
                return Ok(Outcome {
                    verdict: if delivered {
                        Verdict::Delivered
                    } else {
                        Verdict::Ended
                    },
                    options: o,
                    forged: forger.forged,
                    stopped_at: stop,
                    ended_at: now,
                    a,
                    b,
                    a_at_stop,
                    b_at_stop,
                });
            }
            if now > stop + budget {
                return Err(format!(
                    "wedged {:?} after the attacker stopped ({} frames forged): {}",
                    now - stop,
                    forger.forged,
                    t.describe()
                ));
            }
        }
        now = if moved > 0 || !a2b.is_empty() || !b2a.is_empty() {
            now + TICK
        } else {
            [t.a.poll_timeout(), t.b.poll_timeout(), next_forge]
                .into_iter()
                .flatten()
                .min()
                .filter(|at| *at > now)
                .unwrap_or(now + TICK)
        };
    }
}
