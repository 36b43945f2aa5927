//! A set of PSNs inside a window of [`WINDOW`] PSNs that slides forward: what selective repeat
//! remembers on both sides of a queue pair (the responder: packets it holds past the expected
//! PSN; the requester: the packets the responder said it holds).

use super::Psn;

/// PSNs a [`PsnWindow`] spans, and so the most packets a selective-repeat requester keeps
/// outstanding. Divides the PSN ring, so a PSN keeps its bit across the wrap.
pub const WINDOW: u32 = 1024;

const WORDS: usize = (WINDOW / 64) as usize;

/// PSNs in `[start, start + WINDOW)`, one bit each (128 bytes).
#[derive(Clone, Debug)]
pub struct PsnWindow {
    start: Psn,
    bits: [u64; WORDS],
}

/// The word and bit of `psn` (by its value modulo the window, so sliding moves no bits).
fn slot(psn: Psn) -> (usize, u64) {
    let i = (psn.value() % WINDOW) as usize;
    (i / 64, 1 << (i % 64))
}

impl PsnWindow {
    /// An empty window starting at `start`.
    pub fn new(start: Psn) -> Self {
        PsnWindow {
            start,
            bits: [0; WORDS],
        }
    }

    /// The first PSN the window spans.
    pub fn start(&self) -> Psn {
        self.start
    }

    /// Whether `psn` lies inside the window.
    pub fn spans(&self, psn: Psn) -> bool {
        (0..WINDOW as i32).contains(&psn.diff(self.start))
    }

    /// Whether `psn` is in the set (never for a PSN outside the window).
    pub fn contains(&self, psn: Psn) -> bool {
        let (w, b) = slot(psn);
        self.spans(psn) && self.bits[w] & b != 0
    }

    /// Adds `psn`; `false` when it lies outside the window or is already in the set.
    pub fn insert(&mut self, psn: Psn) -> bool {
        if !self.spans(psn) || self.contains(psn) {
            return false;
        }
        let (w, b) = slot(psn);
        self.bits[w] |= b;
        true
    }

    /// Slides the window to start at `start` (forward only; a PSN behind the start is
    /// ignored), forgetting the PSNs it leaves behind.
    pub fn slide_to(&mut self, start: Psn) {
        let d = start.diff(self.start);
        if d <= 0 {
            return;
        }
        if d as u32 >= WINDOW {
            self.bits = [0; WORDS];
        } else {
            for k in 0..d as u32 {
                let (w, b) = slot(self.start.add(k));
                self.bits[w] &= !b;
            }
        }
        self.start = start;
    }

    /// When the window's first PSN is in the set: removes it and slides the window past it.
    pub fn pop_start(&mut self) -> bool {
        if !self.contains(self.start) {
            return false;
        }
        let (w, b) = slot(self.start);
        self.bits[w] &= !b;
        self.start = self.start.next();
        true
    }

    /// No PSN in the set.
    pub fn is_empty(&self) -> bool {
        self.bits.iter().all(|&w| w == 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_psns_inside_the_window_only() {
        let mut s = PsnWindow::new(Psn::new(100));
        assert!(s.insert(Psn::new(100)));
        assert!(s.insert(Psn::new(100 + WINDOW - 1)));
        assert!(!s.insert(Psn::new(100 + WINDOW)), "one past the window");
        assert!(!s.insert(Psn::new(99)), "behind the window");
        assert!(!s.insert(Psn::new(100)), "already held");
        assert!(s.contains(Psn::new(100 + WINDOW - 1)));
        assert!(!s.contains(Psn::new(101)));
    }

    #[test]
    fn sliding_forgets_what_it_passes_and_reuses_its_bits() {
        let mut s = PsnWindow::new(Psn::new(0));
        s.insert(Psn::new(5));
        s.insert(Psn::new(700));
        s.slide_to(Psn::new(6));
        assert!(!s.contains(Psn::new(5)));
        assert!(s.contains(Psn::new(700)));
        // 5 + WINDOW shares 5's bit: it must read as absent now that 5 is gone.
        assert!(!s.contains(Psn::new(5 + WINDOW)));
        s.slide_to(Psn::new(2)); // backwards: ignored
        assert_eq!(s.start(), Psn::new(6));
        s.slide_to(Psn::new(6 + 5 * WINDOW));
        assert!(s.is_empty());
    }

    #[test]
    fn pops_the_leading_run_across_the_psn_wrap() {
        let start = Psn::new(0xFF_FFFE);
        let mut s = PsnWindow::new(start);
        for k in [0, 1, 2, 4] {
            s.insert(start.add(k));
        }
        let mut popped = 0;
        while s.pop_start() {
            popped += 1;
        }
        assert_eq!(popped, 3);
        assert_eq!(s.start(), Psn::new(1));
        assert!(s.contains(Psn::new(2)));
    }
}
