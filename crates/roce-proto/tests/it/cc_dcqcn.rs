//! DCQCN reaction point: exact, hand-computed rate/target/alpha trajectories.

use roce_proto::cc::params::ParamSet;
use roce_proto::cc::{
    CcConfig, CcError, CcKind, CongestionControl, Controller, Dcqcn, DcqcnParams, Rate,
    ScaledDcqcnParams,
};
use roce_proto::time::{Duration, Instant};

const LINE: Rate = Rate::from_gbps(100);

fn us(v: u64) -> Instant {
    Instant::ZERO + Duration::from_micros(v)
}

fn gbps(v: f64) -> Rate {
    Rate::from_bps_f64(v * 1e9)
}

/// The target rate and the current rate.
fn rates(d: &Dcqcn) -> (Rate, Rate) {
    (d.metrics().target_rate, d.rate())
}

/// The paper preset at `LINE` (its steps rescaled from 40 Gbit/s, as `dcqcn-paper` builds
/// them) with alpha starting at exactly 1.
fn paper(set: &[(&str, &str)]) -> Dcqcn {
    let mut p = ScaledDcqcnParams::paper();
    p.scale_to(LINE);
    for (k, v) in set {
        p.set(k, v).unwrap();
    }
    Dcqcn::new(p.params, LINE)
}

#[test]
fn one_cnp_with_alpha_one_halves_the_rate() {
    let mut d = paper(&[]);
    assert_eq!(d.rate(), LINE);
    d.on_cnp(us(0));
    let m = d.metrics();
    assert_eq!(m.rate, gbps(50.0));
    assert_eq!(m.target_rate, LINE);
    assert_eq!(m.alpha, 1.0);
    assert_eq!(m.cnp_rate_cuts, 1);
    assert_eq!(m.rate_cuts, 1);
}

#[test]
fn fast_recovery_closes_the_gap_to_the_target_by_halves() {
    let mut d = paper(&[("rpg_byte_reset", "0")]);
    d.on_cnp(us(0));
    assert_eq!(d.poll_timeout(), Some(us(55)));
    let mut rates = Vec::new();
    for k in 1..=5 {
        d.handle_timeout(us(55 * k));
        rates.push(d.rate());
    }
    // RC/RT = 0.75, 0.875, 0.9375, 0.96875, 0.984375 of the 100 Gbit/s target.
    assert_eq!(
        rates,
        [75.0, 87.5, 93.75, 96.875, 98.4375].map(gbps).to_vec()
    );
    assert_eq!(d.metrics().target_rate, LINE);
    assert_eq!(d.metrics().rate_increases, 5);
}

#[test]
fn alpha_decays_with_a_half_life_of_177_periods_at_g_1_256() {
    // No increases, so the rate limiter stays engaged and only the alpha timer runs.
    let mut d = paper(&[("rpg_byte_reset", "0"), ("rpg_time_reset", "0")]);
    d.on_cnp(us(0));
    assert_eq!(d.metrics().alpha, 1.0);
    d.handle_timeout(us(55 * 177));
    let mut expect = 1.0f64;
    for _ in 0..177 {
        expect *= 1.0 - 1.0 / 256.0;
    }
    assert_eq!(d.metrics().alpha, expect);
    assert!(expect > 0.5);
    d.handle_timeout(us(55 * 178));
    assert!(d.metrics().alpha < 0.5);
    // The next cut uses the decayed alpha: RC(1 - alpha/2).
    let alpha = d.metrics().alpha;
    let rc = d.rate().as_bps_f64();
    d.on_cnp(us(55 * 178 + 1));
    assert_eq!(d.rate(), Rate::from_bps_f64(rc * (1.0 - alpha / 2.0)));
}

