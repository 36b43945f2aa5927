//! The metrics endpoint alone (a stub exposition, no DPDK) against hostile clients: huge
//! bodies, garbage, oversize heads, header floods, pipelining, clients that never read, slow
//! connections by the thousand and a process out of file descriptors. After each it still
//! answers a scrape, and its threads and descriptors stay within the module's stated bounds.
//! The floods run the server in a process of its own (this binary, re-run in a helper role) so
//! /proc counts its threads and descriptors alone, and the slow clients in other processes so
//! no process needs more than 1024 descriptors.

use crate::support::http_attack;

use std::net::SocketAddr;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use http_attack::{
    exchange, proc_fds, proc_status, proc_thread_names, read_to_close, scrape, slow_clients, Helper,
};
use roce::metrics::server::{Limits, MetricsServer, MAX_CONNECTIONS};

const STUB: &[u8] = b"# TYPE roce_stub counter\nroce_stub_total 1\n# EOF\n";
const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
/// The helper processes' role.
const ROLE: &str = "ROCE_METRICS_SERVER_TEST_ROLE";

/// A server of `body` on a free loopback port, counting its renderings.
fn serve(limits: Limits, body: Vec<u8>) -> (MetricsServer, Arc<AtomicUsize>) {
    let body: Arc<[u8]> = body.into();
    let renders = Arc::new(AtomicUsize::new(0));
    let r = renders.clone();
    let server = MetricsServer::serve(
        "127.0.0.1:0".parse().expect("addr"),
        CONTENT_TYPE,
        limits,
        Box::new(move || {
            r.fetch_add(1, Ordering::Relaxed);
            body.clone()
        }),
    )
    .expect("serve");
    (server, renders)
}

fn assert_scrape_ok(addr: SocketAddr, body: &[u8]) -> Duration {
    let (r, took) = scrape(addr);
    assert_eq!(r.status, 200, "{}", r.head);
    assert_eq!(r.header("content-type"), Some(CONTENT_TYPE));
    assert_eq!(r.header("connection"), Some("close"));
    assert_eq!(r.body, body);
    took
}

#[test]
fn a_post_with_a_huge_content_length_is_refused_and_the_server_answers_on() {
    let (server, renders) = serve(Limits::default(), STUB.to_vec());
    let addr = server.addr();
    let mut post =
        b"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999\r\n\r\n".to_vec();
    post.extend(std::iter::repeat_n(b'x', 200_000));
    let r = exchange(addr, &post);
    assert_eq!(r.status, 405, "{}", r.head);
    assert_eq!(r.header("allow"), Some("GET, HEAD"));
    assert_eq!(r.header("connection"), Some("close"));
    let r = exchange(
        addr,
        b"GET /metrics HTTP/1.1\r\nContent-Length: 99999999999999\r\n\r\nxxxx",
    );
    assert_eq!(r.status, 413, "{}", r.head);
    let r = exchange(
        addr,
        b"GET /metrics HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nxxxxx\r\n",
    );
    assert_eq!(r.status, 413, "{}", r.head);
    assert_eq!(
        renders.load(Ordering::Relaxed),
        0,
        "refused requests render nothing"
    );
    assert_scrape_ok(addr, STUB);
    assert_eq!(renders.load(Ordering::Relaxed), 1);
}

