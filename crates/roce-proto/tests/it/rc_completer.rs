//! Requester and completer rules, packet by packet: segmentation and PSNs across the wrap,
//! implied ACKs, go-back-N on NAK and timeout, implied NAK for READs, RNR waits, and the error
//! completions when retries run out.

use roce_testkit::rc;

use rc::script::*;
use rc::send_wr;
use roce_proto::connect::RcOptions;
use roce_proto::psn::Psn;
use roce_proto::time::Duration;
use roce_proto::verbs::{Mtu, QpState, SendWr, Sge, WcStatus, WrOpcode};
use roce_proto::wire::opcode::Opcode;
use roce_proto::wire::{atomic_ack_eth, ExtRepr};
use WcStatus::{RemAccessErr, Success, WrFlushErr};

fn opts(start: u32) -> RcOptions {
    RcOptions {
        mtu: Mtu::Mtu256,
        b_psn: Psn::new(start),
        timeout: 10,
        retry_cnt: 2,
        rnr_retry: 1,
        max_rd_atomic: 2,
        ..RcOptions::default()
    }
}

fn setup(start: u32) -> (Script, roce_proto::mr::MrInfo) {
    let mut s = Script::new(&opts(start));
    let mr = s.mr(8192, rc::ALL_ACCESS);
    (s, mr)
}

fn write(s: &mut Script, mr: &roce_proto::mr::MrInfo, wr_id: u64, len: u32) {
    let opcode = WrOpcode::RdmaWrite {
        remote_addr: 0x5000,
        rkey: 0x77,
    };
    s.post_send(wr_id, opcode, mr, len);
}

/// Posts a READ of `len` bytes from the peer's 0x9000 (rkey 5).
fn read(s: &mut Script, mr: &roce_proto::mr::MrInfo, wr_id: u64, len: u32) {
    let opcode = WrOpcode::RdmaRead {
        remote_addr: 0x9000,
        rkey: 5,
    };
    s.post_send(wr_id, opcode, mr, len);
}

/// `n` 8-byte WRITEs (wr_id 1..=n) from PSN 50, all on the wire.
fn writes_sent(n: u64) -> Script {
    let (mut s, mr) = setup(50);
    for id in 1..=n {
        write(&mut s, &mr, id, 8);
    }
    assert_eq!(s.recv_all().len() as u64, n);
    s
}

/// Three [`writes_sent`] answered by `response`: the script and what completed.
fn three_writes_answered_by(response: Pkt) -> (Script, Vec<(u64, WcStatus)>) {
    let mut s = writes_sent(3);
    send!(s, response);
    let done = statuses(&mut s);
    (s, done)
}

fn statuses(s: &mut Script) -> Vec<(u64, WcStatus)> {
    s.completions()
        .iter()
        .map(|w| (w.wr_id, w.status))
        .collect()
}

#[test]
fn long_write_is_segmented_first_middle_last_across_the_psn_wrap_with_ackreq_on_last() {
    let (mut s, mr) = setup(0xFF_FFFF);
    write(&mut s, &mr, 1, 600);
    let p = s.recv_all();
    let shape: Vec<_> = p
        .iter()
        .map(|p| {
            (
                p.opcode,
                p.psn.value(),
                p.ack_req,
                p.payload.len(),
                p.ext.reth.is_some(),
            )
        })
        .collect();
    assert_eq!(
        shape,
        vec![
            (Opcode::RC_RDMA_WRITE_FIRST, 0xFF_FFFF, false, 256, true),
            (Opcode::RC_RDMA_WRITE_MIDDLE, 0, false, 256, false),
            (Opcode::RC_RDMA_WRITE_LAST, 1, true, 88, false),
        ]
    );
    assert_eq!(p[0].ext.reth.unwrap().dma_len, 600);
    send!(s, ack(1, 0x1f, 1));
    assert_eq!(statuses(&mut s), vec![(1, WcStatus::Success)]);
}

#[test]
fn read_request_consumes_one_psn_per_response_packet() {
    let (mut s, mr) = setup(10);
    read(&mut s, &mr, 1, 600);
    write(&mut s, &mr, 2, 4);
    let p = s.recv_all();
    assert_eq!(
        p.iter()
            .map(|p| (p.opcode, p.psn.value()))
            .collect::<Vec<_>>(),
        vec![
            (Opcode::RC_RDMA_READ_REQUEST, 10),
            (Opcode::RC_RDMA_WRITE_ONLY, 13)
        ]
    );
}

#[test]
fn ack_for_a_later_psn_completes_every_earlier_request() {
    let (_, done) = three_writes_answered_by(ack(52, 0x1f, 3));
    assert_eq!(done, [(1, Success), (2, Success), (3, Success)]);
}

