//! Protection domains and memory regions: endpoint-owned byte buffers with lkey/rkey, an address
//! range, access flags, and the bounds and access checks every local or remote access goes through.
//!
//! Not here: who asks for access (requester, responder) or what happens on failure (NAKs, CQEs).
//!
//! # When a region goes away
//!
//! Deregistration and invalidation take effect at once; they never wait for the operations that
//! use the region. Instead every access is checked at the moment it happens, against the live
//! region:
//! - A remote request's first packet resolves its rkey, PD, rights and bounds into an [`MrRange`],
//!   which also records the *generation* of the region's slot. Every later access through that
//!   range (the rest of a multi-packet WRITE, each READ response packet) goes through
//!   [`MrTable::load`] or [`MrTable::store`], which compare that generation with the slot's
//!   current one. A slot's generation changes whenever a region is registered there, invalidated
//!   or deregistered, and a region's keys, bounds and rights never change while it lives, so the
//!   compare is the whole check, and a cheap one. A range's fields are private and these two
//!   functions are the only way from a range to bytes: a stale range can only fail
//!   ([`MrError::Stale`]), never reach whatever region took the slot next. The responder turns
//!   that into a remote access error NAK, as Linux rxe does when its per-packet re-check of the
//!   MR fails.
//! - Local keys (SGEs of work requests) are looked up by key on every access (each packet's
//!   gather or scatter), so a deregistered or invalidated region's lkey fails at once: the work
//!   request completes with a local protection error instead of sending anything.
//!
//! # Keys
//!
//! A key is `index << 8 | key byte`, as in IB. The index names the slot (slot + 1, so no key
//! below 0x100 names anything). The key byte of a slot's n-th registration is a secret
//! permutation of n, drawn per slot from an OS-seeded CSPRNG (or from a seed, for deterministic
//! runs; see `mr/key.rs`), so a slot hands out the same key again only after 256 registrations and
//! its next key cannot be read off its last. The lkey and rkey of a region differ in the top bit
//! of the key byte.
//!
//! # Bytes
//!
//! A region's bytes are the table's own, nowhere (a discarding region), or memory its user lent
//! ([`RegionMemory`]: an application's buffer, zero-copy). They are reached only through
//! [`MrTable::load`], [`MrTable::store`], [`MrTable::gather`] and [`MrTable::scatter`], after
//! every check passed.

mod key;
mod memory;

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use thiserror::Error;

use self::key::KeySequence;
use self::memory::Backing;
pub use self::memory::RegionMemory;
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
    /// No region has this key (or it was deregistered, or invalidated).
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
    /// The region an access began on was deregistered or invalidated since.
    #[error("memory region {0:#x} was deregistered or invalidated during the access")]
    Stale(u32),
    /// Every key index is in use.
    #[error("no free memory-region slot (at most {MAX_REGIONS} regions)")]
    TableFull,
    /// Lent memory refused an access inside the region's bounds (it is shorter than it said).
    #[error("the memory behind region {0:#x} refused an access inside its bounds")]
    Memory(u32),
}

/// Most regions an endpoint holds at once (the 24-bit index of a key, less index 0).
pub const MAX_REGIONS: usize = (1 << 24) - 1;

/// One registered region.
#[derive(Debug)]
pub struct MemoryRegion {
    pd: PdHandle,
    info: MrInfo,
    /// Where the bytes live.
    bytes: Backing,
    /// Cleared by invalidation: the keys no longer resolve (the bytes stay the owner's).
    valid: bool,
}

impl MemoryRegion {
    /// Keys, range and access.
    pub fn info(&self) -> MrInfo {
        self.info
    }
    /// The bytes the table keeps for the region (none for a discarding region or lent memory).
    pub fn bytes(&self) -> &[u8] {
        self.bytes.owned()
    }
    /// The bytes the table keeps for the region, writable (for the application to fill or
    /// inspect; none for a discarding region or lent memory).
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        self.bytes.owned_mut()
    }
    /// The keys still resolve (not invalidated).
    pub fn is_valid(&self) -> bool {
        self.valid
    }
}

