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
pub fn ring_pair(_eal: &Eal, name: &str, ring_size: u32) -> Result<(u16, u16), DpdkError> {
    let mut ab = ring(&format!("{name}_ab"), ring_size)?;
    let mut ba = ring(&format!("{name}_ba"), ring_size)?;
    let make = |port: &str, rx: &mut *mut sys::rte_ring, tx: &mut *mut sys::rte_ring| {
        let c = CString::new(port).map_err(|_| DpdkError::NulInName(port.into()))?;
        // SAFETY: valid C string; rx/tx point at one live ring each, which the new port uses
        // for its only RX and TX queue.
        let id = unsafe { sys::rte_eth_from_rings(c.as_ptr(), rx, 1, tx, 1, 0) };
        u16::try_from(id).map_err(|_| call_error("rte_eth_from_rings", id))
    };
    let a = make(&format!("{name}_a"), &mut ba, &mut ab)?;
    let b = make(&format!("{name}_b"), &mut ab, &mut ba)?;
    Ok((a, b))
}
