//! `roce perf` and `roce pingpong` between two processes on DPDK net_af_xdp ports
//! (`--port af_xdp:IF`), one on each end of a veth pair in network namespaces the test creates
//! (198.18.0.0/15). With DPDK's default XDP program every frame of the queue reaches roce and the
//! TCP exchange goes over loopback; with tools/xdp/roce_steer.c only RoCEv2 does, and the TCP
//! exchange goes over the same veth through the kernel. Needs root (CI runs as root) and, for
//! the steering program, clang with libbpf's headers (tools/setup.sh installs both); without
//! them the tests fail, unless `ROCE_TEST_SKIP` lists the need.

use roce_testkit::perftest_output::result_row;
use roce_testkit::skip;

use crate::support::child::Reap;

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Mutex;

/// One veth pair at a time: each run is two busy-polling processes.
static SERIAL: Mutex<()> = Mutex::new(());

const ROCE: &str = env!("CARGO_BIN_EXE_roce");
const BUILD_PROG: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tools/xdp/build.sh");

fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().expect("run ip");
    assert!(
        out.status.success(),
        "ip {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A veth pair `rxa`/`rxb` (one queue each, so every frame lands on the socket's queue 0),
/// its ends in namespaces `a` and `b` (the same one when they are equal), optionally with
/// kernel addresses; dropping it deletes the namespaces and the pair with them.
struct VethPair {
    a: String,
    b: String,
}

impl VethPair {
    fn up(a: &str, b: &str, kernel_addrs: bool) -> VethPair {
        let pair = VethPair {
            a: a.to_owned(),
            b: b.to_owned(),
        };
        for ns in [a, b] {
            let _ = Command::new("ip").args(["netns", "del", ns]).output();
        }
        ip(&["netns", "add", a]);
        if b != a {
            ip(&["netns", "add", b]);
        }
        ip(&[
            "-n",
            a,
            "link",
            "add",
            "rxa",
            "numtxqueues",
            "1",
            "numrxqueues",
            "1",
            "type",
            "veth",
            "peer",
            "name",
            "rxb",
            "numtxqueues",
            "1",
            "numrxqueues",
            "1",
            "netns",
            b,
        ]);
        for (ns, dev, addr) in [(a, "rxa", "198.18.0.1/15"), (b, "rxb", "198.18.0.2/15")] {
            ip(&["-n", ns, "link", "set", "lo", "up"]);
            if kernel_addrs {
                ip(&["-n", ns, "addr", "add", addr, "dev", dev]);
            }
            ip(&["-n", ns, "link", "set", dev, "up"]);
        }
        pair
    }

    /// The MAC of `dev` in `ns`.
    fn mac(ns: &str, dev: &str) -> String {
        let out = Command::new("ip")
            .args(["netns", "exec", ns, "cat"])
            .arg(format!("/sys/class/net/{dev}/address"))
            .output()
            .expect("read a MAC");
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }
}

impl Drop for VethPair {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.a]).output();
        if self.b != self.a {
            let _ = Command::new("ip").args(["netns", "del", &self.b]).output();
        }
    }
}

/// Starts `roce` with `args` in namespace `ns`.
fn spawn(ns: &str, args: &[&str]) -> Reap {
    let child = Command::new("ip")
        .args(["netns", "exec", ns, ROCE])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn roce");
    Reap::new(child)
}

/// Runs the server in `ns_a` with `server`'s arguments, then the client in `ns_b`; returns both
/// stdouts.
fn run_pair(ns_a: &str, server: &[&str], ns_b: &str, client: &[&str]) -> (String, String) {
    let s = spawn(ns_a, server);
    let c = spawn(ns_b, client);
    let (c, s) = (c.wait(), s.wait());
    let (cout, sout) = (
        String::from_utf8_lossy(&c.stdout).into_owned(),
        String::from_utf8_lossy(&s.stdout).into_owned(),
    );
    assert!(
        c.status.success() && s.status.success(),
        "client {:?}:\n{cout}\n{}\nserver {:?}:\n{sout}\n{}",
        c.status,
        String::from_utf8_lossy(&c.stderr),
        s.status,
        String::from_utf8_lossy(&s.stderr)
    );
    (cout, sout)
}

fn needs_root() -> bool {
    skip::require(
        "root",
        skip::is_root(),
        "namespaces, veth pairs and AF_XDP sockets need root",
    )
}

/// DPDK's default program: both ends in one namespace, every frame on the veth is roce's (ARP
/// too), the TCP exchange on loopback.
#[test]
fn write_bw_of_64_kib_over_af_xdp_on_a_veth_pair() {
    if !needs_root() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let ns = format!("roce-xdp-{}", std::process::id());
    let _pair = VethPair::up(&ns, &ns, false);
    let common = ["-s", "65536", "-n", "200", "--timeout", "20"];
    let mut server = vec![
        "perf",
        "write-bw",
        "--port",
        "af_xdp:rxa",
        "--ip",
        "198.18.0.1/15",
    ];
    server.extend(common);
    let mut client = vec![
        "perf",
        "write-bw",
        "--port",
        "af_xdp:rxb",
        "--ip",
        "198.18.0.2/15",
    ];
    client.extend(common);
    client.push("127.0.0.1");
    let (cout, sout) = run_pair(&ns, &server, &ns, &client);
    let header = "#bytes     #iterations    BW peak";
    let row = result_row(&cout, header);
    assert_eq!(row.len(), 5, "{cout}");
    assert_eq!((row[0], row[1]), (65536.0, 200.0), "{cout}");
    assert!(row[2..].iter().all(|&x| x > 0.0), "{row:?}");
    assert_eq!(result_row(&sout, header), row);
}

