//! The region table's checks: keys, bounds, rights, PDs, generations.

use super::*;

fn table() -> (MrTable, PdHandle, MrInfo) {
    let mut t = MrTable::default();
    let pd = t.alloc_pd();
    let mr = t.register(pd, 100, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_READ);
    (t, pd, mr)
}

/// A remote READ of the first 8 bytes of `mr` in `pd`, as the responder resolves it.
fn read_head(t: &MrTable, pd: PdHandle, mr: &MrInfo) -> Result<MrRange, MrError> {
    t.resolve_remote(pd, mr.rkey, mr.addr, 8, AccessFlags::REMOTE_READ)
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
    assert_eq!(read_head(&t, other, &mr), Err(MrError::WrongPd(mr.rkey)));
    assert_eq!(t.deregister(mr.lkey), Ok(()));
    assert_eq!(read_head(&t, pd, &mr), Err(MrError::UnknownKey(mr.rkey)));
}

#[test]
fn regions_registered_at_a_given_address_resolve_there_and_may_overlap() {
    let mut t = MrTable::default();
    let pd = t.alloc_pd();
    let a = t.register_at(pd, 0x7f00_0000_1000, 64, AccessFlags::REMOTE_WRITE);
    let b = t.register_at(pd, 0x7f00_0000_1000, 64, AccessFlags::REMOTE_READ);
    assert_eq!((a.addr, b.addr), (0x7f00_0000_1000, 0x7f00_0000_1000));
    assert_ne!(a.rkey, b.rkey);
    let r = t.resolve_remote(pd, a.rkey, 0x7f00_0000_1010, 48, AccessFlags::REMOTE_WRITE);
    assert_eq!(r.map(|r| r.len()), Ok(48));
    assert_eq!(
        t.resolve_remote(pd, b.rkey, 0x7f00_0000_1000, 8, AccessFlags::REMOTE_WRITE),
        Err(MrError::AccessDenied(b.rkey))
    );
    // The table's own addresses are unaffected.
    let c = t.register(pd, 8, AccessFlags::empty());
    assert_eq!(c.addr, BASE_ADDR);
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

#[test]
fn a_range_goes_stale_when_its_slot_is_reused() {
    let (mut t, pd, mr) = table();
    let r = read_head(&t, pd, &mr).unwrap();
    let mut head = [0u8; 8];
    assert_eq!(t.load(r, &mut head), Ok(true));
    t.deregister(mr.lkey).unwrap();
    let next = t.register(pd, 100, AccessFlags::LOCAL_WRITE);
    assert_eq!(next.rkey >> 8, mr.rkey >> 8, "the same slot");
    assert_eq!(t.load(r, &mut head), Err(MrError::Stale(mr.rkey)));
    assert_eq!(t.store(r, &head), Err(MrError::Stale(mr.rkey)));
    assert_eq!(t.check(r), Err(MrError::Stale(mr.rkey)));
}

#[test]
fn invalidation_stops_both_keys_and_stales_ranges_but_keeps_the_bytes() {
    let (mut t, pd, mr) = table();
    let r = read_head(&t, pd, &mr).unwrap();
    let other = t.alloc_pd();
    assert_eq!(
        t.invalidate(other, mr.rkey, true),
        Err(MrError::WrongPd(mr.rkey))
    );
    assert_eq!(
        t.invalidate(pd, mr.lkey, true),
        Err(MrError::UnknownKey(mr.lkey)),
        "a remote invalidate names the rkey"
    );
    assert_eq!(t.invalidate(pd, mr.rkey, true), Ok(()));
    assert_eq!(t.load(r, &mut [0; 8]), Err(MrError::Stale(mr.rkey)));
    assert_eq!(read_head(&t, pd, &mr), Err(MrError::UnknownKey(mr.rkey)));
    let sge = Sge {
        addr: mr.addr,
        length: 4,
        lkey: mr.lkey,
    };
    assert_eq!(
        t.check_sgl(pd, &[sge], AccessFlags::empty()),
        Err(MrError::UnknownKey(mr.lkey))
    );
    assert!(!t.gather(&[sge], 0, &mut [0; 4]));
    assert_eq!(
        t.invalidate(pd, mr.rkey, true),
        Err(MrError::UnknownKey(mr.rkey))
    );
    assert_eq!(
        t.get(mr.lkey).map(|m| (m.is_valid(), m.bytes().len())),
        Some((false, 100))
    );
    assert_eq!(t.deregister(mr.lkey), Ok(()));
}

#[test]
fn a_local_invalidate_takes_either_key_and_a_remote_one_needs_a_remote_right() {
    let mut t = MrTable::new(Some(1));
    let pd = t.alloc_pd();
    let local = t.register(pd, 8, AccessFlags::LOCAL_WRITE);
    assert_eq!(
        t.invalidate(pd, local.rkey, true),
        Err(MrError::AccessDenied(local.rkey))
    );
    assert_eq!(t.invalidate(pd, local.lkey, false), Ok(()));
    let remote = t.register(pd, 8, AccessFlags::REMOTE_READ);
    assert_eq!(t.invalidate(pd, remote.rkey, false), Ok(()));
}

#[test]
fn a_slot_gives_the_same_keys_again_only_after_256_registrations() {
    let mut t = MrTable::new(Some(7));
    let pd = t.alloc_pd();
    let first = t.register(pd, 8, AccessFlags::REMOTE_WRITE);
    let mut seen = vec![first.rkey];
    t.deregister(first.lkey).unwrap();
    for _ in 1..256 {
        let mr = t.register(pd, 8, AccessFlags::REMOTE_WRITE);
        assert_eq!(mr.rkey >> 8, first.rkey >> 8);
        assert!(!seen.contains(&mr.rkey));
        assert_ne!(mr.lkey, mr.rkey);
        seen.push(mr.rkey);
        t.deregister(mr.lkey).unwrap();
    }
    let again = t.register(pd, 8, AccessFlags::REMOTE_WRITE);
    assert_eq!((again.lkey, again.rkey), (first.lkey, first.rkey));
}

#[test]
fn a_key_seed_fixes_the_keys_and_slots_start_apart() {
    let keys = |seed| {
        let mut t = MrTable::new(Some(seed));
        let pd = t.alloc_pd();
        (0..4)
            .map(|_| t.register(pd, 8, AccessFlags::REMOTE_READ).rkey)
            .collect::<Vec<_>>()
    };
    assert_eq!(keys(3), keys(3));
    assert_ne!(keys(3), keys(4));
    let bytes: Vec<u32> = keys(3).iter().map(|k| k & 0xff).collect();
    assert!(bytes.windows(2).any(|w| w[0] != w[1]), "{bytes:?}");
}

#[test]
fn a_discarding_region_reads_zeros_drops_writes_and_still_checks_bounds() {
    let mut t = MrTable::new(Some(1));
    let pd = t.alloc_pd();
    let rights = AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE | AccessFlags::REMOTE_READ;
    let mr = t.register_discard(pd, 1 << 30, rights).unwrap();
    // A gigabyte region keeps no bytes.
    assert_eq!(
        (mr.length, t.get(mr.lkey).map(|m| m.bytes().len())),
        (1 << 30, Some(0))
    );
    let sge = |addr, length| Sge {
        addr,
        length,
        lkey: mr.lkey,
    };
    let mut out = [7u8; 6];
    assert!(t.gather(&[sge(mr.addr + 100, 6)], 0, &mut out));
    assert_eq!(out, [0; 6]);
    out = [7; 6];
    assert!(t.gather(&[sge(mr.addr, 2), sge(mr.addr + 10, 4)], 0, &mut out));
    assert_eq!(out, [0; 6]);
    assert!(t.scatter(&[sge(mr.addr, 6)], 0, &[1; 6]));
    assert!(!t.gather(&[sge(mr.addr + (1 << 30) - 2, 6)], 0, &mut out));
    let r = t
        .resolve_remote(pd, mr.rkey, mr.addr + 8, 4096, AccessFlags::REMOTE_WRITE)
        .unwrap();
    assert_eq!(t.store(r, &[0xee; 4096]), Ok(true));
    // What was written is gone: every read sees zeros, however long.
    let mut back = vec![0xa5u8; 4096];
    assert_eq!(t.load(r, &mut back), Ok(true));
    assert_eq!(back, [0u8; 4096]);
    let long = t
        .resolve_remote(pd, mr.rkey, mr.addr, 1 << 20, AccessFlags::REMOTE_READ)
        .unwrap();
    let mut back = vec![0xa5u8; 1 << 20];
    assert_eq!(t.load(long, &mut back), Ok(true));
    assert!(back.iter().all(|&b| b == 0));
    assert_eq!(
        t.resolve_remote(
            pd,
            mr.rkey,
            mr.addr + (1 << 30),
            1,
            AccessFlags::REMOTE_READ
        ),
        Err(MrError::OutOfBounds {
            key: mr.rkey,
            addr: mr.addr + (1 << 30),
            len: 1
        })
    );
    // Keys and addresses advance as for a region that keeps its bytes.
    let mut plain = MrTable::new(Some(1));
    let ppd = plain.alloc_pd();
    assert_eq!(plain.register(ppd, 1 << 30, rights), mr);
}

#[test]
fn store_copies_into_a_region_drops_into_a_discarding_one_and_checks_like_load() {
    let mut t = MrTable::new(Some(1));
    let pd = t.alloc_pd();
    let rights = AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE | AccessFlags::REMOTE_READ;
    let kept = t.register(pd, 16, rights);
    let gone = t.register_discard(pd, 8192, rights).unwrap();
    let range = |t: &MrTable, mr: &MrInfo, off: u64, len: u64| {
        t.resolve_remote(pd, mr.rkey, mr.addr + off, len, AccessFlags::REMOTE_WRITE)
            .unwrap()
    };
    let r = range(&t, &kept, 4, 3);
    let mut back = [0u8; 3];
    assert_eq!(t.store(r, &[1, 2, 3]), Ok(true));
    assert_eq!(t.load(r, &mut back), Ok(true));
    assert_eq!(back, [1, 2, 3]);
    // A length that is not the range's moves nothing.
    assert_eq!(t.store(r, &[9; 2]), Ok(false));
    assert_eq!(t.load(r, &mut [0; 2]), Ok(false));
    assert_eq!(t.load(r, &mut back), Ok(true));
    assert_eq!(back, [1, 2, 3]);
    let d = range(&t, &gone, 100, 3);
    assert_eq!(t.store(d, &[1, 2, 3]), Ok(true));
    assert_eq!(t.load(d, &mut back), Ok(true));
    assert_eq!(back, [0, 0, 0]);
    assert_eq!(t.store(d, &[1, 2]), Ok(false));
    t.deregister(kept.lkey).unwrap();
    assert_eq!(t.store(r, &[1, 2, 3]), Err(MrError::Stale(kept.rkey)));
}

/// The accesses a [`Logged`] saw: (read or write, offset, length).
type AccessLog = std::sync::Arc<std::sync::Mutex<Vec<(&'static str, usize, usize)>>>;

/// Lent memory that logs every access, and counts the lenders alive.
#[derive(Debug)]
struct Logged {
    bytes: Vec<u8>,
    log: AccessLog,
    _alive: std::sync::Arc<()>,
}

impl RegionMemory for Logged {
    fn len(&self) -> usize {
        self.bytes.len()
    }
    fn read(&self, offset: usize, dst: &mut [u8]) -> bool {
        self.log.lock().unwrap().push(("read", offset, dst.len()));
        match self.bytes.get(offset..offset + dst.len()) {
            Some(src) => {
                dst.copy_from_slice(src);
                true
            }
            None => false,
        }
    }
    fn write(&mut self, offset: usize, src: &[u8]) -> bool {
        self.log.lock().unwrap().push(("write", offset, src.len()));
        match self.bytes.get_mut(offset..offset + src.len()) {
            Some(dst) => {
                dst.copy_from_slice(src);
                true
            }
            None => false,
        }
    }
}

#[test]
fn lent_memory_is_reached_only_by_accesses_that_passed_every_check() {
    let mut t = MrTable::new(Some(5));
    let pd = t.alloc_pd();
    let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let alive = std::sync::Arc::new(());
    let mem = Logged {
        bytes: (0..64).collect(),
        log: log.clone(),
        _alive: alive.clone(),
    };
    let addr = 0x7f00_0000_1000;
    let mr = t
        .register_lent(pd, addr, Box::new(mem), AccessFlags::LOCAL_WRITE)
        .unwrap();
    assert_eq!((mr.addr, mr.length), (addr, 64));
    // The table keeps no copy.
    assert_eq!(t.get(mr.lkey).map(|m| m.bytes().len()), Some(0));
    // Refused before any byte is touched: rights, key, bounds, PD.
    let other = t.alloc_pd();
    for (pd, key, at, len) in [
        (pd, mr.rkey, addr, 8),
        (pd, mr.rkey ^ 1, addr, 8),
        (other, mr.rkey, addr, 8),
    ] {
        assert!(t
            .resolve_remote(pd, key, at, len, AccessFlags::REMOTE_READ)
            .is_err());
    }
    let sge = |addr, length| Sge {
        addr,
        length,
        lkey: mr.lkey,
    };
    let mut out = [0u8; 4];
    assert!(!t.gather(&[sge(addr + 62, 4)], 0, &mut out));
    assert!(!t.scatter(&[sge(addr + 62, 4)], 0, &out));
    assert!(log.lock().unwrap().is_empty(), "{:?}", log.lock().unwrap());
    // Accesses that pass go to the lender, exactly as asked.
    assert!(t.gather(&[sge(addr + 10, 4)], 0, &mut out));
    assert_eq!(out, [10, 11, 12, 13]);
    assert!(t.scatter(&[sge(addr, 2), sge(addr + 40, 2)], 1, &[0xaa, 0xbb]));
    assert_eq!(
        *log.lock().unwrap(),
        [("read", 10, 4), ("write", 1, 1), ("write", 40, 1)]
    );
    // Deregistration drops the lender: nothing can reach its memory afterwards.
    t.deregister(mr.lkey).unwrap();
    assert_eq!(std::sync::Arc::strong_count(&alive), 1);
    assert!(!t.gather(&[sge(addr + 10, 4)], 0, &mut out));
    assert_eq!(log.lock().unwrap().len(), 3);
}

#[test]
fn lent_memory_shorter_than_it_said_is_an_error_not_a_panic() {
    #[derive(Debug)]
    struct Liar;
    impl RegionMemory for Liar {
        fn len(&self) -> usize {
            1 << 20
        }
        fn read(&self, _: usize, _: &mut [u8]) -> bool {
            false
        }
        fn write(&mut self, _: usize, _: &[u8]) -> bool {
            false
        }
    }
    let mut t = MrTable::new(Some(5));
    let pd = t.alloc_pd();
    let mr = t
        .register_lent(pd, 0x1000, Box::new(Liar), AccessFlags::REMOTE_WRITE)
        .unwrap();
    let r = t
        .resolve_remote(pd, mr.rkey, 0x1000, 8, AccessFlags::REMOTE_WRITE)
        .unwrap();
    assert_eq!(t.store(r, &[1; 8]), Err(MrError::Memory(mr.rkey)));
    assert_eq!(t.load(r, &mut [0; 8]), Err(MrError::Memory(mr.rkey)));
}
