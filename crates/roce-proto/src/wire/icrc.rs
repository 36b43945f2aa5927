//! The RoCEv2 invariant CRC (IBTA Annex A17): CRC-32 over 8 bytes of 0xff (the masked LRH), the
//! IP header with its variant fields set to ones, the UDP header with its checksum set to ones,
//! the BTH with byte 4 (FECN/BECN/reserved) set to ones, then everything up to the ICRC (extension
//! headers, payload, pad). The 32-bit result goes on the wire least-significant byte first.
//! The general [`compute_icrc`] / [`verify_icrc`] copy the packet's headers to a stack buffer to
//! mask them. The data path does not: the receive view hashes the frame where it lies and the
//! frame template starts from a precomputed state, both correcting for the bytes that differ by
//! table (`RegCrc`), and payloads are combined with headers by table (`ZeroShift`,
//! `RegCrc::shifted_state`), so no header byte is read back right after being written.

use std::sync::OnceLock;

use super::{bth, ipv4, ipv6, udp, WireError};

/// Bytes of the ICRC trailer.
pub const ICRC_LEN: usize = 4;

/// Bytes of ones that stand for the masked LRH at the start of the hashed data.
pub const LRH_LEN: usize = 8;

/// CRC-32 state after the 8 bytes of 0xff that stand for the masked LRH.
const LRH_SEED: u32 = 0x2144_df1c;

const BTH_LEN: usize = bth::HEADER_LEN;

/// The bytes of an option-less IPv4 header the ICRC masks to ones, as (offset, bits): TOS, TTL,
/// header checksum. This table and the three below are the only statement of the masking; the
/// general and in-place hashers, the generic emitter and the frame templates all follow them.
pub(crate) const IPV4_MASKED: [(usize, u8); 4] = [
    (ipv4::field::TOS, 0xff),
    (ipv4::field::TTL, 0xff),
    (ipv4::field::CHECKSUM, 0xff),
    (ipv4::field::CHECKSUM + 1, 0xff),
];

/// The IPv6 header's masked bits: traffic class and flow label (the first word but the version
/// nibble), hop limit.
pub(crate) const IPV6_MASKED: [(usize, u8); 5] = [
    (ipv6::field::VER_TC_FLOW.start, 0x0f),
    (ipv6::field::VER_TC_FLOW.start + 1, 0xff),
    (ipv6::field::VER_TC_FLOW.start + 2, 0xff),
    (ipv6::field::VER_TC_FLOW.start + 3, 0xff),
    (ipv6::field::HOP_LIMIT, 0xff),
];

/// The UDP header's masked bytes: the checksum.
pub(crate) const UDP_MASKED: [(usize, u8); 2] = [
    (udp::field::CHECKSUM, 0xff),
    (udp::field::CHECKSUM + 1, 0xff),
];

/// The BTH's masked byte: FECN, BECN and the reserved bits.
pub(crate) const BTH_MASKED: (usize, u8) = (bth::field::FECN_BECN, 0xff);

/// Sets the bits `masked` lists in `header` to ones; returns the bytes as they were.
#[inline(always)]
pub(crate) fn mask<const N: usize>(header: &mut [u8], masked: &[(usize, u8); N]) -> [u8; N] {
    // A plain loop: `array::map` is not always inlined, and this runs on every emit.
    let mut real = [0u8; N];
    for (slot, &(at, ones)) in real.iter_mut().zip(masked) {
        *slot = header[at];
        header[at] |= ones;
    }
    real
}

/// Writes back bytes [`mask`] returned (`real`) over the ones it set.
#[inline(always)]
pub(crate) fn unmask<const N: usize>(header: &mut [u8], masked: &[(usize, u8); N], real: [u8; N]) {
    for ((at, _), byte) in masked.iter().zip(real) {
        header[*at] = byte;
    }
}
/// The stack buffer verification masks in: the LRH ones, then up to 248 packet bytes (at least
/// the largest IPv4 + UDP + BTH headers, 80 bytes).
const STACK_BUF: usize = 256;

/// A CRC-32 hasher at its initial state. crc32fast detects the CPU's features each time a hasher
/// is created, so one is made once and cloned (a few register moves) per packet.
#[inline]
fn plain_hasher() -> crc32fast::Hasher {
    static PROTOTYPE: OnceLock<crc32fast::Hasher> = OnceLock::new();
    PROTOTYPE.get_or_init(crc32fast::Hasher::new).clone()
}

