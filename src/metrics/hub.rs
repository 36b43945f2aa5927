//! The [`MetricsHub`] scrapes read from and the data path publishes into, and what one
//! [`Exposition`] holds. Not here: rendering ([`super::exposition`]) and serving
//! ([`super::server`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use roce_dpdk::lcore::shard::EndpointSnapshot;

/// How long a scrape waits for the loops to publish a fresh snapshot.
pub const PUBLISH_WAIT: Duration = Duration::from_millis(250);

/// The least time between two asks for a fresh snapshot: a scrape within this long of the last
/// ask gets the newest snapshot there is, so however often clients scrape, the loops (or the
/// lcores of a [`Source`]) build at most one snapshot per interval (10 a second).
pub const MIN_COLLECT_INTERVAL: Duration = Duration::from_millis(100);

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

/// A published exposition and its serial number (how many were published before it: two
/// scrapes with the same serial saw the same exposition, and one rendering serves both).
#[derive(Clone, Debug, Default)]
pub struct Published {
    /// 0 for the empty one a hub starts with, then 1, 2, ... in publication order.
    pub serial: u64,
    /// The exposition.
    pub exposition: Arc<Exposition>,
}

#[derive(Default)]
struct Newest {
    generation: u64,
    published: Published,
}

/// Where scrapes get their data: the newest [`Exposition`] the run published, and the
/// generation counter that asks for a fresh one; or a [`Source`] that takes one itself.
#[derive(Default)]
pub struct MetricsHub {
    wanted: AtomicU64,
    newest: Mutex<Newest>,
    published: Condvar,
    source: Mutex<Option<Source>>,
    /// When a scrape last asked for a fresh snapshot.
    asked: Mutex<Option<Instant>>,
}

