//! Live metrics: what the running endpoints count, as OpenMetrics text for Prometheus
//! ([`exposition`], served over HTTP by [`server`], whose request heads [`request`] parses) and
//! as commands on DPDK's telemetry socket ([`telemetry`]), from one [`MetricsHub`].
//!
//! The data path never waits for a scrape: a scrape raises a generation counter, the loops (or
//! lcores) see it on their next turn and publish a snapshot, and the scrape renders the newest
//! snapshot it has (after waiting at most [`PUBLISH_WAIT`] for it). Scrapes cannot make the
//! loops snapshot more than once per [`MIN_COLLECT_INTERVAL`]: one within it of the last ask gets
//! the newest snapshot without asking. Not here: the counters themselves (the transport counts
//! them) and the command-line flags (`--metrics`, in the commands).
//!
//! [`request`] and [`server`] need no DPDK (the fuzz targets and tests use them alone); the rest
//! is under the `dpdk` feature.

// Without DPDK the links above to the hub, exposition and telemetry have nothing to point at.
#![cfg_attr(not(feature = "dpdk"), allow(rustdoc::broken_intra_doc_links))]

#[cfg(feature = "dpdk")]
pub mod exposition;
#[cfg(feature = "dpdk")]
mod hub;
pub mod request;
pub mod server;
#[cfg(feature = "dpdk")]
pub mod telemetry;

#[cfg(feature = "dpdk")]
pub use hub::{
    Exposition, MetricsHub, PortMetrics, Published, Publisher, Source, SwitchMetrics,
    MIN_COLLECT_INTERVAL, PUBLISH_WAIT,
};
