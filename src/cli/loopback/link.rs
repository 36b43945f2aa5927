//! One end of `roce loopback`'s link as the run sees it: the fault injector over the real port,
//! with every frame the endpoint sends written to the capture (before the faults, so a dropped
//! frame is still there), each frame the injector touched carrying a comment that says what it
//! did. Not here: the endpoints and their messages ([`super::flows`]).

use std::cell::{Cell, RefCell};
use std::path::Path;
use std::rc::Rc;

use anyhow::Context;

use roce::pcap::CaptureWriter;
use roce_proto::fault::{FaultConfig, FaultCounters, FaultPort};
use roce_proto::port::{FrameBuf, Port};
use roce_proto::time::Instant;

/// The `--pcap` capture both ends write to, and the virtual time its frames are stamped with.
pub(super) struct Capture {
    writer: Rc<RefCell<Option<CaptureWriter>>>,
    clock: Rc<Cell<Instant>>,
}

impl Capture {
    /// A capture into the pcapng file at `path`; none without one.
    pub(super) fn create(path: Option<&Path>) -> anyhow::Result<Capture> {
        let writer = match path {
            Some(path) => Some(
                CaptureWriter::create_pcapng(path)
                    .with_context(|| format!("cannot write {}", path.display()))?,
            ),
            None => None,
        };
        Ok(Capture {
            writer: Rc::new(RefCell::new(writer)),
            clock: Rc::new(Cell::new(Instant::ZERO)),
        })
    }

    /// `port` behind the fault injector (`faults`, seeded with `seed`), its sends captured.
    pub(super) fn wrap<P: Port>(&self, port: P, faults: FaultConfig, seed: u64) -> LinkPort<P> {
        let mut inner = FaultPort::new(port, faults, seed);
        if self.writer.borrow().is_some() {
            inner.record_fates();
        }
        LinkPort {
            inner,
            writer: self.writer.clone(),
            clock: self.clock.clone(),
            staged: Vec::new(),
            staged_ends: Vec::new(),
        }
    }

    /// The virtual time of the frames sent from now on.
    pub(super) fn set_time(&self, now: Instant) {
        self.clock.set(now);
    }

    /// Completes the file.
    pub(super) fn finish(&self) -> anyhow::Result<()> {
        if let Some(w) = self.writer.borrow_mut().take() {
            w.finish().context("finishing the pcap file")?;
        }
        Ok(())
    }
}

/// One end of the link: the fault injector over the port, its sends captured.
pub(super) struct LinkPort<P: Port> {
    inner: FaultPort<P>,
    writer: Rc<RefCell<Option<CaptureWriter>>>,
    clock: Rc<Cell<Instant>>,
    /// Frames of the burst in flight, copied back to back before the injector takes them
    /// (one buffer reused for every burst), and where each ends.
    staged: Vec<u8>,
    staged_ends: Vec<usize>,
}

impl<P: Port> LinkPort<P> {
    /// What the injector did to the frames this end sent.
    pub(super) fn fault_counters(&self) -> FaultCounters {
        self.inner.counters()
    }
}

impl<P: Port> Port for LinkPort<P> {
    type Buf = P::Buf;
    roce_proto::port_caps_and_pool_of!(inner);
    fn rx_burst(&mut self, out: &mut Vec<P::Buf>, max: usize) -> usize {
        self.inner.rx_burst(out, max)
    }
    fn tx_burst(&mut self, bufs: &mut Vec<P::Buf>) -> usize {
        let mut writer = self.writer.borrow_mut();
        let Some(w) = writer.as_mut() else {
            return self.inner.tx_burst(bufs);
        };
        self.staged.clear();
        self.staged_ends.clear();
        for b in bufs.iter() {
            self.staged.extend_from_slice(b.frame());
            self.staged_ends.push(self.staged.len());
        }
        let sent = self.inner.tx_burst(bufs);
        let ts = std::time::Duration::from_nanos(self.clock.get().as_nanos());
        let fates = self.inner.take_fates();
        let starts = std::iter::once(0).chain(self.staged_ends.iter().copied());
        for (i, (start, end)) in starts.zip(self.staged_ends.iter().copied()).enumerate() {
            let frame = &self.staged[start..end];
            let comment = fates
                .get(i)
                .filter(|f| !f.is_clean())
                .map(ToString::to_string);
            if let Err(e) = w.write_annotated(ts, frame, comment.as_deref()) {
                tracing::warn!(error = %e, "pcap write failed");
            }
        }
        sent
    }
}