/// A CRC-32 hasher that has absorbed the 8 bytes of ones (state `LRH_SEED`), cloned likewise.
#[inline]
fn lrh_hasher() -> crc32fast::Hasher {
    static PROTOTYPE: OnceLock<crc32fast::Hasher> = OnceLock::new();
    PROTOTYPE
        .get_or_init(|| crc32fast::Hasher::new_with_initial(LRH_SEED))
        .clone()
}

/// CRC-32 of `data` (what `crc32fast::hash` computes) without re-detecting CPU features.
#[inline]
pub(crate) fn crc32(data: &[u8]) -> u32 {
    let mut hasher = plain_hasher();
    hasher.update(data);
    hasher.finalize()
}

/// The CRC-32 polynomial, reflected (bit 31 stands for x^0).
const POLY: u32 = 0xedb8_8320;

/// `a * b` modulo the CRC-32 polynomial, both reflected (zlib's `multmodp`).
const fn gf_multiply(a: u32, mut b: u32) -> u32 {
    let mut product = 0u32;
    let mut i = 0;
    while i < 32 {
        product ^= b & ((a >> (31 - i)) & 1).wrapping_neg();
        b = (b >> 1) ^ ((b & 1).wrapping_neg() & POLY);
        i += 1;
    }
    product
}

/// x^(8 * len) modulo the polynomial, reflected: multiplying a CRC by it appends `len` zero bytes.
const fn x8n(len: usize) -> u32 {
    let mut power = 0x8000_0000; // x^0
    let mut square = 0x0080_0000; // x^8
    let mut n = len;
    while n != 0 {
        if n & 1 != 0 {
            power = gf_multiply(square, power);
        }
        square = gf_multiply(square, square);
        n >>= 1;
    }
    power
}

/// Moves a CRC-32 past `len` bytes, so that `crc(a ‖ b) == shift.apply(crc(a)) ^ crc(b)` for
/// `b.len() == len` (zlib's `crc32_combine`), with four table lookups. The emitter hashes a
/// full-MTU payload from the initial state and combines it with the header state this way.
pub(crate) struct ZeroShift([[u32; 256]; 4]);

impl ZeroShift {
    const fn new(len: usize) -> Self {
        let x = x8n(len);
        let mut table = [[0u32; 256]; 4];
        let mut k = 0;
        while k < 4 {
            let mut v = 0;
            while v < 256 {
                table[k][v] = gf_multiply(x, (v as u32) << (8 * k));
                v += 1;
            }
            k += 1;
        }
        ZeroShift(table)
    }

    /// The table for `len` bytes: built at compile time for the payload of a full packet at
    /// each path MTU (256..4096), `None` for other lengths.
    #[inline]
    pub(crate) fn for_len(len: usize) -> Option<&'static ZeroShift> {
        static SHIFT_256: ZeroShift = ZeroShift::new(256);
        static SHIFT_512: ZeroShift = ZeroShift::new(512);
        static SHIFT_1024: ZeroShift = ZeroShift::new(1024);
        static SHIFT_2048: ZeroShift = ZeroShift::new(2048);
        static SHIFT_4096: ZeroShift = ZeroShift::new(4096);
        match len {
            256 => Some(&SHIFT_256),
            512 => Some(&SHIFT_512),
            1024 => Some(&SHIFT_1024),
            2048 => Some(&SHIFT_2048),
            4096 => Some(&SHIFT_4096),
            _ => None,
        }
    }

    /// `crc` moved past this table's length.
    #[inline]
    pub(crate) fn apply(&self, crc: u32) -> u32 {
        let [b0, b1, b2, b3] = crc.to_le_bytes();
        self.0[0][usize::from(b0)]
            ^ self.0[1][usize::from(b1)]
            ^ self.0[2][usize::from(b2)]
            ^ self.0[3][usize::from(b3)]
    }
}

/// Register contributions by distance: `DIST[d][b]` is the raw CRC-32 register (no initial or
/// final inversion) after byte `b` followed by `d` zero bytes, from a zero register. Row 0 is the
/// classic byte table; rows 0..8 drive the slice-by-8 steps of [`RegCrc`]. The CRC is linear, so
/// changing data byte `p` of an `n`-byte run by `delta` changes the register at the run's end by
/// `DIST[n - 1 - p][delta]`.
static DIST: [[u32; 256]; DIST_ROWS] = dist_tables();

