//! Extended CQs: `ibv_create_cq_ex` (the context's `create_cq_ex`) and the poll calls of `struct
//! ibv_cq_ex` that verbs.h's inline `ibv_start_poll`, `ibv_next_poll`, `ibv_end_poll` and
//! `ibv_wc_read_*` call. An extended CQ is the same CQ as `ibv_create_cq`'s (`ibv_cq_ex_to_cq`
//! is a cast, `ibv_poll_cq` and `ibv_destroy_cq` work on it). The fields of
//! `IBV_WC_STANDARD_FLAGS` are provided; timestamps, VLAN, flow tag and tag matching are
//! refused with EOPNOTSUPP, as a provider without them refuses them.

use std::os::raw::{c_int, c_uint};

use super::cq::{new_cq, to_wc};
use super::objects::CqBox;
use super::{fail_null, ffi, unsupported};
use crate::error::VerbsError;
use crate::objects::Completion;

/// The `ibv_create_cq_attr_flags` we accept: single-threaded use is a hint we do not need.
const CQ_FLAGS: u32 = ffi::IBV_CREATE_CQ_ATTR_SINGLE_THREADED;

/// The context's `create_cq_ex`.
pub(super) extern "C" fn create_cq_ex(
    ctx: *mut ffi::ibv_context,
    attr: *mut ffi::ibv_cq_init_attr_ex,
) -> *mut ffi::ibv_cq_ex {
    const CALL: &str = "ibv_create_cq_ex";
    if attr.is_null() {
        return fail_null(CALL, &VerbsError::Invalid("no attributes".into()));
    }
    // SAFETY: the caller's attributes, read once.
    let a = unsafe { *attr };
    if a.comp_mask & ffi::IBV_CQ_INIT_ATTR_MASK_PD != 0 {
        return fail_null(
            CALL,
            &unsupported("a parent domain (IBV_CQ_INIT_ATTR_MASK_PD)"),
        );
    }
    if a.comp_mask & !ffi::IBV_CQ_INIT_ATTR_MASK_FLAGS != 0 {
        let why = format!("comp_mask {:#x}", a.comp_mask);
        return fail_null(CALL, &VerbsError::Invalid(why));
    }
    if a.comp_mask & ffi::IBV_CQ_INIT_ATTR_MASK_FLAGS != 0 && a.flags & !CQ_FLAGS != 0 {
        let what = format!(
            "CQ flags {:#x} (only IBV_CREATE_CQ_ATTR_SINGLE_THREADED)",
            a.flags
        );
        return fail_null(CALL, &unsupported(&what));
    }
    let extra = a.wc_flags & !u64::from(ffi::IBV_WC_STANDARD_FLAGS);
    if extra != 0 {
        let what = format!("completion fields {extra:#x} beyond IBV_WC_STANDARD_FLAGS");
        return fail_null(CALL, &unsupported(&what));
    }
    let cqe = c_int::try_from(a.cqe).unwrap_or(c_int::MAX);
    let vector = c_int::try_from(a.comp_vector).unwrap_or(c_int::MAX);
    let p = new_cq(CALL, ctx, cqe, a.cq_context, a.channel, vector);
    if p.is_null() {
        return p;
    }
    // SAFETY: p came from new_cq just now; nobody else has it yet.
    let c = unsafe { &mut *p };
    c.start_poll = Some(start_poll);
    c.next_poll = Some(next_poll);
    c.end_poll = Some(end_poll);
    c.read_opcode = Some(read_opcode);
    c.read_vendor_err = Some(read_vendor_err);
    c.read_byte_len = Some(read_byte_len);
    c.read_imm_data = Some(read_imm_data);
    c.read_qp_num = Some(read_qp_num);
    c.read_src_qp = Some(read_src_qp);
    c.read_wc_flags = Some(read_wc_flags);
    c.read_slid = Some(read_slid);
    c.read_sl = Some(read_sl);
    c.read_dlid_path_bits = Some(read_dlid_path_bits);
    p
}

