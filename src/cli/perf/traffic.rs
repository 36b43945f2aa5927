//! The traffic of `roce perf`: the client's timed loops (bandwidth with a window of outstanding
//! requests, latency with one request in flight) and the server's part (echoes, receives).
//! Not here: setup, exchange, output.

use std::io::Write;

use anyhow::{anyhow, bail, Context};

use roce_proto::mr::MrInfo;
use roce_proto::resolving::ResolvingEndpoint;
use roce_proto::verbs::{RecvWr, SendWr, Sge, WcOpcode, WcStatus, WrOpcode};

use super::report::{Bw, BwMeter, Lat};
use super::{End, Hello, Qp, Test};
use crate::cli::output;
use crate::cli::session::Session;

pub(super) fn post_recvs(s: &mut Session, q: &mut Qp, size: u64, depth: u32) -> anyhow::Result<()> {
    let h = &mut s.host;
    refill(h, q, size, depth)
}

pub(super) fn refill(
    h: &mut ResolvingEndpoint,
    q: &mut Qp,
    size: u64,
    depth: u32,
) -> anyhow::Result<()> {
    while q.recvs < u64::from(depth) {
        let wr = RecvWr::new(
            0,
            Sge {
                addr: q.dst.addr,
                length: size as u32,
                lkey: q.dst.lkey,
            },
        );
        h.endpoint_mut()
            .post_recv(q.qpn, wr)
            .context("posting a receive")?;
        q.recvs += 1;
    }
    Ok(())
}

pub(super) fn send_wr(test: Test, q: &Qp, size: u64, id: u64) -> SendWr {
    let local = |m: &MrInfo, len: u64| Sge {
        addr: m.addr,
        length: len as u32,
        lkey: m.lkey,
    };
    let (op, sge) = match test {
        Test::WriteBw | Test::WriteLat => (
            WrOpcode::RdmaWrite {
                remote_addr: q.peer.addr,
                rkey: q.peer.rkey,
            },
            local(&q.src, size),
        ),
        Test::ReadBw | Test::ReadLat => (
            WrOpcode::RdmaRead {
                remote_addr: q.peer.addr,
                rkey: q.peer.rkey,
            },
            local(&q.src, size),
        ),
        Test::SendBw | Test::SendLat => (WrOpcode::Send, local(&q.src, size)),
        Test::AtomicLat => (
            WrOpcode::AtomicFetchAndAdd {
                remote_addr: q.peer.addr,
                rkey: q.peer.rkey,
                add: 1,
            },
            local(&q.src, 8),
        ),
    };
    SendWr::new(id, op, sge)
}

/// The last byte of a write-lat buffer in iteration `i` (perftest's `(char)++scnt`).
fn mark(i: u64) -> u8 {
    ((i + 1) % 256) as u8
}

fn last_byte(h: &ResolvingEndpoint, m: &MrInfo, size: u64) -> Option<u8> {
    h.endpoint()
        .mr(m.lkey)?
        .bytes()
        .get(size.checked_sub(1)? as usize)
        .copied()
}

fn set_last_byte(h: &mut ResolvingEndpoint, m: &MrInfo, size: u64, v: u8) {
    if let Some(b) = h
        .endpoint_mut()
        .mr_mut(m.lkey)
        .and_then(|r| r.bytes_mut().get_mut(size.saturating_sub(1) as usize))
    {
        *b = v;
    }
}

/// Readies `qps` for the next size, `size` bytes. What the peer wrote stays: a peer may write
/// this size's first mark before we get here (ib_write_lat starts each size of `-a` at once, with
/// no exchange in between), and sizes grow ([`Hello::check`]), so the byte a write-lat size polls
/// lies past every byte earlier sizes wrote. Anything there but 0 (not written yet) or the peer's
/// first mark is refused rather than taken for an answer.
pub(super) fn next_size(
    h: &ResolvingEndpoint,
    test: Test,
    qps: &mut [Qp],
    size: u64,
) -> anyhow::Result<()> {
    for q in qps.iter_mut() {
        q.posted = 0;
        q.done = 0;
        if test == Test::WriteLat {
            let polled = last_byte(h, &q.dst, size);
            if polled != Some(0) && polled != Some(mark(0)) {
                bail!(
                    "QP {:#x}: the byte size {size} polls holds {polled:?} before the size starts",
                    q.qpn
                );
            }
        }
    }
    Ok(())
}

