//! The device calls: the device list, opening and closing a context (with its ops table and
//! extended verbs), and the query verbs (`ibv_query_device`, `ibv_query_port` in both its
//! compat and extended forms, the GID and P_Key tables).

use std::cell::UnsafeCell;
use std::mem::{offset_of, size_of};
use std::os::raw::{c_char, c_int, c_void};

use super::objects::{copy_str, ibv_device, Context};
use super::{cq, cq_ex, export, ffi, qp, unsupported as stubs, wr};
use super::{fail, fail_minus_one, fail_null};
use crate::error::VerbsError;
use crate::info::{self, DeviceInfo, GID_TABLE_LEN};
use crate::sys::eventfd::EventFd;

export!(
    ibv_get_device_list,
    ibv_free_device_list,
    ibv_get_device_name,
    ibv_get_device_guid,
    ibv_get_device_index,
    ibv_open_device,
    ibv_close_device,
    ibv_query_device,
    ibv_query_port,
    ibv_query_gid,
    _ibv_query_gid_ex,
    _ibv_query_gid_table,
    ibv_query_gid_type,
    ibv_query_pkey,
    ibv_get_pkey_index,
);

extern "C" fn ibv_get_device_list(num: *mut c_int) -> *mut *mut ffi::ibv_device {
    // SAFETY: calloc returns zeroed memory for two pointers (ours and the NULL terminator) or
    // NULL; ibv_free_device_list frees it with free().
    let list = unsafe { libc::calloc(2, size_of::<*mut ffi::ibv_device>()) }
        .cast::<*mut ffi::ibv_device>();
    if list.is_null() {
        super::set_errno(libc::ENOMEM);
        return list;
    }
    // SAFETY: list has room for two pointers.
    unsafe { *list = ibv_device() };
    if !num.is_null() {
        // SAFETY: the caller passes a valid int pointer or NULL.
        unsafe { *num = 1 };
    }
    list
}

extern "C" fn ibv_free_device_list(list: *mut *mut ffi::ibv_device) {
    // SAFETY: list came from ibv_get_device_list's calloc (or is NULL).
    unsafe { libc::free(list.cast()) };
}

extern "C" fn ibv_get_device_name(dev: *mut ffi::ibv_device) -> *const c_char {
    if dev.is_null() {
        return std::ptr::null();
    }
    // SAFETY: dev is our static device; the name lives as long as the process.
    unsafe { (*dev).name.as_ptr() }
}

extern "C" fn ibv_get_device_guid(_dev: *mut ffi::ibv_device) -> u64 {
    // The GUID needs the port's MAC: known once the device is open.
    crate::progress::started_device().map_or(0, |d| u64::from_ne_bytes(d.info().node_guid()))
}

extern "C" fn ibv_get_device_index(_dev: *mut ffi::ibv_device) -> c_int {
    0
}

extern "C" fn ibv_open_device(dev: *mut ffi::ibv_device) -> *mut ffi::ibv_context {
    const CALL: &str = "ibv_open_device";
    if dev != ibv_device() {
        return fail_null(CALL, &VerbsError::Invalid("not a roce device".into()));
    }
    let device = match crate::progress::device() {
        Ok(d) => d,
        Err(e) => return fail_null(CALL, &e),
    };
    register_exit_hook();
    let async_fd = match EventFd::new() {
        Ok(f) => f,
        Err(e) => return fail_null(CALL, &VerbsError::Io(e)),
    };
    let ops = ffi::ibv_context_ops {
        poll_cq: Some(cq::poll_cq),
        req_notify_cq: Some(cq::req_notify_cq),
        post_send: Some(wr::post_send),
        post_recv: Some(wr::post_recv),
        post_srq_recv: Some(stubs::ibv_post_srq_recv),
        alloc_mw: Some(stubs::ibv_alloc_mw),
        bind_mw: Some(stubs::ibv_bind_mw),
        dealloc_mw: Some(stubs::ibv_dealloc_mw),
        ..Default::default()
    };
    let mut vctx = ffi::verbs_context {
        query_port: Some(query_port_ex),
        query_device_ex: Some(query_device_ex),
        create_qp_ex: Some(qp::create_qp_ex),
        sz: size_of::<ffi::verbs_context>(),
        ..Default::default()
    };
    stubs::fill_extended(&mut vctx);
    vctx.create_cq_ex = Some(cq_ex::create_cq_ex);
    vctx.context = ffi::ibv_context {
        device: dev,
        ops,
        cmd_fd: -1,
        async_fd: async_fd.raw(),
        num_comp_vectors: 1,
        // libibverbs' __VERBS_ABI_IS_EXTENDED: the verbs_context around us is valid.
        abi_compat: usize::MAX as *mut c_void,
        ..Default::default()
    };
    Box::new(Context {
        c: UnsafeCell::new(vctx),
        device,
        async_fd,
    })
    .into_raw()
}