/// Takes the next completion of `cq` as the current one: 0 and the C part's `status` and
/// `wr_id` set, or ENOENT when there is none (and no current one).
fn advance(cq: *mut ffi::ibv_cq_ex) -> c_int {
    // SAFETY: cq came from create_cq_ex.
    let Some(b) = (unsafe { CqBox::from_ibv(cq) }) else {
        return libc::EINVAL;
    };
    let mut next = None;
    b.cq.poll(1, |_, c| next = Some(c));
    let mut current = b.current.lock().unwrap_or_else(|e| e.into_inner());
    *current = next;
    match next {
        Some(c) => {
            let wc = to_wc(&c);
            // SAFETY: plain field writes into our own C part, which the program reads only
            // between its start_poll and end_poll (one poller per CQ, as verbs requires).
            unsafe {
                (*cq).status = wc.status;
                (*cq).wr_id = wc.wr_id;
            }
            0
        }
        None => libc::ENOENT,
    }
}

/// `ibv_start_poll`: `attr`'s `comp_mask` must be 0.
extern "C" fn start_poll(cq: *mut ffi::ibv_cq_ex, attr: *mut ffi::ibv_poll_cq_attr) -> c_int {
    // SAFETY: attr is NULL or the caller's.
    if !attr.is_null() && unsafe { (*attr).comp_mask } != 0 {
        return libc::EINVAL;
    }
    advance(cq)
}

/// `ibv_next_poll`.
extern "C" fn next_poll(cq: *mut ffi::ibv_cq_ex) -> c_int {
    advance(cq)
}

/// `ibv_end_poll`: the current completion is gone.
extern "C" fn end_poll(cq: *mut ffi::ibv_cq_ex) {
    // SAFETY: cq came from create_cq_ex.
    if let Some(b) = unsafe { CqBox::from_ibv(cq) } {
        *b.current.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }
}

/// The current completion as `struct ibv_wc` (zeroed outside a poll).
fn current(cq: *mut ffi::ibv_cq_ex) -> ffi::ibv_wc {
    // SAFETY: cq came from create_cq_ex.
    let c: Option<Completion> = unsafe { CqBox::from_ibv(cq) }
        .and_then(|b| *b.current.lock().unwrap_or_else(|e| e.into_inner()));
    c.map(|c| to_wc(&c)).unwrap_or_default()
}

extern "C" fn read_opcode(cq: *mut ffi::ibv_cq_ex) -> ffi::ibv_wc_opcode {
    current(cq).opcode
}

extern "C" fn read_vendor_err(cq: *mut ffi::ibv_cq_ex) -> u32 {
    current(cq).vendor_err
}

extern "C" fn read_byte_len(cq: *mut ffi::ibv_cq_ex) -> u32 {
    current(cq).byte_len
}

extern "C" fn read_imm_data(cq: *mut ffi::ibv_cq_ex) -> ffi::__be32 {
    // SAFETY: the union's imm_data member, as to_wc wrote it.
    unsafe { current(cq).__bindgen_anon_1.imm_data }
}

extern "C" fn read_qp_num(cq: *mut ffi::ibv_cq_ex) -> u32 {
    current(cq).qp_num
}

extern "C" fn read_src_qp(cq: *mut ffi::ibv_cq_ex) -> u32 {
    current(cq).src_qp
}

extern "C" fn read_wc_flags(cq: *mut ffi::ibv_cq_ex) -> c_uint {
    current(cq).wc_flags
}

extern "C" fn read_slid(cq: *mut ffi::ibv_cq_ex) -> u32 {
    u32::from(current(cq).slid)
}

extern "C" fn read_sl(cq: *mut ffi::ibv_cq_ex) -> u8 {
    current(cq).sl
}

extern "C" fn read_dlid_path_bits(cq: *mut ffi::ibv_cq_ex) -> u8 {
    current(cq).dlid_path_bits
}
