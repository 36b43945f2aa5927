//! DCTCP, TIMELY, patched TIMELY, HPCC and `none`: cut on their congestion signal, grow without.

use roce_proto::cc::replay::{parse_events, parse_time, replay, ReplayConfig};
use roce_proto::cc::{
    CcConfig, CcEvent, CongestionControl, Controller, Dctcp, DctcpParams, Hpcc, HpccParams, IntHop,
    PatchedTimely, PatchedTimelyParams, Rate, Timely, TimelyParams,
};
use roce_proto::time::{Duration, Instant};

fn us(v: u64) -> Instant {
    Instant::ZERO + Duration::from_micros(v)
}

#[test]
fn dctcp_cuts_on_cnp_and_grows_each_window_without_one() {
    let mut d = Dctcp::new(DctcpParams::default(), Rate::from_gbps(100));
    d.on_cnp(us(0));
    assert_eq!(d.rate(), Rate::from_gbps(50));
    d.on_cnp(us(1)); // inside congestion window reduction: no second cut
    assert_eq!(d.rate(), Rate::from_gbps(50));
    assert_eq!(
        (d.metrics().cnp_rate_cuts, d.metrics().rp_cnp_ignored),
        (1, 1)
    );
    assert_eq!(d.poll_timeout(), Some(us(10)));
    // rate_ai: one 1 KB MTU per 5 us base RTT (was 1.5 % of the line rate, 1500 Mbit/s).
    assert_eq!(DctcpParams::default().rate_ai, 1638);
    d.handle_timeout(us(10)); // F = 1: alpha stays 1; CWR over: +1638 Mbit/s
    assert_eq!(
        (d.rate(), d.metrics().alpha),
        (Rate::from_mbps(51_638), 1.0)
    );
    d.handle_timeout(us(20)); // no marks: alpha = 15/16, +1638 Mbit/s
    assert_eq!(
        (d.rate(), d.metrics().alpha),
        (Rate::from_mbps(53_276), 0.9375)
    );
}

/// Alpha follows the fraction of marked packets (CNPs over packets sent in the window, the
/// reference model's marks over its batch), not CNPs over RoCE's coalesced ACKs.
#[test]
fn dctcp_alpha_follows_the_fraction_of_packets_marked() {
    let mut d = Dctcp::new(DctcpParams::default(), Rate::from_gbps(100));
    for i in 0..50 {
        d.on_sent(us(i), 1024); // no window runs at line rate: not counted
    }
    d.on_cnp(us(100)); // a window starts: cut, alpha 1
    for i in 0..8 {
        d.on_sent(us(101 + i), 1024);
    }
    d.on_ack(us(108), 8 * 1024, None); // one coalesced ACK for the eight packets
    d.on_cnp(us(109)); // inside CWR: a second mark, no cut
    d.handle_timeout(us(110));
    // F = 2 marks / 8 packets: alpha = 15/16 + 1/16 * 1/4.
    assert_eq!(d.metrics().alpha, 0.953125);
}

#[test]
fn timely_cuts_on_a_rising_rtt_and_grows_below_t_low() {
    // delta at 10 Gbit/s: the paper's 10 Mbit/s (1/1000 of the line rate).
    let mut p = TimelyParams::default();
    p.rtt.add_step = 10;
    // Algorithm 1 as written, every sample (these samples left before the last update).
    p.rtt.per_rtt = false;
    let mut t = Timely::new(p, Rate::from_gbps(10));
    t.on_ack(us(0), 4096, Some(Duration::from_micros(100)));
    assert_eq!(t.rate(), Rate::from_gbps(10)); // first sample: no gradient yet
    t.on_ack(us(1), 4096, Some(Duration::from_micros(101)));
    // rtt_diff = 0.875 * 1000 ns, gradient = 875 / 20000, R *= 1 - 0.8 * gradient
    let g = 875.0 / 20_000.0;
    let cut = 10e9 * (1.0 - 0.8 * g);
    assert_eq!(t.rate(), Rate::from_bps_f64(cut));
    t.on_ack(us(2), 4096, Some(Duration::from_micros(30)));
    assert_eq!(t.rate(), Rate::from_bps_f64(cut + 10e6));
    t.on_cnp(us(3));
    assert_eq!(t.metrics().rp_cnp_ignored, 1);
}

