//! Application memory behind a registered region: a pointer and a length the program handed to
//! `ibv_reg_mr`, lent to the transport as the region's bytes ([`RegionMemory`]: zero-copy). The
//! progress thread reads and writes it with plain copies, only for accesses the transport has
//! checked (key, rights, PD, bounds, the region still registered), and never after
//! `ibv_dereg_mr` returns: deregistration drops the transport's handle before it answers.

use std::alloc::Layout;
use std::ptr::NonNull;
use std::sync::Arc;

use roce_proto::mr::RegionMemory;

/// Memory of an application (or, for tests, owned by this value) that the progress thread may
/// read and write.
#[derive(Clone, Debug)]
pub struct AppMemory {
    ptr: NonNull<u8>,
    len: usize,
    _owned: Option<Arc<Owned>>,
}

// SAFETY: AppMemory is a pointer and a length; every access is a copy through the raw pointer
// (never a Rust reference into the memory), and the constructors' contracts keep the memory
// alive and valid for as long as any clone exists, whichever thread holds it.
unsafe impl Send for AppMemory {}
// SAFETY: as for Send: shared use only ever copies through the raw pointer.
unsafe impl Sync for AppMemory {}

impl AppMemory {
    /// Memory at `ptr`, `len` bytes long, as `ibv_reg_mr` receives it.
    ///
    /// # Safety
    ///
    /// `ptr..ptr + len` must stay valid for reads and writes until every clone of the returned
    /// value is dropped (libibverbs' contract: until `ibv_dereg_mr` returns, which drops the
    /// progress thread's clone before it answers). Concurrent access by the application to the
    /// same bytes is the application's race, as it is with a NIC's DMA.
    pub unsafe fn from_raw(ptr: *mut u8, len: usize) -> Option<AppMemory> {
        Some(AppMemory {
            ptr: NonNull::new(ptr)?,
            len,
            _owned: None,
        })
    }

    /// `len` zeroed bytes owned by the value (and its clones): test programs' buffers.
    pub fn owned(len: usize) -> AppMemory {
        let owned = Owned::new(len);
        AppMemory {
            ptr: owned.ptr,
            len,
            _owned: Some(Arc::new(owned)),
        }
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// The region is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The address the application sees.
    pub fn addr(&self) -> u64 {
        self.ptr.as_ptr() as u64
    }

    /// Copies `dst.len()` bytes starting `offset` bytes in into `dst`; `false` (copying nothing)
    /// when the range leaves the memory.
    pub fn read(&self, offset: usize, dst: &mut [u8]) -> bool {
        if !self.covers(offset, dst.len()) {
            return false;
        }
        // SAFETY: the range is inside the memory (checked above), which from_raw's contract or
        // our own allocation keeps valid; dst is a distinct Rust buffer.
        unsafe {
            std::ptr::copy_nonoverlapping(
                self.ptr.as_ptr().add(offset),
                dst.as_mut_ptr(),
                dst.len(),
            )
        };
        true
    }

    /// Copies `src` into the memory starting `offset` bytes in; `false` (copying nothing) when
    /// the range leaves the memory.
    pub fn write(&self, offset: usize, src: &[u8]) -> bool {
        if !self.covers(offset, src.len()) {
            return false;
        }
        // SAFETY: as in `read`; src is a distinct Rust buffer.
        unsafe {
            std::ptr::copy_nonoverlapping(src.as_ptr(), self.ptr.as_ptr().add(offset), src.len())
        };
        true
    }

    fn covers(&self, offset: usize, len: usize) -> bool {
        offset.checked_add(len).is_some_and(|end| end <= self.len)
    }
}

impl RegionMemory for AppMemory {
    fn len(&self) -> usize {
        self.len
    }
    fn read(&self, offset: usize, dst: &mut [u8]) -> bool {
        AppMemory::read(self, offset, dst)
    }
    fn write(&mut self, offset: usize, src: &[u8]) -> bool {
        AppMemory::write(self, offset, src)
    }
}

/// A zeroed heap block, freed on drop.
#[derive(Debug)]
struct Owned {
    ptr: NonNull<u8>,
    layout: Layout,
}

// SAFETY: the block is plain bytes only reached through copies (see AppMemory).
unsafe impl Send for Owned {}
// SAFETY: as for Send.
unsafe impl Sync for Owned {}

impl Owned {
    fn new(len: usize) -> Owned {
        let layout = Layout::from_size_align(len.max(1), 64).unwrap_or(Layout::new::<u64>());
        // SAFETY: the layout has a non-zero size.
        let raw = unsafe { std::alloc::alloc_zeroed(layout) };
        let Some(ptr) = NonNull::new(raw) else {
            std::alloc::handle_alloc_error(layout)
        };
        Owned { ptr, layout }
    }
}

impl Drop for Owned {
    fn drop(&mut self) {
        // SAFETY: allocated in Owned::new with this layout, freed once.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), self.layout) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_stay_inside_the_memory() {
        let m = AppMemory::owned(16);
        assert!(m.write(4, &[1, 2, 3]));
        let mut out = [0u8; 5];
        assert!(m.read(3, &mut out));
        assert_eq!(out, [0, 1, 2, 3, 0]);
        assert!(!m.write(14, &[9, 9, 9]));
        assert!(!m.read(usize::MAX, &mut out));
        let clone = m.clone();
        drop(m);
        assert!(clone.read(4, &mut out[..1]));
        assert_eq!(out[0], 1);
    }
}