/// Reaps completions of `q`: returns (send completions, receive completions).
pub(super) fn reap(h: &mut ResolvingEndpoint, q: &mut Qp) -> anyhow::Result<(u64, u64)> {
    let (mut sends, mut recvs) = (0, 0);
    while let Some(wc) = h.endpoint_mut().poll_cq_one(q.cq) {
        if wc.status != WcStatus::Success {
            bail!(
                "QP {:#x}: completion {:?} ({:?}); the peer stopped answering?",
                q.qpn,
                wc.status,
                wc.opcode
            );
        }
        if matches!(wc.opcode, WcOpcode::Recv | WcOpcode::RecvRdmaWithImm) {
            recvs += 1;
            q.recvs = q.recvs.saturating_sub(1);
        } else {
            sends += 1;
        }
    }
    Ok((sends, recvs))
}

/// Polls until `done` holds, failing after `wait` ns without it.
fn wait_for(
    s: &mut Session,
    wait: u64,
    i: u64,
    iters: u64,
    mut done: impl FnMut(&ResolvingEndpoint) -> bool,
) -> anyhow::Result<()> {
    let t0 = std::time::Instant::now();
    while !done(&s.host) {
        s.poll();
        if t0.elapsed().as_nanos() as u64 > wait {
            bail!("the peer stopped answering (iteration {i} of {iters})");
        }
    }
    Ok(())
}

/// The most latency samples a run keeps (128 MiB); later iterations run but are not sampled.
const MAX_SAMPLES: usize = 1 << 24;

/// How often a `-D` run prints its status line.
const STATUS_EVERY_NS: u64 = 1_000_000_000;

/// `-D` progress: elapsed/total seconds, messages so far, and the rate since the last line.
fn status_line(t: u64, total: u64, done: u64, size: u64, recent: u64, span: u64) -> String {
    let secs = span.max(1) as f64 / 1e9;
    format!(
        "[{:>3}/{} s] {done} messages, {:.2} MB/sec, {:.6} Mpps",
        t / 1_000_000_000,
        total / 1_000_000_000,
        (recent * size) as f64 / secs / f64::from(1u32 << 20),
        recent as f64 / secs / 1e6
    )
}

/// The client's traffic of one size: a bandwidth run (prints `-D`'s status lines) or a
/// latency run (prints its result line on `out`). Returns what it measured.
pub(super) fn client_run(
    s: &mut Session,
    test: Test,
    hello: &Hello,
    size: u64,
    depth: u32,
    qps: &mut [Qp],
    out: &mut dyn Write,
) -> anyhow::Result<End> {
    if test.is_bw() {
        return client_bw(s, test, hello, size, depth, qps);
    }
    let q = qps
        .first_mut()
        .ok_or_else(|| anyhow!("no QP for the latency test"))?;
    let (lat, taken) = client_lat(s, test, hello, size, depth, q)?;
    writeln!(out, "{}", lat.line())?;
    Ok(End {
        bw: None,
        completed: taken,
    })
}

/// `-D`'s status lines on stderr: one a second, with the rate since the last.
struct Status {
    /// The run's length, ns.
    total: u64,
    next: u64,
    last_at: u64,
    last_done: u64,
}

impl Status {
    fn new(total: u64) -> Status {
        Status {
            total,
            next: STATUS_EVERY_NS,
            last_at: 0,
            last_done: 0,
        }
    }

    /// Whether a line is due at `t` ns.
    fn due(&self, t: u64) -> bool {
        t >= self.next && t < self.total
    }

