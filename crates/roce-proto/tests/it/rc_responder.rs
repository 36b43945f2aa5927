//! Responder rules, packet by packet: PSN check, duplicates, NAK codes, RNR, READ responses,
//! atomics, immediate data. Expected bytes follow Linux rxe (see
//! crates/roce-proto/tests/vectors/README.md).

use roce_testkit::rc;

use rc::script::*;
use roce_proto::connect::RcOptions;
use roce_proto::psn::Psn;
use roce_proto::verbs::{AccessFlags, Mtu, QpState, WcOpcode, WcStatus};
use roce_proto::wire::opcode::Opcode;
use roce_proto::wire::{atomic_eth, reth, ExtRepr};

fn opts() -> RcOptions {
    RcOptions {
        mtu: Mtu::Mtu256,
        a_psn: Psn::new(100),
        min_rnr_timer: 12,
        max_rd_atomic: 4,
        ..RcOptions::default()
    }
}

fn setup() -> (Script, roce_proto::mr::MrInfo) {
    let mut s = Script::new(&opts());
    let mr = s.mr(4096, rc::ALL_ACCESS);
    (s, mr)
}

/// [`setup`] with receive `wr_id` of `len` bytes posted at the start of the region.
fn setup_with_recv(wr_id: u64, len: u32) -> (Script, roce_proto::mr::MrInfo) {
    let (mut s, mr) = setup();
    s.post_recv(wr_id, &mr, len);
    (s, mr)
}

/// [`setup`], sent a WRITE Only of `data` at `psn`: it must answer with one RC ACKNOWLEDGE for
/// PSN 100 (the one it expects) carrying `aeth` (syndrome, MSN).
fn first_write_answered(
    psn: u32,
    data: &[u8],
    aeth: (u8, u32),
) -> (Script, roce_proto::mr::MrInfo) {
    let (mut s, mr) = setup();
    send!(s, write_only(psn, &mr, data));
    let a = recv!(s);
    assert_eq!(
        (a.opcode, a.psn, a.aeth()),
        (Opcode::RC_ACKNOWLEDGE, Psn::new(100), Some(aeth))
    );
    (s, mr)
}

/// Posts receive `wr_id` of 64 bytes at the start of `mr`.
fn post_recv(s: &mut Script, wr_id: u64, mr: &roce_proto::mr::MrInfo) {
    s.post_recv(wr_id, mr, 64);
}

/// Sends `opcode` with immediate data `imm` (PSN 100, `ext` otherwise, carrying `payload`)
/// before any receive is posted: an RNR NAK with the timer code 12 of [`opts`], counted; then
/// posts receive `wr_id` and sends the same packet again: ACKed, with exactly one completion,
/// which it returns.
fn immediate_after_an_rnr_nak(
    s: &mut Script,
    (opcode, ext, imm, payload): (Opcode, ExtRepr, u32, &[u8]),
    wr_id: u64,
    mr: &roce_proto::mr::MrInfo,
) -> roce_proto::verbs::WorkCompletion {
    let request = Pkt::new(opcode, 100)
        .ack_req()
        .ext(ExtRepr {
            immdt: Some(imm),
            ..ext
        })
        .payload(payload);
    send!(s, request);
    let n = recv!(s);
    assert_eq!((n.psn, n.aeth()), (Psn::new(100), Some((0x20 | 12, 0))));
    assert_eq!(s.ep.counters().qp.send_rnr_err, 1);
    post_recv(s, wr_id, mr);
    // The same packet again, once a receive is posted: executed, ACKed, completed.
    send!(s, request);
    assert_eq!(recv!(s).aeth(), Some((ACK, 1)));
    let wc = s.completions();
    assert_eq!(wc.len(), 1);
    wc[0]
}

#[test]
fn write_only_is_executed_and_acked_with_credits_31_and_msn_1() {
    let (mut s, mr) = first_write_answered(100, b"hello", (ACK, 1));
    recv!(s, None);
    assert_eq!(&s.ep.mr(mr.lkey).unwrap().bytes()[..5], b"hello");
    assert_eq!(s.ep.counters().qp.rx_write_requests, 1);
}