/// At exit, the progress thread sends the last ACKs and writes the counters file.
fn register_exit_hook() {
    extern "C" fn at_exit() {
        if let Some(d) = crate::progress::started_device() {
            let _ = d.finish();
        }
    }
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: at_exit is a plain function that lives as long as the process.
        if unsafe { libc::atexit(at_exit) } != 0 {
            tracing::warn!("cannot register the exit hook: counters are written every second only");
        }
    });
}

extern "C" fn ibv_close_device(ctx: *mut ffi::ibv_context) -> c_int {
    if ctx.is_null() {
        return fail_minus_one("ibv_close_device", &VerbsError::Unknown("context"));
    }
    // SAFETY: ctx came from ibv_open_device; the program no longer uses it.
    unsafe { Context::free(ctx) };
    0
}

/// The context's device information (the device is started by then).
fn info_of(ctx: *mut ffi::ibv_context) -> Option<DeviceInfo> {
    // SAFETY: ctx came from ibv_open_device.
    unsafe { Context::from_ibv(ctx) }.map(|c| c.device.info())
}

fn device_attr(info: &DeviceInfo) -> ffi::ibv_device_attr {
    let mut a = ffi::ibv_device_attr {
        node_guid: u64::from_ne_bytes(info.node_guid()),
        sys_image_guid: u64::from_ne_bytes(info.node_guid()),
        max_mr_size: 1 << 40,
        page_size_cap: 0xffff_f000,
        vendor_id: 0x00ff_ffff,
        max_qp: roce_proto::limits::MAX_QPS as c_int,
        max_qp_wr: info::MAX_QP_WR as c_int,
        device_cap_flags: ffi::IBV_DEVICE_RC_RNR_NAK_GEN
            | ffi::IBV_DEVICE_PORT_ACTIVE_EVENT
            | ffi::IBV_DEVICE_SYS_IMAGE_GUID,
        max_sge: info::MAX_SGE as c_int,
        max_sge_rd: info::MAX_SGE as c_int,
        max_cq: 65536,
        max_cqe: info::MAX_CQE as c_int,
        max_mr: 65536,
        max_pd: 65536,
        max_qp_rd_atom: c_int::from(info::MAX_RD_ATOMIC),
        max_res_rd_atom: c_int::from(info::MAX_RD_ATOMIC) * 1024,
        max_qp_init_rd_atom: c_int::from(info::MAX_RD_ATOMIC),
        atomic_cap: ffi::IBV_ATOMIC_HCA,
        max_pkeys: 1,
        local_ca_ack_delay: 15,
        phys_port_cnt: 1,
        ..Default::default()
    };
    copy_str(
        &mut a.fw_ver,
        concat!("roce-verbs ", env!("CARGO_PKG_VERSION")),
    );
    a
}

extern "C" fn ibv_query_device(
    ctx: *mut ffi::ibv_context,
    attr: *mut ffi::ibv_device_attr,
) -> c_int {
    let (Some(info), false) = (info_of(ctx), attr.is_null()) else {
        return super::fail_errno("ibv_query_device", &VerbsError::Unknown("context"));
    };
    // SAFETY: attr points to a struct ibv_device_attr of the caller.
    unsafe { *attr = device_attr(&info) };
    0
}

