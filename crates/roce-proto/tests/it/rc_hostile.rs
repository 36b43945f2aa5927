//! A hostile peer against one endpoint, frame by frame (valid ICRCs, every byte chosen by the
//! peer): regions deregistered under a running operation, SEND/READ sources that went away, SEND
//! with Invalidate, CNPs from strangers, floods that would grow the responder's queue, and rkeys
//! that come back. Each test is a regression test of issue 15.

use roce_testkit::rc;

use std::net::Ipv4Addr;

use rc::script::*;
use roce_proto::connect::RcOptions;
use roce_proto::psn::Psn;
use roce_proto::qp::MAX_QUEUED_RESPONSES;
use roce_proto::verbs::{AccessFlags, QpState, SendWr, Sge, WcOpcode, WcStatus, WrOpcode};
use roce_proto::wire::opcode::Opcode;
use roce_proto::wire::{
    atomic_eth, ethernet, reth, Ecn, EtherType, EthernetAddress, ExtRepr, IpRepr, RoceRepr,
};

fn opts() -> RcOptions {
    mtu256()
}

fn fill(s: &mut Script, mr: &roce_proto::mr::MrInfo, byte: u8) {
    s.ep.mr_mut(mr.lkey).unwrap().bytes_mut().fill(byte);
}

/// A remotely readable region of `size` bytes full of 0x11, and a READ (PSN 100) of its first
/// `len` bytes already sent to the endpoint.
fn read_requested(size: usize, len: u32) -> (Script, roce_proto::mr::MrInfo) {
    let mut s = Script::new(&opts());
    let a = s.mr(size, AccessFlags::REMOTE_READ);
    fill(&mut s, &a, 0x11);
    send!(
        s,
        Pkt::new(Opcode::RC_RDMA_READ_REQUEST, 100)
            .ack_req()
            .ext(reth(&a, 0, len))
    );
    (s, a)
}

/// A 64-byte local region full of 0x77, and an SGE naming all of it.
fn source(s: &mut Script) -> (roce_proto::mr::MrInfo, Sge) {
    let src = s.mr(64, LOCAL_ONLY);
    fill(s, &src, 0x77);
    let sge = Sge {
        addr: src.addr,
        length: 64,
        lkey: src.lkey,
    };
    (src, sge)
}

fn state(s: &Script) -> QpState {
    s.ep.qp(s.qpn).unwrap().state()
}

const LOCAL_ONLY: AccessFlags = AccessFlags::LOCAL_WRITE;

// ---- 1: a deregistered region's slot, taken by a new region, gets nothing of an old operation

#[test]
fn the_rest_of_a_write_never_lands_in_a_region_that_took_the_deregistered_slot() {
    let mut s = Script::new(&opts());
    let a = s.mr(1024, rc::ALL_ACCESS);
    send!(
        s,
        Pkt::new(Opcode::RC_RDMA_WRITE_FIRST, 100)
            .ext(reth(&a, 0, 512))
            .payload(&[0xaa; 256])
    );
    s.ep.dereg_mr(a.lkey).unwrap();
    let b = s.mr(1024, LOCAL_ONLY);
    assert_eq!(b.lkey >> 8, a.lkey >> 8, "the new region took the slot");
    send!(
        s,
        Pkt::new(Opcode::RC_RDMA_WRITE_LAST, 101)
            .ack_req()
            .payload(&[0xbb; 256])
    );
    assert!(s.ep.mr(b.lkey).unwrap().bytes().iter().all(|&x| x == 0));
    let n = recv!(s);
    assert_eq!((n.psn, n.aeth()), (Psn::new(101), Some((NAK_ACCESS, 0))));
    recv!(s, None);
    assert_eq!(state(&s), QpState::Err);
    assert_eq!(s.ep.counters().qp.resp_remote_access_errors, 1);
}

#[test]
fn queued_read_responses_never_carry_a_region_that_took_the_deregistered_slot() {
    let (mut s, a) = read_requested(1024, 768);
    let first = recv!(s);
    assert_eq!(
        (first.opcode, first.payload),
        (Opcode::RC_RDMA_READ_RESPONSE_FIRST, vec![0x11; 256])
    );
    s.ep.dereg_mr(a.lkey).unwrap();
    let secret = s.mr(1024, LOCAL_ONLY);
    assert_eq!(
        secret.lkey >> 8,
        a.lkey >> 8,
        "the new region took the slot"
    );
    fill(&mut s, &secret, 0x5e);
    let rest = s.recv_all();
    assert!(
        rest.iter().all(|p| !p.payload.contains(&0x5e)),
        "no byte of the new region goes out"
    );
    let shape: Vec<_> = rest.iter().map(|p| (p.opcode, p.psn, p.aeth())).collect();
    assert_eq!(
        shape,
        vec![(Opcode::RC_ACKNOWLEDGE, Psn::new(101), Some((NAK_ACCESS, 1)))]
    );
    assert_eq!(state(&s), QpState::Err);
}