#[test]
fn psn_gap_gets_one_sequence_nak_carrying_the_expected_psn() {
    let (mut s, mr) = first_write_answered(105, b"x", (NAK_SEQ, 0));
    send!(s, write_only(106, &mr, b"y"));
    recv!(s, None);
    assert_eq!(s.ep.counters().qp.out_of_sequence, 2);
    // The expected PSN clears the gap; a later gap is NAKed again.
    send!(s, write_only(100, &mr, b"z"));
    assert_eq!(recv!(s).aeth(), Some((ACK, 1)));
    send!(s, write_only(103, &mr, b"w"));
    let n = recv!(s);
    assert_eq!((n.psn, n.aeth()), (Psn::new(101), Some((NAK_SEQ, 1))));
}

#[test]
fn duplicate_write_is_acked_with_psn_one_less_and_msn_unchanged() {
    let (mut s, mr) = setup();
    send!(s, write_only(100, &mr, b"a"));
    send!(s, write_only(101, &mr, b"b"));
    assert_eq!(
        recv!(s).psn,
        Psn::new(101),
        "two ACKs coalesce into the later one"
    );
    send!(s, write_only(100, &mr, b"c"));
    let a = recv!(s);
    assert_eq!((a.psn, a.aeth()), (Psn::new(101), Some((ACK, 2))));
    assert_eq!(
        s.ep.mr(mr.lkey).unwrap().bytes()[0],
        b'b',
        "a duplicate is not executed again"
    );
    assert_eq!(s.ep.counters().qp.duplicate_request, 1);
}

#[test]
fn send_without_a_posted_receive_gets_an_rnr_nak_then_succeeds_once_posted() {
    let (mut s, mr) = setup();
    let send = (
        Opcode::RC_SEND_ONLY_WITH_IMMEDIATE,
        ExtRepr::default(),
        0x1234_5678,
        &b"ping"[..],
    );
    let wc = immediate_after_an_rnr_nak(&mut s, send, 7, &mr);
    assert_eq!(
        (wc.wr_id, wc.status, wc.opcode, wc.byte_len, wc.imm_data),
        (7, WcStatus::Success, WcOpcode::Recv, 4, Some(0x1234_5678))
    );
}

#[test]
fn write_to_an_unknown_rkey_gets_a_remote_access_nak_and_errors_the_qp() {
    let (mut s, mr) = setup();
    let mut bad = write_only(100, &mr, b"x");
    bad.ext.reth.as_mut().unwrap().rkey ^= 0x100;
    send!(s, bad);
    let n = recv!(s);
    assert_eq!((n.psn, n.aeth()), (Psn::new(100), Some((NAK_ACCESS, 0))));
    assert_eq!(s.ep.qp(s.qpn).unwrap().state(), QpState::Err);
    assert_eq!(s.ep.counters().qp.resp_remote_access_errors, 1);
}

#[test]
fn write_beyond_the_region_or_without_the_right_is_a_remote_access_error() {
    let (mut s, mr) = setup();
    let mut oob = write_only(100, &mr, &[1; 8]);
    oob.ext.reth.as_mut().unwrap().va = mr.addr + 4090;
    send!(s, oob);
    assert_eq!(recv!(s).aeth(), Some((NAK_ACCESS, 0)));

    let mut s = Script::new(&opts());
    let ro = s.mr(64, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_READ);
    send!(s, write_only(100, &ro, b"x"));
    assert_eq!(recv!(s).aeth(), Some((NAK_ACCESS, 0)));
}

#[test]
fn middle_without_first_is_an_invalid_request() {
    let (mut s, _mr) = setup();
    send!(s, Pkt::new(Opcode::RC_SEND_MIDDLE, 100).payload(&[0; 256]));
    let n = recv!(s);
    assert_eq!((n.psn, n.aeth()), (Psn::new(100), Some((NAK_INV, 0))));
    assert_eq!(s.ep.qp(s.qpn).unwrap().state(), QpState::Err);
}

#[test]
fn write_first_shorter_than_the_path_mtu_is_an_invalid_request() {
    let (mut s, mr) = setup();
    send!(
        s,
        Pkt::new(Opcode::RC_RDMA_WRITE_FIRST, 100)
            .ext(reth(&mr, 0, 1000))
            .payload(&[0; 100])
    );
    assert_eq!(recv!(s).aeth(), Some((NAK_INV, 0)));
}