#[test]
fn nak_sequence_error_acks_what_precedes_and_rewinds_the_requester() {
    let (mut s, done) = three_writes_answered_by(ack(51, 0x60, 1));
    assert_eq!(done, vec![(1, WcStatus::Success)]);
    let again: Vec<_> = s.recv_all().iter().map(|p| p.psn.value()).collect();
    assert_eq!(again, vec![51, 52]);
    let c = s.ep.counters().qp;
    assert_eq!((c.packet_seq_err, c.retransmitted_packets), (1, 2));
    // The same NAK again does not start a second round.
    send!(s, ack(51, 0x60, 1));
    recv!(s, None);
}

#[test]
fn ack_beyond_an_unanswered_read_is_an_implied_nak_that_resends_the_read() {
    let (mut s, mr) = setup(50);
    read(&mut s, &mr, 1, 16);
    write(&mut s, &mr, 2, 8);
    assert_eq!(s.recv_all().len(), 2);
    send!(s, ack(51, 0x1f, 2));
    let r = recv!(s);
    assert_eq!(
        (r.opcode, r.psn.value()),
        (Opcode::RC_RDMA_READ_REQUEST, 50)
    );
    assert_eq!(s.ep.counters().qp.implied_nak_seq_err, 1);
    assert!(statuses(&mut s).is_empty());
    // The READ response completes both, in order.
    send!(
        s,
        Pkt::new(Opcode::RC_RDMA_READ_RESPONSE_ONLY, 50)
            .ext(ack(0, 0x1f, 1).ext)
            .payload(&[9; 16])
    );
    assert_eq!(statuses(&mut s), vec![(1, WcStatus::Success)]);
    send!(s, ack(51, 0x1f, 2));
    assert_eq!(statuses(&mut s), vec![(2, WcStatus::Success)]);
    assert_eq!(&s.ep.mr(mr.lkey).unwrap().bytes()[..16], &[9; 16]);
}

#[test]
fn atomic_ack_lands_the_original_value() {
    let (mut s, mr) = setup(7);
    let add = WrOpcode::AtomicFetchAndAdd {
        remote_addr: 0x9000,
        rkey: 5,
        add: 1,
    };
    s.ep.post_send(s.qpn, send_wr(1, add, &mr, 64, 8)).unwrap();
    assert_eq!(recv!(s).opcode, Opcode::RC_FETCH_ADD);
    let mut ext = ack(0, 0x1f, 1).ext;
    ext.atomic_ack_eth = Some(atomic_ack_eth::Repr { orig: 0xabcd });
    send!(s, Pkt::new(Opcode::RC_ATOMIC_ACKNOWLEDGE, 7).ext(ext));
    assert_eq!(statuses(&mut s), vec![(1, WcStatus::Success)]);
    assert_eq!(
        &s.ep.mr(mr.lkey).unwrap().bytes()[64..72],
        &0xabcdu64.to_le_bytes()
    );
}

#[test]
fn local_ack_timeout_resends_until_retry_cnt_runs_out_then_fails_and_flushes() {
    let mut s = writes_sent(2);
    let timeout = Duration::from_nanos(4096 << 10);
    for round in 0..2 {
        s.advance(timeout - Duration::from_nanos(1));
        recv!(s, None);
        s.advance(Duration::from_nanos(1));
        assert_eq!(s.recv_all().len(), 2, "round {round} resends both");
    }
    s.advance(timeout);
    assert_eq!(
        statuses(&mut s),
        vec![(1, WcStatus::RetryExcErr), (2, WcStatus::WrFlushErr)]
    );
    assert_eq!(s.ep.qp(s.qpn).unwrap().state(), QpState::Err);
    let c = s.ep.counters().qp;
    assert_eq!(
        (c.local_ack_timeout_err, c.req_transport_retries_exceeded),
        (3, 1)
    );
}

#[test]
fn rnr_nak_waits_the_rnr_timer_then_resends_and_gives_up_after_rnr_retry() {
    let (mut s, mr) = setup(50);
    s.post_send(1, WrOpcode::Send, &mr, 8);
    assert_eq!(recv!(s).psn.value(), 50);
    send!(s, ack(50, 0x20 | 1, 0));
    s.advance(Duration::from_micros(9));
    recv!(s, None);
    s.advance(Duration::from_micros(1));
    assert_eq!(recv!(s).psn.value(), 50);
    send!(s, ack(50, 0x20 | 1, 0));
    assert_eq!(statuses(&mut s), vec![(1, WcStatus::RnrRetryExcErr)]);
    let c = s.ep.counters().qp;
    assert_eq!((c.rnr_nak_retry_err, c.retry_rnr_exceeded_err), (2, 1));
}

