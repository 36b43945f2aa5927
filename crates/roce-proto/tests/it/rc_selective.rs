//! Selective repeat against go-back-N on the same lossy, reordering link: every byte arrives
//! either way, and selective repeat resends about one packet per packet lost where go-back-N
//! resends the rest of the window (IRN's point, SIGCOMM'18 §4).

use proptest::prelude::*;
use roce_testkit::proptest_seed;
use roce_testkit::rc::{connect, deadline, drain, mr, send_wr, write_wr, IP_A, IP_B, MAC_A, MAC_B};

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use roce_proto::cc::{CcMetrics, CongestionControl, Controller, Rate};
use roce_proto::connect::RcOptions;
use roce_proto::counters::QpCounters;
use roce_proto::endpoint::{Endpoint, EndpointConfig};
use roce_proto::fault::{FaultConfig, FaultCounters, FaultPort};
use roce_proto::loopback::{loopback_pair, EndpointPair};
use roce_proto::qp::RequesterConfig;
use roce_proto::time::{Duration, Instant};
use roce_proto::verbs::{Mtu, Recovery, RecvWr, Sge, WcStatus, WrOpcode};

/// What one run left behind.
struct Outcome {
    /// The requester's counters.
    a: QpCounters,
    /// The responder's counters.
    b: QpCounters,
    /// What the fault injector did to the request direction.
    link: FaultCounters,
}

/// A controller at 100 Gbit/s that counts the losses the transport tells it of.
struct CountLosses {
    losses: Arc<AtomicU64>,
}

impl CongestionControl for CountLosses {
    fn name(&self) -> &'static str {
        "count-losses"
    }
    fn on_cnp(&mut self, _now: Instant) {}
    fn on_loss(&mut self, _now: Instant) {
        self.losses.fetch_add(1, Ordering::Relaxed);
    }
    fn metrics(&self) -> CcMetrics {
        CcMetrics {
            rate: Rate::from_gbps(100),
            target_rate: Rate::from_gbps(100),
            ..CcMetrics::default()
        }
    }
}

/// The link's reordering holds a frame back for at most a few microseconds.
const REORDER_WINDOW: Duration = Duration::from_micros(10);

/// A and B, their requesters waiting `reorder_window` before calling a packet lost.
fn endpoints(reorder_window: Duration) -> (Endpoint, Endpoint) {
    let ep = |mac, ip| {
        Endpoint::new(EndpointConfig {
            key_seed: Some(7),
            requester: RequesterConfig {
                reorder_window,
                ..RequesterConfig::default()
            },
            ..EndpointConfig::ipv4(mac, ip)
        })
    };
    (ep(MAC_A, IP_A), ep(MAC_B, IP_B))
}

/// `messages` alternating 64 KiB WRITEs and 24 KiB SENDs from A to B over a link that drops
/// and reorders requests as `faults` says (responses travel clean, so every packet lost is a
/// request); checks every byte and completion.
fn run(recovery: Recovery, faults: FaultConfig, seed: u64, messages: usize) -> Outcome {
    run_counting(recovery, faults, seed, messages, None)
}

/// [`run`], with a controller on A's QP that counts the losses it hears of into `losses`.
fn run_counting(
    recovery: Recovery,
    faults: FaultConfig,
    seed: u64,
    messages: usize,
    losses: Option<Arc<AtomicU64>>,
) -> Outcome {
    const WRITE: usize = 64 << 10;
    const SEND: usize = 24 << 10;
    let window = if faults.reorder > 0.0 {
        REORDER_WINDOW
    } else {
        Duration::ZERO
    };
    let (a, b) = endpoints(window);
    let (pa, pb) = loopback_pair(9000, 1 << 16);
    let mut p = EndpointPair::new(
        a,
        b,
        FaultPort::new(pa, faults, seed),
        FaultPort::new(pb, FaultConfig::default(), seed),
    );
    let o = RcOptions {
        mtu: Mtu::Mtu1024,
        recovery,
        // 4 ms: long enough that the loopback link's round trips never reach it unless a
        // resent packet is lost again.
        timeout: 10,
        max_send_wr: messages as u32,
        max_recv_wr: messages as u32,
        ..RcOptions::default()
    };
    let (sa, sb) = connect(&mut p, &o);
    if let Some(losses) = losses {
        let cc = Controller::Custom(Box::new(CountLosses { losses }));
        p.a.set_congestion_control(sa.qpn, cc, 64 << 10).unwrap();
    }
    let mut pairs = Vec::new();
    for i in 0..messages {
        let len = if i % 2 == 0 { WRITE } else { SEND };
        let src = mr(&mut p.a, &sa, len, i as u8);
        let dst = mr(&mut p.b, &sb, len, 0);
        let wr = if i % 2 == 0 {
            write_wr(i as u64, &src, &dst, len as u32)
        } else {
            let sge = Sge {
                addr: dst.addr,
                length: len as u32,
                lkey: dst.lkey,
            };
            p.b.post_recv(sb.qpn, RecvWr::new(i as u64, sge)).unwrap();
            send_wr(i as u64, WrOpcode::Send, &src, 0, len as u32)
        };
        p.a.post_send(sa.qpn, wr).unwrap();
        pairs.push((src.lkey, dst.lkey, len));
    }
    let (mut sent, mut received) = (Vec::new(), Vec::new());
    let end = deadline(&p, 10);
    let done = p.run_until(end, |_, a, b| {
        drain(a, &sa, &mut sent);
        drain(b, &sb, &mut received);
        sent.len() == messages && received.len() == messages / 2
    });
    let a = *p.a.qp(sa.qpn).unwrap().counters();
    let b = *p.b.qp(sb.qpn).unwrap().counters();
    assert!(
        done,
        "{recovery:?}: {} sent, {} received; A {a:?}",
        sent.len(),
        received.len()
    );
    assert!(
        sent.iter().all(|w| w.status == WcStatus::Success),
        "{sent:?}"
    );
    assert!(received.iter().all(|w| w.status == WcStatus::Success));
    for (i, &(src, dst, len)) in pairs.iter().enumerate() {
        let want = &p.a.mr(src).unwrap().bytes()[..len];
        assert!(
            &p.b.mr(dst).unwrap().bytes()[..len] == want,
            "{recovery:?}: message {i} differs"
        );
    }
    let link = p.port_a.counters();
    Outcome { a, b, link }
}