#[test]
fn read_is_answered_with_segmented_responses_carrying_aeth_on_first_and_last() {
    let (mut s, mr) = setup();
    let data: Vec<u8> = (0..600u32).map(|i| i as u8).collect();
    s.ep.mr_mut(mr.lkey).unwrap().bytes_mut()[..600].copy_from_slice(&data);
    send!(
        s,
        Pkt::new(Opcode::RC_RDMA_READ_REQUEST, 100)
            .ack_req()
            .ext(reth(&mr, 0, 600))
    );
    let r = s.recv_all();
    let shape: Vec<_> = r
        .iter()
        .map(|p| (p.opcode, p.psn.value(), p.aeth(), p.payload.len()))
        .collect();
    assert_eq!(
        shape,
        vec![
            (
                Opcode::RC_RDMA_READ_RESPONSE_FIRST,
                100,
                Some((ACK, 1)),
                256
            ),
            (Opcode::RC_RDMA_READ_RESPONSE_MIDDLE, 101, None, 256),
            (Opcode::RC_RDMA_READ_RESPONSE_LAST, 102, Some((ACK, 1)), 88),
        ]
    );
    assert_eq!(
        r.iter().flat_map(|p| p.payload.clone()).collect::<Vec<_>>(),
        data
    );
    assert_eq!(
        s.ep.qp(s.qpn).unwrap().expected_psn(),
        Psn::new(103),
        "a READ consumes one PSN per response"
    );
    // A duplicate READ from the middle is served again from there.
    send!(
        s,
        Pkt::new(Opcode::RC_RDMA_READ_REQUEST, 101).ext(reth(&mr, 256, 344))
    );
    let again: Vec<_> = s
        .recv_all()
        .iter()
        .map(|p| (p.opcode, p.psn.value()))
        .collect();
    assert_eq!(
        again,
        vec![
            (Opcode::RC_RDMA_READ_RESPONSE_FIRST, 101),
            (Opcode::RC_RDMA_READ_RESPONSE_LAST, 102)
        ]
    );
}

#[test]
fn duplicate_atomic_replays_the_original_value_without_executing_again() {
    let (mut s, mr) = setup();
    s.ep.mr_mut(mr.lkey).unwrap().bytes_mut()[8..16].copy_from_slice(&40u64.to_le_bytes());
    let fadd = Pkt::new(Opcode::RC_FETCH_ADD, 100).ack_req().ext(ExtRepr {
        atomic_eth: Some(atomic_eth::Repr {
            va: mr.addr + 8,
            rkey: mr.rkey,
            swap_add: 2,
            compare: 0,
        }),
        ..Default::default()
    });
    send!(s, fadd);
    let a = recv!(s);
    assert_eq!(
        (
            a.opcode,
            a.psn.value(),
            a.aeth(),
            a.ext.atomic_ack_eth.map(|x| x.orig)
        ),
        (Opcode::RC_ATOMIC_ACKNOWLEDGE, 100, Some((ACK, 1)), Some(40))
    );
    send!(s, fadd);
    let a = recv!(s);
    assert_eq!(
        (a.psn.value(), a.ext.atomic_ack_eth.map(|x| x.orig)),
        (100, Some(40))
    );
    assert_eq!(
        &s.ep.mr(mr.lkey).unwrap().bytes()[8..16],
        &42u64.to_le_bytes()
    );
    assert_eq!(s.ep.counters().qp.rx_atomic_requests, 1);
}

#[test]
fn misaligned_atomic_is_an_invalid_request() {
    let (mut s, mr) = setup();
    send!(
        s,
        Pkt::new(Opcode::RC_COMPARE_SWAP, 100).ext(ExtRepr {
            atomic_eth: Some(atomic_eth::Repr {
                va: mr.addr + 4,
                rkey: mr.rkey,
                swap_add: 1,
                compare: 0
            }),
            ..Default::default()
        })
    );
    assert_eq!(recv!(s).aeth(), Some((NAK_INV, 0)));
}

