//! Shared by the oob and interop tests: TCP payloads out of a capture, through the wire layer's
//! Ethernet and IPv4 views and a minimal TCP header skip (data offset and sequence number only:
//! retransmitted bytes are dropped, each direction is concatenated in capture order; no
//! reordering, which these short exchanges on one bridge do not need).

use std::collections::HashMap;
use std::net::SocketAddrV4;
use std::path::Path;

use roce::pcap::CaptureReader;
use roce_proto::wire::ethernet;
use roce_proto::wire::ethernet::EtherType;
use roce_proto::wire::ipv4;

/// The golden vector `name` (a real rxe capture).
pub fn vector(name: &str) -> std::path::PathBuf {
    roce_testkit::vectors::path(name)
}

/// One TCP segment with payload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    /// Sender.
    pub src: SocketAddrV4,
    /// Receiver.
    pub dst: SocketAddrV4,
    /// The bytes after the TCP header.
    pub payload: Vec<u8>,
}

/// Every TCP segment carrying data in `path`, in capture order.
pub fn tcp_segments(path: &Path) -> Vec<Segment> {
    let mut out = Vec::new();
    let mut next_seq: HashMap<(SocketAddrV4, SocketAddrV4), u32> = HashMap::new();
    for frame in CaptureReader::open(path).expect("capture opens") {
        let frame = frame.expect("capture record");
        let Ok(eth) = ethernet::Frame::new_checked(&frame.data[..]) else {
            continue;
        };
        if eth.ethertype() != EtherType::Ipv4 {
            continue;
        }
        let Ok(ip) = ipv4::Packet::new_checked(eth.payload()) else {
            continue;
        };
        if ip.protocol() != 6 {
            continue;
        }
        let tcp = ip.payload();
        let Some(&offset_byte) = tcp.get(12) else {
            continue;
        };
        let header_len = usize::from(offset_byte >> 4) * 4;
        let (Some(head), Some(payload)) = (tcp.get(..8), tcp.get(header_len..)) else {
            continue;
        };
        let src = SocketAddrV4::new(ip.src_addr(), u16::from_be_bytes([head[0], head[1]]));
        let dst = SocketAddrV4::new(ip.dst_addr(), u16::from_be_bytes([head[2], head[3]]));
        let seq = u32::from_be_bytes([head[4], head[5], head[6], head[7]]);
        let expected = next_seq.entry((src, dst)).or_insert(seq);
        // Bytes before `expected` were seen already (a retransmission); a seq beyond it is a
        // gap in the capture, taken as is.
        let behind = expected.wrapping_sub(seq);
        let skip = if behind < 1 << 31 { behind as usize } else { 0 };
        let Some(fresh) = payload.get(skip..).filter(|f| !f.is_empty()) else {
            continue;
        };
        *expected = seq.wrapping_add(payload.len() as u32);
        out.push(Segment {
            src,
            dst,
            payload: fresh.to_vec(),
        });
    }
    out
}

/// Both directions of the connection to `server_port`: (client to server, server to client),
/// each the concatenation of its segments.
pub fn streams(segments: &[Segment], server_port: u16) -> (Vec<u8>, Vec<u8>) {
    let mut to_server = Vec::new();
    let mut to_client = Vec::new();
    for s in segments {
        if s.dst.port() == server_port {
            to_server.extend_from_slice(&s.payload);
        } else if s.src.port() == server_port {
            to_client.extend_from_slice(&s.payload);
        }
    }
    (to_server, to_client)
}

/// Both directions of the connection to `server_port` in the capture at `path`.
pub fn capture_streams(path: &Path, server_port: u16) -> (Vec<u8>, Vec<u8>) {
    streams(&tcp_segments(path), server_port)
}

/// Every frame of the capture at `path`.
pub fn frames(path: &Path) -> Vec<Vec<u8>> {
    CaptureReader::open(path)
        .expect("capture opens")
        .map(|f| f.expect("capture record").data)
        .collect()
}

/// Splits a stream into messages of the given sizes; panics unless they cover it exactly.
pub fn split<'a>(stream: &'a [u8], sizes: &[usize]) -> Vec<&'a [u8]> {
    let mut rest = stream;
    let mut out = Vec::new();
    for &n in sizes {
        assert!(
            rest.len() >= n,
            "stream ends early: need {n}, have {}",
            rest.len()
        );
        let (head, tail) = rest.split_at(n);
        out.push(head);
        rest = tail;
    }
    assert!(
        rest.is_empty(),
        "{} bytes left over: {:?}",
        rest.len(),
        rest
    );
    out
}

/// The message sizes of a perftest bandwidth test with GID keys, as `roce::oob::perftest`
/// documents them (version, sys data x2, MTU, keys x3, keys, report x5, keys, done).
pub fn perftest_bw_sizes() -> Vec<usize> {
    use roce::oob::perftest::{KEY_MSG_SIZE_GID, MTU_MSG_LEN, VERSION_LEN};
    let mut v = vec![VERSION_LEN, 4, 4, MTU_MSG_LEN];
    v.extend([KEY_MSG_SIZE_GID; 4]);
    v.extend([8; 5]);
    v.push(KEY_MSG_SIZE_GID);
    v.push(5);
    v
}
