//! A cut of the transport grid (`scenarios/transport-grid-websearch.toml`,
//! `tools/transport-grid.sh`): on the fat tree without PFC and with 0.1% of frames lost on
//! every link, selective repeat resends about one packet per frame lost while go-back-N resends
//! many times that. The first 300 us of the WebSearch arrivals under DCQCN on ECMP paths (so
//! nothing is reordered and every resend answers a loss), both recoveries in one grid.

use std::process::Command;

use serde_json::Value;

use crate::support::scenario_files::TRANSPORT_GRID_WEBSEARCH;

/// (retransmitted packets, frames dropped) of the run of `variant`.
fn resent_and_dropped(grid: &Value, variant: &str) -> (f64, f64) {
    let runs = grid["runs"].as_array().expect("runs");
    let run = runs
        .iter()
        .find(|r| r["variant"] == variant)
        .unwrap_or_else(|| panic!("no run {variant}"));
    let s = &run["summary"];
    let n = |k: &str| s[k].as_f64().unwrap_or_else(|| panic!("no {k}"));
    (n("retransmitted"), n("drops"))
}

#[test]
fn without_pfc_and_with_loss_selective_repeat_resends_about_one_packet_per_loss_and_go_back_n_many()
{
    let args = [
        "sim",
        "compare",
        TRANSPORT_GRID_WEBSEARCH,
        "--cc",
        "dcqcn-mlx",
        "--param",
        "recovery=go-back-n,selective",
        "--set",
        "switch.pfc=false",
        "--set",
        "topology.link.loss=0.001",
        "--set",
        "duration_us=300",
        "--allow-failures",
        "--json",
    ];
    let out = Command::new(env!("CARGO_BIN_EXE_roce"))
        .args(args)
        .output()
        .expect("run roce");
    println!("stderr: {}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "exit {:?}", out.status);
    let grid: Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");

    let (gbn_resent, gbn_dropped) = resent_and_dropped(&grid, "dcqcn-mlx recovery=go-back-n");
    let (sr_resent, sr_dropped) = resent_and_dropped(&grid, "dcqcn-mlx recovery=selective");
    println!("go-back-N: {gbn_resent} resent, {gbn_dropped} dropped");
    println!("selective: {sr_resent} resent, {sr_dropped} dropped");
    // Enough losses for the ratios to mean something (about 0.6% of packets cross six lossy
    // links' worth of chances; 117 and 136 frames on the seed shipped).
    assert!(gbn_dropped >= 50.0 && sr_dropped >= 50.0);
    let (gbn, sr) = (gbn_resent / gbn_dropped, sr_resent / sr_dropped);
    assert!(
        sr <= 1.5,
        "selective repeat resent {sr:.2} packets per frame lost"
    );
    assert!(
        gbn >= 3.0 * sr,
        "go-back-N resent {gbn:.2} packets per frame lost, selective repeat {sr:.2}"
    );
}
