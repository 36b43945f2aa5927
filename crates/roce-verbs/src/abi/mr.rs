//! Protection domains and memory regions: `ibv_alloc_pd`, `ibv_reg_mr` and its `iova` forms
//! (the region's address for peers may differ from the application's pointer), `ibv_rereg_mr`
//! (a new registration under the same `struct ibv_mr`), `ibv_dereg_mr`.

use std::cell::UnsafeCell;
use std::os::raw::{c_int, c_uint, c_void};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use roce_proto::mr::MrInfo;
use roce_proto::verbs::AccessFlags;

use super::objects::{Context, MrBox, PdBox};
use super::{export, fail_errno, fail_null, ffi, unsupported};
use crate::error::VerbsError;
use crate::sys::mapping;
use crate::sys::memory::AppMemory;

export!(
    ibv_alloc_pd,
    ibv_dealloc_pd,
    ibv_reg_mr,
    ibv_reg_mr_iova,
    ibv_reg_mr_iova2,
    ibv_rereg_mr,
    ibv_dereg_mr,
);

extern "C" fn ibv_alloc_pd(ctx: *mut ffi::ibv_context) -> *mut ffi::ibv_pd {
    // SAFETY: ctx came from ibv_open_device.
    let Some(c) = (unsafe { Context::from_ibv(ctx) }) else {
        return fail_null("ibv_alloc_pd", &VerbsError::Unknown("context"));
    };
    match c.device.alloc_pd() {
        Ok(handle) => Box::new(PdBox {
            c: UnsafeCell::new(ffi::ibv_pd {
                context: ctx,
                handle: 0,
            }),
            handle,
            device: c.device.clone(),
        })
        .into_raw(),
        Err(e) => fail_null("ibv_alloc_pd", &e),
    }
}

extern "C" fn ibv_dealloc_pd(pd: *mut ffi::ibv_pd) -> c_int {
    if pd.is_null() {
        return libc::EINVAL;
    }
    // SAFETY: pd came from ibv_alloc_pd; the program no longer uses it. The transport's PD
    // handle needs no release.
    unsafe { PdBox::free(pd) };
    0
}

extern "C" fn ibv_reg_mr(
    pd: *mut ffi::ibv_pd,
    addr: *mut c_void,
    length: usize,
    access: c_int,
) -> *mut ffi::ibv_mr {
    reg(
        "ibv_reg_mr",
        pd,
        addr,
        length,
        addr as u64,
        access as c_uint,
    )
}

/// The `iova` forms, alike but for the type of `access` (`int`, then `unsigned int`).
macro_rules! reg_mr_iova {
    ($($name:ident($access:ty)),* $(,)?) => {$(
        extern "C" fn $name(
            pd: *mut ffi::ibv_pd,
            addr: *mut c_void,
            length: usize,
            iova: u64,
            access: $access,
        ) -> *mut ffi::ibv_mr {
            // An `int` of flags is the same bits as an `unsigned int`.
            reg(stringify!($name), pd, addr, length, iova, access as c_uint)
        }
    )*};
}

reg_mr_iova!(ibv_reg_mr_iova(c_int), ibv_reg_mr_iova2(c_uint));

/// The transport's access flags for libibverbs' `access`; optional flags (relaxed ordering)
/// are dropped, flags we cannot honour refused.
fn access_flags(access: c_uint) -> Result<AccessFlags, VerbsError> {
    if access & ffi::IBV_ACCESS_ON_DEMAND != 0 {
        return Err(unsupported("on-demand paging (IBV_ACCESS_ON_DEMAND)"));
    }
    let a = AccessFlags::from_bits_truncate(access & 0xf);
    let needs_local_write = AccessFlags::REMOTE_WRITE | AccessFlags::REMOTE_ATOMIC;
    if a.intersects(needs_local_write) && !a.contains(AccessFlags::LOCAL_WRITE) {
        return Err(VerbsError::Invalid(
            "remote write or atomic access needs IBV_ACCESS_LOCAL_WRITE".into(),
        ));
    }
    Ok(a)
}

fn reg(
    call: &str,
    pd: *mut ffi::ibv_pd,
    addr: *mut c_void,
    length: usize,
    iova: u64,
    access: c_uint,
) -> *mut ffi::ibv_mr {
    // SAFETY: pd came from ibv_alloc_pd.
    let Some(p) = (unsafe { PdBox::from_ibv(pd) }) else {
        return fail_null(call, &VerbsError::Unknown("protection domain"));
    };
    let iova = if access & ffi::IBV_ACCESS_ZERO_BASED != 0 {
        0
    } else {
        iova
    };
    let info = match register(p, addr, length, iova, access) {
        Ok(i) => i,
        Err(e) => return fail_null(call, &e),
    };
    // SAFETY: reading a field of our own PD's C part.
    let context = unsafe { (*p.c_ptr()).context };
    Box::new(MrBox {
        c: UnsafeCell::new(ffi::ibv_mr {
            context,
            pd,
            addr,
            length,
            handle: 0,
            lkey: info.lkey,
            rkey: info.rkey,
        }),
        device: p.device.clone(),
        access: AtomicU32::new(access),
        iova: AtomicU64::new(iova),
    })
    .into_raw()
}

