//! The body of a RoCEv2 congestion notification packet: 16 reserved bytes after a BTH with
//! opcode 0x81 and BECN set, addressed to the reaction point's QP. When to send one is the ECN
//! notification point's decision, not this module's.

/// Length of the reserved block after the BTH.
pub const HEADER_LEN: usize = 16;

fixed_header_view!("the reserved block of a CNP");

impl<T: AsRef<[u8]>> Packet<T> {
    /// All reserved bytes are zero, as a sender must write them.
    pub fn is_zeroed(&self) -> bool {
        self.header_bytes().iter().all(|&b| b == 0)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Zeroes the reserved bytes.
    pub fn clear(&mut self) {
        self.buffer.as_mut()[..HEADER_LEN].fill(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::WireError;

    #[test]
    fn clear_writes_exactly_sixteen_zeros() {
        let mut buf = [0xa5u8; 17];
        let mut packet = Packet::new_checked(&mut buf[..]).unwrap();
        assert!(!packet.is_zeroed());
        packet.clear();
        assert!(packet.is_zeroed());
        assert_eq!(buf[16], 0xa5);
        assert_eq!(
            Packet::new_checked(&buf[..15]).map(|_| ()),
            Err(WireError::Truncated)
        );
    }
}
