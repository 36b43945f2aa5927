//! Shared-buffer thresholds in scenarios: dynamic PFC (XOFF at a fraction of the free buffer)
//! keeps an incast lossless and pauses sooner when the buffer is small; per-rate ECN maps mark
//! on the ports of the listed rate only; and the switch element's thresholds themselves.

use roce_fabric::experiment::scenario::Scenario;
use roce_fabric::experiment::summary::RunSummary;
use roce_fabric::switching::switch::{
    DynamicPfc, EcnThresholds, PfcConfig, RateEcn, Switch, SwitchConfig,
};
use roce_proto::time::Instant;

fn run(buffer: &str, extra_switch: &str) -> RunSummary {
    let text = format!(
        r#"
        name = "thresholds"
        duration_us = 300
        topology = {{ kind = "star", hosts = 9, link = {{ gbps = 100, delay_ns = 1000 }} }}
        workloads = [{{ kind = "incast", senders = [0, 1, 2, 3, 4, 5, 6, 7], receiver = 8 }}]
        [switch]
        buffer_bytes = "{buffer}"
        queue_limit_bytes = "1MB"
        lossless = [3]
        pfc_thresholds = {{ xoff_bytes = 0, xon_bytes = 0, headroom_bytes = "60KB", quanta = 65535, dynamic = {{ shift = 3 }} }}
        {extra_switch}
        "#
    );
    let s = Scenario::from_toml(&text).expect("scenario parses");
    s.run(|_| {}).expect("runs").0
}

#[test]
fn dynamic_pfc_keeps_an_incast_lossless_and_pauses_sooner_in_a_smaller_buffer() {
    let small = run("2MB", "");
    let large = run("16MB", "");
    for s in [&small, &large] {
        assert_eq!(s.drops, 0, "{}", s.table());
    }
    // XOFF at (buffer − headroom − used) / 8 per ingress: the 2 MB buffer pauses the senders
    // at about 150 KB each and holds less; the 16 MB one takes the whole burst.
    assert!(small.pfc_pause_frames > 0, "{}", small.table());
    assert!(
        small.queue_p99_bytes < large.queue_p99_bytes,
        "{}\n{}",
        small.table(),
        large.table()
    );
}

#[test]
fn a_rate_map_marks_only_where_it_applies() {
    let ecn = r#"ecn = { kmin_bytes = "10KB", kmax_bytes = "40KB", pmax = 0.2 }"#;
    let marks = |map: &str| run("16MB", &format!("{ecn}\necn_by_rate = [{map}]")).ecn_marked;
    let base = marks("");
    assert!(base > 0);
    // A map for another rate changes nothing; one for the hosts' 100G that never marks wins.
    assert_eq!(
        marks(r#"{ gbps = 400, kmin_bytes = 1, kmax_bytes = 2, pmax = 1.0 }"#),
        base
    );
    assert_eq!(
        marks(r#"{ gbps = 100, kmin_bytes = "1GB", kmax_bytes = "2GB", pmax = 0.1 }"#),
        0
    );
}

/// A switch of 4 ports (0..3 at 100G, 3 at 400G) over a 1 MB buffer with 50 KB headroom
/// per port and dynamic PFC: the XOFF threshold is (1 MB − 200 KB − used) >> shift.
fn dynamic_switch() -> Switch<u32, ()> {
    let cfg = SwitchConfig {
        buffer_bytes: 1_000_000,
        pfc: Some(PfcConfig {
            headroom_bytes: 50_000,
            dynamic: Some(DynamicPfc {
                nic_bps: 100_000_000_000,
                ..DynamicPfc::default()
            }),
            ..PfcConfig::default()
        }),
        ..SwitchConfig::default()
    };
    let mut sw = Switch::new("s".into(), cfg);
    for rate in [100, 100, 100, 400] {
        let p = sw.add_port(());
        sw.set_port_rate(p, rate * 1_000_000_000);
    }
    sw
}

#[test]
fn dynamic_xoff_follows_the_free_buffer_and_xon_sits_the_resume_offset_below() {
    let mut sw = dynamic_switch();
    // Ingress 0 (shift 3): XOFF once it holds more than (800 KB − used) / 8.
    let mut held = 0;
    let mut xoff_at = None;
    while xoff_at.is_none() && held < 800_000 {
        held += 1_000;
        if sw.enqueue(0, (0, 1), 3, 1_000, Instant::ZERO) {
            xoff_at = Some(held);
        }
    }
    // The first holding x above (800 KB − x) / 8: 89 KB.
    let at = xoff_at.expect("XOFF");
    assert_eq!(at, 89_000);
    assert!(at > (800_000 - at) / 8, "{at}");
    assert!(at - 1_000 <= (800_000 - (at - 1_000)) / 8, "{at}");
    // XON when the ingress holds 3 KiB less than the threshold at that moment.
    let mut released = 0;
    loop {
        sw.dequeue(1, Instant::ZERO, |_, _| false)
            .expect("a packet");
        released += 1_000;
        if sw.should_resume(0, 3) {
            break;
        }
    }
    let left = at - released;
    assert!(left + 3 * 1024 <= (800_000 - left) / 8, "XON at {left}");
    assert!(
        left + 1_000 + 3 * 1024 > (800_000 - left - 1_000) / 8,
        "XON at {left}"
    );
}

#[test]
fn the_400g_port_pauses_later_than_a_100g_port() {
    let xoff = |ingress: u16| {
        let mut sw = dynamic_switch();
        (1..=800u64)
            .find(|_| sw.enqueue(0, (ingress, 1), 3, 1_000, Instant::ZERO))
            .map(|n| n * 1_000)
    };
    // The first holding x (in 1 KB steps) above (800 KB − x) >> shift: shift 3 (alpha 1/8)
    // at 100G, x > 88.9 KB; shift 1 (alpha 1/2) at 400G, x > 266.7 KB.
    assert_eq!(xoff(0), Some(89_000));
    assert_eq!(xoff(3), Some(267_000));
}

#[test]
fn a_port_uses_the_marking_of_its_rate() {
    let base = EcnThresholds {
        kmin_bytes: 0,
        kmax_bytes: 1,
        pmax: 1.0,
        step_bytes: None,
    };
    let never = EcnThresholds {
        kmin_bytes: u64::MAX - 1,
        kmax_bytes: u64::MAX,
        ..base
    };
    let cfg = SwitchConfig {
        ecn_by_rate: vec![RateEcn {
            gbps: 400.0,
            ecn: never,
        }],
        ..SwitchConfig::default()
    }
    .with_ecn_all(Some(base));
    let mut sw: Switch<u32, ()> = Switch::new("s".into(), cfg);
    let (slow, fast) = (sw.add_port(()), sw.add_port(()));
    sw.set_port_rate(slow, 100_000_000_000);
    sw.set_port_rate(fast, 400_000_000_000);
    for egress in [slow, fast] {
        sw.enqueue(0, (0, egress), 3, 10_000, Instant::ZERO);
    }
    // Both thresholds are certainties: probability 1 and 0.
    assert_eq!(
        sw.ecn_probability(slow, 3),
        1.0,
        "100G marks with the base ramp"
    );
    assert_eq!(sw.ecn_probability(fast, 3), 0.0, "400G uses its own map");
}
