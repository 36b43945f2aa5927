//! Completion queues and channels: `ibv_create_cq`, the ops table's `poll_cq` and
//! `req_notify_cq`, `ibv_get_cq_event` / `ibv_ack_cq_events` on the channel's eventfd, and the
//! context's async events (none are ever raised).

use std::cell::UnsafeCell;
use std::os::raw::{c_int, c_void};
use std::sync::{Arc, Mutex};

use roce_proto::verbs::{WcOpcode, WcStatus};

use super::objects::{ChannelBox, Context, CqBox};
use super::{export, fail_minus_one, fail_null, ffi};
use crate::error::VerbsError;
use crate::info::MAX_CQE;
use crate::objects::Completion;

export!(
    ibv_create_cq,
    ibv_destroy_cq,
    ibv_resize_cq,
    ibv_create_comp_channel,
    ibv_destroy_comp_channel,
    ibv_get_cq_event,
    ibv_ack_cq_events,
    ibv_get_async_event,
    ibv_ack_async_event,
);

extern "C" fn ibv_create_cq(
    ctx: *mut ffi::ibv_context,
    cqe: c_int,
    cq_context: *mut c_void,
    channel: *mut ffi::ibv_comp_channel,
    comp_vector: c_int,
) -> *mut ffi::ibv_cq {
    new_cq("ibv_create_cq", ctx, cqe, cq_context, channel, comp_vector).cast()
}

/// A CQ of `cqe` entries, its C part an `ibv_cq_ex` with no extended poll calls set (the
/// caller sets them), or NULL and `errno` as the kernel refuses: a bad context, no entries or
/// more than [`MAX_CQE`], a completion vector the device lacks (EINVAL).
pub(super) fn new_cq(
    call: &str,
    ctx: *mut ffi::ibv_context,
    cqe: c_int,
    cq_context: *mut c_void,
    channel: *mut ffi::ibv_comp_channel,
    comp_vector: c_int,
) -> *mut ffi::ibv_cq_ex {
    // SAFETY: ctx came from ibv_open_device.
    let Some(c) = (unsafe { Context::from_ibv(ctx) }) else {
        return fail_null(call, &VerbsError::Unknown("context"));
    };
    // The kernel refuses a vector past the device's `num_comp_vectors` (1 here) with EINVAL.
    if comp_vector != 0 {
        return fail_null(
            call,
            &VerbsError::Invalid(format!(
                "completion vector {comp_vector} (the device has 1)"
            )),
        );
    }
    let Ok(entries) = u32::try_from(cqe) else {
        return fail_null(call, &VerbsError::Invalid(format!("cqe {cqe}")));
    };
    if entries == 0 || entries > MAX_CQE {
        return fail_null(call, &VerbsError::Invalid(format!("cqe {cqe}")));
    }
    // SAFETY: channel is NULL or came from ibv_create_comp_channel.
    let ch = unsafe { ChannelBox::from_ibv(channel) }.map(|b| b.channel.clone());
    let cq = match c.device.create_cq(entries, ch) {
        Ok(cq) => cq,
        Err(e) => return fail_null(call, &e),
    };
    let b = Box::new(CqBox {
        c: UnsafeCell::new(ffi::ibv_cq_ex {
            context: ctx,
            channel,
            cq_context,
            cqe,
            ..Default::default()
        }),
        cq,
        device: c.device.clone(),
        current: Mutex::new(None),
    });
    let p = b.into_raw();
    // SAFETY: p came from into_raw just now.
    if let Some(b) = unsafe { CqBox::from_ibv(p) } {
        // Events name the CQ by its C pointer.
        b.cq.set_cookie(p as usize);
    }
    p
}

extern "C" fn ibv_destroy_cq(cq: *mut ffi::ibv_cq) -> c_int {
    // SAFETY: cq came from ibv_create_cq.
    let Some(b) = (unsafe { CqBox::from_cq(cq) }) else {
        return libc::EINVAL;
    };
    if let Err(e) = b.device.destroy_cq(&b.cq) {
        return super::fail_errno("ibv_destroy_cq", &e);
    }
    // SAFETY: the program no longer uses cq (its QPs are destroyed first).
    unsafe { CqBox::free(cq.cast()) };
    0
}

