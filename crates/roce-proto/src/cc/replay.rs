//! Replays a scripted sequence of congestion signals against one reaction point that sends
//! back-to-back MTU-sized packets at whatever rate its controller allows, in virtual time, and
//! records how rate, target rate and alpha evolve. What `roce cc replay` prints; also a handy
//! harness for tests. Not a network simulator: there is no queue, no ACK clock, no receiver; every
//! signal the controller sees is in the script.
//!
//! # Script format
//! Events are separated by newlines or commas; `#` starts a comment to the end of the line, and
//! blank lines are ignored. Each event is `KIND@TIME` followed by its fields, separated by
//! spaces. TIME is a number with a unit (`ns`, `us`, `ms`, `s`) from the start of the run; events
//! run in time order (a stable sort, so equal times keep their order).
//!
//! | event | feeds the controller |
//! |---|---|
//! | `cnp@TIME` | a CNP ([`CongestionControl::on_cnp`]) |
//! | `loss@TIME` | a loss ([`CongestionControl::on_loss`]) |
//! | `ack@TIME [bytes=SIZE] [rtt=TIME]` | an ACK covering SIZE more bytes (default 0) with an RTT sample if given ([`CongestionControl::on_ack`]) |
//! | `rtt@TIME RTT` | short for `ack@TIME rtt=RTT` (TIMELY, patched TIMELY) |
//! | `int@TIME hop=QLEN/TX/TS/RATE ...` | INT records, one `hop=` per switch from sender to receiver ([`CongestionControl::on_int`], HPCC) |
//!
//! In a hop, QLEN is the egress queue and TX the port's free-running transmitted-byte counter
//! (sizes as [`crate::size`] reads them: `50000`, `50KB`, `1MiB`), TS the switch's timestamp (a
//! TIME) and RATE the port's line rate (a number with `bps`, `Kbps`, `Mbps`, `Gbps`, `Tbps`, or
//! just `K`, `M`, `G`, `T`). For example, an RTT rising by 10 us per sample and two INT samples
//! from one 100 Gbit/s hop with a 50 KB queue:
//!
//! ```text
//! # TIMELY
//! rtt@10us 60us
//! rtt@20us 70us
//! rtt@30us 80us
//! # HPCC: one hop; 125 KB left the port in the 10 us between the two records
//! int@10us hop=50KB/0/10us/100G
//! int@20us hop=50KB/125KB/20us/100G
//! ```
//!
//! A malformed event is a [`ReplayError::BadEvent`] naming its line (1-based) and text.

use super::{CongestionControl, IntHop, Pacer, Rate, Recorder, Sample};
use crate::time::{Duration, Instant};

/// A scripted input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReplayKind {
    /// A CNP arrives.
    Cnp,
    /// A loss is reported.
    Loss,
    /// An ACK arrives.
    Ack {
        /// Bytes it newly acknowledges.
        bytes: u64,
        /// Its RTT sample, if any.
        rtt: Option<Duration>,
    },
    /// INT hop records arrive (with an ACK), sender to receiver.
    Int(Vec<IntHop>),
}

/// A scripted input at a point in virtual time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplayEvent {
    /// When.
    pub at: Instant,
    /// What.
    pub kind: ReplayKind,
}

/// What an event line may be, for error messages.
const EVENT_FORMS: &str = "cnp@TIME, loss@TIME, ack@TIME [bytes=SIZE] [rtt=TIME], rtt@TIME RTT or \
int@TIME hop=QLEN/TX/TS/RATE... (e.g. cnp@12us, rtt@5us 30us, int@5us hop=50KB/1MB/5us/100G)";

/// Why a script could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReplayError {
    /// A malformed event.
    #[error("line {line}: bad event `{event}`: {why}")]
    BadEvent {
        /// The line it is on, from 1.
        line: usize,
        /// The event text.
        event: String,
        /// What is wrong, and what is expected.
        why: String,
    },
    /// A time that is not a number with a unit.
    #[error("bad time `{text}`: expected a number with a unit ns, us, ms or s (e.g. 5ms)")]
    BadTime {
        /// The text given.
        text: String,
    },
}

const TIME_UNITS: &[(&str, f64)] = &[
    ("ns", 1.0),
    ("us", 1e3),
    ("µs", 1e3),
    ("ms", 1e6),
    ("s", 1e9),
];

const RATE_UNITS: &[(&str, f64)] = &[
    ("bps", 1.0),
    ("K", 1e3),
    ("Kbps", 1e3),
    ("M", 1e6),
    ("Mbps", 1e6),
    ("G", 1e9),
    ("Gbps", 1e9),
    ("T", 1e12),
    ("Tbps", 1e12),
];

/// A non-negative number followed by one of `units`, scaled and rounded to an integer.
fn number_with_unit(text: &str, units: &[(&str, f64)]) -> Option<u64> {
    let t = text.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
    let (num, unit) = t.split_at(split);
    let scale = units.iter().find(|(u, _)| *u == unit.trim())?.1;
    let v = num.parse::<f64>().ok()? * scale;
    (v.is_finite() && v >= 0.0 && v <= u64::MAX as f64).then(|| v.round() as u64)
}

