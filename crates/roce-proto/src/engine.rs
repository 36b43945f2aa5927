//! [`Engine`]: the interface of a sans-IO protocol engine as every driver sees it (frames and
//! `now` in, frames and deadlines out). The [`Endpoint`](crate::endpoint::Endpoint) and the
//! [`ResolvingEndpoint`](crate::resolving::ResolvingEndpoint) implement it; the DPDK run loop, the in-memory pairs and the
//! fabric's hosts drive it.

use crate::time::Instant;

/// A sans-IO protocol engine as a driver sees it: frames and time in, frames and deadlines out.
///
/// The transport's `Endpoint` implements it; the DPDK run loop, the in-memory pairs and the
/// simulator's hosts drive any `Engine` the same way, which is what lets one transport run
/// everywhere.
pub trait Engine {
    /// Feeds one received Ethernet frame.
    fn handle_frame(&mut self, now: Instant, frame: &[u8]);
    /// Lets timers that are due at `now` fire.
    fn handle_timeout(&mut self, now: Instant);
    /// Writes the next frame to send at `now` into `buf` and returns its length, or `None` when
    /// nothing may leave yet (nothing queued, or pacing holds it back).
    fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize>;
    /// The next instant at which the engine wants `handle_timeout` or has a paced frame due.
    fn poll_timeout(&self) -> Option<Instant>;
}