#[test]
fn additive_then_hyper_additive_steps_by_the_configured_amounts() {
    let mut d = paper(&[
        ("rpg_threshold", "1"),
        ("rpg_ai_rate", "5"),
        ("rpg_hai_rate", "50"),
        ("rpg_byte_reset", "160"), // 10240 bytes
        ("rpg_time_reset", "300"),
    ]);
    d.on_cnp(us(0)); // RT 100, RC 50
    d.on_cnp(us(1)); // RT 50, RC 25
    assert_eq!(rates(&d), (gbps(50.0), gbps(25.0)));
    // Byte event 1 (T=0, BC=0): fast recovery.
    d.on_sent(us(2), 10_240);
    assert_eq!(rates(&d), (gbps(50.0), gbps(37.5)));
    // Byte event 2 (T=0, BC=1): additive, RT += 5 Mbit/s.
    d.on_sent(us(3), 10_240);
    assert_eq!(rates(&d), (gbps(50.005), gbps(43.7525)));
    // Timer event 1 at 301 us (T=0, BC=2): additive again.
    d.handle_timeout(us(301));
    assert_eq!(rates(&d), (gbps(50.010), gbps(46.88125)));
    // Timer event 2 (T=1, BC=2): hyper with i = 1, RT += 50 Mbit/s.
    d.handle_timeout(us(601));
    assert_eq!(rates(&d), (gbps(50.060), gbps(48.470625)));
    // Byte event 3 (T=2, BC=2): hyper with i = 2, RT += 100 Mbit/s.
    d.on_sent(us(602), 10_240);
    assert_eq!(rates(&d), (gbps(50.160), gbps(49.3153125)));
}

#[test]
fn byte_counter_alone_drives_increases_when_timers_are_disabled() {
    let mut d = paper(&[
        ("rpg_time_reset", "0"),
        ("dce_tcp_rtt", "0"),
        ("rpg_byte_reset", "15625"), // 1,000,000 bytes
    ]);
    d.on_cnp(us(0));
    assert_eq!(d.poll_timeout(), None);
    d.on_sent(us(1), 999_999);
    assert_eq!(d.rate(), gbps(50.0));
    d.on_sent(us(2), 1);
    assert_eq!(d.rate(), gbps(75.0));
    d.on_sent(us(3), 1_000_000);
    assert_eq!(d.rate(), gbps(87.5));
    assert_eq!(d.poll_timeout(), None);
}

#[test]
fn min_dec_fac_bounds_the_cut_and_min_rate_bounds_the_rate() {
    let mut d = paper(&[("rpg_min_dec_fac", "80")]);
    d.on_cnp(us(0));
    assert_eq!(d.rate(), gbps(80.0));

    let mut d = paper(&[("rpg_min_rate", "30000")]);
    d.on_cnp(us(0));
    assert_eq!(d.rate(), gbps(50.0));
    d.on_cnp(us(1));
    assert_eq!(d.rate(), gbps(30.0));
    d.on_cnp(us(2));
    assert_eq!(d.rate(), gbps(30.0));
    assert_eq!(d.metrics().rate_cuts, 3);
}

#[test]
fn several_cnps_inside_one_monitor_period_cause_one_cut() {
    let mut d = paper(&[("rate_reduce_monitor_period", "4"), ("dce_tcp_rtt", "0")]);
    d.on_cnp(us(0));
    assert_eq!(d.rate(), gbps(50.0));
    for t in 1..=3 {
        d.on_cnp(us(t));
        assert_eq!(d.rate(), gbps(50.0));
    }
    assert_eq!(d.poll_timeout(), Some(us(4)));
    d.handle_timeout(us(4));
    assert_eq!(d.rate(), gbps(25.0));
    let m = d.metrics();
    assert_eq!((m.rate_cuts, m.cnp_rate_cuts, m.rp_cnp_ignored), (2, 2, 2));
    // The period after the deferred cut passes quietly; a later CNP cuts at once.
    d.handle_timeout(us(8));
    d.on_cnp(us(9));
    assert_eq!(d.rate(), gbps(12.5));
}