#[test]
fn patched_timely_cuts_above_the_reference_rtt_and_grows_below_t_low() {
    let mut p = PatchedTimelyParams::default();
    p.rtt.add_step = 10; // the 10 Gbit/s value
                         // Every sample, as the rule is written (these samples left before the last update).
    p.rtt.per_rtt = false;
    let mut t = PatchedTimely::new(p, Rate::from_gbps(10));
    t.on_ack(us(0), 4096, Some(Duration::from_micros(200)));
    t.on_ack(us(1), 4096, Some(Duration::from_micros(300)));
    // gradient >= 1/4 so w = 1; e = (300 - 100) / 100 = 2; R = R (1 - 0.008 * 2)
    assert_eq!(t.rate(), Rate::from_bps_f64(10e9 * (1.0 - 0.008 * 2.0)));
    let before = t.rate().as_bps_f64();
    t.on_ack(us(2), 4096, Some(Duration::from_micros(20)));
    assert_eq!(t.rate(), Rate::from_bps_f64(before + 10e6));
}

#[test]
fn hpcc_steers_to_eta_on_a_saturated_hop_and_adds_w_ai_on_an_idle_one() {
    let b = Rate::from_gbps(100);
    let mut h = Hpcc::new(HpccParams::default(), b);
    let hop = |t: u64, tx: u64| IntHop {
        tx_wrap: 0,
        ts_wrap_ns: 0,
        qlen_bytes: 0,
        tx_bytes: tx,
        ts: us(t),
        link_rate: b,
    };
    // W_AI at 100 Gbit/s: B·(1 − eta)/16 = 312.5 Mbit/s, rounded up.
    let w_ai = 313e6;
    assert_eq!(f64::from(HpccParams::default().w_ai) * 1e6, w_ai);
    h.on_int(us(0), &[hop(0, 0)], None);
    assert_eq!(h.rate(), b);
    // 10 us at 100 Gbit/s = 125 000 bytes: u = 1, k = 1/0.95, R = R_ref/k + W_AI
    h.on_int(us(10), &[hop(10, 125_000)], None);
    let r1 = 100e9 / (1.0 / 0.95) + w_ai;
    assert_eq!(h.rate(), Rate::from_bps_f64(r1));
    assert_eq!(h.metrics().alpha, 1.0);
    // Next 10 us at half the line rate: u = 0.5 < eta, additive step from the new reference.
    h.on_int(us(20), &[hop(20, 187_500)], None);
    assert_eq!(h.rate(), Rate::from_bps_f64(r1 + w_ai));
    h.on_cnp(us(21));
    assert_eq!(h.metrics().rp_cnp_ignored, 1);
}

#[test]
fn none_stays_at_line_rate_and_counts_ignored_cnps() {
    let mut c = CcConfig::new("none", Rate::from_gbps(25)).unwrap().build();
    c.on_cnp(us(0));
    assert_eq!(c.rate(), Rate::from_gbps(25));
    assert_eq!(c.metrics().rp_cnp_ignored, 1);
    assert_eq!(c.poll_timeout(), None);
}

#[test]
fn every_named_controller_builds_and_reports_its_name() {
    let names: Vec<_> = roce_proto::cc::registry::BUILTIN
        .iter()
        .map(|e| e.name)
        .map(|n| {
            CcConfig::new(n, Rate::from_gbps(100))
                .unwrap()
                .build()
                .name()
        })
        .collect();
    assert_eq!(
        names,
        [
            "none",
            "dcqcn",
            "dcqcn",
            "dctcp",
            "timely",
            "patched-timely",
            "hpcc",
            "swift",
            "nscc",
            "nvidia-rtt"
        ]
    );
}

