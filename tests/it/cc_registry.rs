//! The controller registry (one registration point for `--cc`, scenarios, `--set cc.*` and
//! `compare`), docs/cc.md's worked example of adding a controller (`tests/it/support/my_cc.rs`),
//! and `roce cc replay` fed RTT samples (TIMELY) and INT records (HPCC).

use crate::support::cli_output;
use crate::support::my_cc;

use cli_output::roce;
use roce_fabric::experiment::compare::{with_overrides, Grid, Override};
use roce_fabric::experiment::scenario::Scenario;
use roce_proto::cc::registry::{self, CcEntry, CcRegistry, BUILTIN};
use roce_proto::cc::replay::{parse_events, parse_time, replay, ReplayConfig, ReplayError};
use roce_proto::cc::{
    CcConfig, CcEvent, CongestionControl, HpccParams, Rate, Sample, TimelyParams,
};

/// The built-ins plus the two examples of docs/cc.md.
fn with_examples() -> CcRegistry {
    let mut controllers = CcRegistry::builtin();
    controllers.register(&my_cc::AIMD).expect("aimd registers");
    controllers
        .register(&my_cc::DCQCN_G64)
        .expect("dcqcn-g64 registers");
    controllers
}

#[test]
fn every_name_comes_from_the_registry() {
    let names: Vec<&str> = CcRegistry::builtin().names().collect();
    let builtin: Vec<&str> = BUILTIN.iter().map(|e| e.name).collect();
    assert_eq!(names, builtin);
    let mut all: Vec<&str> = BUILTIN
        .iter()
        .flat_map(|e| std::iter::once(e.name).chain(e.aliases.iter().copied()))
        .collect();
    let n = all.len();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), n, "names and aliases are unique");
    for e in BUILTIN {
        let cfg = CcConfig::new(e.name, Rate::from_gbps(100)).unwrap();
        assert_eq!(cfg.name(), e.name);
        assert_eq!(cfg.describe(), e.params(), "{}", e.name);
        assert!(!e.about.is_empty() && !e.about.contains('\n'), "{}", e.name);
        for p in e.params() {
            assert!(!p.doc.is_empty(), "{}.{} has help", e.name, p.name);
        }
    }
    assert_eq!(
        CcConfig::new("dcqcn", Rate::from_gbps(100)).unwrap().name(),
        "dcqcn-mlx"
    );
    let hpcc = CcConfig::new("hpcc", Rate::from_gbps(100)).unwrap();
    assert!(hpcc.uses_int());
    assert_eq!(hpcc.cnp_interval().as_nanos(), 50_000);
}

#[test]
fn a_registered_controller_builds_by_name_and_takes_settings() {
    let mut controllers = with_examples();
    // The same entries again: a no-op.
    controllers.register(&my_cc::AIMD).unwrap();
    controllers.register(&my_cc::DCQCN_G64).unwrap();
    let names: Vec<&str> = controllers.names().collect();
    assert!(names.ends_with(&["aimd", "dcqcn-g64"]), "{names:?}");
    // Nothing is process-wide: the built-ins alone know neither.
    assert!(CcConfig::new("aimd", Rate::from_gbps(25)).is_err());
    assert!(CcRegistry::builtin().find("dcqcn-g64").is_none());
    let mut cfg = controllers.config("aimd-toy", Rate::from_gbps(25)).unwrap();
    assert_eq!(cfg.name(), "aimd");
    assert_eq!(cfg.cnp_interval().as_nanos(), 4_000);
    cfg.apply("md_factor=0.25").unwrap();
    assert_eq!(
        cfg.apply("md_factor=1.5").unwrap_err().to_string(),
        "bad value `1.5` for `md_factor`: expected a factor strictly between 0 and 1"
    );
    let e = cfg.apply("rpg_ai_rate=5").unwrap_err().to_string();
    assert!(
        e.contains("ai_rate, ai_interval, md_factor, md_holdoff, min_rate"),
        "{e}"
    );
    let mut c = cfg.build();
    c.on_cnp(roce_proto::time::Instant::from_nanos(0));
    assert_eq!(
        (c.name(), c.rate()),
        ("aimd", Rate::from_bps(6_250_000_000))
    );

    // The preset builds the built-in DCQCN with its own gain.
    let g64 = controllers
        .config("dcqcn-g64", Rate::from_gbps(100))
        .unwrap();
    let g = g64.describe().into_iter().find(|p| p.name == "dce_tcp_g");
    assert_eq!(g.unwrap().value, "1008");
    assert!(matches!(g64.build(), roce_proto::cc::Controller::Dcqcn(_)));

    let unknown = controllers.config("cubic", Rate::from_gbps(1)).unwrap_err();
    assert!(
        unknown
            .to_string()
            .ends_with("hpcc, swift, nscc, nvidia-rtt, aimd, dcqcn-g64"),
        "{unknown}"
    );
    static CLASH: CcEntry = CcEntry {
        name: "mine",
        aliases: &["timely"],
        about: "clashes",
        defaults: || Box::new(TimelyParams::default()),
    };
    assert_eq!(
        controllers.register(&CLASH),
        Err(registry::NameTaken {
            name: "timely".into()
        })
    );
}