#[test]
fn garbage_oversize_heads_header_floods_and_pipelining_each_get_one_bounded_answer() {
    let (server, _) = serve(Limits::default(), STUB.to_vec());
    let addr = server.addr();
    let garbage: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    assert_eq!(exchange(addr, &garbage).status, 400);
    // A TLS client hello (an https scrape).
    assert_eq!(
        exchange(addr, b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03").status,
        400
    );
    assert_eq!(exchange(addr, b"GET /metrics HTTP/9.9\r\n\r\n").status, 400);
    // A head of 64 KiB: 431 after 8 KiB, whatever follows.
    let mut long = b"GET /metrics HTTP/1.1\r\nX-Long: ".to_vec();
    long.resize(64 * 1024, b'a');
    assert_eq!(exchange(addr, &long).status, 431);
    let flood: String = (0..1000).map(|i| format!("X-{i}: {i}\r\n")).collect();
    let r = exchange(
        addr,
        format!("GET /metrics HTTP/1.1\r\n{flood}\r\n").as_bytes(),
    );
    assert_eq!(r.status, 431);
    // Pipelined requests: the first is answered, the connection closes.
    let r = exchange(
        addr,
        b"GET /metrics HTTP/1.1\r\n\r\nGET /metrics HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\n\r\n",
    );
    assert_eq!(r.status, 200);
    assert_eq!(r.body, STUB, "one answer only");
    let r = exchange(addr, b"GET /other HTTP/1.1\r\n\r\n");
    assert_eq!(
        (r.status, r.body.as_slice()),
        (404, &b"roce serves /metrics only\n"[..])
    );
    let r = exchange(addr, b"DELETE /metrics HTTP/1.1\r\n\r\n");
    assert_eq!(r.status, 405);
    let r = exchange(addr, b"HEAD /metrics HTTP/1.0\r\n\r\n");
    assert_eq!(r.status, 200);
    assert_eq!(
        r.header("content-length"),
        Some(STUB.len().to_string().as_str())
    );
    assert!(r.body.is_empty(), "HEAD has no body");
    assert_scrape_ok(addr, STUB);
}

#[test]
fn a_client_that_never_reads_is_closed_at_the_write_deadline() {
    // Far more than the socket buffers of a client that never reads hold (net.ipv4.tcp_wmem's
    // 4 MiB at most, and a receive window that does not grow), so the write blocks.
    let body = vec![b'#'; 32 << 20];
    let limits = Limits {
        write_deadline: Duration::from_secs(2),
        ..Limits::default()
    };
    let (server, _) = serve(limits, body.clone());
    let addr = server.addr();
    let mut deaf = std::net::TcpStream::connect(addr).expect("connect");
    std::io::Write::write_all(&mut deaf, b"GET /metrics HTTP/1.1\r\n\r\n").expect("request");
    std::thread::sleep(Duration::from_millis(100));
    // Others are served meanwhile (each answer itself within the deadline on loopback).
    let r = exchange(addr, b"GET /metrics HTTP/1.1\r\n\r\n");
    assert_eq!((r.status, r.body.len()), (200, body.len()));
    std::thread::sleep(Duration::from_millis(2500));
    deaf.set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    let got = read_to_close(&mut deaf);
    assert!(
        got.len() < body.len(),
        "the deaf client got all {} bytes: it was not cut off",
        got.len()
    );
}

#[test]
fn slow_clients_are_closed_at_the_head_deadline_and_the_oldest_first_when_full() {
    let limits = Limits {
        max_connections: 8,
        head_deadline: Duration::from_secs(2),
        ..Limits::default()
    };
    let (server, _) = serve(limits, STUB.to_vec());
    let addr = server.addr();
    let slow = slow_clients(addr, 8);
    assert_eq!(slow.len(), 8);
    std::thread::sleep(Duration::from_millis(100));
    // Full: a scrape that sends its request at once is served, the oldest slow one closed.
    assert_scrape_ok(addr, STUB);
    let closed = |s: &std::net::TcpStream, within: Duration| {
        s.set_read_timeout(Some(within)).expect("timeout");
        let mut b = [0u8; 16];
        match std::io::Read::read(&mut &*s, &mut b) {
            Ok(0) => true,
            Ok(_) => panic!("a slow client got an answer"),
            Err(e) => !matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ),
        }
    };
    assert!(
        closed(&slow[0], Duration::from_millis(100)),
        "the oldest stays open"
    );
    assert!(
        !closed(&slow[7], Duration::from_millis(100)),
        "the newest was closed"
    );
    // At the head deadline, all of them.
    let t = Instant::now();
    for s in &slow[1..] {
        assert!(
            closed(s, Duration::from_secs(10)),
            "open after {:?}",
            t.elapsed()
        );
    }
}

#[test]
fn accepts_are_paced_by_the_token_bucket() {
    let limits = Limits {
        accept_rate: 40,
        accept_burst: 5,
        ..Limits::default()
    };
    let (server, _) = serve(limits, STUB.to_vec());
    let addr = server.addr();
    let t = Instant::now();
    for _ in 0..25 {
        assert_scrape_ok(addr, STUB);
    }
    // 5 at once, then 20 at 40 a second: no sooner than 0.5 s.
    let took = t.elapsed();
    assert!(took >= Duration::from_millis(480), "25 accepts in {took:?}");
}

