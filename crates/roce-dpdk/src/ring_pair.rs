//! Two ethdev ports wired back to back through two `rte_ring`s (the ring PMD's
//! `rte_eth_from_rings`): what one sends, the other receives. A wire for tests and benches.

use std::ffi::CString;

use dpdk_bindings as sys;

use super::eal::Eal;
use super::error::{call_error, DpdkError};

fn ring(name: &str, size: u32) -> Result<*mut sys::rte_ring, DpdkError> {
    let c = CString::new(name).map_err(|_| DpdkError::NulInName(name.into()))?;
    // SAFETY: EAL is running; valid C string. Single producer / single consumer: each ring has
    // one TX queue feeding it and one RX queue draining it.
    let r = unsafe {
        sys::rte_ring_create(
            c.as_ptr(),
            size,
            sys::SOCKET_ID_ANY,
            sys::RING_F_SP_ENQ | sys::RING_F_SC_DEQ,
        )
    };
    if r.is_null() {
        Err(call_error("rte_ring_create", 0))
    } else {
        Ok(r)
    }
}

/// Creates ports `{name}_a` and `{name}_b` joined by two rings of `ring_size` slots (a power of
/// two; one slot stays empty, so a ring holds `ring_size - 1` frames in flight). Returns their
/// port ids. The rings live until the process ends.
pub fn ring_pair(eal: &Eal, name: &str, ring_size: u32) -> Result<(u16, u16), DpdkError> {
    ring_pair_queues(eal, name, ring_size, 1)
}

/// [`ring_pair`] with `queues` queue pairs per port: what `{name}_a` sends on its TX queue `i`,
/// `{name}_b` receives on its RX queue `i`, and back. The ring PMD has no RSS and no flow rules:
/// a frame stays on the queue index it was sent on.
pub fn ring_pair_queues(
    _eal: &Eal,
    name: &str,
    ring_size: u32,
    queues: u16,
) -> Result<(u16, u16), DpdkError> {
    let queues = queues.max(1);
    let mut ab = Vec::new();
    let mut ba = Vec::new();
    for q in 0..queues {
        // The first queue keeps the single-queue names.
        let suffix = if q == 0 { String::new() } else { q.to_string() };
        ab.push(ring(&format!("{name}_ab{suffix}"), ring_size)?);
        ba.push(ring(&format!("{name}_ba{suffix}"), ring_size)?);
    }
    let n = u32::from(queues);
    let make = |port: &str, rx: &mut [*mut sys::rte_ring], tx: &mut [*mut sys::rte_ring]| {
        let c = CString::new(port).map_err(|_| DpdkError::NulInName(port.into()))?;
        // SAFETY: valid C string; rx/tx point at `n` live rings each, which the new port uses
        // as its RX and TX queues (queue i on ring i).
        let id = unsafe {
            sys::rte_eth_from_rings(c.as_ptr(), rx.as_mut_ptr(), n, tx.as_mut_ptr(), n, 0)
        };
        u16::try_from(id).map_err(|_| call_error("rte_eth_from_rings", id))
    };
    let a = make(&format!("{name}_a"), &mut ba, &mut ab)?;
    let b = make(&format!("{name}_b"), &mut ab, &mut ba)?;
    Ok((a, b))
}