/// tools/xdp/roce_steer.c on both ends, each in its own namespace with the kernel's address on
/// its veth end: RoCEv2 reaches roce, which checks every byte of 200 64 KiB messages
/// (rc_pingpong's `-c`), while the TCP exchange, to the server's kernel address, goes through
/// the kernel on the same veth. Were every frame redirected, TCP would not connect; were none,
/// roce would see no RoCE.
#[test]
fn steering_program_gives_roce_only_rocev2_and_the_kernel_the_rest() {
    if !needs_root()
        || !skip::require(
            "clang",
            skip::tool("/usr/bin/clang") && skip::tool("/usr/include/bpf/bpf_helpers.h"),
            "building tools/xdp/roce_steer.c needs clang and libbpf's headers (libbpf-dev)",
        )
    {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let scratch = std::env::temp_dir().join(format!("roce-it-xdp-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).expect("scratch directory");
    let prog: PathBuf = scratch.join("roce_steer.o");
    let built = Command::new(BUILD_PROG)
        .arg(&prog)
        .output()
        .expect("run tools/xdp/build.sh");
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let (a, b) = (
        format!("roce-xdpa-{}", std::process::id()),
        format!("roce-xdpb-{}", std::process::id()),
    );
    let _pair = VethPair::up(&a, &b, true);
    let (mac_a, mac_b) = (VethPair::mac(&a, "rxa"), VethPair::mac(&b, "rxb"));
    let prog = prog.display().to_string();
    let (port_a, port_b) = (
        format!("af_xdp:rxa,prog={prog}"),
        format!("af_xdp:rxb,prog={prog}"),
    );
    let common = ["-s", "65536", "-n", "200", "-c", "--timeout", "20"];
    // The kernel keeps ARP, so each side is told the other's MAC.
    let mut server = vec!["pingpong", "--port", &port_a, "--ip", "198.18.0.1/15"];
    server.extend(["--peer-mac", &mac_b]);
    server.extend(common);
    let mut client = vec!["pingpong", "--port", &port_b, "--ip", "198.18.0.2/15"];
    client.extend(["--peer-mac", &mac_a]);
    client.extend(common);
    client.push("198.18.0.1");
    let (cout, sout) = run_pair(&a, &server, &b, &client);
    let _ = std::fs::remove_dir_all(&scratch);
    for out in [&cout, &sout] {
        let bytes = out
            .lines()
            .find(|l| l.contains(" bytes in "))
            .unwrap_or_else(|| panic!("no bytes line in {out}"));
        // rc_pingpong counts both directions: 2 x 200 x 64 KiB.
        assert!(bytes.starts_with("26214400 bytes in "), "{bytes}");
    }
}

/// net_af_xdp leaves the kernel interface's MTU alone, and the kernel would drop every larger
/// frame: roce refuses a RoCE MTU the interface cannot carry, naming the fix.
#[test]
fn af_xdp_refuses_a_roce_mtu_the_interface_cannot_carry() {
    if !needs_root() {
        return;
    }
    let ns = format!("roce-xdpm-{}", std::process::id());
    let _pair = VethPair::up(&ns, &ns, false);
    let out = Command::new("ip")
        .args(["netns", "exec", &ns, ROCE, "perf", "write-bw", "-m", "2048"])
        .args(["--port", "af_xdp:rxa", "--ip", "198.18.0.1/15"])
        .output()
        .expect("run roce");
    assert!(!out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim_end(),
        "roce: --port af_xdp:rxa: rxa's MTU is 1500, below the 2128 bytes a RoCE MTU of 2048 \
         needs (ip link set dev rxa mtu 2128)"
    );
}

/// Root without one of the capabilities AF_XDP needs (as an unprivileged user is): DPDK creates
/// the port and fails only at its start; the error names what is missing.
#[test]
fn af_xdp_without_its_capabilities_names_them() {
    let why = "dropping capabilities needs root and setpriv (util-linux)";
    if !skip::require("root", skip::is_root(), why)
        || !skip::require("setpriv", skip::tool("/usr/bin/setpriv"), why)
    {
        return;
    }
    let ns = format!("roce-xdpc-{}", std::process::id());
    let _pair = VethPair::up(&ns, &ns, false);
    for drop in ["-net_raw", "-net_admin", "-bpf,-sys_admin"] {
        let out = Command::new("ip")
            .args([
                "netns",
                "exec",
                &ns,
                "/usr/bin/setpriv",
                "--bounding-set",
                drop,
            ])
            .args(["--inh-caps", drop, ROCE, "perf", "write-bw", "-p", "0"])
            .args([
                "--port",
                "af_xdp:rxa",
                "--ip",
                "198.18.0.1/15",
                "--timeout",
                "2",
            ])
            .output()
            .expect("run roce");
        let err = String::from_utf8_lossy(&out.stderr);
        let line = err.lines().find(|l| l.starts_with("roce: "));
        assert!(
            line.is_some_and(|l| l.starts_with(
                "roce: bringing up DPDK port --port af_xdp:rxa: an af_xdp port needs CAP_NET_RAW \
                 for its socket and CAP_NET_ADMIN with CAP_BPF (or CAP_SYS_ADMIN) for its XDP \
                 program, which this process lacks (run as root) ("
            )),
            "{drop}: {err}"
        );
        assert_eq!(out.status.code(), Some(1), "{drop}: {err}");
    }
}