/// A 2:1 incast at 25 Gbit/s with ECN below PFC, `cc` on the senders.
fn incast(cc: &str, params: &[&str]) -> Scenario {
    let params: Vec<String> = params.iter().map(|p| format!("{p:?}")).collect();
    let controllers = with_examples();
    let cnp_us = controllers
        .config(cc, Rate::from_gbps(25))
        .unwrap()
        .cnp_interval()
        .as_nanos()
        / 1000;
    Scenario::from_toml_with(
        &format!(
            r#"
        name = "incast-{cc}"
        duration_us = 400
        warmup_us = 200
        cc = "{cc}"
        cc_params = [{params}]
        cnp_interval_us = {cnp_us}
        topology = {{ kind = "star", hosts = 3, link = {{ gbps = 25, delay_ns = 1000 }} }}
        workloads = [{{ kind = "incast", senders = [0, 1], receiver = 2 }}]
        [switch]
        buffer_bytes = 64000000
        queue_limit_bytes = 32000000
        lossless = [3]
        ecn = {{ kmin_bytes = 16000, kmax_bytes = 64000, pmax = 0.2 }}
        ecn_at = "dequeue"
        pfc_thresholds = {{ xoff_bytes = 64000, xon_bytes = 32000, headroom_bytes = 64000, quanta =
        65535 }} "#,
            params = params.join(", ")
        ),
        controllers,
    )
    .expect("scenario parses")
}

#[test]
fn a_registered_controller_runs_in_scenarios_and_compare() {
    let (none, _) = incast("none", &[]).run(|_| {}).unwrap();
    let (aimd, _) = incast("aimd", &["ai_rate=200"]).run(|_| {}).unwrap();
    assert_eq!(aimd.failed_flows, 0);
    assert!(aimd.cnp_handled > 0);
    assert!(
        aimd.queue_mean_bytes < none.queue_mean_bytes / 2.0,
        "aimd {} B vs none {} B",
        aimd.queue_mean_bytes,
        none.queue_mean_bytes
    );
    // `--set cc.PARAM=...` and its checks reach the registered controller's parameters.
    let base = incast("aimd", &[]);
    let set = with_overrides(&base, &[Override::parse("cc.md_factor=0.7").unwrap()]).unwrap();
    let md = set.cc_config().unwrap().unwrap().describe();
    assert_eq!(
        md.iter().find(|p| p.name == "md_factor").unwrap().value,
        "0.7"
    );
    assert!(with_overrides(&base, &[Override::parse("cc.md_factor=2").unwrap()]).is_err());
    // `compare --cc dcqcn-mlx,aimd,dcqcn-g64`: the grid's runs are the single runs.
    let grid = Grid {
        ccs: vec!["dcqcn-mlx".into(), "aimd".into(), "dcqcn-g64".into()],
        seeds: 1,
        ..Grid::default()
    };
    let (variants, runs) = grid.expand(&base).unwrap();
    let labels: Vec<String> = variants.iter().map(|v| v.label()).collect();
    assert_eq!(labels, ["dcqcn-mlx", "aimd", "dcqcn-g64"]);
    let (grid_aimd, _) = runs[1].scenario.run(|_| {}).unwrap();
    let (single, _) = incast("aimd", &[]).run(|_| {}).unwrap();
    assert_eq!(grid_aimd.total_goodput_gbps, single.total_goodput_gbps);
    assert_eq!(grid_aimd.queue_mean_bytes, single.queue_mean_bytes);
}

