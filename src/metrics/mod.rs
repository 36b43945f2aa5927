//! Live metrics: what the running endpoints count, as OpenMetrics text for Prometheus
//! ([`exposition`], served over HTTP by [`server`]) and as commands on DPDK's telemetry socket
//! ([`telemetry`]), from one [`MetricsHub`].
//!
//! The data path never waits for a scrape: a scrape raises a generation counter, the loops (or
//! lcores) see it on their next turn and publish a snapshot, and the scrape renders the newest
//! snapshots it has (at most [`PUBLISH_WAIT`] old). Not here: the counters themselves (the
//! transport counts them) and the command-line flags (`--metrics`, in the commands).

pub mod exposition;
pub mod server;
pub mod telemetry;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

use roce_dpdk::lcore::shard::EndpointSnapshot;

/// How long a scrape waits for the loops to publish a fresh snapshot.
pub const PUBLISH_WAIT: Duration = Duration::from_millis(250);

/// One port (endpoint) of a run: the `device` label and its counters.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct PortMetrics {
    /// The device name (`r`, `s1`, the DPDK port's name).
    pub device: String,
    /// Its counters and QPs (all shards merged).
    pub snapshot: EndpointSnapshot,
}

/// A software switch's counters (the demo's bottleneck).
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct SwitchMetrics {
    /// ECT frames marked CE.
    pub ecn_marked: u64,
    /// Frames dropped (buffer full).
    pub drops: u64,
    /// PFC pause frames sent.
    pub pfc_pause_frames: u64,
    /// The 802.1p priority pause frames are for (the data's).
    pub priority: u8,
    /// Bytes queued toward the bottleneck now.
    pub queue_bytes: u64,
    /// Frames forwarded.
    pub forwarded: u64,
}

/// Everything one scrape shows.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct Exposition {
    /// The ports.
    pub ports: Vec<PortMetrics>,
    /// The switch, when the run has one.
    pub switch: Option<SwitchMetrics>,
}

/// Takes a fresh exposition from running lcores (they answer between two polls).
pub type Source = Box<dyn Fn() -> Exposition + Send>;

/// Where scrapes get their data: the newest [`Exposition`] the run published, and the
/// generation counter that asks for a fresh one; or a [`Source`] that takes one itself.
#[derive(Default)]
pub struct MetricsHub {
    wanted: AtomicU64,
    newest: Mutex<(u64, Exposition)>,
    published: Condvar,
    source: Mutex<Option<Source>>,
}

impl std::fmt::Debug for MetricsHub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetricsHub")
            .field("wanted", &self.wanted)
            .finish_non_exhaustive()
    }
}

impl MetricsHub {
    /// An empty hub.
    pub fn new() -> Self {
        MetricsHub::default()
    }

    /// The generation the readers want; a loop that last published an older one publishes
    /// (one relaxed load: cheap enough for every turn of a loop).
    pub fn wanted(&self) -> u64 {
        self.wanted.load(Ordering::Relaxed)
    }

    /// Publishes `e` as generation `generation` (what [`MetricsHub::wanted`] said).
    pub fn publish(&self, generation: u64, e: Exposition) {
        let mut newest = self.newest.lock().unwrap_or_else(|p| p.into_inner());
        *newest = (generation.max(newest.0), e);
        self.published.notify_all();
    }

    /// Takes expositions from `source` from now on (lcores that answer snapshot requests
    /// themselves); `None` goes back to what loops publish.
    pub fn set_source(&self, source: Option<Source>) {
        *self.source.lock().unwrap_or_else(|p| p.into_inner()) = source;
    }

    /// Asks for a fresh snapshot and returns it, or the newest there is after [`PUBLISH_WAIT`]
    /// (a run that has ended publishes no more: its last one stands).
    pub fn collect(&self) -> Exposition {
        if let Some(source) = self
            .source
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
        {
            let e = source();
            self.publish(u64::MAX - 1, e.clone());
            return e;
        }
        let generation = self.wanted.fetch_add(1, Ordering::Relaxed) + 1;
        let newest = self.newest.lock().unwrap_or_else(|p| p.into_inner());
        let (newest, _) = self
            .published
            .wait_timeout_while(newest, PUBLISH_WAIT, |(g, _)| *g < generation)
            .unwrap_or_else(|p| p.into_inner());
        newest.1.clone()
    }

    /// The newest published exposition without asking for a fresh one.
    pub fn newest(&self) -> Exposition {
        self.newest
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .1
            .clone()
    }
}

/// A loop's side of the hub: remembers the generation it last published.
#[derive(Debug, Default)]
pub struct Publisher {
    seen: u64,
}

impl Publisher {
    /// Publishes `make()` into `hub` if a reader asked since the last time; `make` runs only
    /// then.
    pub fn offer(&mut self, hub: &MetricsHub, make: impl FnOnce() -> Exposition) {
        let wanted = hub.wanted();
        if wanted != self.seen {
            self.seen = wanted;
            hub.publish(wanted, make());
        }
    }
}
