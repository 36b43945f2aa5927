//! NVIDIA's RTT-based controller (`roce_proto::cc::nvidia_rtt`) against the rules of its
//! reference, DOCA PCC's `rtt_template.c` (`algorithm_core` and the CNP handler).

use roce_proto::cc::nvidia_rtt::{Rule, FXP20_ONE};
use roce_proto::cc::{CongestionControl, NvidiaRtt, NvidiaRttParams, Rate};
use roce_proto::time::{Duration, Instant};

fn us(t: u64) -> Instant {
    Instant::from_nanos(t * 1_000)
}

#[test]
fn the_reference_defaults_and_their_factors() {
    let p = NvidiaRttParams::default();
    assert_eq!(
        (p.update_factor, p.ai, p.new_flow_rate, p.min_rate),
        (6553, 52428, 1 << 20, 64)
    );
    let full = FXP20_ONE;
    // 1 − u, 1 − 2u, 1 − 5u of the line rate, truncated.
    assert_eq!(
        p.next_rate(full, 14_000, false, false),
        (943_728, Rule::Rtt)
    );
    assert_eq!(p.next_rate(full, 1_000, true, false), (838_880, Rule::Cnp));
    assert_eq!(
        p.next_rate(full, 150_000, false, false),
        (838_880, Rule::Cnp)
    );
    assert_eq!(
        p.next_rate(full, 150_000, true, true),
        (524_336, Rule::Nack)
    );
    // A NACK under max_delay does not act; the RTT rule does.
    assert_eq!(
        p.next_rate(full, 13_000, false, true),
        (full, Rule::Increase)
    );
    assert_eq!(
        p.next_rate(500_000, 13_000, false, false),
        (552_428, Rule::Increase)
    );
    assert_eq!(p.next_rate(64, 200_000, true, true), (64, Rule::Nack));
}

#[test]
fn a_cnp_waits_for_the_next_rtt_sample_and_a_sample_acts_once_per_round() {
    let line = Rate::from_gbps(100);
    let mut c = NvidiaRtt::new(NvidiaRttParams::default(), line);
    assert_eq!(c.rate(), line);
    c.on_cnp(us(1));
    c.on_cnp(us(2));
    assert_eq!((c.rate(), c.metrics().rp_cnp_ignored), (line, 1));
    // Sent at 5 us, back at 10 us: the CNP rule, 20 % off.
    c.on_ack(us(10), 1024, Some(Duration::from_micros(5)));
    assert_eq!(c.rate_fxp(), 838_880);
    assert_eq!(c.metrics().cnp_rate_cuts, 1);
    // Sent at 9 us, before that update: the same round, ignored.
    c.on_ack(us(14), 1024, Some(Duration::from_micros(5)));
    assert_eq!(c.rate_fxp(), 838_880);
    // Sent at 10 us: a new round, under base_rtt, so + ai.
    c.on_ack(us(15), 1024, Some(Duration::from_micros(5)));
    assert_eq!(c.rate_fxp(), 838_880 + 52_428);
    assert_eq!((c.metrics().rate_cuts, c.metrics().rate_increases), (1, 1));
}

#[test]
fn an_rtt_above_base_cuts_by_u_and_a_loss_waits_for_max_delay() {
    let line = Rate::from_gbps(25);
    let mut c = NvidiaRtt::new(NvidiaRttParams::default(), line);
    // 14 us > base_rtt (13 us): 1 − 6553/65536 of the line rate.
    c.on_ack(us(14), 1024, Some(Duration::from_micros(14)));
    assert_eq!(c.rate_fxp(), 943_728);
    // 25 Gbit/s · 943728/2^20, rounded (6553/65536 is a little under 10 %).
    assert_eq!(c.rate(), Rate::from_bps(22_500_228_882));
    // A loss under max_delay: the RTT rule acts and the NACK stays pending.
    c.on_loss(us(15));
    c.on_ack(us(30), 1024, Some(Duration::from_micros(16)));
    let cut = (943_728u64 * 58_983) >> 16;
    assert_eq!(u64::from(c.rate_fxp()), cut);
    // At max_delay the pending NACK halves (1 − 5u), then is forgotten: the next late sample
    // cuts as a CNP does (1 − 2u).
    c.on_ack(us(200), 1024, Some(Duration::from_micros(150)));
    let halved = (cut * 32_771) >> 16;
    assert_eq!(u64::from(c.rate_fxp()), halved);
    c.on_ack(us(400), 1024, Some(Duration::from_micros(200)));
    assert_eq!(u64::from(c.rate_fxp()), (halved * 52_430) >> 16);
    let m = c.metrics();
    assert_eq!((m.rate_cuts, m.rate_increases, m.cnp_rate_cuts), (4, 0, 0));
}

#[test]
fn settings_that_would_wrap_the_reference_factors_are_refused() {
    let mut cfg = roce_proto::cc::CcConfig::new("nvidia-rtt", Rate::from_gbps(100)).unwrap();
    assert!(cfg.apply("update_factor=13107").is_ok());
    let e = cfg.apply("update_factor=13108").unwrap_err();
    assert!(e.to_string().contains("update_factor"), "{e}");
    assert!(cfg.apply("min_rate=0").is_err());
    assert!(matches!(
        roce_proto::cc::CcConfig::new("rtt-template", Rate::from_gbps(100))
            .unwrap()
            .build(),
        roce_proto::cc::Controller::NvidiaRtt(_)
    ));
}
