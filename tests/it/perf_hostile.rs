//! `roce perf` as a server against a hostile TCP client on loopback: every field of the
//! parameter line at u64::MAX, 2^40 and -1 (and a few more lies) is refused with one line,
//! the same to both sides, and the server exits without allocating for it; a client trickling
//! its line byte by byte meets one deadline for the whole message; and the server listens on
//! the port's network, never on every interface unless told to.

use crate::support::child::free_port;
use crate::support::cli_output;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, TcpStream};
use std::process::{Child, Command, Output, Stdio};

use cli_output::error_lines;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

/// `roce perf write-bw` as a server on a null port, TCP on 127.0.0.1:`port` unless `bind`
/// says otherwise.
fn server(port: u16, timeout: &str, extra: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_roce"))
        .args(["perf", "write-bw", "--port", "null", "-p"])
        .arg(port.to_string())
        .args(["--timeout", timeout])
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env("RUST_BACKTRACE", "0")
        .spawn()
        .expect("spawn roce")
}

fn loopback_server(port: u16, timeout: &str) -> Child {
    server(
        port,
        timeout,
        &["--ip", "198.18.0.1/15", "--bind", "127.0.0.1"],
    )
}

/// Connects to the server (its listener is bound before DPDK starts).
fn connect(port: u16) -> TcpStream {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match TcpStream::connect((Ipv4Addr::LOCALHOST, port)) {
            Ok(s) => return s,
            Err(e) if Instant::now() > deadline => panic!("no server on port {port}: {e}"),
            Err(_) => thread::sleep(Duration::from_millis(20)),
        }
    }
}

/// Waits (at most a minute) for `child` to exit on its own.
fn exited(mut child: Child) -> Output {
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().expect("wait for roce").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the server is still running after a minute");
        }
        thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("roce's output")
}

/// The parameter line of a plain write-bw run with `key` set to the JSON text `value`.
fn hello_with(key: &str, value: &str) -> String {
    let mut fields = [
        ("test", "\"write-bw\"".to_owned()),
        ("sizes", "[65536]".to_owned()),
        ("iters", "5000".to_owned()),
        ("duration", "0".to_owned()),
        ("qps", "1".to_owned()),
        ("mtu", "1024".to_owned()),
        ("bidir", "false".to_owned()),
    ];
    for f in fields.iter_mut().filter(|f| f.0 == key) {
        f.1 = value.to_owned();
    }
    let body: Vec<String> = fields.iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
    format!("{{{}}}\n", body.join(","))
}

/// Sends `line` as the client's parameters; returns the server's one-line answer (the refusal's
/// reason) and the server's `roce:` lines after it exited.
fn refused(line: &str) -> (String, Vec<String>) {
    let port = free_port();
    let child = loopback_server(port, "10");
    let mut s = connect(port);
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s.write_all(line.as_bytes()).unwrap();
    let mut reader = BufReader::new(s);
    let mut answer = String::new();
    reader.read_line(&mut answer).expect("the server answers");
    let mut rest = Vec::new();
    let _ = reader.read_to_end(&mut rest);
    assert!(
        rest.is_empty(),
        "one line, then the server closes: {rest:?}"
    );
    let out = exited(child);
    assert_eq!(out.status.code(), Some(1), "{line}");
    let v: serde_json::Value = serde_json::from_str(&answer)
        .unwrap_or_else(|e| panic!("{line}: answer {answer:?} is not JSON: {e}"));
    let reason = v["error"]
        .as_str()
        .unwrap_or_else(|| panic!("{line}: answer {answer:?} is not a refusal"))
        .to_owned();
    (reason, error_lines(&out))
}