// ---- 2: sources that went away are errors, not zeros

#[test]
fn a_send_whose_source_was_deregistered_completes_with_a_local_protection_error() {
    let mut s = Script::new(&opts());
    let (src, sge) = source(&mut s);
    s.ep.post_send(s.qpn, SendWr::new(9, WrOpcode::Send, sge))
        .unwrap();
    s.ep.dereg_mr(src.lkey).unwrap();
    recv!(s, None);
    let wc = s.completions();
    assert_eq!(
        wc.iter()
            .map(|w| (w.wr_id, w.status, w.opcode))
            .collect::<Vec<_>>(),
        vec![(9, WcStatus::LocProtErr, WcOpcode::Send)]
    );
    assert_eq!(state(&s), QpState::Err);
}

#[test]
fn a_retransmission_whose_source_was_deregistered_is_not_sent_as_zeros() {
    let mut s = Script::new(&opts());
    let (src, sge) = source(&mut s);
    let write = WrOpcode::RdmaWrite {
        remote_addr: 0x1000,
        rkey: 0x1234,
    };
    s.ep.post_send(s.qpn, SendWr::new(3, write, sge)).unwrap();
    let p = recv!(s);
    assert_eq!(
        (p.opcode, p.payload),
        (Opcode::RC_RDMA_WRITE_ONLY, vec![0x77; 64])
    );
    s.ep.dereg_mr(src.lkey).unwrap();
    // The peer asks for it again (sequence NAK for the WRITE's PSN).
    send!(s, ack(500, 0x60, 0));
    recv!(s, None);
    let wc = s.completions();
    assert_eq!(
        wc.iter().map(|w| (w.wr_id, w.status)).collect::<Vec<_>>(),
        vec![(3, WcStatus::LocProtErr)]
    );
}

#[test]
fn a_read_of_a_deregistered_region_is_nakked_not_answered_with_zeros() {
    let (mut s, a) = read_requested(256, 64);
    s.ep.dereg_mr(a.lkey).unwrap();
    let r = s.recv_all();
    let shape: Vec<_> = r
        .iter()
        .map(|p| (p.opcode, p.psn, p.aeth(), p.payload.len()))
        .collect();
    assert_eq!(
        shape,
        vec![(
            Opcode::RC_ACKNOWLEDGE,
            Psn::new(100),
            Some((NAK_ACCESS, 1)),
            0
        )]
    );
    assert_eq!(state(&s), QpState::Err);
}

// ---- 3: SEND with Invalidate

fn send_with_invalidate(psn: u32, rkey: u32) -> Pkt {
    Pkt::new(Opcode::RC_SEND_ONLY_WITH_INVALIDATE, psn)
        .ack_req()
        .ext(ExtRepr {
            ieth: Some(rkey),
            ..Default::default()
        })
        .payload(b"done")
}

#[test]
fn send_with_invalidate_invalidates_the_named_rkey() {
    let mut s = Script::new(&opts());
    let target = s.mr(64, rc::ALL_ACCESS);
    let rx = s.mr(64, LOCAL_ONLY);
    s.post_recv(1, &rx, 64);
    send!(s, send_with_invalidate(100, target.rkey));
    assert_eq!(recv!(s).aeth(), Some((ACK, 1)));
    let wc = s.completions();
    assert_eq!(
        wc.iter()
            .map(|w| (w.wr_id, w.status, w.byte_len))
            .collect::<Vec<_>>(),
        vec![(1, WcStatus::Success, 4)]
    );
    send!(s, write_only(101, &target, b"late"));
    let n = recv!(s);
    assert_eq!((n.psn, n.aeth()), (Psn::new(101), Some((NAK_ACCESS, 1))));
    assert_eq!(&s.ep.mr(target.lkey).unwrap().bytes()[..4], &[0; 4]);
}

#[test]
fn send_with_invalidate_of_a_key_that_names_nothing_is_an_invalid_request() {
    let mut s = Script::new(&opts());
    let rx = s.mr(64, LOCAL_ONLY);
    s.post_recv(1, &rx, 64);
    send!(s, send_with_invalidate(100, 0xdead_be00));
    let n = recv!(s);
    assert_eq!((n.psn, n.aeth()), (Psn::new(100), Some((NAK_INV, 0))));
    let wc = s.completions();
    assert_eq!(
        wc.iter().map(|w| (w.wr_id, w.status)).collect::<Vec<_>>(),
        vec![(1, WcStatus::RemInvReqErr)]
    );
    assert_eq!(state(&s), QpState::Err);
}

