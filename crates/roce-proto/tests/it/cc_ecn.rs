//! Notification point: CNP pacing per QP.

use roce_proto::ecn::NotificationPoint;
use roce_proto::time::{Duration, Instant};

#[test]
fn ce_stream_at_10_mpps_yields_exactly_one_cnp_per_qp_per_interval() {
    let interval = Duration::from_micros(4);
    let mut np = NotificationPoint::new(interval);
    // Two QPs, each receiving a CE-marked packet every 100 ns (10 Mpps) for 1 ms.
    let mut queued = 0;
    for i in 0..10_000u64 {
        let now = Instant::from_nanos(i * 100);
        queued += u64::from(np.on_ce(now, 17, 0x1001));
        queued += u64::from(np.on_ce(now + Duration::from_nanos(50), 18, 0x1002));
    }
    let mut per_qp = [Vec::new(), Vec::new()];
    while let Some(cnp) = np.poll_cnp(Instant::from_nanos(1_000_000)) {
        let idx = usize::from(cnp.local_qpn == 18);
        assert_eq!(cnp.dest_qpn, if idx == 0 { 0x1001 } else { 0x1002 });
        per_qp[idx].push(cnp.at.as_nanos());
    }
    // 1 ms / 4 us = 250 intervals, one CNP at the start of each.
    assert_eq!(queued, 500);
    assert_eq!(per_qp[0], (0..250).map(|k| k * 4000).collect::<Vec<_>>());
    assert_eq!(
        per_qp[1],
        (0..250).map(|k| k * 4000 + 50).collect::<Vec<_>>()
    );
    let c = np.counters();
    assert_eq!(c.np_ecn_marked_roce_packets, 20_000);
    assert_eq!(c.np_cnp_sent, 500);
}

#[test]
fn removed_qp_starts_a_fresh_interval() {
    let mut np = NotificationPoint::new(Duration::from_micros(50));
    assert!(np.on_ce(Instant::from_nanos(0), 5, 9));
    assert!(!np.on_ce(Instant::from_nanos(10), 5, 9));
    np.remove_qp(5);
    assert!(np.on_ce(Instant::from_nanos(20), 5, 9));
}

#[test]
fn a_notification_point_that_is_off_counts_ce_marks_and_queues_no_cnp() {
    let mut np = NotificationPoint::new(Duration::from_micros(4)).with_enabled(false);
    assert!(!np.is_enabled());
    assert!(!np.on_ce(Instant::from_nanos(0), 5, 9));
    assert!(!np.on_ce(Instant::from_nanos(10_000), 5, 9));
    assert!(!np.has_pending());
    assert_eq!(np.poll_cnp(Instant::from_nanos(10_000)), None);
    let c = np.counters();
    assert_eq!((c.np_ecn_marked_roce_packets, c.np_cnp_sent), (2, 0));
}