#[test]
fn hostile_values_in_every_field_are_refused_with_one_line_to_both_sides() {
    let huge = ["18446744073709551615", "1099511627776", "-1"];
    let mut cases: Vec<(String, &str)> = Vec::new();
    for key in ["iters", "duration", "qps", "mtu"] {
        for v in huge {
            cases.push((hello_with(key, v), key));
        }
    }
    for v in huge {
        cases.push((hello_with("sizes", &format!("[{v}]")), "sizes"));
    }
    cases.push((hello_with("sizes", "[]"), "sizes"));
    cases.push((
        hello_with("sizes", &format!("[{}]", ["1"; 40].join(","))),
        "sizes",
    ));
    cases.push((hello_with("test", "\"nope\""), "test"));
    cases.push((hello_with("bidir", "-1"), "bidir"));
    // Each field within its bounds, the buffers (64 QPs x 8 MiB x 2) beyond --max-memory.
    let memory = hello_with("qps", "64").replace("[65536]", "[8388608]");
    cases.push((memory, "qps\" x \"sizes"));
    for (line, key) in &cases {
        let (reason, lines) = refused(line);
        assert!(
            reason.starts_with(&format!("the client's parameters: \"{key}\"")),
            "{line}: {reason}"
        );
        assert_eq!(lines, [format!("roce: {reason}")], "{line}");
    }
}

#[test]
fn a_client_asking_for_another_test_is_told_so() {
    let (reason, lines) = refused(&hello_with("test", "\"read-bw\""));
    assert_eq!(
        reason,
        "the client's parameters: \"test\" read-bw: this server runs write-bw: start both with \
         the same test"
    );
    assert_eq!(lines, [format!("roce: {reason}")]);
}

#[test]
fn a_trickling_client_meets_one_deadline_for_its_whole_line() {
    // One byte every 250 ms: no single read waits long, the line takes half a minute. The
    // server's deadline (2 s) covers the whole line, so it gives up with the line incomplete.
    let port = free_port();
    let child = loopback_server(port, "2");
    let line = hello_with("iters", "5000");
    let mut s = connect(port);
    let stop = Arc::new(AtomicBool::new(false));
    let stop_sending = stop.clone();
    let bytes = line.clone().into_bytes();
    let trickle = thread::spawn(move || {
        let mut sent = 0;
        for b in bytes {
            if stop_sending.load(Ordering::Relaxed) || s.write_all(&[b]).is_err() {
                break;
            }
            sent += 1;
            thread::sleep(Duration::from_millis(250));
        }
        sent
    });
    let out = exited(child);
    stop.store(true, Ordering::Relaxed);
    let sent = trickle.join().unwrap();
    assert!(sent < line.len(), "the server waited for all {sent} bytes");
    let lines = error_lines(&out);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].starts_with(
            "roce: peer: read parameters: timed out after 2s with the message incomplete ("
        ),
        "{lines:?}"
    );
}

/// Local addresses (as /proc/net/tcp writes them, e.g. `0100007F`) listening on TCP `port`.
fn listening_on(port: u16) -> Vec<String> {
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default();
    table
        .lines()
        .skip(1)
        .filter_map(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            let (addr, p) = cols.get(1)?.split_once(':')?;
            let listening = cols.get(3) == Some(&"0A");
            (listening && u16::from_str_radix(p, 16).ok()? == port).then(|| addr.to_owned())
        })
        .collect()
}

fn wait_listening(port: u16) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let found = listening_on(port);
        if !found.is_empty() || Instant::now() > deadline {
            return found;
        }
        thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn the_server_listens_on_the_port_network_not_every_interface() {
    // --ip in 127.0.0.0/8: this host's address on that network is 127.0.0.1.
    let port = free_port();
    let mut child = server(port, "10", &["--ip", "127.0.0.9/8"]);
    let found = wait_listening(port);
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(found, ["0100007F"], "127.0.0.1 only");
}

#[test]
fn listening_on_every_interface_takes_bind_and_says_so() {
    let port = free_port();
    let mut child = server(port, "10", &["--ip", "198.18.0.1/15", "--bind", "0.0.0.0"]);
    let found = wait_listening(port);
    let _ = child.kill();
    let out = child.wait_with_output().expect("roce's output");
    assert_eq!(found, ["00000000"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with(&format!(
            "warning: listening on every interface (0.0.0.0:{port}): anyone who reaches this \
             TCP port can start an exchange with this server\n"
        )),
        "{stderr}"
    );
}