#[test]
fn selective_repeat_resends_what_was_lost_where_go_back_n_resends_the_window() {
    let faults = FaultConfig {
        loss: 0.05,
        ..FaultConfig::default()
    };
    let gbn = run(Recovery::GoBackN, faults, 7, 32);
    let sr = run(Recovery::SelectiveRepeat, faults, 7, 32);
    let ratio = |o: &Outcome| o.a.retransmitted_packets as f64 / o.link.dropped.max(1) as f64;
    assert!(
        sr.link.dropped > 50,
        "too few losses to compare: {}",
        sr.link.dropped
    );
    assert!(
        ratio(&sr) <= 1.5,
        "selective repeat resent {} packets for {} lost",
        sr.a.retransmitted_packets,
        sr.link.dropped
    );
    assert!(
        ratio(&gbn) >= 5.0,
        "go-back-N resent only {} packets for {} lost",
        gbn.a.retransmitted_packets,
        gbn.link.dropped
    );
    // The responder placed packets that overtook a loss instead of dropping them.
    assert!(sr.b.out_of_order_placed > 0 && gbn.b.out_of_order_placed == 0);
    assert!(sr.a.selective_naks > 0 && gbn.a.selective_naks == 0);
}

/// Reordering alone is no loss: with a reorder window longer than the link holds a frame back,
/// selective repeat resends nothing and the controller hears of no loss (it hears of one when a
/// packet is really lost).
#[test]
fn the_controller_hears_of_a_loss_only_when_a_packet_is_resent() {
    let reorder = FaultConfig {
        reorder: 0.05,
        ..FaultConfig::default()
    };
    let heard = Arc::new(AtomicU64::new(0));
    let o = run_counting(
        Recovery::SelectiveRepeat,
        reorder,
        3,
        12,
        Some(heard.clone()),
    );
    assert!(
        o.link.reordered > 10 && o.b.out_of_order_placed > 10,
        "{:?}",
        o.b
    );
    assert_eq!(o.a.retransmitted_packets, 0);
    assert_eq!(heard.load(Ordering::Relaxed), 0, "{:?}", o.a);
    assert!(o.a.selective_naks > 0);
    let loss = FaultConfig {
        loss: 0.03,
        ..FaultConfig::default()
    };
    let heard = Arc::new(AtomicU64::new(0));
    let o = run_counting(Recovery::SelectiveRepeat, loss, 3, 12, Some(heard.clone()));
    assert!(
        o.link.dropped > 0 && heard.load(Ordering::Relaxed) > 0,
        "{:?}",
        o.a
    );
}

proptest! {
    #![proptest_config(proptest_seed::config("selective repeat", "ROCE_PROPTEST_SEED", 16))]

    #[test]
    fn selective_repeat_resends_at_most_half_again_what_random_loss_and_reordering_took(
        seed in any::<u64>(),
        loss in 0.005f64..0.08,
        reorder in 0.0f64..0.10,
    ) {
        let faults = FaultConfig { loss, reorder, ..FaultConfig::default() };
        let o = run(Recovery::SelectiveRepeat, faults, seed, 12);
        prop_assert!(
            o.a.retransmitted_packets as f64 <= 1.5 * o.link.dropped as f64,
            "resent {} for {} lost ({} reordered); A {:?}",
            o.a.retransmitted_packets, o.link.dropped, o.link.reordered, o.a
        );
    }
}