    /// The line at `t` ns, `done` messages of `size` bytes so far.
    fn say(&mut self, t: u64, done: u64, size: u64) {
        output::note(status_line(
            t,
            self.total,
            done,
            size,
            done.saturating_sub(self.last_done),
            t - self.last_at,
        ));
        self.last_done = done;
        self.last_at = t;
        self.next += STATUS_EVERY_NS;
    }
}

/// A bandwidth run: a window of `depth` requests on every QP, `hello.iters` each or for
/// `hello.duration` seconds.
fn client_bw(
    s: &mut Session,
    test: Test,
    hello: &Hello,
    size: u64,
    depth: u32,
    qps: &mut [Qp],
) -> anyhow::Result<End> {
    let start = s.now();
    let stop_at = (hello.duration > 0).then(|| hello.duration.saturating_mul(1_000_000_000));
    let wait = s.timeout.as_nanos() as u64;
    let mut last_progress = 0u64;
    let mut meter = BwMeter::new(size, depth as usize);
    let mut status = stop_at.map(Status::new);
    loop {
        let t = s.now().saturating_since(start).as_nanos();
        let running = stop_at.is_none_or(|d| t < d);
        let mut all_done = true;
        for q in qps.iter_mut() {
            while running
                && (stop_at.is_some() || q.posted < hello.iters)
                && q.posted - q.done < u64::from(depth)
            {
                let wr = send_wr(test, q, size, q.posted);
                s.host
                    .endpoint_mut()
                    .post_send(q.qpn, wr)
                    .context("posting a request")?;
                q.posted += 1;
            }
            let (sent, _) = reap(&mut s.host, q)?;
            if test.uses_recv() {
                // -b send-bw: the peer sends to us too.
                refill(&mut s.host, q, size, depth)?;
            }
            q.done += sent;
            for _ in 0..sent {
                meter.record(t);
            }
            if sent > 0 {
                last_progress = t;
            }
            all_done &= q.done == q.posted && (!running || q.posted >= hello.iters);
        }
        if all_done && (stop_at.is_none() || !running) {
            break;
        }
        if let Some(st) = status.as_mut().filter(|st| st.due(t)) {
            st.say(t, qps.iter().map(|q| q.done).sum(), size);
        }
        if t.saturating_sub(last_progress) > wait {
            bail!(
                "the peer stopped answering ({} of {} requests done)",
                qps.iter().map(|q| q.done).sum::<u64>(),
                qps.iter().map(|q| q.posted).sum::<u64>()
            );
        }
        s.poll();
    }
    let iters = qps.iter().map(|q| q.done).min().unwrap_or(0);
    Ok(End {
        bw: Some(meter.finish(iters)),
        completed: meter.count(),
    })
}

/// A latency run on `q`: one request in flight, `hello.iters` times (write-lat: a ping-pong of
/// writes). Returns the latency and the samples taken.
fn client_lat(
    s: &mut Session,
    test: Test,
    hello: &Hello,
    size: u64,
    depth: u32,
    q: &mut Qp,
) -> anyhow::Result<(Lat, u64)> {
    let start = s.now();
    let ns = |s: &Session| s.now().saturating_since(start).as_nanos();
    let wait = s.timeout.as_nanos() as u64;
    let mut samples = Vec::with_capacity(
        usize::try_from(hello.iters).map_or(MAX_SAMPLES, |n| n.min(MAX_SAMPLES)),
    );
    let mut taken = 0u64;
    let sample = |samples: &mut Vec<u64>, taken: &mut u64, ns: u64| {
        *taken += 1;
        if samples.len() < MAX_SAMPLES {
            samples.push(ns);
        }
    };
    let mut last_post = None;
    for i in 0..hello.iters {
        if test == Test::WriteLat {
            // perftest's ping-pong of writes: the server writes first, the client answers each
            // of its writes; a sample is the time between two of our posts.
            wait_for(s, wait, i, hello.iters, |h| {
                last_byte(h, &q.dst, size) == Some(mark(i))
            })?;
            let t = ns(s);
            if let Some(prev) = last_post.replace(t) {
                sample(&mut samples, &mut taken, t - prev);
            }
            set_last_byte(&mut s.host, &q.src, size, mark(i));
        }
        let t0 = ns(s);
        s.host
            .endpoint_mut()
            .post_send(q.qpn, send_wr(test, q, size, i))
            .context("posting a request")?;
        let (mut sent, mut got) = (0, 0);
        loop {
            s.poll();
            let (a, b) = reap(&mut s.host, q)?;
            sent += a;
            got += b;
            let done = match test {
                Test::SendLat => got > 0,
                _ => sent > 0,
            };
            if done {
                break;
            }
            if ns(s) - t0 > wait {
                bail!(
                    "the peer stopped answering (iteration {i} of {})",
                    hello.iters
                );
            }
        }
        if test != Test::WriteLat {
            sample(&mut samples, &mut taken, ns(s) - t0);
        }
        if test == Test::SendLat {
            refill(&mut s.host, q, size, depth)?;
        }
    }
    let one_way = matches!(test, Test::WriteLat | Test::SendLat);
    let mut lat = Lat::from_samples(size, &samples, if one_way { 2.0 } else { 1.0 });
    lat.iters = hello.iters;
    Ok((lat, taken))
}

