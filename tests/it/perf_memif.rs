//! `roce perf`, `roce pingpong` and `roce perf verbs-peer` between two processes over DPDK
//! net_memif (`--port memif:SOCKET`): shared memory set up over a unix socket in a scratch
//! directory, the TCP exchange on loopback. Needs no privilege. The client starts first in each
//! run, so each also proves that a client waits for the server's socket.

use roce_testkit::perftest_output::result_row;

use crate::support::child::{self, Reap};

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Mutex;

/// One pair at a time: each run is two busy-polling processes.
static SERIAL: Mutex<()> = Mutex::new(());

const ROCE: &str = env!("CARGO_BIN_EXE_roce");

/// A scratch directory named after its test and this process, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("roce-it-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("scratch directory");
        Scratch(dir)
    }
    fn socket(&self) -> String {
        self.0.join("memif.sock").display().to_string()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn free_port() -> String {
    child::free_port().to_string()
}

fn spawn(args: &[&str]) -> Child {
    Command::new(ROCE)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn roce")
}

/// Runs `cmd` as client (started first) and server over a memif socket at `socket` (each side
/// takes its role from the exchange); returns client and server stdout.
fn run_pair(cmd: &[&str], socket: &str, extra: &[&str]) -> (String, String) {
    let (c, s) = run_sides(cmd, socket, extra, extra);
    (
        String::from_utf8_lossy(&c.stdout).into_owned(),
        String::from_utf8_lossy(&s.stdout).into_owned(),
    )
}

/// [`run_pair`] with each side's own extra arguments; returns both outputs, after checking
/// both sides succeeded.
fn run_sides(
    cmd: &[&str],
    socket: &str,
    client_extra: &[&str],
    server_extra: &[&str],
) -> (Output, Output) {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let port = format!("memif:{socket}");
    let tcp = free_port();
    let common = ["--port", &port, "--timeout", "30", "-p", &tcp];
    let mut client_args = cmd.to_vec();
    client_args.extend(common);
    client_args.extend(["--ip", "198.18.0.2/15"]);
    client_args.extend(client_extra);
    client_args.push("127.0.0.1");
    let client = Reap::new(spawn(&client_args));
    let mut server_args = cmd.to_vec();
    server_args.extend(common);
    server_args.extend(["--ip", "198.18.0.1/15"]);
    server_args.extend(server_extra);
    let server = Reap::new(spawn(&server_args));
    let (c, s) = (client.wait(), server.wait());
    assert!(
        c.status.success() && s.status.success(),
        "client {:?}:\n{}\n{}\nserver {:?}:\n{}\n{}",
        c.status,
        String::from_utf8_lossy(&c.stdout),
        String::from_utf8_lossy(&c.stderr),
        s.status,
        String::from_utf8_lossy(&s.stdout),
        String::from_utf8_lossy(&s.stderr)
    );
    (c, s)
}

#[test]
fn write_bw_of_64_kib_over_memif_reports_on_both_sides() {
    let dir = Scratch::new("memif-wbw");
    let (cout, sout) = run_pair(
        &["perf", "write-bw"],
        &dir.socket(),
        &["-s", "65536", "-n", "200"],
    );
    let header = "#bytes     #iterations    BW peak";
    let row = result_row(&cout, header);
    assert_eq!(row.len(), 5, "{cout}");
    assert_eq!((row[0], row[1]), (65536.0, 200.0), "{cout}");
    assert!(row[2..].iter().all(|&x| x > 0.0), "{row:?}");
    assert_eq!(result_row(&sout, header), row);
    // The socket went with the server.
    assert!(!Path::new(&dir.socket()).exists());
}

/// `--recovery selective` on both sides over a lossy memif link: they agree to it (the banner
/// says so), every message completes, and the receiving side placed packets that overtook a
/// loss; when only the client asks, both sides stay go-back-N.
#[test]
fn selective_repeat_is_agreed_over_the_exchange_and_places_out_of_order_packets() {
    let dir = Scratch::new("memif-sr");
    let base = ["-s", "65536", "-n", "300", "--loss", "0.02", "--seed", "5"];
    let selective = [&base[..], &["--recovery", "selective"]].concat();
    let (c, s) = run_sides(&["perf", "write-bw"], &dir.socket(), &selective, &selective);
    let text = |o: &Output| {
        (
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let ((cout, _), (sout, serr)) = (text(&c), text(&s));
    for out in [&cout, &sout] {
        assert!(out.contains(" Recovery        : selective repeat"), "{out}");
    }
    let header = "#bytes     #iterations    BW peak";
    assert_eq!(result_row(&cout, header)[..2], [65536.0, 300.0], "{cout}");
    let placed = serr
        .split_whitespace()
        .find_map(|w| w.strip_prefix("out_of_order_placed="))
        .and_then(|n| n.parse::<u64>().ok());
    assert!(placed.is_some_and(|n| n > 0), "{serr}");
    let dir = Scratch::new("memif-sr-one");
    let (c, s) = run_sides(&["perf", "write-bw"], &dir.socket(), &selective, &base);
    let ((cout, _), (sout, serr)) = (text(&c), text(&s));
    assert!(
        !cout.contains("Recovery") && !sout.contains("Recovery"),
        "{cout}"
    );
    assert!(serr.contains("out_of_order_placed=0 "), "{serr}");
}

/// rc_pingpong's `-c`: the server checks every byte of each 64 KiB message against the
/// pattern the client sent; a stale socket left at the path does not stop the server.
#[test]
fn pingpong_over_memif_checks_every_byte_past_a_stale_socket() {
    let dir = Scratch::new("memif-pp");
    drop(std::os::unix::net::UnixListener::bind(dir.socket()).expect("bind"));
    let (cout, sout) = run_pair(
        &["pingpong"],
        &dir.socket(),
        &["-s", "65536", "-n", "200", "-c"],
    );
    for out in [&cout, &sout] {
        let bytes = out
            .lines()
            .find(|l| l.contains(" bytes in "))
            .unwrap_or_else(|| panic!("no bytes line in {out}"));
        // rc_pingpong counts both directions: 2 x 200 x 64 KiB.
        assert!(bytes.starts_with("26214400 bytes in "), "{bytes}");
        assert!(out.contains("200 iters in "), "{out}");
    }
}

/// rc_verbs_peer.py's operations: the server's receives, the atomic target after FETCH_ADD 5
/// and CMP_SWAP 7, and the bytes the 8 KiB WRITE left at both ends of its target.
#[test]
fn verbs_peer_over_memif_leaves_the_written_bytes_and_atomics() {
    let dir = Scratch::new("memif-vp");
    let (cout, sout) = run_pair(&["perf", "verbs-peer"], &dir.socket(), &[]);
    for line in [
        "write_imm:8192: wc wr_id=3 opcode=RDMA_WRITE byte_len=8192",
        "fetch_add:5: wc wr_id=5 opcode=FETCH_ADD byte_len=8 original=100",
        "cmp_swap:7: wc wr_id=6 opcode=COMP_SWAP byte_len=8 original=105",
    ] {
        assert!(cout.lines().any(|l| l == line), "{line:?} not in\n{cout}");
    }
    for line in [
        "wc wr_id=103 opcode=RECV byte_len=8192 imm_data(host u32)=0x11223348 wire=0x48332211 status 0",
        "atomic target now 7",
        "write target[0:8]=4040404040404040 [8184:8192]=4141414141414141",
    ] {
        assert!(sout.lines().any(|l| l == line), "{line:?} not in\n{sout}");
    }
}

/// What a memif user can get wrong is one line each, before DPDK starts.
#[test]
fn memif_mistakes_are_one_clear_line() {
    let dir = Scratch::new("memif-err");
    let socket = dir.socket();
    let listener = std::os::unix::net::UnixListener::bind(&socket).expect("bind");
    let missing = format!("{}/no/m.sock", dir.0.display());
    let cases = [
        (
            format!("memif:{socket}"),
            vec![],
            format!(
                "roce: --port memif:{socket},server: a memif server already listens on {socket}"
            ),
        ),
        (
            format!("memif:{missing}"),
            vec![],
            format!(
                "roce: --port memif:{missing},server: the socket's directory {}/no does not exist",
                dir.0.display()
            ),
        ),
        (
            format!("memif:{missing},client"),
            vec!["127.0.0.1"],
            format!(
                "roce: --port memif:{missing},client: the socket's directory {}/no does not exist",
                dir.0.display()
            ),
        ),
    ];
    for (port, tail, want) in cases {
        let out = Command::new(ROCE)
            .args([
                "pingpong",
                "--ip",
                "198.18.0.1/15",
                "--timeout",
                "1",
                "--port",
                &port,
            ])
            .args(["-p", &free_port()])
            .args(tail)
            .output()
            .expect("run roce");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{port}: {err}");
        assert_eq!(err.trim_end(), want);
    }
    drop(listener);
    let out = Command::new(ROCE)
        .args(["pingpong", "--ip", "198.18.0.1/15", "--port"])
        .arg(format!("memif:{socket},zero-copy=yes"))
        .output()
        .expect("run roce");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(": a memif role is server or client (expected "),
        "{err}"
    );
}

/// `roce port bench` (bare frames, the ceiling a transport on these ports is held against):
/// the receiver counts exactly the frames and bytes the sender stamped and reports its count
/// back over the port; a receiver told to expect more says how many were lost and fails.
#[test]
fn port_bench_moves_bare_frames_over_memif_and_counts_every_one() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = Scratch::new("memif-raw");
    let port = format!("memif:{}", dir.socket());
    let bench = |extra: &[&str]| {
        let mut args = vec!["port", "bench", "--port", port.as_str(), "--timeout", "30"];
        args.extend_from_slice(extra);
        Reap::new(spawn(&args))
    };
    for (expect, ok) in [("20000", true), ("20001", false)] {
        let receiver = bench(&["-s", "1082", "-n", expect]);
        let sender = bench(&["--send", "-s", "1082", "-n", "20000"]);
        let (s, r) = (sender.wait(), receiver.wait());
        let (sout, rout, rerr) = (
            String::from_utf8_lossy(&s.stdout),
            String::from_utf8_lossy(&r.stdout),
            String::from_utf8_lossy(&r.stderr),
        );
        assert!(
            s.status.success(),
            "{:?} {sout}{}",
            s.status,
            String::from_utf8_lossy(&s.stderr)
        );
        assert!(
            sout.starts_with("sent 20000 frames, 21640000 bytes in "),
            "{sout}"
        );
        assert!(
            sout.ends_with("\nthe receiver counted 20000 frames\n"),
            "{sout}"
        );
        assert!(
            rout.starts_with("received 20000 frames, 21640000 bytes in "),
            "{rout}{rerr}"
        );
        assert_eq!(r.status.success(), ok, "{rout}{rerr}");
        if !ok {
            assert_eq!(
                rerr.trim_end(),
                "roce: received 20000 of 20001 frames: 1 lost (no frame for 1 s)"
            );
        }
    }
}

#[test]
fn port_bench_refuses_sizes_a_frame_cannot_have() {
    for (size, want) in [
        ("59", "roce: --size 59: a frame is 60 to 1514 bytes"),
        ("1515", "roce: --size 1515: a frame is 60 to 1514 bytes"),
    ] {
        let out = Command::new(ROCE)
            .args(["port", "bench", "--port", "null", "-s", size])
            .output()
            .expect("run roce");
        assert!(!out.status.success());
        assert_eq!(String::from_utf8_lossy(&out.stderr).trim_end(), want);
    }
}