fn replay_script(cc: &str, settings: &[&str], script: &str, duration: &str) -> Vec<Sample> {
    let mut cfg = CcConfig::new(cc, Rate::from_gbps(100)).unwrap();
    for s in settings {
        cfg.apply(s).unwrap();
    }
    replay(
        cfg.build(),
        &ReplayConfig {
            mtu: 4096,
            duration: parse_time(duration).unwrap(),
            events: parse_events(script).unwrap(),
        },
    )
}

/// The rate after the last sample recorded at or before `t_ns`.
fn rate_at(samples: &[Sample], t_ns: u64) -> f64 {
    samples
        .iter()
        .rfind(|s| s.t_ns <= t_ns)
        .map(|s| s.rate_bps as f64)
        .unwrap()
}

#[test]
fn replaying_a_rising_rtt_into_timely_cuts_by_the_gradient_rule() {
    // RTT 60, 70, 80, 90 us (inside T_low..T_high) every 10 us.
    let rtts_us = [60.0, 70.0, 80.0, 90.0];
    let script: Vec<String> = rtts_us
        .iter()
        .enumerate()
        .map(|(i, r)| format!("rtt@{}us {r}us", 10 * (i + 1)))
        .collect();
    // Every sample acts (`per_rtt=0`): these RTTs are longer than the 10 us between them, so
    // with the default once-per-RTT update only the first would.
    let samples = replay_script("timely", &["per_rtt=0"], &script.join("\n"), "50us");
    // Algorithm 1 of the TIMELY paper: rtt_diff <- (1 - a) rtt_diff + a (r - prev);
    // g = rtt_diff / min_rtt; T_low <= r <= T_high and g > 0: R <- R (1 - beta g).
    let p = TimelyParams::default().rtt;
    let (a, min_rtt, beta) = (p.ewma, f64::from(p.min_rtt), p.beta);
    let (mut rate, mut diff) = (100e9, 0.0);
    for (i, pair) in rtts_us.windows(2).enumerate() {
        diff = (1.0 - a) * diff + a * (pair[1] - pair[0]);
        let g = diff / min_rtt;
        assert!(g > 0.0 && pair[1] >= f64::from(p.t_low) && pair[1] <= f64::from(p.t_high));
        let before = rate;
        rate *= 1.0 - beta * g;
        assert!(rate < before);
        let t_ns = 10_000 * (i as u64 + 2);
        assert!(
            (rate_at(&samples, t_ns) - rate).abs() <= 1.0,
            "at {t_ns} ns"
        );
    }
    // The first sample only primes the filter.
    assert_eq!(rate_at(&samples, 10_000), 100e9);
    assert!(samples.iter().filter(|s| s.event == CcEvent::Ack).count() >= 3);
}

#[test]
fn replaying_int_with_a_standing_queue_into_hpcc_cuts_per_its_equations() {
    // One 100 Gbit/s hop that transmits at line rate (125 KB per 10 us) over a 50 KB queue.
    let script = "int@10us hop=50KB/0/10us/100G\n\
                  int@20us hop=50KB/125KB/20us/100G\n\
                  # half a base RTT later: a per-ACK reaction against the reference rate\n\
                  int@25us hop=60KB/187500/25us/100G";
    let samples = replay_script("hpcc", &[], script, "30us");
    let p = HpccParams::default();
    let b = 100e9;
    let t = p.base_rtt * 1e3; // ns
    let w_ai = f64::from(p.w_ai) * 1e6;
    // Per hop (HPCC Algorithm 1): u = txRate/B + min(qlen, qlen')*8/(B*T); U smoothed over T:
    // u <- (u (T - tau) + U tau)/T; k = u/eta >= 1: R = R_ref/k + W_AI.
    let util =
        |dtx: f64, q: f64, tau: f64| (dtx * 8.0 / (tau * 1e-9)) / b + q * 8.0 / (b * t * 1e-9);
    let big_u = util(125_000.0, 50_000.0, 10_000.0);
    let u = big_u; // tau = T: the old estimate (0) weighs nothing
    let k = u / p.eta;
    assert!(k >= 1.0);
    let r1 = 100e9 / k + w_ai;
    assert!((rate_at(&samples, 20_000) - r1).abs() <= 1.0);
    assert_eq!(
        rate_at(&samples, 10_000),
        100e9,
        "the first record only primes"
    );
    // 20 us was a full update (one T after the first record): R_ref = r1. At 25 us, tau = 5 us.
    let big_u2 = util(62_500.0, 50_000.0, 5_000.0);
    let u2 = (u * (t - 5_000.0) + big_u2 * 5_000.0) / t;
    let r2 = r1 / (u2 / p.eta) + w_ai;
    assert!(r2 < r1);
    assert!((rate_at(&samples, 25_000) - r2).abs() <= 1.0);
    let last = samples.iter().rfind(|s| s.event == CcEvent::Int).unwrap();
    assert!((last.alpha - u2).abs() < 1e-12);
}

