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
    assert_eq!(t.read(r).map(<[u8]>::len), Ok(8));
    t.deregister(mr.lkey).unwrap();
    let next = t.register(pd, 100, AccessFlags::LOCAL_WRITE);
    assert_eq!(next.rkey >> 8, mr.rkey >> 8, "the same slot");
    assert_eq!(t.read(r), Err(MrError::Stale(mr.rkey)));
    assert_eq!(t.write(r).map(|b| b.len()), Err(MrError::Stale(mr.rkey)));
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
    assert_eq!(t.read(r), Err(MrError::Stale(mr.rkey)));
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
    t.write(r).unwrap().fill(0xee);
    // What was written is gone: the next write and every read see zeros.
    assert_eq!(t.write(r).unwrap(), &[0u8; 4096][..]);
    assert_eq!(t.read(r).unwrap(), &[0u8; 4096][..]);
    let long = t
        .resolve_remote(pd, mr.rkey, mr.addr, 4097, AccessFlags::REMOTE_READ)
        .unwrap();
    assert_eq!(t.read(long), Err(MrError::Stale(mr.rkey)));
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
fn store_copies_into_a_region_drops_into_a_discarding_one_and_checks_like_write() {
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
    assert_eq!(t.store(r, &[1, 2, 3]), Ok(true));
    assert_eq!(t.read(r).unwrap(), &[1, 2, 3]);
    // A length that is not the range's writes nothing.
    assert_eq!(t.store(r, &[9; 2]), Ok(false));
    assert_eq!(t.read(r).unwrap(), &[1, 2, 3]);
    let d = range(&t, &gone, 100, 3);
    assert_eq!(t.store(d, &[1, 2, 3]), Ok(true));
    assert_eq!(t.read(d).unwrap(), &[0, 0, 0]);
    assert_eq!(t.store(d, &[1, 2]), Ok(false));
    // Longer than a discarding region serves, and gone regions: the errors of `write`.
    let long = range(&t, &gone, 0, DISCARD_ACCESS_MAX as u64 + 1);
    let bytes = vec![0u8; DISCARD_ACCESS_MAX + 1];
    assert_eq!(t.store(long, &bytes), Err(MrError::Stale(gone.rkey)));
    t.deregister(kept.lkey).unwrap();
    assert_eq!(t.store(r, &[1, 2, 3]), Err(MrError::Stale(kept.rkey)));
}
