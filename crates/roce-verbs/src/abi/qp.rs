//! Queue pairs: `ibv_create_qp` and `ibv_create_qp_ex` (the context's `create_qp_ex`; RC only:
//! UD, UC, XRC and SRQs are refused with EOPNOTSUPP), `ibv_modify_qp` (translated to the
//! transport's attributes; the address vector's GID names the peer's IP, ARP/NDP finds its MAC),
//! `ibv_query_qp` and `ibv_destroy_qp`. The extended QP's `ibv_wr_*` pointers are `qp_ex`'s.

use std::cell::UnsafeCell;
use std::net::{IpAddr, Ipv6Addr};
use std::os::raw::c_int;
use std::sync::Mutex;

use roce_proto::psn::Psn;
use roce_proto::resolving::UNKNOWN_MAC;
use roce_proto::verbs::{AccessFlags, AddressVector, Mtu, QpAttr, QpState};

use super::objects::{CqBox, PdBox, QpBox, WrBuilder};
use super::qp_ex;
use super::{export, fail_errno, fail_null, ffi, unsupported};
use crate::error::VerbsError;
use crate::info::{MAX_INLINE, MAX_QP_WR, MAX_RD_ATOMIC, MAX_SGE};
use crate::objects::{QpCaps, QpSpec};

export!(
    ibv_create_qp,
    ibv_destroy_qp,
    ibv_modify_qp,
    ibv_query_qp,
    ibv_qp_to_qp_ex,
    ibv_query_qp_data_in_order,
);

extern "C" fn ibv_create_qp(
    pd: *mut ffi::ibv_pd,
    init: *mut ffi::ibv_qp_init_attr,
) -> *mut ffi::ibv_qp {
    if init.is_null() {
        return fail_null(
            "ibv_create_qp",
            &VerbsError::Invalid("no attributes".into()),
        );
    }
    // SAFETY: init points to the caller's attributes; we write back the capabilities.
    create("ibv_create_qp", pd, unsafe { &mut *init })
}

fn qp_type_name(t: ffi::ibv_qp_type) -> &'static str {
    match t {
        ffi::IBV_QPT_UC => "UC",
        ffi::IBV_QPT_UD => "UD",
        ffi::IBV_QPT_RAW_PACKET => "raw packet",
        ffi::IBV_QPT_XRC_SEND | ffi::IBV_QPT_XRC_RECV => "XRC",
        ffi::IBV_QPT_DRIVER => "driver",
        _ => "this type of",
    }
}

fn caps_of(cap: &ffi::ibv_qp_cap) -> Result<QpCaps, VerbsError> {
    let check = |name: &str, v: u32, max: u32| {
        if v > max {
            Err(VerbsError::Invalid(format!("{name} {v} is above {max}")))
        } else {
            Ok(v)
        }
    };
    Ok(QpCaps {
        max_send_wr: check("max_send_wr", cap.max_send_wr, MAX_QP_WR)?.max(1),
        max_recv_wr: check("max_recv_wr", cap.max_recv_wr, MAX_QP_WR)?.max(1),
        max_send_sge: check("max_send_sge", cap.max_send_sge, MAX_SGE)?.max(1),
        max_recv_sge: check("max_recv_sge", cap.max_recv_sge, MAX_SGE)?.max(1),
        max_inline: check("max_inline_data", cap.max_inline_data, MAX_INLINE)?,
    })
}

