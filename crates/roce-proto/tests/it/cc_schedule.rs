//! How a paced QP's departure time reaches the endpoint's timer: a departure the pacer already
//! allows is no deadline (the loop must not fire timers on every poll of an unthrottled flow),
//! a departure it holds back is.

use roce_testkit::cc_pair;

use cc_pair::Pair;
use roce_proto::cc::{CcConfig, Rate};
use roce_proto::connect::RcOptions;
use roce_proto::time::Instant;
use roce_proto::verbs::Mtu;

/// A pair whose sender paces with `cc` at `gbps` and `burst` bytes of burst, no ACK timeout,
/// a 64 KiB WRITE posted.
fn paced_pair(cc: &str, gbps: u64, burst: u64) -> Pair {
    let opts = RcOptions {
        mtu: Mtu::Mtu1024,
        timeout: 0,
        ..RcOptions::default()
    };
    let mut p = Pair::new(cc_pair::config, &opts, 1 << 16);
    let cc = CcConfig::new(cc, Rate::from_gbps(gbps))
        .expect("cc")
        .build();
    p.a.set_congestion_control(p.sa.qpn, cc, burst)
        .expect("set_congestion_control");
    p.post_write(1, 1 << 16);
    p
}

#[test]
fn unthrottled_paced_qp_reports_no_departure_deadline() {
    let mut p = paced_pair("none", 400, 64 * 1024);
    let now = Instant::from_nanos(1_000);
    let mut buf = vec![0u8; 2048];
    for _ in 0..4 {
        assert!(p.a.poll_transmit(now, &mut buf).is_some());
        assert_eq!(p.a.poll_timeout(), None);
    }
}

#[test]
fn held_paced_qp_reports_its_departure_as_deadline() {
    // 1 Gbit/s, no burst: a frame of n bytes holds the next one back n * 8 ns.
    let mut p = paced_pair("none", 1, 0);
    let now = Instant::from_nanos(1_000);
    let mut buf = vec![0u8; 2048];
    let n = p.a.poll_transmit(now, &mut buf).expect("first frame");
    let due = Instant::from_nanos(1_000 + 8 * n as u64);
    assert_eq!(p.a.poll_timeout(), Some(due));
    assert_eq!(p.a.poll_transmit(now, &mut buf), None);
    assert!(p.a.poll_transmit(due, &mut buf).is_some());
}
