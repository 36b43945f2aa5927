//! Protection domains and memory regions: endpoint-owned byte buffers with lkey/rkey, an address
//! range, access flags, and the bounds and access checks every local or remote access goes through.
//!
//! Not here: who asks for access (requester, responder) or what happens on failure (NAKs, CQEs).

use thiserror::Error;

pub use crate::verbs::PdHandle;
use crate::verbs::{AccessFlags, Sge};

/// What `reg_mr` hands back: keys and the address range of the new region.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MrInfo {
    /// Key for local access (SGEs).
    pub lkey: u32,
    /// Key for remote access (RETH / AtomicETH).
    pub rkey: u32,
    /// First address of the region.
    pub addr: u64,
    /// Length in bytes.
    pub length: u64,
    /// What the region allows.
    pub access: AccessFlags,
}

/// Why an access to registered memory was refused.
#[derive(Clone, Copy, Debug, Error, PartialEq, Eq)]
pub enum MrError {
    /// No region has this key (or it was deregistered).
    #[error("no memory region with key {0:#x}")]
    UnknownKey(u32),
    /// The region belongs to another protection domain.
    #[error("memory region {0:#x} is in another protection domain")]
    WrongPd(u32),
    /// The range leaves the region.
    #[error("range {addr:#x}+{len} is outside memory region {key:#x}")]
    OutOfBounds {
        /// The key used.
        key: u32,
        /// Start address.
        addr: u64,
        /// Length.
        len: u64,
    },
    /// The region does not allow this access.
    #[error("memory region {0:#x} does not allow this access")]
    AccessDenied(u32),
}

/// One registered region.
#[derive(Debug)]
pub struct MemoryRegion {
    pd: PdHandle,
    info: MrInfo,
    buf: Vec<u8>,
}

impl MemoryRegion {
    /// Keys, range and access.
    pub fn info(&self) -> MrInfo {
        self.info
    }
    /// The region's bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.buf
    }
    /// The region's bytes, writable (for the application to fill or inspect).
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        &mut self.buf
    }
}

/// A resolved range: region slot and byte offset inside it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MrRange {
    slot: usize,
    offset: usize,
    len: usize,
}

impl MrRange {
    /// Bytes in the range.
    pub fn len(&self) -> usize {
        self.len
    }
    /// The range is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// Region addresses start here and are spaced so ranges never overlap.
const BASE_ADDR: u64 = 0x1_0000_0000;
/// Addresses are rounded up to this alignment.
const ADDR_ALIGN: u64 = 4096;

/// The regions of one endpoint.
#[derive(Debug)]
pub struct MrTable {
    slots: Vec<Option<MemoryRegion>>,
    next_addr: u64,
    generation: u8,
    next_pd: u32,
}

impl Default for MrTable {
    fn default() -> Self {
        MrTable {
            slots: Vec::new(),
            next_addr: BASE_ADDR,
            generation: 0,
            next_pd: 1,
        }
    }
}

fn slot_of(key: u32) -> usize {
    ((key >> 8) as usize).wrapping_sub(1)
}

impl MrTable {
    /// A new protection domain.
    pub fn alloc_pd(&mut self) -> PdHandle {
        let pd = PdHandle(self.next_pd);
        self.next_pd += 1;
        pd
    }

    /// Registers `length` zeroed bytes in `pd` with `access`.
    pub fn register(&mut self, pd: PdHandle, length: usize, access: AccessFlags) -> MrInfo {
        let slot = match self.slots.iter().position(Option::is_none) {
            Some(s) => s,
            None => {
                self.slots.push(None);
                self.slots.len() - 1
            }
        };
        self.generation = self.generation.wrapping_add(1) & 0x7f;
        let index = (slot as u32 + 1) << 8;
        let info = MrInfo {
            lkey: index | u32::from(self.generation),
            rkey: index | 0x80 | u32::from(self.generation),
            addr: self.next_addr,
            length: length as u64,
            access,
        };
        let span = (length as u64).div_ceil(ADDR_ALIGN).max(1) * ADDR_ALIGN;
        self.next_addr = self.next_addr.saturating_add(span + ADDR_ALIGN);
        if let Some(s) = self.slots.get_mut(slot) {
            *s = Some(MemoryRegion {
                pd,
                info,
                buf: vec![0; length],
            });
        }
        info
    }

    /// Removes the region with local key `lkey`.
    pub fn deregister(&mut self, lkey: u32) -> Result<(), MrError> {
        match self.slots.get_mut(slot_of(lkey)) {
            Some(s @ Some(_)) if s.as_ref().is_some_and(|m| m.info.lkey == lkey) => {
                *s = None;
                Ok(())
            }
            _ => Err(MrError::UnknownKey(lkey)),
        }
    }

    /// The region with local key `lkey`.
    pub fn get(&self, lkey: u32) -> Option<&MemoryRegion> {
        self.slots
            .get(slot_of(lkey))?
            .as_ref()
            .filter(|m| m.info.lkey == lkey)
    }

