//! Drivers: what moves frames between the sans-IO core and the world.
//!
//! A [`Port`] sends and receives bursts of owned frame buffers. DPDK ports, the in-memory loopback,
//! the simulator and middleware (pcap capture, fault injection) all implement it, so the same
//! runtime loop and the same transport run over any of them.

#[cfg(feature = "dpdk")]
#[allow(unsafe_code)]
pub mod dpdk;

/// An owned buffer holding one Ethernet frame (without FCS).
pub trait FrameBuf {
    /// The frame's bytes.
    fn frame(&self) -> &[u8];
    /// The frame's bytes, writable.
    fn frame_mut(&mut self) -> &mut [u8];
    /// The largest frame this buffer can hold.
    fn room(&self) -> usize;
    /// Sets the frame length (growing exposes unspecified bytes). Returns `false`, changing
    /// nothing, when `len` exceeds [`FrameBuf::room`].
    fn set_frame_len(&mut self, len: usize) -> bool;
}

/// What a port can do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PortCaps {
    /// Largest Ethernet payload (L3 MTU) the port carries.
    pub mtu: usize,
    /// Preferred number of frames per burst.
    pub burst: usize,
}

/// A source and sink of Ethernet frames, driven in bursts.
///
/// Bursts are `Vec`s the caller keeps and reuses, so a steady-state loop allocates nothing.
pub trait Port {
    /// The buffer type this port hands out and takes back.
    type Buf: FrameBuf;

    /// What the port can do.
    fn caps(&self) -> PortCaps;

    /// A fresh buffer to build a frame in, or `None` when the pool is exhausted.
    fn alloc(&mut self) -> Option<Self::Buf>;

    /// Appends up to `max` received frames to `out`; returns how many were appended.
    fn rx_burst(&mut self, out: &mut Vec<Self::Buf>, max: usize) -> usize;

    /// Sends frames from the front of `bufs`, removing those sent; frames the port could not take
    /// stay in `bufs`, in order, for the caller to retry or drop. Returns how many were sent.
    fn tx_burst(&mut self, bufs: &mut Vec<Self::Buf>) -> usize;
}

/// A sans-IO protocol engine as a driver sees it: frames and time in, frames and deadlines out.
///
/// The transport's `Endpoint` implements it; the DPDK run loop, the in-memory pairs and the
/// simulator's hosts drive any `Engine` the same way, which is what lets one transport run
/// everywhere.
pub trait Engine {
    /// Feeds one received Ethernet frame.
    fn handle_frame(&mut self, now: crate::time::Instant, frame: &[u8]);
    /// Lets timers that are due at `now` fire.
    fn handle_timeout(&mut self, now: crate::time::Instant);
    /// Writes the next frame to send at `now` into `buf` and returns its length, or `None` when
    /// nothing may leave yet (nothing queued, or pacing holds it back).
    fn poll_transmit(&mut self, now: crate::time::Instant, buf: &mut [u8]) -> Option<usize>;
    /// The next instant at which the engine wants `handle_timeout` or has a paced frame due.
    fn poll_timeout(&self) -> Option<crate::time::Instant>;
}

pub mod fault;
pub mod loopback;
