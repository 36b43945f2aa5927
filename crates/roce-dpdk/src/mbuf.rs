//! One owned `rte_mbuf` holding one single-segment frame; freed on drop. Not here: chains of
//! segments (we neither build nor accept them on the fast path).

use std::ptr::NonNull;

use dpdk_bindings as sys;

use roce_proto::port::FrameBuf;

/// An owned DPDK packet buffer. `repr(transparent)` so a `[Mbuf]` is a `struct rte_mbuf *[]`.
#[repr(transparent)]
#[derive(Debug)]
pub struct Mbuf(NonNull<sys::rte_mbuf>);

// SAFETY: an Mbuf is the only owner of its rte_mbuf; DPDK mbufs may be freed from any thread
// (the mempool is multi-producer).
unsafe impl Send for Mbuf {}

impl Mbuf {
    /// Takes ownership of a raw mbuf.
    ///
    /// # Safety
    /// `m` must be a valid single-owner mbuf that nobody else frees or uses afterwards.
    pub(crate) unsafe fn from_raw(m: NonNull<sys::rte_mbuf>) -> Mbuf {
        Mbuf(m)
    }

    /// Gives up ownership without freeing.
    pub fn into_raw(self) -> *mut sys::rte_mbuf {
        let p = self.0.as_ptr();
        std::mem::forget(self);
        p
    }

    /// Bytes of data in the first segment.
    pub fn data_len(&self) -> usize {
        // SAFETY: valid owned mbuf.
        usize::from(unsafe { sys::roce_shim_pktmbuf_data_len(self.0.as_ptr()) })
    }

    /// Bytes of data in the whole chain.
    pub fn pkt_len(&self) -> usize {
        // SAFETY: valid owned mbuf.
        unsafe { sys::roce_shim_pktmbuf_pkt_len(self.0.as_ptr()) as usize }
    }

    /// Number of segments.
    pub fn segments(&self) -> u16 {
        // SAFETY: valid owned mbuf.
        unsafe { sys::roce_shim_pktmbuf_nb_segs(self.0.as_ptr()) }
    }

    /// Free bytes before the data.
    pub fn headroom(&self) -> usize {
        // SAFETY: valid owned mbuf.
        usize::from(unsafe { sys::roce_shim_pktmbuf_headroom(self.0.as_ptr()) })
    }

    /// Free bytes after the data in the last segment.
    pub fn tailroom(&self) -> usize {
        // SAFETY: valid owned mbuf.
        usize::from(unsafe { sys::roce_shim_pktmbuf_tailroom(self.0.as_ptr()) })
    }

    /// Offload flags (`RTE_MBUF_F_*`).
    pub fn ol_flags(&self) -> u64 {
        // SAFETY: valid owned mbuf.
        unsafe { sys::roce_shim_pktmbuf_ol_flags(self.0.as_ptr()) }
    }

    /// Requests IPv4 header checksum offload for a frame with an untagged Ethernet header and
    /// an IPv4 header of `ip_header_len` bytes (the port must have it enabled).
    pub fn request_ipv4_checksum(&mut self, ip_header_len: u16) {
        let flags = self.ol_flags() | sys::RTE_MBUF_F_TX_IPV4 | sys::RTE_MBUF_F_TX_IP_CKSUM;
        // SAFETY: valid owned mbuf; plain field writes.
        unsafe {
            sys::roce_shim_pktmbuf_set_ol_flags(self.0.as_ptr(), flags);
            sys::roce_shim_pktmbuf_set_tx_lens(self.0.as_ptr(), 14, ip_header_len);
        }
    }

    /// Adds `len` bytes at the end and returns them, or `None` without room.
    pub fn append(&mut self, len: usize) -> Option<&mut [u8]> {
        let l = u16::try_from(len).ok()?;
        // SAFETY: valid owned mbuf; a non-null result points at `len` bytes inside its buffer.
        let p = unsafe { sys::roce_shim_pktmbuf_append(self.0.as_ptr(), l) };
        NonNull::new(p.cast::<u8>()).map(|p| {
            // SAFETY: `len` bytes at p belong to this mbuf's data and are borrowed via &mut self.
            unsafe { std::slice::from_raw_parts_mut(p.as_ptr(), len) }
        })
    }

    /// Adds `len` bytes in front and returns them, or `None` without headroom.
    pub fn prepend(&mut self, len: usize) -> Option<&mut [u8]> {
        let l = u16::try_from(len).ok()?;
        // SAFETY: as for append, at the front.
        let p = unsafe { sys::roce_shim_pktmbuf_prepend(self.0.as_ptr(), l) };
        NonNull::new(p.cast::<u8>()).map(|p| {
            // SAFETY: `len` bytes at p belong to this mbuf's data and are borrowed via &mut self.
            unsafe { std::slice::from_raw_parts_mut(p.as_ptr(), len) }
        })
    }

    /// Removes `len` bytes from the end; `false` (nothing changed) when shorter.
    pub fn trim(&mut self, len: usize) -> bool {
        let Ok(l) = u16::try_from(len) else {
            return false;
        };
        // SAFETY: valid owned mbuf.
        unsafe { sys::roce_shim_pktmbuf_trim(self.0.as_ptr(), l) == 0 }
    }
}

impl FrameBuf for Mbuf {
    fn frame(&self) -> &[u8] {
        let mut len = 0u16;
        // SAFETY: valid owned mbuf; the shim returns mtod and data_len, which delimit bytes of
        // this mbuf's buffer (DPDK memory, always initialised), borrowed via &self.
        unsafe {
            let p = sys::roce_shim_pktmbuf_data(self.0.as_ptr(), &mut len);
            std::slice::from_raw_parts(p, usize::from(len))
        }
    }

    fn frame_mut(&mut self) -> &mut [u8] {
        let mut len = 0u16;
        // SAFETY: as for frame, exclusively via &mut self.
        unsafe {
            let p = sys::roce_shim_pktmbuf_data(self.0.as_ptr(), &mut len);
            std::slice::from_raw_parts_mut(p, usize::from(len))
        }
    }

    fn room(&self) -> usize {
        // SAFETY: valid owned mbuf.
        usize::from(unsafe { sys::roce_shim_pktmbuf_room(self.0.as_ptr()) })
    }

    fn set_frame_len(&mut self, len: usize) -> bool {
        let Ok(len) = u16::try_from(len) else {
            return false;
        };
        // SAFETY: valid owned mbuf; the shim only changes lengths within the data room.
        unsafe { sys::roce_shim_pktmbuf_set_len(self.0.as_ptr(), len) == 0 }
    }
}

impl Drop for Mbuf {
    fn drop(&mut self) {
        // SAFETY: we own the mbuf (and its chain) and never use it again.
        unsafe { sys::roce_shim_pktmbuf_free(self.0.as_ptr()) }
    }
}