    /// The region with local key `lkey`, writable.
    pub fn get_mut(&mut self, lkey: u32) -> Option<&mut MemoryRegion> {
        self.slots
            .get_mut(slot_of(lkey))?
            .as_mut()
            .filter(|m| m.info.lkey == lkey)
    }

    fn resolve(
        &self,
        pd: PdHandle,
        key: u32,
        remote: bool,
        addr: u64,
        len: u64,
        need: AccessFlags,
    ) -> Result<MrRange, MrError> {
        let slot = slot_of(key);
        let mr = self
            .slots
            .get(slot)
            .and_then(Option::as_ref)
            .filter(|m| {
                if remote {
                    m.info.rkey == key
                } else {
                    m.info.lkey == key
                }
            })
            .ok_or(MrError::UnknownKey(key))?;
        if mr.pd != pd {
            return Err(MrError::WrongPd(key));
        }
        if !mr.info.access.contains(need) {
            return Err(MrError::AccessDenied(key));
        }
        let oob = MrError::OutOfBounds { key, addr, len };
        let offset = addr.checked_sub(mr.info.addr).ok_or(oob)?;
        let end = offset.checked_add(len).ok_or(oob)?;
        if end > mr.info.length {
            return Err(oob);
        }
        Ok(MrRange {
            slot,
            offset: offset as usize,
            len: len as usize,
        })
    }

    /// Checks a remote access (rkey, range, rights) in `pd`.
    pub fn resolve_remote(
        &self,
        pd: PdHandle,
        rkey: u32,
        va: u64,
        len: u64,
        need: AccessFlags,
    ) -> Result<MrRange, MrError> {
        self.resolve(pd, rkey, true, va, len, need)
    }

    /// Checks every entry of a local SGL (lkey, range, rights) in `pd`.
    pub fn check_sgl(&self, pd: PdHandle, sgl: &[Sge], need: AccessFlags) -> Result<(), MrError> {
        for sge in sgl {
            self.resolve(pd, sge.lkey, false, sge.addr, u64::from(sge.length), need)?;
        }
        Ok(())
    }

    /// The bytes of a resolved range.
    pub fn slice(&self, r: MrRange) -> &[u8] {
        self.slots
            .get(r.slot)
            .and_then(Option::as_ref)
            .and_then(|m| m.buf.get(r.offset..r.offset + r.len))
            .unwrap_or(&[])
    }

    /// `len` bytes of a resolved range starting `skip` bytes in.
    pub fn sub_slice(&self, r: MrRange, skip: usize, len: usize) -> &[u8] {
        let start = r.offset.saturating_add(skip);
        self.slots
            .get(r.slot)
            .and_then(Option::as_ref)
            .and_then(|m| m.buf.get(start..start.saturating_add(len)))
            .unwrap_or(&[])
    }

    /// The bytes of a resolved range, writable.
    pub fn slice_mut(&mut self, r: MrRange) -> &mut [u8] {
        self.slots
            .get_mut(r.slot)
            .and_then(Option::as_mut)
            .and_then(|m| m.buf.get_mut(r.offset..r.offset + r.len))
            .unwrap_or(&mut [])
    }

    /// A sub-range of a resolved range: `len` bytes starting `skip` bytes in (clamped).
    pub fn narrow(r: MrRange, skip: usize, len: usize) -> MrRange {
        let skip = skip.min(r.len);
        MrRange {
            slot: r.slot,
            offset: r.offset + skip,
            len: len.min(r.len - skip),
        }
    }

    /// Where bytes `offset..offset + len` of the message `sgl` describes live: per piece, the
    /// region slot, the start inside the region, the start inside the message range and the length.
    /// `None` when the SGL does not cover the range or names a missing region.
    fn segments(&self, sgl: &[Sge], offset: u64, len: usize) -> Option<Segments> {
        let mut out = Segments::new();
        let mut skip = offset;
        let mut done = 0usize;
        for sge in sgl {
            if done == len {
                break;
            }
            let sge_len = u64::from(sge.length);
            if skip >= sge_len {
                skip -= sge_len;
                continue;
            }
            let slot = slot_of(sge.lkey);
            let mr = self.get(sge.lkey)?;
            let start = usize::try_from(sge.addr.checked_sub(mr.info.addr)? + skip).ok()?;
            let n = ((sge_len - skip) as usize).min(len - done);
            if start.checked_add(n)? > mr.buf.len() {
                return None;
            }
            out.push((slot, start, done, n));
            done += n;
            skip = 0;
        }
        (done == len).then_some(out)
    }