#[test]
fn remote_access_nak_completes_with_rem_access_err_and_flushes_the_rest() {
    let (s, done) = three_writes_answered_by(ack(51, 0x62, 1));
    assert_eq!(done, [(1, Success), (2, RemAccessErr), (3, WrFlushErr)]);
    assert_eq!(s.ep.counters().qp.req_remote_access_errors, 1);
}

#[test]
fn unsignaled_requests_complete_silently_and_errors_always_report() {
    let (mut s, mr) = setup(50);
    let mut wr = send_wr(
        1,
        WrOpcode::RdmaWrite {
            remote_addr: 0,
            rkey: 1,
        },
        &mr,
        0,
        8,
    );
    wr.flags = roce_proto::verbs::SendFlags::empty();
    s.ep.post_send(s.qpn, wr.clone()).unwrap();
    wr.wr_id = 2;
    s.ep.post_send(s.qpn, wr).unwrap();
    assert_eq!(s.recv_all().len(), 2);
    send!(s, ack(50, 0x1f, 1));
    assert!(statuses(&mut s).is_empty());
    send!(s, ack(51, 0x61, 1));
    assert_eq!(statuses(&mut s), vec![(2, WcStatus::RemInvReqErr)]);
}

#[test]
fn bad_local_key_completes_with_a_local_protection_error() {
    let (mut s, mr) = setup(50);
    let wr = SendWr::new(
        1,
        WrOpcode::Send,
        Sge {
            addr: mr.addr,
            length: 8,
            lkey: mr.lkey ^ 0x100,
        },
    );
    s.ep.post_send(s.qpn, wr).unwrap();
    recv!(s, None);
    assert_eq!(statuses(&mut s), vec![(1, WcStatus::LocProtErr)]);
    assert_eq!(s.ep.qp(s.qpn).unwrap().state(), QpState::Err);
}

#[test]
fn fence_holds_a_request_until_earlier_reads_complete() {
    let (mut s, mr) = setup(50);
    read(&mut s, &mr, 1, 8);
    let mut wr = send_wr(2, WrOpcode::Send, &mr, 0, 8);
    wr.flags |= roce_proto::verbs::SendFlags::FENCE;
    s.ep.post_send(s.qpn, wr).unwrap();
    assert_eq!(recv!(s).opcode, Opcode::RC_RDMA_READ_REQUEST);
    recv!(s, None);
    send!(
        s,
        Pkt::new(Opcode::RC_RDMA_READ_RESPONSE_ONLY, 50)
            .ext(ExtRepr {
                ..ack(0, 0x1f, 1).ext
            })
            .payload(&[1; 8])
    );
    assert_eq!(recv!(s).opcode, Opcode::RC_SEND_ONLY);
}

#[test]
fn paced_qp_holds_packets_until_the_departure_time_and_a_cnp_reaches_its_controller() {
    use roce_proto::cc::config::CcConfig;
    use roce_proto::cc::rate::Rate;
    let (mut s, mr) = setup(50);
    let cc = CcConfig::new("dcqcn-mlx", Rate::from_gbps(1))
        .unwrap()
        .build();
    s.ep.set_congestion_control(s.qpn, cc, 0).unwrap();
    for id in 1..=3 {
        write(&mut s, &mr, id, 200);
    }
    assert!(s.recv().is_some());
    recv!(s, None);
    let next =
        s.ep.poll_timeout()
            .expect("the pacer reports the next departure");
    assert!(next > s.now);
    s.now = next;
    assert!(s.recv().is_some(), "sent once its departure time has come");
    let mut cnp = Pkt::new(Opcode::CNP, 0);
    cnp.payload = vec![];
    send!(s, cnp);
    assert_eq!(s.ep.counters().qp.rp_cnp_handled, 1);
}

#[test]
fn rnr_wait_longer_than_the_ack_timeout_spends_no_transport_retries() {
    let (mut s, mr) = setup(50);
    for id in 1..=2 {
        s.post_send(id, WrOpcode::Send, &mr, 8);
    }
    assert_eq!(s.recv_all().len(), 2);
    // RNR timer code 0 is 655.36 ms, far beyond the 4 ms ACK timeout; the NAK for the gap the
    // second SEND left follows it.
    send!(s, ack(50, 0x20, 0));
    send!(s, ack(50, 0x60, 0));
    s.advance(Duration::from_millis(655));
    recv!(s, None);
    assert!(statuses(&mut s).is_empty());
    s.advance(Duration::from_micros(400));
    assert_eq!(
        s.recv_all()
            .iter()
            .map(|p| p.psn.value())
            .collect::<Vec<_>>(),
        vec![50, 51]
    );
    let c = s.ep.counters().qp;
    assert_eq!((c.local_ack_timeout_err, c.completer_retry_err), (0, 0));
}
