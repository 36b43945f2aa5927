//! Golden vectors: real Linux Soft-RoCE captures in crates/roce-proto/tests/vectors (see its
//! README) must parse, verify, match the README's table and re-emit byte for byte; the ICRC must
//! cover exactly the invariant fields.

use roce_testkit::vectors;

use std::collections::BTreeMap;

use roce_proto::psn::Psn;
use roce_proto::wire;
use roce_proto::wire::aeth::{NakCode, Syndrome};
use roce_proto::wire::{
    icrc, parse_frame, parse_frame_unverified, Ecn, IpRepr, Opcode, RocePacket, WireError,
};

/// Every frame of a pcap, in order.
fn frames(name: &str) -> Vec<Vec<u8>> {
    let file = std::fs::File::open(vectors::path(name)).expect("vector file");
    let mut reader = pcap_file::pcap::PcapReader::new(file).expect("pcap header");
    assert_eq!(
        reader.header().datalink,
        pcap_file::DataLink::ETHERNET,
        "{name}"
    );
    let mut out = Vec::new();
    while let Some(packet) = reader.next_packet() {
        out.push(packet.expect("pcap record").data.into_owned());
    }
    out
}

/// The packets of `packets` with opcode `op`, in order.
fn with_opcode<'a, 'p>(
    packets: &'a [(usize, RocePacket<'p>)],
    op: Opcode,
) -> impl Iterator<Item = &'a RocePacket<'p>> {
    packets
        .iter()
        .filter(move |(_, p)| p.repr.bth.opcode == op)
        .map(|(_, p)| p)
}

/// The RoCE frames of a pcap that pass every check, with their 1-based frame numbers (the one
/// corrupted frame is accounted for by `every_roce_frame_verifies_except_...`).
fn roce_frames(frames: &[Vec<u8>]) -> Vec<(usize, RocePacket<'_>)> {
    frames
        .iter()
        .enumerate()
        .filter_map(|(i, f)| match parse_frame(f) {
            Ok(p) => Some((i + 1, p)),
            Err(WireError::NotRoce | WireError::BadIcrc { .. }) => None,
            Err(e) => panic!("frame {} does not parse: {e}", i + 1),
        })
        .collect()
}

