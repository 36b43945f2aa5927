//! A stranger on the segment against the library's progress thread: frames that fail a check
//! (ICRC, QPN, source, P_Key, rights) never reach application memory, and received data stays
//! what the peer sent while they rain in.

use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};

use roce_proto::engine::Engine;
use roce_proto::mr::RegionMemory;
use roce_proto::wire::{atomic_eth, bth, ethernet, reth, Ecn, EtherType, ExtRepr, IpRepr, Opcode};
use roce_proto::wire::{RoceRepr, ROCE_UDP_PORT};

use super::*;

/// How a forged frame differs from one the peer could have sent.
#[derive(Clone, Copy, Debug)]
enum Forgery {
    /// Everything right but the ICRC.
    BadIcrc,
    /// To a QP that does not exist.
    NoSuchQp,
    /// From an address that is not the QP's peer.
    Stranger,
    /// In another partition.
    OtherPkey,
}

const FORGERIES: [Forgery; 4] = [
    Forgery::BadIcrc,
    Forgery::NoSuchQp,
    Forgery::Stranger,
    Forgery::OtherPkey,
];

/// A READ request (`atomic` false) or a FETCH_ADD naming `va`/`rkey` of `to`, sent as if by
/// `from`, forged as `how`.
fn forged(from: &Side, to: &Side, how: Forgery, atomic: bool, rkey: u32, va: u64) -> Vec<u8> {
    let stranger = Ipv4Addr::new(198, 18, 0, 99);
    let src_ip = match how {
        Forgery::Stranger => stranger,
        _ => from.ip,
    };
    let (opcode, ext) = if atomic {
        let a = atomic_eth::Repr {
            va: va & !7,
            rkey,
            swap_add: 1,
            compare: 0,
        };
        (
            Opcode::RC_FETCH_ADD,
            ExtRepr {
                atomic_eth: Some(a),
                ..ExtRepr::default()
            },
        )
    } else {
        let r = reth::Repr {
            va,
            rkey,
            dma_len: 64 * 1024,
        };
        (
            Opcode::RC_RDMA_READ_REQUEST,
            ExtRepr {
                reth: Some(r),
                ..ExtRepr::default()
            },
        )
    };
    let mut repr = RoceRepr {
        eth: ethernet::Repr {
            dst: to.mac,
            src: from.mac,
            vlan: None,
            ethertype: EtherType::Ipv4,
        },
        ip: IpRepr::new_roce(IpAddr::V4(src_ip), IpAddr::V4(to.ip), 0, Ecn::Ect0),
        udp_src_port: ROCE_UDP_PORT,
        bth: bth::Repr {
            opcode,
            pkey: if matches!(how, Forgery::OtherPkey) {
                0x8123
            } else {
                0xffff
            },
            dest_qpn: if matches!(how, Forgery::NoSuchQp) {
                to.qp.qpn + 1000
            } else {
                to.qp.qpn
            },
            ack_req: true,
            psn: Psn::new(100),
            ..bth::Repr::default()
        },
        ext,
        payload_len: 0,
    };
    repr.fill_lengths();
    let mut buf = vec![0u8; repr.frame_len()];
    let n = repr.emit(&[], &mut buf).expect("a frame");
    buf.truncate(n);
    if let (Forgery::BadIcrc, Some(last)) = (how, buf.last_mut()) {
        *last ^= 0x5a;
    }
    buf
}

/// Hands `frame` to `s`'s engine as the runtime does with a received frame.
fn inject(s: &mut Side, frame: &[u8]) {
    let now = s.w.clock.now();
    s.w.host.handle_frame(now, frame);
}

