//! Congestion control of a reaction point (one sending QP): the [`CongestionControl`] trait, the
//! built-in controllers behind the statically dispatched [`Controller`] enum, their configuration
//! by name ([`CcConfig`], every name from a [`CcRegistry`]), the [`Pacer`] that turns a rate
//! into departure times, a time-series [`Recorder`] and a [`replay`] of scripted signals. Sans-IO: every input carries `now`; nothing here reads a clock or sends a packet.
//!
//! Shaped after quinn-proto's `congestion.rs` (a small trait, a config that builds controllers,
//! one file per algorithm) and s2n-quic's `congestion_controller.rs` (explicit-congestion input,
//! earliest-departure pacing). RoCE controllers are rate based, so the trait hands out a
//! [`Rate`] (and, for some, a [`window`] beside it). The notification point (CE → CNP) lives in [`crate::ecn`].
//!
//! How an endpoint drives one QP's controller:
//! ```
//! use roce_proto::cc::{CcConfig, CongestionControl, Pacer, Rate};
//! use roce_proto::time::Instant;
//!
//! let mut cc = CcConfig::new("dcqcn-mlx", Rate::from_gbps(100)).unwrap().build();
//! let mut pacer = Pacer::new(cc.rate(), 0);
//! let now = Instant::from_nanos(1_000);
//! if pacer.earliest_departure(now, 4096) <= now {
//!     cc.on_sent(now, 4096);
//!     pacer.on_sent(now, 4096);
//! }
//! cc.on_cnp(now); // a CNP arrived for this QP
//! pacer.set_rate(now, cc.rate());
//! assert_eq!(cc.metrics().cnp_rate_cuts, 1);
//! // The endpoint wakes the controller at `cc.poll_timeout()` and calls `handle_timeout`.
//! assert!(cc.poll_timeout().is_some());
//! ```
//!
//! Installed on a QP with `Endpoint::set_congestion_control`, a controller is fed by the
//! transport itself: `on_sent` per data packet, `on_ack` with the acknowledged bytes and an RTT
//! sample (transmit `now` of the newest AckReq packet the response covers, to the response's
//! `now`; see [`crate::qp::rtt`]), `on_loss` on a NAK sequence error or an ACK timeout,
//! `on_cnp` per CNP, `on_path_mtu` when it is installed and when the path MTU changes, and `on_int` with the hop records the peer echoes when the QP sends INT
//! shims (`Endpoint::enable_int`, [`crate::wire::int`]).

pub mod config;
pub mod dcqcn;
pub mod dctcp;
pub mod entry;
pub mod hpcc;
pub mod none;
pub mod nscc;
pub mod nvidia_rtt;
pub mod pacer;
pub mod params;
pub mod patched_timely;
pub mod rate;
pub mod recorder;
pub mod registry;
pub mod replay;
pub mod swift;
pub mod timely;
pub mod window;

pub use config::{CcConfig, CcError, CcParams};
pub use dcqcn::{Dcqcn, DcqcnParams, ScaledDcqcnParams};
pub use dctcp::{Dctcp, DctcpParams};
pub use hpcc::{Hpcc, HpccParams, IntHop};
pub use none::{LineRate, NoParams};
pub use nscc::{Nscc, NsccParams};
pub use nvidia_rtt::{NvidiaRtt, NvidiaRttParams};
pub use pacer::Pacer;
pub use patched_timely::{PatchedTimely, PatchedTimelyParams};
pub use rate::Rate;
pub use recorder::{CcEvent, Recorder, Sample};
pub use registry::{CcEntry, CcKind, CcRegistry};
pub use swift::{Swift, SwiftParams};
pub use timely::{RttController, RttParams, RttRule, Timely, TimelyParams};
pub use window::{Window, WindowParams};

use crate::time::{Duration, Instant};

/// Where an ACK that carries INT leaves its QP's sequence: what lets HPCC update its reference
/// rate once per actual RTT (the HPCC authors' ns-3 compares the ACK's sequence with the
/// `snd_nxt` of its last full update).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IntAck {
    /// The first PSN the peer has not acknowledged: everything before it arrived.
    pub acked: crate::psn::Psn,
    /// The next new PSN the QP will send (one past the highest sent).
    pub next: crate::psn::Psn,
}

