//! The objects handed to programs: each a `#[repr(C)]` box whose first field is the libibverbs
//! struct the program sees (the context's is `struct verbs_context`, whose last field is the
//! `struct ibv_context`, as libibverbs lays it out), followed by our state. The C part sits in an
//! `UnsafeCell`: programs (and we) write some of its fields (`qp->state`, `qpx->wr_id`) while
//! other threads hold the object.

use std::cell::UnsafeCell;
use std::mem::offset_of;
use std::sync::atomic::{AtomicU32, AtomicU64};
use std::sync::{Arc, Mutex, OnceLock};

use roce_proto::mr::PdHandle;

use super::ffi;
use crate::device::Device;
use crate::error::VerbsError;
use crate::objects::{CompChannel, Completion, Cq, Qp, SendRequest};
use crate::sys::eventfd::EventFd;

/// Our device (`roce0`): one static `struct ibv_device`.
pub(super) fn ibv_device() -> *mut ffi::ibv_device {
    static DEV: OnceLock<usize> = OnceLock::new();
    let addr = *DEV.get_or_init(|| {
        let mut d = ffi::ibv_device {
            node_type: ffi::IBV_NODE_CA,
            transport_type: ffi::IBV_TRANSPORT_IB,
            ..Default::default()
        };
        let name = crate::info::DEVICE_NAME;
        copy_str(&mut d.name, name);
        copy_str(&mut d.dev_name, "uverbs-roce0");
        copy_str(&mut d.dev_path, "/sys/class/infiniband_verbs/uverbs-roce0");
        copy_str(&mut d.ibdev_path, &format!("/sys/class/infiniband/{name}"));
        Box::into_raw(Box::new(d)) as usize
    });
    addr as *mut ffi::ibv_device
}

/// Copies `s` into a C char array, NUL-terminated (truncated if it must be).
pub(super) fn copy_str(dst: &mut [std::os::raw::c_char], s: &str) {
    let n = s.len().min(dst.len().saturating_sub(1));
    for (d, b) in dst.iter_mut().zip(s.bytes().take(n)) {
        *d = b as std::os::raw::c_char;
    }
    if let Some(end) = dst.get_mut(n) {
        *end = 0;
    }
}

/// An opened device.
#[repr(C)]
pub(super) struct Context {
    pub c: UnsafeCell<ffi::verbs_context>,
    pub device: Arc<Device>,
    pub async_fd: EventFd,
}

impl Context {
    /// Leaks the context; programs get its `struct ibv_context`.
    pub fn into_raw(self: Box<Self>) -> *mut ffi::ibv_context {
        let p = Box::into_raw(self);
        // SAFETY: p points to a live Context; the projection creates no reference.
        unsafe {
            std::ptr::addr_of_mut!((*UnsafeCell::raw_get(std::ptr::addr_of!((*p).c))).context)
        }
    }

    /// The context behind `ctx`.
    ///
    /// # Safety
    ///
    /// `ctx` is NULL or came from [`Context::into_raw`] and was not closed.
    pub unsafe fn from_ibv<'a>(ctx: *mut ffi::ibv_context) -> Option<&'a Context> {
        if ctx.is_null() {
            return None;
        }
        let off = offset_of!(ffi::verbs_context, context);
        // SAFETY: per the contract, ctx is the `context` field of a Context's verbs_context,
        // which is the Context's first field.
        Some(unsafe { &*ctx.cast::<u8>().sub(off).cast::<Context>() })
    }

    /// Frees the context behind `ctx`.
    ///
    /// # Safety
    ///
    /// As for [`Context::from_ibv`], and no reference to it remains.
    pub unsafe fn free(ctx: *mut ffi::ibv_context) {
        let off = offset_of!(ffi::verbs_context, context);
        // SAFETY: as in from_ibv; the box was leaked by into_raw.
        drop(unsafe { Box::from_raw(ctx.cast::<u8>().sub(off).cast::<Context>()) });
    }
}

