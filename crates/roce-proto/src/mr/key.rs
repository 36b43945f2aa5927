//! The 8-bit key part of a region slot's keys: the n-th registration in a slot gets `perm(n)`,
//! where `perm` is a secret permutation of the 256 byte values drawn per slot (an 8-round
//! Feistel network on two 4-bit halves, keyed by 32 random bits). So a slot hands out each key
//! byte once per 256 registrations, as a rotating byte would, but the next key of a slot cannot
//! be read off the last one: a peer that saw one rkey cannot predict the slot's next.

/// The key bytes of one slot.
#[derive(Clone, Copy, Debug)]
pub(super) struct KeySequence {
    /// The permutation's round keys, one nibble per round.
    secret: u32,
    /// Registrations so far in the slot (mod 256).
    count: u8,
}

/// PRESENT's 4-bit S-box: a good round function for a nibble.
const SBOX: [u8; 16] = [
    0xc, 0x5, 0x6, 0xb, 0x9, 0x0, 0xa, 0xd, 0x3, 0xe, 0xf, 0x8, 0x4, 0x7, 0x1, 0x2,
];

impl KeySequence {
    /// A slot's sequence, from 32 secret bits.
    pub(super) fn new(secret: u32) -> Self {
        KeySequence { secret, count: 0 }
    }

    /// The key byte of the next registration in the slot.
    pub(super) fn next_key(&mut self) -> u8 {
        let key = permute(self.secret, self.count);
        self.count = self.count.wrapping_add(1);
        key
    }
}

/// A bijection on bytes keyed by `secret` (any round function makes a Feistel network one).
fn permute(secret: u32, x: u8) -> u8 {
    let (mut left, mut right) = (x >> 4, x & 0xf);
    for round in 0..8 {
        let k = ((secret >> (4 * round)) & 0xf) as u8;
        let f = SBOX
            .get(usize::from((right ^ k) & 0xf))
            .copied()
            .unwrap_or(0);
        (left, right) = (right, left ^ f);
    }
    (left << 4) | right
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_secret_gives_a_permutation_of_the_bytes() {
        for secret in [0, 1, 0xdead_beef, u32::MAX, 0x1234_5678] {
            let mut seen = [false; 256];
            let mut seq = KeySequence::new(secret);
            for _ in 0..256 {
                let k = seq.next_key();
                assert!(!seen[usize::from(k)], "{k} twice for {secret:#x}");
                seen[usize::from(k)] = true;
            }
        }
    }

    #[test]
    fn successive_keys_are_not_a_rotation() {
        let mut seq = KeySequence::new(0x9e37_79b9);
        let keys: Vec<u8> = (0..256).map(|_| seq.next_key()).collect();
        let steps: std::collections::BTreeSet<u8> =
            keys.windows(2).map(|w| w[1].wrapping_sub(w[0])).collect();
        // A rotating byte has one step; a random permutation has about 160 different ones.
        assert!(steps.len() > 100, "{} different steps", steps.len());
    }
}
