//! What roce does not provide: UD address handles, multicast, SRQs, memory windows, imports,
//! dm/td/parent domains, flows. Each fails the way libibverbs reports it (NULL or
//! an error code, `errno` EOPNOTSUPP) with one line on stderr naming the call, and never
//! crashes. Every public libibverbs symbol is exported (here if nowhere else) so that none falls
//! through to the real library, which would misread our objects.

use std::os::raw::{c_int, c_void};

use super::{export, fail_errno, fail_minus_one, fail_null, ffi, unsupported};

export!(
    ibv_create_ah,
    ibv_create_ah_from_wc,
    ibv_init_ah_from_wc,
    ibv_destroy_ah,
    ibv_attach_mcast,
    ibv_detach_mcast,
    ibv_create_srq,
    ibv_modify_srq,
    ibv_query_srq,
    ibv_destroy_srq,
    ibv_resolve_eth_l2_from_gid,
    ibv_import_device,
    ibv_import_pd,
    ibv_import_mr,
    ibv_import_dm,
    ibv_unimport_pd,
    ibv_unimport_mr,
    ibv_unimport_dm,
    ibv_query_ece,
    ibv_set_ece,
    ibv_reg_dmabuf_mr,
    ibv_copy_path_rec_from_kern,
    ibv_copy_path_rec_to_kern,
    ibv_copy_qp_attr_from_kern,
    ibv_copy_ah_attr_from_kern,
);

/// Declares stubs: `name(args) -> NULL`, `-> -1`, `-> errno` or `-> ()`.
macro_rules! stubs {
    ($($kind:ident $name:ident ($($arg:ty),*) $(-> $ret:ty)?;)*) => {
        $( stubs!(@one $kind $name ($($arg),*) $(-> $ret)?); )*
    };
    (@one null $name:ident ($($arg:ty),*) -> $ret:ty) => {
        pub(super) extern "C" fn $name($(_: $arg),*) -> $ret {
            fail_null(stringify!($name), &unsupported("this call"))
        }
    };
    (@one minus_one $name:ident ($($arg:ty),*) -> $ret:ty) => {
        pub(super) extern "C" fn $name($(_: $arg),*) -> $ret {
            fail_minus_one(stringify!($name), &unsupported("this call"))
        }
    };
    (@one errno $name:ident ($($arg:ty),*) -> $ret:ty) => {
        pub(super) extern "C" fn $name($(_: $arg),*) -> $ret {
            fail_errno(stringify!($name), &unsupported("this call"))
        }
    };
    (@one void $name:ident ($($arg:ty),*)) => {
        pub(super) extern "C" fn $name($(_: $arg),*) {
            super::fail(stringify!($name), &unsupported("this call"));
        }
    };
}

type Ctx = *mut ffi::ibv_context;
type Pd = *mut ffi::ibv_pd;
type Qp = *mut ffi::ibv_qp;
type Ptr = *mut c_void;