/// Distances [`RegCrc::flip`] covers: every masked or per-packet header byte of the 8 LRH bytes
/// and an IPv6 + UDP + BTH header (68 bytes) lies at most 67 bytes before its end.
const DIST_ROWS: usize = 68;

/// Longest run [`RegCrc::shifted_state`] moves a state past (16 lookups).
pub(crate) const MAX_SHIFT: usize = 256;

const fn dist_tables() -> [[u32; 256]; DIST_ROWS] {
    let mut t = [[0u32; 256]; DIST_ROWS];
    let mut b = 0;
    while b < 256 {
        let mut r = b as u32;
        let mut k = 0;
        while k < 8 {
            r = (r >> 1) ^ ((r & 1).wrapping_neg() & POLY);
            k += 1;
        }
        t[0][b] = r;
        b += 1;
    }
    let mut d = 1;
    while d < DIST_ROWS {
        let mut b = 0;
        while b < 256 {
            let r = t[d - 1][b];
            t[d][b] = t[0][(r & 0xff) as usize] ^ (r >> 8);
            b += 1;
        }
        d += 1;
    }
    t
}

/// A CRC-32 fed from values in registers instead of bytes in memory (slice-by-8 on the
/// [`DIST`] rows), and corrected for changed bytes with [`RegCrc::flip`].
///
/// Why: hashing bytes just written with narrow stores (patched header fields) makes the CRC's
/// 16-byte loads wait until those stores drain, since a load spanning several pending stores
/// cannot be forwarded from them. That costs about 12 ns per frame, more than the hashing of a
/// 64 B frame itself. Headers are therefore hashed from a precomputed template state plus
/// per-field corrections (TX), or in place plus mask corrections (RX), never read back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RegCrc(u32);

impl RegCrc {
    /// Continues from a crc32fast state (the value a `Hasher` reports).
    #[inline]
    pub(crate) fn from_state(state: u32) -> Self {
        RegCrc(!state)
    }

    /// The crc32fast state (what `Hasher::new_with_initial` takes, or the final CRC).
    #[inline]
    pub(crate) fn state(self) -> u32 {
        !self.0
    }

    /// Accounts for data byte XORed with `delta`, `distance` bytes before the current end.
    #[inline]
    pub(crate) fn flip(&mut self, distance: usize, delta: u8) {
        self.0 ^= DIST[distance][usize::from(delta)];
    }

    #[inline]
    fn step4(&mut self, wire: [u8; 4]) {
        let [a, b, c, d] = (self.0 ^ u32::from_le_bytes(wire)).to_le_bytes();
        self.0 = DIST[3][usize::from(a)]
            ^ DIST[2][usize::from(b)]
            ^ DIST[1][usize::from(c)]
            ^ DIST[0][usize::from(d)];
    }

    /// Feeds 4 bytes: `v` big-endian, as a header field goes on the wire.
    #[inline]
    pub(crate) fn be_u32(&mut self, v: u32) {
        self.step4(v.to_be_bytes());
    }

    /// Feeds 8 bytes: `v` big-endian.
    #[inline]
    pub(crate) fn be_u64(&mut self, v: u64) {
        let [a, b, c, d, e, f, g, h] = v.to_be_bytes();
        let [a, b, c, d] = (self.0 ^ u32::from_le_bytes([a, b, c, d])).to_le_bytes();
        self.0 = DIST[7][usize::from(a)]
            ^ DIST[6][usize::from(b)]
            ^ DIST[5][usize::from(c)]
            ^ DIST[4][usize::from(d)]
            ^ DIST[3][usize::from(e)]
            ^ DIST[2][usize::from(f)]
            ^ DIST[1][usize::from(g)]
            ^ DIST[0][usize::from(h)];
    }

    /// The state moved past `n` bytes (`crc(a ‖ b) == RegCrc::from_state(crc(a)).shifted_state(
    /// b.len()) ^ crc(b)`, zlib's `crc32_combine`), four lookups per 64 bytes, for `n` a multiple
    /// of 4 up to [`MAX_SHIFT`]; `None` otherwise.
    #[inline]
    pub(crate) fn shifted_state(self, n: usize) -> Option<u32> {
        zero_shift(self.state(), n)
    }

