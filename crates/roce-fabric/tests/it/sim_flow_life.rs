//! A flow holds transport state only while it lives: QPs are made when a flow starts (its
//! receiver's at its first packet) and its sender's retired when it is done, their CQs pooled;
//! flow files are read a flow at a time and must keep their starts in order.

use std::path::{Path, PathBuf};

use roce_fabric::engines::rc::LINGER;
use roce_fabric::engines::FlowFootprint;
use roce_fabric::experiment::scenario::Scenario;
use roce_fabric::hpcc::flow_file::{FlowLine, FlowReader};
use roce_fabric::limits::bounds::Limits;

/// A flow file of `n` flows of `size` bytes, one every `gap_us`, cycling over `pairs`, written
/// to a fresh file of the temp directory named after `tag`.
fn flow_file(tag: &str, n: usize, size: u64, gap_us: f64, pairs: &[(usize, usize)]) -> PathBuf {
    let path = std::env::temp_dir().join(format!("roce-{tag}-{}.txt", std::process::id()));
    let mut text = format!("{n}\n");
    for i in 0..n {
        let (src, dst) = pairs[i % pairs.len()];
        let start_s = 1e-6 + i as f64 * gap_us * 1e-6;
        text.push_str(&format!("{src} {dst} 3 100 {size} {start_s:.9}\n"));
    }
    std::fs::write(&path, text).unwrap();
    path
}

fn star_scenario(path: &Path, duration_us: f64) -> Scenario {
    let toml = format!(
        "name = \"sequential\"\nduration_us = {duration_us}\ncc = \"none\"\nmtu = 1024\n\
         topology = {{ kind = \"star\", hosts = 4, link = {{ gbps = 100, delay_ns = 1000 }} }}\n\
         workloads = [{{ kind = \"flow_file\", path = {:?} }}]\n",
        path.display().to_string()
    );
    Scenario::from_toml(&toml).unwrap()
}

#[test]
fn ten_thousand_sequential_flows_hold_a_bounded_number_of_qps_and_reuse_their_cqs() {
    // One 2 KB flow every 20 us, over two pairs: each is done long before the next starts.
    let n = 10_000;
    let path = flow_file("sequential", n, 2000, 20.0, &[(0, 1), (2, 3)]);
    let s = star_scenario(&path, 20.0 * n as f64 + 100.0);
    let (summary, built) = s.run(|_| {}).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert_eq!(summary.flows.len(), n);
    assert_eq!(summary.failed_flows, 0);
    assert!(summary.flows.iter().all(|f| f.completion_us.is_some()));
    let fp = FlowFootprint::of(&built.fabric).unwrap();
    let q = fp.qps;
    assert_eq!(fp.flows, n as u64);
    // Every sender and every receiver was made, every sender retired, and every receiver
    // but those whose linger outlasts the run: a flow every 20 us, LINGER (4.19 ms) before.
    let lingering = LINGER.as_nanos().div_ceil(20_000);
    assert_eq!(LINGER.as_nanos(), 4_194_304);
    assert_eq!(q.opened, 2 * n as u64);
    // (A receiver is retired at its host's first event after its linger: the last few
    // before the end may wait for one that never comes.)
    let kept = 2 * n as u64 - q.retired;
    assert!(
        (lingering - 8..=lingering + 2).contains(&kept),
        "{kept} {q:?}"
    );
    assert_eq!(q.live, q.opened - q.retired);
    assert_eq!(q.planned, 0);
    // Live at once, hosts' peaks summed: each sending host's one sender, each receiving host's
    // lingering receivers (a flow every 40 us each) and the one receiving.
    assert!(q.peak_live <= 2 + 2 * (lingering / 2 + 2), "{q:?}");
    // Two sending hosts made one sender CQ each (plus one shared receivers' CQ per
    // receiving host); every later flow reused a pooled one.
    assert_eq!(q.cqs_made, 4, "{q:?}");
    assert_eq!(q.cqs_reused, n as u64 - 2, "{q:?}");
    assert_eq!(q.regions, 4, "{q:?}");
}

#[test]
fn a_flow_file_is_read_a_flow_at_a_time_and_a_start_going_backwards_is_refused() {
    // 200,000 flows: read through, one line held at a time.
    let n = 200_000;
    let path = flow_file("large", n, 1000, 0.5, &[(0, 1), (1, 2), (2, 0)]);
    let reader = FlowReader::open(&path, &Limits::default()).unwrap();
    assert_eq!(reader.announced(), n as u64);
    let (mut count, mut last) = (0usize, None::<FlowLine>);
    for f in reader {
        let f = f.unwrap();
        assert!(last.as_ref().is_none_or(|l| l.start_s <= f.start_s));
        count += 1;
        last = Some(f);
    }
    assert_eq!(count, n);
    assert_eq!(last.map(|l| (l.src, l.dst)), Some(((n - 1) % 3, n % 3)));
    // A start before the previous one is refused, naming the line, when the reading gets
    // there (a run refuses it while it is built).
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str("0 1 3 100 1000 0.05\n");
    text.replace_range(..text.find('\n').unwrap(), &(n + 1).to_string());
    std::fs::write(&path, text).unwrap();
    let err = FlowReader::open(&path, &Limits::default())
        .unwrap()
        .find_map(Result::err)
        .unwrap();
    assert_eq!(
        err.to_string(),
        format!(
            "{}:{}: flow starts at 0.05 s, before the previous flow's {} s: flows must be in \
             start order (third.cc reads them as its clock reaches them)",
            path.display(),
            n + 2,
            format!("{:.9}", 1e-6 + (n - 1) as f64 * 0.5e-6)
                .parse::<f64>()
                .unwrap()
        )
    );
    let s = star_scenario(&path, 10.0);
    let built = s.build().err().map(|e| e.to_string()).unwrap_or_default();
    std::fs::remove_file(&path).unwrap();
    assert!(built.contains("flows must be in start order"), "{built}");
}
