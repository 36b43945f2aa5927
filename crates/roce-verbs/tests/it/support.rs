//! The harness of the program tests: a network namespace with a bridge (`tools/netns.sh`), two
//! sides each running a program on `libroce_verbs.so` with its own port (a net_tap on the bridge,
//! or the two ends of a net_memif), address and progress core, and the C test programs built
//! from `tests/c`. TCP exchanges always meet at the bridge's kernel address.

use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

pub use roce_testkit::perftest_output::result_row;
use roce_testkit::skip;

/// The bridge's kernel address in the namespace: where TCP exchanges meet.
pub const SERVER_ADDR: &str = "198.18.0.254";
/// TCP port of the rdma-core and perftest exchanges.
pub const TCP_PORT: u16 = 18515;
/// perftest's bandwidth header.
pub const BW_HEADER: &str = "#bytes     #iterations    BW peak";
/// perftest's latency header.
pub const LAT_HEADER: &str = "#bytes #iterations    t_min";

/// `ib_write_bw` on our device, 200 messages of 64 KiB.
pub const WRITE_BW_64K: [&str; 10] = [
    "ib_write_bw",
    "-d",
    "roce0",
    "-x",
    "1",
    "-F",
    "-s",
    "65536",
    "-n",
    "200",
];

/// One namespace at a time: each test runs two busy-polling processes.
static SERIAL: Mutex<()> = Mutex::new(());
static BUILD: Mutex<()> = Mutex::new(());

const NETNS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tools/netns.sh");

/// Which end of the bridge a program runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// tap rtap0, 198.18.0.1, progress thread on CPU 0 (the server in pairs).
    A,
    /// tap rtap1, 198.18.0.2, progress thread on CPU 1 (the client in pairs).
    B,
}

impl Side {
    fn tap(self) -> &'static str {
        match self {
            Side::A => "rtap0",
            Side::B => "rtap1",
        }
    }
    fn ip(self) -> &'static str {
        match self {
            Side::A => "198.18.0.1",
            Side::B => "198.18.0.2",
        }
    }
    fn core(self) -> &'static str {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        match self {
            Side::B if cores > 1 => "1",
            _ => "0",
        }
    }
}

/// The library under test: built next to this test binary.
pub fn library() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let lib = exe
        .parent()
        .map(|d| d.join("libroce_verbs.so"))
        .expect("a directory");
    assert!(lib.exists(), "{} was not built", lib.display());
    lib
}

/// The `roce` CLI of the same build (`cargo test --workspace` builds it; alone, run
/// `cargo build --bin roce` first).
pub fn roce_cli() -> String {
    let lib = library();
    let roce = lib
        .parent()
        .and_then(|deps| deps.parent())
        .map(|dir| dir.join("roce"))
        .expect("the target directory");
    assert!(
        roce.exists(),
        "{} is missing: build the CLI first (cargo build --bin roce)",
        roce.display()
    );
    roce.to_string_lossy().into_owned()
}

/// Builds `tests/c/NAME.c` against the system's libibverbs; returns the program's path.
pub fn c_program(name: &str) -> String {
    let _build = BUILD.lock().unwrap_or_else(|e| e.into_inner());
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("tests/c/{name}.c"));
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let status = Command::new("cc")
        .args(["-O2", "-Wall", "-Werror", "-pthread"])
        .arg(&src)
        .args(["-libverbs", "-o"])
        .arg(&out)
        .status()
        .expect("run cc (install gcc and libibverbs-dev)");
    assert!(status.success(), "cc {} failed", src.display());
    out.to_string_lossy().into_owned()
}

/// How the two sides' ports meet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Link {
    /// Each side a net_tap, bridged in the namespace.
    Tap,
    /// Side A the server end of a net_memif, side B its client end (shared memory, no kernel).
    Memif,
}

/// A namespace and the programs in it; dropping it kills what is left and deletes the
/// namespace (taps and bridge go with it), also when the test fails.
pub struct Netns {
    name: String,
    link: Link,
    children: Vec<Option<Child>>,
    _serial: MutexGuard<'static, ()>,
}

