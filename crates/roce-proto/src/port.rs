//! The seam between the transport and whatever moves frames: a [`Port`] sends and receives bursts
//! of owned frame buffers. DPDK ports, the in-memory [`loopback`](crate::loopback) pair, the
//! fabric and middleware ([`fault`](crate::fault) injection, pcap capture) implement it, so the
//! same run loop drives the same transport over any of them. Only the interface lives here.

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

/// Writes [`Port::caps`] and [`Port::alloc`] of a middleware port as those of the port it wraps
/// (the field `$inner`): middleware changes which frames cross it, not what the device can do
/// or whose pool buffers come from. Use it inside `impl Port for ...` after `type Buf`.
#[macro_export]
macro_rules! port_caps_and_pool_of {
    ($inner:ident) => {
        fn caps(&self) -> $crate::port::PortCaps {
            self.$inner.caps()
        }

        fn alloc(&mut self) -> Option<Self::Buf> {
            self.$inner.alloc()
        }
    };
}