    /// Continues over bytes in memory (bytes not just written: see the type's docs).
    #[inline]
    pub(crate) fn bytes(&mut self, data: &[u8]) {
        if !data.is_empty() {
            let mut h = crc32fast::Hasher::new_with_initial(self.state());
            h.update(data);
            *self = RegCrc::from_state(h.finalize());
        }
    }
}

/// `value` times x^(8n) modulo the polynomial: the linear part of hashing `n` zero bytes. For `n`
/// a multiple of 4 up to [`MAX_SHIFT`] (four lookups per 64 bytes), else `None`.
#[inline]
fn zero_shift(mut value: u32, mut n: usize) -> Option<u32> {
    if n % 4 != 0 || n > MAX_SHIFT {
        return None;
    }
    while n > 0 {
        let step = n.min(64);
        let [a, b, c, d] = value.to_le_bytes();
        value = DIST[step - 1][usize::from(a)]
            ^ DIST[step - 2][usize::from(b)]
            ^ DIST[step - 3][usize::from(c)]
            ^ DIST[step - 4][usize::from(d)];
        n -= step;
    }
    Some(value)
}

/// A crc32fast state continued over `n` zero bytes (a discarding region's payload and its pad),
/// by table lookups instead of hashing them: full-MTU tables for the long part, [`zero_shift`]
/// for the rest. `None` unless `n` is a multiple of 4 (payload and pad always are).
#[inline]
pub(crate) fn past_zeros(state: u32, mut n: usize) -> Option<u32> {
    // Hashing zeros moves the raw register (the state inverted) by x^(8n) and nothing else.
    let mut raw = !state;
    for len in [4096, 1024, 256] {
        while n >= len {
            raw = ZeroShift::for_len(len)?.apply(raw);
            n -= len;
        }
    }
    zero_shift(raw, n).map(|raw| !raw)
}

/// The ICRC of a received packet given as `hashed`: the 8 bytes before its IP header (the
/// Ethernet header's tail, standing in for the LRH's ones), its IP (IPv4 without options when
/// `N` is 40, IPv6 when `N` is 60), UDP and BTH headers exactly as on the wire, then the
/// extension headers, payload and pad (`None` if shorter than the headers). Everything is hashed
/// where it lies (no copy); the variant fields the ICRC masks to ones are accounted for with
/// [`RegCrc::flip`] at the end of the headers.
#[inline]
pub(crate) fn icrc_in_place<const N: usize>(hashed: &[u8]) -> Option<u32> {
    let (lead, covered) = hashed.split_first_chunk::<LRH_LEN>()?;
    let (headers, rest) = covered.split_first_chunk::<N>()?;
    // What masking changes, as a register at the end of the headers: each masked byte is XORed
    // with (its value ^ ones); the 8 bytes before the IP header stand in for the LRH's ones.
    let mut delta = RegCrc(0);
    for (i, byte) in lead.iter().enumerate() {
        delta.flip(N + LRH_LEN - 1 - i, byte ^ 0xff);
    }
    let mut mask = |p: usize, ones: u8| delta.flip(N - 1 - p, (headers[p] & ones) ^ ones);
    let udp_at = N - BTH_LEN - udp::HEADER_LEN;
    let ip_masked: &[(usize, u8)] = if N == ipv6::HEADER_LEN + udp::HEADER_LEN + BTH_LEN {
        &IPV6_MASKED
    } else {
        &IPV4_MASKED
    };
    for &(at, ones) in ip_masked {
        mask(at, ones);
    }
    for (at, ones) in UDP_MASKED {
        mask(udp_at + at, ones);
    }
    mask(N - BTH_LEN + BTH_MASKED.0, BTH_MASKED.1);
    // A short rest: everything hashed in one pass where it lies (8 bytes more than the ICRC
    // covers lets a 64 B payload reach crc32fast's 4-way fold), the masking change moved to
    // the end by table. A long one: the headers, the change, then the rest.
    let mut head = plain_hasher();
    if let Some(moved) = zero_shift(delta.0, rest.len()) {
        head.update(hashed);
        return Some(head.finalize() ^ moved);
    }
    head.update(&hashed[..LRH_LEN + N]);
    let mut reg = RegCrc::from_state(head.finalize());
    reg.0 ^= delta.0;
    reg.bytes(rest);
    Some(reg.state())
}