impl Netns {
    /// A fresh namespace with its bridge; without root, a failure, or `None` (and a note) when
    /// `ROCE_TEST_SKIP` lets the test skip (`roce_testkit::skip`).
    pub fn up(tag: &str) -> Option<Netns> {
        Netns::up_with(tag, Link::Tap)
    }

    /// [`Netns::up`] with the sides' ports meeting over `link`.
    pub fn up_with(tag: &str, link: Link) -> Option<Netns> {
        if !skip::require("root", skip::is_root(), "namespaces and taps need root") {
            return None;
        }
        let serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let n = Netns {
            name: format!("rv-{tag}-{}", std::process::id()),
            link,
            children: Vec::new(),
            _serial: serial,
        };
        n.script(&["up"]);
        Some(n)
    }

    fn script(&self, args: &[&str]) {
        let out = self.try_script(args);
        assert!(
            out.status.success(),
            "netns.sh {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    fn try_script(&self, args: &[&str]) -> Output {
        Command::new(NETNS)
            .args(args)
            .env("NS", &self.name)
            .env("BR", "rvbr0")
            .output()
            .expect("run tools/netns.sh")
    }

    /// The memif socket of a [`Link::Memif`] pair.
    fn socket(&self) -> PathBuf {
        PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("{}.sock", self.name))
    }

    /// The `--port` / `ROCE_VERBS_PORT` of `side`.
    fn port(&self, side: Side) -> String {
        match self.link {
            Link::Tap => format!("tap:{}", side.tap()),
            Link::Memif => {
                let socket = self.socket();
                let role = match side {
                    Side::A => "server",
                    Side::B => "client",
                };
                format!("memif:{},{role}", socket.display())
            }
        }
    }

    fn exited(&mut self, i: usize) -> bool {
        self.children[i]
            .as_mut()
            .is_some_and(|c| c.try_wait().is_ok_and(|s| s.is_some()))
    }

    /// Starts `args` on `side` with the library preloaded and `env` added, and bridges its tap
    /// once it exists. Returns its index.
    pub fn spawn_env(&mut self, side: Side, args: &[&str], env: &[(&str, &str)]) -> usize {
        let lib = library();
        let port = self.port(side);
        let mut vars = vec![
            ("LD_PRELOAD", lib.to_str().expect("a UTF-8 path")),
            ("ROCE_VERBS_PORT", &port),
            ("ROCE_VERBS_IP", side.ip()),
            ("ROCE_VERBS_CORE", side.core()),
            ("ROCE_VERBS_TIMEOUT", "60"),
        ];
        vars.extend_from_slice(env);
        self.start(side, args, &vars)
    }