// ---- 6: CNPs pass the same checks as every other packet

fn cnp_frame(src: Ipv4Addr, pkey: u16, dest_qpn: u32) -> Vec<u8> {
    let eth = ethernet::Repr {
        dst: rc::MAC_B,
        src: EthernetAddress([2, 0, 0, 0, 0, 0x66]),
        vlan: None,
        ethertype: EtherType::Ipv4,
    };
    let ip = IpRepr::new_roce(src.into(), rc::IP_B.into(), 48, Ecn::NotEct);
    let mut repr = RoceRepr::cnp(eth, ip, 0xc001, dest_qpn);
    repr.bth.pkey = pkey;
    let mut buf = vec![0u8; repr.frame_len()];
    let n = repr.emit(&[], &mut buf).unwrap();
    buf.truncate(n);
    buf
}

#[test]
fn a_cnp_from_a_stranger_or_another_partition_is_not_acted_on() {
    let mut s = Script::new(&opts());
    let stranger = Ipv4Addr::new(198, 18, 0, 66);
    s.ep.handle_frame(s.now, &cnp_frame(stranger, 0xffff, s.qpn));
    s.ep.handle_frame(s.now, &cnp_frame(rc::IP_A, 0x8001, s.qpn));
    let c = s.ep.counters();
    assert_eq!(c.qp.rp_cnp_handled, 0);
    assert_eq!((c.drops.wrong_source, c.drops.bad_pkey), (1, 1));
    // The peer's own CNP is.
    s.ep.handle_frame(s.now, &cnp_frame(rc::IP_A, 0xffff, s.qpn));
    assert_eq!(s.ep.counters().qp.rp_cnp_handled, 1);
}

#[test]
fn a_cnp_to_a_qp_not_yet_connected_is_not_acted_on() {
    let mut s = Script::new(&opts());
    let qpn = s.idle_qp();
    s.ep.handle_frame(s.now, &cnp_frame(rc::IP_A, 0xffff, qpn));
    let c = s.ep.counters();
    assert_eq!((c.qp.rp_cnp_handled, c.drops.bad_state), (0, 1));
}

#[test]
fn in_band_telemetry_from_a_stranger_reaches_no_controller() {
    use roce_proto::wire::int::{self, HopRecord, Repr};
    let mut s = Script::new(&opts());
    let hop = HopRecord {
        ts_ns: 1,
        tx_bytes: 2,
        qlen_bytes: 3,
        rate_bps: 4,
    };
    let echoed = |s: &Script, src: Ipv4Addr| {
        let mut f = s.frame_from(src, &ack(499, ACK, 0), Ecn::NotEct);
        let len = f.len();
        f.resize(len + int::shim_len(1), 0);
        let n = int::insert(&mut f, len, &Repr::echo_of(&[hop], 1)).unwrap();
        f.truncate(n);
        f
    };
    let forged = echoed(&s, Ipv4Addr::new(198, 18, 0, 66));
    s.ep.handle_frame(s.now, &forged);
    assert_eq!(s.ep.int_counters().echoes_received, 0);
    assert_eq!(s.ep.counters().drops.wrong_source, 1);
    let real = echoed(&s, rc::IP_A);
    s.ep.handle_frame(s.now, &real);
    assert_eq!(s.ep.int_counters().echoes_received, 1);
}

// ---- 7: floods do not grow the responder's queue without bound

/// Frames the endpoint has to send now.
fn drain_count(s: &mut Script) -> usize {
    std::iter::from_fn(|| s.recv()).count()
}

#[test]
fn a_flood_of_duplicate_atomics_queues_a_bounded_number_of_responses() {
    let mut s = Script::new(&opts());
    let a = s.mr(64, rc::ALL_ACCESS);
    let fetch_add = Pkt::new(Opcode::RC_FETCH_ADD, 100).ack_req().ext(ExtRepr {
        atomic_eth: Some(atomic_eth::Repr {
            va: a.addr,
            rkey: a.rkey,
            swap_add: 1,
            compare: 0,
        }),
        ..Default::default()
    });
    let frame = s.frame(&fetch_add);
    for _ in 0..100_000 {
        s.ep.handle_frame(s.now, &frame);
    }
    assert_eq!(drain_count(&mut s), MAX_QUEUED_RESPONSES);
    assert_eq!(s.ep.mr(a.lkey).unwrap().bytes()[0], 1, "executed once");
    let c = s.ep.counters().qp;
    assert_eq!(c.duplicate_request, 99_999);
    assert_eq!(c.resp_queue_full, 100_000 - MAX_QUEUED_RESPONSES as u64);
}