/// The crc32fast state after the 8 bytes of ones that stand for the LRH and then `data`.
pub(crate) fn crc_after_lrh(data: &[u8]) -> u32 {
    let mut h = lrh_hasher();
    h.update(data);
    h.finalize()
}

/// A streaming ICRC: feed it the already masked headers and the rest of the packet.
///
/// `Icrc::new()` has already absorbed the 8 bytes of 0xff, so feed it from the IP header on.
#[derive(Clone, Debug)]
pub struct Icrc {
    hasher: crc32fast::Hasher,
}

impl Default for Icrc {
    fn default() -> Self {
        Self::new()
    }
}

impl Icrc {
    /// A hasher that has absorbed the masked LRH.
    pub fn new() -> Self {
        Icrc {
            hasher: lrh_hasher(),
        }
    }

    /// Absorbs `data` (which the caller has masked where needed).
    #[inline]
    pub fn update(&mut self, data: &[u8]) {
        self.hasher.update(data);
    }

    /// The ICRC, as a number; on the wire it is `to_le_bytes()`.
    #[inline]
    pub fn finish(self) -> u32 {
        self.hasher.finalize()
    }
}

/// The length of the IP header `packet` starts with, and the offset of the mask positions.
fn ip_header_len(packet: &[u8]) -> Result<usize, WireError> {
    let first = *packet.first().ok_or(WireError::Truncated)?;
    match first >> 4 {
        4 => {
            let ihl = usize::from(first & 0x0f) * 4;
            if ihl < ipv4::HEADER_LEN {
                // (ihl <= 60, so IP + UDP + BTH always fit in STACK_HEAD)
                Err(WireError::BadLength)
            } else {
                Ok(ihl)
            }
        }
        6 => Ok(ipv6::HEADER_LEN),
        other => Err(WireError::BadVersion(other)),
    }
}

/// Every byte (within the IP packet) of the IP, UDP and BTH headers that the ICRC masks, with
/// the bits it masks (an IPv4 header repeats its last entry to fill the array); also how many
/// header bytes must be present.
fn masked_positions(packet: &[u8]) -> Result<([(usize, u8); 8], usize), WireError> {
    let ip_len = ip_header_len(packet)?;
    let [u0, u1] = UDP_MASKED.map(|(at, ones)| (ip_len + at, ones));
    let b = (ip_len + udp::HEADER_LEN + BTH_MASKED.0, BTH_MASKED.1);
    let positions = if packet[0] >> 4 == 6 {
        let [i0, i1, i2, i3, i4] = IPV6_MASKED;
        [i0, i1, i2, i3, i4, u0, u1, b]
    } else {
        let [i0, i1, i2, i3] = IPV4_MASKED;
        [i0, i1, i2, i3, u0, u1, b, b]
    };
    Ok((positions, ip_len + udp::HEADER_LEN + BTH_LEN))
}

/// Computes the ICRC of `packet`, which starts at the IP header and ends right before the ICRC
/// (so it includes the pad bytes). The IP version is read from the first nibble; IPv4 options,
/// if any, are covered unmasked. The 8 bytes of ones and the packet (or, past 248 bytes, only its
/// masked headers) are copied to a stack buffer to be masked, so a small packet is hashed in a
/// single call and a larger one in two.
#[inline]
pub fn compute_icrc(packet: &[u8]) -> Result<u32, WireError> {
    let (positions, masked_len) = masked_positions(packet)?;
    if packet.len() < masked_len {
        return Err(WireError::Truncated);
    }
    let head_len = if packet.len() <= STACK_BUF - LRH_LEN {
        packet.len()
    } else {
        masked_len
    };
    let (head, rest) = packet.split_at(head_len);
    let mut buf = [0xffu8; STACK_BUF];
    let copy = &mut buf[LRH_LEN..LRH_LEN + head_len];
    copy.copy_from_slice(head);
    for (at, bits) in positions {
        copy[at] |= bits;
    }

    let mut hasher = plain_hasher();
    hasher.update(&buf[..LRH_LEN + head_len]);
    if !rest.is_empty() {
        hasher.update(rest);
    }
    Ok(hasher.finalize())
}

