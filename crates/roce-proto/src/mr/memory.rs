//! Where a region's bytes live: in the table (owned), nowhere (a discarding region: reads give
//! zeros, writes are dropped), or in memory the table's user lends it through [`RegionMemory`]
//! (an application's buffer under the verbs library: zero-copy, no second copy of the region).
//!
//! Every access to lent memory is a copy through the trait, made only after the table checked
//! the key, rights, protection domain, bounds and generation: the core never holds a reference
//! into memory another thread may write, and it never touches that memory for a request that
//! failed a check.

use std::fmt;

/// Memory lent to a region by the table's user. The implementation checks only its own bounds;
/// everything else was checked before it is called.
pub trait RegionMemory: fmt::Debug + Send {
    /// Length in bytes (the region's length).
    fn len(&self) -> usize;
    /// The memory is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Copies `dst.len()` bytes starting `offset` bytes in into `dst`; `false` (copying
    /// nothing) when the range leaves the memory.
    fn read(&self, offset: usize, dst: &mut [u8]) -> bool;
    /// Copies `src` into the memory starting `offset` bytes in; `false` (copying nothing) when
    /// the range leaves the memory.
    fn write(&mut self, offset: usize, src: &[u8]) -> bool;
}

/// A region's bytes.
#[derive(Debug)]
pub(super) enum Backing {
    /// Zero-initialised bytes the table owns.
    Owned(Vec<u8>),
    /// No bytes: reads give zeros, writes are dropped.
    Discard,
    /// Memory the table's user lent.
    Lent(Box<dyn RegionMemory>),
}

impl Backing {
    /// Copies `dst.len()` bytes at `offset` into `dst`; `false` when the range leaves the
    /// region (a discarding region has every range of its length).
    pub(super) fn read(&self, offset: usize, len: u64, dst: &mut [u8]) -> bool {
        match self {
            Backing::Owned(buf) => match offset
                .checked_add(dst.len())
                .and_then(|end| buf.get(offset..end))
            {
                Some(src) => {
                    dst.copy_from_slice(src);
                    true
                }
                None => false,
            },
            Backing::Discard => {
                let inside = (offset as u64)
                    .checked_add(dst.len() as u64)
                    .is_some_and(|end| end <= len);
                if inside {
                    dst.fill(0);
                }
                inside
            }
            Backing::Lent(mem) => mem.read(offset, dst),
        }
    }

    /// Copies `src` into the region at `offset`; `false` (writing nothing) when the range
    /// leaves the region.
    pub(super) fn write(&mut self, offset: usize, len: u64, src: &[u8]) -> bool {
        match self {
            Backing::Owned(buf) => match offset
                .checked_add(src.len())
                .and_then(|end| buf.get_mut(offset..end))
            {
                Some(dst) => {
                    dst.copy_from_slice(src);
                    true
                }
                None => false,
            },
            Backing::Discard => (offset as u64)
                .checked_add(src.len() as u64)
                .is_some_and(|end| end <= len),
            Backing::Lent(mem) => mem.write(offset, src),
        }
    }

    /// The bytes the table owns (none for a discarding or lent region).
    pub(super) fn owned(&self) -> &[u8] {
        match self {
            Backing::Owned(buf) => buf,
            _ => &[],
        }
    }

    /// The bytes the table owns, writable.
    pub(super) fn owned_mut(&mut self) -> &mut [u8] {
        match self {
            Backing::Owned(buf) => buf,
            _ => &mut [],
        }
    }

    pub(super) fn is_discard(&self) -> bool {
        matches!(self, Backing::Discard)
    }
}
