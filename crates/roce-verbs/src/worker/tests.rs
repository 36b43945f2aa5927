//! Two workers over an in-memory port pair, driven turn by turn on one thread: what the
//! application memory holds after each verb, on the active and the passive side.

mod hostile;

use std::net::Ipv4Addr;

use crossbeam_channel::bounded;
use roce_dpdk::clock::MonotonicClock;
use roce_proto::connect::RcOptions;
use roce_proto::endpoint::EndpointConfig;
use roce_proto::loopback::{loopback_pair, LoopbackPort};
use roce_proto::mr::{MrInfo, PdHandle};
use roce_proto::psn::Psn;
use roce_proto::resolving::ResolvingEndpoint;
use roce_proto::verbs::{AddressVector, QpState, Sgl, WrOpcode};

use super::*;
use crate::command::Reply;
use crate::objects::{QpCaps, QpSpec};
use crate::sys::memory::AppMemory;

type W = Worker<LoopbackPort, MonotonicClock>;

struct Side {
    w: W,
    ip: Ipv4Addr,
    mac: EthernetAddress,
    pd: PdHandle,
    cq: Arc<Cq>,
    qp: Arc<Qp>,
}

fn call<T>(w: &mut W, make: impl FnOnce(Reply<T>) -> Command) -> T {
    let (tx, rx) = bounded(1);
    w.handle(make(tx));
    rx.try_recv().expect("the worker answers at once")
}

fn side(port: LoopbackPort, last: u8, max_inline: u32) -> Side {
    let ip = Ipv4Addr::new(198, 18, 0, last);
    let mac = EthernetAddress([2, 0, 0, 0, 0, last]);
    let host = ResolvingEndpoint::new(EndpointConfig::ipv4(mac, ip));
    let mut w = Worker::new(port, MonotonicClock::new(), host, None, Mtu::Mtu1024);
    let pd = call(&mut w, Command::AllocPd);
    let cq = Arc::new(Cq::new(64, None));
    let c = cq.clone();
    call(&mut w, |reply| Command::CreateCq { cq: c, reply });
    let spec = QpSpec {
        pd,
        send_cq: cq.clone(),
        recv_cq: cq.clone(),
        caps: QpCaps {
            max_send_wr: 16,
            max_recv_wr: 16,
            max_send_sge: 4,
            max_recv_sge: 4,
            max_inline,
        },
        sq_sig_all: false,
    };
    let qp = call(&mut w, |reply| Command::CreateQp { spec, reply }).expect("a QP");
    Side {
        w,
        ip,
        mac,
        pd,
        cq,
        qp,
    }
}

fn modify(s: &mut Side, attr: QpAttr) {
    let qp = s.qp.clone();
    let r = call(&mut s.w, |reply| Command::ModifyQp { qp, attr, reply });
    assert!(r.is_ok(), "modify_qp: {r:?}");
}

/// Moves `x`'s QP to RTS towards `y`'s as a program would: RESET → INIT → RTR → RTS, the peer
/// named by its IP only (ARP finds the MAC), no recovery named (libibverbs has no such
/// attribute: the worker's configuration chooses).
fn connect(x: &mut Side, y: &Side) {
    let av = AddressVector {
        remote_ip: y.ip.into(),
        remote_mac: roce_proto::resolving::UNKNOWN_MAC,
        traffic_class: 0,
        hop_limit: 64,
    };
    for attr in RcOptions::default().attrs_to_rts(y.qp.qpn, av, Psn::new(100), Psn::new(100)) {
        modify(
            x,
            QpAttr {
                recovery: None,
                ..attr
            },
        );
    }
    assert_eq!(x.qp.state(), QpState::Rts);
}

/// Connects the two QPs as a program would: RESET → INIT → RTR → RTS, peers by IP only.
fn pair(max_inline: u32) -> (Side, Side) {
    let (pa, pb) = loopback_pair(4096, 1024);
    let (mut a, mut b) = (side(pa, 1, max_inline), side(pb, 2, max_inline));
    connect(&mut a, &b);
    connect(&mut b, &a);
    (a, b)
}

fn run_until(a: &mut Side, b: &mut Side, mut done: impl FnMut(&Side, &Side) -> bool) {
    for _ in 0..10_000 {
        a.w.poll();
        b.w.poll();
        if done(a, b) {
            return;
        }
    }
    panic!("nothing happened in 10 000 turns");
}

fn reg(s: &mut Side, mem: &AppMemory, access: AccessFlags) -> MrInfo {
    let (pd, mem, iova) = (s.pd, mem.clone(), mem.addr());
    call(&mut s.w, |reply| Command::RegMr {
        pd,
        mem,
        iova,
        access,
        reply,
    })
    .expect("registered")
}