#[test]
fn unverified_reads_and_atomics_never_change_received_data() {
    const LEN: usize = 64 * 1024;
    const ROUNDS: usize = 3;
    const PER_ROUND: usize = 12;
    let n = ROUNDS * PER_ROUND;
    let (mut a, mut b) = pair(0);
    let (src, dst) = (AppMemory::owned(LEN * n), AppMemory::owned(LEN * n));
    for i in 0..n {
        assert!(src.write(i * LEN, &pattern(LEN, i as u8)));
    }
    // Stale bytes where the messages land: a copy taken from here would show.
    assert!(dst.write(0, &vec![0xee; LEN * n]));
    let ma = reg(&mut a, &src, AccessFlags::LOCAL_WRITE);
    // The receive buffers grant no remote right at all.
    let mb = reg(&mut b, &dst, AccessFlags::LOCAL_WRITE);
    let mut sprayed = 0usize;
    for round in 0..ROUNDS {
        for k in 0..PER_ROUND {
            let i = (round * PER_ROUND + k) as u64;
            recv(&mut b, i, sge(&mb, i * LEN as u64, LEN as u32));
            send(
                &mut a,
                i,
                WrOpcode::Send,
                sge(&ma, i * LEN as u64, LEN as u32),
                true,
            );
        }
        let mut turn = 0usize;
        let (mut sent, mut got) = (Vec::new(), Vec::new());
        while sent.len() < PER_ROUND || got.len() < PER_ROUND {
            turn += 1;
            assert!(turn < 200_000, "round {round}: stalled");
            a.w.poll();
            let how = FORGERIES[turn % FORGERIES.len()];
            let va = mb.addr + ((turn % n) * LEN) as u64;
            let frame = forged(&a, &b, how, turn % 3 == 0, mb.rkey, va);
            inject(&mut b, &frame);
            sprayed += 1;
            b.w.poll();
            sent.extend(poll(&a.cq));
            got.extend(poll(&b.cq));
        }
        for c in sent.iter().chain(&got) {
            assert_eq!(c.status, WcStatus::Success, "{c:?}");
        }
    }
    for i in 0..n {
        let (got, want) = (bytes(&dst, i * LEN, LEN), pattern(LEN, i as u8));
        let wrong = got.iter().zip(&want).filter(|(g, w)| g != w).count();
        assert_eq!(
            wrong, 0,
            "bytes wrong in message {i} after {sprayed} forged frames"
        );
    }
}

/// Memory that keeps no bytes and counts what is read and written.
#[derive(Debug)]
struct Counting {
    len: usize,
    touched: Arc<AtomicU64>,
}

impl RegionMemory for Counting {
    fn len(&self) -> usize {
        self.len
    }
    fn read(&self, offset: usize, dst: &mut [u8]) -> bool {
        self.touched.fetch_add(dst.len() as u64, Ordering::Relaxed);
        dst.fill(0);
        offset + dst.len() <= self.len
    }
    fn write(&mut self, offset: usize, src: &[u8]) -> bool {
        self.touched.fetch_add(src.len() as u64, Ordering::Relaxed);
        offset + src.len() <= self.len
    }
}

#[test]
fn a_frame_that_fails_a_check_costs_no_access_whatever_the_regions_size() {
    let (mut a, mut b) = pair(0);
    let touched = Arc::new(AtomicU64::new(0));
    let huge = Counting {
        len: 256 << 20,
        touched: touched.clone(),
    };
    let rights = AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_READ | AccessFlags::REMOTE_ATOMIC;
    let pd = b.pd;
    let mr =
        b.w.host
            .endpoint_mut()
            .reg_mr_lent(pd, 0x7f00_0000_0000, Box::new(huge), rights)
            .expect("registered");
    for how in FORGERIES {
        for atomic in [false, true] {
            for _ in 0..100 {
                let frame = forged(&a, &b, how, atomic, mr.rkey, mr.addr);
                inject(&mut b, &frame);
                b.w.poll();
                a.w.poll();
            }
        }
    }
    assert_eq!(
        touched.load(Ordering::Relaxed),
        0,
        "bytes touched by forged frames"
    );
    // The counter works: a real READ of 4 KiB by the peer reads exactly its 4 KiB.
    let local = AppMemory::owned(4096);
    let ml = reg(&mut a, &local, AccessFlags::LOCAL_WRITE);
    let op = WrOpcode::RdmaRead {
        remote_addr: mr.addr + (128 << 20),
        rkey: mr.rkey,
    };
    let done = complete(&mut a, &mut b, 1, op, sge(&ml, 0, 4096));
    assert_eq!(done[0].status, WcStatus::Success);
    assert_eq!(touched.load(Ordering::Relaxed), 4096);
}