#[test]
fn target_is_clamped_only_after_an_increase_without_clamp_tgt_rate() {
    let mut d = paper(&[
        ("clamp_tgt_rate", "0"),
        ("clamp_tgt_rate_after_time_inc", "1"),
        ("rpg_byte_reset", "0"),
    ]);
    d.on_cnp(us(0));
    d.on_cnp(us(1));
    // No increase in between: the target stays where it was.
    assert_eq!(rates(&d), (LINE, gbps(25.0)));
    d.handle_timeout(us(56)); // timer fast recovery: RC = (100 + 25)/2
    assert_eq!(d.rate(), gbps(62.5));
    d.on_cnp(us(57));
    assert_eq!(d.metrics().target_rate, gbps(62.5));
}

#[test]
fn rate_to_set_on_first_cnp_replaces_the_first_cut() {
    let mut d = paper(&[("rate_to_set_on_first_cnp", "10000")]);
    d.on_cnp(us(0));
    assert_eq!(d.rate(), gbps(10.0));
    d.on_cnp(us(1));
    assert_eq!(d.rate(), gbps(5.0));
}

#[test]
fn recovery_to_line_rate_releases_the_limiter_and_its_timers() {
    let mut d = paper(&[("rpg_byte_reset", "0")]);
    d.on_cnp(us(0));
    let mut wakeups = 0;
    while let Some(t) = d.poll_timeout() {
        d.handle_timeout(t);
        wakeups += 1;
        assert!(wakeups < 10_000, "never released");
    }
    assert_eq!(d.rate(), LINE);
    assert!(!d.is_limiting());
    // The next CNP is a first CNP again: alpha restarts at initial_alpha_value (1.0).
    d.on_cnp(us(1_000_000));
    assert_eq!(d.rate(), gbps(50.0));
}

#[test]
fn mlx_preset_cuts_with_initial_alpha_and_coalesces_cnps_in_the_monitor_period() {
    let mut d = Dcqcn::new(DcqcnParams::mlx(), LINE);
    d.on_cnp(us(0));
    let a0 = 1023.0 / 1024.0;
    assert_eq!(d.rate(), Rate::from_bps_f64(100e9 * (1.0 - a0 / 2.0)));
    // DCE_TCP_G 1019 is the weight of the old alpha: g = 5/1024 for the new sample.
    let g = 5.0 / 1024.0;
    assert_eq!(d.metrics().alpha, (1.0 - g) * a0 + g);
    // A CNP inside the 4 us monitor period waits for its end and then cuts once, with the
    // alpha of that moment (decayed by (1 - g) per microsecond, so still close to one).
    d.on_cnp(us(2));
    let before = d.rate().as_bps_f64();
    d.handle_timeout(us(4));
    let post = d.metrics().alpha;
    let at_cut = (post - g) / (1.0 - g);
    assert!(at_cut > 0.97 && at_cut < 1.0, "{at_cut}");
    let expect = before * (1.0 - at_cut / 2.0);
    assert!((d.rate().as_bps_f64() - expect).abs() <= 2.0);
    assert_eq!(d.metrics().rate_cuts, 2);
}