/// A resolved remote range: region slot, the slot's generation when it was resolved, and a byte
/// range inside the region. Only [`MrTable::load`] and [`MrTable::store`] turn it into bytes,
/// and only while the generation still matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MrRange {
    slot: u32,
    generation: u64,
    key: u32,
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
    /// The key the range was resolved with.
    pub fn key(&self) -> u32 {
        self.key
    }
    /// A sub-range: `len` bytes starting `skip` bytes in (clamped to the range).
    pub fn narrow(self, skip: usize, len: usize) -> MrRange {
        let skip = skip.min(self.len);
        MrRange {
            offset: self.offset + skip,
            len: len.min(self.len - skip),
            ..self
        }
    }
}

/// Region addresses start here and are spaced so ranges never overlap.
const BASE_ADDR: u64 = 0x1_0000_0000;
/// Addresses are rounded up to this alignment.
const ADDR_ALIGN: u64 = 4096;
/// The key-byte bit that tells an lkey from the rkey of the same registration.
const LKEY_BIT: u32 = 0x80;

/// One key index: the region registered there, if any, and what the next registration gets.
#[derive(Debug)]
struct Slot {
    /// Changes with every registration, invalidation and deregistration here.
    generation: u64,
    /// The key bytes of the registrations here.
    keys: KeySequence,
    mr: Option<MemoryRegion>,
}

/// The regions of one endpoint.
#[derive(Debug)]
pub struct MrTable {
    slots: Vec<Slot>,
    next_addr: u64,
    next_pd: u32,
    /// Draws the key permutation of each new slot.
    keys: StdRng,
}

impl Default for MrTable {
    /// A table whose key bytes start from the OS's randomness.
    fn default() -> Self {
        MrTable::new(None)
    }
}

fn slot_of(key: u32) -> usize {
    ((key >> 8) as usize).wrapping_sub(1)
}

impl MrTable {
    /// An empty table. Key bytes start from `key_seed`'s generator, or from the OS's randomness
    /// when it is `None`.
    pub fn new(key_seed: Option<u64>) -> Self {
        MrTable {
            slots: Vec::new(),
            next_addr: BASE_ADDR,
            next_pd: 1,
            keys: match key_seed {
                Some(seed) => StdRng::seed_from_u64(seed),
                None => rand::make_rng(),
            },
        }
    }

    /// A new protection domain.
    pub fn alloc_pd(&mut self) -> PdHandle {
        let pd = PdHandle(self.next_pd);
        self.next_pd += 1;
        pd
    }

    /// Registers `length` zeroed bytes in `pd` with `access`. With every key index in use (see
    /// [`MAX_REGIONS`]) nothing is registered and both keys are 0, which name no region; use
    /// [`MrTable::try_register`] to see that as an error.
    pub fn register(&mut self, pd: PdHandle, length: usize, access: AccessFlags) -> MrInfo {
        let addr = self.next_addr(length);
        self.register_at(pd, addr, length, access)
    }

    /// Registers `length` zeroed bytes in `pd` with `access` at the caller's address `addr`
    /// (the virtual address peers name in RETHs, e.g. an application buffer's: regions may
    /// overlap, as they may in libibverbs; keys tell them apart). With every key index in use
    /// both keys are 0, as with [`MrTable::register`].
    pub fn register_at(
        &mut self,
        pd: PdHandle,
        addr: u64,
        length: usize,
        access: AccessFlags,
    ) -> MrInfo {
        self.try_register_at(pd, addr, length, access)
            .unwrap_or_else(|e| {
                tracing::warn!(error = %e, "memory region not registered");
                MrInfo {
                    lkey: 0,
                    rkey: 0,
                    addr: 0,
                    length: 0,
                    access,
                }
            })
    }

    /// Registers `length` zeroed bytes in `pd` with `access`.
    pub fn try_register(
        &mut self,
        pd: PdHandle,
        length: usize,
        access: AccessFlags,
    ) -> Result<MrInfo, MrError> {
        self.place(pd, length, access, Backing::Owned(vec![0; length]))
    }