/// A controller an experiment brings along: halves on every CNP.
struct Halver(Rate);

impl CongestionControl for Halver {
    fn name(&self) -> &'static str {
        "halver"
    }
    fn on_sent(&mut self, _: Instant, _: u64) {}
    fn on_ack(&mut self, _: Instant, _: u64, _: Option<Duration>) {}
    fn on_cnp(&mut self, _: Instant) {
        self.0 = Rate::from_bps(self.0.as_bps() / 2);
    }
    fn on_loss(&mut self, _: Instant) {}
    fn handle_timeout(&mut self, _: Instant) {}
    fn poll_timeout(&self) -> Option<Instant> {
        None
    }
    fn rate(&self) -> Rate {
        self.0
    }
    fn metrics(&self) -> roce_proto::cc::CcMetrics {
        roce_proto::cc::CcMetrics {
            rate: self.0,
            target_rate: self.0,
            ..Default::default()
        }
    }
}

#[test]
fn custom_controller_runs_behind_the_enum() {
    let mut c = Controller::Custom(Box::new(Halver(Rate::from_gbps(8))));
    c.on_cnp(us(0));
    assert_eq!((c.name(), c.rate()), ("halver", Rate::from_gbps(4)));
}

#[test]
fn replay_records_the_cut_and_the_first_timer_recovery() {
    let mut cfg = CcConfig::new("dcqcn-paper", Rate::from_gbps(100)).unwrap();
    cfg.apply("initial_alpha_value=1024").unwrap();
    let samples = replay(
        cfg.build(),
        &ReplayConfig {
            mtu: 4096,
            duration: parse_time("60us").unwrap(),
            events: parse_events("cnp@0us").unwrap(),
        },
    );
    let points: Vec<_> = samples
        .iter()
        .map(|s| (s.t_ns, s.rate_bps, s.event))
        .collect();
    assert_eq!(points[0], (0, 100_000_000_000, CcEvent::Start));
    assert_eq!(points[1], (0, 50_000_000_000, CcEvent::Cnp));
    assert_eq!(points[2], (55_000, 75_000_000_000, CcEvent::Timer));
    assert_eq!(points.len(), 3);
    let csv = roce_proto::cc::recorder::to_csv(&samples);
    assert!(csv.starts_with("t_ns,rate_bps,target_bps,alpha,event\n0,100000000000,"));
}

#[test]
fn replay_script_errors_name_the_bad_item() {
    assert!(parse_events("cnp@5us,ecn@3us")
        .unwrap_err()
        .to_string()
        .contains("ecn@3us"));
    assert!(parse_time("5 parsecs").is_err());
    assert_eq!(parse_time("1.5us").unwrap(), Duration::from_nanos(1500));
    let ev = parse_events(" loss@2ms , cnp@1ms ").unwrap();
    assert_eq!(ev[0].at, us(1000));
}

#[test]
fn timely_and_patched_timely_share_one_rtt_parameter_set() {
    use roce_proto::cc::params::ParamSet;
    let t = TimelyParams::default();
    let p = PatchedTimelyParams::default();
    assert_eq!(t.rtt, p.rtt);
    let shared = roce_proto::cc::RttParams::default().names();
    assert_eq!(&t.names()[..shared.len()], &shared[..]);
    assert_eq!(&p.names()[..shared.len()], &shared[..]);
    assert_eq!(t.names()[shared.len()..], ["hai_n"]);
    assert_eq!(p.names()[shared.len()..], ["beta_patch", "rtt_ref"]);
    let mut p = p;
    p.set("t_low", "7").unwrap();
    p.set("rtt_ref", "9").unwrap();
    assert_eq!((p.rtt.t_low, p.rtt_ref), (7, 9));
}