/// Runs `check` on each of the `count` RoCE packets of vector `name`, with its frame's bytes.
fn check_each_packet(name: &str, count: usize, check: impl Fn(&[u8], &RocePacket<'_>)) {
    let frames = frames(name);
    let packets = roce_frames(&frames);
    assert_eq!(packets.len(), count, "{name}");
    for (i, p) in &packets {
        check(&frames[i - 1], p);
    }
}

fn opcode_counts(packets: &[(usize, RocePacket<'_>)]) -> BTreeMap<u8, usize> {
    let mut counts = BTreeMap::new();
    for (_, p) in packets {
        *counts.entry(p.repr.bth.opcode.0).or_insert(0) += 1;
    }
    counts
}

fn all_vector_names() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(vectors::DIR)
        .expect("vectors dir")
        .map(|e| {
            e.expect("dir entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|n| n.ends_with(".pcap"))
        .collect();
    names.sort();
    names
}

#[test]
fn every_roce_frame_verifies_except_the_deliberately_corrupted_one() {
    let expected = vectors::COUNTS;
    let names = all_vector_names();
    assert_eq!(
        names,
        expected.iter().map(|e| e.0.to_string()).collect::<Vec<_>>()
    );
    let mut bad_icrc = Vec::new();
    for (name, total, roce) in expected {
        let frames = frames(name);
        assert_eq!(frames.len(), total, "{name}");
        let mut roce_seen = 0;
        for (i, frame) in frames.iter().enumerate() {
            match parse_frame_unverified(frame) {
                Err(WireError::NotRoce) => continue,
                Err(e) => panic!("{name} frame {}: {e}", i + 1),
                Ok(_) => roce_seen += 1,
            }
            match parse_frame(frame) {
                Ok(p) => assert_eq!(icrc::verify_icrc(ip_packet(frame)), Ok(p.icrc)),
                Err(WireError::BadIcrc { .. }) => bad_icrc.push((name, i + 1)),
                Err(e) => panic!("{name} frame {}: {e}", i + 1),
            }
        }
        assert_eq!(roce_seen, roce, "{name}");
    }
    assert_eq!(bad_icrc, vec![(vectors::CORRUPTED, 14)]);
}

#[test]
fn opcode_counts_match_the_readme() {
    let table: [(&str, &[(u8, usize)]); 10] = [
        ("rc_pingpong_send_64.pcap", &[(4, 10), (17, 10)]),
        (
            "rc_pingpong_send_8192_mtu1024.pcap",
            &[(0, 6), (1, 36), (2, 6), (17, 6)],
        ),
        ("ib_write_bw_64.pcap", &[(10, 5), (17, 5)]),
        (
            "ib_write_bw_8192_mtu1024.pcap",
            &[(6, 5), (7, 30), (8, 5), (17, 5)],
        ),
        (
            "ib_read_bw_8192_mtu1024.pcap",
            &[(12, 5), (13, 5), (14, 30), (15, 5)],
        ),
        (
            "verbs_imm_atomic.pcap",
            &[
                (0, 1),
                (1, 6),
                (3, 1),
                (5, 1),
                (6, 1),
                (7, 6),
                (9, 1),
                (11, 1),
                (17, 4),
                (18, 2),
                (19, 1),
                (20, 1),
            ],
        ),
        (
            "verbs_ce_marked_to_a.pcap",
            &[(5, 1), (6, 1), (8, 1), (10, 1), (17, 3)],
        ),
        ("v6_rc_pingpong_64.pcap", &[(4, 10), (17, 10)]),
        (
            "extra_rc_pingpong_1003_mtu256.pcap",
            &[(0, 6), (1, 12), (2, 6), (17, 6)],
        ),
        // The corrupted WRITE (frame 14) is not counted: it fails the ICRC.
        (
            "host_peer_to_guest.pcap",
            &[(4, 1), (5, 1), (10, 4), (12, 1), (16, 1), (17, 6)],
        ),
    ];
    for (name, counts) in table {
        let frames = frames(name);
        let packets: Vec<_> = frames
            .iter()
            .enumerate()
            .filter_map(|(i, f)| parse_frame(f).ok().map(|p| (i + 1, p)))
            .collect();
        let want: BTreeMap<u8, usize> = counts.iter().copied().collect();
        assert_eq!(opcode_counts(&packets), want, "{name}");
    }
}

#[test]
fn reemitting_every_parsed_frame_gives_identical_bytes() {
    for name in all_vector_names() {
        for (i, frame) in frames(&name).iter().enumerate() {
            // Unverified: the corrupted frame must re-emit with the *correct* ICRC, checked below.
            let Ok(packet) = parse_frame_unverified(frame) else {
                continue;
            };
            let mut buf = vec![0xa5u8; packet.repr.frame_len() + 3];
            let n = packet.repr.emit(packet.payload, &mut buf).expect("emit");
            assert_eq!(n, packet.repr.frame_len());
            let icrc_at = n - icrc::ICRC_LEN;
            assert_eq!(buf[..icrc_at], frame[..icrc_at], "{name} frame {}", i + 1);
            if parse_frame(frame).is_ok() {
                assert_eq!(buf[..n], frame[..], "{name} frame {}", i + 1);
            } else {
                assert_ne!(buf[icrc_at..n], frame[icrc_at..], "{name} frame {}", i + 1);
                assert!(parse_frame(&buf[..n]).is_ok());
            }
            assert_eq!(&buf[n..], &[0xa5; 3]);
        }
    }
}

#[test]
fn pingpong_64_is_send_only_and_ack_on_qpn_17() {
    let frames = frames("rc_pingpong_send_64.pcap");
    for (_, p) in roce_frames(&frames) {
        let r = &p.repr;
        assert_eq!(r.bth.dest_qpn, 17);
        assert_eq!(r.bth.pkey, 0xffff);
        assert_eq!(r.bth.tver, 0);
        assert_eq!(r.ip.ecn(), Ecn::NotEct);
        assert!(r.udp_src_port >= 49152);
        match r.bth.opcode {
            Opcode::RC_SEND_ONLY => {
                assert_eq!(p.payload.len(), 64);
                assert!(r.bth.ack_req);
            }
            Opcode::RC_ACKNOWLEDGE => {
                assert_eq!(p.payload.len(), 0);
                assert_eq!(r.ext.aeth.map(|a| a.syndrome), Some(Syndrome::ack()));
            }
            other => panic!("unexpected {other}"),
        }
        let IpRepr::V4(ip) = r.ip else {
            panic!("IPv4 expected")
        };
        assert!(ip.dont_frag);
        assert_eq!(ip.ttl, 64);
    }
}

#[test]
fn mtu256_send_of_1003_bytes_ends_with_235_bytes_and_pad_count_1() {
    let frames = frames("extra_rc_pingpong_1003_mtu256.pcap");
    let packets = roce_frames(&frames);
    let mut message = 0;
    for (_, p) in &packets {
        let op = p.repr.bth.opcode;
        if op.is_send() {
            message += p.payload.len();
        }
        match op {
            Opcode::RC_SEND_FIRST | Opcode::RC_SEND_MIDDLE => {
                assert_eq!((p.payload.len(), p.repr.bth.pad_count), (256, 0));
            }
            Opcode::RC_SEND_LAST => {
                assert_eq!((p.payload.len(), p.repr.bth.pad_count), (235, 1));
                assert_eq!(message, 1003);
                message = 0;
            }
            _ => {}
        }
    }
}

#[test]
fn read_requests_advance_the_psn_by_the_number_of_response_packets() {
    let frames = frames("ib_read_bw_8192_mtu1024.pcap");
    let packets = roce_frames(&frames);
    let requests: Vec<_> = with_opcode(&packets, Opcode::RC_RDMA_READ_REQUEST).collect();
    assert_eq!(requests.len(), 5);
    for pair in requests.windows(2) {
        assert_eq!(pair[1].repr.bth.psn, pair[0].repr.bth.psn.add(8));
    }
    for req in &requests {
        assert_eq!(req.repr.ext.reth.map(|r| r.dma_len), Some(8192));
        // The responses to this request: First, 6 Middle, Last on consecutive PSNs.
        let first = req.repr.bth.psn;
        for k in 0..8u32 {
            let (_, resp) = packets
                .iter()
                .find(|(_, p)| {
                    p.repr.bth.opcode.is_read_response() && p.repr.bth.psn == first.add(k)
                })
                .expect("response");
            let (want, has_aeth) = match k {
                0 => (Opcode::RC_RDMA_READ_RESPONSE_FIRST, true),
                7 => (Opcode::RC_RDMA_READ_RESPONSE_LAST, true),
                _ => (Opcode::RC_RDMA_READ_RESPONSE_MIDDLE, false),
            };
            assert_eq!(resp.repr.bth.opcode, want);
            assert_eq!(resp.repr.ext.aeth.is_some(), has_aeth);
            assert_eq!(resp.payload.len(), 1024);
        }
    }
}

#[test]
fn host_peer_exchange_has_psn_nak_duplicate_ack_and_rnr_nak() {
    let frames = frames("host_peer_to_guest.pcap");
    let packets = roce_frames(&frames);
    let acks: Vec<_> = with_opcode(&packets, Opcode::RC_ACKNOWLEDGE)
        .map(|p| (p.repr.bth.psn, p.repr.ext.aeth.expect("AETH")))
        .collect();
    let syndromes: Vec<u8> = acks.iter().map(|(_, a)| a.syndrome.to_byte()).collect();
    assert_eq!(syndromes, vec![0x1f, 0x1f, 0x60, 0x1f, 0x1f, 0x2c]);
    // The NAK carries the PSN the responder expects: the one after the READ (5441231).
    let (nak_psn, nak) = acks[2];
    assert_eq!(nak.syndrome, Syndrome::Nak(NakCode::PsnSequenceError));
    assert_eq!(nak_psn, Psn::new(5_441_232));
    // The duplicate WRITE (old PSN) is answered with PSN one less than expected, MSN unchanged.
    let (dup_psn, dup) = acks[3];
    assert_eq!(dup_psn, Psn::new(5_441_230));
    assert_eq!(dup.msn, nak.msn);
    let (_, rnr) = acks[5];
    assert_eq!(rnr.syndrome, Syndrome::RnrNak { timer: 12 });
    assert_eq!(wire::aeth::rnr_timer_micros(12), 640);
    // The corrupted frame is a WRITE Only that only the unverified parser accepts.
    let corrupted = parse_frame_unverified(&frames[13]).expect("structurally fine");
    assert_eq!(corrupted.repr.bth.opcode, Opcode::RC_RDMA_WRITE_ONLY);
    assert!(
        matches!(parse_frame(&frames[13]), Err(WireError::BadIcrc { found, .. }) if found == corrupted.icrc)
    );
}

#[test]
fn ce_marked_requests_verify_and_acks_are_ect0() {
    check_each_packet("verbs_ce_marked_to_a.pcap", 7, |_, p| {
        let want = if p.repr.bth.opcode == Opcode::RC_ACKNOWLEDGE {
            Ecn::Ect0
        } else {
            Ecn::Ce
        };
        assert_eq!(p.repr.ip.ecn(), want, "{}", p.repr.bth.opcode);
        assert_eq!(p.repr.ip.dscp(), 0);
    });
}

#[test]
fn imm_and_atomic_fields_decode() {
    let frames = frames("verbs_imm_atomic.pcap");
    let packets = roce_frames(&frames);
    let find = |op: Opcode| {
        packets
            .iter()
            .filter(move |(_, p)| p.repr.bth.opcode == op)
            .map(|(_, p)| p.repr.ext)
    };
    let fetch_add = find(Opcode::RC_FETCH_ADD).next().and_then(|e| e.atomic_eth);
    assert_eq!(fetch_add.map(|a| a.swap_add), Some(5));
    let cmp_swap = find(Opcode::RC_COMPARE_SWAP)
        .next()
        .and_then(|e| e.atomic_eth);
    assert_eq!(cmp_swap.map(|a| (a.compare, a.swap_add)), Some((105, 7)));
    let origs: Vec<u64> = find(Opcode::RC_ATOMIC_ACKNOWLEDGE)
        .filter_map(|e| e.atomic_ack_eth.map(|a| a.orig))
        .collect();
    assert_eq!(origs, vec![100, 105]);
    for op in [
        Opcode::RC_SEND_ONLY_WITH_IMMEDIATE,
        Opcode::RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE,
        Opcode::RC_RDMA_WRITE_LAST_WITH_IMMEDIATE,
        Opcode::RC_SEND_LAST_WITH_IMMEDIATE,
    ] {
        assert_eq!(find(op).filter(|e| e.immdt.is_some()).count(), 1, "{op}");
    }
}

#[test]
fn v6_pingpong_uses_hop_limit_64_flow_label_0_and_udp_checksum_0() {
    check_each_packet("v6_rc_pingpong_64.pcap", 20, |frame, p| {
        let IpRepr::V6(ip) = p.repr.ip else {
            panic!("IPv6 expected")
        };
        assert_eq!((ip.hop_limit, ip.flow_label), (64, 0));
        // UDP checksum: bytes 6..8 of the UDP header after a 14-byte Ethernet + 40-byte IPv6.
        assert_eq!(frame[14 + 40 + 6..14 + 40 + 8], [0, 0]);
    });
}

// ---------------------------------------------------------------------------------------------
// ICRC coverage: single-bit flips.

/// The IP packet of an untagged frame (header through ICRC).
fn ip_packet(frame: &[u8]) -> &[u8] {
    let packet = parse_frame_unverified(frame).expect("RoCE frame");
    let ip_len = packet.repr.ip.buffer_len() + packet.repr.ip.payload_len();
    &frame[14..14 + ip_len]
}

fn first_frame_with(name: &str, op: Opcode) -> Vec<u8> {
    frames(name)
        .into_iter()
        .find(|f| parse_frame(f).is_ok_and(|p| p.repr.bth.opcode == op))
        .expect("frame with opcode")
}

/// Byte ranges (within the IP packet) the ICRC must protect and must ignore.
fn regions(ip_version: u8, ip_packet_len: usize) -> (Vec<usize>, Vec<(usize, u8)>) {
    let (ip_len, masked_ip): (usize, Vec<(usize, u8)>) = if ip_version == 4 {
        (20, vec![(1, 0xff), (8, 0xff), (10, 0xff), (11, 0xff)])
    } else {
        (
            40,
            vec![(0, 0x0f), (1, 0xff), (2, 0xff), (3, 0xff), (7, 0xff)],
        )
    };
    let udp = ip_len;
    let bth = udp + 8;
    let mut masked = masked_ip;
    masked.extend([(udp + 6, 0xff), (udp + 7, 0xff), (bth + 4, 0xff)]);
    let protected = (0..ip_packet_len)
        .filter(|&b| b != 0 && !masked.iter().any(|&(m, bits)| m == b && bits == 0xff))
        .collect();
    (protected, masked)
}

/// `ip` with one bit flipped, for each set bit of `bits` in byte `byte`: `(bit, packet)`.
fn flips(ip: &[u8], byte: usize, bits: u8) -> impl Iterator<Item = (u32, Vec<u8>)> + '_ {
    (0..8)
        .filter(move |bit| bits & (1 << bit) != 0)
        .map(move |bit| {
            let mut flipped = ip.to_vec();
            flipped[byte] ^= 1 << bit;
            (bit, flipped)
        })
}

fn assert_icrc_covers_exactly_the_invariant_fields(frame: &[u8]) {
    let ip = ip_packet(frame).to_vec();
    assert!(icrc::verify_icrc(&ip).is_ok());
    let (protected, masked) = regions(ip[0] >> 4, ip.len());
    for &byte in &protected {
        // Byte 0 (version/IHL) is left out: changing it changes how the packet is read.
        let bits = masked.iter().find(|m| m.0 == byte).map_or(0xff, |m| !m.1);
        for (bit, flipped) in flips(&ip, byte, bits) {
            assert!(
                matches!(icrc::verify_icrc(&flipped), Err(WireError::BadIcrc { .. })),
                "flip of byte {byte} bit {bit} went unnoticed"
            );
        }
    }
    for (byte, bits) in masked {
        for (bit, flipped) in flips(&ip, byte, bits) {
            assert!(
                icrc::verify_icrc(&flipped).is_ok(),
                "masked byte {byte} bit {bit} changed the ICRC"
            );
        }
    }
}

#[test]
fn icrc_covers_every_invariant_bit_of_an_ipv4_write_and_ignores_masked_fields() {
    let frame = first_frame_with("ib_write_bw_64.pcap", Opcode::RC_RDMA_WRITE_ONLY);
    assert_icrc_covers_exactly_the_invariant_fields(&frame);
}

#[test]
fn icrc_covers_every_invariant_bit_of_an_ipv4_atomic_ack() {
    let frame = first_frame_with("verbs_imm_atomic.pcap", Opcode::RC_ATOMIC_ACKNOWLEDGE);
    assert_icrc_covers_exactly_the_invariant_fields(&frame);
}

#[test]
fn icrc_covers_every_invariant_bit_of_an_ipv6_send() {
    let frame = first_frame_with("v6_rc_pingpong_64.pcap", Opcode::RC_SEND_ONLY);
    assert_icrc_covers_exactly_the_invariant_fields(&frame);
}

#[test]
fn ecn_and_becn_marking_keeps_the_whole_frame_valid() {
    for (name, op) in [
        ("ib_write_bw_64.pcap", Opcode::RC_RDMA_WRITE_ONLY),
        ("v6_rc_pingpong_64.pcap", Opcode::RC_SEND_ONLY),
    ] {
        let mut frame = first_frame_with(name, op);
        assert_eq!(wire::set_frame_ecn(&mut frame, Ecn::Ce), Ok(Ecn::NotEct));
        let ip_len = if name.starts_with("v6") { 40 } else { 20 };
        frame[14 + ip_len + 8 + 4] |= 0xc0; // FECN and BECN
        let packet = parse_frame(&frame).expect("still valid");
        assert_eq!(packet.repr.ip.ecn(), Ecn::Ce);
        assert!(packet.repr.bth.fecn && packet.repr.bth.becn);
    }
}

#[test]
fn ipv4_ttl_change_without_checksum_fix_is_bad_checksum_but_icrc_still_verifies() {
    let mut frame = first_frame_with("ib_write_bw_64.pcap", Opcode::RC_RDMA_WRITE_ONLY);
    frame[14 + 8] -= 1;
    assert_eq!(parse_frame(&frame).map(|_| ()), Err(WireError::BadChecksum));
    assert!(icrc::verify_icrc(&frame[14..]).is_ok());
}

// ---------------------------------------------------------------------------------------------
// An independent ICRC: bitwise CRC-32 over a manually masked copy, straight from the spec.

fn reference_crc32(data: &[u8]) -> u32 {
    let mut crc = 0xffff_ffffu32;
    for &byte in data {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xedb8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// IBTA A17.8: 8 bytes of ones, then the masked IP/UDP/BTH headers and the rest; LSB first.
fn reference_icrc(ip_packet_without_icrc: &[u8]) -> u32 {
    let mut masked = vec![0xffu8; 8];
    masked.extend_from_slice(ip_packet_without_icrc);
    let ip = 8;
    let ip_len = if ip_packet_without_icrc[0] >> 4 == 6 {
        masked[ip] |= 0x0f; // traffic class, high nibble
        masked[ip + 1] = 0xff; // traffic class low nibble + flow label
        masked[ip + 2] = 0xff;
        masked[ip + 3] = 0xff;
        masked[ip + 7] = 0xff; // hop limit
        40
    } else {
        masked[ip + 1] = 0xff; // TOS
        masked[ip + 8] = 0xff; // TTL
        masked[ip + 10] = 0xff; // checksum
        masked[ip + 11] = 0xff;
        20
    };
    masked[ip + ip_len + 6] = 0xff; // UDP checksum
    masked[ip + ip_len + 7] = 0xff;
    masked[ip + ip_len + 8 + 4] = 0xff; // BTH FECN/BECN/resv6a
    reference_crc32(&masked)
}

#[test]
fn reference_crc32_is_the_zlib_crc() {
    assert_eq!(reference_crc32(b"123456789"), 0xcbf4_3926);
}

#[test]
fn every_valid_vector_matches_the_reference_icrc() {
    for name in all_vector_names() {
        for frame in frames(&name) {
            let Ok(packet) = parse_frame(&frame) else {
                continue;
            };
            let ip = ip_packet(&frame);
            let (covered, _) = ip.split_at(ip.len() - 4);
            assert_eq!(reference_icrc(covered), packet.icrc, "{name}");
        }
    }
}

#[test]
fn emitted_ipv6_frame_with_ecn_and_flow_label_matches_the_reference_icrc() {
    use roce_proto::wire::{
        bth, ethernet, ipv6, reth, EtherType, EthernetAddress, ExtRepr, RoceRepr,
    };
    let repr = RoceRepr {
        eth: ethernet::Repr {
            dst: EthernetAddress([0x52, 0x54, 0, 0x12, 0, 0x11]),
            src: EthernetAddress([0x52, 0x54, 0, 0x12, 0, 0x12]),
            vlan: None,
            ethertype: EtherType::Ipv6,
        },
        ip: IpRepr::V6(ipv6::Repr {
            src: "2001:db8::12".parse().unwrap(),
            dst: "2001:db8::11".parse().unwrap(),
            dscp: 26,
            ecn: Ecn::Ect0,
            flow_label: 0x5_a5a5,
            hop_limit: 17,
            next_header: 17,
            payload_len: 0,
        }),
        udp_src_port: 0xc123,
        bth: bth::Repr {
            opcode: Opcode::RC_RDMA_WRITE_ONLY,
            fecn: true,
            dest_qpn: 0x12_3456,
            ack_req: true,
            psn: Psn::new(0xff_fffe),
            ..bth::Repr::default()
        },
        ext: ExtRepr {
            reth: Some(reth::Repr {
                va: 0x1000,
                rkey: 0xabcd,
                dma_len: 13,
            }),
            ..ExtRepr::default()
        },
        payload_len: 13,
    };
    let payload: Vec<u8> = (1..=13).collect();
    let mut buf = [0u8; 256];
    let n = repr.emit(&payload, &mut buf).expect("emit");
    let frame = &buf[..n];
    let parsed = parse_frame(frame).expect("own frame verifies");
    assert_eq!(parsed.payload, &payload[..]);
    assert_eq!(parsed.repr.bth.pad_count, 3);
    let ip = &frame[14..];
    let (covered, trailer) = ip.split_at(ip.len() - 4);
    let reference = reference_icrc(covered);
    assert_eq!(trailer, reference.to_le_bytes());
    assert_eq!(parsed.icrc, reference);
}

#[test]
fn explain_tells_the_story_of_the_host_peer_naks_and_ce_marks() {
    use roce_proto::wire::pretty::{explain_frame, summary};
    let host = frames("host_peer_to_guest.pcap");
    let texts: Vec<String> = host.iter().filter_map(|f| explain_frame(f).ok()).collect();
    let all = texts.join("\n");
    assert!(
        all.contains(
            "AETH      syndrome       0x60                 0x60 = NAK: PSN sequence error"
        ),
        "{all}"
    );
    assert!(all.contains("0x2c = RNR NAK, retry after 0.64 ms"), "{all}");
    assert_eq!(all.matches("invariant CRC: WRONG").count(), 1);
    let ce = frames("verbs_ce_marked_to_a.pcap");
    let (_, write) = roce_frames(&ce).into_iter().next().expect("a RoCE frame");
    assert_eq!(
        summary(&write),
        "198.18.0.12 > 198.18.0.11 RC RDMA WRITE Only (10) QPN 28 PSN 5011363 len 64 AckReq ECN CE"
    );
    let text = explain_frame(&ce[7]).expect("frame 8 explains");
    assert!(
        text.contains("0b11 = CE (congestion experienced)"),
        "{text}"
    );
    println!("{text}");
}
