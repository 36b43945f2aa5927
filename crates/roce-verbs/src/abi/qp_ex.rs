//! The extended QP API: the `struct ibv_qp_ex` function pointers behind the inline `ibv_wr_*`
//! calls (`ibv_create_qp_ex` itself is in `qp`). Work requests are built between
//! `ibv_wr_start` and `ibv_wr_complete` (each opcode call starts one, with the `wr_id` and
//! `wr_flags` the program set in the struct) and posted together.

use std::os::raw::{c_int, c_void};

use roce_proto::verbs::{Sge, Sgl, WrOpcode};

use super::objects::{QpBox, WrBuilder};
use super::wr::{flags_of, inline_bytes, sges, sgl_of};
use super::{ffi, unsupported};
use crate::error::VerbsError;
use crate::objects::SendRequest;

/// Sets the `ibv_wr_*` pointers of a new QP.
pub(super) fn fill_ops(q: &mut ffi::ibv_qp_ex) {
    q.wr_start = Some(wr_start);
    q.wr_complete = Some(wr_complete);
    q.wr_abort = Some(wr_abort);
    q.wr_send = Some(wr_send);
    q.wr_send_imm = Some(wr_send_imm);
    q.wr_rdma_write = Some(wr_rdma_write);
    q.wr_rdma_write_imm = Some(wr_rdma_write_imm);
    q.wr_rdma_read = Some(wr_rdma_read);
    q.wr_atomic_cmp_swp = Some(wr_atomic_cmp_swp);
    q.wr_atomic_fetch_add = Some(wr_atomic_fetch_add);
    q.wr_set_sge = Some(wr_set_sge);
    q.wr_set_sge_list = Some(wr_set_sge_list);
    q.wr_set_inline_data = Some(wr_set_inline_data);
    q.wr_set_inline_data_list = Some(wr_set_inline_data_list);
    q.wr_bind_mw = Some(wr_bind_mw);
    q.wr_local_inv = Some(wr_local_inv);
    q.wr_send_inv = Some(wr_send_inv);
    q.wr_send_tso = Some(wr_send_tso);
    q.wr_set_ud_addr = Some(wr_set_ud_addr);
    q.wr_set_xrc_srqn = Some(wr_set_xrc_srqn);
    q.wr_atomic_write = Some(wr_atomic_write);
}

/// Runs `f` on the QP's builder.
fn with(qp: *mut ffi::ibv_qp_ex, f: impl FnOnce(&QpBox, &mut WrBuilder)) {
    // SAFETY: qp came from ibv_create_qp(_ex).
    if let Some(b) = unsafe { QpBox::from_ibv(qp) } {
        if let Ok(mut w) = b.builder.lock() {
            f(b, &mut w);
        }
    }
}

/// Starts a work request with the `wr_id` and `wr_flags` the program set.
fn start(qp: *mut ffi::ibv_qp_ex, opcode: WrOpcode) {
    with(qp, |b, w| {
        // SAFETY: reading the fields the program wrote before this call, on its thread.
        let (wr_id, wr_flags) = unsafe { ((*b.c_ptr()).wr_id, (*b.c_ptr()).wr_flags) };
        let (signaled, flags) = flags_of(wr_flags, b.qp.spec.sq_sig_all);
        if w.reqs.len() >= b.qp.spec.caps.max_send_wr as usize {
            w.error.get_or_insert(VerbsError::QueueFull);
            return;
        }
        w.reqs.push(SendRequest {
            wr_id,
            opcode,
            sgl: Sgl::new(),
            signaled,
            flags,
            inline: None,
        });
    });
}

fn refuse(qp: *mut ffi::ibv_qp_ex, what: &str) {
    with(qp, |_, w| {
        w.error.get_or_insert(unsupported(what));
    });
}

extern "C" fn wr_start(qp: *mut ffi::ibv_qp_ex) {
    with(qp, |_, w| *w = WrBuilder::default());
}

extern "C" fn wr_complete(qp: *mut ffi::ibv_qp_ex) -> c_int {
    let mut ret = 0;
    with(qp, |b, w| {
        let built = std::mem::take(w);
        let result = match built.error {
            Some(e) => Err(e),
            None if built.reqs.is_empty() => Ok(()),
            None => b.device.post_send(&b.qp, built.reqs),
        };
        if let Err(e) = result {
            ret = super::fail_errno("ibv_wr_complete", &e);
        }
    });
    ret
}

extern "C" fn wr_abort(qp: *mut ffi::ibv_qp_ex) {
    with(qp, |_, w| *w = WrBuilder::default());
}

extern "C" fn wr_send(qp: *mut ffi::ibv_qp_ex) {
    start(qp, WrOpcode::Send);
}

extern "C" fn wr_send_imm(qp: *mut ffi::ibv_qp_ex, imm: u32) {
    start(
        qp,
        WrOpcode::SendWithImm {
            imm: u32::from_be(imm),
        },
    );
}

extern "C" fn wr_rdma_write(qp: *mut ffi::ibv_qp_ex, rkey: u32, remote_addr: u64) {
    start(qp, WrOpcode::RdmaWrite { remote_addr, rkey });
}

extern "C" fn wr_rdma_write_imm(qp: *mut ffi::ibv_qp_ex, rkey: u32, remote_addr: u64, imm: u32) {
    let imm = u32::from_be(imm);
    start(
        qp,
        WrOpcode::RdmaWriteWithImm {
            remote_addr,
            rkey,
            imm,
        },
    );
}

extern "C" fn wr_rdma_read(qp: *mut ffi::ibv_qp_ex, rkey: u32, remote_addr: u64) {
    start(qp, WrOpcode::RdmaRead { remote_addr, rkey });
}