extern "C" fn ibv_resize_cq(cq: *mut ffi::ibv_cq, cqe: c_int) -> c_int {
    // SAFETY: cq came from ibv_create_cq.
    let Some(b) = (unsafe { CqBox::from_cq(cq) }) else {
        return libc::EINVAL;
    };
    // Our queues are not bounded by cqe: any size that holds what is waiting will do.
    if cqe <= 0 || cqe as u32 > MAX_CQE || (cqe as usize) < b.cq.len() {
        return libc::EINVAL;
    }
    // SAFETY: a plain field write into the C part, as libibverbs providers do.
    unsafe { (*b.c_ptr()).cqe = cqe };
    0
}

/// The ops table's `poll_cq` (the inline `ibv_poll_cq`).
pub(super) extern "C" fn poll_cq(cq: *mut ffi::ibv_cq, n: c_int, wc: *mut ffi::ibv_wc) -> c_int {
    // SAFETY: cq came from ibv_create_cq.
    let Some(b) = (unsafe { CqBox::from_cq(cq) }) else {
        return -1;
    };
    let Ok(n) = usize::try_from(n) else { return -1 };
    if n == 0 || wc.is_null() {
        return 0;
    }
    // SAFETY: the caller's wc array holds n entries.
    let out = unsafe { std::slice::from_raw_parts_mut(wc, n) };
    let got = b.cq.poll(n, |i, c| {
        if let Some(slot) = out.get_mut(i) {
            *slot = to_wc(&c);
        }
    });
    got as c_int
}

/// The ops table's `req_notify_cq`.
pub(super) extern "C" fn req_notify_cq(cq: *mut ffi::ibv_cq, _solicited_only: c_int) -> c_int {
    // SAFETY: cq came from ibv_create_cq.
    match unsafe { CqBox::from_cq(cq) } {
        Some(b) if b.cq_has_channel() => {
            b.cq.arm();
            0
        }
        Some(_) => libc::EINVAL,
        None => libc::EINVAL,
    }
}

impl CqBox {
    fn cq_has_channel(&self) -> bool {
        // SAFETY: reading a field of our own C part, written once at creation.
        !unsafe { (*self.c_ptr()).channel }.is_null()
    }
}

fn wc_status(s: WcStatus) -> ffi::ibv_wc_status {
    match s {
        WcStatus::Success => ffi::IBV_WC_SUCCESS,
        WcStatus::LocLenErr => ffi::IBV_WC_LOC_LEN_ERR,
        WcStatus::LocQpOpErr => ffi::IBV_WC_LOC_QP_OP_ERR,
        WcStatus::LocProtErr => ffi::IBV_WC_LOC_PROT_ERR,
        WcStatus::WrFlushErr => ffi::IBV_WC_WR_FLUSH_ERR,
        WcStatus::BadRespErr => ffi::IBV_WC_BAD_RESP_ERR,
        WcStatus::LocAccessErr => ffi::IBV_WC_LOC_ACCESS_ERR,
        WcStatus::RemInvReqErr => ffi::IBV_WC_REM_INV_REQ_ERR,
        WcStatus::RemAccessErr => ffi::IBV_WC_REM_ACCESS_ERR,
        WcStatus::RemOpErr => ffi::IBV_WC_REM_OP_ERR,
        WcStatus::RetryExcErr => ffi::IBV_WC_RETRY_EXC_ERR,
        WcStatus::RnrRetryExcErr => ffi::IBV_WC_RNR_RETRY_EXC_ERR,
    }
}

fn wc_opcode(o: WcOpcode) -> ffi::ibv_wc_opcode {
    match o {
        WcOpcode::Send => ffi::IBV_WC_SEND,
        WcOpcode::RdmaWrite => ffi::IBV_WC_RDMA_WRITE,
        WcOpcode::RdmaRead => ffi::IBV_WC_RDMA_READ,
        WcOpcode::CompSwap => ffi::IBV_WC_COMP_SWAP,
        WcOpcode::FetchAdd => ffi::IBV_WC_FETCH_ADD,
        WcOpcode::Recv => ffi::IBV_WC_RECV,
        WcOpcode::RecvRdmaWithImm => ffi::IBV_WC_RECV_RDMA_WITH_IMM,
        WcOpcode::LocalInv => ffi::IBV_WC_LOCAL_INV,
    }
}