/// `ibv_create_qp_ex`: an RC QP with a PD; the extended ops the program asks for must be ones we
/// build.
pub(super) extern "C" fn create_qp_ex(
    ctx: *mut ffi::ibv_context,
    attr: *mut ffi::ibv_qp_init_attr_ex,
) -> *mut ffi::ibv_qp {
    const CALL: &str = "ibv_create_qp_ex";
    // SAFETY: attr points to the caller's attributes (we write back the capabilities).
    let Some(a) = (unsafe { attr.as_mut() }) else {
        return fail_null(CALL, &VerbsError::Invalid("no attributes".into()));
    };
    let known = ffi::IBV_QP_INIT_ATTR_PD | ffi::IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
    if a.comp_mask & !known != 0 {
        return fail_null(
            CALL,
            &unsupported(&format!("comp_mask {:#x}", a.comp_mask & !known)),
        );
    }
    if a.comp_mask & ffi::IBV_QP_INIT_ATTR_PD == 0 || a.pd.is_null() {
        return fail_null(CALL, &VerbsError::Invalid("a PD is required".into()));
    }
    let ops = u64::from(
        ffi::IBV_QP_EX_WITH_SEND
            | ffi::IBV_QP_EX_WITH_SEND_WITH_IMM
            | ffi::IBV_QP_EX_WITH_RDMA_WRITE
            | ffi::IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM
            | ffi::IBV_QP_EX_WITH_RDMA_READ
            | ffi::IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP
            | ffi::IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD,
    );
    if a.comp_mask & ffi::IBV_QP_INIT_ATTR_SEND_OPS_FLAGS != 0 && a.send_ops_flags & !ops != 0 {
        let what = format!("send_ops_flags {:#x}", a.send_ops_flags & !ops);
        return fail_null(CALL, &unsupported(&what));
    }
    let _ = ctx;
    let mut init = ffi::ibv_qp_init_attr {
        qp_context: a.qp_context,
        send_cq: a.send_cq,
        recv_cq: a.recv_cq,
        srq: a.srq,
        cap: a.cap,
        qp_type: a.qp_type,
        sq_sig_all: a.sq_sig_all,
    };
    let qp = create(CALL, a.pd, &mut init);
    a.cap = init.cap;
    qp
}

/// Creates an RC QP from `init` (capabilities written back, as providers do).
fn create(call: &str, pd: *mut ffi::ibv_pd, init: &mut ffi::ibv_qp_init_attr) -> *mut ffi::ibv_qp {
    if init.qp_type != ffi::IBV_QPT_RC {
        let what = format!("{} queue pairs (only RC)", qp_type_name(init.qp_type));
        return fail_null(call, &unsupported(&what));
    }
    if !init.srq.is_null() {
        return fail_null(call, &unsupported("shared receive queues"));
    }
    // SAFETY: pd and the CQs came from ibv_alloc_pd / ibv_create_cq.
    let (p, scq, rcq) = unsafe {
        (
            PdBox::from_ibv(pd),
            CqBox::from_cq(init.send_cq),
            CqBox::from_cq(init.recv_cq),
        )
    };
    let (Some(p), Some(scq), Some(rcq)) = (p, scq, rcq) else {
        return fail_null(call, &VerbsError::Invalid("missing PD or CQ".into()));
    };
    let caps = match caps_of(&init.cap) {
        Ok(c) => c,
        Err(e) => return fail_null(call, &e),
    };
    let spec = QpSpec {
        pd: p.handle,
        send_cq: scq.cq.clone(),
        recv_cq: rcq.cq.clone(),
        caps,
        sq_sig_all: init.sq_sig_all != 0,
    };
    let qp = match p.device.create_qp(spec) {
        Ok(q) => q,
        Err(e) => return fail_null(call, &e),
    };
    init.cap = ffi::ibv_qp_cap {
        max_send_wr: caps.max_send_wr,
        max_recv_wr: caps.max_recv_wr,
        max_send_sge: caps.max_send_sge,
        max_recv_sge: caps.max_recv_sge,
        max_inline_data: caps.max_inline,
    };
    // SAFETY: reading a field of our own PD's C part.
    let context = unsafe { (*p.c_ptr()).context };
    let mut c = ffi::ibv_qp_ex {
        qp_base: ffi::ibv_qp {
            context,
            qp_context: init.qp_context,
            pd,
            send_cq: init.send_cq,
            recv_cq: init.recv_cq,
            qp_num: qp.qpn,
            state: ffi::IBV_QPS_RESET,
            qp_type: ffi::IBV_QPT_RC,
            ..Default::default()
        },
        ..Default::default()
    };
    qp_ex::fill_ops(&mut c);
    let attr = ffi::ibv_qp_attr {
        cap: init.cap,
        ..Default::default()
    };
    Box::new(QpBox {
        c: UnsafeCell::new(c),
        qp,
        device: p.device.clone(),
        attr: Mutex::new(attr),
        init: *init,
        builder: Mutex::new(WrBuilder::default()),
    })
    .into_raw()
    .cast()
}

