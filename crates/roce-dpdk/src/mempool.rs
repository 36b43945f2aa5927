//! Packet-buffer pools (`rte_pktmbuf_pool_create`). A pool outlives its mbufs: dropping a pool
//! whose mbufs are still out leaks it (with a warning) rather than freeing memory in use.

use std::ffi::CString;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};

use dpdk_bindings as sys;

use super::eal::Eal;
use super::error::{call_error, DpdkError};
use super::mbuf::Mbuf;

/// How to size a pool.
#[derive(Clone, Debug)]
pub struct MempoolConfig {
    /// Name prefix (a unique suffix is added).
    pub name: String,
    /// Number of mbufs (best a power of two minus one).
    pub size: u32,
    /// Per-lcore cache size.
    pub cache: u32,
    /// Bytes of data room per mbuf including DPDK's headroom.
    pub data_room: u16,
}

impl Default for MempoolConfig {
    fn default() -> Self {
        MempoolConfig {
            name: "roce".into(),
            size: 4095,
            cache: 256,
            data_room: sys::RTE_MBUF_DEFAULT_BUF_SIZE as u16,
        }
    }
}

impl MempoolConfig {
    /// A pool whose mbufs hold frames up to `max_frame` bytes in one segment.
    pub fn for_frames(max_frame: usize, size: u32) -> Self {
        let room = max_frame.saturating_add(sys::RTE_PKTMBUF_HEADROOM as usize);
        MempoolConfig {
            size,
            data_room: u16::try_from(room).unwrap_or(u16::MAX),
            ..MempoolConfig::default()
        }
    }
}

/// A pool of packet buffers.
#[derive(Debug)]
pub struct Mempool {
    raw: NonNull<sys::rte_mempool>,
    name: String,
    data_room: u16,
}

// SAFETY: DPDK mempools (ring_mp_mc ops) are safe for concurrent get/put from any thread; the
// per-lcore cache is only used by EAL lcores, which run one thread each.
unsafe impl Send for Mempool {}
// SAFETY: as above; every method takes &self and calls thread-safe DPDK functions.
unsafe impl Sync for Mempool {}

static POOL_SEQ: AtomicU32 = AtomicU32::new(0);

impl Mempool {
    /// Creates a pool on the caller's NUMA socket.
    pub fn new(_eal: &Eal, config: &MempoolConfig) -> Result<Mempool, DpdkError> {
        let seq = POOL_SEQ.fetch_add(1, Ordering::Relaxed);
        let name = format!("{}{seq}", config.name);
        let c = CString::new(name.clone()).map_err(|_| DpdkError::NulInName(name.clone()))?;
        // SAFETY: EAL is running (the token exists); `c` is a valid C string.
        let raw = unsafe {
            sys::rte_pktmbuf_pool_create(
                c.as_ptr(),
                config.size,
                config.cache,
                0,
                config.data_room,
                sys::rte_socket_id() as i32,
            )
        };
        let raw = NonNull::new(raw).ok_or_else(|| {
            let e = call_error("rte_pktmbuf_pool_create", 0);
            tracing::error!(%e, "is librte_mempool_ring.so loaded (-d)?");
            e
        })?;
        Ok(Mempool {
            raw,
            name,
            data_room: config.data_room,
        })
    }

    /// The pool's DPDK name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Bytes of data room per mbuf, DPDK headroom included.
    pub fn data_room(&self) -> u16 {
        self.data_room
    }

    /// Largest frame one mbuf holds after the default headroom.
    pub fn max_frame(&self) -> usize {
        usize::from(self.data_room).saturating_sub(sys::RTE_PKTMBUF_HEADROOM as usize)
    }

    /// Mbufs currently allocated from the pool (held by us, a port or a ring).
    pub fn in_use(&self) -> u32 {
        // SAFETY: the pool is alive; the count is read from the ring and the lcore caches.
        unsafe { sys::roce_shim_mempool_in_use_count(self.raw.as_ptr()) }
    }

    /// Mbufs ready to allocate.
    pub fn available(&self) -> u32 {
        // SAFETY: as for in_use.
        unsafe { sys::rte_mempool_avail_count(self.raw.as_ptr()) }
    }

    /// One empty mbuf, or `None` when the pool is exhausted.
    pub fn alloc(&self) -> Option<Mbuf> {
        // SAFETY: the pool is alive; a non-null result is a fresh, reset mbuf we now own.
        let m = unsafe { sys::roce_shim_pktmbuf_alloc(self.raw.as_ptr()) };
        NonNull::new(m).map(|m| {
            // SAFETY: `m` was just allocated and is owned by nobody else.
            unsafe { Mbuf::from_raw(m) }
        })
    }

    /// One empty mbuf whose frame starts just far enough before a cache line (at most 63 bytes
    /// of DPDK's headroom given up) that frame byte `lead` is the line's first byte, or `None`
    /// when the pool is exhausted. With `lead` = [`roce_proto::wire::ICRC_LEAD`] the bytes the ICRC
    /// hashes start on a line, so the CRC's 64-byte loads never straddle two.
    pub fn alloc_aligned(&self, lead: u16) -> Option<Mbuf> {
        // SAFETY: the pool is alive; a non-null result is a fresh mbuf we now own whose data
        // start the shim only moved back within its headroom.
        let m = unsafe { sys::roce_shim_pktmbuf_alloc_aligned(self.raw.as_ptr(), lead) };
        NonNull::new(m).map(|m| {
            // SAFETY: `m` was just allocated and is owned by nobody else.
            unsafe { Mbuf::from_raw(m) }
        })
    }

    /// Appends `n` empty mbufs to `out`, all or nothing; `false` when the pool has fewer.
    pub fn alloc_bulk(&self, out: &mut Vec<Mbuf>, n: usize) -> bool {
        let Ok(count) = u32::try_from(n) else {
            return false;
        };
        out.reserve(n);
        let len = out.len();
        // SAFETY: `out` has room for n more elements; Mbuf is repr(transparent) over a non-null
        // rte_mbuf pointer, so the spare capacity is an array of rte_mbuf pointers for DPDK.
        let ret = unsafe {
            sys::roce_shim_pktmbuf_alloc_bulk(
                self.raw.as_ptr(),
                out.as_mut_ptr().add(len).cast::<*mut sys::rte_mbuf>(),
                count,
            )
        };
        if ret != 0 {
            return false;
        }
        // SAFETY: DPDK wrote n valid, owned, non-null mbuf pointers after `len`.
        unsafe { out.set_len(len + n) };
        true
    }

    pub(crate) fn as_ptr(&self) -> *mut sys::rte_mempool {
        self.raw.as_ptr()
    }
}

impl Drop for Mempool {
    fn drop(&mut self) {
        let in_use = self.in_use();
        if in_use != 0 {
            tracing::warn!(pool = %self.name, in_use, "mempool dropped with mbufs out; leaking it");
            return;
        }
        // SAFETY: no mbuf of this pool is out, and no port references it (ports hold an Arc).
        unsafe { sys::rte_mempool_free(self.raw.as_ptr()) };
    }
}