#[test]
fn presets_print_their_full_parameter_sets() {
    for name in ["dcqcn-paper", "dcqcn-mlx"] {
        let cfg = CcConfig::new(name, LINE).unwrap();
        let names: Vec<_> = cfg.describe().iter().map(|p| p.name).collect();
        // 19 DCQCN parameters and the send window's two (`win_rtt`, `var_win`; off by default).
        assert_eq!(names.len(), 21);
        for n in [
            "rpg_time_reset",
            "rpg_byte_reset",
            "rpg_threshold",
            "rpg_ai_rate",
            "rpg_hai_rate",
            "rpg_min_rate",
            "rpg_max_rate",
            "rpg_gd",
            "rpg_min_dec_fac",
            "rate_reduce_monitor_period",
            "dce_tcp_g",
            "dce_tcp_rtt",
            "initial_alpha_value",
            "rate_to_set_on_first_cnp",
            "clamp_tgt_rate",
            "clamp_tgt_rate_after_time_inc",
            "min_time_between_cnps",
            "target_reset",
        ] {
            assert!(names.contains(&n), "{name} lacks {n}");
        }
    }
    let mlx = CcConfig::new("dcqcn-mlx", LINE).unwrap().describe();
    let get = |n: &str| mlx.iter().find(|p| p.name == n).unwrap().value.clone();
    assert_eq!(get("rpg_time_reset"), "300");
    assert_eq!(get("rpg_byte_reset"), "32767");
    assert_eq!(get("dce_tcp_g"), "1019");
    assert_eq!(get("initial_alpha_value"), "1023");
    assert_eq!(get("min_time_between_cnps"), "4");
}

#[test]
fn config_errors_list_the_valid_choices() {
    let e = CcConfig::new("cubic", LINE).unwrap_err();
    assert!(matches!(e, CcError::UnknownController { .. }));
    assert!(e.to_string().contains("dcqcn-mlx"));

    let mut cfg = CcConfig::new("dcqcn-paper", LINE).unwrap();
    let e = cfg.apply("rpg_bogus=1").unwrap_err();
    assert!(e.to_string().contains("rpg_time_reset"));
    let e = cfg.apply("rpg_ai_rate=fast").unwrap_err();
    assert!(matches!(e, CcError::BadValue { .. }));
    let e = cfg.apply("rpg_min_dec_fac=101").unwrap_err();
    assert!(matches!(e, CcError::BadValue { .. }));
    assert!(matches!(
        cfg.apply("rpg_ai_rate").unwrap_err(),
        CcError::BadSetting { .. }
    ));
    cfg.apply("rpg_ai_rate=10").unwrap();
    let none = CcConfig::new("none", LINE).unwrap();
    let mut none2 = none.clone();
    assert!(matches!(
        none2.apply("x=1").unwrap_err(),
        CcError::UnknownParam { .. }
    ));
}

#[test]
fn a_collapsed_rate_resets_an_unclamped_target_to_an_eighth_at_its_first_increase() {
    let run = |reset: &str| {
        let mut d = paper(&[
            ("clamp_tgt_rate", "0"),
            ("rpg_byte_reset", "0"),
            ("target_reset", reset),
        ]);
        // Four cuts without an increase between them: RC 50, 25, 12.5, 6.25; RT stays at 100.
        for t in 0..4 {
            d.on_cnp(us(t));
        }
        assert_eq!((d.metrics().target_rate, d.rate()), (LINE, gbps(6.25)));
        d.handle_timeout(us(58));
        let first = (d.metrics().target_rate, d.rate());
        d.handle_timeout(us(113));
        (first, (d.metrics().target_rate, d.rate()))
    };
    // RT > 10 RC at the first timer event: RT = 100/8, RC = (12.5 + 6.25)/2; the second event
    // is plain fast recovery towards 12.5.
    assert_eq!(
        run("1"),
        ((gbps(12.5), gbps(9.375)), (gbps(12.5), gbps(10.9375)))
    );
    // Without the reset the flow jumps to half the old target.
    assert_eq!(run("0").0, (LINE, gbps(53.125)));
}

/// `dcqcn-paper` at `line` Gbit/s with `set` applied as `--set` does, after two cuts (RT =
/// line/2, RC = line/4).
fn paper_config(line: u64, set: &[&str]) -> Dcqcn {
    let mut cfg = CcConfig::new("dcqcn-paper", Rate::from_gbps(line)).unwrap();
    for s in set {
        cfg.apply(s).unwrap();
    }
    let Controller::Dcqcn(mut d) = cfg.build() else {
        panic!("dcqcn-paper builds DCQCN");
    };
    d.on_cnp(us(0));
    d.on_cnp(us(1));
    d
}

