//! `roce perf` on one lcore (`--cores 1`, the default): one [`Session`] polls the port, its QPs
//! and the TCP exchange in turn. A [`Run`] is started (TCP, the port, the parameters both
//! sides agree on), connected (QPs, keys, ARP), readied (receives, the barrier), then runs one
//! size after the other, each printing perftest's result line for our side.
//!
//! Not here: several lcores ([`super::lcores`]), the traffic loops ([`super::traffic`]), the
//! messages of perftest tools ([`super::perftest`]).

use std::io::Write;

use anyhow::{anyhow, bail, Context};

use roce::oob::perf::{Dest, Hello, Test};
use roce_proto::cc::CcConfig;
use roce_proto::psn::Psn;
use roce_proto::resolving::PeerQp;
use roce_proto::verbs::Mtu;

use super::exchange::{agree, decode_checked, json_line, recv_checked, swap};
use super::perftest;
use super::report::print_banner;
use super::traffic::{client_run, next_size, post_recvs, Server};
use super::{combined, End, PeerFormat, PerfArgs, Qp};
use crate::cli::session::{self, Oob, Req, Session};

/// A test under way on one lcore: the exchange, the session, what both sides agreed and our
/// QPs.
pub(super) struct Run {
    // Field order is drop order: the exchange thread's end before the port.
    oob: Oob,
    s: Session,
    test: Test,
    hello: Hello,
    /// The peer is a perftest tool (`--peer-format perftest`): its messages, its order.
    perftest: bool,
    is_client: bool,
    gbits: bool,
    /// Send queue depth.
    depth: u32,
    /// Our QPs, and what the peer needs to reach each.
    qps: Vec<Qp>,
    mine: Vec<Dest>,
}

impl Run {
    /// The TCP side, the port at `mtu`, then the parameters: the client's rule, within the
    /// bounds of each side (a perftest peer: the smaller MTU).
    pub(super) fn start(
        test: Test,
        args: &PerfArgs,
        hello: Hello,
        mtu: Mtu,
        max_memory: u64,
    ) -> anyhow::Result<Run> {
        let perftest = args.peer_format == PeerFormat::Perftest;
        let is_client = args.server.is_some();
        let (mut s, oob) = session::start(args.server.as_deref(), args.tcp_port, &args.port, mtu)?;
        let hello = if perftest {
            let mtu = perftest::preamble(&mut s, &oob, hello.mtu)?;
            Hello { mtu, ..hello }
        } else {
            agree(&mut s, &oob, is_client, hello, max_memory)?
        };
        Ok(Run {
            oob,
            s,
            test,
            hello,
            perftest,
            is_client,
            gbits: args.report_gbits,
            depth: args.tx_depth.clamp(1, 1024),
            qps: Vec::new(),
            mine: Vec::new(),
        })
    }

    /// QPs and buffers for the agreed parameters, keys swapped, each QP connected to its peer
    /// (with `cc` installed) once ARP has resolved it.
    pub(super) fn connect(&mut self, args: &PerfArgs, cc: Option<&CcConfig>) -> anyhow::Result<()> {
        let hello = &self.hello;
        let options = args.rc_options(hello)?;
        // Checked against --max-memory: it fits.
        let mr_len = usize::try_from(hello.buffer_len()).context("buffer size")?;
        let mut psns = args.port.psns();
        for _ in 0..hello.qps {
            let q = Qp::create(
                self.s.host.endpoint_mut(),
                self.depth,
                mr_len,
                psns.next_psn(),
            )
            .context("creating a QP")?;
            self.qps.push(q);
        }
        let ip = args.port.ip()?.address();
        self.mine = self.qps.iter().map(|q| q.dest(ip)).collect();
        let theirs = self.keys()?;
        let peer_mac = args.port.peer_mac()?;
        let mut plan = Vec::new();
        for (q, d) in self.qps.iter_mut().zip(&theirs) {
            q.peer = *d;
            let peer = PeerQp {
                ip: session::gid_ip(d.gid),
                mac: peer_mac,
                qpn: d.qpn,
                psn: Psn::new(d.psn),
            };
            plan.push((q.qpn, peer, q.psn));
            if let Some(c) = cc {
                self.s
                    .host
                    .endpoint_mut()
                    .set_congestion_control(q.qpn, c.build(), 64 * 1024)
                    .context("installing --cc")?;
            }
        }
        self.s.connect_all(&plan, &options)
    }

    /// Our keys for the peer's, in the peer's format.
    fn keys(&mut self) -> anyhow::Result<Vec<Dest>> {
        let (s, oob) = (&mut self.s, &self.oob);
        if self.perftest {
            let mut theirs = Vec::new();
            for d in &self.mine {
                theirs.push(perftest::keys(s, oob, d)?);
            }
            return Ok(theirs);
        }
        if !self.is_client && self.hello.duration > 0 {
            // The client's results come after its whole run.
            let run = std::time::Duration::from_secs(self.hello.duration);
            s.ask(oob, Req::IoTimeout(s.timeout.saturating_add(run)))?;
        }
        swap(s, oob, self.is_client, &self.mine, "keys")
    }

    /// perftest's banner for this run.
    pub(super) fn banner(
        &self,
        out: &mut dyn Write,
        ip: std::net::Ipv4Addr,
    ) -> std::io::Result<()> {
        print_banner(
            out,
            self.test,
            &self.hello,
            self.depth,
            &self.qps,
            ip,
            self.gbits,
        )
    }