fn sge(mr: &MrInfo, offset: u64, length: u32) -> Sgl {
    let mut sgl = Sgl::new();
    sgl.push(Sge {
        addr: mr.addr + offset,
        length,
        lkey: mr.lkey,
    });
    sgl
}

fn send(s: &mut Side, wr_id: u64, opcode: WrOpcode, sgl: Sgl, signaled: bool) {
    let qpn = s.qp.qpn;
    s.qp.reserve_send(1).expect("room in the send queue");
    let wr = SendRequest {
        wr_id,
        opcode,
        sgl,
        signaled,
        flags: SendFlags::empty(),
        inline: None,
    };
    s.w.handle(Command::PostSend { qpn, wrs: vec![wr] });
}

fn recv(s: &mut Side, wr_id: u64, sgl: Sgl) {
    let qpn = s.qp.qpn;
    s.qp.reserve_recv(1).expect("room in the receive queue");
    s.w.handle(Command::PostRecv {
        qpn,
        wrs: vec![RecvRequest { wr_id, sgl }],
    });
}

/// Posts a signaled `opcode` from `a` and runs both sides until `a` completes something; returns
/// `a`'s completions.
fn complete(a: &mut Side, b: &mut Side, wr_id: u64, opcode: WrOpcode, sgl: Sgl) -> Vec<Completion> {
    send(a, wr_id, opcode, sgl, true);
    run_until(a, b, |a, _| !a.cq.is_empty());
    poll(&a.cq)
}

fn poll(cq: &Cq) -> Vec<Completion> {
    let mut out = Vec::new();
    cq.poll(64, |_, c| out.push(c));
    out
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31) ^ seed)
        .collect()
}

fn bytes(m: &AppMemory, offset: usize, len: usize) -> Vec<u8> {
    let mut out = vec![0; len];
    assert!(m.read(offset, &mut out));
    out
}

/// A connected pair and `len` bytes of application memory on each side: `local` on `a`
/// registered for local writes, `remote` on `b` for local writes and `remote_access`.
struct Regions {
    a: Side,
    b: Side,
    local: AppMemory,
    remote: AppMemory,
    ma: MrInfo,
    mb: MrInfo,
}

fn regions(len: usize, remote_access: AccessFlags) -> Regions {
    let (mut a, mut b) = pair(0);
    let (local, remote) = (AppMemory::owned(len), AppMemory::owned(len));
    let ma = reg(&mut a, &local, AccessFlags::LOCAL_WRITE);
    let mb = reg(&mut b, &remote, AccessFlags::LOCAL_WRITE | remote_access);
    Regions {
        a,
        b,
        local,
        remote,
        ma,
        mb,
    }
}

#[test]
fn write_lands_in_the_passive_sides_application_memory() {
    let mut r = regions(8192, AccessFlags::REMOTE_WRITE);
    assert!(r.local.write(0, &pattern(8192, 7)));
    // 5000 bytes: five packets at MTU 1024, written 100 bytes into the target.
    let op = WrOpcode::RdmaWrite {
        remote_addr: r.mb.addr + 100,
        rkey: r.mb.rkey,
    };
    let done = complete(&mut r.a, &mut r.b, 42, op, sge(&r.ma, 10, 5000));
    assert_eq!(done.len(), 1);
    assert_eq!((done[0].wr_id, done[0].status), (42, WcStatus::Success));
    assert_eq!(bytes(&r.remote, 100, 5000), &pattern(8192, 7)[10..5010]);
    assert_eq!(bytes(&r.remote, 0, 100), vec![0; 100]);
    assert_eq!(bytes(&r.remote, 5100, 100), vec![0; 100]);
    assert!(r.b.cq.is_empty(), "a WRITE completes nothing on the target");
    // The target's counters outlive its QP (programs destroy QPs before the exit report).
    let count = |w: &W, name: &str| w.counters().iter().find(|c| c.0 == name).map(|c| c.1);
    let qpn = r.b.qp.qpn;
    call(&mut r.b.w, |reply| Command::DestroyQp { qpn, reply });
    assert_eq!(count(&r.b.w, "rx_write_requests"), Some(1));
    assert_eq!(
        count(&r.b.w, "rcvd_pkts"),
        Some(5),
        "the five WRITE packets (ARP is not RoCE)"
    );
}

