//! The invalidation verbs: local invalidate (a work request that runs once everything before it
//! has completed) and SEND with Invalidate (the responder invalidates the rkey it names), end to
//! end and frame by frame.

use roce_testkit::rc;

use rc::script::*;
use rc::*;
use roce_proto::connect::RcOptions;
use roce_proto::fault::FaultConfig;
use roce_proto::verbs::{
    AccessFlags, QpState, RecvWr, SendFlags, SendWr, Sge, Sgl, WcOpcode, WcStatus, WorkCompletion,
    WrOpcode,
};
use roce_proto::wire::opcode::Opcode;

fn opts() -> RcOptions {
    mtu256()
}

fn local_inv(wr_id: u64, rkey: u32) -> SendWr {
    SendWr {
        wr_id,
        opcode: WrOpcode::LocalInv { rkey },
        sgl: Sgl::new(),
        flags: SendFlags::SIGNALED,
    }
}

fn sge(mr: &roce_proto::mr::MrInfo, len: u32) -> Sge {
    Sge {
        addr: mr.addr,
        length: len,
        lkey: mr.lkey,
    }
}

fn write_to(mr: &roce_proto::mr::MrInfo, psn: u32) -> Pkt {
    write_only(psn, mr, b"late")
}

fn shape(wc: &[WorkCompletion]) -> Vec<(u64, WcStatus, WcOpcode)> {
    wc.iter().map(|w| (w.wr_id, w.status, w.opcode)).collect()
}

#[test]
fn local_invalidate_on_an_idle_queue_runs_at_once_and_stops_remote_access() {
    let mut s = Script::new(&opts());
    let mr = s.mr(64, ALL_ACCESS);
    s.ep.mr_mut(mr.lkey).unwrap().bytes_mut()[..4].copy_from_slice(b"mine");
    s.ep.post_send(s.qpn, local_inv(1, mr.rkey)).unwrap();
    assert_eq!(
        shape(&s.completions()),
        vec![(1, WcStatus::Success, WcOpcode::LocalInv)]
    );
    recv!(s, None);
    send!(s, write_to(&mr, 100));
    assert_eq!(recv!(s).aeth(), Some((NAK_ACCESS, 0)));
    let region = s.ep.mr(mr.lkey).unwrap();
    assert!(!region.is_valid());
    assert_eq!(&region.bytes()[..4], b"mine", "the owner keeps its bytes");
    assert_eq!(s.ep.dereg_mr(mr.lkey), Ok(()));
}

#[test]
fn local_invalidate_waits_for_earlier_work_and_holds_back_later_work() {
    let mut s = Script::new(&opts());
    let src = s.mr(64, AccessFlags::LOCAL_WRITE);
    let write = WrOpcode::RdmaWrite {
        remote_addr: 0x1000,
        rkey: 0x4321,
    };
    s.ep.post_send(s.qpn, SendWr::new(1, write, sge(&src, 8)))
        .unwrap();
    s.ep.post_send(s.qpn, local_inv(2, src.lkey)).unwrap();
    s.ep.post_send(s.qpn, SendWr::new(3, WrOpcode::Send, sge(&src, 8)))
        .unwrap();
    assert_eq!(recv!(s).opcode, Opcode::RC_RDMA_WRITE_ONLY);
    recv!(s, None);
    assert!(
        s.ep.mr(src.lkey).unwrap().is_valid(),
        "not before the WRITE completed"
    );
    send!(s, ack(500, 0x1f, 1));
    // The invalidate ran, so the SEND behind it finds its memory gone instead of sending it.
    recv!(s, None);
    assert_eq!(
        shape(&s.completions()),
        vec![
            (1, WcStatus::Success, WcOpcode::RdmaWrite),
            (2, WcStatus::Success, WcOpcode::LocalInv),
            (3, WcStatus::LocProtErr, WcOpcode::Send),
        ]
    );
    assert!(!s.ep.mr(src.lkey).unwrap().is_valid());
}