#[test]
fn write_with_immediate_consumes_a_receive_and_reports_the_immediate() {
    let (mut s, mr) = setup_with_recv(9, 1);
    send!(
        s,
        Pkt::new(Opcode::RC_RDMA_WRITE_FIRST, 100)
            .ext(reth(&mr, 100, 300))
            .payload(&[5; 256])
    );
    send!(
        s,
        Pkt::new(Opcode::RC_RDMA_WRITE_LAST_WITH_IMMEDIATE, 101)
            .ack_req()
            .ext(ExtRepr {
                immdt: Some(77),
                ..Default::default()
            })
            .payload(&[6; 44])
    );
    let a = recv!(s);
    assert_eq!((a.psn.value(), a.aeth()), (101, Some((ACK, 1))));
    let wc = s.completions();
    assert_eq!(
        (wc[0].wr_id, wc[0].opcode, wc[0].byte_len, wc[0].imm_data),
        (9, WcOpcode::RecvRdmaWithImm, 300, Some(77))
    );
    assert_eq!(&s.ep.mr(mr.lkey).unwrap().bytes()[355..357], &[5, 6]);
}

#[test]
fn send_larger_than_the_receive_is_a_local_length_error_and_an_invalid_request_nak() {
    let (mut s, _) = setup_with_recv(3, 10);
    send!(
        s,
        Pkt::new(Opcode::RC_SEND_ONLY, 100)
            .ack_req()
            .payload(&[1; 20])
    );
    assert_eq!(recv!(s).aeth(), Some((NAK_INV, 0)));
    let wc = s.completions();
    assert_eq!((wc[0].wr_id, wc[0].status), (3, WcStatus::LocLenErr));
    assert_eq!(s.ep.counters().qp.resp_local_length_error, 1);
}

#[test]
fn frames_with_bad_icrc_wrong_qp_or_wrong_pkey_are_counted_and_dropped() {
    let (mut s, mr) = setup();
    let mut f = s.frame(&write_only(100, &mr, b"x"));
    let last = f.len() - 1;
    f[last] ^= 1;
    s.ep.handle_frame(s.now, &f);
    let mut p = write_only(100, &mr, b"x");
    p.opcode = Opcode::RC_RDMA_WRITE_ONLY;
    let mut f2 = s.frame(&p);
    // BTH dest QPN lives at bytes 14+20+8+5..+8; point it at a QP that does not exist.
    f2[14 + 20 + 8 + 7] = 0x42;
    s.ep.handle_frame(s.now, &f2);
    s.ep.handle_frame(s.now, &[0u8; 10]);
    recv!(s, None);
    let d = s.ep.counters().drops;
    assert_eq!(
        (d.bad_icrc, d.malformed),
        (2, 1),
        "a rewritten QPN breaks the ICRC too"
    );
}

#[test]
fn ce_marked_request_sends_one_cnp_per_interval_to_the_senders_qp() {
    let (mut s, mr) = setup();
    s.send_ecn(&write_only(100, &mr, b"a"), roce_proto::wire::Ecn::Ce);
    let cnp = recv!(s);
    assert_eq!(
        (cnp.opcode, cnp.psn.value(), cnp.payload.len()),
        (Opcode::CNP, 0, 0)
    );
    assert_eq!(recv!(s).aeth(), Some((ACK, 1)), "the ACK follows the CNP");
    s.send_ecn(&write_only(101, &mr, b"b"), roce_proto::wire::Ecn::Ce);
    assert_eq!(
        recv!(s).opcode,
        Opcode::RC_ACKNOWLEDGE,
        "no second CNP within 4 us"
    );
    s.advance(roce_proto::time::Duration::from_micros(4));
    s.send_ecn(&write_only(102, &mr, b"c"), roce_proto::wire::Ecn::Ce);
    assert_eq!(recv!(s).opcode, Opcode::CNP);
    let np = s.ep.np_counters();
    assert_eq!(
        (
            np.np_ecn_marked_roce_packets,
            np.np_cnp_sent,
            s.ep.counters().cnps_sent
        ),
        (3, 2, 2)
    );
}