/// The server's part while the client runs: echoing (write-lat, send-lat), refilling receives.
pub(super) struct Server {
    test: Test,
    size: u64,
    iters: u64,
    /// Messages (send-lat, send-bw) or writes (write-lat) received.
    pub(super) seen: u64,
    /// Writes posted (write-lat).
    sent: u64,
    start: std::time::Instant,
    /// When the first receive (send-bw) happened, ns since `start`.
    first: Option<u64>,
    /// Receives (send-bw), ns since the first.
    meter: BwMeter,
    /// When each answer (latency tests) happened, ns since `start` (at most [`MAX_SAMPLES`]).
    times: Vec<u64>,
}

impl Server {
    /// The server of one size; `depth` is the peak window of a send-bw run.
    pub(super) fn new(test: Test, size: u64, iters: u64, depth: u32) -> Self {
        Server {
            test,
            size,
            iters,
            seen: 0,
            sent: 0,
            start: std::time::Instant::now(),
            first: None,
            meter: BwMeter::new(size, depth as usize),
            times: Vec::new(),
        }
    }

    fn now_ns(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// A latency answer now.
    fn stamp(&mut self) {
        if self.times.len() < MAX_SAMPLES {
            let t = self.now_ns();
            self.times.push(t);
        }
    }

    /// A send-bw receive now.
    fn received(&mut self) {
        let t = self.now_ns();
        let first = *self.first.get_or_insert(t);
        self.meter.record(t - first);
    }

    /// What the server measured of a send-bw run (receive completions).
    pub(super) fn bw(&self) -> Option<Bw> {
        (self.test == Test::SendBw && self.meter.count() > 0).then(|| self.meter.finish(self.seen))
    }

    /// The latency the server saw: half the time between its consecutive answers.
    pub(super) fn lat(&self) -> Option<Lat> {
        if !matches!(self.test, Test::SendLat | Test::WriteLat) || self.times.len() < 2 {
            return None;
        }
        let gaps: Vec<u64> = self
            .times
            .iter()
            .zip(self.times.iter().skip(1))
            .map(|(a, b)| b.saturating_sub(*a))
            .collect();
        let mut lat = Lat::from_samples(self.size, &gaps, 2.0);
        lat.iters = self.seen;
        Some(lat)
    }

    pub(super) fn step(
        &mut self,
        h: &mut ResolvingEndpoint,
        qps: &mut [Qp],
        max_size: u64,
        depth: u32,
    ) -> anyhow::Result<()> {
        for q in qps.iter_mut() {
            let (_, got) = reap(h, q)?;
            match self.test {
                Test::SendBw => {
                    self.seen += got;
                    for _ in 0..got {
                        self.received();
                    }
                    refill(h, q, max_size, depth)?;
                }
                Test::SendLat => {
                    for _ in 0..got {
                        self.stamp();
                        h.endpoint_mut()
                            .post_send(q.qpn, send_wr(self.test, q, self.size, self.seen))
                            .context("posting the answer")?;
                        self.seen += 1;
                    }
                    refill(h, q, max_size, depth)?;
                }
                Test::WriteLat => {
                    // perftest's server writes first, then once per write of the client.
                    if self.seen < self.iters
                        && last_byte(h, &q.dst, self.size) == Some(mark(self.seen))
                    {
                        self.seen += 1;
                    }
                    if self.sent == self.seen && self.sent < self.iters {
                        let m = mark(self.sent);
                        set_last_byte(h, &q.src, self.size, m);
                        self.stamp();
                        h.endpoint_mut()
                            .post_send(q.qpn, send_wr(self.test, q, self.size, self.sent))
                            .context("posting a write")?;
                        self.sent += 1;
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use roce_proto::endpoint::EndpointConfig;
    use roce_proto::psn::Psn;
    use roce_proto::wire::EthernetAddress;

    use super::*;

    fn host_with_qp() -> (ResolvingEndpoint, Vec<Qp>) {
        let mac = EthernetAddress([2, 0, 0, 0, 0, 1]);
        let mut h = ResolvingEndpoint::new(EndpointConfig::ipv4(mac, [198, 18, 0, 1].into()));
        let q = Qp::create(h.endpoint_mut(), 4, 64, Psn::new(0)).unwrap();
        (h, vec![q])
    }

    /// What one RDMA WRITE of the first `len` bytes of `src` leaves in `q`'s destination.
    fn peer_writes(h: &mut ResolvingEndpoint, q: &Qp, src: &[u8], len: usize) {
        let dst = h.endpoint_mut().mr_mut(q.dst.lkey).unwrap().bytes_mut();
        dst[..len].copy_from_slice(&src[..len]);
    }

    #[test]
    fn the_peers_first_write_of_the_next_size_is_kept_when_it_lands_before_the_size_starts() {
        let (mut h, mut qps) = host_with_qp();
        let mut src = vec![0u8; 64];
        // Size 2 ran 3 iterations; then ib_write_lat started size 4 at once, and its first
        // write landed before our side started that size.
        src[1] = mark(2);
        peer_writes(&mut h, &qps[0], &src, 2);
        (qps[0].posted, qps[0].done) = (3, 3);
        src[3] = mark(0);
        peer_writes(&mut h, &qps[0], &src, 4);
        next_size(&h, Test::WriteLat, &mut qps, 4).unwrap();
        assert_eq!((qps[0].posted, qps[0].done), (0, 0));
        // What the client's first wait of size 4 polls for: there, not wiped.
        assert_eq!(last_byte(&h, &qps[0].dst, 4), Some(mark(0)));
    }

    #[test]
    fn each_growing_size_polls_a_byte_no_earlier_size_wrote() {
        let (mut h, mut qps) = host_with_qp();
        // The peer's source keeps the marks of every earlier size, as perftest's does.
        let mut src = vec![0u8; 64];
        for size in [2, 4, 8, 16, 32, 64] {
            next_size(&h, Test::WriteLat, &mut qps, size as u64).unwrap();
            assert_eq!(
                last_byte(&h, &qps[0].dst, size as u64),
                Some(0),
                "size {size}"
            );
            for i in 0..300 {
                src[size - 1] = mark(i);
                peer_writes(&mut h, &qps[0], &src, size);
            }
        }
    }

    #[test]
    fn a_stale_byte_where_the_next_size_polls_is_refused() {
        let (mut h, mut qps) = host_with_qp();
        let src = [7u8; 64];
        peer_writes(&mut h, &qps[0], &src, 8);
        let e = next_size(&h, Test::WriteLat, &mut qps, 4).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "QP {:#x}: the byte size 4 polls holds Some(7) before the size starts",
                qps[0].qpn
            )
        );
        // Other tests poll nothing there.
        next_size(&h, Test::WriteBw, &mut qps, 4).unwrap();
    }
}
