//! What `roce perf verbs-peer` met against rxe with traffic class 2: a CE mark on a READ
//! response (the READ's data flows from the responder to us) makes our notification point send
//! a CNP to the responder's QP, as on a request; a CE-marked ACK does not.

use roce_testkit::rc;

use rc::script::*;
use rc::send_wr;
use roce_proto::connect::RcOptions;
use roce_proto::psn::Psn;
use roce_proto::verbs::{Mtu, WrOpcode};
use roce_proto::wire::opcode::Opcode;
use roce_proto::wire::Ecn;

fn read_of(s: &mut Script, len: u32) {
    let mr = s.mr(8192, rc::ALL_ACCESS);
    let wr = send_wr(
        1,
        WrOpcode::RdmaRead {
            remote_addr: 0x9000,
            rkey: 5,
        },
        &mr,
        0,
        len,
    );
    s.ep.post_send(s.qpn, wr).unwrap();
    assert_eq!(s.recv_all().len(), 1, "the READ request");
}

fn script() -> Script {
    Script::new(&RcOptions {
        mtu: Mtu::Mtu256,
        b_psn: Psn::new(40),
        ..RcOptions::default()
    })
}

#[test]
fn ce_marked_read_response_gets_a_cnp_to_the_responder() {
    let mut s = script();
    read_of(&mut s, 64);
    let resp = Pkt::new(Opcode::RC_RDMA_READ_RESPONSE_ONLY, 40)
        .ext(ack(0, 0x1f, 1).ext)
        .payload(&[7; 64]);
    s.send_ecn(&resp, Ecn::Ce);
    let cnp = s.recv().expect("a CNP");
    assert_eq!(cnp.opcode, Opcode::CNP);
    assert_eq!(cnp.dest_qpn, Some(PEER_QPN));
    let np = s.ep.np_counters();
    assert_eq!((np.np_ecn_marked_roce_packets, np.np_cnp_sent), (1, 1));
}

#[test]
fn ce_marked_ack_gets_no_cnp() {
    let mut s = script();
    read_of(&mut s, 64);
    s.send_ecn(&ack(39, 0x1f, 0), Ecn::Ce);
    assert_eq!(s.ep.np_counters().np_cnp_sent, 0);
    assert!(s.recv_all().iter().all(|p| p.opcode != Opcode::CNP));
}
