//! Shared-buffer thresholds in scenarios: dynamic PFC (XOFF at a fraction of the free buffer)
//! keeps an incast lossless and pauses sooner when the buffer is small; per-rate ECN maps mark
//! on the ports of the listed rate only.

use roce_fabric::scenario::Scenario;
use roce_fabric::summary::Summary;

fn run(buffer: &str, extra_switch: &str) -> Summary {
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