#[test]
fn frames_for_another_qp_another_partition_or_a_qp_in_reset_are_counted_and_dropped() {
    let (mut s, mr) = setup();
    let mut p = write_only(100, &mr, b"x");
    p.dest_qpn = Some(0x4242);
    send!(s, p);
    let mut p = write_only(100, &mr, b"x");
    p.pkey = 0x7ffe;
    send!(s, p);
    let reset = s.idle_qp();
    let mut p = write_only(100, &mr, b"x");
    p.dest_qpn = Some(reset);
    send!(s, p);
    recv!(s, None);
    let d = s.ep.counters().drops;
    assert_eq!((d.unknown_qp, d.bad_pkey, d.bad_state), (1, 1, 1));
    assert_eq!(s.ep.mr(mr.lkey).unwrap().bytes()[0], 0);
}

#[test]
fn random_well_formed_packets_never_panic_the_endpoint() {
    use rand::{RngExt, SeedableRng};
    let seed = 7;
    let mut rng = rand_pcg::Pcg64::seed_from_u64(seed);
    let (mut s, mut mr) = setup();
    let mut errors = 0;
    s.post_recv(1, &mr, 512);
    let ops: Vec<Opcode> = (0u8..=0x14).map(Opcode).collect();
    for i in 0..5000 {
        let op = ops[rng.random_range(0..ops.len())];
        let info = op.info().unwrap();
        let mut ext = ExtRepr::default();
        let va = if rng.random_bool(0.5) {
            mr.addr + rng.random_range(0..4200)
        } else {
            rng.random()
        };
        let rkey = if rng.random_bool(0.7) {
            mr.rkey
        } else {
            rng.random()
        };
        if info.reth() {
            ext.reth = Some(reth::Repr {
                va,
                rkey,
                dma_len: rng.random_range(0..2000),
            });
        }
        if info.atomic_eth() {
            ext.atomic_eth = Some(atomic_eth::Repr {
                va,
                rkey,
                swap_add: rng.random(),
                compare: rng.random(),
            });
        }
        if info.aeth() {
            ext.aeth = Some(roce_proto::wire::aeth::Repr {
                syndrome: roce_proto::wire::aeth::Syndrome::from_byte(rng.random()),
                msn: roce_proto::psn::Msn::new(rng.random()),
            });
        }
        if info.atomic_ack_eth() {
            ext.atomic_ack_eth =
                Some(roce_proto::wire::atomic_ack_eth::Repr { orig: rng.random() });
        }
        if info.immdt() {
            ext.immdt = Some(rng.random());
        }
        if info.ieth() {
            ext.ieth = Some(rng.random());
        }
        let len = if info.has_payload {
            rng.random_range(0..300)
        } else {
            0
        };
        let psn =
            s.ep.qp(s.qpn)
                .map_or(0, |q| q.expected_psn().value())
                .wrapping_add(rng.random_range(0..4))
                .wrapping_sub(2);
        let mut p = Pkt::new(op, psn).ext(ext).payload(&vec![0xab; len]);
        p.ack_req = rng.random_bool(0.5);
        send!(s, p);
        while s.recv().is_some() {}
        if i % 500 == 0 {
            s.advance(roce_proto::time::Duration::from_millis(100));
        }
        if s.ep.qp(s.qpn).map(|q| q.state()) == Some(QpState::Err) {
            // Start over so later packets meet a live QP, not only the error state.
            errors += 1;
            (s, mr) = setup();
            s.post_recv(1, &mr, 512);
        }
    }
    assert!(
        errors > 10,
        "seed {seed}: the random packets reached the error paths ({errors} times)"
    );
}

#[test]
fn write_with_immediate_without_a_posted_receive_gets_an_rnr_nak_then_succeeds_once_posted() {
    let (mut s, mr) = setup();
    let write = (
        Opcode::RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE,
        reth(&mr, 8, 4),
        0x0bad_cafe,
        &b"data"[..],
    );
    let wc = immediate_after_an_rnr_nak(&mut s, write, 9, &mr);
    assert_eq!(&s.ep.mr(mr.lkey).unwrap().bytes()[8..12], b"data");
    assert_eq!(
        (wc.wr_id, wc.status, wc.opcode, wc.imm_data),
        (
            9,
            WcStatus::Success,
            WcOpcode::RecvRdmaWithImm,
            Some(0x0bad_cafe)
        )
    );
}
