//! The optional send window of a rate-based controller, as the HPCC authors' ns-3 model runs one
//! beside the rate (alibaba-edu/High-Precision-Congestion-Control, `rdma-queue-pair.cc`
//! `GetWin`/`IsWinBound`, `third.cc`, `run.py`'s `HAS_WIN`/`VAR_WIN`): a QP sends no new data
//! while the bytes in flight reach the window. The window is the bandwidth-delay product of the
//! line rate and a base RTT (ns-3: the largest base RTT of any host pair, `maxBdp`), scaled by
//! rate / line rate when `var_win` is set, so a flow cut to rate R holds R·RTT in flight and
//! the queue an incast can build before the rate cuts arrive is bounded.
//!
//! run.py turns the window on for DCTCP and HPCC (`has_win=1, vwin=1`) and off for DCQCN and
//! TIMELY (their `_vwin` variants turn it on); each controller's parameters default the same way.

use super::Rate;

crate::cc_params! {
    /// The send window (ns-3 `HAS_WIN`, `VAR_WIN`).
    pub struct WindowParams {
        /// Base RTT whose bandwidth-delay product at the line rate is the window (ns-3's
        /// maxRtt: two one-way delays plus a packet's transmission per hop); 0: no window.
        win_rtt: u32 = "ns",
        /// Scale the window by rate / line rate (ns-3 VAR_WIN); 0 keeps the whole BDP.
        var_win: bool = "",
    }
}

impl WindowParams {
    /// No window (ns-3 `HAS_WIN 0`).
    pub const OFF: WindowParams = WindowParams {
        win_rtt: 0,
        var_win: false,
    };

    /// A window of one BDP over `win_rtt_ns`, scaled by the rate (`HAS_WIN 1`, `VAR_WIN 1`).
    pub const fn var(win_rtt_ns: u32) -> Self {
        WindowParams {
            win_rtt: win_rtt_ns,
            var_win: true,
        }
    }
}

/// The window of one QP, built from [`WindowParams`] for its line rate.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Window {
    /// The BDP in bytes at the line rate; 0 when there is no window.
    bdp: u64,
    var: bool,
}

impl Window {
    /// Whether there is a window at all (fixed when built: `bytes` is `Some` exactly then).
    #[inline]
    pub fn is_on(&self) -> bool {
        self.bdp != 0
    }

    /// The window of a QP on a port of `line_rate`.
    pub fn new(p: &WindowParams, line_rate: Rate) -> Self {
        let bdp = u128::from(line_rate.as_bps()) * u128::from(p.win_rtt) / 8_000_000_000;
        Window {
            bdp: u64::try_from(bdp).unwrap_or(u64::MAX),
            var: p.var_win,
        }
    }

    /// The window at `rate` of at most `max` (both bits/s): `None` without one, else at least
    /// one byte (ns-3: "must > 0").
    #[inline]
    pub fn bytes(&self, rate: f64, max: f64) -> Option<u64> {
        if self.bdp == 0 {
            return None;
        }
        if !self.var || max <= 0.0 {
            return Some(self.bdp);
        }
        Some(((self.bdp as f64 * (rate / max).min(1.0)) as u64).max(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_is_the_bdp_scaled_by_the_rate() {
        let line = Rate::from_gbps(100);
        // 100 Gbit/s over 5 us: 62,500 bytes.
        let w = Window::new(&WindowParams::var(5_000), line);
        assert_eq!(w.bytes(100e9, 100e9), Some(62_500));
        assert_eq!(w.bytes(25e9, 100e9), Some(15_625));
        assert_eq!(w.bytes(0.0, 100e9), Some(1));
        let fixed = WindowParams {
            var_win: false,
            ..WindowParams::var(5_000)
        };
        assert_eq!(Window::new(&fixed, line).bytes(25e9, 100e9), Some(62_500));
        assert_eq!(
            Window::new(&WindowParams::OFF, line).bytes(1e9, 100e9),
            None
        );
    }
}
