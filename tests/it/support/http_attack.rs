//! Hostile and legitimate HTTP clients of a metrics endpoint, and what /proc says about the
//! process serving it (threads, descriptors, peak memory). Shared by tests/it/metrics_server.rs
//! (the server alone) and tests/it/metrics_cli.rs (a running `roce demo`).

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a client waits for an answer before the test fails (a hang guard).
pub const ANSWER_WITHIN: Duration = Duration::from_secs(20);

/// A request that starts well and never ends: a slow client's partial head.
pub const PARTIAL_HEAD: &[u8] = b"GET /metrics HTTP/1.1\r\nHost: slow\r\nX-Slow: ";

/// A response: its status code, head and body (read until the server closed).
#[derive(Debug)]
pub struct Response {
    /// The status code (0 when there was no status line).
    pub status: u16,
    /// The head, through its blank line.
    pub head: String,
    /// The bytes after the head.
    pub body: Vec<u8>,
}

impl Response {
    /// The value of header `name` (case-insensitive), if there is one.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }
}

/// Splits what a server sent into status, head and body.
pub fn response(bytes: &[u8]) -> Response {
    let end = bytes
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map_or(bytes.len(), |p| p + 4);
    let head = String::from_utf8_lossy(&bytes[..end]).into_owned();
    let status = head
        .strip_prefix("HTTP/1.1 ")
        .and_then(|s| s.get(..3))
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    Response {
        status,
        head,
        body: bytes[end..].to_vec(),
    }
}

/// Sends `request` and reads the answer until the server closes (a reset after the answer
/// counts as the end).
pub fn exchange(addr: SocketAddr, request: &[u8]) -> Response {
    let mut s = TcpStream::connect(addr).expect("connect to the metrics endpoint");
    s.set_read_timeout(Some(ANSWER_WITHIN)).expect("timeout");
    // A server that answers early and closes may make the rest of a long request fail.
    let _ = s.write_all(request);
    response(&read_to_close(&mut s))
}

/// Everything `s` yields until EOF or a reset; panics on a timeout.
pub fn read_to_close(s: &mut TcpStream) -> Vec<u8> {
    let mut got = Vec::new();
    let mut buf = [0u8; 65536];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return got,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                panic!(
                    "no end of the answer within {ANSWER_WITHIN:?}: {} bytes",
                    got.len()
                )
            }
            Err(_) => return got,
        }
    }
}

/// `GET /metrics`, as Prometheus sends it: the answer and how long it took.
pub fn scrape(addr: SocketAddr) -> (Response, Duration) {
    let t = Instant::now();
    let r = exchange(
        addr,
        format!(
            "GET /metrics HTTP/1.1\r\nHost: {addr}\r\nAccept: application/openmetrics-text\r\n\r\n"
        )
        .as_bytes(),
    );
    (r, t.elapsed())
}

/// Opens `n` connections to `addr` that each send a partial head and then say nothing (those
/// the server has already closed are kept too). Returns the ones whose connect succeeded.
pub fn slow_clients(addr: SocketAddr, n: usize) -> Vec<TcpStream> {
    (0..n)
        .filter_map(|_| {
            let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(10)).ok()?;
            let _ = s.write_all(PARTIAL_HEAD);
            Some(s)
        })
        .collect()
}

/// A process of this test binary running test `test` in role `role` (the env var `var`),
/// reporting `ready ...` on stdout, until its stdin closes (dropping the value closes it).
pub struct Helper {
    /// The process.
    pub child: Child,
    stdin: Option<ChildStdin>,
    stdout: Option<std::io::BufReader<std::process::ChildStdout>>,
    /// What it printed after `ready `.
    pub ready: String,
}

impl Helper {
    /// Starts `command` (this test binary, or a shell in front of it) and waits for `ready`.
    pub fn start(mut command: Command) -> Helper {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start a helper process");
        let stdin = child.stdin.take();
        let mut out = std::io::BufReader::new(child.stdout.take().expect("stdout"));
        let mut line = String::new();
        let ready = loop {
            line.clear();
            let n = std::io::BufRead::read_line(&mut out, &mut line).expect("helper stdout");
            assert!(n > 0, "the helper process ended before it was ready");
            // The test harness may have printed the test's name on the same line.
            if let Some(at) = line.rfind("ready ") {
                break line[at + "ready ".len()..].trim().to_owned();
            }
        };
        Helper {
            child,
            stdin,
            stdout: Some(out),
            ready,
        }
    }

    /// This test binary running `test` (its name as the binary lists it: [`listed`]) alone, as
    /// `role` (set in env var `var`).
    pub fn this_test(test: &str, var: &str, role: &str) -> Command {
        let mut c = Command::new(std::env::current_exe().expect("test binary"));
        c.args(["--exact", test, "--nocapture", "--test-threads=1"])
            .env(var, role);
        c
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Helper {
    fn drop(&mut self) {
        drop(self.stdin.take());
        // What it prints until it ends (the test harness's lines) goes nowhere.
        if let Some(mut out) = self.stdout.take() {
            std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// In a helper process: says `ready {what}` and waits until the parent closes stdin.
pub fn helper_ready_then_wait(what: &str) {
    println!("ready {what}");
    let _ = std::io::stdout().flush();
    let mut sink = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut sink);
}

/// A field of /proc/PID/status (`Threads`, `VmHWM`...), as its first number.
pub fn proc_status(pid: u32, field: &str) -> u64 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc/PID/status");
    text.lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no {field} in /proc/{pid}/status"))
}

/// How many file descriptors process `pid` has open.
pub fn proc_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .expect("/proc/PID/fd")
        .count()
}

/// The names of process `pid`'s threads.
pub fn proc_thread_names(pid: u32) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .expect("/proc/PID/task")
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .map(|n| n.trim().to_owned())
        .collect();
    names.sort();
    names
}

/// Test `test` of the module at `module_path` (its `module_path!()`) as this binary lists it,
/// which `--exact` matches: the module path without the crate's name, then the test's name.
pub fn listed(module_path: &str, test: &str) -> String {
    match module_path.split_once("::") {
        Some((_, path)) => format!("{path}::{test}"),
        None => test.to_owned(),
    }
}

/// In a helper process started with role `slow ADDR N` in env var `var`: opens `N` slow
/// clients of `ADDR`, says `ready CONNECTED` and holds them until stdin closes. False when this
/// process has no such role.
pub fn slow_helper_role(var: &str) -> bool {
    let Ok(role) = std::env::var(var) else {
        return false;
    };
    let words: Vec<&str> = role.split_whitespace().collect();
    let ["slow", addr, n] = words.as_slice() else {
        return false;
    };
    let addr: SocketAddr = addr.parse().expect("addr");
    let held = slow_clients(addr, n.parse().expect("n"));
    helper_ready_then_wait(&held.len().to_string());
    true
}

/// Starts helpers of test `test` (as [`listed`]) holding `n` slow clients of `addr` in all (at most
/// 500 each, so none needs more than 1024 descriptors); returns them and how many connected.
pub fn slow_helpers(test: &str, var: &str, addr: SocketAddr, n: usize) -> (Vec<Helper>, usize) {
    let helpers: Vec<Helper> = (0..n.div_ceil(500))
        .map(|i| {
            let k = 500.min(n - i * 500);
            Helper::start(Helper::this_test(test, var, &format!("slow {addr} {k}")))
        })
        .collect();
    let connected = helpers
        .iter()
        .map(|h| h.ready.parse::<usize>().expect("count"))
        .sum();
    (helpers, connected)
}