#[test]
fn additive_steps_scale_with_the_line_rate_and_explicit_values_win() {
    let value = |cc: &str, gbps: u64, param: &str| {
        let cfg = CcConfig::new(cc, Rate::from_gbps(gbps)).unwrap();
        let p = cfg
            .describe()
            .into_iter()
            .find(|p| p.name == param)
            .unwrap();
        p.value
    };
    // HPCC: W_AI = B·(1 − eta)/16; TIMELY: delta = B/1000. DCTCP's one MTU per base RTT does
    // not scale (it was 1.5 % of B: 375 and 6000 Mbit/s).
    assert_eq!(TimelyParams::default().rtt.add_step, 100);
    assert_eq!(value("hpcc", 25, "w_ai"), "78");
    assert_eq!(value("hpcc", 400, "w_ai"), "1250");
    assert_eq!(value("dctcp", 25, "rate_ai"), "1638");
    assert_eq!(value("dctcp", 400, "rate_ai"), "1638");
    assert_eq!(value("timely", 10, "add_step"), "10");
    assert_eq!(value("patched-timely", 400, "add_step"), "400");
    let mut cfg = CcConfig::new("hpcc", Rate::from_gbps(400)).unwrap();
    cfg.apply("w_ai=40").unwrap();
    let w = cfg
        .describe()
        .into_iter()
        .find(|p| p.name == "w_ai")
        .unwrap();
    assert_eq!(w.value, "40");
}

#[test]
fn timely_per_rtt_acts_only_on_packets_sent_after_the_last_update() {
    let p = TimelyParams::default();
    assert!(p.rtt.per_rtt, "the default");
    let mut t = Timely::new(p, Rate::from_gbps(10));
    let rtt = |v| Some(Duration::from_micros(v));
    t.on_ack(us(100), 4096, rtt(100)); // primes the filter at 100 us
                                       // Sent at 0 and 50 us, before the update at 100 us: ignored, though RTT rises.
    t.on_ack(us(101), 4096, rtt(101));
    t.on_ack(us(150), 4096, rtt(100));
    assert_eq!(t.rate(), Rate::from_gbps(10));
    assert_eq!(t.metrics().rate_cuts, 0);
    // Sent at 110 us: acts, against the RTT of the last update (100 us).
    t.on_ack(us(211), 4096, rtt(101));
    let g = 875.0 / 20_000.0;
    assert_eq!(t.rate(), Rate::from_bps_f64(10e9 * (1.0 - 0.8 * g)));
}

#[test]
fn each_controller_states_how_long_its_start_up_lasts() {
    let settle = |name: &str, set: &[&str]| {
        let mut c = CcConfig::new(name, Rate::from_gbps(100)).unwrap();
        for s in set {
            c.apply(s).unwrap();
        }
        c.settle_time()
    };
    // DCQCN: alpha's time constant (period / g) and the timer's fast-recovery stages.
    assert_eq!(
        settle("dcqcn-paper", &[]),
        Duration::from_micros(14_080 + 5 * 55)
    );
    assert_eq!(settle("dcqcn-mlx", &[]), Duration::from_micros(205 + 300));
    assert_eq!(
        settle("dcqcn-mlx", &["dce_tcp_g=1020", "rpg_time_reset=55"]),
        Duration::from_micros(256 + 55)
    );
    // DCTCP: 1/g windows.
    assert_eq!(settle("dctcp", &[]), Duration::from_micros(16 * 10));
    assert_eq!(settle("dctcp", &["g=0.125"]), Duration::from_micros(8 * 10));
    // Loops that close within a few RTTs.
    for name in [
        "none",
        "hpcc",
        "timely",
        "patched-timely",
        "swift",
        "nscc",
        "nvidia-rtt",
    ] {
        assert_eq!(settle(name, &[]), Duration::ZERO, "{name}");
    }
}
