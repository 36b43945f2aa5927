//! Live feedback for runs that take a while, on stderr only: an indicatif progress bar when the
//! run has a known length (a spinner when not), shown only on a terminal and never with `--json`;
//! and, on request, a periodic one-line status (like perftest's `--run_infinitely` lines) that
//! is printed whether or not stderr is a terminal, so logs of long runs show progress too.
//!
//! Not here: what the status says (the command builds the line).

use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::cli::output;

/// How often the bar's message is rebuilt at most.
const REDRAW_EVERY: Duration = Duration::from_millis(100);

/// A progress bar and/or periodic status line for one run.
#[derive(Debug)]
pub struct Progress {
    bar: ProgressBar,
    total: Option<Duration>,
    every: Option<Duration>,
    next_status: Duration,
    next_redraw: Duration,
    lines: u64,
}

impl Progress {
    /// Feedback for a run of `total` (None: unknown length, a spinner). The bar is drawn on
    /// stderr when `bar` is true and stderr is a terminal (pass `!json`); with `every`, a status
    /// line goes to stderr every that often regardless.
    pub fn new(label: &str, total: Option<Duration>, bar: bool, every: Option<Duration>) -> Self {
        let target = if bar {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        let pb = match total {
            Some(t) => {
                let pb = ProgressBar::with_draw_target(Some(t.as_millis() as u64), target);
                pb.set_style(
                    ProgressStyle::with_template(
                        "{prefix} [{bar:20}] {elapsed}/{len_s} {wide_msg}",
                    )
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .with_key(
                        "len_s",
                        |s: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                            let _ = write!(w, "{}s", s.len().unwrap_or(0).div_ceil(1000));
                        },
                    )
                    .progress_chars("=> "),
                );
                pb
            }
            None => {
                let pb = ProgressBar::with_draw_target(None, target);
                pb.set_style(
                    ProgressStyle::with_template("{prefix} {spinner} {elapsed} {wide_msg}")
                        .unwrap_or_else(|_| ProgressStyle::default_spinner()),
                );
                pb
            }
        };
        pb.set_prefix(label.to_owned());
        Progress {
            bar: pb,
            total,
            every,
            next_status: every.unwrap_or(Duration::MAX),
            next_redraw: Duration::ZERO,
            lines: 0,
        }
    }

    /// The run is `elapsed` in; `status` builds the one-line status (called only when the bar
    /// redraws or a status line is due, so it may be costly).
    pub fn update(&mut self, elapsed: Duration, status: impl FnOnce() -> String) {
        let line_due = elapsed >= self.next_status;
        let redraw = !self.bar.is_hidden() && elapsed >= self.next_redraw;
        if !line_due && !redraw {
            return;
        }
        let text = status();
        if redraw {
            self.next_redraw = elapsed + REDRAW_EVERY;
            let shown = self.total.map_or(elapsed, |t| elapsed.min(t));
            self.bar.set_position(shown.as_millis() as u64);
            self.bar.set_message(text.clone());
        }
        if line_due {
            if let Some(every) = self.every {
                while self.next_status <= elapsed {
                    self.next_status += every;
                }
            }
            self.lines += 1;
            self.bar
                .suspend(|| output::note(format_args!("[{:>7.1}s] {text}", elapsed.as_secs_f64())));
        }
    }

    /// Status lines printed so far.
    #[cfg(test)]
    pub fn lines_printed(&self) -> u64 {
        self.lines
    }

    /// Removes the bar (status lines stay).
    pub fn finish(self) {
        self.bar.finish_and_clear();
    }
}

/// A simulation's status: virtual time reached (of `total_us`), events per wall second and
/// the wall time left at that pace, e.g. `1.250/4.000 ms virtual, 1.21 M ev/s, 32 s left`.
pub fn sim_status(virtual_us: f64, total_us: f64, events: u64, wall: Duration) -> String {
    let wall_s = wall.as_secs_f64();
    let rate = if wall_s > 0.0 {
        events as f64 / wall_s
    } else {
        0.0
    };
    let frac = if total_us > 0.0 {
        virtual_us / total_us
    } else {
        1.0
    };
    let left = if frac > 0.0 {
        format!("{:.0} s left", wall_s * (1.0 - frac.min(1.0)) / frac)
    } else {
        "time left unknown".to_owned()
    };
    format!(
        "{:.3}/{:.3} ms virtual, {:.2} M ev/s, {left}",
        virtual_us / 1e3,
        total_us / 1e3,
        rate / 1e6
    )
}

/// Parses `--status SECS` (`2`, `0.5`, `2s`, `500ms`): the status-line interval.
pub fn parse_interval(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let (num, scale) = match t.strip_suffix("ms") {
        Some(n) => (n, 1e-3),
        None => (t.strip_suffix('s').unwrap_or(t), 1.0),
    };
    match num.parse::<f64>() {
        Ok(v) if v.is_finite() && v * scale >= 0.1 && v * scale <= 3600.0 => {
            Ok(Duration::from_secs_f64(v * scale))
        }
        _ => Err(format!(
            "`{s}` is not an interval from 0.1 s to 3600 s (e.g. 1, 2s, 500ms)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_lines_come_once_per_interval_even_without_a_terminal() {
        let mut p = Progress::new(
            "t",
            Some(Duration::from_secs(10)),
            false,
            Some(Duration::from_secs(1)),
        );
        let mut built = 0;
        for ms in (0..=3500).step_by(50) {
            p.update(Duration::from_millis(ms), || {
                built += 1;
                String::from("x")
            });
        }
        // Due at 1 s, 2 s and 3 s; the hidden bar never asks for a line otherwise.
        assert_eq!((p.lines_printed(), built), (3, 3));
        p.finish();
    }

    #[test]
    fn a_hidden_bar_without_status_never_builds_a_line() {
        let mut p = Progress::new("t", None, false, None);
        p.update(Duration::from_secs(100), || unreachable!("no line is due"));
        assert_eq!(p.lines_printed(), 0);
    }

    #[test]
    fn the_sim_status_shows_virtual_time_event_rate_and_time_left() {
        // A quarter of the virtual time in 10 s: 30 s to go at that pace.
        let line = sim_status(1000.0, 4000.0, 5_000_000, Duration::from_secs(10));
        assert_eq!(line, "1.000/4.000 ms virtual, 0.50 M ev/s, 30 s left");
        let start = sim_status(0.0, 4000.0, 0, Duration::ZERO);
        assert_eq!(
            start,
            "0.000/4.000 ms virtual, 0.00 M ev/s, time left unknown"
        );
    }

    #[test]
    fn status_intervals_parse_with_units_and_refuse_nonsense() {
        assert_eq!(parse_interval("2"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_interval("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_interval("1.5s"), Ok(Duration::from_millis(1500)));
        for bad in ["0", "x", "-1", "0.01", "1h"] {
            assert!(parse_interval(bad).is_err(), "{bad}");
        }
    }
}
