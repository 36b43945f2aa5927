//! `roce pcap check` / `explain` as a user runs them: real vectors, damaged files, bad paths.

use roce_testkit::vectors;

use std::path::PathBuf;
use std::process::{Command, Output};

fn roce(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_roce"))
        .args(args)
        .output()
        .expect("the roce binary runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("roce-cli-pcap-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn summary_of(out: &Output) -> serde_json::Value {
    let text = stdout(out);
    let last = text.lines().last().expect("a summary line");
    serde_json::from_str(last).expect("the summary is JSON")
}

#[test]
fn check_passes_every_clean_vector_with_exact_counts() {
    let clean = vectors::COUNTS
        .into_iter()
        .filter(|v| v.0 != vectors::CORRUPTED);
    for (file, frames, roce_frames) in clean {
        let path = vectors::path(file);
        let out = roce(&["pcap", "check", path.to_str().unwrap(), "--json"]);
        assert!(out.status.success(), "{file}: {}", stderr(&out));
        let s = summary_of(&out);
        assert_eq!(s["summary"], true);
        assert_eq!(s["frames"], frames, "{file}");
        assert_eq!(s["roce"], roce_frames, "{file}");
        assert_eq!(s["icrc_ok"], roce_frames, "{file}");
        assert_eq!(s["icrc_bad"], 0, "{file}");
        assert_eq!(s["malformed"], 0, "{file}");
        // One JSON line per frame plus the summary.
        assert_eq!(stdout(&out).lines().count(), frames + 1, "{file}");
    }
}

#[test]
fn check_reports_the_deliberately_corrupted_frame_and_fails() {
    let path = vectors::path(vectors::CORRUPTED);
    let out = roce(&["pcap", "check", path.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let s = summary_of(&out);
    assert_eq!(
        (s["roce"].as_u64(), s["icrc_bad"].as_u64()),
        (Some(15), Some(1))
    );
    let bad: Vec<serde_json::Value> = stdout(&out)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["icrc"] == "bad")
        .collect();
    assert_eq!(bad.len(), 1);
    assert_eq!(bad[0]["frame"], 14);
    assert_eq!(
        bad[0]["opcode"], 10,
        "the corrupted frame is an RDMA WRITE Only"
    );
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "one error line: {err}");
    assert!(err.contains("1 bad ICRC"), "{err}");
}

/// Copies a vector, lets `damage` change its bytes, and runs `pcap check` on the copy.
fn check_damaged(name: &str, damage: impl FnOnce(&mut Vec<u8>)) -> Output {
    let mut bytes = std::fs::read(vectors::path("rc_pingpong_send_64.pcap")).unwrap();
    damage(&mut bytes);
    let path = scratch(name);
    std::fs::write(&path, &bytes).unwrap();
    roce(&["pcap", "check", path.to_str().unwrap(), "--json"])
}

#[test]
fn flipped_payload_byte_is_reported_as_bad_icrc() {
    // The last frame is an ACK; its last 4 bytes are the ICRC. Flip a bit in the BTH PSN instead:
    // ACK frames are 62 bytes (14 Eth + 20 IP + 8 UDP + 12 BTH + 4 AETH + 4 ICRC).
    let out = check_damaged("flipped.pcap", |b| {
        let n = b.len();
        b[n - 62 + 14 + 20 + 8 + 11] ^= 0x01;
    });
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let s = summary_of(&out);
    assert_eq!(s["icrc_bad"], 1);
    assert_eq!(s["icrc_ok"], 19);
}

#[test]
fn truncated_capture_lists_what_it_read_then_fails_with_one_line() {
    let out = check_damaged("truncated.pcap", |b| b.truncate(b.len() - 10));
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("truncated after frame 31"), "{err}");
    let s = summary_of(&out);
    assert_eq!(s["frames"], 31);
}

#[test]
fn unreadable_and_non_capture_files_give_one_clear_line() {
    let out = roce(&["pcap", "check", "/nonexistent/roce.pcap"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("roce: cannot open /nonexistent/roce.pcap"),
        "{err}"
    );

    let text = scratch("text.pcap");
    std::fs::write(&text, "just some text\n").unwrap();
    let out = roce(&["pcap", "check", text.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("is not a pcap or pcapng file"));
    assert!(stdout(&out).is_empty());
}

#[test]
fn garbage_frames_are_malformed_not_panics() {
    // Keep the pcap records intact but overwrite frame bodies after the UDP header with 0xff:
    // every RoCE frame must come out as malformed or bad-ICRC, never crash the tool.
    let out = check_damaged("garbage.pcap", |b| {
        let mut off = 24;
        while off + 16 <= b.len() {
            let incl = u32::from_le_bytes(b[off + 8..off + 12].try_into().unwrap()) as usize;
            let body = off + 16;
            for byte in b.iter_mut().skip(body + 42).take(incl.saturating_sub(42)) {
                *byte = 0xff;
            }
            off = body + incl;
        }
    });
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let s = summary_of(&out);
    assert_eq!(s["icrc_ok"], 0);
    assert_eq!(
        s["icrc_bad"].as_u64().unwrap() + s["malformed"].as_u64().unwrap(),
        20
    );
}

#[test]
fn explain_annotates_a_nak_for_a_class() {
    let path = vectors::path(vectors::CORRUPTED);
    let out = roce(&["pcap", "explain", path.to_str().unwrap(), "--frame", "16"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("NAK: PSN sequence error"), "{text}");
    assert!(text.contains("4791 = RoCEv2"), "{text}");
    assert!(text.contains("invariant CRC: correct"), "{text}");

    let out = roce(&["pcap", "explain", path.to_str().unwrap(), "--frame", "999"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("there is no frame 999"));
}

#[test]
fn explain_covers_every_roce_frame_of_a_capture() {
    let path = vectors::path("verbs_imm_atomic.pcap");
    let out = roce(&["pcap", "explain", path.to_str().unwrap()]);
    assert!(out.status.success());
    let text = stdout(&out);
    assert_eq!(text.matches("── frame").count(), 26);
    assert!(text.contains("AtomicETH"));
    assert!(text.contains("ImmDt"), "immediate data is explained");
}

#[test]
fn a_reader_that_goes_away_ends_the_listing_quietly() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    // `roce pcap check big.pcap | head -1`: the pipe closes early; no panic, no error line.
    let path = vectors::path("rc_pingpong_send_8192_mtu1024.pcap");
    let mut child = Command::new(env!("CARGO_BIN_EXE_roce"))
        .args(["pcap", "explain", path.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(first.starts_with("── frame"), "{first}");
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert!(out.status.success(), "{err}");
}

/// The frame numbers `pcap check --json` lists with `filters`, and the summary's `matched`.
fn filtered(file: &str, filters: &[&str]) -> (Vec<u64>, serde_json::Value) {
    let path = vectors::path(file);
    let mut args = vec!["pcap", "check", path.to_str().unwrap(), "--json"];
    args.extend(filters);
    let out = roce(&args);
    assert!(out.status.success(), "{filters:?}: {}", stderr(&out));
    let s = summary_of(&out);
    let frames = stdout(&out)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v["frame"].as_u64())
        .collect();
    (frames, s["matched"].clone())
}

#[test]
fn check_filters_by_opcode_qpn_psn_and_ecn() {
    let f = "verbs_ce_marked_to_a.pcap";
    // Frames 8-14 are RoCE: WRITE Only, ACK, SEND Only Imm, ACK, WRITE First, WRITE Last, ACK
    // on QPN 28, PSNs 5011363..5011366; the requests are CE-marked, the ACKs ECT(0).
    assert_eq!(filtered(f, &["--ecn", "ce"]).0, [8, 10, 12, 13]);
    assert_eq!(filtered(f, &["--ecn", "ce"]).1, 4);
    assert_eq!(
        filtered(f, &["--opcode", "write", "--ecn", "ce"]).0,
        [8, 12, 13]
    );
    assert_eq!(filtered(f, &["--opcode", "ack"]).0, [9, 11, 14]);
    assert_eq!(
        filtered(f, &["--opcode", "rc-rdma-write-first,0x08"]).0,
        [12, 13]
    );
    assert_eq!(filtered(f, &["--opcode", "nak"]).0, Vec::<u64>::new());
    assert_eq!(filtered(f, &["--psn", "5011364..5011365"]).0, [10, 11, 12]);
    assert_eq!(filtered(f, &["--psn", "0x4c77a4"]).0, [10, 11]);
    assert_eq!(filtered(f, &["--qpn", "28", "--opcode", "send"]).0, [10]);
    assert_eq!(
        filtered(f, &["--ecn", "ect0", "--qpn", "0x1c"]).0,
        [9, 11, 14]
    );
    let (none, matched) = filtered(f, &["--qpn", "29"]);
    assert!(none.is_empty());
    assert_eq!(matched, 0);
    // Without filters every frame is listed and there is no `matched`.
    let (all, matched) = filtered(f, &[]);
    assert_eq!(all, (1..=19).collect::<Vec<u64>>());
    assert!(matched.is_null());
    let (atomics, _) = filtered("verbs_imm_atomic.pcap", &["--opcode", "atomic"]);
    assert_eq!(atomics, [30, 32]);
}

#[test]
fn check_filters_choose_lines_but_every_frame_is_still_checked() {
    let path = vectors::path("host_peer_to_guest.pcap");
    let out = roce(&["pcap", "check", path.to_str().unwrap(), "--qpn", "0xffffff"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "the bad ICRC still fails the check"
    );
    let text = stdout(&out);
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(
        text.contains("1 ICRC bad, 0 malformed; 0 shown by the filters"),
        "{text}"
    );
    // The NAKs of this capture (frame 16 is the PSN sequence error `explain` annotates).
    let out = roce(&[
        "pcap",
        "check",
        path.to_str().unwrap(),
        "--opcode",
        "nak",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let naks: Vec<u64> = stdout(&out)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v["frame"].as_u64())
        .collect();
    assert_eq!(naks, [16, 22]);
}

#[test]
fn check_refuses_a_filter_it_cannot_read_with_the_reason() {
    let path = vectors::path("ib_write_bw_64.pcap");
    let p = path.to_str().unwrap();
    for (args, want) in [
        (["--opcode", "teleport"], "`teleport` is not an opcode"),
        (["--psn", "9..x"], "`9..x` is not a PSN or PSN range"),
        (["--ecn", "red"], "`red` is not an ECN codepoint"),
        (["--qpn", "0x1000000"], "`0x1000000` is not a 24-bit number"),
    ] {
        let out = roce(&["pcap", "check", p, args[0], args[1]]);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(stderr(&out).contains(want), "{args:?}: {}", stderr(&out));
    }
}