    /// The address the next region registered without one gets: regions the table places
    /// itself never overlap and leave a gap between them.
    fn next_addr(&mut self, length: usize) -> u64 {
        let addr = self.next_addr;
        let span = (length as u64).div_ceil(ADDR_ALIGN).max(1) * ADDR_ALIGN;
        self.next_addr = self.next_addr.saturating_add(span + ADDR_ALIGN);
        addr
    }

    /// Registers a region of `length` bytes in `pd` with `access` that keeps no bytes: every
    /// read gives zeros and writes are dropped, while keys, bounds, rights and invalidation
    /// are checked as for any region. For traffic whose bytes nobody looks at (a simulated
    /// flow): the same frames as a zeroed region never written, in no memory.
    pub fn register_discard(
        &mut self,
        pd: PdHandle,
        length: usize,
        access: AccessFlags,
    ) -> Result<MrInfo, MrError> {
        self.place(pd, length, access, Backing::Discard)
    }

    /// Registers `memory` (all of it) in `pd` with `access` at address `addr`: the region's
    /// bytes are the lender's, read and written through [`RegionMemory`] only after every check
    /// of an access passed. The table keeps no copy.
    pub fn register_lent(
        &mut self,
        pd: PdHandle,
        addr: u64,
        memory: Box<dyn RegionMemory>,
        access: AccessFlags,
    ) -> Result<MrInfo, MrError> {
        let length = memory.len();
        self.insert(pd, addr, length, access, Backing::Lent(memory))
    }

    /// Registers a region at the next address the table gives out.
    fn place(
        &mut self,
        pd: PdHandle,
        length: usize,
        access: AccessFlags,
        bytes: Backing,
    ) -> Result<MrInfo, MrError> {
        let addr = self.next_addr(length);
        self.insert(pd, addr, length, access, bytes)
    }

    /// Registers `length` zeroed bytes in `pd` with `access` at address `addr`.
    pub fn try_register_at(
        &mut self,
        pd: PdHandle,
        addr: u64,
        length: usize,
        access: AccessFlags,
    ) -> Result<MrInfo, MrError> {
        self.insert(pd, addr, length, access, Backing::Owned(vec![0; length]))
    }

    fn insert(
        &mut self,
        pd: PdHandle,
        addr: u64,
        length: usize,
        access: AccessFlags,
        bytes: Backing,
    ) -> Result<MrInfo, MrError> {
        let slot = match self.slots.iter().position(|s| s.mr.is_none()) {
            Some(s) => s,
            None if self.slots.len() < MAX_REGIONS => {
                self.slots.push(Slot {
                    generation: 0,
                    keys: KeySequence::new(self.keys.random()),
                    mr: None,
                });
                self.slots.len() - 1
            }
            None => return Err(MrError::TableFull),
        };
        let s = self.slots.get_mut(slot).ok_or(MrError::TableFull)?;
        let key = s.keys.next_key();
        s.generation = s.generation.wrapping_add(1);
        let index = (slot as u32 + 1) << 8;
        let info = MrInfo {
            lkey: index | (u32::from(key) ^ LKEY_BIT),
            rkey: index | u32::from(key),
            addr,
            length: length as u64,
            access,
        };
        s.mr = Some(MemoryRegion {
            pd,
            info,
            bytes,
            valid: true,
        });
        Ok(info)
    }

    /// Removes the region with local key `lkey` (valid or invalidated). Ranges resolved in it go
    /// stale at once.
    pub fn deregister(&mut self, lkey: u32) -> Result<(), MrError> {
        match self.slots.get_mut(slot_of(lkey)) {
            Some(s) if s.mr.as_ref().is_some_and(|m| m.info.lkey == lkey) => {
                s.mr = None;
                s.generation = s.generation.wrapping_add(1);
                Ok(())
            }
            _ => Err(MrError::UnknownKey(lkey)),
        }
    }

