//! `roce sim` says how fast a run went: events, events per wall second, virtual seconds per
//! wall second, events per virtual second and peak memory, in the text summary and (with
//! `--speed`) the JSON one.

use std::process::Command;

/// The stdout of a 100 µs incast of 3 senders with `args`.
fn sim(args: &[&str]) -> Vec<u8> {
    run(&["incast", "--senders", "3"], args)
}

/// The stdout of `roce sim EXPERIMENT` run for 100 µs with `args`.
fn run(experiment: &[&str], args: &[&str]) -> Vec<u8> {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_roce"));
    cmd.arg("sim")
        .args(experiment)
        .args(["--duration", "100us"]);
    let out = cmd.args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    out.stdout
}

#[test]
fn the_json_summary_reports_events_rates_and_peak_memory_consistently() {
    let json: serde_json::Value = serde_json::from_slice(&sim(&["--json", "--speed"])).unwrap();
    let speed = &json["speed"];
    let num = |k: &str| {
        speed[k]
            .as_f64()
            .unwrap_or_else(|| panic!("{k} in {speed}"))
    };
    let events = num("events");
    assert!(events > 0.0, "{speed}");
    // The rates are of the events handled; the summary's count adds those a port with nothing
    // queued never scheduled, and the samples taken at once once nothing was left to happen.
    assert_eq!(
        json["events"].as_f64(),
        Some(events + num("events_elided") + num("idle_samples")),
        "{json}"
    );
    assert_eq!(num("virtual_s"), 100e-6);
    let wall = num("wall_s");
    assert!(wall > 0.0);
    assert!((num("events_per_sec") * wall - events).abs() <= events * 1e-9 + 1e-6);
    assert!((num("simsec_per_sec") * wall - 100e-6).abs() <= 1e-12);
    assert!((num("events_per_simsec") * 100e-6 - events).abs() <= events * 1e-9);
    // VmHWM of this process: at least the binary's own few megabytes.
    assert!(num("peak_rss_bytes") > 1e6, "{speed}");
    // Process CPU time (ticks of 10 ms, so a short run may read 0) and the host's steal share.
    let cpu = num("cpu_s");
    assert!((0.0..=wall * 64.0 + 0.02).contains(&cpu), "{speed}");
    // The steal share is null when no CPU tick passed during the run (a few ms), not 0.
    let steal = &speed["host_steal_share"];
    assert!(
        steal.is_null() || steal.as_f64().is_some_and(|s| (0.0..=1.0).contains(&s)),
        "{speed}"
    );
    // One thread: no parallel section.
    assert!(json.get("parallel").is_none(), "{json}");
    // What the flows held: three endless flows, each with its sender's QP and its receiver's
    // (made at its first packet), none retired; a CQ per sender and one for the receivers.
    let flows = &speed["flows"];
    assert_eq!(flows["flows"], 3, "{flows}");
    let qps = &flows["qps"];
    let counts = [
        "opened",
        "retired",
        "live",
        "peak_live",
        "planned",
        "cqs_made",
        "cqs_reused",
    ]
    .map(|k| qps[k].as_u64().unwrap_or_else(|| panic!("{k} in {qps}")));
    assert_eq!(counts, [6, 0, 6, 6, 0, 4, 0], "{qps}");
    assert_eq!(flows["stale_packets"], 0, "{flows}");
    assert!(flows["live_flow_bytes"].as_u64() > flows["finished_flow_bytes"].as_u64());
}

#[test]
fn a_split_run_says_where_its_threads_time_went() {
    // Leaf-spine: one partition per switch group, so two threads split it.
    let split = |args: &[&str]| run(&["link-failure", "--allow-failures"], args);
    let json: serde_json::Value =
        serde_json::from_slice(&split(&["--json", "--speed", "--threads", "2"])).unwrap();
    let par = &json["parallel"];
    let windows = par["windows"].as_u64().unwrap_or_else(|| panic!("{json}"));
    assert!(windows > 0, "{par}");
    let events: u64 = par["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_u64().unwrap())
        .sum();
    assert!(
        events > 0 && events <= json["events"].as_u64().unwrap(),
        "{json}"
    );
    assert_eq!(par["cpu_ns"].as_array().map(Vec::len), Some(2), "{par}");
    let text = String::from_utf8(split(&["--threads", "2"])).unwrap();
    let last = text.lines().last().unwrap_or_default();
    assert!(last.starts_with("parallel: 2 threads, "), "{text}");
    assert!(last.contains("the split's balance allows"), "{last}");
}

#[test]
fn the_text_summary_ends_with_the_speed_line() {
    let text = String::from_utf8(sim(&[])).unwrap();
    // The last line, or the one before a warning that the hypervisor took the CPUs.
    let last = text
        .lines()
        .rev()
        .find(|l| !l.starts_with("warning: the hypervisor"))
        .unwrap_or_default();
    assert!(last.starts_with("speed: "), "{text}");
    assert!(last.contains(" CPU s: "), "{last}");
    for part in [
        "events in",
        "M ev/s",
        "simsec/s",
        "ev/simsec",
        "peak memory",
        "idle-port events elided",
    ] {
        assert!(last.contains(part), "{part} in {last}");
    }
}