extern "C" fn ibv_destroy_qp(qp: *mut ffi::ibv_qp) -> c_int {
    // SAFETY: qp came from ibv_create_qp(_ex).
    let Some(b) = (unsafe { QpBox::from_qp(qp) }) else {
        return libc::EINVAL;
    };
    if let Err(e) = b.device.destroy_qp(&b.qp) {
        return fail_errno("ibv_destroy_qp", &e);
    }
    // SAFETY: the program no longer uses qp.
    unsafe { QpBox::free(qp.cast()) };
    0
}

fn state_from(s: ffi::ibv_qp_state) -> Result<QpState, VerbsError> {
    Ok(match s {
        ffi::IBV_QPS_RESET => QpState::Reset,
        ffi::IBV_QPS_INIT => QpState::Init,
        ffi::IBV_QPS_RTR => QpState::Rtr,
        ffi::IBV_QPS_RTS => QpState::Rts,
        ffi::IBV_QPS_SQD => QpState::Sqd,
        ffi::IBV_QPS_SQE => QpState::Sqe,
        ffi::IBV_QPS_ERR => QpState::Err,
        other => return Err(VerbsError::Invalid(format!("QP state {other}"))),
    })
}

fn state_code(s: QpState) -> ffi::ibv_qp_state {
    match s {
        QpState::Reset => ffi::IBV_QPS_RESET,
        QpState::Init => ffi::IBV_QPS_INIT,
        QpState::Rtr => ffi::IBV_QPS_RTR,
        QpState::Rts => ffi::IBV_QPS_RTS,
        QpState::Sqd => ffi::IBV_QPS_SQD,
        QpState::Sqe => ffi::IBV_QPS_SQE,
        QpState::Err => ffi::IBV_QPS_ERR,
    }
}

fn mtu_from(m: ffi::ibv_mtu) -> Result<Mtu, VerbsError> {
    Ok(match m {
        ffi::IBV_MTU_256 => Mtu::Mtu256,
        ffi::IBV_MTU_512 => Mtu::Mtu512,
        ffi::IBV_MTU_1024 => Mtu::Mtu1024,
        ffi::IBV_MTU_2048 => Mtu::Mtu2048,
        ffi::IBV_MTU_4096 => Mtu::Mtu4096,
        other => return Err(VerbsError::Invalid(format!("path MTU code {other}"))),
    })
}

/// The peer of an RoCE address vector: its GID's address (IPv4-mapped GIDs are IPv4).
fn av_from(ah: &ffi::ibv_ah_attr) -> Result<AddressVector, VerbsError> {
    if ah.is_global == 0 {
        return Err(VerbsError::Invalid(
            "RoCE needs a GRH: ah_attr.is_global = 1 with the peer's GID (e.g. -g 1)".into(),
        ));
    }
    // SAFETY: every bit pattern of the GID union is a valid byte array.
    let raw = unsafe { ah.grh.dgid.raw };
    let v6 = Ipv6Addr::from(raw);
    let ip = v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4);
    Ok(AddressVector {
        remote_ip: ip,
        remote_mac: UNKNOWN_MAC,
        traffic_class: ah.grh.traffic_class,
        hop_limit: if ah.grh.hop_limit == 0 {
            64
        } else {
            ah.grh.hop_limit
        },
    })
}