impl std::fmt::Debug for MetricsHub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetricsHub")
            .field("wanted", &self.wanted)
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
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
        self.publish_shared(generation, Arc::new(e));
    }

    fn publish_shared(&self, generation: u64, exposition: Arc<Exposition>) -> Published {
        let mut newest = lock(&self.newest);
        newest.generation = generation.max(newest.generation);
        newest.published = Published {
            serial: newest.published.serial.saturating_add(1),
            exposition,
        };
        self.published.notify_all();
        newest.published.clone()
    }

    /// Takes expositions from `source` from now on (lcores that answer snapshot requests
    /// themselves); `None` goes back to what loops publish.
    pub fn set_source(&self, source: Option<Source>) {
        *lock(&self.source) = source;
    }

    /// Asks for a fresh snapshot and returns it, or the newest there is after [`PUBLISH_WAIT`]
    /// (a run that has ended publishes no more: its last one stands). Within
    /// [`MIN_COLLECT_INTERVAL`] of the last ask, returns the newest at once without asking.
    pub fn collect(&self) -> Exposition {
        Exposition::clone(&self.collect_published().exposition)
    }

    /// [`MetricsHub::collect`], shared and with its serial number.
    pub fn collect_published(&self) -> Published {
        if !self.may_ask(Instant::now()) {
            return lock(&self.newest).published.clone();
        }
        if let Some(source) = lock(&self.source).as_ref() {
            return self.publish_shared(u64::MAX - 1, Arc::new(source()));
        }
        let generation = self.wanted.fetch_add(1, Ordering::Relaxed) + 1;
        let newest = lock(&self.newest);
        let (newest, _) = self
            .published
            .wait_timeout_while(newest, PUBLISH_WAIT, |n| n.generation < generation)
            .unwrap_or_else(|p| p.into_inner());
        newest.published.clone()
    }

    /// Whether a scrape at `now` may ask for a fresh snapshot (and if so, records the ask).
    fn may_ask(&self, now: Instant) -> bool {
        let mut asked = lock(&self.asked);
        match *asked {
            Some(t) if now.saturating_duration_since(t) < MIN_COLLECT_INTERVAL => false,
            _ => {
                *asked = Some(now);
                true
            }
        }
    }

    /// The newest published exposition without asking for a fresh one.
    pub fn newest(&self) -> Exposition {
        Exposition::clone(&lock(&self.newest).published.exposition)
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;

    /// An exposition that says how many snapshots were made (as its number of ports).
    fn numbered(n: usize) -> Exposition {
        Exposition {
            ports: vec![PortMetrics::default(); n],
            switch: None,
        }
    }

    /// A data-path loop publishing into `hub` until `stop`; returns how many snapshots it made.
    fn spawn_loop(hub: Arc<MetricsHub>, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<usize> {
        std::thread::spawn(move || {
            let (mut p, mut made) = (Publisher::default(), 0);
            while !stop.load(Ordering::Relaxed) {
                p.offer(&hub, || {
                    made += 1;
                    numbered(made)
                });
                std::thread::yield_now();
            }
            made
        })
    }

    #[test]
    fn a_scrape_flood_makes_at_most_one_snapshot_per_interval() {
        let hub = Arc::new(MetricsHub::new());
        let stop = Arc::new(AtomicBool::new(false));
        let data_path = spawn_loop(hub.clone(), stop.clone());
        let start = Instant::now();
        let mut served = 0;
        while start.elapsed() < Duration::from_millis(350) {
            served += usize::from(!hub.collect().ports.is_empty());
        }
        let elapsed = start.elapsed();
        stop.store(true, Ordering::Relaxed);
        let made = data_path.join().expect("loop");
        // Asks are at least MIN_COLLECT_INTERVAL apart: the first at 0, then one per interval.
        let bound = (elapsed.as_millis() / MIN_COLLECT_INTERVAL.as_millis()) as usize + 1;
        assert!(
            (1..=bound).contains(&made),
            "{made} snapshots for {served} scrapes in {elapsed:?}"
        );
        assert!(served > made, "{served} scrapes, {made} snapshots");
    }

    #[test]
    fn a_scrape_after_the_interval_gets_a_fresh_snapshot() {
        let hub = Arc::new(MetricsHub::new());
        let stop = Arc::new(AtomicBool::new(false));
        let data_path = spawn_loop(hub.clone(), stop.clone());
        assert_eq!(hub.collect(), numbered(1));
        assert_eq!(hub.collect(), numbered(1), "within the interval: reused");
        std::thread::sleep(MIN_COLLECT_INTERVAL);
        assert_eq!(hub.collect(), numbered(2));
        stop.store(true, Ordering::Relaxed);
        assert_eq!(data_path.join().expect("loop"), 2);
    }

    #[test]
    fn the_final_publication_shows_at_once_within_the_interval() {
        let hub = MetricsHub::new();
        hub.publish(0, numbered(1));
        // No loop answers: the ask waits PUBLISH_WAIT and returns the newest.
        assert_eq!(hub.collect(), numbered(1));
        hub.publish(u64::MAX, numbered(7));
        let p = hub.collect_published();
        assert_eq!((*p.exposition).clone(), numbered(7));
        assert_eq!(p.serial, 2);
        assert_eq!(
            hub.collect_published().serial,
            2,
            "same exposition, same serial"
        );
    }

    #[test]
    fn a_source_is_asked_at_most_once_per_interval() {
        let hub = MetricsHub::new();
        let asked = Arc::new(AtomicU64::new(0));
        let a = asked.clone();
        hub.set_source(Some(Box::new(move || {
            numbered(a.fetch_add(1, Ordering::Relaxed) as usize + 1)
        })));
        let start = Instant::now();
        for _ in 0..2_000 {
            assert!(!hub.collect().ports.is_empty());
        }
        let elapsed = start.elapsed();
        let bound = (elapsed.as_millis() / MIN_COLLECT_INTERVAL.as_millis()) as u64 + 1;
        let asked = asked.load(Ordering::Relaxed);
        assert!((1..=bound).contains(&asked), "{asked} asks in {elapsed:?}");
    }
}
