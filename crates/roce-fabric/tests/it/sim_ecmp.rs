//! ECMP polarisation (scenarios/ecmp-polarisation.toml): with the same hash salt on every
//! switch the second ECMP stage repeats the first stage's choice, so half of its members carry
//! nothing; a salt per switch spreads the flows over them and the goodput rises. The summary's
//! per-member load shows both.

use roce_fabric::experiment::scenario::Scenario;
use roce_fabric::experiment::summary::RunSummary;
use roce_fabric::net::ecmp::EcmpLoad;

const POLARISED: &str = include_str!("../../../../scenarios/ecmp-polarisation.toml");

fn run(text: &str) -> RunSummary {
    let s = Scenario::from_toml(text).unwrap_or_else(|e| panic!("{e}"));
    println!("scenario {} seed {}", s.name, s.seed);
    s.run(|_| {}).expect("runs").0
}

/// Bytes the member `switch` -> `peer` sent.
fn member(e: &EcmpLoad, switch: &str, peer: &str) -> u64 {
    e.uplinks
        .iter()
        .find(|u| u.switch == switch && u.peer == peer)
        .unwrap_or_else(|| panic!("no member {switch} -> {peer}"))
        .bytes
}

#[test]
fn equal_salts_polarise_the_second_stage_and_per_switch_salts_fix_it() {
    let bad = run(POLARISED);
    let e = bad.ecmp.as_ref().expect("ECMP load");
    let t = bad.table();
    // The first stage splits; the second repeats its choice: a0 only uses b0, a1 only b1.
    assert!(
        member(e, "t1", "a0") > 1_000_000 && member(e, "t1", "a1") > 1_000_000,
        "{t}"
    );
    assert!(
        member(e, "a0", "b0") > 1_000_000 && member(e, "a1", "b1") > 1_000_000,
        "{t}"
    );
    assert_eq!(
        (member(e, "a0", "b1"), member(e, "a1", "b0")),
        (0, 0),
        "{t}"
    );
    // The ACKs coming back polarise the same way at b0 and b1.
    assert_eq!(e.idle_members, 4, "{t}");
    assert!(t.contains("ecmp: 12 members, 4 idle"), "{t}");
    // Two 50G middle cables carry everything.
    assert!(bad.total_goodput_gbps < 100.0, "{t}");

    let fixed = run(&POLARISED.replace(
        "ecmp_salt_per_switch = false",
        "ecmp_salt_per_switch = true",
    ));
    let f = fixed.ecmp.as_ref().expect("ECMP load");
    let ft = fixed.table();
    assert!(
        member(f, "a0", "b0") > 1_000_000 && member(f, "a0", "b1") > 1_000_000,
        "{ft}"
    );
    assert!(f.idle_members <= 1, "{ft}");
    assert!(
        fixed.total_goodput_gbps > 1.3 * bad.total_goodput_gbps,
        "{t}\n{ft}"
    );
}

#[test]
fn a_written_out_topology_refuses_cables_to_nothing() {
    let text = POLARISED.replace("{ a = \"b1\", b = \"r\" }", "{ a = \"b1\", b = \"r9\" }");
    let err = Scenario::from_toml(&text)
        .expect_err("r9 does not exist")
        .to_string();
    assert!(
        err.contains("cable end \"r9\" is neither a switch nor one of the 16 hosts"),
        "{err}"
    );
}

/// Two rails of a 2-leaf, 2-spine leaf-spine, a 1 MiB flow on rail 0 and 256 KiB on rail 1.
const RAILS: &str = r#"
    name = "rails"
    duration_us = 200
    engine = "stand-in"
    topology = { kind = "leaf_spine", leaves = 2, spines = 2, hosts_per_leaf = 2, rails = 2, link = { gbps = 100, delay_ns = 1000 }, uplink = { gbps = 100, delay_ns = 1000 } }
    workloads = [
        { kind = "flow", src = 0, dst = 4, bytes = "1MiB" },
        { kind = "flow", src = 1, dst = 5, bytes = "256KiB" },
    ]
"#;

