//! The ops table's `post_send` and `post_recv` (what the inline `ibv_post_send` /
//! `ibv_post_recv` call): a chain of work requests checked one by one, the valid prefix handed
//! to the progress thread, `*bad_wr` set to the first refused one.

use std::os::raw::c_int;

use roce_proto::verbs::{SendFlags, Sge, Sgl, WrKind, WrOpcode, WrOperands};

use super::objects::QpBox;
use super::{ffi, unsupported};
use crate::error::VerbsError;
use crate::objects::{QpCaps, RecvRequest, SendRequest};

/// The SGEs of a work request.
///
/// # Safety
///
/// `list` points to `n` SGEs of the caller (or `n` is 0).
pub(super) unsafe fn sges<'a>(
    list: *const ffi::ibv_sge,
    n: c_int,
    max: u32,
) -> Result<&'a [ffi::ibv_sge], VerbsError> {
    let n = usize::try_from(n).map_err(|_| VerbsError::Invalid(format!("num_sge {n}")))?;
    if n > max as usize {
        return Err(VerbsError::Invalid(format!(
            "{n} SGEs, the QP allows {max}"
        )));
    }
    if n == 0 {
        return Ok(&[]);
    }
    if list.is_null() {
        return Err(VerbsError::Invalid("NULL sg_list".into()));
    }
    // SAFETY: per the contract.
    Ok(unsafe { std::slice::from_raw_parts(list, n) })
}

/// The transport's scatter/gather list.
pub(super) fn sgl_of(sges: &[ffi::ibv_sge]) -> Sgl {
    sges.iter()
        .map(|s| Sge {
            addr: s.addr,
            length: s.length,
            lkey: s.lkey,
        })
        .collect()
}

/// The bytes an inline send carries, copied now (the program may reuse its buffer at once).
///
/// # Safety
///
/// Each SGE's `addr..addr + length` is readable memory of the caller (the verbs contract for
/// inline data, which needs no registration).
pub(super) unsafe fn inline_bytes(sges: &[ffi::ibv_sge], max: u32) -> Result<Vec<u8>, VerbsError> {
    let total: u64 = sges.iter().map(|s| u64::from(s.length)).sum();
    if total > u64::from(max) {
        return Err(VerbsError::Invalid(format!(
            "{total} bytes of inline data, the QP allows {max}"
        )));
    }
    let mut out = Vec::with_capacity(total as usize);
    for s in sges {
        if s.length == 0 {
            continue;
        }
        if s.addr == 0 {
            return Err(VerbsError::Invalid("inline data at NULL".into()));
        }
        // SAFETY: per the contract.
        out.extend_from_slice(unsafe {
            std::slice::from_raw_parts(s.addr as *const u8, s.length as usize)
        });
    }
    Ok(out)
}

/// The send flags we carry (fence, solicited) and whether a completion is wanted.
pub(super) fn flags_of(send_flags: u32, sig_all: bool) -> (bool, SendFlags) {
    let mut f = SendFlags::empty();
    if send_flags & ffi::IBV_SEND_FENCE != 0 {
        f |= SendFlags::FENCE;
    }
    if send_flags & ffi::IBV_SEND_SOLICITED != 0 {
        f |= SendFlags::SOLICITED;
    }
    (sig_all || send_flags & ffi::IBV_SEND_SIGNALED != 0, f)
}

fn opcode_of(wr: &ffi::ibv_send_wr) -> Result<WrOpcode, VerbsError> {
    let kind = match wr.opcode {
        ffi::IBV_WR_SEND => WrKind::Send,
        ffi::IBV_WR_SEND_WITH_IMM => WrKind::SendWithImm,
        ffi::IBV_WR_RDMA_WRITE => WrKind::RdmaWrite,
        ffi::IBV_WR_RDMA_WRITE_WITH_IMM => WrKind::RdmaWriteWithImm,
        ffi::IBV_WR_RDMA_READ => WrKind::RdmaRead,
        ffi::IBV_WR_ATOMIC_CMP_AND_SWP => WrKind::AtomicCmpAndSwp,
        ffi::IBV_WR_ATOMIC_FETCH_AND_ADD => WrKind::AtomicFetchAndAdd,
        ffi::IBV_WR_LOCAL_INV | ffi::IBV_WR_BIND_MW | ffi::IBV_WR_SEND_WITH_INV => {
            return Err(unsupported("memory windows and invalidation"))
        }
        other => return Err(unsupported(&format!("work request opcode {other}"))),
    };
    // SAFETY: reading the unions the opcode selects; every bit pattern is a valid integer.
    let (rdma, atomic, imm) = unsafe { (wr.wr.rdma, wr.wr.atomic, wr.__bindgen_anon_1.imm_data) };
    let operands = if matches!(kind, WrKind::AtomicCmpAndSwp | WrKind::AtomicFetchAndAdd) {
        WrOperands {
            remote_addr: atomic.remote_addr,
            rkey: atomic.rkey,
            compare_add: atomic.compare_add,
            swap: atomic.swap,
            ..WrOperands::default()
        }
    } else {
        WrOperands {
            remote_addr: rdma.remote_addr,
            rkey: rdma.rkey,
            imm: u32::from_be(imm),
            ..WrOperands::default()
        }
    };
    Ok(WrOpcode::new(kind, operands))
}

