//! Pacer: exact departure schedule over a second of virtual time, rate changes, bursts.

use roce_proto::cc::{Pacer, Rate};
use roce_proto::time::Instant;

/// The instant `ns` nanoseconds into the run.
fn at(ns: u64) -> Instant {
    Instant::from_nanos(ns)
}

/// Sends back to back for one second of virtual time at `rate_bps`; checks every departure
/// against the ideal schedule ceil(k·len·8·10^9 / rate) and returns the bytes released.
fn run_one_second(rate_bps: u64, len: u64) -> u128 {
    let mut pacer = Pacer::new(Rate::from_bps(rate_bps), 0);
    let end = 1_000_000_000u64;
    let mut now = Instant::ZERO;
    let mut sent: u128 = 0;
    let mut k: u128 = 0;
    loop {
        let t = pacer.earliest_departure(now, len);
        if t.as_nanos() > end {
            break;
        }
        let ideal_num = k * u128::from(len) * 8_000_000_000;
        let ideal_ceil = ideal_num.div_ceil(u128::from(rate_bps));
        assert_eq!(
            u128::from(t.as_nanos()),
            ideal_ceil,
            "packet {k} at {rate_bps} bit/s drifted"
        );
        now = t;
        pacer.on_sent(now, len);
        sent += u128::from(len);
        k += 1;
    }
    sent
}

#[test]
fn pacer_releases_rate_times_time_within_one_mtu_from_1_mbps_to_400_gbps() {
    let len = 4158u64; // an odd frame size, so per-packet spans have fractional nanoseconds
    for rate in [
        1_000_000u64,
        9_999_991,
        1_000_000_000,
        3_333_333_333,
        25_000_000_000,
        100_000_000_000,
        400_000_000_000,
    ] {
        let sent = run_one_second(rate, len);
        let ideal = u128::from(rate) / 8; // bytes in one second
        let diff = sent.abs_diff(ideal);
        assert!(
            diff <= u128::from(len),
            "{rate} bit/s released {sent} bytes, ideal {ideal}"
        );
    }
}

#[test]
fn rate_change_takes_effect_at_the_next_departure() {
    let mut p = Pacer::new(Rate::from_gbps(1), 0);
    let t0 = Instant::ZERO;
    p.on_sent(t0, 1000); // 8000 ns at 1 Gbit/s
    assert_eq!(p.earliest_departure(t0, 1000), at(8000));
    p.set_rate(at(100), Rate::from_gbps(2));
    // The already scheduled departure keeps its time...
    assert_eq!(p.earliest_departure(at(100), 1000), at(8000));
    p.on_sent(at(8000), 1000);
    // ...and the packets after it are spaced at the new rate.
    assert_eq!(p.earliest_departure(at(8000), 1000), at(12_000));
    p.set_rate(at(9000), Rate::from_mbps(500));
    p.on_sent(at(12_000), 1000);
    assert_eq!(p.earliest_departure(at(12_000), 1000), at(28_000));
}

#[test]
fn burst_lets_burst_bytes_plus_one_packet_leave_back_to_back_after_idle() {
    let mut p = Pacer::new(Rate::from_gbps(1), 3000);
    let now = at(1_000_000);
    for _ in 0..4 {
        assert!(p.can_send(now, 1000));
        p.on_sent(now, 1000);
    }
    assert!(!p.can_send(now, 1000));
    assert_eq!(p.earliest_departure(now, 1000), at(1_008_000));
}

#[test]
fn idle_time_beyond_the_burst_is_not_banked() {
    let mut p = Pacer::new(Rate::from_gbps(1), 0);
    p.on_sent(Instant::ZERO, 1000);
    // Silent for a millisecond: the next packet leaves at once, the one after 8 us later.
    let now = at(1_000_000);
    assert!(p.can_send(now, 1000));
    p.on_sent(now, 1000);
    assert_eq!(p.earliest_departure(now, 1000), at(1_008_000));
}

#[test]
fn paused_pacer_sends_nothing_and_resumes_from_now() {
    let mut p = Pacer::new(Rate::from_gbps(1), 0);
    p.set_rate(Instant::ZERO, Rate::ZERO);
    assert_eq!(
        p.earliest_departure(Instant::ZERO, 1000),
        Instant::FAR_FUTURE
    );
    p.set_rate(at(500), Rate::from_gbps(1));
    assert!(p.can_send(at(500), 1000));
}

#[test]
fn draining_rate_change_rescales_the_wait_still_owed() {
    let mut p = Pacer::new(Rate::from_mbps(1), 0);
    p.on_sent(Instant::ZERO, 1000); // 8 ms at 1 Mbit/s
    assert_eq!(p.earliest_departure(Instant::ZERO, 1000), at(8_000_000));
    // At 1 ms, 7 ms (7000 bits) are still owed; at 1 Gbit/s they take 7 us.
    let t = at(1_000_000);
    p.set_rate_draining(t, Rate::from_gbps(1));
    assert_eq!(p.earliest_departure(t, 1000), at(1_007_000));
    // A cut stretches what is owed: 7 us at 1 Gbit/s is 14 us at 500 Mbit/s.
    p.set_rate_draining(t, Rate::from_mbps(500));
    assert_eq!(p.earliest_departure(t, 1000), at(1_014_000));
    p.on_sent(at(1_014_000), 1000);
    assert_eq!(p.earliest_departure(at(1_014_000), 1000), at(1_030_000));
}
