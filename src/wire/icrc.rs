//! The RoCEv2 invariant CRC (IBTA Annex A17): CRC-32 over 8 bytes of 0xff (the masked LRH), the
//! IP header with its variant fields set to ones, the UDP header with its checksum set to ones,
//! the BTH with byte 4 (FECN/BECN/reserved) set to ones, then everything up to the ICRC (extension
//! headers, payload, pad). The 32-bit result goes on the wire least-significant byte first.
//! Only the IP/UDP/BTH headers (at most 80 bytes) are copied to be masked; the rest is hashed in
//! place in one streaming pass.

use super::{ipv4, ipv6, udp, WireError};

/// Bytes of the ICRC trailer.
pub const ICRC_LEN: usize = 4;

/// CRC-32 state after the 8 bytes of 0xff that stand for the masked LRH.
const LRH_SEED: u32 = 0x2144_df1c;

const BTH_LEN: usize = super::bth::HEADER_LEN;
const MAX_MASKED: usize = 8 + 60 + udp::HEADER_LEN + BTH_LEN;

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
            hasher: crc32fast::Hasher::new_with_initial(LRH_SEED),
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
                Err(WireError::BadLength)
            } else {
                Ok(ihl)
            }
        }
        6 => Ok(ipv6::HEADER_LEN),
        other => Err(WireError::BadVersion(other)),
    }
}

/// Computes the ICRC of `packet`, which starts at the IP header and ends right before the ICRC
/// (so it includes the pad bytes). The IP version is read from the first nibble; IPv4 options,
/// if any, are covered unmasked.
pub fn compute_icrc(packet: &[u8]) -> Result<u32, WireError> {
    let ip_len = ip_header_len(packet)?;
    let masked_len = ip_len + udp::HEADER_LEN + BTH_LEN;
    let headers = packet.get(..masked_len).ok_or(WireError::Truncated)?;
    let rest = packet.get(masked_len..).ok_or(WireError::Truncated)?;

    let mut pseudo = [0xffu8; MAX_MASKED];
    let pseudo = &mut pseudo[..8 + masked_len];
    pseudo[8..].copy_from_slice(headers);
    let ip = 8;
    if ip_len == ipv6::HEADER_LEN && headers[0] >> 4 == 6 {
        // Traffic class and flow label: everything of the first word but the version nibble.
        pseudo[ip] |= 0x0f;
        pseudo[ip + 1..ip + 4].fill(0xff);
        pseudo[ip + 7] = 0xff; // hop limit
    } else {
        pseudo[ip + 1] = 0xff; // TOS (DSCP + ECN)
        pseudo[ip + 8] = 0xff; // TTL
        pseudo[ip + 10..ip + 12].fill(0xff); // header checksum
    }
    let udp_at = ip + ip_len;
    pseudo[udp_at + 6..udp_at + 8].fill(0xff); // UDP checksum
    pseudo[udp_at + udp::HEADER_LEN + 4] = 0xff; // BTH FECN, BECN, resv6

    let mut hasher = crc32fast::Hasher::new();
    hasher.update(pseudo);
    hasher.update(rest);
    Ok(hasher.finalize())
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
    fn short_or_non_ip_input_is_an_error_not_a_panic() {
        assert_eq!(compute_icrc(&[]), Err(WireError::Truncated));
        assert_eq!(compute_icrc(&[0x45; 30]), Err(WireError::Truncated));
        assert_eq!(compute_icrc(&[0x55; 60]), Err(WireError::BadVersion(5)));
        assert_eq!(compute_icrc(&[0x41; 60]), Err(WireError::BadLength));
        assert_eq!(verify_icrc(&[0x45, 0, 0]), Err(WireError::Truncated));
    }
}