/// A completion as `struct ibv_wc`.
pub(super) fn to_wc(c: &Completion) -> ffi::ibv_wc {
    ffi::ibv_wc {
        wr_id: c.wr_id,
        status: wc_status(c.status),
        opcode: wc_opcode(c.opcode),
        byte_len: c.byte_len,
        __bindgen_anon_1: ffi::ibv_wc__bindgen_ty_1 {
            // Immediate data is in network order in the struct.
            imm_data: c.imm.unwrap_or(0).to_be(),
        },
        qp_num: c.qp_num,
        src_qp: c.src_qp,
        wc_flags: if c.imm.is_some() {
            ffi::IBV_WC_WITH_IMM
        } else {
            0
        },
        ..Default::default()
    }
}

extern "C" fn ibv_create_comp_channel(ctx: *mut ffi::ibv_context) -> *mut ffi::ibv_comp_channel {
    const CALL: &str = "ibv_create_comp_channel";
    // SAFETY: ctx came from ibv_open_device.
    if unsafe { Context::from_ibv(ctx) }.is_none() {
        return fail_null(CALL, &VerbsError::Unknown("context"));
    }
    let channel = match crate::objects::CompChannel::new() {
        Ok(c) => Arc::new(c),
        Err(e) => return fail_null(CALL, &e),
    };
    Box::new(ChannelBox {
        c: UnsafeCell::new(ffi::ibv_comp_channel {
            context: ctx,
            fd: channel.fd(),
            refcnt: 0,
        }),
        channel,
    })
    .into_raw()
}

extern "C" fn ibv_destroy_comp_channel(channel: *mut ffi::ibv_comp_channel) -> c_int {
    if channel.is_null() {
        return fail_minus_one("ibv_destroy_comp_channel", &VerbsError::Unknown("channel"));
    }
    // SAFETY: channel came from ibv_create_comp_channel; its CQs keep their own reference to
    // the shared part.
    unsafe { ChannelBox::free(channel) };
    0
}

extern "C" fn ibv_get_cq_event(
    channel: *mut ffi::ibv_comp_channel,
    cq: *mut *mut ffi::ibv_cq,
    cq_context: *mut *mut c_void,
) -> c_int {
    // SAFETY: channel came from ibv_create_comp_channel.
    let Some(b) = (unsafe { ChannelBox::from_ibv(channel) }) else {
        return fail_minus_one("ibv_get_cq_event", &VerbsError::Unknown("channel"));
    };
    let cookie = match b.channel.get_event() {
        Ok(c) => c,
        Err(e) => return fail_minus_one("ibv_get_cq_event", &e),
    };
    let fired = cookie as *mut ffi::ibv_cq;
    // SAFETY: the cookie is the CQ's own pointer (set in ibv_create_cq); the out pointers are
    // the caller's.
    unsafe {
        if !cq.is_null() {
            *cq = fired;
        }
        if !cq_context.is_null() {
            *cq_context = (*fired).cq_context;
        }
    }
    0
}

extern "C" fn ibv_ack_cq_events(cq: *mut ffi::ibv_cq, nevents: u32) {
    // SAFETY: cq came from ibv_create_cq.
    if let Some(b) = unsafe { CqBox::from_cq(cq) } {
        let c = b.c_ptr();
        // SAFETY: libibverbs counts acknowledged events in this field of our C part (under the
        // CQ's mutex, which only its ibv_destroy_cq waits on; ours never blocks there).
        unsafe { (*c).comp_events_completed = (*c).comp_events_completed.wrapping_add(nevents) };
    }
}

extern "C" fn ibv_get_async_event(
    ctx: *mut ffi::ibv_context,
    _event: *mut ffi::ibv_async_event,
) -> c_int {
    // SAFETY: ctx came from ibv_open_device.
    let Some(c) = (unsafe { Context::from_ibv(ctx) }) else {
        return fail_minus_one("ibv_get_async_event", &VerbsError::Unknown("context"));
    };
    // No async event is ever raised: this blocks (or fails with EAGAIN when non-blocking).
    match c.async_fd.wait() {
        Ok(()) => fail_minus_one("ibv_get_async_event", &VerbsError::Internal("async event")),
        Err(e) => fail_minus_one("ibv_get_async_event", &VerbsError::Io(e)),
    }
}

extern "C" fn ibv_ack_async_event(_event: *mut ffi::ibv_async_event) {}
