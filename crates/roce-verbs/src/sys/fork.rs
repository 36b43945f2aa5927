//! Whether this process is a child forked from the one that started the device. The progress
//! thread does not survive `fork()`, so a verb in the child would wait forever for an answer;
//! instead every verb fails at once there (as rdma-core does without fork support). A
//! `pthread_atfork` child handler sets a flag, so the check costs one relaxed load, not a
//! `getpid` per post.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Once;

static FORKED: AtomicBool = AtomicBool::new(false);
static WATCH: Once = Once::new();

extern "C" fn in_the_child() {
    FORKED.store(true, Ordering::Relaxed);
}

/// Starts watching for `fork()` (once per process; call before the device starts).
pub fn watch() {
    WATCH.call_once(|| {
        // SAFETY: registers a handler that only stores to an atomic, which is async-signal-safe
        // and valid in the child of a multithreaded process.
        let rc = unsafe { libc::pthread_atfork(None, None, Some(in_the_child)) };
        if rc != 0 {
            tracing::warn!(
                rc,
                "pthread_atfork failed: verbs in a forked child may hang"
            );
        }
    });
}

/// This process was forked after [`watch`] started (the device belongs to its parent).
pub fn forked() -> bool {
    FORKED.load(Ordering::Relaxed)
}
