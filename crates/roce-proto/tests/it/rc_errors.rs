//! Error paths end to end: each fails the right work request with the right status, moves the
//! requester's QP to ERR, flushes what follows, and moves the counters named after mlx5/rxe.

use roce_testkit::rc;

use rc::*;
use roce_proto::connect::RcOptions;
use roce_proto::fault::FaultConfig;
use roce_proto::verbs::{AccessFlags, QpState, WcStatus, WorkCompletion, WrOpcode};

fn run(p: &mut Pair, side: &roce_proto::connect::RcSide, want: usize) -> Vec<WorkCompletion> {
    let mut got = Vec::new();
    let end = deadline(p, 30);
    let s = *side;
    p.run_until(end, |_, a, _| {
        drain(a, &s, &mut got);
        got.len() >= want
    });
    got
}

fn statuses(w: &[WorkCompletion]) -> Vec<(u64, WcStatus)> {
    w.iter().map(|w| (w.wr_id, w.status)).collect()
}

/// Posts a failing 8-byte WRITE 1 to the `(remote_addr, rkey)` that `target` picks in a
/// destination region registered with `access`, and a good WRITE 2 behind it.
fn write_then_flush(
    access: AccessFlags,
    target: impl Fn(&roce_proto::mr::MrInfo) -> (u64, u32),
) -> (Pair, Vec<WorkCompletion>, u32) {
    let mut p = pair(FaultConfig::default(), 3);
    let (sa, sb) = connect(&mut p, &RcOptions::default());
    let src = mr(&mut p.a, &sa, 256, 1);
    let dst = p.b.reg_mr(sb.pd, 256, access);
    let (remote_addr, rkey) = target(&dst);
    let failing = WrOpcode::RdmaWrite { remote_addr, rkey };
    p.a.post_send(sa.qpn, send_wr(1, failing, &src, 0, 8))
        .unwrap();
    p.a.post_send(sa.qpn, write_wr(2, &src, &dst, 8)).unwrap();
    let got = run(&mut p, &sa, 2);
    (p, got, sa.qpn)
}

/// A pair (`faults`, `seed`) connected with `o`: `a`'s side and a 64-byte source region on `a`.
fn sender(
    faults: FaultConfig,
    seed: u64,
    o: &RcOptions,
) -> (Pair, roce_proto::connect::RcSide, roce_proto::mr::MrInfo) {
    let mut p = pair(faults, seed);
    let (sa, _sb) = connect(&mut p, o);
    let src = mr(&mut p.a, &sa, 64, 1);
    (p, sa, src)
}

fn assert_failed(p: &Pair, got: &[WorkCompletion], qpn: u32, status: WcStatus) {
    assert_eq!(statuses(got), vec![(1, status), (2, WcStatus::WrFlushErr)]);
    assert_eq!(p.a.qp(qpn).unwrap().state(), QpState::Err);
}

#[test]
fn write_to_an_unregistered_rkey_fails_with_remote_access_error() {
    let (p, got, qpn) = write_then_flush(ALL_ACCESS, |d| (d.addr, d.rkey + 0x1000));
    assert_failed(&p, &got, qpn, WcStatus::RemAccessErr);
    assert_eq!(p.a.counters().qp.req_remote_access_errors, 1);
    assert_eq!(p.b.counters().qp.resp_remote_access_errors, 1);
}

#[test]
fn write_out_of_bounds_fails_with_remote_access_error() {
    let (p, got, qpn) = write_then_flush(ALL_ACCESS, |d| (d.addr + 250, d.rkey));
    assert_failed(&p, &got, qpn, WcStatus::RemAccessErr);
}

#[test]
fn write_without_remote_write_right_fails_with_remote_access_error() {
    let (p, got, qpn) =
        write_then_flush(AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_READ, |d| {
            (d.addr, d.rkey)
        });
    assert_failed(&p, &got, qpn, WcStatus::RemAccessErr);
    assert_eq!(
        p.b.qp(qpn).unwrap().state(),
        QpState::Err,
        "the responder fails too"
    );
}

#[test]
fn send_with_no_posted_receive_fails_when_rnr_retry_runs_out() {
    let o = RcOptions {
        rnr_retry: 3,
        min_rnr_timer: 1,
        ..RcOptions::default()
    };
    let (mut p, sa, src) = sender(FaultConfig::default(), 4, &o);
    for id in 1..=2 {
        p.a.post_send(sa.qpn, send_wr(id, WrOpcode::Send, &src, 0, 64))
            .unwrap();
    }
    let got = run(&mut p, &sa, 2);
    assert_eq!(
        statuses(&got),
        vec![(1, WcStatus::RnrRetryExcErr), (2, WcStatus::WrFlushErr)]
    );
    let (a, b) = (p.a.counters().qp, p.b.counters().qp);
    assert_eq!(
        (
            a.rnr_nak_retry_err,
            a.retry_rnr_exceeded_err,
            b.send_rnr_err
        ),
        (4, 1, 4)
    );
    assert_eq!(p.a.qp(sa.qpn).unwrap().state(), QpState::Err);
}

#[test]
fn peer_gone_fails_with_retry_exceeded_after_retry_cnt_timeouts() {
    let lossy = FaultConfig {
        loss: 1.0,
        ..FaultConfig::default()
    };
    let o = RcOptions {
        retry_cnt: 3,
        timeout: 8,
        ..RcOptions::default()
    };
    let (mut p, sa, src) = sender(lossy, 5, &o);
    for id in 1..=3 {
        p.a.post_send(
            sa.qpn,
            send_wr(
                id,
                WrOpcode::RdmaWrite {
                    remote_addr: 0,
                    rkey: 0,
                },
                &src,
                0,
                64,
            ),
        )
        .unwrap();
    }
    let got = run(&mut p, &sa, 3);
    assert_eq!(
        statuses(&got),
        vec![
            (1, WcStatus::RetryExcErr),
            (2, WcStatus::WrFlushErr),
            (3, WcStatus::WrFlushErr)
        ]
    );
    let a = p.a.counters().qp;
    assert_eq!(
        (
            a.local_ack_timeout_err,
            a.req_transport_retries_exceeded,
            a.retransmitted_packets
        ),
        (4, 1, 9)
    );
}

#[test]
fn local_protection_error_on_a_bad_lkey_fails_without_sending() {
    let (mut p, sa, src) = sender(FaultConfig::default(), 6, &RcOptions::default());
    p.a.post_send(sa.qpn, send_wr(1, WrOpcode::Send, &src, 60, 64))
        .unwrap();
    let got = run(&mut p, &sa, 1);
    assert_eq!(statuses(&got), vec![(1, WcStatus::LocProtErr)]);
    assert_eq!(p.a.counters().tx_frames, 0);
}
