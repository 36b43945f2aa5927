//! Replays a scripted sequence of congestion signals against one reaction point that sends
//! back-to-back MTU-sized packets at whatever rate its controller allows, in virtual time, and
//! records how rate, target rate and alpha evolve. What `roce cc replay` prints; also a handy
//! harness for tests. Not a network simulator: there is no queue, no ACK clock, no receiver.

use super::{CongestionControl, Pacer, Rate, Recorder, Sample};
use crate::time::{Duration, Instant};

/// A scripted input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplayKind {
    /// A CNP arrives.
    Cnp,
    /// A loss is reported.
    Loss,
}

/// A scripted input at a point in virtual time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReplayEvent {
    /// When.
    pub at: Instant,
    /// What.
    pub kind: ReplayKind,
}

/// Why a script could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReplayError {
    /// An event that is not `cnp@TIME` or `loss@TIME`.
    #[error("bad event `{event}`: expected cnp@TIME or loss@TIME (e.g. cnp@12us)")]
    BadEvent {
        /// The event text.
        event: String,
    },
    /// A time that is not a number with a unit.
    #[error("bad time `{text}`: expected a number with a unit ns, us, ms or s (e.g. 5ms)")]
    BadTime {
        /// The text given.
        text: String,
    },
}

/// Parses `5ms`, `12us`, `1.5us`, `100ns`, `2s`.
pub fn parse_time(text: &str) -> Result<Duration, ReplayError> {
    let t = text.trim();
    let bad = || ReplayError::BadTime {
        text: text.to_string(),
    };
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .ok_or_else(bad)?;
    let (num, unit) = t.split_at(split);
    let scale = match unit.trim() {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        _ => return Err(bad()),
    };
    let v: f64 = num.parse().map_err(|_| bad())?;
    let ns = v * scale;
    if !ns.is_finite() || ns < 0.0 || ns > u64::MAX as f64 {
        return Err(bad());
    }
    Ok(Duration::from_nanos(ns.round() as u64))
}

/// Parses `cnp@0us,cnp@12us,loss@1ms` into events sorted by time (empty text: no events).
pub fn parse_events(text: &str) -> Result<Vec<ReplayEvent>, ReplayError> {
    let mut events = Vec::new();
    for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let bad = || ReplayError::BadEvent {
            event: item.to_string(),
        };
        let (kind, at) = item.split_once('@').ok_or_else(bad)?;
        let kind = match kind.trim() {
            "cnp" => ReplayKind::Cnp,
            "loss" => ReplayKind::Loss,
            _ => return Err(bad()),
        };
        let at = Instant::ZERO + parse_time(at).map_err(|_| bad())?;
        events.push(ReplayEvent { at, kind });
    }
    events.sort_by_key(|e| e.at);
    Ok(events)
}

/// What to replay.
#[derive(Clone, Debug)]
pub struct ReplayConfig {
    /// Frame size of every packet sent.
    pub mtu: u64,
    /// How long to run, from time zero.
    pub duration: Duration,
    /// The script.
    pub events: Vec<ReplayEvent>,
}

/// Runs `cc` through the script; returns its recorded time series.
pub fn replay<C: CongestionControl>(cc: C, cfg: &ReplayConfig) -> Vec<Sample> {
    let end = Instant::ZERO + cfg.duration;
    let mtu = cfg.mtu.max(1);
    let mut rec = Recorder::new(cc, Instant::ZERO);
    let mut pacer = Pacer::new(rec.rate(), 0);
    let mut events = cfg.events.iter().peekable();
    let mut now = Instant::ZERO;
    loop {
        let next_event = events.peek().map(|e| e.at.max(now));
        let next_timer = rec.poll_timeout().map(|t| t.max(now));
        let next_send = pacer.earliest_departure(now, mtu);
        let t = [next_event, next_timer, Some(next_send)]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(Instant::FAR_FUTURE);
        if t > end {
            break;
        }
        now = t;
        if next_event == Some(t) {
            if let Some(e) = events.next() {
                match e.kind {
                    ReplayKind::Cnp => rec.on_cnp(now),
                    ReplayKind::Loss => rec.on_loss(now),
                }
            }
        } else if next_timer == Some(t) {
            rec.handle_timeout(now);
        } else {
            rec.on_sent(now, mtu);
            pacer.on_sent(now, mtu);
        }
        let rate: Rate = rec.rate();
        pacer.set_rate(now, rate);
    }
    rec.into_parts().1
}