/// (RT, RC) after two timer events (F = 1, timer alone): fast recovery, then hyper with i = 1
/// (RT += R_HAI).
fn after_hyper_step(line: u64, set: &[&str]) -> (Rate, Rate) {
    let mut d = paper_config(
        line,
        &[&["rpg_threshold=1", "rpg_byte_reset=0"], set].concat(),
    );
    d.handle_timeout(us(56));
    d.handle_timeout(us(111));
    rates(&d)
}

/// (RT, RC) after two byte-counter events (F = 1, both triggers): fast recovery, then additive
/// (RT += R_AI).
fn after_additive_step(line: u64, set: &[&str]) -> (Rate, Rate) {
    let base = [
        "rpg_threshold=1",
        "rpg_byte_reset=160",
        "rpg_time_reset=300",
    ];
    let mut d = paper_config(line, &[&base[..], set].concat());
    d.on_sent(us(2), 10_240);
    d.on_sent(us(3), 10_240);
    rates(&d)
}

/// `rpg_ai_rate` and `rpg_hai_rate` as `roce cc show` prints them.
fn steps(cfg: &CcConfig) -> (String, String) {
    let value = |n: &str| {
        cfg.describe()
            .into_iter()
            .find(|p| p.name == n)
            .map(|p| p.value)
    };
    (
        value("rpg_ai_rate").unwrap(),
        value("rpg_hai_rate").unwrap(),
    )
}

#[test]
fn paper_increase_steps_scale_with_the_line_rate_from_40_gbit_s() {
    // 40 Gbit/s: the paper's R_HAI of 200 Mbit/s and R_AI of 40 Mbit/s.
    assert_eq!(after_hyper_step(40, &[]), (gbps(20.2), gbps(17.6)));
    assert_eq!(after_additive_step(40, &[]), (gbps(20.04), gbps(17.52)));
    // 100 Gbit/s: 500 and 100 Mbit/s.
    assert_eq!(after_hyper_step(100, &[]), (gbps(50.5), gbps(44.0)));
    assert_eq!(after_additive_step(100, &[]), (gbps(50.1), gbps(43.8)));
    let cfg = CcConfig::new("dcqcn-paper", Rate::from_gbps(25)).unwrap();
    assert_eq!(steps(&cfg), ("25".to_owned(), "125".to_owned()));
    // The NIC preset's steps are absolute.
    let mlx = CcConfig::new("dcqcn-mlx", Rate::from_gbps(400)).unwrap();
    assert_eq!(steps(&mlx), ("5".to_owned(), "50".to_owned()));
}

#[test]
fn an_explicit_increase_step_is_used_as_given_at_any_line_rate() {
    // Set to the paper's 40 and 200 Mbit/s at 100 Gbit/s they stay 40 and 200 (rescaled they
    // would be 100 and 500).
    assert_eq!(
        after_hyper_step(100, &["rpg_hai_rate=200"]),
        (gbps(50.2), gbps(43.85))
    );
    assert_eq!(
        after_additive_step(100, &["rpg_ai_rate=40"]),
        (gbps(50.04), gbps(43.77))
    );
    // Whatever else is set around it, on a config built for another rate.
    let mut cfg = CcConfig::new("dcqcn-paper", Rate::from_gbps(400)).unwrap();
    cfg.apply("rpg_ai_rate=40").unwrap();
    cfg.apply("rpg_threshold=2").unwrap();
    assert_eq!(steps(&cfg), ("40".to_owned(), "2000".to_owned()));
    // The NIC preset takes an explicit step as given too.
    let mut mlx = CcConfig::new("dcqcn-mlx", Rate::from_gbps(100)).unwrap();
    mlx.apply("rpg_ai_rate=20").unwrap();
    let Controller::Dcqcn(d) = mlx.build() else {
        panic!("dcqcn-mlx builds DCQCN");
    };
    assert_eq!(d.params().rpg_ai_rate, 20);
}