    /// Receives posted where the test needs them, then the barrier before traffic.
    pub(super) fn ready(&mut self) -> anyhow::Result<()> {
        if self.test.uses_recv() {
            let max_size = self.hello.max_size();
            for q in self.qps.iter_mut() {
                post_recvs(&mut self.s, q, max_size, self.depth)?;
            }
        }
        let first = *self.first()?;
        if self.perftest {
            // The barriers after ctx_connect and before traffic.
            for _ in 1..perftest::Flow::of(self.test).pre {
                perftest::keys(&mut self.s, &self.oob, &first)?;
            }
        } else {
            let _: Vec<bool> = swap(&mut self.s, &self.oob, self.is_client, &[true], "ready")?;
        }
        Ok(())
    }

    /// The keys of our first QP (perftest's barriers repeat them).
    fn first(&self) -> anyhow::Result<&Dest> {
        self.mine.first().ok_or_else(|| anyhow!("internal: no QP"))
    }

    /// Every agreed size in turn, then perftest's closing line and our counters (stderr).
    pub(super) fn sizes(&mut self, out: &mut dyn Write) -> anyhow::Result<()> {
        for size in self.hello.sizes.clone() {
            // Nothing is cleared: a peer may already have written this size's first mark
            // (clearing the region here once wiped ib_write_lat's first write and both sides
            // waited).
            next_size(&self.s.host, self.test, &mut self.qps, size)?;
            if self.perftest {
                self.perftest_size(size, out)?;
            } else {
                self.roce_size(size, out)?;
            }
        }
        writeln!(out, "{}", super::report::RESULT_LINE)?;
        self.s.report_counters();
        Ok(())
    }

    /// One size against a roce peer: the client runs and both swap their results; the server
    /// serves until the client's results come. Each prints the combined bandwidth (and the
    /// server its latency).
    fn roce_size(&mut self, size: u64, out: &mut dyn Write) -> anyhow::Result<()> {
        let (test, depth, gbits, bidir) = (self.test, self.depth, self.gbits, self.hello.bidir);
        let (s, oob, qps, hello) = (&mut self.s, &self.oob, &mut self.qps, &self.hello);
        let _: Vec<u64> = swap(s, oob, self.is_client, &[size], "start")?;
        if self.is_client {
            let end = client_run(s, test, hello, size, depth, qps, out)?;
            s.ask(oob, Req::Send("send results", json_line(&end)?))?;
            let theirs: End = recv_checked(s, oob, ("read results", "results"), |_: &End| Ok(()))?;
            if let Some(bw) = combined(end.bw, theirs.bw, bidir) {
                writeln!(out, "{}", bw.line(gbits))?;
            }
            return Ok(());
        }
        let ours = if bidir {
            Some(client_run(s, test, hello, size, depth, qps, out)?)
        } else {
            None
        };
        let max_size = hello.max_size();
        let mut server = Server::new(test, size, hello.iters, depth);
        let msg = s.converse(oob, Req::RecvLine("read results"), |h| {
            server.step(h, qps, max_size, depth)
        })?;
        let end: End = decode_checked(s, oob, "results", &msg, |_: &End| Ok(()))?;
        let mine = End {
            bw: ours.as_ref().and_then(|o| o.bw),
            completed: server.seen,
        };
        s.ask(oob, Req::Send("send results", json_line(&mine)?))?;
        if let Some(bw) = combined(end.bw, mine.bw, bidir) {
            writeln!(out, "{}", bw.line(gbits))?;
        }
        if let Some(lat) = server.lat() {
            writeln!(out, "{}", lat.line())?;
        }
        Ok(())
    }

    /// One size against a perftest tool: the traffic (client) or serving it (server), then what
    /// the tool exchanges after it; prints perftest's result line for our side.
    fn perftest_size(&mut self, size: u64, out: &mut dyn Write) -> anyhow::Result<()> {
        let (test, depth, gbits) = (self.test, self.depth, self.gbits);
        let flow = perftest::Flow::of(test);
        let mine = *self.first()?;
        let (s, oob, qps, hello) = (&mut self.s, &self.oob, &mut self.qps, &self.hello);
        if self.is_client {
            let end = client_run(s, test, hello, size, depth, qps, out)?;
            if let Some(bw) = &end.bw {
                writeln!(out, "{}", bw.line(gbits))?;
            }
            perftest::finish(s, oob, &mine, flow, end.bw.as_ref(), gbits, &mut |_| Ok(()))?;
            return Ok(());
        }
        let mut server = Server::new(test, size, hello.iters, depth);
        let max_size = size.max(8);
        if test == Test::WriteLat {
            // No exchange after ib_write_lat's traffic: answer every write, then let the last
            // ACK go.
            let mut last = std::time::Instant::now();
            let mut seen = 0;
            while server.seen < hello.iters {
                s.poll();
                server.step(&mut s.host, qps, max_size, depth)?;
                if server.seen != seen {
                    seen = server.seen;
                    last = std::time::Instant::now();
                }
                if last.elapsed() > s.timeout {
                    bail!(
                        "the peer stopped writing ({} of {} iterations)",
                        server.seen,
                        hello.iters
                    );
                }
            }
            s.drain(std::time::Duration::from_millis(200));
        } else {
            let theirs = perftest::finish(s, oob, &mine, flow, None, gbits, &mut |h| {
                server.step(h, qps, max_size, depth)
            })?;
            if let Some(r) = theirs {
                writeln!(out, "{}", perftest::bw_from_report(&r, gbits).line(gbits))?;
            }
        }
        if let Some(bw) = server.bw() {
            writeln!(out, "{}", bw.line(gbits))?;
        }
        if let Some(lat) = server.lat() {
            writeln!(out, "{}", lat.line())?;
        }
        Ok(())
    }
}