/// Defines a box type whose first field is the C struct, with `into_raw`, `from_ibv`, `free`.
macro_rules! c_object {
    ($(#[$doc:meta])* $name:ident, $cty:ty { $($field:ident: $fty:ty),* $(,)? }) => {
        $(#[$doc])*
        #[repr(C)]
        pub(super) struct $name {
            pub c: UnsafeCell<$cty>,
            $(pub $field: $fty,)*
        }

        impl $name {
            /// Leaks the object; programs get its C struct.
            pub fn into_raw(self: Box<Self>) -> *mut $cty {
                Box::into_raw(self).cast()
            }

            /// The object behind `p`.
            ///
            /// # Safety
            ///
            /// `p` is NULL or came from `into_raw` and was not freed.
            pub unsafe fn from_ibv<'a>(p: *mut $cty) -> Option<&'a $name> {
                // SAFETY: per the contract, p is the first field of a live box of this type.
                (!p.is_null()).then(|| unsafe { &*p.cast::<$name>() })
            }

            /// Frees the object behind `p`.
            ///
            /// # Safety
            ///
            /// As for `from_ibv`, and no reference to it remains.
            pub unsafe fn free(p: *mut $cty) {
                // SAFETY: as in from_ibv; the box was leaked by into_raw.
                drop(unsafe { Box::from_raw(p.cast::<$name>()) });
            }

            /// The C struct, for field writes.
            #[allow(dead_code)]
            pub fn c_ptr(&self) -> *mut $cty {
                self.c.get()
            }
        }
    };
}

c_object!(
    /// A protection domain.
    PdBox, ffi::ibv_pd { handle: PdHandle, device: Arc<Device> }
);
c_object!(
    /// A memory region.
    MrBox, ffi::ibv_mr {
        device: Arc<Device>,
        // What `ibv_rereg_mr` keeps when it does not change them.
        access: AtomicU32,
        iova: AtomicU64,
    }
);
c_object!(
    /// A completion queue; its C part is a `struct ibv_cq_ex` (which starts with the fields of
    /// `struct ibv_cq`), so every CQ is also an extended one and `ibv_cq_ex_to_cq` is a cast.
    /// `current` is the completion an extended poll (`ibv_start_poll`) stands on.
    CqBox, ffi::ibv_cq_ex {
        cq: Arc<Cq>,
        device: Arc<Device>,
        current: Mutex<Option<Completion>>,
    }
);

impl CqBox {
    /// The object behind a `struct ibv_cq *`.
    ///
    /// # Safety
    ///
    /// As for `from_ibv`.
    pub unsafe fn from_cq<'a>(p: *mut ffi::ibv_cq) -> Option<&'a CqBox> {
        // SAFETY: ibv_cq's fields are the first fields of ibv_cq_ex, the first field of CqBox.
        unsafe { CqBox::from_ibv(p.cast()) }
    }
}
c_object!(
    /// A completion channel.
    ChannelBox, ffi::ibv_comp_channel { channel: Arc<CompChannel> }
);

/// The work requests being built on a QP between `ibv_wr_start` and `ibv_wr_complete`, with
/// the first error met on the way (reported by `ibv_wr_complete`).
#[derive(Debug, Default)]
pub(super) struct WrBuilder {
    pub reqs: Vec<SendRequest>,
    pub error: Option<VerbsError>,
}

c_object!(
    /// A queue pair; its C part is a `struct ibv_qp_ex` (which starts with the `struct ibv_qp`),
    /// so `ibv_qp_to_qp_ex` is a cast.
    QpBox, ffi::ibv_qp_ex {
        qp: Arc<Qp>,
        device: Arc<Device>,
        attr: Mutex<ffi::ibv_qp_attr>,
        init: ffi::ibv_qp_init_attr,
        builder: Mutex<WrBuilder>,
    }
);

impl QpBox {
    /// The object behind a `struct ibv_qp *`.
    ///
    /// # Safety
    ///
    /// As for `from_ibv`.
    pub unsafe fn from_qp<'a>(p: *mut ffi::ibv_qp) -> Option<&'a QpBox> {
        // SAFETY: qp_base is the first field of ibv_qp_ex, the first field of QpBox.
        unsafe { QpBox::from_ibv(p.cast()) }
    }
}