/// Registers `addr..addr+length` of the program's memory in `p` at `iova` with libibverbs'
/// `access`, refusing what the kernel's pinning refuses.
fn register(
    p: &PdBox,
    addr: *mut c_void,
    length: usize,
    iova: u64,
    access: c_uint,
) -> Result<MrInfo, VerbsError> {
    let flags = access_flags(access)?;
    if addr.is_null() {
        return Err(VerbsError::Invalid("NULL address".into()));
    }
    // What the kernel's pinning refuses, we refuse: a range that is not mapped (or not
    // writable where the region may be written), or larger than the machine's memory.
    let write = flags.intersects(AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE);
    mapping::check(addr as u64, length as u64, write).map_err(VerbsError::Mapping)?;
    // SAFETY: libibverbs' contract: addr..addr+length is the program's memory (checked mapped
    // above) and stays valid until ibv_dereg_mr (or an ibv_rereg_mr moving the region)
    // returns, which drops the transport's handle before the progress thread answers.
    let mem = unsafe { AppMemory::from_raw(addr.cast(), length) }
        .ok_or_else(|| VerbsError::Invalid("NULL address".into()))?;
    p.device.reg_mr(p.handle, mem, iova, flags)
}

/// `ibv_rereg_mr`: the region registered again with what `flags` changes (its memory, its PD,
/// its access), the rest kept; new keys in the same `struct ibv_mr`. The new registration is
/// made before the old one goes, so on any error the region is as it was (libibverbs'
/// `IBV_REREG_MR_ERR_INPUT` for bad arguments, `IBV_REREG_MR_ERR_CMD` for a refused
/// registration, `errno` set either way).
extern "C" fn ibv_rereg_mr(
    mr: *mut ffi::ibv_mr,
    flags: c_int,
    pd: *mut ffi::ibv_pd,
    addr: *mut c_void,
    length: usize,
    access: c_int,
) -> c_int {
    const CALL: &str = "ibv_rereg_mr";
    let input = |why: &str| {
        let _ = fail_errno(CALL, &VerbsError::Invalid(why.into()));
        ffi::IBV_REREG_MR_ERR_INPUT
    };
    // SAFETY: mr came from ibv_reg_mr.
    let Some(m) = (unsafe { MrBox::from_ibv(mr) }) else {
        return input("no memory region");
    };
    let Ok(flags) = c_uint::try_from(flags) else {
        return input("negative flags");
    };
    if flags == 0 || flags & !ffi::IBV_REREG_MR_FLAGS_SUPPORTED != 0 {
        return input(&format!("flags {flags:#x}"));
    }
    // SAFETY: reading our own C part; the program does not use the region meanwhile.
    let old = unsafe { *m.c_ptr() };
    let new_pd = if flags & ffi::IBV_REREG_MR_CHANGE_PD != 0 {
        pd
    } else {
        old.pd
    };
    let (new_addr, new_length, iova) = if flags & ffi::IBV_REREG_MR_CHANGE_TRANSLATION != 0 {
        (addr, length, addr as u64)
    } else {
        (old.addr, old.length, m.iova.load(Ordering::Relaxed))
    };
    let new_access = if flags & ffi::IBV_REREG_MR_CHANGE_ACCESS != 0 {
        access as c_uint
    } else {
        m.access.load(Ordering::Relaxed)
    };
    let iova = if new_access & ffi::IBV_ACCESS_ZERO_BASED != 0 {
        0
    } else {
        iova
    };
    // SAFETY: new_pd is the region's PD or the program's new one, from ibv_alloc_pd.
    let Some(p) = (unsafe { PdBox::from_ibv(new_pd) }) else {
        return input("no protection domain");
    };
    let info = match register(p, new_addr, new_length, iova, new_access) {
        Ok(i) => i,
        Err(e) => {
            let _ = fail_errno(CALL, &e);
            return ffi::IBV_REREG_MR_ERR_CMD;
        }
    };
    if let Err(e) = m.device.dereg_mr(old.lkey) {
        // The old keys are gone anyway; drop the new registration and report the failure.
        let _ = m.device.dereg_mr(info.lkey);
        let _ = fail_errno(CALL, &e);
        return ffi::IBV_REREG_MR_ERR_CMD;
    }
    // SAFETY: plain field writes into our own C part, as providers update it.
    unsafe {
        let c = m.c_ptr();
        (*c).pd = new_pd;
        (*c).addr = new_addr;
        (*c).length = new_length;
        (*c).lkey = info.lkey;
        (*c).rkey = info.rkey;
    }
    m.access.store(new_access, Ordering::Relaxed);
    m.iova.store(iova, Ordering::Relaxed);
    0
}

extern "C" fn ibv_dereg_mr(mr: *mut ffi::ibv_mr) -> c_int {
    // SAFETY: mr came from ibv_reg_mr.
    let Some(m) = (unsafe { MrBox::from_ibv(mr) }) else {
        return libc::EINVAL;
    };
    // SAFETY: reading a field of our own C part.
    let lkey = unsafe { (*m.c_ptr()).lkey };
    if let Err(e) = m.device.dereg_mr(lkey) {
        return fail_errno("ibv_dereg_mr", &e);
    }
    // SAFETY: the program no longer uses mr.
    unsafe { MrBox::free(mr) };
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn access_flags_follow_libibverbs_rules() {
        let all = ffi::IBV_ACCESS_LOCAL_WRITE
            | ffi::IBV_ACCESS_REMOTE_WRITE
            | ffi::IBV_ACCESS_REMOTE_READ
            | ffi::IBV_ACCESS_RELAXED_ORDERING;
        assert_eq!(
            access_flags(all).ok(),
            Some(AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE | AccessFlags::REMOTE_READ)
        );
        assert!(matches!(
            access_flags(ffi::IBV_ACCESS_REMOTE_WRITE),
            Err(VerbsError::Invalid(_))
        ));
        assert!(matches!(
            access_flags(ffi::IBV_ACCESS_ON_DEMAND),
            Err(VerbsError::Unsupported(_))
        ));
    }
}