/// The WRITE of `write_lands_in_the_passive_sides_application_memory` between two workers that
/// give their QPs `recovery`, the QPs connected as a program does (no recovery named): the bytes
/// land, and the requester's bytes on the wire are returned.
fn write_with(recovery: Recovery) -> u64 {
    let (pa, pb) = loopback_pair(4096, 1024);
    let mut a = side(pa, 1, 0);
    let mut b = side(pb, 2, 0);
    a.w.recovery = recovery;
    b.w.recovery = recovery;
    connect(&mut a, &b);
    connect(&mut b, &a);
    let (local, remote) = (AppMemory::owned(8192), AppMemory::owned(8192));
    let ma = reg(&mut a, &local, AccessFlags::LOCAL_WRITE);
    let mb = reg(
        &mut b,
        &remote,
        AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE,
    );
    assert!(local.write(0, &pattern(8192, 9)));
    let op = WrOpcode::RdmaWrite {
        remote_addr: mb.addr,
        rkey: mb.rkey,
    };
    let done = complete(&mut a, &mut b, 7, op, sge(&ma, 0, 5000));
    assert_eq!((done[0].wr_id, done[0].status), (7, WcStatus::Success));
    assert_eq!(bytes(&remote, 0, 5000), &pattern(8192, 9)[..5000]);
    let qp = a.w.host.endpoint().qp(a.qp.qpn).expect("the QP");
    qp.counters().tx_bytes
}

#[test]
fn the_configured_recovery_reaches_qps_whose_program_names_none() {
    let go_back_n = write_with(Recovery::GoBackN);
    let selective = write_with(Recovery::SelectiveRepeat);
    // Five packets, each 24 bytes longer for its placement header.
    assert_eq!(selective - go_back_n, 5 * 24);
}

#[test]
fn read_returns_what_the_responders_application_holds_now() {
    let mut r = regions(4096, AccessFlags::REMOTE_READ);
    // Written by the application after registration: the transport never saw these bytes.
    assert!(r.remote.write(0, &pattern(3000, 3)));
    let op = WrOpcode::RdmaRead {
        remote_addr: r.mb.addr,
        rkey: r.mb.rkey,
    };
    let done = complete(&mut r.a, &mut r.b, 7, op, sge(&r.ma, 0, 3000));
    assert_eq!(done.len(), 1);
    assert_eq!(
        (done[0].status, done[0].byte_len),
        (WcStatus::Success, 3000)
    );
    assert_eq!(bytes(&r.local, 0, 3000), pattern(3000, 3));
}

#[test]
fn sends_land_in_posted_receives_and_unsignaled_ones_complete_silently() {
    let mut r = regions(4096, AccessFlags::empty());
    for i in 0..3u64 {
        recv(&mut r.b, 100 + i, sge(&r.mb, i * 1024, 1024));
    }
    for i in 0..3u64 {
        // The application fills each message just before posting it.
        assert!(r.local.write(i as usize * 1024, &pattern(700, i as u8)));
        send(
            &mut r.a,
            i,
            WrOpcode::Send,
            sge(&r.ma, i * 1024, 700),
            i == 2,
        );
    }
    run_until(&mut r.a, &mut r.b, |x, y| {
        !x.cq.is_empty() && y.cq.len() == 3
    });
    let sent = poll(&r.a.cq);
    assert_eq!(sent.len(), 1, "only the signaled send completes");
    assert_eq!((sent[0].wr_id, sent[0].opcode), (2, WcOpcode::Send));
    let got = poll(&r.b.cq);
    let ids: Vec<u64> = got.iter().map(|c| c.wr_id).collect();
    assert_eq!(ids, [100, 101, 102]);
    for (i, c) in got.iter().enumerate() {
        assert_eq!(
            (c.opcode, c.byte_len, c.src_qp),
            (WcOpcode::Recv, 700, r.a.qp.qpn)
        );
        assert_eq!(bytes(&r.remote, i * 1024, 700), pattern(700, i as u8));
    }
    assert_eq!(
        bytes(&r.remote, 700, 10),
        vec![0; 10],
        "only the received bytes are stored"
    );
}

#[test]
fn inline_sends_carry_the_bytes_copied_when_posted() {
    let (mut a, mut b) = pair(64);
    let dst = AppMemory::owned(256);
    let mb = reg(&mut b, &dst, AccessFlags::LOCAL_WRITE);
    recv(&mut b, 1, sge(&mb, 0, 256));
    recv(&mut b, 2, sge(&mb, 128, 128));
    let qpn = a.qp.qpn;
    a.qp.reserve_send(2).expect("room");
    let wr = |wr_id, data: &[u8]| SendRequest {
        wr_id,
        opcode: WrOpcode::SendWithImm { imm: 0xdead_beef },
        sgl: Sgl::new(),
        signaled: true,
        flags: SendFlags::empty(),
        inline: Some(data.to_vec()),
    };
    let wrs = vec![wr(1, b"inline bytes, no registration"), wr(2, &[9; 64])];
    a.w.handle(Command::PostSend { qpn, wrs });
    run_until(&mut a, &mut b, |a, b| a.cq.len() == 2 && b.cq.len() == 2);
    let got = poll(&b.cq);
    assert_eq!((got[0].byte_len, got[0].imm), (29, Some(0xdead_beef)));
    assert_eq!(bytes(&dst, 0, 29), b"inline bytes, no registration");
    assert_eq!(bytes(&dst, 128, 64), vec![9; 64]);
    assert!(poll(&a.cq).iter().all(|c| c.status == WcStatus::Success));
}

