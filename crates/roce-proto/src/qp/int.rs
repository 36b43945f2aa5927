//! The endpoint's side of in-band telemetry ([`crate::wire::int`]): which QPs send collecting
//! shims on their data, the records each QP received and owes its peer as an echo on the next
//! ACK, and the scratch buffer a shimmed frame is stripped into before the ordinary parser sees
//! it. The endpoint calls in after emitting a frame and when a frame carries a shim.
//!
//! Not here: the format (wire) and what a controller does with the records (cc).

use crate::cc::IntHop;
use crate::wire::int;
use crate::wire::int::Repr;

/// INT counters of an endpoint.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct IntCounters {
    /// Data frames sent with a collecting shim.
    pub shims_sent: u64,
    /// ACKs sent with an echo of the records received.
    pub echoes_sent: u64,
    /// Shimmed frames received and stripped.
    pub shims_received: u64,
    /// Echoes received (handed to the QP's controller).
    pub echoes_received: u64,
    /// Shimmed frames dropped as malformed.
    pub malformed: u64,
    /// Frames sent without their shim because the buffer had no room.
    pub no_room: u64,
    /// Records switches could not write into shims received (every slot was taken: the path
    /// has more INT switches than the sender's shim has slots).
    pub records_dropped: u64,
}

#[derive(Clone, Copy, Debug, Default)]
struct Slot {
    /// Slots of the collecting shim on this QP's data (0: no INT).
    max_hops: u8,
    /// The units multiplier of its byte fields.
    units: u8,
    /// Records received on this QP's requests, owed to the peer.
    echo: Option<Repr>,
}

/// Per-QP INT state of an endpoint, indexed by QP slot.
#[derive(Clone, Debug, Default)]
pub struct IntPaths {
    slots: Vec<Slot>,
    scratch: Vec<u8>,
    counters: IntCounters,
}

impl IntPaths {
    fn slot_mut(&mut self, slot: usize) -> Option<&mut Slot> {
        if self.slots.len() <= slot {
            self.slots.resize(slot + 1, Slot::default());
        }
        self.slots.get_mut(slot)
    }

    /// Data of QP `slot` carries a collecting shim with `max_hops` slots (0 turns it off) at
    /// units `units` ([`int::Repr::units`]).
    pub fn enable(&mut self, slot: usize, max_hops: u8, units: u8) {
        if let Some(s) = self.slot_mut(slot) {
            s.max_hops = max_hops.min(int::MAX_HOPS as u8);
            s.units = units.max(1);
        }
    }

    /// Forgets a QP's state (destroyed or reset).
    pub fn clear(&mut self, slot: usize) {
        if let Some(s) = self.slots.get_mut(slot) {
            *s = Slot::default();
        }
    }

    /// QP `slot` emitted the data frame `buf[..len]`: adds its collecting shim. Returns the
    /// length to send.
    #[inline]
    pub fn on_data_sent(&mut self, slot: usize, buf: &mut [u8], len: usize) -> usize {
        let (max_hops, units) = match self.slots.get(slot) {
            Some(s) if s.max_hops > 0 => (s.max_hops, s.units),
            _ => return len,
        };
        self.add(buf, len, &Repr::collect(max_hops, units), false)
    }

    /// QP `slot` emitted the ACK/NAK `buf[..len]`: adds the echo it owes, if any.
    #[inline]
    pub fn on_control_sent(&mut self, slot: usize, buf: &mut [u8], len: usize) -> usize {
        let Some(echo) = self.slots.get_mut(slot).and_then(|s| s.echo.take()) else {
            return len;
        };
        self.add(buf, len, &echo, true)
    }

    fn add(&mut self, buf: &mut [u8], len: usize, shim: &Repr, echo: bool) -> usize {
        match int::insert(buf, len, shim) {
            Ok(n) => {
                if echo {
                    self.counters.echoes_sent += 1;
                } else {
                    self.counters.shims_sent += 1;
                }
                n
            }
            Err(_) => {
                self.counters.no_room += 1;
                len
            }
        }
    }

    /// Strips a shimmed `frame` into the scratch buffer (allocated once, on first use). Returns
    /// the restored frame (to parse and handle as usual) and the shim; the scratch buffer must be
    /// handed back with [`IntPaths::put_scratch`].
    pub fn strip(&mut self, frame: &[u8]) -> Option<(Vec<u8>, usize, Repr)> {
        let mut scratch = std::mem::take(&mut self.scratch);
        if scratch.len() < frame.len() {
            scratch.resize(frame.len().max(crate::limits::MAX_FRAME), 0);
        }
        match int::strip(frame, &mut scratch) {
            Ok((n, shim)) => {
                self.counters.shims_received += 1;
                if !shim.echo {
                    self.counters.records_dropped += u64::from(shim.dropped());
                }
                Some((scratch, n, shim))
            }
            Err(_) => {
                self.counters.malformed += 1;
                self.scratch = scratch;
                None
            }
        }
    }

    /// Returns the scratch buffer lent by [`IntPaths::strip`].
    pub fn put_scratch(&mut self, scratch: Vec<u8>) {
        self.scratch = scratch;
    }

    /// QP `slot` received a request carrying `shim`'s records: the next ACK echoes them (a shim
    /// no switch filled is not echoed).
    pub fn owe_echo(&mut self, slot: usize, shim: &Repr) {
        if shim.records().is_empty() {
            return;
        }
        let echo = Repr::echo_of(shim.records(), shim.units);
        if let Some(s) = self.slot_mut(slot) {
            s.echo = Some(echo);
        }
    }

    /// An echo arrived: its records as controller input, counted.
    pub fn echoed_hops(&mut self, shim: &Repr, out: &mut [IntHop; int::MAX_HOPS]) -> usize {
        self.counters.echoes_received += 1;
        let mut n = 0;
        for (o, r) in out.iter_mut().zip(shim.records()) {
            *o = IntHop::from_record(r, shim.units);
            n += 1;
        }
        n
    }

    /// The counters.
    pub fn counters(&self) -> IntCounters {
        self.counters
    }
}
