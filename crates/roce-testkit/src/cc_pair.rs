//! Two real endpoints with one connected RC QP each, for the congestion-control tests and the
//! CC bench: endpoint `i` is MAC 02:00:00:00:00:i, IPv4 198.18.0.i; `a` writes into a region of
//! `b`.

use std::net::Ipv4Addr;

use roce_proto::connect::{connect_rc, RcOptions, RcSide};
use roce_proto::endpoint::{Endpoint, EndpointConfig};
use roce_proto::mr::MrInfo;
use roce_proto::time::Instant;
use roce_proto::verbs::{AccessFlags, SendWr};
use roce_proto::wire::EthernetAddress;

pub use crate::work_requests::{send_wr, write_wr};

/// The configuration of endpoint `i`.
pub fn config(i: u8) -> EndpointConfig {
    EndpointConfig {
        key_seed: Some(u64::from(i)),
        ..EndpointConfig::ipv4(
            EthernetAddress([2, 0, 0, 0, 0, i]),
            Ipv4Addr::new(198, 18, 0, i),
        )
    }
}

/// A connected pair and a `len`-byte source region on `a`, destination region on `b`.
pub struct Pair {
    /// The sender.
    pub a: Endpoint,
    /// The receiver.
    pub b: Endpoint,
    /// The sender's QP.
    pub sa: RcSide,
    /// The receiver's QP.
    pub sb: RcSide,
    /// Source region on `a`.
    pub src: MrInfo,
    /// Destination region on `b`.
    pub dst: MrInfo,
}

impl Pair {
    /// Endpoints configured by `cfg(1)` and `cfg(2)`, connected with `opts`.
    pub fn new(cfg: impl Fn(u8) -> EndpointConfig, opts: &RcOptions, len: usize) -> Pair {
        let (mut a, mut b) = (Endpoint::new(cfg(1)), Endpoint::new(cfg(2)));
        let (sa, sb) = connect_rc(&mut a, &mut b, opts).expect("connect_rc");
        let src = a.reg_mr(sa.pd, len, AccessFlags::LOCAL_WRITE);
        let dst = b.reg_mr(
            sb.pd,
            len,
            AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE,
        );
        Pair {
            a,
            b,
            sa,
            sb,
            src,
            dst,
        }
    }

    /// An RDMA WRITE of the first `len` bytes of `src` into `dst`.
    pub fn write_wr(&self, id: u64, len: u32) -> SendWr {
        write_wr(id, &self.src, &self.dst, len)
    }

    /// Posts [`Pair::write_wr`] on `a`.
    pub fn post_write(&mut self, id: u64, len: u32) {
        let wr = self.write_wr(id, len);
        self.a.post_send(self.sa.qpn, wr).expect("post_send");
    }
}

/// The instant `ns` nanoseconds after zero.
pub fn t(ns: u64) -> Instant {
    Instant::from_nanos(ns)
}

/// Every frame `ep` has to send at `now`.
pub fn transmit(ep: &mut Endpoint, now: Instant) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut buf = vec![0u8; 9000];
    while let Some(n) = ep.poll_transmit(now, &mut buf) {
        out.push(buf[..n].to_vec());
    }
    out
}