    /// Copies bytes `offset..offset + dst.len()` of the message described by `sgl` into `dst`.
    /// Returns `false` (leaving `dst` untouched) when the SGL does not cover the range.
    pub fn gather(&self, sgl: &[Sge], offset: u64, dst: &mut [u8]) -> bool {
        // One entry (the common case): one lookup, one copy.
        if let [sge] = sgl {
            let src = self.get(sge.lkey).and_then(|m| {
                let start = sge.addr.checked_sub(m.info.addr)?.checked_add(offset)?;
                let end = start.checked_add(dst.len() as u64)?;
                if end > sge.addr - m.info.addr + u64::from(sge.length) {
                    return None;
                }
                m.buf
                    .get(usize::try_from(start).ok()?..usize::try_from(end).ok()?)
            });
            return match src {
                Some(src) => {
                    dst.copy_from_slice(src);
                    true
                }
                None => false,
            };
        }
        let Some(segs) = self.segments(sgl, offset, dst.len()) else {
            return false;
        };
        for (slot, start, at, n) in segs {
            let src = self
                .slots
                .get(slot)
                .and_then(Option::as_ref)
                .and_then(|m| m.buf.get(start..start + n));
            match (src, dst.get_mut(at..at + n)) {
                (Some(src), Some(out)) => out.copy_from_slice(src),
                _ => return false,
            }
        }
        true
    }

    /// Copies `src` into the message described by `sgl` starting `offset` bytes in. Returns `false`
    /// (writing nothing) when the SGL does not cover the range.
    pub fn scatter(&mut self, sgl: &[Sge], offset: u64, src: &[u8]) -> bool {
        let Some(segs) = self.segments(sgl, offset, src.len()) else {
            return false;
        };
        for (slot, start, at, n) in segs {
            let dst = self
                .slots
                .get_mut(slot)
                .and_then(Option::as_mut)
                .and_then(|m| m.buf.get_mut(start..start + n));
            match (dst, src.get(at..at + n)) {
                (Some(out), Some(from)) => out.copy_from_slice(from),
                _ => return false,
            }
        }
        true
    }
}

/// Pieces of a message in memory regions: (slot, start in region, start in message, length).
type Segments = arrayvec::ArrayVec<(usize, usize, usize, usize), { crate::verbs::MAX_SGE }>;

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> (MrTable, PdHandle, MrInfo) {
        let mut t = MrTable::default();
        let pd = t.alloc_pd();
        let mr = t.register(pd, 100, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_READ);
        (t, pd, mr)
    }

    #[test]
    fn remote_access_checks_key_bounds_rights_and_pd() {
        let (mut t, pd, mr) = table();
        assert!(t
            .resolve_remote(pd, mr.rkey, mr.addr + 10, 90, AccessFlags::REMOTE_READ)
            .is_ok());
        assert_eq!(
            t.resolve_remote(pd, mr.lkey, mr.addr, 1, AccessFlags::REMOTE_READ),
            Err(MrError::UnknownKey(mr.lkey))
        );
        assert_eq!(
            t.resolve_remote(pd, mr.rkey, mr.addr + 10, 91, AccessFlags::REMOTE_READ),
            Err(MrError::OutOfBounds {
                key: mr.rkey,
                addr: mr.addr + 10,
                len: 91
            })
        );
        assert_eq!(
            t.resolve_remote(pd, mr.rkey, mr.addr, 8, AccessFlags::REMOTE_WRITE),
            Err(MrError::AccessDenied(mr.rkey))
        );
        let other = t.alloc_pd();
        assert_eq!(
            t.resolve_remote(other, mr.rkey, mr.addr, 8, AccessFlags::REMOTE_READ),
            Err(MrError::WrongPd(mr.rkey))
        );
        assert_eq!(t.deregister(mr.lkey), Ok(()));
        assert_eq!(
            t.resolve_remote(pd, mr.rkey, mr.addr, 8, AccessFlags::REMOTE_READ),
            Err(MrError::UnknownKey(mr.rkey))
        );
    }

    #[test]
    fn gather_and_scatter_walk_the_sgl_across_entries() {
        let (mut t, _pd, mr) = table();
        if let Some(m) = t.get_mut(mr.lkey) {
            for (i, b) in m.bytes_mut().iter_mut().enumerate() {
                *b = i as u8;
            }
        }
        let sgl = [
            Sge {
                addr: mr.addr + 10,
                length: 4,
                lkey: mr.lkey,
            },
            Sge {
                addr: mr.addr + 50,
                length: 6,
                lkey: mr.lkey,
            },
        ];
        let mut out = [0u8; 5];
        assert!(t.gather(&sgl, 2, &mut out));
        assert_eq!(out, [12, 13, 50, 51, 52]);
        assert!(!t.gather(&sgl, 6, &mut out));
        assert!(t.scatter(&sgl, 3, &[0xaa, 0xbb]));
        assert_eq!(t.get(mr.lkey).map(|m| m.bytes()[13]), Some(0xaa));
        assert_eq!(t.get(mr.lkey).map(|m| m.bytes()[50]), Some(0xbb));
    }
}
