//! The helpers of libibverbs that touch no device: names of enum values, rate conversions,
//! sysfs reads, fork support (nothing to do: the transport never pins pages).

use std::ffi::CStr;
use std::os::raw::{c_char, c_int, c_void};

use super::{export, ffi};

export!(
    ibv_wc_status_str,
    ibv_port_state_str,
    ibv_node_type_str,
    ibv_event_type_str,
    ibv_rate_to_mult,
    mult_to_ibv_rate,
    ibv_rate_to_mbps,
    mbps_to_ibv_rate,
    ibv_get_sysfs_path,
    ibv_read_sysfs_file,
    ibv_fork_init,
    ibv_is_fork_initialized,
    ibv_dontfork_range,
    ibv_dofork_range,
);

fn wc_status_name(s: ffi::ibv_wc_status) -> &'static CStr {
    match s {
        ffi::IBV_WC_SUCCESS => c"success",
        ffi::IBV_WC_LOC_LEN_ERR => c"local length error",
        ffi::IBV_WC_LOC_QP_OP_ERR => c"local QP operation error",
        ffi::IBV_WC_LOC_EEC_OP_ERR => c"local EE context operation error",
        ffi::IBV_WC_LOC_PROT_ERR => c"local protection error",
        ffi::IBV_WC_WR_FLUSH_ERR => c"Work Request Flushed Error",
        ffi::IBV_WC_MW_BIND_ERR => c"memory management operation error",
        ffi::IBV_WC_BAD_RESP_ERR => c"bad response error",
        ffi::IBV_WC_LOC_ACCESS_ERR => c"local access error",
        ffi::IBV_WC_REM_INV_REQ_ERR => c"remote invalid request error",
        ffi::IBV_WC_REM_ACCESS_ERR => c"remote access error",
        ffi::IBV_WC_REM_OP_ERR => c"remote operation error",
        ffi::IBV_WC_RETRY_EXC_ERR => c"transport retry counter exceeded",
        ffi::IBV_WC_RNR_RETRY_EXC_ERR => c"RNR retry counter exceeded",
        ffi::IBV_WC_LOC_RDD_VIOL_ERR => c"local RDD violation error",
        ffi::IBV_WC_REM_INV_RD_REQ_ERR => c"remote invalid RD request",
        ffi::IBV_WC_REM_ABORT_ERR => c"aborted error",
        ffi::IBV_WC_INV_EECN_ERR => c"invalid EE context number",
        ffi::IBV_WC_INV_EEC_STATE_ERR => c"invalid EE context state",
        ffi::IBV_WC_FATAL_ERR => c"fatal error",
        ffi::IBV_WC_RESP_TIMEOUT_ERR => c"response timeout error",
        ffi::IBV_WC_GENERAL_ERR => c"general error",
        ffi::IBV_WC_TM_ERR => c"TM error",
        ffi::IBV_WC_TM_RNDV_INCOMPLETE => c"TM software rendezvous",
        _ => c"unknown",
    }
}

extern "C" fn ibv_wc_status_str(status: ffi::ibv_wc_status) -> *const c_char {
    wc_status_name(status).as_ptr()
}

extern "C" fn ibv_port_state_str(state: ffi::ibv_port_state) -> *const c_char {
    match state {
        ffi::IBV_PORT_NOP => c"PORT_NOP",
        ffi::IBV_PORT_DOWN => c"PORT_DOWN",
        ffi::IBV_PORT_INIT => c"PORT_INIT",
        ffi::IBV_PORT_ARMED => c"PORT_ARMED",
        ffi::IBV_PORT_ACTIVE => c"PORT_ACTIVE",
        ffi::IBV_PORT_ACTIVE_DEFER => c"PORT_ACTIVE_DEFER",
        _ => c"invalid state",
    }
    .as_ptr()
}

extern "C" fn ibv_node_type_str(t: ffi::ibv_node_type) -> *const c_char {
    match t {
        ffi::IBV_NODE_CA => c"InfiniBand channel adapter",
        ffi::IBV_NODE_SWITCH => c"InfiniBand switch",
        ffi::IBV_NODE_ROUTER => c"InfiniBand router",
        ffi::IBV_NODE_RNIC => c"iWARP NIC",
        ffi::IBV_NODE_USNIC => c"usNIC",
        ffi::IBV_NODE_USNIC_UDP => c"usNIC UDP",
        ffi::IBV_NODE_UNSPECIFIED => c"unspecified",
        _ => c"unknown",
    }
    .as_ptr()
}

extern "C" fn ibv_event_type_str(e: ffi::ibv_event_type) -> *const c_char {
    match e {
        ffi::IBV_EVENT_CQ_ERR => c"CQ error",
        ffi::IBV_EVENT_QP_FATAL => c"local work queue catastrophic error",
        ffi::IBV_EVENT_QP_REQ_ERR => c"invalid request local work queue error",
        ffi::IBV_EVENT_QP_ACCESS_ERR => c"local access violation work queue error",
        ffi::IBV_EVENT_COMM_EST => c"communication established",
        ffi::IBV_EVENT_SQ_DRAINED => c"send queue drained",
        ffi::IBV_EVENT_PATH_MIG => c"path migrated",
        ffi::IBV_EVENT_PATH_MIG_ERR => c"path migration request error",
        ffi::IBV_EVENT_DEVICE_FATAL => c"local catastrophic error",
        ffi::IBV_EVENT_PORT_ACTIVE => c"port active",
        ffi::IBV_EVENT_PORT_ERR => c"port error",
        ffi::IBV_EVENT_LID_CHANGE => c"LID change",
        ffi::IBV_EVENT_PKEY_CHANGE => c"P_Key change",
        ffi::IBV_EVENT_SM_CHANGE => c"SM change",
        ffi::IBV_EVENT_SRQ_ERR => c"SRQ catastrophic error",
        ffi::IBV_EVENT_SRQ_LIMIT_REACHED => c"SRQ limit reached",
        ffi::IBV_EVENT_QP_LAST_WQE_REACHED => c"last WQE reached",
        ffi::IBV_EVENT_CLIENT_REREGISTER => c"client reregistration",
        ffi::IBV_EVENT_GID_CHANGE => c"GID table change",
        ffi::IBV_EVENT_WQ_FATAL => c"WQ fatal",
        _ => c"unknown",
    }
    .as_ptr()
}