extern "C" fn wr_atomic_cmp_swp(
    qp: *mut ffi::ibv_qp_ex,
    rkey: u32,
    remote_addr: u64,
    compare: u64,
    swap: u64,
) {
    let op = WrOpcode::AtomicCmpAndSwp {
        remote_addr,
        rkey,
        compare,
        swap,
    };
    start(qp, op);
}

extern "C" fn wr_atomic_fetch_add(qp: *mut ffi::ibv_qp_ex, rkey: u32, remote_addr: u64, add: u64) {
    start(
        qp,
        WrOpcode::AtomicFetchAndAdd {
            remote_addr,
            rkey,
            add,
        },
    );
}

/// Sets the data of the work request being built.
fn set_data(qp: *mut ffi::ibv_qp_ex, data: Result<(Sgl, Option<Vec<u8>>), VerbsError>) {
    with(qp, |_, w| match (w.reqs.last_mut(), data) {
        (Some(r), Ok((sgl, inline))) => {
            r.sgl = sgl;
            r.inline = inline.filter(|_| !r.opcode.is_read_or_atomic());
        }
        (None, _) => {
            w.error
                .get_or_insert(VerbsError::Invalid("data set before an opcode".into()));
        }
        (_, Err(e)) => {
            w.error.get_or_insert(e);
        }
    });
}

fn caps(qp: *mut ffi::ibv_qp_ex) -> Option<crate::objects::QpCaps> {
    // SAFETY: qp came from ibv_create_qp(_ex).
    unsafe { QpBox::from_ibv(qp) }.map(|b| b.qp.spec.caps)
}

extern "C" fn wr_set_sge(qp: *mut ffi::ibv_qp_ex, lkey: u32, addr: u64, length: u32) {
    let mut sgl = Sgl::new();
    sgl.push(Sge { addr, length, lkey });
    set_data(qp, Ok((sgl, None)));
}

extern "C" fn wr_set_sge_list(qp: *mut ffi::ibv_qp_ex, n: usize, list: *const ffi::ibv_sge) {
    let max = caps(qp).map_or(0, |c| c.max_send_sge);
    let n = c_int::try_from(n).unwrap_or(c_int::MAX);
    // SAFETY: list holds n SGEs of the caller.
    let data = unsafe { sges(list, n, max) }.map(|l| (sgl_of(l), None));
    set_data(qp, data);
}

extern "C" fn wr_set_inline_data(qp: *mut ffi::ibv_qp_ex, addr: *mut c_void, length: usize) {
    let max = caps(qp).map_or(0, |c| c.max_inline);
    let sge = ffi::ibv_sge {
        addr: addr as u64,
        length: u32::try_from(length).unwrap_or(u32::MAX),
        lkey: 0,
    };
    // SAFETY: addr..addr+length is the caller's data, copied now.
    let data = unsafe { inline_bytes(&[sge], max) }.map(|b| (Sgl::new(), Some(b)));
    set_data(qp, data);
}

extern "C" fn wr_set_inline_data_list(
    qp: *mut ffi::ibv_qp_ex,
    n: usize,
    list: *const ffi::ibv_data_buf,
) {
    let max = caps(qp).map_or(0, |c| c.max_inline);
    let bufs = if list.is_null() || n == 0 {
        &[][..]
    } else {
        // SAFETY: list holds n buffers of the caller.
        unsafe { std::slice::from_raw_parts(list, n) }
    };
    let sges: Vec<ffi::ibv_sge> = bufs
        .iter()
        .map(|d| ffi::ibv_sge {
            addr: d.addr as u64,
            length: u32::try_from(d.length).unwrap_or(u32::MAX),
            lkey: 0,
        })
        .collect();
    // SAFETY: each buffer is the caller's data, copied now.
    let data = unsafe { inline_bytes(&sges, max) }.map(|b| (Sgl::new(), Some(b)));
    set_data(qp, data);
}

extern "C" fn wr_bind_mw(
    qp: *mut ffi::ibv_qp_ex,
    _mw: *mut ffi::ibv_mw,
    _rkey: u32,
    _info: *const ffi::ibv_mw_bind_info,
) {
    refuse(qp, "memory windows (ibv_wr_bind_mw)");
}

extern "C" fn wr_local_inv(qp: *mut ffi::ibv_qp_ex, _rkey: u32) {
    refuse(qp, "invalidation (ibv_wr_local_inv)");
}

extern "C" fn wr_send_inv(qp: *mut ffi::ibv_qp_ex, _rkey: u32) {
    refuse(qp, "invalidation (ibv_wr_send_inv)");
}

extern "C" fn wr_send_tso(qp: *mut ffi::ibv_qp_ex, _hdr: *mut c_void, _sz: u16, _mss: u16) {
    refuse(qp, "TSO (ibv_wr_send_tso)");
}

extern "C" fn wr_set_ud_addr(
    qp: *mut ffi::ibv_qp_ex,
    _ah: *mut ffi::ibv_ah,
    _qpn: u32,
    _qkey: u32,
) {
    refuse(qp, "UD addressing (ibv_wr_set_ud_addr)");
}

extern "C" fn wr_set_xrc_srqn(qp: *mut ffi::ibv_qp_ex, _srqn: u32) {
    refuse(qp, "XRC (ibv_wr_set_xrc_srqn)");
}

extern "C" fn wr_atomic_write(
    qp: *mut ffi::ibv_qp_ex,
    _rkey: u32,
    _addr: u64,
    _data: *const c_void,
) {
    refuse(qp, "atomic write (ibv_wr_atomic_write)");
}