#[test]
fn a_flood_of_sends_without_a_receive_queues_a_bounded_number_of_rnr_naks() {
    let mut s = Script::new(&opts());
    let frame = s.frame(&Pkt::new(Opcode::RC_SEND_ONLY, 100).ack_req().payload(b"x"));
    for _ in 0..100_000 {
        s.ep.handle_frame(s.now, &frame);
    }
    assert_eq!(drain_count(&mut s), MAX_QUEUED_RESPONSES);
    let c = s.ep.counters().qp;
    assert_eq!(c.send_rnr_err, MAX_QUEUED_RESPONSES as u64);
    assert_eq!(c.resp_queue_full, 100_000 - MAX_QUEUED_RESPONSES as u64);
    // Once the queue drains, the next SEND is answered again.
    send!(
        s,
        Pkt::new(Opcode::RC_SEND_ONLY, 100).ack_req().payload(b"x")
    );
    assert_eq!(recv!(s).aeth(), Some((0x20 | opts().min_rnr_timer, 0)));
}

#[test]
fn alternating_acks_and_sequence_naks_stay_bounded() {
    let mut s = Script::new(&opts());
    for i in 0..20_000u32 {
        // A zero-length WRITE needs no rkey: executed and ACKed...
        send!(
            s,
            Pkt::new(Opcode::RC_RDMA_WRITE_ONLY, 100 + i)
                .ack_req()
                .ext(ExtRepr {
                    reth: Some(reth::Repr {
                        va: 0,
                        rkey: 0,
                        dma_len: 0
                    }),
                    ..Default::default()
                })
        );
        // ...then a gap, NAKed once.
        send!(s, Pkt::new(Opcode::RC_SEND_ONLY, 100 + i + 5).payload(b"y"));
    }
    assert_eq!(drain_count(&mut s), MAX_QUEUED_RESPONSES);
    let c = s.ep.counters().qp;
    assert_eq!(c.rx_write_requests, 20_000);
    assert_eq!(c.acks_sent + c.naks_sent, MAX_QUEUED_RESPONSES as u64);
    assert_eq!(c.resp_queue_full, 40_000 - MAX_QUEUED_RESPONSES as u64);
}

// ---- 8: an rkey comes back only after 256 registrations of its slot

#[test]
fn an_rkey_comes_back_only_after_256_registrations_of_its_slot() {
    let mut s = Script::new(&opts());
    let first = s.mr(64, rc::ALL_ACCESS);
    s.ep.dereg_mr(first.lkey).unwrap();
    let mut keys = Vec::new();
    for _ in 1..256 {
        let mr = s.mr(64, rc::ALL_ACCESS);
        assert_eq!(mr.rkey >> 8, first.rkey >> 8, "the same slot");
        keys.push(mr.rkey);
        if keys.len() == 200 {
            break;
        }
        s.ep.dereg_mr(mr.lkey).unwrap();
    }
    assert!(!keys.contains(&first.rkey), "an old rkey came back");
    // The slot holds its 201st region: the first region's rkey writes nothing.
    send!(s, write_only(100, &first, b"evil"));
    let n = recv!(s);
    assert_eq!(n.aeth(), Some((NAK_ACCESS, 0)));
}

#[test]
fn keys_repeat_with_a_key_seed_and_come_from_the_os_without_one() {
    use roce_proto::endpoint::{Endpoint, EndpointConfig};
    let keys = |seed: Option<u64>| {
        let mut ep = Endpoint::new(EndpointConfig {
            key_seed: seed,
            ..EndpointConfig::ipv4(rc::MAC_B, rc::IP_B)
        });
        let pd = ep.alloc_pd();
        (0..4)
            .map(|_| ep.reg_mr(pd, 8, AccessFlags::REMOTE_READ).rkey)
            .collect::<Vec<_>>()
    };
    assert_eq!(keys(Some(9)), keys(Some(9)));
    // Four independent random key bytes: equal by chance once in 2^32 runs.
    assert_ne!(keys(None), keys(None));
}

#[test]
fn a_receive_taken_by_a_send_in_progress_completes_when_the_qp_fails() {
    let mut s = Script::new(&opts());
    let rx = s.mr(1024, LOCAL_ONLY);
    s.post_recv(1, &rx, 1024);
    s.post_recv(2, &rx, 1024);
    send!(
        s,
        Pkt::new(Opcode::RC_SEND_FIRST, 100).payload(&[0xaa; 256])
    );
    let to_err = roce_proto::verbs::QpAttr {
        state: Some(QpState::Err),
        ..Default::default()
    };
    s.ep.modify_qp(s.qpn, &to_err).unwrap();
    let wc = s.completions();
    assert_eq!(
        wc.iter().map(|w| (w.wr_id, w.status)).collect::<Vec<_>>(),
        vec![(1, WcStatus::WrFlushErr), (2, WcStatus::WrFlushErr)]
    );
}
