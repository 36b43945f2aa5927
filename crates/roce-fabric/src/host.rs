//! The engines scenarios put on hosts: the real RC transport ([`RcHost`], the default) or the
//! fabric's stand-in [`TestHost`], behind one enum so a scenario's fabric has a single engine type.

use super::rc_host::RcHost;
use super::series::CcSample;
use super::testing::TestHost;
use roce_proto::engine::Engine;
use roce_proto::time::Instant;

/// A scenario host.
#[derive(Debug)]
pub enum SimHost {
    /// Test sender/receiver (no retransmission; optional CC from `roce_proto::cc`).
    Test(Box<TestHost>),
    /// The RC endpoint (queue pairs, CC and notification point of the real transport).
    Rc(Box<RcHost>),
}

impl SimHost {
    /// The test host, if this is one.
    pub fn as_test(&self) -> Option<&TestHost> {
        match self {
            SimHost::Test(t) => Some(t),
            SimHost::Rc(_) => None,
        }
    }

    /// The RC host, if this is one.
    pub fn as_rc(&self) -> Option<&RcHost> {
        match self {
            SimHost::Rc(r) => Some(r),
            SimHost::Test(_) => None,
        }
    }

    /// Ring AllReduce iteration marks.
    pub fn marks(&self) -> &[Instant] {
        match self {
            SimHost::Test(t) => &t.marks,
            SimHost::Rc(r) => r.marks(),
        }
    }

    /// Congestion-control samples of every flow with a controller.
    pub fn cc_samples(&self, out: &mut Vec<CcSample>) {
        match self {
            SimHost::Test(t) => t.cc_samples(out),
            SimHost::Rc(r) => r.cc_samples(out),
        }
    }

    /// Congestion-control metrics of the sender's flow `i`, if it runs a controller.
    pub fn cc_metrics(&self, i: usize) -> Option<roce_proto::cc::CcMetrics> {
        match self {
            SimHost::Test(t) => t.cc_metrics(i),
            SimHost::Rc(r) => r.cc_metrics(i),
        }
    }

    /// When the sender's flow `i` completed, as the engine itself knows it (RC completions).
    pub fn completed_at(&self, i: usize) -> Option<Instant> {
        self.as_rc().and_then(|r| r.completed_at(i))
    }
}

impl Engine for SimHost {
    fn handle_frame(&mut self, now: Instant, frame: &[u8]) {
        match self {
            SimHost::Test(t) => t.handle_frame(now, frame),
            SimHost::Rc(r) => r.handle_frame(now, frame),
        }
    }
    fn handle_timeout(&mut self, now: Instant) {
        match self {
            SimHost::Test(t) => t.handle_timeout(now),
            SimHost::Rc(r) => r.handle_timeout(now),
        }
    }
    fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        match self {
            SimHost::Test(t) => t.poll_transmit(now, buf),
            SimHost::Rc(r) => r.poll_transmit(now, buf),
        }
    }
    fn poll_timeout(&self) -> Option<Instant> {
        match self {
            SimHost::Test(t) => t.poll_timeout(),
            SimHost::Rc(r) => r.poll_timeout(),
        }
    }
}