    /// Invalidates the region `key` names in `pd`: its keys stop resolving and ranges resolved in
    /// it go stale; the region stays registered (its owner still reads it and deregisters it).
    /// `remote` (SEND with Invalidate) accepts only the rkey of a region with a remote right;
    /// a local invalidate accepts the lkey or the rkey.
    pub fn invalidate(&mut self, pd: PdHandle, key: u32, remote: bool) -> Result<(), MrError> {
        let s = self
            .slots
            .get_mut(slot_of(key))
            .ok_or(MrError::UnknownKey(key))?;
        let mr =
            s.mr.as_mut()
                .filter(|m| m.valid && (m.info.rkey == key || (!remote && m.info.lkey == key)))
                .ok_or(MrError::UnknownKey(key))?;
        if mr.pd != pd {
            return Err(MrError::WrongPd(key));
        }
        let remote_rights =
            AccessFlags::REMOTE_WRITE | AccessFlags::REMOTE_READ | AccessFlags::REMOTE_ATOMIC;
        if remote && !mr.info.access.intersects(remote_rights) {
            return Err(MrError::AccessDenied(key));
        }
        mr.valid = false;
        s.generation = s.generation.wrapping_add(1);
        Ok(())
    }

    /// The region with local key `lkey` (also once invalidated: its bytes are still the owner's).
    pub fn get(&self, lkey: u32) -> Option<&MemoryRegion> {
        self.slots
            .get(slot_of(lkey))?
            .mr
            .as_ref()
            .filter(|m| m.info.lkey == lkey)
    }

    /// The region with local key `lkey`, writable.
    pub fn get_mut(&mut self, lkey: u32) -> Option<&mut MemoryRegion> {
        self.slots
            .get_mut(slot_of(lkey))?
            .mr
            .as_mut()
            .filter(|m| m.info.lkey == lkey)
    }

