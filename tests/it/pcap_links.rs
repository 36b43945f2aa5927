//! `roce pcap explain` links frames to their causes and effects: a lossy `roce loopback` capture
//! marks every frame the fault injector touched (pcapng comments), and its NAKs link to the
//! frames the sender resent.

use crate::support::cli_output;

use cli_output::{explain_links, json, numbers_after, roce, scratch_dir};

#[test]
fn lossy_loopback_capture_names_its_faults_and_links_naks_to_resends() {
    let dir = scratch_dir("pcap-links");
    let pcap = dir.join("lossy.pcapng");
    let pcap_s = pcap.to_str().expect("utf-8 path");
    let (code, out, err) = roce(&[
        "loopback",
        "--count",
        "100",
        "--loss",
        "0.03",
        "--reorder",
        "0.02",
        "--dup",
        "0.02",
        "--seed",
        "3",
        "--json",
        "--pcap",
        pcap_s,
    ]);
    assert_eq!(code, 0, "stderr: {err}\nstdout: {out}");
    let s = json(&out);
    let fault = |k: &str| {
        s["faults_a_to_b"][k].as_u64().unwrap_or(0) + s["faults_b_to_a"][k].as_u64().unwrap_or(0)
    };
    assert!(
        fault("dropped") > 0 && fault("reordered") > 0 && fault("duplicated") > 0,
        "{s}"
    );

    // Every frame the injector touched carries a comment saying what it did.
    let (code, out, err) = roce(&["pcap", "check", pcap_s, "--json"]);
    assert_eq!(code, 0, "stderr: {err}");
    let lines: Vec<serde_json::Value> = out.lines().map(json).collect();
    let with = |needle: &str| {
        lines
            .iter()
            .filter(|l| l["comment"].as_str().is_some_and(|c| c.contains(needle)))
            .count() as u64
    };
    assert_eq!(with("dropped"), fault("dropped"));
    assert_eq!(with("reordered"), fault("reordered"));
    assert_eq!(with("duplicated"), fault("duplicated"));
    let summary = lines.last().expect("summary");
    assert_eq!(
        summary["frames"].as_u64(),
        Some(fault("frames")),
        "{summary}"
    );

    // NAKs link to the frames resent for them; each resent frame points back at its NAK and at
    // the frame that first carried its PSN, both earlier in the capture (go-back-N also resends
    // what left after the NAK did).
    let out = explain_links(pcap_s);
    let mut resent_for_nak = 0;
    for line in out
        .lines()
        .filter(|l| l.contains("resent: asked for by the NAK"))
    {
        let this = numbers_after(line, "frame ")[0];
        let nak = numbers_after(line, "NAK in frame ")[0];
        assert!(nak < this, "{line}");
        // A re-issued READ may start inside the original request's PSN range: no frame to name.
        if let Some(&first) = numbers_after(line, "first sent in frame ").first() {
            assert!(first < this, "{line}");
        }
        resent_for_nak += 1;
    }
    assert!(resent_for_nak > 0, "{out}");
    let naks: Vec<&str> = out
        .lines()
        .filter(|l| l.contains(": NAK: the sender resends"))
        .collect();
    assert!(!naks.is_empty(), "{out}");
    let counted: usize = naks.iter().map(|l| numbers_after(l, "resends ")[0]).sum();
    assert_eq!(counted, resent_for_nak, "every resend belongs to one NAK");
    let last = out.lines().last().unwrap_or_default();
    assert!(
        last.contains(&format!("{resent_for_nak} frame(s) resent for a NAK")),
        "{last}"
    );

    // One dropped frame explained on its own shows its comment.
    let dropped = lines
        .iter()
        .find(|l| l["comment"].as_str().is_some_and(|c| c.contains("dropped")))
        .and_then(|l| l["frame"].as_u64())
        .expect("a dropped frame");
    let (code, out, err) = roce(&["pcap", "explain", pcap_s, "--frame", &dropped.to_string()]);
    assert_eq!(code, 0, "stderr: {err}");
    assert!(out.contains("capture comment: fault: dropped"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}