/// `verbs_context.query_device_ex`: the plain attributes; no extended capability.
extern "C" fn query_device_ex(
    ctx: *mut ffi::ibv_context,
    _input: *const ffi::ibv_query_device_ex_input,
    attr: *mut ffi::ibv_device_attr_ex,
    size: usize,
) -> c_int {
    let Some(info) = info_of(ctx) else {
        return libc::EINVAL;
    };
    if attr.is_null() || size < size_of::<ffi::ibv_device_attr>() {
        return libc::EINVAL;
    }
    let full = ffi::ibv_device_attr_ex {
        orig_attr: device_attr(&info),
        phys_port_cnt_ex: 1,
        ..Default::default()
    };
    let n = size.min(size_of::<ffi::ibv_device_attr_ex>());
    // SAFETY: the caller's buffer holds `size` bytes; we copy at most that many.
    unsafe {
        std::ptr::write_bytes(attr.cast::<u8>(), 0, size);
        std::ptr::copy_nonoverlapping(std::ptr::addr_of!(full).cast::<u8>(), attr.cast::<u8>(), n);
    }
    0
}

fn mtu_code(m: roce_proto::verbs::Mtu) -> ffi::ibv_mtu {
    match m.bytes() {
        256 => ffi::IBV_MTU_256,
        512 => ffi::IBV_MTU_512,
        1024 => ffi::IBV_MTU_1024,
        2048 => ffi::IBV_MTU_2048,
        _ => ffi::IBV_MTU_4096,
    }
}

fn port_attr(info: &DeviceInfo) -> ffi::ibv_port_attr {
    // IB width and speed codes whose product is closest to the Ethernet speed: 1X SDR
    // (2.5 Gbit/s), 1X QDR (10), 1X EDR (25), 4X EDR (100).
    let (width, speed) = match info.speed_mbps {
        0..=2_500 => (1, 1),
        2_501..=10_000 => (1, 4),
        10_001..=25_000 => (1, 32),
        _ => (2, 32),
    };
    ffi::ibv_port_attr {
        state: if info.link_up {
            ffi::IBV_PORT_ACTIVE
        } else {
            ffi::IBV_PORT_DOWN
        },
        max_mtu: ffi::IBV_MTU_4096,
        active_mtu: mtu_code(info.active_mtu),
        gid_tbl_len: GID_TABLE_LEN as c_int,
        port_cap_flags: ffi::IBV_PORT_CM_SUP,
        max_msg_sz: 1 << 31,
        pkey_tbl_len: 1,
        max_vl_num: 1,
        active_width: width,
        active_speed: speed,
        phys_state: if info.link_up { 5 } else { 3 },
        link_layer: ffi::IBV_LINK_LAYER_ETHERNET as u8,
        ..Default::default()
    }
}

/// Copies the port attributes into the caller's `len` bytes.
fn write_port_attr(ctx: *mut ffi::ibv_context, port: u8, out: *mut u8, len: usize) -> c_int {
    let Some(info) = info_of(ctx) else {
        return libc::EINVAL;
    };
    if port != 1 || out.is_null() {
        return libc::EINVAL;
    }
    let attr = port_attr(&info);
    let n = len.min(size_of::<ffi::ibv_port_attr>());
    // SAFETY: the caller's buffer holds `len` bytes; we copy at most that many.
    unsafe { std::ptr::copy_nonoverlapping(std::ptr::addr_of!(attr).cast::<u8>(), out, n) };
    0
}

/// The exported `ibv_query_port`, whose argument is rdma-core's `_compat_ibv_port_attr`: the
/// struct up to (not including) `port_cap_flags2`.
extern "C" fn ibv_query_port(ctx: *mut ffi::ibv_context, port: u8, attr: *mut c_void) -> c_int {
    let compat = offset_of!(ffi::ibv_port_attr, port_cap_flags2);
    write_port_attr(ctx, port, attr.cast(), compat)
}

/// `verbs_context.query_port`, which the inline `ibv_query_port` of verbs.h calls.
extern "C" fn query_port_ex(
    ctx: *mut ffi::ibv_context,
    port: u8,
    attr: *mut ffi::ibv_port_attr,
    len: usize,
) -> c_int {
    write_port_attr(ctx, port, attr.cast(), len)
}