stubs! {
    null ibv_create_ah(Pd, *mut ffi::ibv_ah_attr) -> *mut ffi::ibv_ah;
    null ibv_create_ah_from_wc(Pd, *mut ffi::ibv_wc, *mut ffi::ibv_grh, u8) -> *mut ffi::ibv_ah;
    minus_one ibv_init_ah_from_wc(Ctx, u8, *mut ffi::ibv_wc, *mut ffi::ibv_grh, *mut ffi::ibv_ah_attr) -> c_int;
    errno ibv_destroy_ah(*mut ffi::ibv_ah) -> c_int;
    errno ibv_attach_mcast(Qp, *const ffi::ibv_gid, u16) -> c_int;
    errno ibv_detach_mcast(Qp, *const ffi::ibv_gid, u16) -> c_int;
    null ibv_create_srq(Pd, *mut ffi::ibv_srq_init_attr) -> *mut ffi::ibv_srq;
    errno ibv_modify_srq(*mut ffi::ibv_srq, *mut ffi::ibv_srq_attr, c_int) -> c_int;
    errno ibv_query_srq(*mut ffi::ibv_srq, *mut ffi::ibv_srq_attr) -> c_int;
    errno ibv_destroy_srq(*mut ffi::ibv_srq) -> c_int;
    minus_one ibv_resolve_eth_l2_from_gid(Ctx, *mut ffi::ibv_ah_attr, *mut u8, *mut u16) -> c_int;
    null ibv_import_device(c_int) -> Ctx;
    null ibv_import_pd(Ctx, u32) -> Pd;
    null ibv_import_mr(Pd, u32) -> *mut ffi::ibv_mr;
    null ibv_import_dm(Ctx, u32) -> *mut ffi::ibv_dm;
    void ibv_unimport_pd(Pd);
    void ibv_unimport_mr(*mut ffi::ibv_mr);
    void ibv_unimport_dm(*mut ffi::ibv_dm);
    errno ibv_query_ece(Qp, *mut ffi::ibv_ece) -> c_int;
    errno ibv_set_ece(Qp, *mut ffi::ibv_ece) -> c_int;
    null ibv_reg_dmabuf_mr(Pd, u64, usize, u64, c_int, c_int) -> *mut ffi::ibv_mr;
    void ibv_copy_path_rec_from_kern(Ptr, Ptr);
    void ibv_copy_path_rec_to_kern(Ptr, Ptr);
    void ibv_copy_qp_attr_from_kern(Ptr, Ptr);
    void ibv_copy_ah_attr_from_kern(Ptr, Ptr);

    // The ops table's and the extended context's entries we do not provide.
    errno ibv_post_srq_recv(*mut ffi::ibv_srq, *mut ffi::ibv_recv_wr, *mut *mut ffi::ibv_recv_wr) -> c_int;
    null ibv_alloc_mw(Pd, ffi::ibv_mw_type) -> *mut ffi::ibv_mw;
    errno ibv_bind_mw(Qp, *mut ffi::ibv_mw, *mut ffi::ibv_mw_bind) -> c_int;
    errno ibv_dealloc_mw(*mut ffi::ibv_mw) -> c_int;
    null ibv_create_srq_ex(Ctx, *mut ffi::ibv_srq_init_attr_ex) -> *mut ffi::ibv_srq;
    null ibv_open_xrcd(Ctx, *mut ffi::ibv_xrcd_init_attr) -> *mut ffi::ibv_xrcd;
    null ibv_open_qp(Ctx, *mut ffi::ibv_qp_open_attr) -> Qp;
    null ibv_alloc_dm(Ctx, *mut ffi::ibv_alloc_dm_attr) -> *mut ffi::ibv_dm;
    null ibv_alloc_td(Ctx, *mut ffi::ibv_td_init_attr) -> *mut ffi::ibv_td;
    null ibv_alloc_parent_domain(Ctx, *mut ffi::ibv_parent_domain_init_attr) -> Pd;
    null ibv_create_counters(Ctx, *mut ffi::ibv_counters_init_attr) -> *mut ffi::ibv_counters;
    null ibv_create_wq(Ctx, *mut ffi::ibv_wq_init_attr) -> *mut ffi::ibv_wq;
    null ibv_create_rwq_ind_table(Ctx, *mut ffi::ibv_rwq_ind_table_init_attr) -> *mut ffi::ibv_rwq_ind_table;
    null ibv_alloc_null_mr(Pd) -> *mut ffi::ibv_mr;
    null ibv_reg_dm_mr(Pd, *mut ffi::ibv_dm, u64, usize, u32) -> *mut ffi::ibv_mr;
    errno ibv_advise_mr(Pd, ffi::ib_uverbs_advise_mr_advice, u32, *mut ffi::ibv_sge, u32) -> c_int;
    errno ibv_query_rt_values(Ctx, *mut ffi::ibv_values_ex) -> c_int;
    errno ibv_modify_cq(*mut ffi::ibv_cq, *mut ffi::ibv_modify_cq_attr) -> c_int;
    null ibv_create_flow(Qp, *mut ffi::ibv_flow_attr) -> *mut ffi::ibv_flow;
    null ibv_create_flow_action_esp(Ctx, *mut ffi::ibv_flow_action_esp_attr) -> *mut ffi::ibv_flow_action;
    errno ibv_modify_qp_rate_limit(Qp, *mut ffi::ibv_qp_rate_limit_attr) -> c_int;
}

/// Sets the extended context's entries that verbs.h's inline calls would otherwise find NULL
/// (and fail silently): each says on stderr which call is missing.
pub(super) fn fill_extended(v: &mut ffi::verbs_context) {
    v.create_srq_ex = Some(ibv_create_srq_ex);
    v.open_xrcd = Some(ibv_open_xrcd);
    v.open_qp = Some(ibv_open_qp);
    v.alloc_dm = Some(ibv_alloc_dm);
    v.alloc_td = Some(ibv_alloc_td);
    v.alloc_parent_domain = Some(ibv_alloc_parent_domain);
    v.create_counters = Some(ibv_create_counters);
    v.create_wq = Some(ibv_create_wq);
    v.create_rwq_ind_table = Some(ibv_create_rwq_ind_table);
    v.alloc_null_mr = Some(ibv_alloc_null_mr);
    v.reg_dm_mr = Some(ibv_reg_dm_mr);
    v.advise_mr = Some(ibv_advise_mr);
    v.query_rt_values = Some(ibv_query_rt_values);
    v.modify_cq = Some(ibv_modify_cq);
    v.ibv_create_flow = Some(ibv_create_flow);
    v.create_flow_action_esp = Some(ibv_create_flow_action_esp);
    v.modify_qp_rate_limit = Some(ibv_modify_qp_rate_limit);
}