/// Two rails of a 2-leaf, 2-spine leaf-spine (host `2 i + r` is server i's NIC on rail r): a
/// 1 MiB flow on rail 0 and a 256 KiB flow on rail 1 (stand-in hosts send no ACKs, so the
/// rails carry exactly the data frames: 1082 bytes per 1 KiB packet, 16 more for the RETH of
/// the first). The rail ratio is 4:1; each flow's source leaf hashes it onto one of its two
/// spines, so each rail has one busy data member and the ratio among busy data members is 1.
/// A collective across rails is refused.
#[test]
fn rails_report_their_bytes_and_max_min_ratio_and_collectives_stay_on_one_rail() {
    let text = RAILS;
    let sum = run(text);
    let t = sum.table();
    let r = sum.rails.as_ref().expect("rail load");
    let (r0, r1) = (1024 * 1082 + 16, 256 * 1082 + 16);
    assert_eq!(r.bytes, [r0, r1], "{t}");
    assert_eq!(r.ratio, r0 as f64 / r1 as f64, "{t}");
    assert_eq!(r.idle_rails, 0, "{t}");
    assert!(
        t.contains(&format!(
            "rails: r0 {r0} B  r1 {r1} B  max/min 4.00, 0 idle\n"
        )),
        "{t}"
    );
    let e = sum.ecmp.as_ref().expect("ECMP load");
    let busy: Vec<u64> = e
        .uplinks
        .iter()
        .map(|u| u.bytes)
        .filter(|&b| b > 0)
        .collect();
    assert_eq!(busy.len(), 2, "{t}");
    assert_eq!(e.worst_ratio, 1.0, "{t}");

    let across = text.replace(
        r#"workloads = ["#,
        r#"workloads = [{ kind = "all_reduce", hosts = [0, 2, 5], bytes = "1MiB", iterations = 1 },"#,
    );
    let err = Scenario::from_toml(&across)
        .expect_err("refused")
        .to_string();
    assert!(
        err.starts_with(
            "scenario: workload 0: hosts 0 (rail 0) and 5 (rail 1) are on different rails"
        ),
        "{err}"
    );
}

/// Rail utilisation over time: per telemetry bin, the bits each rail's hosts sent over the
/// bin times the rail's NIC capacity (four 100 Gbit/s NICs a rail here). The bins add up to
/// the rail's bytes, and while the 1 MiB flow is sending at line rate its rail runs at a
/// quarter of its capacity (frames without preamble, gap and FCS: 1082 of every 1106 bytes).
#[test]
fn rail_utilisation_per_bin_adds_up_to_the_bytes_and_is_a_quarter_at_line_rate() {
    let sum = run(&RAILS.replace("duration_us = 200", "duration_us = 200\nbin_us = 20"));
    let t = sum.table();
    let r = sum.rails.as_ref().expect("rail load");
    assert_eq!(r.utilisation.len(), 10, "{t}");
    let capacity_bps = 4.0 * 100e9;
    let mut start = 0.0;
    let mut bytes = [0.0f64; 2];
    for b in &r.utilisation {
        for (rail, u) in b.rails.iter().enumerate() {
            bytes[rail] += u * capacity_bps * (b.end_us - start) / 1e6 / 8.0;
        }
        start = b.end_us;
    }
    for rail in 0..2 {
        let want = r.bytes[rail] as f64;
        assert!(
            (bytes[rail] - want).abs() < 1e-6 * want,
            "rail {rail}: {bytes:?}\n{t}"
        );
    }
    // 20-40 us: the 1 MiB flow (90 us at line rate) is mid-way.
    let line = 0.25 * 1082.0 / 1106.0;
    let u = r.utilisation[1].rails[0];
    assert!((u - line).abs() < 0.002, "bin 2: {u} against {line}\n{t}");
    // The 256 KiB flow (23 us) is done by 40 us.
    assert_eq!(r.utilisation[2].rails[1], 0.0, "{t}");
    let row = t
        .lines()
        .skip_while(|l| *l != "rail utilisation by bin (%):")
        .nth(1)
        .unwrap_or_default();
    assert!(
        row.starts_with("  r0 ") && row.contains(" 24 24 24 "),
        "{t}"
    );
    assert_eq!(row.split_whitespace().count(), 11, "{t}");
    let csv = r.csv();
    assert_eq!(csv.lines().count(), 1 + 10 * 2);
    assert!(
        csv.starts_with("time_us,rail,utilisation\n20.000,0,0.2"),
        "{csv}"
    );
}

/// The polarisation scenario with `routing` set in its `[switch]` table (salts still equal).
fn with_routing(routing: &str) -> String {
    POLARISED.replace(
        "ecmp_salt_per_switch = false\n",
        &format!("ecmp_salt_per_switch = false\nrouting = \"{routing}\"\n"),
    )
}

/// The four middle-stage members, a0 and a1 to b0 and b1.
fn middle(e: &EcmpLoad) -> [u64; 4] {
    [
        member(e, "a0", "b0"),
        member(e, "a0", "b1"),
        member(e, "a1", "b0"),
        member(e, "a1", "b1"),
    ]
}