fn gid_entry(info: &DeviceInfo, index: u32) -> Option<ffi::ibv_gid_entry> {
    let gid = *info.gids().get(index as usize)?;
    Some(ffi::ibv_gid_entry {
        gid: ffi::ibv_gid { raw: gid.octets() },
        gid_index: index,
        port_num: 1,
        gid_type: ffi::IBV_GID_TYPE_ROCE_V2,
        ndev_ifindex: 0,
    })
}

extern "C" fn ibv_query_gid(
    ctx: *mut ffi::ibv_context,
    port: u8,
    index: c_int,
    gid: *mut ffi::ibv_gid,
) -> c_int {
    let entry = info_of(ctx)
        .filter(|_| port == 1 && !gid.is_null())
        .and_then(|i| gid_entry(&i, u32::try_from(index).ok()?));
    match entry {
        // SAFETY: gid points to the caller's union ibv_gid.
        Some(e) => unsafe {
            *gid = e.gid;
            0
        },
        None => fail_minus_one("ibv_query_gid", &VerbsError::Invalid("GID index".into())),
    }
}

extern "C" fn _ibv_query_gid_ex(
    ctx: *mut ffi::ibv_context,
    port: u32,
    index: u32,
    entry: *mut ffi::ibv_gid_entry,
    _flags: u32,
    entry_size: usize,
) -> c_int {
    let Some(info) = info_of(ctx) else {
        return libc::EINVAL;
    };
    if port != 1 || entry.is_null() || entry_size < size_of::<ffi::ibv_gid_entry>() {
        return libc::EINVAL;
    }
    match gid_entry(&info, index) {
        Some(e) => {
            // SAFETY: entry points to at least one ibv_gid_entry (checked size).
            unsafe { *entry = e };
            0
        }
        None => libc::ENODATA,
    }
}

extern "C" fn _ibv_query_gid_table(
    ctx: *mut ffi::ibv_context,
    entries: *mut ffi::ibv_gid_entry,
    max: usize,
    _flags: u32,
    entry_size: usize,
) -> isize {
    let Some(info) = info_of(ctx) else {
        return -(libc::EINVAL as isize);
    };
    if entries.is_null() || entry_size < size_of::<ffi::ibv_gid_entry>() {
        return -(libc::EINVAL as isize);
    }
    let n = GID_TABLE_LEN.min(max);
    for i in 0..n {
        if let Some(e) = gid_entry(&info, i as u32) {
            // SAFETY: the caller's array holds `max` entries of `entry_size` bytes; i < max.
            unsafe {
                *entries
                    .cast::<u8>()
                    .add(i * entry_size)
                    .cast::<ffi::ibv_gid_entry>() = e
            };
        }
    }
    n as isize
}

/// rdma-core's private `ibv_query_gid_type` (ibv_devinfo uses it): every GID is RoCE v2
/// (`IBV_GID_TYPE_SYSFS_ROCE_V2` = 1).
extern "C" fn ibv_query_gid_type(
    ctx: *mut ffi::ibv_context,
    _port: u8,
    index: u32,
    kind: *mut u32,
) -> c_int {
    match info_of(ctx) {
        Some(_) if (index as usize) < GID_TABLE_LEN && !kind.is_null() => {
            // SAFETY: kind points to the caller's enum.
            unsafe { *kind = 1 };
            0
        }
        _ => -1,
    }
}

extern "C" fn ibv_query_pkey(
    ctx: *mut ffi::ibv_context,
    port: u8,
    index: c_int,
    pkey: *mut u16,
) -> c_int {
    if info_of(ctx).is_none() || port != 1 || index != 0 || pkey.is_null() {
        return fail_minus_one("ibv_query_pkey", &VerbsError::Invalid("P_Key index".into()));
    }
    // SAFETY: pkey points to the caller's __be16.
    unsafe { *pkey = roce_proto::endpoint::DEFAULT_PKEY.to_be() };
    0
}

extern "C" fn ibv_get_pkey_index(ctx: *mut ffi::ibv_context, port: u8, pkey: u16) -> c_int {
    if info_of(ctx).is_some()
        && port == 1
        && u16::from_be(pkey) == roce_proto::endpoint::DEFAULT_PKEY
    {
        0
    } else {
        fail(
            "ibv_get_pkey_index",
            &VerbsError::Invalid("unknown P_Key".into()),
        );
        -1
    }
}
