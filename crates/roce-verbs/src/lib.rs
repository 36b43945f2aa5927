//! # roce-verbs: unmodified RDMA programs on roce
//!
//! `libroce_verbs.so` provides the libibverbs ABI of rdma-core 44 (Debian 12) over roce's RC
//! transport on a DPDK port: with `LD_PRELOAD=libroce_verbs.so`, `ibv_devinfo`,
//! `ibv_rc_pingpong`, perftest and a program's own verbs code see one device, `roce0`, and run
//! on it without a kernel module.
//!
//! Layers, top down; a module uses only the layers below it:
//! - `abi`: the C structs (bindgen over the system headers), the `extern "C"` shims, the
//!   context's ops table and the extended QP's `ibv_wr_*` pointers.
//! - `progress`: the progress thread (pinned, named `roce-verbs`) owning EAL, the port and the
//!   [`roce_proto::resolving::ResolvingEndpoint`], driving them with the `roce-dpdk` runtime
//!   loop; it starts the process's [`device()`].
//! - [`device`](mod@device): the verbs as safe Rust, the application side of the progress thread;
//!   `worker`: the progress thread's work without the thread.
//! - `command`: what application threads ask of the progress thread.
//! - [`objects`]: CQs, channels, QPs and work requests shared between the application's
//!   threads and the progress thread through lock-free queues and atomics.
//! - `sys`: [`AppMemory`] (the application memory a region's bytes are: the transport reads
//!   and writes it in place, zero-copy) and the eventfd of completion channels.
//!
//! Beside them, used by any: [`config`] (`ROCE_VERBS_*` variables or a `ROCE_VERBS_CONFIG`
//! file), [`info`] (what the query verbs report; GID index 1 is the IPv4-mapped GID, as with
//! rxe) and [`error`]. `abi` and `sys` hold the crate's only `unsafe` code, each block with a
//! `// SAFETY:` line.
//!
//! Not here: UD, UC, XRC, SRQs, memory windows, RDMA CM (they fail with `EOPNOTSUPP` and one
//! line on stderr naming the call).

#![deny(unsafe_code)]

#[allow(unsafe_code)]
mod abi;
mod command;
pub mod config;
pub mod device;
pub mod error;
pub mod info;
pub mod objects;
mod progress;
#[allow(unsafe_code)]
mod sys;
mod worker;

pub use progress::{device, start};
pub use sys::memory::AppMemory;

/// Sends `tracing` events to stderr, filtered by `ROCE_VERBS_LOG` (default `warn`), once.
fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("ROCE_VERBS_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}