#[test]
fn malformed_script_lines_are_one_line_errors_with_their_line_number() {
    let cases = [
        ("cnp@1us\n\n# c\nrtt@5us\n", 4, "expected rtt@TIME RTT"),
        ("int@1us hop=1/2/3us", 1, "not four fields"),
        ("cnp@1us,ack@2us bytes=1K rtt=9", 1, "bad time `9`"),
        (
            "loss@1us\nack@2us window=3",
            2,
            "ack takes bytes=SIZE and rtt=TIME",
        ),
        ("ecn@3us", 1, "unknown event `ecn`"),
        ("cnp@1us x", 1, "cnp@1us takes no fields"),
        ("int@1us hop=1K/2K/1us/100X", 1, "RATE `100X`"),
    ];
    for (script, line, why) in cases {
        let e = parse_events(script).unwrap_err();
        assert!(
            matches!(e, ReplayError::BadEvent { line: l, .. } if l == line),
            "{script:?}: {e}"
        );
        let text = e.to_string();
        assert!(
            text.starts_with(&format!("line {line}: bad event `")),
            "{text}"
        );
        assert!(text.contains(why), "{text}");
        assert_eq!(text.lines().count(), 1);
    }
    let ok =
        parse_events("ack@3us bytes=4K rtt=20us # c\nint@1us hop=0/0/1us/25Gbps hop=1K/0/1us/100G")
            .unwrap();
    assert_eq!(ok.len(), 2);
    assert_eq!(ok[0].at, roce_proto::time::Instant::from_nanos(1000));
}

/// `roce cc replay --cc CC --script FILE` with `text` in FILE, then `extra` arguments.
fn replay_file(cc: &str, text: &str, extra: &[&str]) -> (i32, String, String) {
    let path = std::env::temp_dir().join(format!("roce-cc-registry-{cc}-{}", std::process::id()));
    std::fs::write(&path, text).unwrap();
    let script = path.to_str().unwrap();
    let mut args = vec!["cc", "replay", "--cc", cc, "--script", script];
    args.extend(extra);
    let out = roce(&args);
    std::fs::remove_file(&path).unwrap();
    out
}

#[test]
fn cli_lists_the_registry_and_replays_a_script_file() {
    let (code, out, _) = roce(&["cc", "list"]);
    assert_eq!(code, 0);
    for name in BUILTIN.iter().map(|e| e.name) {
        assert!(out.lines().any(|l| l.starts_with(name)), "{name}: {out}");
    }
    assert!(out.contains("dcqcn-mlx (dcqcn)"));
    let rising = "# rising RTT\nrtt@10us 60us\nrtt@20us 70us\n";
    // `per_rtt=0`: the second sample's packet left before the first update (default: skipped).
    let args = ["--duration", "30us", "--json", "--set", "per_rtt=0"];
    let (code, out, err) = replay_file("timely", rising, &args);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    let last = v.as_array().unwrap().last().unwrap();
    assert_eq!(last["t_us"].as_f64(), Some(20.0));
    assert!(last["rate_gbps"].as_f64().unwrap() < 100.0);
    let bad = "rtt@10us 60us\n# fine\nint@20us hop=50KB\n";
    let (code, out, err) = replay_file("hpcc", bad, &[]);
    assert_eq!((code, out.as_str()), (1, ""));
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("line 3: bad event `int@20us hop=50KB`"),
        "{err}"
    );
}
