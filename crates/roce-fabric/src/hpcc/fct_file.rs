//! The HPCC simulator's FCT output file: one line per finished flow,
//! `sip dip sport dport size start_time fct standalone_fct` (addresses in hex as `%08x`,
//! times in ns), written as `third.cc`'s `qp_finish` writes it, with the standalone FCT
//! computed as it computes it.

use super::tokens::Tokens;
use super::HpccError;

/// Header bytes per packet `third.cc` counts in the standalone FCT: its whole data header
/// (14 B "Ethernet", 20 B IPv4, 8 B UDP, 6 B sequence and priority group) without INT.
pub const HPCC_HEADER_BYTES: u64 = 48;

/// The first UDP source port of every host (`portNumder[i] = 10000`).
pub const FIRST_SPORT: u16 = 10000;

/// The address ns-3 gives node `id`: 11.x.y.1 (`node_id_to_ip`).
pub fn node_ip(id: usize) -> u32 {
    let id = id as u32;
    0x0b00_0001 + (id / 256) * 0x0001_0000 + (id % 256) * 0x0000_0100
}

/// The node of an address [`node_ip`] gave (`ip_to_node_id`).
pub fn ip_node(ip: u32) -> usize {
    ((ip >> 8) & 0xffff) as usize
}

/// `third.cc`'s standalone FCT: base RTT plus the flow's bytes, with [`HPCC_HEADER_BYTES`]
/// per `payload`-byte packet, at the path's slowest rate (integer ns, as it computes).
pub fn standalone_fct_ns(size: u64, payload: u32, base_rtt_ns: u64, bw_bps: u64) -> u64 {
    let payload = u64::from(payload.max(1));
    let packets = (size.max(1) - 1) / payload + 1;
    let total = size + packets * HPCC_HEADER_BYTES;
    base_rtt_ns + total * 8_000_000_000 / bw_bps.max(1)
}

/// One line of the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FctRecord {
    /// Source address.
    pub sip: u32,
    /// Destination address.
    pub dip: u32,
    /// Source port.
    pub sport: u16,
    /// Destination port.
    pub dport: u16,
    /// Bytes.
    pub size: u64,
    /// Start, ns.
    pub start_ns: u64,
    /// Completion time, ns.
    pub fct_ns: u64,
    /// Standalone (ideal) completion time, ns.
    pub standalone_ns: u64,
}

impl FctRecord {
    /// FCT over standalone FCT.
    pub fn slowdown(&self) -> f64 {
        self.fct_ns as f64 / self.standalone_ns.max(1) as f64
    }
}

/// The file's text for `records`.
pub fn write(records: &[FctRecord]) -> String {
    let mut s = Vec::new();
    for r in records {
        let _ = write_record(&mut s, r);
    }
    String::from_utf8(s).unwrap_or_default()
}

/// Writes one record's line to `out` (`%08x %08x %u %u %lu %lu %lu %lu`, as `qp_finish`).
pub fn write_record(out: &mut impl std::io::Write, r: &FctRecord) -> std::io::Result<()> {
    writeln!(
        out,
        "{:08x} {:08x} {} {} {} {} {} {}",
        r.sip, r.dip, r.sport, r.dport, r.size, r.start_ns, r.fct_ns, r.standalone_ns
    )
}

/// Parses an FCT file (ours or the simulator's).
pub fn parse(file: &str, text: &str) -> Result<Vec<FctRecord>, HpccError> {
    let mut t = Tokens::of_text(file, text);
    let hex = |s: &str| u32::from_str_radix(s, 16).ok();
    let mut out = Vec::new();
    while t.next_is_some()? {
        out.push(FctRecord {
            sip: t.value("a hex address", hex)?.1,
            dip: t.value("a hex address", hex)?.1,
            sport: t.num("a port")?,
            dport: t.num("a port")?,
            size: t.num("a size")?,
            start_ns: t.num("a start time in ns")?,
            fct_ns: t.num("an FCT in ns")?,
            standalone_ns: t.num("a standalone FCT in ns")?,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_ns3_node_addresses() {
        assert_eq!(node_ip(0), 0x0b00_0001);
        assert_eq!(node_ip(1), 0x0b00_0101);
        assert_eq!(node_ip(319), 0x0b01_3f01);
        assert_eq!(ip_node(node_ip(319)), 319);
    }

    #[test]
    fn standalone_fct_is_third_cc_arithmetic() {
        // 1 hop pair under one ToR at 100G, 1 us links: RTT 4000 + 2 x 80 ns.
        // 10000 B = 10 packets + 480 header bytes = 10480 B = 838.4 ns -> 838.
        assert_eq!(
            standalone_fct_ns(10_000, 1000, 4160, 100_000_000_000),
            4160 + 838
        );
        // 1 byte: one packet.
        assert_eq!(standalone_fct_ns(1, 1000, 0, 8_000_000_000), 49);
        assert_eq!(standalone_fct_ns(1001, 1000, 0, 8_000_000_000), 1001 + 96);
    }

    #[test]
    fn writes_hex_addresses_and_parses_back() {
        let r = FctRecord {
            sip: node_ip(3),
            dip: node_ip(300),
            sport: 10000,
            dport: 100,
            size: 52_000,
            start_ns: 2_000_001_234,
            fct_ns: 12_345,
            standalone_ns: 9_000,
        };
        let text = write(&[r, r]);
        assert_eq!(
            text.lines().next(),
            Some("0b000301 0b012c01 10000 100 52000 2000001234 12345 9000")
        );
        assert_eq!(parse("fct.txt", &text).unwrap(), [r, r]);
        assert_eq!(
            parse("fct.txt", "0b000301 zz 1 2 3 4 5 6\n")
                .unwrap_err()
                .to_string(),
            "fct.txt:1: \"zz\" is not a hex address"
        );
    }
}