/// Parses `5ms`, `12us`, `1.5us`, `100ns`, `2s`.
pub fn parse_time(text: &str) -> Result<Duration, ReplayError> {
    number_with_unit(text, TIME_UNITS)
        .map(Duration::from_nanos)
        .ok_or_else(|| ReplayError::BadTime {
            text: text.to_string(),
        })
}

/// Parses one `hop=QLEN/TX/TS/RATE` value.
fn parse_hop(text: &str) -> Result<IntHop, String> {
    let bad = |what: &str| {
        format!("hop `{text}`: {what}; expected QLEN/TX/TS/RATE (e.g. 50KB/1MB/20us/100G)")
    };
    let parts: Vec<&str> = text.split('/').collect();
    let [qlen, tx, ts, rate] = parts[..] else {
        return Err(bad("not four fields"));
    };
    let size = |v: &str, name: &str| {
        crate::size::parse_bytes(v).map_err(|_| bad(&format!("{name} `{v}` is not a size")))
    };
    Ok(IntHop {
        qlen_bytes: size(qlen, "QLEN")?,
        tx_bytes: size(tx, "TX")?,
        ts: Instant::ZERO + parse_time(ts).map_err(|_| bad(&format!("TS `{ts}` is not a time")))?,
        link_rate: number_with_unit(rate, RATE_UNITS)
            .filter(|&r| r > 0)
            .map(Rate::from_bps)
            .ok_or_else(|| bad(&format!("RATE `{rate}` is not a rate like 100G or 25Gbps")))?,
        // Scripted counters are exact: they do not wrap.
        ..IntHop::default()
    })
}

/// Parses one event (without its line number).
fn parse_event(item: &str) -> Result<ReplayEvent, String> {
    let mut words = item.split_whitespace();
    let head = words.next().unwrap_or_default();
    let Some((kind, at)) = head.split_once('@') else {
        return Err(format!("expected {EVENT_FORMS}"));
    };
    let at = Instant::ZERO + parse_time(at).map_err(|e| e.to_string())?;
    let fields: Vec<&str> = words.collect();
    let no_fields = |kind: ReplayKind| match fields.first() {
        None => Ok(kind),
        Some(f) => Err(format!("unexpected `{f}`: {head} takes no fields")),
    };
    let kind = match kind {
        "cnp" => no_fields(ReplayKind::Cnp)?,
        "loss" => no_fields(ReplayKind::Loss)?,
        "rtt" => match fields[..] {
            [rtt] => ReplayKind::Ack {
                bytes: 0,
                rtt: Some(parse_time(rtt).map_err(|e| e.to_string())?),
            },
            _ => return Err("expected rtt@TIME RTT (e.g. rtt@5us 30us)".into()),
        },
        "ack" => {
            let (mut bytes, mut rtt) = (0, None);
            for f in &fields {
                match f.split_once('=') {
                    Some(("bytes", v)) => {
                        bytes = crate::size::parse_bytes(v).map_err(|e| e.to_string())?;
                    }
                    Some(("rtt", v)) => rtt = Some(parse_time(v).map_err(|e| e.to_string())?),
                    _ => {
                        return Err(format!(
                            "unexpected `{f}`: ack takes bytes=SIZE and rtt=TIME"
                        ))
                    }
                }
            }
            ReplayKind::Ack { bytes, rtt }
        }
        "int" => {
            let hops = fields
                .iter()
                .map(|f| match f.strip_prefix("hop=") {
                    Some(h) => parse_hop(h),
                    None => Err(format!(
                        "unexpected `{f}`: int takes hop=QLEN/TX/TS/RATE fields"
                    )),
                })
                .collect::<Result<Vec<_>, _>>()?;
            if hops.is_empty() || hops.len() > super::hpcc::MAX_HOPS {
                return Err(format!(
                    "int needs 1 to {} hop= fields",
                    super::hpcc::MAX_HOPS
                ));
            }
            ReplayKind::Int(hops)
        }
        _ => return Err(format!("unknown event `{kind}`: expected {EVENT_FORMS}")),
    };
    Ok(ReplayEvent { at, kind })
}

/// Parses a script (see the [module docs](self)) into events sorted by time (empty text: no
/// events), e.g. `cnp@0us,cnp@12us,loss@1ms`.
pub fn parse_events(text: &str) -> Result<Vec<ReplayEvent>, ReplayError> {
    let mut events = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line_text = line.split_once('#').map_or(line, |(code, _)| code);
        for item in line_text
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
        {
            let event = parse_event(item).map_err(|why| ReplayError::BadEvent {
                line: i + 1,
                event: item.to_string(),
                why,
            })?;
            events.push(event);
        }
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
                match &e.kind {
                    ReplayKind::Cnp => rec.on_cnp(now),
                    ReplayKind::Loss => rec.on_loss(now),
                    ReplayKind::Ack { bytes, rtt } => rec.on_ack(now, *bytes, *rtt),
                    ReplayKind::Int(hops) => rec.on_int(now, hops, None),
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
