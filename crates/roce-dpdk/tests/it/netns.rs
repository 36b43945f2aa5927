//! A network namespace the test owns (`ip netns add roce-test-...`), deleted on drop even when
//! the test fails, and a capture of frames inside it with tcpdump.

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{bail, ensure, Context};

/// Runs a command, failing with its stderr.
pub fn run(args: &[&str]) -> anyhow::Result<String> {
    let out = Command::new(args[0])
        .args(&args[1..])
        .output()
        .with_context(|| format!("spawning {args:?}"))?;
    ensure!(
        out.status.success(),
        "{args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr).trim()
    );
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A namespace, deleted on drop.
pub struct NetNs {
    pub name: String,
    /// Interfaces in the root namespace to delete on drop.
    pub root_links: Vec<String>,
}

impl NetNs {
    pub fn new(tag: &str) -> anyhow::Result<NetNs> {
        let name = format!("roce-test-{tag}-{}", std::process::id());
        run(&["ip", "netns", "add", &name])?;
        let ns = NetNs {
            name,
            root_links: Vec::new(),
        };
        ns.exec(&["ip", "link", "set", "lo", "up"])?;
        Ok(ns)
    }

    /// Runs a command inside the namespace.
    pub fn exec(&self, args: &[&str]) -> anyhow::Result<String> {
        let mut full = vec!["ip", "netns", "exec", &self.name];
        full.extend_from_slice(args);
        run(&full)
    }

    /// Starts tcpdump on `ifname` for `count` frames matching `filter`; returns once it listens.
    pub fn capture(&self, ifname: &str, count: usize, filter: &str) -> anyhow::Result<Capture> {
        let count = count.to_string();
        let mut child = Command::new("ip")
            .args([
                "netns", "exec", &self.name, "timeout", "20", "tcpdump", "-n", "-U",
            ])
            .args(["-i", ifname, "-c", &count, "-w", "-", filter])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .context("spawning tcpdump (apt-get install tcpdump)")?;
        let stderr = child.stderr.take().context("tcpdump stderr")?;
        let mut lines = BufReader::new(stderr).lines();
        loop {
            match lines.next() {
                Some(Ok(l)) if l.contains("listening on") => break,
                Some(Ok(_)) => continue,
                _ => {
                    let _ = child.kill();
                    let _ = child.wait();
                    bail!("tcpdump did not start on {ifname}");
                }
            }
        }
        // Keep draining stderr so tcpdump never blocks on it.
        std::thread::spawn(move || for _ in lines {});
        // The kernel attaches the filter before printing "listening on"; give the socket a
        // moment to be fully bound before frames arrive.
        std::thread::sleep(Duration::from_millis(100));
        Ok(Capture { child })
    }
}

impl Drop for NetNs {
    fn drop(&mut self) {
        for link in &self.root_links {
            let _ = Command::new("ip").args(["link", "del", link]).output();
        }
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .output();
    }
}

/// A running tcpdump.
pub struct Capture {
    child: std::process::Child,
}

impl Capture {
    /// Waits for tcpdump to exit (it stops after `count` frames, or after 20 s) and returns the
    /// frames it saw.
    pub fn frames(mut self) -> anyhow::Result<Vec<Vec<u8>>> {
        let mut pcap = Vec::new();
        self.child
            .stdout
            .take()
            .context("tcpdump stdout")?
            .read_to_end(&mut pcap)?;
        let _ = self.child.wait();
        let mut reader = pcap_file::pcap::PcapReader::new(std::io::Cursor::new(pcap))
            .context("tcpdump wrote no pcap")?;
        let mut frames = Vec::new();
        while let Some(p) = reader.next_packet() {
            frames.push(p?.data.into_owned());
        }
        Ok(frames)
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
