//! Randomized invariants (proptest prints the failing case and persists its seed).

use proptest::prelude::*;
use roce_proto::cc::params::ParamSet;
use roce_proto::cc::registry::BUILTIN;
use roce_proto::cc::{CcConfig, CongestionControl, Dcqcn, DcqcnParams, Pacer, Rate};
use roce_proto::time::{Duration, Instant};

#[derive(Clone, Debug)]
enum Input {
    Cnp,
    Loss,
    Sent(u64),
    Ack(u64),
    Wait(u64),
}

impl Input {
    /// Feeds this input to `cc` at `now` (a wait moves `now` on and fires the timers); an ACK of
    /// `b` bytes carries the RTT `rtt(b)`.
    fn apply(
        &self,
        cc: &mut impl CongestionControl,
        now: &mut Instant,
        rtt: fn(u64) -> Option<Duration>,
    ) {
        match *self {
            Input::Cnp => cc.on_cnp(*now),
            Input::Loss => cc.on_loss(*now),
            Input::Sent(b) => cc.on_sent(*now, b),
            Input::Ack(b) => cc.on_ack(*now, b, rtt(b)),
            Input::Wait(ns) => {
                *now += Duration::from_nanos(ns);
                cc.handle_timeout(*now);
            }
        }
    }
}

fn input() -> impl Strategy<Value = Input> {
    prop_oneof![
        Just(Input::Cnp),
        Just(Input::Loss),
        (64u64..=9216).prop_map(Input::Sent),
        (0u64..1_000_000).prop_map(Input::Ack),
        (0u64..400_000).prop_map(Input::Wait),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn pacer_schedule_matches_the_exact_ideal(rate in 1_000_000u64..=400_000_000_000, len in 64u64..=9216) {
        let mut p = Pacer::new(Rate::from_bps(rate), 0);
        let mut now = Instant::ZERO;
        for k in 0..2000u128 {
            let t = p.earliest_departure(now, len);
            let ideal = (k * u128::from(len) * 8_000_000_000).div_ceil(u128::from(rate));
            prop_assert_eq!(u128::from(t.as_nanos()), ideal);
            now = t;
            p.on_sent(now, len);
        }
    }

    #[test]
    fn dcqcn_keeps_its_rates_ordered_and_bounded(
        mlx in any::<bool>(),
        min_dec in 0u32..=100,
        monitor in 0u32..=8,
        inputs in prop::collection::vec(input(), 1..300),
    ) {
        let mut p = if mlx { DcqcnParams::mlx() } else { DcqcnParams::paper() };
        p.set("rpg_min_dec_fac", &min_dec.to_string()).unwrap();
        p.set("rate_reduce_monitor_period", &monitor.to_string()).unwrap();
        let min = Rate::from_mbps(u64::from(p.rpg_min_rate));
        let line = Rate::from_gbps(100);
        let mut d = Dcqcn::new(p, line);
        let mut now = Instant::ZERO;
        for i in inputs {
            i.apply(&mut d, &mut now, |_| None);
            let m = d.metrics();
            prop_assert!(m.rate >= min && m.rate <= line, "rate {:?}", m.rate);
            prop_assert!(m.rate <= m.target_rate && m.target_rate <= line);
            prop_assert!((0.0..=1.0).contains(&m.alpha));
            if let Some(t) = d.poll_timeout() {
                prop_assert!(t > now, "timer {t:?} not after {now:?}");
            }
        }
    }

    #[test]
    fn every_controller_stays_within_line_rate(
        which in 0..BUILTIN.len(),
        inputs in prop::collection::vec(input(), 1..200),
    ) {
        let line = Rate::from_gbps(25);
        let mut c = CcConfig::new(BUILTIN[which].name, line).unwrap().build();
        let mut now = Instant::ZERO;
        for i in inputs {
            i.apply(&mut c, &mut now, |b| Some(Duration::from_nanos(b % 600_000 + 1)));
            prop_assert!(c.rate() <= line && c.rate() > Rate::ZERO);
        }
    }
}
