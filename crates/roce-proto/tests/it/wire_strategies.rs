//! Proptest strategies for whole RoCEv2 frames, shared by the wire property tests: every opcode
//! of the table, both IP versions, with and without VLAN, payloads 0..=4096.

use std::net::{Ipv4Addr, Ipv6Addr};

use proptest::prelude::*;
use roce_proto::psn::{Msn, Psn};
use roce_proto::wire::opcode::OPCODES;
use roce_proto::wire::{
    aeth, atomic_ack_eth, atomic_eth, bth, deth, ethernet, ipv4, ipv6, reth, Ecn, EtherType,
    EthernetAddress, ExtRepr, IpRepr, RoceRepr, VlanTag,
};

/// 512 cases from a printed seed (replay with WIRE_PROPTEST_SEED).
pub fn config() -> proptest::test_runner::Config {
    roce_testkit::proptest_seed::config("wire", "WIRE_PROPTEST_SEED", 512)
}

pub fn ecn() -> impl Strategy<Value = Ecn> {
    (0u8..4).prop_map(Ecn::from_bits)
}

pub fn eth() -> impl Strategy<Value = ethernet::Repr> {
    let vlan = proptest::option::of(
        (0u8..8, any::<bool>(), 0u16..4096).prop_map(|(pcp, dei, vid)| VlanTag { pcp, dei, vid }),
    );
    (any::<[u8; 6]>(), any::<[u8; 6]>(), vlan).prop_map(|(dst, src, vlan)| ethernet::Repr {
        dst: EthernetAddress(dst),
        src: EthernetAddress(src),
        vlan,
        ethertype: EtherType::Ipv4,
    })
}

pub fn ip() -> impl Strategy<Value = IpRepr> {
    let v4 = (
        any::<u32>(),
        any::<u32>(),
        0u8..64,
        ecn(),
        any::<u8>(),
        any::<u16>(),
        any::<bool>(),
    )
        .prop_map(|(src, dst, dscp, ecn, ttl, ident, dont_frag)| {
            IpRepr::V4(ipv4::Repr {
                src: Ipv4Addr::from(src),
                dst: Ipv4Addr::from(dst),
                dscp,
                ecn,
                ttl,
                ident,
                dont_frag,
                protocol: 17,
                payload_len: 0,
            })
        });
    let v6 = (
        any::<u128>(),
        any::<u128>(),
        0u8..64,
        ecn(),
        0u32..(1 << 20),
        any::<u8>(),
    )
        .prop_map(|(src, dst, dscp, ecn, flow_label, hop_limit)| {
            IpRepr::V6(ipv6::Repr {
                src: Ipv6Addr::from(src),
                dst: Ipv6Addr::from(dst),
                dscp,
                ecn,
                flow_label,
                hop_limit,
                next_header: 17,
                payload_len: 0,
            })
        });
    prop_oneof![v4, v6]
}

pub fn bth_fields() -> impl Strategy<Value = bth::Repr> {
    (
        any::<bool>(),
        any::<bool>(),
        any::<u16>(),
        any::<bool>(),
        any::<bool>(),
        0u32..(1 << 24),
        any::<bool>(),
        0u32..(1 << 24),
    )
        .prop_map(
            |(solicited, migreq, pkey, fecn, becn, dest_qpn, ack_req, psn)| bth::Repr {
                solicited,
                migreq,
                pkey,
                fecn,
                becn,
                dest_qpn,
                ack_req,
                psn: Psn::new(psn),
                ..bth::Repr::default()
            },
        )
}

/// Values for every extension header; the opcode decides which are kept.
pub fn ext_values() -> impl Strategy<Value = ExtRepr> {
    (
        (any::<u32>(), 0u32..(1 << 24)),
        (any::<u64>(), any::<u32>(), any::<u32>()),
        (any::<u64>(), any::<u32>(), any::<u64>(), any::<u64>()),
        (any::<u8>(), 0u32..(1 << 24)),
        any::<u64>(),
        any::<u32>(),
        any::<u32>(),
    )
        .prop_map(|(d, r, a, ae, orig, imm, inv)| ExtRepr {
            deth: Some(deth::Repr {
                qkey: d.0,
                src_qpn: d.1,
            }),
            reth: Some(reth::Repr {
                va: r.0,
                rkey: r.1,
                dma_len: r.2,
            }),
            atomic_eth: Some(atomic_eth::Repr {
                va: a.0,
                rkey: a.1,
                swap_add: a.2,
                compare: a.3,
            }),
            aeth: Some(aeth::Repr {
                syndrome: aeth::Syndrome::from_byte(ae.0),
                msn: Msn::new(ae.1),
            }),
            atomic_ack_eth: Some(atomic_ack_eth::Repr { orig }),
            immdt: Some(imm),
            ieth: Some(inv),
        })
}

/// A valid repr for a random opcode of the table, and its payload.
pub fn frame_repr() -> impl Strategy<Value = (RoceRepr, Vec<u8>)> {
    (
        0..OPCODES.len(),
        eth(),
        ip(),
        any::<u16>(),
        bth_fields(),
        ext_values(),
        // A third of the lengths fill a path MTU, pad included, and a third are short: the
        // emitter combines the CRCs of headers and payload in both cases.
        prop_oneof![
            0usize..=4096,
            (0usize..5, 0usize..4).prop_map(|(k, short)| (256 << k) - short),
            0usize..=70,
        ],
        any::<u8>(),
    )
        .prop_map(|(index, eth, ip, udp_src_port, mut bth, all, len, seed)| {
            let info = &OPCODES[index];
            bth.opcode = info.opcode;
            let ext = ExtRepr {
                deth: all.deth.filter(|_| info.deth()),
                reth: all.reth.filter(|_| info.reth()),
                atomic_eth: all.atomic_eth.filter(|_| info.atomic_eth()),
                aeth: all.aeth.filter(|_| info.aeth()),
                atomic_ack_eth: all.atomic_ack_eth.filter(|_| info.atomic_ack_eth()),
                immdt: all.immdt.filter(|_| info.immdt()),
                ieth: all.ieth.filter(|_| info.ieth()),
            };
            let payload_len = if info.has_payload { len } else { 0 };
            let payload: Vec<u8> = (0..payload_len)
                .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
                .collect();
            let mut repr = RoceRepr {
                eth,
                ip,
                udp_src_port,
                bth,
                ext,
                payload_len,
            };
            repr.fill_lengths();
            (repr, payload)
        })
}

pub fn emit(repr: &RoceRepr, payload: &[u8]) -> Vec<u8> {
    let mut buf = vec![0xa5u8; repr.frame_len()];
    let n = repr.emit(payload, &mut buf).expect("emit");
    assert_eq!(n, buf.len());
    buf
}