/// A snapshot of a controller's state and counters, named like the mlx5 reaction-point counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct CcMetrics {
    /// The rate the QP may send at now (DCQCN's RC).
    pub rate: Rate,
    /// The rate the controller recovers towards (DCQCN's RT); equal to `rate` where the
    /// algorithm has no target.
    pub target_rate: Rate,
    /// The congestion estimate in 0..=1 (DCQCN/DCTCP alpha, HPCC's normalized utilization;
    /// zero where the algorithm has none).
    pub alpha: f64,
    /// CNPs that cut the rate, at once or at the end of the current period (DCQCN folds the
    /// CNPs of one period into one deferred cut: the first is counted here, the others in
    /// `rp_cnp_ignored`). Not mlx5's `rp_cnp_handled`, which counts every CNP the reaction point
    /// received: that is the QP's counter (`counters::QpCounters::rp_cnp_handled`).
    pub cnp_rate_cuts: u64,
    /// CNPs absorbed without effect, e.g. coalesced into a pending cut (mlx5 `rp_cnp_ignored`).
    pub rp_cnp_ignored: u64,
    /// Rate decreases performed (by CNPs, losses, RTT or INT signals).
    pub rate_cuts: u64,
    /// Rate increase events performed.
    pub rate_increases: u64,
}

/// A congestion controller of one reaction point. All inputs carry `now`; the controller never
/// reads a clock. After any input the caller re-reads [`rate`](Self::rate) (and hands it to the
/// pacer) and re-arms its timer from [`poll_timeout`](Self::poll_timeout). Inputs a controller
/// does not use default to doing nothing; a controller without timers keeps the default
/// `poll_timeout` of `None`.
pub trait CongestionControl {
    /// A short name (`dcqcn`, `timely`, ...), for logs and reports.
    #[must_use]
    fn name(&self) -> &'static str;
    /// `bytes` (whole frame) left on the wire for this QP.
    #[inline]
    fn on_sent(&mut self, now: Instant, bytes: u64) {
        let _ = (now, bytes);
    }
    /// An ACK covered `acked_bytes` more; `rtt` is its round-trip sample when one was measured.
    fn on_ack(&mut self, now: Instant, acked_bytes: u64, rtt: Option<Duration>) {
        let _ = (now, acked_bytes, rtt);
    }
    /// A congestion notification (RoCEv2 CNP, or an ECN echo) arrived for this QP. Controllers
    /// that do not react to CNPs count them in `rp_cnp_ignored`.
    fn on_cnp(&mut self, now: Instant);
    /// The transport detected a loss (NAK sequence error or retransmit timeout).
    fn on_loss(&mut self, now: Instant) {
        let _ = now;
    }
    /// In-band telemetry from the path (one record per hop, sender to receiver) arrived with an
    /// ACK; `ack` is where that ACK leaves the QP's sequence, when the caller knows it (the
    /// transport always does; a [`replay`] has no ACK clock). Controllers that do not use INT
    /// ignore it.
    fn on_int(&mut self, now: Instant, hops: &[IntHop], ack: Option<IntAck>) {
        let _ = (now, hops, ack);
    }
    /// The QP's path MTU (payload bytes per packet) is `mtu`: told when the controller is
    /// installed and whenever the QP's path MTU changes. A controller whose window counts
    /// packets ([`Swift`], [`Nscc`]) sizes it in these; others ignore it.
    fn on_path_mtu(&mut self, mtu: u32) {
        let _ = mtu;
    }
    /// Runs every timer due at or before `now`.
    fn handle_timeout(&mut self, now: Instant) {
        let _ = now;
    }
    /// The next instant [`handle_timeout`](Self::handle_timeout) must be called, if any.
    #[must_use]
    #[inline]
    fn poll_timeout(&self) -> Option<Instant> {
        None
    }
    /// The rate the QP may send at.
    #[must_use]
    #[inline]
    fn rate(&self) -> Rate {
        self.metrics().rate
    }
    /// The send window in bytes, if the controller runs one beside its rate ([`window`]): the
    /// QP sends no new data while this many bytes are in flight.
    #[must_use]
    fn window(&self) -> Option<u64> {
        None
    }
    /// Whether the controller runs a [`window`](Self::window) at all, whatever its size now (a
    /// controller can answer without computing the window).
    #[must_use]
    fn has_window(&self) -> bool {
        self.window().is_some()
    }
    /// Whether every data packet should ask for its ACK (an ACK, and an RTT sample, per packet,
    /// as the HPCC authors' ns-3 model acknowledges with `L2_ACK_INTERVAL 1`) instead of one
    /// per `ack_req_interval` packets. True whenever the controller runs a
    /// [`window`](Self::window) (coalesced ACKs would hold it shut); a controller overriding
    /// this keeps saying so.
    #[must_use]
    fn ack_each(&self) -> bool {
        self.has_window()
    }
    /// State and counters.
    #[must_use]
    fn metrics(&self) -> CcMetrics;
}