#[test]
fn atomics_update_the_responders_application_memory() {
    let mut r = regions(64, AccessFlags::REMOTE_ATOMIC);
    assert!(r.remote.write(8, &40u64.to_le_bytes()));
    let (remote_addr, rkey) = (r.mb.addr + 8, r.mb.rkey);
    // Add 2 to 40, then swap 7 for the 42 that makes: each lands the value before at the next
    // 8 bytes of `r.local`.
    let steps = [
        (
            WrOpcode::AtomicFetchAndAdd {
                remote_addr,
                rkey,
                add: 2,
            },
            40u64,
            42u64,
        ),
        (
            WrOpcode::AtomicCmpAndSwp {
                remote_addr,
                rkey,
                compare: 42,
                swap: 7,
            },
            42,
            7,
        ),
    ];
    for (wr_id, (op, before, after)) in (1..).zip(steps) {
        let at = 8 * (wr_id - 1);
        let done = complete(&mut r.a, &mut r.b, wr_id, op, sge(&r.ma, at, 8));
        assert_eq!(done[0].status, WcStatus::Success, "{op:?}");
        assert_eq!(
            bytes(&r.local, at as usize, 8),
            before.to_le_bytes(),
            "{op:?}"
        );
        assert_eq!(bytes(&r.remote, 8, 8), after.to_le_bytes(), "{op:?}");
    }
}

#[test]
fn sends_posted_before_arp_resolves_wait_for_it() {
    let (pa, pb) = loopback_pair(4096, 1024);
    let (mut a, mut b) = (side(pa, 1, 0), side(pb, 2, 0));
    let o = RcOptions::default();
    let av = |ip: Ipv4Addr| AddressVector {
        remote_ip: ip.into(),
        remote_mac: roce_proto::resolving::UNKNOWN_MAC,
        traffic_class: 0,
        hop_limit: 64,
    };
    // Nothing polled between the modifications and the post: ARP has not even started.
    for attr in o.attrs_to_rts(b.qp.qpn, av(b.ip), Psn::new(1), Psn::new(1)) {
        modify(&mut a, attr);
    }
    for attr in o.attrs_to_rts(a.qp.qpn, av(a.ip), Psn::new(1), Psn::new(1)) {
        modify(&mut b, attr);
    }
    let src = AppMemory::owned(64);
    let dst = AppMemory::owned(64);
    assert!(src.write(0, b"early"));
    let ma = reg(&mut a, &src, AccessFlags::LOCAL_WRITE);
    let mb = reg(&mut b, &dst, AccessFlags::LOCAL_WRITE);
    recv(&mut b, 9, sge(&mb, 0, 64));
    send(&mut a, 8, WrOpcode::Send, sge(&ma, 0, 5), true);
    run_until(&mut a, &mut b, |a, b| !a.cq.is_empty() && !b.cq.is_empty());
    assert_eq!(poll(&a.cq)[0].status, WcStatus::Success);
    assert_eq!(poll(&b.cq)[0].byte_len, 5);
    assert_eq!(bytes(&dst, 0, 5), b"early");
}

#[test]
fn a_bad_lkey_completes_with_a_protection_error_and_moves_the_qp_to_error() {
    let (mut a, mut b) = pair(0);
    send(
        &mut a,
        5,
        WrOpcode::Send,
        sge(
            &MrInfo {
                lkey: 0x00de_ad00,
                rkey: 0,
                addr: 0x1000,
                length: 64,
                access: AccessFlags::empty(),
            },
            0,
            8,
        ),
        false,
    );
    run_until(&mut a, &mut b, |a, _| !a.cq.is_empty());
    let done = poll(&a.cq);
    assert_eq!((done[0].wr_id, done[0].status), (5, WcStatus::LocProtErr));
    assert_eq!(a.qp.state(), QpState::Err);
    assert_eq!(a.w.qp_count(), 1);
    let qpn = a.qp.qpn;
    call(&mut a.w, |reply| Command::DestroyQp { qpn, reply });
    assert_eq!(a.w.qp_count(), 0);
}