/// The transport's attributes for `attr` under `mask`. Attributes RoCE RC has no use for
/// (P_Key index, port, Q_Key, SQD notification) are accepted and ignored.
fn qp_attr(attr: &ffi::ibv_qp_attr, mask: u32) -> Result<QpAttr, VerbsError> {
    if mask & (ffi::IBV_QP_ALT_PATH | ffi::IBV_QP_RATE_LIMIT) != 0 {
        return Err(unsupported("alternate paths and rate limits"));
    }
    let on = |bit: u32| mask & bit != 0;
    let mut a = QpAttr::default();
    if on(ffi::IBV_QP_STATE) {
        a.state = Some(state_from(attr.qp_state)?);
    }
    if on(ffi::IBV_QP_ACCESS_FLAGS) {
        a.access_flags = Some(AccessFlags::from_bits_truncate(attr.qp_access_flags & 0xe));
    }
    if on(ffi::IBV_QP_PATH_MTU) {
        a.path_mtu = Some(mtu_from(attr.path_mtu)?);
    }
    if on(ffi::IBV_QP_DEST_QPN) {
        a.dest_qp_num = Some(attr.dest_qp_num);
    }
    if on(ffi::IBV_QP_RQ_PSN) {
        a.rq_psn = Some(Psn::new(attr.rq_psn));
    }
    if on(ffi::IBV_QP_SQ_PSN) {
        a.sq_psn = Some(Psn::new(attr.sq_psn));
    }
    if on(ffi::IBV_QP_TIMEOUT) {
        a.timeout = Some(attr.timeout);
    }
    if on(ffi::IBV_QP_RETRY_CNT) {
        a.retry_cnt = Some(attr.retry_cnt);
    }
    if on(ffi::IBV_QP_RNR_RETRY) {
        a.rnr_retry = Some(attr.rnr_retry);
    }
    if on(ffi::IBV_QP_MIN_RNR_TIMER) {
        a.min_rnr_timer = Some(attr.min_rnr_timer);
    }
    if on(ffi::IBV_QP_MAX_QP_RD_ATOMIC) {
        a.max_rd_atomic = Some(attr.max_rd_atomic.min(MAX_RD_ATOMIC));
    }
    if on(ffi::IBV_QP_MAX_DEST_RD_ATOMIC) {
        a.max_dest_rd_atomic = Some(attr.max_dest_rd_atomic.clamp(1, MAX_RD_ATOMIC));
    }
    if on(ffi::IBV_QP_AV) {
        a.av = Some(av_from(&attr.ah_attr)?);
    }
    Ok(a)
}

/// Remembers what `ibv_query_qp` reports.
fn merge(stored: &mut ffi::ibv_qp_attr, attr: &ffi::ibv_qp_attr, mask: u32) {
    let on = |bit: u32| mask & bit != 0;
    macro_rules! copy {
        ($($bit:ident => $($field:ident),+;)*) => {
            $( if on(ffi::$bit) { $( stored.$field = attr.$field; )+ } )*
        };
    }
    copy!(
        IBV_QP_ACCESS_FLAGS => qp_access_flags;
        IBV_QP_PKEY_INDEX => pkey_index;
        IBV_QP_PORT => port_num;
        IBV_QP_QKEY => qkey;
        IBV_QP_AV => ah_attr;
        IBV_QP_PATH_MTU => path_mtu;
        IBV_QP_TIMEOUT => timeout;
        IBV_QP_RETRY_CNT => retry_cnt;
        IBV_QP_RNR_RETRY => rnr_retry;
        IBV_QP_RQ_PSN => rq_psn;
        IBV_QP_MAX_QP_RD_ATOMIC => max_rd_atomic;
        IBV_QP_MIN_RNR_TIMER => min_rnr_timer;
        IBV_QP_SQ_PSN => sq_psn;
        IBV_QP_MAX_DEST_RD_ATOMIC => max_dest_rd_atomic;
        IBV_QP_DEST_QPN => dest_qp_num;
    );
}