/// Adaptive routing on the polarised fabric (equal salts): every packet takes the member with
/// the shortest egress queue, so the middle stage carries data on all four members and the
/// max/min load among data members is under 1.2. The ACKs find every queue empty and take the
/// hash's pick, so the two ACK-direction members the hash never picks stay idle. The packets
/// of one flow arrive out of order and go-back-N NAKs them: the cost of per-packet paths
/// without selective repeat. The run is a function of the scenario and seed.
#[test]
fn adaptive_routing_uses_every_middle_member_evenly_on_the_polarised_fabric() {
    let text = with_routing("adaptive");
    let ar = run(&text);
    let e = ar.ecmp.as_ref().expect("ECMP load");
    let t = ar.table();
    let mid = middle(e);
    assert!(mid.iter().all(|&b| b > 1_000_000), "{mid:?}\n{t}");
    let (max, min) = (mid.iter().max(), mid.iter().min());
    let ratio = *max.unwrap_or(&0) as f64 / *min.unwrap_or(&1) as f64;
    assert!(ratio < 1.2, "middle max/min {ratio}\n{t}");
    assert!(e.worst_ratio < 1.2, "{t}");
    assert_eq!(
        (member(e, "b0", "a1"), member(e, "b1", "a0")),
        (0, 0),
        "{t}"
    );
    assert_eq!(e.idle_members, 2, "{t}");
    assert!(ar.recovery.naks > 0, "reordered packets are NAKed\n{t}");
    // The receivers count what arrived ahead of its turn; the default run has no such line.
    let r = ar.reordering.expect("multipath runs count reordering");
    assert!(r.out_of_sequence > 0 && r.duplicate_request > 0, "{t}");
    assert!(t.contains(&r.line()), "{t}");
    let ecmp = run(POLARISED);
    assert_eq!(ecmp.reordering, None);
    assert!(!ecmp.table().contains("out_of_sequence"));
    assert_eq!(run(&text).table(), t, "not deterministic");
    // The default is ECMP: saying so changes nothing.
    assert_eq!(run(&with_routing("ecmp")).table(), ecmp.table());
    let err = Scenario::from_toml(&with_routing("sprinkle"))
        .expect_err("no such routing")
        .to_string();
    assert!(err.contains("unknown variant `sprinkle`"), "{err}");
}

/// `text` with `[spray]` set to `spray` and the salts per switch or not.
fn sprayed(spray: &str, per_switch: bool) -> String {
    POLARISED
        .replace(
            "ecmp_salt_per_switch = false\n",
            &format!("ecmp_salt_per_switch = {per_switch}\n"),
        )
        .replace(
            "duration_us = 1500\n",
            &format!("duration_us = 1500\nspray = {spray}\n"),
        )
}

/// Spraying from the senders: every QP's packets cycle over 256 UDP source ports. With a salt
/// per switch the hashes of the two stages are independent and the 8 x 256 ports spread over
/// all four middle members, max/min under 1.2 over every data member and no member idle (the
/// ACKs are sprayed too), where per-flow ECMP leaves one idle and the worst ratio near 2. With
/// equal salts spraying cannot help: the second stage computes the first stage's hash whatever
/// the port, and the same four members stay idle. As with adaptive routing, go-back-N NAKs the
/// reordered packets.
#[test]
fn spraying_over_many_source_ports_evens_the_middle_stage_once_the_hashes_differ() {
    let spray = "{ paths = 256 }";
    let text = sprayed(spray, true);
    let s = run(&text);
    let e = s.ecmp.as_ref().expect("ECMP load");
    let t = s.table();
    let mid = middle(e);
    assert!(mid.iter().all(|&b| b > 1_000_000), "{mid:?}\n{t}");
    assert_eq!(e.idle_members, 0, "{t}");
    assert!(e.worst_ratio < 1.2, "{t}");
    assert!(s.recovery.naks > 0, "reordered packets are NAKed\n{t}");
    let r = s.reordering.expect("multipath runs count reordering");
    assert!(r.out_of_sequence > 0, "{t}");
    assert_eq!(run(&text).table(), t, "not deterministic");

    let ecmp = run(&POLARISED.replace(
        "ecmp_salt_per_switch = false\n",
        "ecmp_salt_per_switch = true\n",
    ));
    let ee = ecmp.ecmp.as_ref().expect("ECMP load");
    assert!(
        ee.idle_members >= 1 && ee.worst_ratio > 1.5,
        "{}",
        ecmp.table()
    );

    let polarised = run(&sprayed(spray, false));
    let p = polarised.ecmp.as_ref().expect("ECMP load");
    let pt = polarised.table();
    assert_eq!(
        (member(p, "a0", "b1"), member(p, "a1", "b0")),
        (0, 0),
        "{pt}"
    );
    assert_eq!(p.idle_members, 4, "{pt}");

    for (bad, why) in [
        ("{ paths = 1 }", "spray.paths is 1: at least 2"),
        ("{ paths = 4, flowlet_us = -1.0 }", "spray.flowlet_us is -1"),
        ("{ paths = 4, gap = 1 }", "unknown field `gap`"),
    ] {
        let err = Scenario::from_toml(&sprayed(bad, true))
            .expect_err("refused")
            .to_string();
        assert!(err.contains(why), "{bad}: {err}");
    }
}