#[test]
fn local_invalidate_of_a_key_that_names_nothing_fails_with_a_local_qp_operation_error() {
    let mut s = Script::new(&opts());
    s.ep.post_send(s.qpn, local_inv(1, 0x1234_5600)).unwrap();
    assert_eq!(
        shape(&s.completions()),
        vec![(1, WcStatus::LocQpOpErr, WcOpcode::LocalInv)]
    );
    assert_eq!(s.ep.qp(s.qpn).unwrap().state(), QpState::Err);
}

#[test]
fn send_with_invalidate_carries_the_ieth_on_its_last_packet() {
    let mut s = Script::new(&opts());
    let src = s.mr(600, AccessFlags::LOCAL_WRITE);
    s.ep.post_send(
        s.qpn,
        SendWr::new(
            1,
            WrOpcode::SendWithInv { rkey: 0xabcd_ef12 },
            sge(&src, 600),
        ),
    )
    .unwrap();
    let sent: Vec<_> = s
        .recv_all()
        .iter()
        .map(|p| (p.opcode, p.psn.value(), p.ext.ieth, p.payload.len()))
        .collect();
    assert_eq!(
        sent,
        vec![
            (Opcode::RC_SEND_FIRST, 500, None, 256),
            (Opcode::RC_SEND_MIDDLE, 501, None, 256),
            (
                Opcode::RC_SEND_LAST_WITH_INVALIDATE,
                502,
                Some(0xabcd_ef12),
                88
            ),
        ]
    );
    let single = s.mr(8, AccessFlags::LOCAL_WRITE);
    s.ep.post_send(
        s.qpn,
        SendWr::new(2, WrOpcode::SendWithInv { rkey: 7 }, sge(&single, 8)),
    )
    .unwrap();
    let p = recv!(s);
    assert_eq!(
        (p.opcode, p.ext.ieth),
        (Opcode::RC_SEND_ONLY_WITH_INVALIDATE, Some(7))
    );
}

#[test]
fn send_with_invalidate_end_to_end_revokes_the_peers_rkey() {
    let mut p = pair(FaultConfig::default(), 5);
    let (sa, sb) = connect(&mut p, &RcOptions::default());
    let src = mr(&mut p.a, &sa, 64, 3);
    let exposed = p.b.reg_mr(sb.pd, 64, ALL_ACCESS);
    let rx = mr(&mut p.b, &sb, 64, 0);
    p.b.post_recv(sb.qpn, RecvWr::new(10, sge(&rx, 64)))
        .unwrap();
    let inv = WrOpcode::SendWithInv { rkey: exposed.rkey };
    p.a.post_send(sa.qpn, SendWr::new(1, inv, sge(&src, 16)))
        .unwrap();
    let write = WrOpcode::RdmaWrite {
        remote_addr: exposed.addr,
        rkey: exposed.rkey,
    };
    p.a.post_send(sa.qpn, SendWr::new(2, write, sge(&src, 16)))
        .unwrap();
    let (mut got_a, mut got_b) = (Vec::new(), Vec::new());
    let end = deadline(&p, 30);
    p.run_until(end, |_, a, b| {
        drain(a, &sa, &mut got_a);
        drain(b, &sb, &mut got_b);
        got_a.len() >= 2 && !got_b.is_empty()
    });
    assert_eq!(
        got_b
            .iter()
            .map(|w| (w.wr_id, w.status, w.byte_len, w.invalidated_rkey))
            .collect::<Vec<_>>(),
        vec![(10, WcStatus::Success, 16, Some(exposed.rkey))]
    );
    assert_eq!(
        shape(&got_a),
        vec![
            (1, WcStatus::Success, WcOpcode::Send),
            (2, WcStatus::RemAccessErr, WcOpcode::RdmaWrite),
        ]
    );
    assert!(p
        .b
        .mr(exposed.lkey)
        .unwrap()
        .bytes()
        .iter()
        .all(|&x| x == 0));
}