    /// The valid region `key` names (as an rkey when `remote`, else as an lkey).
    fn live(&self, key: u32, remote: bool) -> Option<(usize, &Slot, &MemoryRegion)> {
        let slot = slot_of(key);
        let s = self.slots.get(slot)?;
        let mr = s.mr.as_ref().filter(|m| {
            m.valid
                && if remote {
                    m.info.rkey == key
                } else {
                    m.info.lkey == key
                }
        })?;
        Some((slot, s, mr))
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
        let (slot, s, mr) = self.live(key, remote).ok_or(MrError::UnknownKey(key))?;
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
            slot: slot as u32,
            generation: s.generation,
            key,
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

    /// The region of `r`, if it is still the one `r` was resolved in.
    fn current(&self, r: &MrRange) -> Result<&MemoryRegion, MrError> {
        match self.slots.get(r.slot as usize) {
            Some(s) if s.generation == r.generation => s.mr.as_ref().ok_or(MrError::Stale(r.key)),
            _ => Err(MrError::Stale(r.key)),
        }
    }

    /// The region of `r`, writable, if it is still the one `r` was resolved in.
    fn current_mut(&mut self, r: &MrRange) -> Result<&mut MemoryRegion, MrError> {
        match self.slots.get_mut(r.slot as usize) {
            Some(s) if s.generation == r.generation => s.mr.as_mut().ok_or(MrError::Stale(r.key)),
            _ => Err(MrError::Stale(r.key)),
        }
    }

    /// `Ok` while the region of `r` is still the one it was resolved in.
    pub fn check(&self, r: MrRange) -> Result<(), MrError> {
        self.current(&r).map(|_| ())
    }

    /// Copies a resolved range into `dst`, while its region is the one it was resolved in.
    /// `Ok(false)` (nothing copied) when `dst` is not the range's length.
    pub fn load(&self, r: MrRange, dst: &mut [u8]) -> Result<bool, MrError> {
        let mr = self.current(&r)?;
        if dst.len() != r.len {
            return Ok(false);
        }
        if mr.bytes.read(r.offset, mr.info.length, dst) {
            Ok(true)
        } else {
            Err(MrError::Memory(r.key))
        }
    }

    /// Copies `src` into a resolved range, while its region is the one it was resolved in.
    /// `Ok(false)` (nothing written) when `src` is not the range's length. A discarding region
    /// takes the bytes without a copy.
    pub fn store(&mut self, r: MrRange, src: &[u8]) -> Result<bool, MrError> {
        let mr = self.current_mut(&r)?;
        if src.len() != r.len {
            return Ok(false);
        }
        if mr.bytes.write(r.offset, mr.info.length, src) {
            Ok(true)
        } else {
            Err(MrError::Memory(r.key))
        }
    }

    /// Where bytes `offset..offset + len` of the message `sgl` describes live: per piece, the
    /// region slot, the start inside the region, the start inside the message range and the length.
    /// `None` when the SGL does not cover the range or names a region that is gone or invalid.
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
            let (slot, _, mr) = self.live(sge.lkey, false)?;
            let start = usize::try_from(sge.addr.checked_sub(mr.info.addr)? + skip).ok()?;
            let n = ((sge_len - skip) as usize).min(len - done);
            if start.checked_add(n)? as u64 > mr.info.length {
                return None;
            }
            out.push((slot, start, done, n));
            done += n;
            skip = 0;
        }
        (done == len).then_some(out)
    }

    /// Copies bytes `offset..offset + dst.len()` of the message described by `sgl` into `dst`.
    /// Returns `false` (leaving `dst` untouched) when the SGL does not cover the range or one of
    /// its regions is gone or invalidated.
    pub fn gather(&self, sgl: &[Sge], offset: u64, dst: &mut [u8]) -> bool {
        self.gather_zeros(sgl, offset, dst).is_some()
    }

    /// [`MrTable::gather`], saying what it wrote: `Some(true)` only zeros (a discarding
    /// region, which the emitter need not hash), `Some(false)` bytes, `None` refused.
    pub(crate) fn gather_zeros(&self, sgl: &[Sge], offset: u64, dst: &mut [u8]) -> Option<bool> {
        // One entry (the common case): one lookup, one copy.
        if let [sge] = sgl {
            let (_, _, m) = self.live(sge.lkey, false)?;
            let base = sge.addr.checked_sub(m.info.addr)?;
            let start = base.checked_add(offset)?;
            let end = start.checked_add(dst.len() as u64)?;
            if end > base + u64::from(sge.length) || end > m.info.length {
                return None;
            }
            let start = usize::try_from(start).ok()?;
            return m
                .bytes
                .read(start, m.info.length, dst)
                .then_some(m.bytes.is_discard());
        }
        let segs = self.segments(sgl, offset, dst.len())?;
        for (slot, start, at, n) in segs {
            let mr = self.slots.get(slot).and_then(|s| s.mr.as_ref())?;
            let out = dst.get_mut(at..at + n)?;
            if !mr.bytes.read(start, mr.info.length, out) {
                return None;
            }
        }
        // Several pieces are hashed whatever they hold (only one piece is worth the check).
        Some(false)
    }

    /// Copies `src` into the message described by `sgl` starting `offset` bytes in. Returns `false`
    /// (writing nothing) when the SGL does not cover the range or one of its regions is gone or
    /// invalidated.
    pub fn scatter(&mut self, sgl: &[Sge], offset: u64, src: &[u8]) -> bool {
        let Some(segs) = self.segments(sgl, offset, src.len()) else {
            return false;
        };
        for (slot, start, at, n) in segs {
            let mr = self.slots.get_mut(slot).and_then(|s| s.mr.as_mut());
            let written = match (mr, src.get(at..at + n)) {
                (Some(mr), Some(from)) => mr.bytes.write(start, mr.info.length, from),
                _ => false,
            };
            if !written {
                return false;
            }
        }
        true
    }
}

/// Pieces of a message in memory regions: (slot, start in region, start in message, length).
type Segments = arrayvec::ArrayVec<(usize, usize, usize, usize), { crate::verbs::MAX_SGE }>;

#[cfg(test)]
mod tests;