    /// Starts `args` with the library preloaded and configured by the file `config` alone
    /// (`ROCE_VERBS_CONFIG`, no `ROCE_VERBS_*` variables); its port is `side`'s tap.
    pub fn spawn_with_config(&mut self, side: Side, args: &[&str], config: &str) -> usize {
        let lib = library();
        let file = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("{}.conf", self.name));
        std::fs::write(&file, config).expect("write the configuration file");
        let vars = [
            ("LD_PRELOAD", lib.to_str().expect("a UTF-8 path")),
            ("ROCE_VERBS_CONFIG", file.to_str().expect("a UTF-8 path")),
        ];
        self.start(side, args, &vars)
    }

    /// Starts the `roce` CLI command `args` on `side` (its own port and address options added).
    pub fn spawn_roce(&mut self, side: Side, args: &[&str]) -> usize {
        let roce = roce_cli();
        let port = self.port(side);
        let ip = format!("{}/15", side.ip());
        let mut full = vec![roce.as_str()];
        full.extend_from_slice(args);
        full.extend(["--port", &port, "--ip", &ip, "--eal", "-l 0"]);
        self.start(side, &full, &[])
    }

    fn start(&mut self, side: Side, args: &[&str], env: &[(&str, &str)]) -> usize {
        let child = Command::new("ip")
            .args(["netns", "exec", &self.name, "timeout", "240"])
            .args(args)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn ip netns exec");
        self.children.push(Some(child));
        let i = self.children.len() - 1;
        if self.link == Link::Tap {
            self.attach(side.tap(), i);
        }
        i
    }

    /// [`Netns::spawn_env`] without extra variables.
    pub fn spawn(&mut self, side: Side, args: &[&str]) -> usize {
        self.spawn_env(side, args, &[])
    }

    /// Waits (up to a minute: EAL on a loaded machine) for the program's tap, then bridges it.
    /// A program that exits first (a failed start, or one that never opens the device) is left
    /// to `wait`.
    fn attach(&mut self, tap: &str, i: usize) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            let shown = Command::new("ip")
                .args(["netns", "exec", &self.name, "ip", "link", "show", tap])
                .output()
                .is_ok_and(|o| o.status.success());
            if shown {
                // A short-lived program (ibv_devinfo) may be gone with its tap already; a pair
                // whose tap could not be bridged fails on its own, with its output.
                let out = self.try_script(&["attach", tap]);
                if !out.status.success() {
                    eprintln!(
                        "netns.sh attach {tap}: {}",
                        String::from_utf8_lossy(&out.stderr).trim()
                    );
                }
                return;
            }
            if self.exited(i) {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("{tap} did not appear in {} within 60 s", self.name);
    }

    /// Waits (up to a minute) until something in the namespace listens on TCP `port`: the
    /// server side of an exchange, before its client may connect.
    pub fn wait_listen(&mut self, port: u16, i: usize) {
        let deadline = Instant::now() + Duration::from_secs(60);
        let filter = format!("sport = :{port}");
        while Instant::now() < deadline {
            let out = Command::new("ip")
                .args(["netns", "exec", &self.name, "ss", "-Hltn", &filter])
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
                .unwrap_or_default();
            if !out.trim().is_empty() || self.exited(i) {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!(
            "nothing listens on TCP port {port} in {} within 60 s",
            self.name
        );
    }

    /// Waits for program `i` to exit.
    pub fn wait(&mut self, i: usize) -> Output {
        let child = self.children[i].take().expect("a running program");
        child.wait_with_output().expect("wait for the program")
    }

    /// Waits for program `i`, asserts it succeeded and returns its stdout.
    pub fn wait_ok(&mut self, i: usize, what: &str) -> String {
        let out = self.wait(i);
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "{what} failed ({}):\nstdout:\n{stdout}\nstderr:\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        for c in self.children.iter_mut().flatten() {
            // SIGTERM: `timeout` passes it on to the program (SIGKILL would orphan it).
            let _ = Command::new("kill")
                .args(["-TERM", &c.id().to_string()])
                .status();
            let _ = c.wait();
        }
        if self.link == Link::Memif {
            let _ = std::fs::remove_file(self.socket());
        }
        let _ = Command::new(NETNS)
            .arg("down")
            .env("NS", &self.name)
            .status();
    }
}

/// Runs `server` and, once it listens on `tcp_port`, `client` (which gets the server's address
/// appended) on the library, their ports meeting over `link`; returns their stdouts after
/// asserting both succeeded. `None` without root.
pub fn pair_over(
    link: Link,
    ns_tag: &str,
    tcp_port: u16,
    server: &[&str],
    client: &[&str],
) -> Option<(String, String)> {
    let mut ns = Netns::up_with(ns_tag, link)?;
    let s = ns.spawn(Side::A, server);
    ns.wait_listen(tcp_port, s);
    let mut client = client.to_vec();
    client.push(SERVER_ADDR);
    let c = ns.spawn(Side::B, &client);
    let cout = ns.wait_ok(c, "client");
    let sout = ns.wait_ok(s, "server");
    Some((sout, cout))
}