/// `(enum ibv_rate, multiple of 2.5 Gbit/s, Mbit/s)`, as libibverbs defines them.
const RATES: [RateRow; 22] = [
    (ffi::IBV_RATE_2_5_GBPS, 1, 2500),
    (ffi::IBV_RATE_5_GBPS, 2, 5000),
    (ffi::IBV_RATE_10_GBPS, 4, 10000),
    (ffi::IBV_RATE_20_GBPS, 8, 20000),
    (ffi::IBV_RATE_30_GBPS, 12, 30000),
    (ffi::IBV_RATE_40_GBPS, 16, 40000),
    (ffi::IBV_RATE_60_GBPS, 24, 60000),
    (ffi::IBV_RATE_80_GBPS, 32, 80000),
    (ffi::IBV_RATE_120_GBPS, 48, 120000),
    (ffi::IBV_RATE_14_GBPS, 5, 14062),
    (ffi::IBV_RATE_56_GBPS, 22, 56250),
    (ffi::IBV_RATE_112_GBPS, 45, 112500),
    (ffi::IBV_RATE_168_GBPS, 67, 168750),
    (ffi::IBV_RATE_25_GBPS, 10, 25781),
    (ffi::IBV_RATE_100_GBPS, 40, 103125),
    (ffi::IBV_RATE_200_GBPS, 80, 206250),
    (ffi::IBV_RATE_300_GBPS, 120, 309375),
    (ffi::IBV_RATE_28_GBPS, 11, 28125),
    (ffi::IBV_RATE_50_GBPS, 20, 53125),
    (ffi::IBV_RATE_400_GBPS, 160, 425000),
    (ffi::IBV_RATE_600_GBPS, 240, 637500),
    (ffi::IBV_RATE_800_GBPS, 320, 850000),
];

/// One row of [`RATES`].
type RateRow = (ffi::ibv_rate, c_int, c_int);

/// The rate whose `column` is `value`; `IBV_RATE_MAX` when none is.
fn rate_where(value: c_int, column: fn(&RateRow) -> c_int) -> ffi::ibv_rate {
    RATES
        .iter()
        .find(|r| column(r) == value)
        .map_or(ffi::IBV_RATE_MAX, |r| r.0)
}

/// `column` of `rate`'s row; -1 for a rate libibverbs does not define.
fn of_rate(rate: ffi::ibv_rate, column: fn(&RateRow) -> c_int) -> c_int {
    RATES.iter().find(|r| r.0 == rate).map_or(-1, column)
}

extern "C" fn ibv_rate_to_mult(rate: ffi::ibv_rate) -> c_int {
    of_rate(rate, |r| r.1)
}

extern "C" fn mult_to_ibv_rate(mult: c_int) -> ffi::ibv_rate {
    rate_where(mult, |r| r.1)
}

extern "C" fn ibv_rate_to_mbps(rate: ffi::ibv_rate) -> c_int {
    of_rate(rate, |r| r.2)
}

extern "C" fn mbps_to_ibv_rate(mbps: c_int) -> ffi::ibv_rate {
    rate_where(mbps, |r| r.2)
}

extern "C" fn ibv_get_sysfs_path() -> *const c_char {
    c"/sys".as_ptr()
}

/// Reads `dir/file` into `buf` (NUL-terminated, trailing newline dropped); returns the length
/// or -1, like libibverbs. Our device has no sysfs directory, so its files are never found.
extern "C" fn ibv_read_sysfs_file(
    dir: *const c_char,
    file: *const c_char,
    buf: *mut c_char,
    size: usize,
) -> c_int {
    if dir.is_null() || file.is_null() || buf.is_null() || size == 0 {
        return -1;
    }
    // SAFETY: dir and file are the caller's NUL-terminated strings.
    let (d, f) = unsafe { (CStr::from_ptr(dir), CStr::from_ptr(file)) };
    let path = format!("{}/{}", d.to_string_lossy(), f.to_string_lossy());
    let Ok(text) = std::fs::read(&path) else {
        return -1;
    };
    let mut n = text.len().min(size - 1);
    if n > 0 && text.get(n - 1) == Some(&b'\n') {
        n -= 1;
    }
    // SAFETY: buf holds `size` bytes and n < size.
    unsafe {
        std::ptr::copy_nonoverlapping(text.as_ptr(), buf.cast::<u8>(), n);
        *buf.add(n) = 0;
    }
    n as c_int
}

extern "C" fn ibv_fork_init() -> c_int {
    0
}

extern "C" fn ibv_is_fork_initialized() -> ffi::ibv_fork_status {
    ffi::IBV_FORK_UNNEEDED
}

extern "C" fn ibv_dontfork_range(_base: *mut c_void, _size: usize) -> c_int {
    0
}

extern "C" fn ibv_dofork_range(_base: *mut c_void, _size: usize) -> c_int {
    0
}