/// Computes the same ICRC as [`compute_icrc`] in one streaming pass, by setting the variant
/// fields of `packet` to ones in place, hashing, and restoring them. `packet` is unchanged on
/// return. This is what the emitter uses: no copy at all.
pub fn compute_icrc_in_place(packet: &mut [u8]) -> Result<u32, WireError> {
    let (positions, masked_len) = masked_positions(packet)?;
    if packet.len() < masked_len {
        return Err(WireError::Truncated);
    }
    let mut saved = [0u8; 8];
    for (slot, (at, bits)) in saved.iter_mut().zip(positions) {
        *slot = packet[at];
        packet[at] |= bits;
    }

    let mut hasher = lrh_hasher();
    hasher.update(packet);
    let icrc = hasher.finalize();

    // Restore in reverse order: a position may be listed twice.
    for (slot, (at, _)) in saved.iter().zip(positions).rev() {
        packet[at] = *slot;
    }
    Ok(icrc)
}

/// Checks the ICRC of `packet`, which starts at the IP header and ends with the 4-byte ICRC.
/// Returns the ICRC on success.
pub fn verify_icrc(packet: &[u8]) -> Result<u32, WireError> {
    let split = packet
        .len()
        .checked_sub(ICRC_LEN)
        .ok_or(WireError::Truncated)?;
    let (covered, trailer) = packet.split_at(split);
    let found = u32::from_le_bytes([trailer[0], trailer[1], trailer[2], trailer[3]]);
    let expected = compute_icrc(covered)?;
    if expected == found {
        Ok(found)
    } else {
        Err(WireError::BadIcrc { expected, found })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn past_zeros_equals_hashing_the_zeros() {
        let zeros = [0u8; 9000];
        for state in [0u32, 0xffff_ffff, 0x1234_5678, 0xdead_beef] {
            for n in (0..=zeros.len()).step_by(4) {
                let mut h = crc32fast::Hasher::new_with_initial(state);
                h.update(&zeros[..n]);
                assert_eq!(past_zeros(state, n), Some(h.finalize()), "n = {n}");
            }
        }
        assert_eq!(past_zeros(7, 6), None);
    }

    #[test]
    fn in_place_icrc_equals_the_masking_copy() {
        // Every header byte takes a few values, the masked ones included, for both IP versions.
        for n in [40usize, 60] {
            for seed in 0u8..8 {
                let mut packet: Vec<u8> = (0..n + 1000)
                    .map(|i| {
                        (i as u8)
                            .wrapping_mul(37)
                            .wrapping_add(seed.wrapping_mul(91))
                    })
                    .collect();
                packet[0] = if n == 40 { 0x45 } else { 0x60 | (seed & 0x0f) };
                for rest_len in [0usize, 4, 16, 80, 100, 256, 260, 1000] {
                    let (headers, rest) = packet[..n + rest_len].split_at(n);
                    let mut expected = Icrc::new();
                    let mut masked = headers.to_vec();
                    if n == 40 {
                        masked[1] = 0xff;
                        masked[8] = 0xff;
                        masked[10] = 0xff;
                        masked[11] = 0xff;
                    } else {
                        masked[0] |= 0x0f;
                        masked[1..4].fill(0xff);
                        masked[7] = 0xff;
                    }
                    masked[n - 20 + 6] = 0xff;
                    masked[n - 20 + 7] = 0xff;
                    masked[n - 12 + 4] = 0xff;
                    expected.update(&masked);
                    expected.update(rest);
                    // Any 8 bytes before the IP header (an Ethernet header's tail).
                    let mut hashed: Vec<u8> =
                        (0..8u8).map(|i| i.wrapping_mul(seed ^ 0x35)).collect();
                    hashed.extend_from_slice(&packet[..n + rest_len]);
                    let got = if n == 40 {
                        icrc_in_place::<40>(&hashed)
                    } else {
                        icrc_in_place::<60>(&hashed)
                    };
                    assert_eq!(
                        got,
                        Some(expected.finish()),
                        "n {n} seed {seed} rest {rest_len}"
                    );
                }
            }
        }
    }

    #[test]
    fn register_feeding_equals_hashing_the_bytes() {
        let mut reg = RegCrc::from_state(LRH_SEED);
        reg.be_u32(0x0102_0304);
        reg.be_u64(0x1122_3344_5566_7788);
        reg.bytes(&[9, 8, 7]);
        let mut bytes = vec![0xffu8; 8];
        bytes.extend_from_slice(&[
            1, 2, 3, 4, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 9, 8, 7,
        ]);
        assert_eq!(reg.state(), crc32fast::hash(&bytes));
        // Flipping byte p of the run is the same as hashing the changed bytes.
        let mut flipped = RegCrc::from_state(crc32fast::hash(&bytes));
        flipped.flip(bytes.len() - 1 - 5, 0x5a);
        bytes[5] ^= 0x5a;
        assert_eq!(flipped.state(), crc32fast::hash(&bytes));
    }

    #[test]
    fn shifted_state_combines_like_one_pass() {
        let data: Vec<u8> = (0..200).map(|i| (i * 29 + 3) as u8).collect();
        for head in [0usize, 7, 56, 100] {
            for n in [0usize, 4, 8, 32, 60, 64] {
                let (a, b) = data[..head + n].split_at(head);
                let shifted = RegCrc::from_state(crc32fast::hash(a)).shifted_state(n);
                assert_eq!(
                    shifted.map(|s| s ^ crc32fast::hash(b)),
                    Some(crc32fast::hash(&data[..head + n])),
                    "head {head} n {n}"
                );
            }
        }
        for n in [68usize, 128, 200, 256] {
            let long: Vec<u8> = (0..n + 9).map(|i| (i * 13 + 1) as u8).collect();
            let (a, b) = long.split_at(9);
            assert_eq!(
                RegCrc::from_state(crc32fast::hash(a))
                    .shifted_state(n)
                    .map(|s| s ^ crc32fast::hash(b)),
                Some(crc32fast::hash(&long)),
                "n {n}"
            );
        }
        assert_eq!(RegCrc::from_state(1).shifted_state(260), None);
        assert_eq!(RegCrc::from_state(1).shifted_state(6), None);
    }

    #[test]
    fn zero_shift_combines_like_one_pass() {
        for len in [256usize, 512, 1024, 2048, 4096] {
            let shift = ZeroShift::for_len(len).expect("table");
            for head_len in [0usize, 1, 56, 77, 200] {
                let data: Vec<u8> = (0..head_len + len).map(|i| (i * 131 % 251) as u8).collect();
                let (a, b) = data.split_at(head_len);
                assert_eq!(
                    shift.apply(crc32fast::hash(a)) ^ crc32fast::hash(b),
                    crc32fast::hash(&data),
                    "len {len} head {head_len}"
                );
            }
        }
        assert!(ZeroShift::for_len(4095).is_none());
    }

    #[test]
    fn lrh_seed_is_crc_of_eight_ones_bytes() {
        assert_eq!(crc32fast::hash(&[0xff; 8]), LRH_SEED);
    }

    #[test]
    fn streaming_hasher_equals_one_shot() {
        let data: Vec<u8> = (0..200u8).collect();
        let mut icrc = Icrc::new();
        icrc.update(&data[..37]);
        icrc.update(&data[37..]);
        let mut all = vec![0xff; 8];
        all.extend_from_slice(&data);
        assert_eq!(icrc.finish(), crc32fast::hash(&all));
    }

    #[test]
    fn in_place_icrc_equals_copying_icrc_and_restores_the_packet() {
        for first in [0x45u8, 0x60] {
            let mut packet: Vec<u8> = (0..120u8).map(|b| b.wrapping_mul(7)).collect();
            packet[0] = first;
            let before = packet.clone();
            let copied = compute_icrc(&packet).unwrap();
            assert_eq!(compute_icrc_in_place(&mut packet), Ok(copied));
            assert_eq!(packet, before);
        }
    }

    #[test]
    fn short_or_non_ip_input_is_an_error_not_a_panic() {
        assert_eq!(compute_icrc(&[]), Err(WireError::Truncated));
        assert_eq!(compute_icrc(&[0x45; 30]), Err(WireError::Truncated));
        assert_eq!(compute_icrc(&[0x55; 60]), Err(WireError::BadVersion(5)));
        assert_eq!(compute_icrc(&[0x41; 60]), Err(WireError::BadLength));
        assert_eq!(verify_icrc(&[0x45, 0, 0]), Err(WireError::Truncated));
        assert_eq!(
            compute_icrc_in_place(&mut [0x45; 30]),
            Err(WireError::Truncated)
        );
    }
}
