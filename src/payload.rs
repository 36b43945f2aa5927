//! Message payloads that prove delivery byte for byte: a per-flow random block with the message
//! number stamped at the start of every 256 bytes, so a stale or misplaced message cannot pass
//! for the right one.

use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64;

/// Bytes between stamps.
pub const STAMP_EVERY: usize = 256;

/// The payload generator of one flow.
#[derive(Clone, Debug)]
pub struct Payload {
    base: Vec<u8>,
    flow: u32,
}

impl Payload {
    /// Payloads of `size` bytes for flow `flow`, random from `seed`.
    pub fn new(size: usize, flow: u32, seed: u64) -> Self {
        let mut rng = Pcg64::seed_from_u64(seed ^ (u64::from(flow) << 40));
        let base = (0..size).map(|_| rng.random::<u8>()).collect();
        Payload { base, flow }
    }

    /// Message size in bytes.
    pub fn len(&self) -> usize {
        self.base.len()
    }

    /// Whether messages are empty.
    pub fn is_empty(&self) -> bool {
        self.base.is_empty()
    }

    /// Writes message `n` into `out` (which must be [`Payload::len`] bytes; shorter or longer
    /// slices get as much as fits).
    pub fn fill(&self, n: u64, out: &mut [u8]) {
        let k = out.len().min(self.base.len());
        if let (Some(o), Some(b)) = (out.get_mut(..k), self.base.get(..k)) {
            o.copy_from_slice(b);
        }
        let stamp = (n << 16 | u64::from(self.flow & 0xffff)).to_le_bytes();
        for chunk in out.chunks_mut(STAMP_EVERY) {
            let m = chunk.len().min(8);
            if let (Some(c), Some(s)) = (chunk.get_mut(..m), stamp.get(..m)) {
                c.copy_from_slice(s);
            }
        }
    }

    /// Whether `got` is exactly message `n`; `scratch` is reused to build the expectation.
    pub fn matches(&self, n: u64, got: &[u8], scratch: &mut Vec<u8>) -> bool {
        scratch.resize(self.base.len(), 0);
        self.fill(n, scratch);
        got == scratch.as_slice()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_matches_itself_only() {
        let p = Payload::new(1000, 3, 7);
        let mut m5 = vec![0; 1000];
        p.fill(5, &mut m5);
        let mut scratch = Vec::new();
        assert!(p.matches(5, &m5, &mut scratch));
        assert!(!p.matches(6, &m5, &mut scratch));
        let q = Payload::new(1000, 4, 7);
        assert!(!q.matches(5, &m5, &mut scratch));
        m5[999] ^= 1;
        assert!(!p.matches(5, &m5, &mut scratch));
    }
}
