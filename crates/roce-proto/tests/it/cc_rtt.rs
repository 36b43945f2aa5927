//! The endpoint feeds a QP's congestion controller from the transport: an RTT sample (hardware
//! style: `now` at transmit to `now` at the covering ACK) and the acked bytes on every ACK, and a
//! loss on a NAK sequence error or an ACK timeout. A recording `Custom` controller sees exactly
//! what the scripted exchange implies.

use std::sync::{Arc, Mutex};

use roce_testkit::cc_pair;

use cc_pair::{t, transmit, Pair};
use roce_proto::cc::{CcMetrics, CongestionControl, Controller, Rate};
use roce_proto::connect::RcOptions;
use roce_proto::time::{Duration, Instant};
use roce_proto::wire::parse_frame;

#[derive(Clone, Debug, PartialEq)]
enum Seen {
    Ack {
        at: u64,
        bytes: u64,
        rtt: Option<Duration>,
    },
    Loss {
        at: u64,
    },
}

#[derive(Debug)]
struct Recording(Arc<Mutex<Vec<Seen>>>);

impl CongestionControl for Recording {
    fn name(&self) -> &'static str {
        "recording"
    }
    fn on_ack(&mut self, now: Instant, acked_bytes: u64, rtt: Option<Duration>) {
        self.0.lock().unwrap().push(Seen::Ack {
            at: now.as_nanos(),
            bytes: acked_bytes,
            rtt,
        });
    }
    fn on_cnp(&mut self, _now: Instant) {}
    fn on_loss(&mut self, now: Instant) {
        self.0
            .lock()
            .unwrap()
            .push(Seen::Loss { at: now.as_nanos() });
    }
    fn metrics(&self) -> CcMetrics {
        CcMetrics {
            rate: Rate::from_gbps(100),
            target_rate: Rate::from_gbps(100),
            ..CcMetrics::default()
        }
    }
}

struct Setup {
    p: Pair,
    seen: Arc<Mutex<Vec<Seen>>>,
}

fn setup(timeout: u8) -> Setup {
    let opts = RcOptions {
        timeout,
        ..RcOptions::default()
    };
    let mut p = Pair::new(cc_pair::config, &opts, 1 << 16);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let cc = Controller::Custom(Box::new(Recording(seen.clone())));
    p.a.set_congestion_control(p.sa.qpn, cc, 1 << 20).unwrap();
    Setup { p, seen }
}

impl Setup {
    fn write(&mut self, id: u64, len: u32) {
        self.p.post_write(id, len);
    }
    /// Two 1000-byte WRITEs (ids 1 and 2) posted and sent at `now`: one frame each, and both
    /// single-packet WRITEs ask for an ACK.
    fn two_writes_sent(&mut self, now: Instant) -> Vec<Vec<u8>> {
        self.write(1, 1000);
        self.write(2, 1000);
        let frames = transmit(&mut self.p.a, now);
        assert_eq!(frames.len(), 2, "one frame per single-packet WRITE");
        frames
    }
    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

/// An ACK the controller saw at `at` ns for `bytes`, timed at `rtt_ns`.
fn timed_ack(at: u64, bytes: u64, rtt_ns: u64) -> Seen {
    Seen::Ack {
        at,
        bytes,
        rtt: Some(Duration::from_nanos(rtt_ns)),
    }
}

#[test]
fn ack_arriving_x_ns_after_the_request_yields_rtt_x_and_its_bytes() {
    let mut s = setup(14);
    s.write(1, 1000);
    let data = transmit(&mut s.p.a, t(1_000));
    assert_eq!(data.len(), 1);
    s.p.b.handle_frame(t(1_400), &data[0]);
    let acks = transmit(&mut s.p.b, t(1_600));
    assert_eq!(acks.len(), 1);
    // The ACK reaches the sender X = 2_345 ns after the request left.
    s.p.a.handle_frame(t(3_345), &acks[0]);
    let bytes = data[0].len() as u64;
    assert_eq!(s.seen(), vec![timed_ack(3_345, bytes, 2_345)]);
}

#[test]
fn a_coalesced_ack_times_the_newest_request_it_covers() {
    let mut s = setup(14);
    let first = s.two_writes_sent(t(10_000));
    s.p.b.handle_frame(t(10_500), &first[0]);
    s.p.b.handle_frame(t(10_600), &first[1]);
    let acks = transmit(&mut s.p.b, t(10_700));
    // Deliver only the newest ACK: it covers both requests.
    let newest = acks.last().unwrap();
    assert_eq!(
        parse_frame(newest).unwrap().repr.bth.psn,
        parse_frame(&first[1]).unwrap().repr.bth.psn
    );
    s.p.a.handle_frame(t(13_000), newest);
    let bytes = (first[0].len() + first[1].len()) as u64;
    assert_eq!(s.seen(), vec![timed_ack(13_000, bytes, 3_000)]);
}

#[test]
fn nak_sequence_error_reports_a_loss_to_the_controller() {
    let mut s = setup(14);
    let data = s.two_writes_sent(t(100_000));
    // The first request is lost; the second reaches the responder out of sequence.
    s.p.b.handle_frame(t(100_500), &data[1]);
    let naks = transmit(&mut s.p.b, t(100_600));
    assert_eq!(naks.len(), 1);
    s.p.a.handle_frame(t(101_000), &naks[0]);
    assert_eq!(s.seen(), vec![Seen::Loss { at: 101_000 }]);
    assert_eq!(s.p.a.counters().qp.packet_seq_err, 1);
    // The resent requests are not timed (Karn): their ACK gives no sample.
    let mut resent = transmit(&mut s.p.a, t(101_100));
    resent.extend(transmit(&mut s.p.a, t(101_150)));
    assert_eq!(resent.len(), 2);
    for f in &resent {
        s.p.b.handle_frame(t(101_200), f);
    }
    for ack in transmit(&mut s.p.b, t(101_300)) {
        s.p.a.handle_frame(t(101_400), &ack);
    }
    assert_eq!(s.seen(), vec![Seen::Loss { at: 101_000 }]);
}

#[test]
fn ack_timeout_reports_a_loss_to_the_controller() {
    // timeout code 1: 8.192 us.
    let mut s = setup(1);
    s.write(1, 1000);
    assert_eq!(transmit(&mut s.p.a, t(0)).len(), 1);
    let deadline = s.p.a.poll_timeout().unwrap();
    assert_eq!(deadline, t(8_192));
    s.p.a.handle_timeout(t(8_191));
    assert_eq!(s.seen(), vec![]);
    s.p.a.handle_timeout(deadline);
    assert_eq!(s.seen(), vec![Seen::Loss { at: 8_192 }]);
    assert_eq!(s.p.a.counters().qp.local_ack_timeout_err, 1);
}