extern "C" fn ibv_modify_qp(
    qp: *mut ffi::ibv_qp,
    attr: *mut ffi::ibv_qp_attr,
    mask: c_int,
) -> c_int {
    const CALL: &str = "ibv_modify_qp";
    // SAFETY: qp came from ibv_create_qp(_ex); attr points to the caller's attributes.
    let (Some(b), Some(attr)) = (unsafe { QpBox::from_qp(qp) }, unsafe { attr.as_ref() }) else {
        return libc::EINVAL;
    };
    let mask = mask as u32;
    let a = match qp_attr(attr, mask) {
        Ok(a) => a,
        Err(e) => return fail_errno(CALL, &e),
    };
    if let Err(e) = b.device.modify_qp(&b.qp, a) {
        return fail_errno(CALL, &e);
    }
    if let Ok(mut stored) = b.attr.lock() {
        merge(&mut stored, attr, mask);
    }
    if mask & ffi::IBV_QP_STATE != 0 {
        // SAFETY: libibverbs keeps qp->state current the same way (an unsynchronised store).
        unsafe { (*b.c_ptr()).qp_base.state = attr.qp_state };
    }
    0
}

extern "C" fn ibv_query_qp(
    qp: *mut ffi::ibv_qp,
    attr: *mut ffi::ibv_qp_attr,
    _mask: c_int,
    init: *mut ffi::ibv_qp_init_attr,
) -> c_int {
    // SAFETY: qp came from ibv_create_qp(_ex).
    let Some(b) = (unsafe { QpBox::from_qp(qp) }) else {
        return libc::EINVAL;
    };
    let Ok(stored) = b.attr.lock() else {
        return libc::EIO;
    };
    let mut out = *stored;
    out.qp_state = state_code(b.qp.state());
    out.cur_qp_state = out.qp_state;
    // SAFETY: attr and init point to the caller's structs (or are NULL).
    unsafe {
        if let Some(a) = attr.as_mut() {
            *a = out;
        }
        if let Some(i) = init.as_mut() {
            *i = b.init;
        }
    }
    0
}

extern "C" fn ibv_qp_to_qp_ex(qp: *mut ffi::ibv_qp) -> *mut ffi::ibv_qp_ex {
    // Every QP we create is a struct ibv_qp_ex with its ibv_wr_* pointers set.
    qp.cast()
}

extern "C" fn ibv_query_qp_data_in_order(_qp: *mut ffi::ibv_qp, _op: u32, _flags: u32) -> c_int {
    // Data is placed in order, but a program may not rely on it before the completion.
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rtr_attributes_translate_with_the_gid_as_peer_ip() {
        let mut attr = ffi::ibv_qp_attr {
            qp_state: ffi::IBV_QPS_RTR,
            path_mtu: ffi::IBV_MTU_1024,
            dest_qp_num: 0x11,
            rq_psn: 0x1234,
            max_dest_rd_atomic: 0,
            min_rnr_timer: 12,
            ..Default::default()
        };
        attr.ah_attr.is_global = 1;
        attr.ah_attr.grh.dgid.raw = std::net::Ipv4Addr::new(198, 18, 0, 2)
            .to_ipv6_mapped()
            .octets();
        let mask = ffi::IBV_QP_STATE
            | ffi::IBV_QP_AV
            | ffi::IBV_QP_PATH_MTU
            | ffi::IBV_QP_DEST_QPN
            | ffi::IBV_QP_RQ_PSN
            | ffi::IBV_QP_MAX_DEST_RD_ATOMIC
            | ffi::IBV_QP_MIN_RNR_TIMER
            | ffi::IBV_QP_PKEY_INDEX;
        let a = qp_attr(&attr, mask).expect("valid attributes");
        assert_eq!(a.state, Some(QpState::Rtr));
        assert_eq!(a.path_mtu, Some(Mtu::Mtu1024));
        assert_eq!(a.dest_qp_num, Some(0x11));
        assert_eq!(a.rq_psn, Some(Psn::new(0x1234)));
        assert_eq!(a.max_dest_rd_atomic, Some(1));
        let av = a.av.expect("an address vector");
        assert_eq!(av.remote_ip, IpAddr::from([198, 18, 0, 2]));
        assert_eq!((av.remote_mac, av.hop_limit), (UNKNOWN_MAC, 64));
        assert_eq!(a.sq_psn, None);
        attr.ah_attr.is_global = 0;
        assert!(matches!(qp_attr(&attr, mask), Err(VerbsError::Invalid(_))));
    }
}