/// Declares [`Controller`], one arm per built-in controller type plus `Custom`, and its
/// statically dispatched [`CongestionControl`] impl. A new controller type is one line here (and
/// its [`registry`] entry).
macro_rules! controllers {
    ($( $(#[$doc:meta])* $arm:ident($ty:ty), )*) => {
        /// A controller: the built-ins dispatched statically, or any boxed
        /// [`CongestionControl`] for experiments.
        pub enum Controller {
            $( $(#[$doc])* $arm($ty), )*
            /// An experiment's own controller.
            Custom(Box<dyn CongestionControl + Send>),
        }

        macro_rules! dispatch {
            ($self:ident, $c:ident => $e:expr) => {
                match $self {
                    $( Controller::$arm($c) => $e, )*
                    Controller::Custom($c) => $e,
                }
            };
        }
    };
}

controllers! {
    /// `none`: always the line rate.
    None(LineRate),
    /// `dcqcn-paper` and `dcqcn-mlx`.
    Dcqcn(Dcqcn),
    /// `dctcp`: rate-based DCTCP.
    Dctcp(Dctcp),
    /// `timely`.
    Timely(Timely),
    /// `patched-timely`.
    PatchedTimely(PatchedTimely),
    /// `hpcc` (boxed: its per-hop records are several times the other controllers' state).
    Hpcc(Box<Hpcc>),
    /// `swift`.
    Swift(Swift),
    /// `nscc`.
    Nscc(Nscc),
    /// `nvidia-rtt`.
    NvidiaRtt(NvidiaRtt),
}

impl core::fmt::Debug for Controller {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Controller")
            .field("name", &self.name())
            .field("metrics", &self.metrics())
            .finish()
    }
}

impl CongestionControl for Controller {
    #[inline]
    fn name(&self) -> &'static str {
        dispatch!(self, c => c.name())
    }
    #[inline]
    fn on_sent(&mut self, now: Instant, bytes: u64) {
        dispatch!(self, c => c.on_sent(now, bytes))
    }
    #[inline]
    fn on_ack(&mut self, now: Instant, acked_bytes: u64, rtt: Option<Duration>) {
        dispatch!(self, c => c.on_ack(now, acked_bytes, rtt))
    }
    #[inline]
    fn on_cnp(&mut self, now: Instant) {
        dispatch!(self, c => c.on_cnp(now))
    }
    #[inline]
    fn on_loss(&mut self, now: Instant) {
        dispatch!(self, c => c.on_loss(now))
    }
    #[inline]
    fn on_int(&mut self, now: Instant, hops: &[IntHop], ack: Option<IntAck>) {
        dispatch!(self, c => c.on_int(now, hops, ack))
    }
    #[inline]
    fn on_path_mtu(&mut self, mtu: u32) {
        dispatch!(self, c => c.on_path_mtu(mtu))
    }
    #[inline]
    fn handle_timeout(&mut self, now: Instant) {
        dispatch!(self, c => c.handle_timeout(now))
    }
    #[inline]
    fn poll_timeout(&self) -> Option<Instant> {
        dispatch!(self, c => c.poll_timeout())
    }
    #[inline]
    fn rate(&self) -> Rate {
        dispatch!(self, c => c.rate())
    }
    // Called in-crate only (the QP's send gate), where inlining needs no hint.
    fn window(&self) -> Option<u64> {
        dispatch!(self, c => c.window())
    }
    fn has_window(&self) -> bool {
        dispatch!(self, c => c.has_window())
    }
    fn ack_each(&self) -> bool {
        dispatch!(self, c => c.ack_each())
    }
    #[inline]
    fn metrics(&self) -> CcMetrics {
        dispatch!(self, c => c.metrics())
    }
}

/// The earliest of two optional deadlines.
pub(crate) fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, None) => a,
        (None, b) => b,
    }
}

/// Clamps a rate in bits/s (as `f64`) into `[min, max]`; `max` wins when they cross.
pub(crate) fn clamp_rate(rate: f64, min: f64, max: f64) -> f64 {
    rate.max(min).min(max)
}