/// Checks one send work request and copies what it carries.
///
/// # Safety
///
/// `wr`'s SGE list (and, for inline sends, the memory it names) belongs to the caller.
pub(super) unsafe fn send_request(
    wr: &ffi::ibv_send_wr,
    caps: &QpCaps,
    sig_all: bool,
) -> Result<SendRequest, VerbsError> {
    let opcode = opcode_of(wr)?;
    // SAFETY: per the contract.
    let list = unsafe { sges(wr.sg_list, wr.num_sge, caps.max_send_sge)? };
    let inline = wr.send_flags & ffi::IBV_SEND_INLINE != 0 && !opcode.is_read_or_atomic();
    let (signaled, flags) = flags_of(wr.send_flags, sig_all);
    Ok(SendRequest {
        wr_id: wr.wr_id,
        opcode,
        sgl: if inline { Sgl::new() } else { sgl_of(list) },
        signaled,
        flags,
        // SAFETY: per the contract.
        inline: if inline {
            Some(unsafe { inline_bytes(list, caps.max_inline)? })
        } else {
            None
        },
    })
}

/// The ops table's `post_send`.
pub(super) extern "C" fn post_send(
    qp: *mut ffi::ibv_qp,
    wr: *mut ffi::ibv_send_wr,
    bad: *mut *mut ffi::ibv_send_wr,
) -> c_int {
    // SAFETY: qp came from ibv_create_qp(_ex).
    let Some(b) = (unsafe { QpBox::from_qp(qp) }) else {
        return libc::EINVAL;
    };
    let (caps, sig_all) = (b.qp.spec.caps, b.qp.spec.sq_sig_all);
    // SAFETY: the chain is the caller's, and so are its SGEs and inline data.
    let chain = unsafe { walk(wr, |w| w.next, |w| send_request(w, &caps, sig_all)) };
    post("ibv_post_send", wr, bad, chain, |reqs| {
        b.device.post_send(&b.qp, reqs)
    })
}

/// The ops table's `post_recv`.
pub(super) extern "C" fn post_recv(
    qp: *mut ffi::ibv_qp,
    wr: *mut ffi::ibv_recv_wr,
    bad: *mut *mut ffi::ibv_recv_wr,
) -> c_int {
    // SAFETY: qp came from ibv_create_qp(_ex).
    let Some(b) = (unsafe { QpBox::from_qp(qp) }) else {
        return libc::EINVAL;
    };
    let max_sge = b.qp.spec.caps.max_recv_sge;
    let recv = |w: &ffi::ibv_recv_wr| {
        // SAFETY: w's SGE list is the caller's.
        let list = unsafe { sges(w.sg_list, w.num_sge, max_sge)? };
        Ok(RecvRequest {
            wr_id: w.wr_id,
            sgl: sgl_of(list),
        })
    };
    // SAFETY: the chain is the caller's.
    let chain = unsafe { walk(wr, |w| w.next, recv) };
    post("ibv_post_recv", wr, bad, chain, |reqs| {
        b.device.post_recv(&b.qp, reqs)
    })
}

/// The requests of a NULL-terminated chain up to the first one `convert` refuses (returned with
/// its error).
///
/// # Safety
///
/// `first` starts a chain of the caller's work requests linked by `next`, NULL-terminated.
unsafe fn walk<W, R>(
    first: *mut W,
    next: impl Fn(&W) -> *mut W,
    convert: impl Fn(&W) -> Result<R, VerbsError>,
) -> (Vec<R>, Option<(*mut W, VerbsError)>) {
    let mut reqs = Vec::new();
    let mut cur = first;
    // SAFETY: per the contract, each link is NULL or a valid work request.
    while let Some(w) = unsafe { cur.as_ref() } {
        match convert(w) {
            Ok(r) => reqs.push(r),
            Err(e) => return (reqs, Some((cur, e))),
        }
        cur = next(w);
    }
    (reqs, None)
}

/// Hands the valid prefix of a chain to `submit` (refused as a whole: `*bad` is the first
/// request) and reports the first refused request, if any.
fn post<W, R>(
    call: &str,
    first: *mut W,
    bad: *mut *mut W,
    (reqs, refused): (Vec<R>, Option<(*mut W, VerbsError)>),
    submit: impl FnOnce(Vec<R>) -> Result<(), VerbsError>,
) -> c_int {
    let result = if reqs.is_empty() {
        Ok(())
    } else {
        submit(reqs).map_err(|e| (first, e))
    };
    finish(call, result.err().or(refused), bad)
}

/// Sets `*bad` to the refused work request and returns its errno, or 0.
fn finish<W>(call: &str, refused: Option<(*mut W, VerbsError)>, bad: *mut *mut W) -> c_int {
    match refused {
        None => 0,
        Some((wr, e)) => {
            if !bad.is_null() {
                // SAFETY: bad points to the caller's pointer slot.
                unsafe { *bad = wr };
            }
            super::fail_errno(call, &e)
        }
    }
}