#[test]
fn a_rendering_that_panics_is_answered_503_not_left_hanging() {
    let server = MetricsServer::serve(
        "127.0.0.1:0".parse().expect("addr"),
        CONTENT_TYPE,
        Limits::default(),
        Box::new(|| panic!("the exposition cannot be rendered")),
    )
    .expect("serve");
    let addr = server.addr();
    let (r, _) = scrape(addr);
    assert_eq!(
        (r.status, r.body.as_slice()),
        (503, &b"metrics unavailable\n"[..])
    );
    assert_eq!(scrape(addr).0.status, 503);
    assert_eq!(exchange(addr, b"GET / HTTP/1.1\r\n\r\n").status, 404);
}

/// In a helper process: a default server of the stub, or `n` slow clients of `addr`.
fn helper_role() -> bool {
    if http_attack::slow_helper_role(ROLE) {
        return true;
    }
    if std::env::var(ROLE).as_deref() != Ok("server") {
        return false;
    }
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .try_init();
    let (server, _) = serve(Limits::default(), STUB.to_vec());
    http_attack::helper_ready_then_wait(&server.addr().to_string());
    true
}

/// Floods a server process with `slow` slow clients (from helpers of at most 500 each), then
/// scrapes it: the scrape is answered and the server's threads stay two, its descriptors within
/// its bound. Returns how long the scrape under attack took.
fn flood_then_scrape(test: &str, server: &Helper, slow: usize) -> Duration {
    let pid = server.pid();
    let addr: SocketAddr = server.ready.parse().expect("server addr");
    assert_scrape_ok(addr, STUB);
    let threads = proc_status(pid, "Threads");
    let fds = proc_fds(pid);
    let ours = |names: Vec<String>| {
        names
            .into_iter()
            .filter(|n| n.starts_with("roce-metrics"))
            .count()
    };
    assert_eq!(
        ours(proc_thread_names(pid)),
        2,
        "{:?}",
        proc_thread_names(pid)
    );
    let (helpers, connected) = http_attack::slow_helpers(test, ROLE, addr, slow);
    assert!(
        connected * 10 >= slow * 9,
        "only {connected} of {slow} slow clients connected"
    );
    let fds_attacked = proc_fds(pid);
    let took = assert_scrape_ok(addr, STUB);
    assert_eq!(proc_status(pid, "Threads"), threads, "threads grew");
    assert_eq!(ours(proc_thread_names(pid)), 2);
    assert!(
        fds_attacked.max(proc_fds(pid)) <= fds + MAX_CONNECTIONS,
        "{fds_attacked} descriptors under attack, {fds} before"
    );
    drop(helpers);
    assert_scrape_ok(addr, STUB);
    took
}

#[test]
fn two_thousand_slow_clients_neither_lock_out_a_scrape_nor_grow_threads_or_descriptors() {
    const TEST: &str =
        "two_thousand_slow_clients_neither_lock_out_a_scrape_nor_grow_threads_or_descriptors";
    if helper_role() {
        return;
    }
    let test = http_attack::listed(module_path!(), TEST);
    let server = Helper::start(Helper::this_test(&test, ROLE, "server"));
    let took = flood_then_scrape(&test, &server, 2000);
    println!("scrape under 2000 slow clients answered in {took:?}");
}

#[test]
fn out_of_descriptors_the_server_closes_its_oldest_and_answers_on() {
    const TEST: &str = "out_of_descriptors_the_server_closes_its_oldest_and_answers_on";
    if helper_role() {
        return;
    }
    let test = http_attack::listed(module_path!(), TEST);
    // The server process may open 64 descriptors: far fewer than MAX_CONNECTIONS.
    let mut sh = Command::new("sh");
    sh.args(["-c", "ulimit -n 64 && exec \"$0\" \"$@\""])
        .arg(std::env::current_exe().expect("test binary"))
        .args(["--exact", &test, "--nocapture", "--test-threads=1"])
        .env(ROLE, "server")
        .stderr(std::process::Stdio::piped());
    let mut server = Helper::start(sh);
    flood_then_scrape(&test, &server, 500);
    let mut err = server.child.stderr.take().expect("stderr");
    drop(server);
    let mut text = String::new();
    std::io::Read::read_to_string(&mut err, &mut text).expect("server stderr");
    assert!(
        text.contains("accept failed"),
        "the server never ran out of descriptors:\n{text}"
    );
}
