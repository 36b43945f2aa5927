//! The CLI's one output path. A command writes its results to the `&mut dyn Write` it is
//! handed: stdout, locked and buffered here for the whole command and flushed when it ends
//! ([`stdout`]); a command whose lines should show as they come (a perftest run's sizes, a
//! peer's completions) wraps it in [`Live`]. JSON is written by [`write_json`], one way for every
//! command. What is said beside the results (a warning, the counters after a run, a status line)
//! goes to stderr through [`note`], and an error ends the command as one line through [`error`].
//!
//! Nothing else in the CLI prints. Not here: the progress bar (indicatif draws it on stderr,
//! [`super::progress`]).

use std::fmt::Display;
use std::io::{self, BufWriter, StdoutLock, Write};

use serde::Serialize;

/// Stdout for the run of a command: locked once and buffered (the caller flushes it at the end).
pub fn stdout() -> BufWriter<StdoutLock<'static>> {
    BufWriter::new(io::stdout().lock())
}

/// A writer that flushes after every line it passes on, for output a person (or a script)
/// watches while the command runs.
#[cfg_attr(not(feature = "dpdk"), allow(dead_code))]
pub struct Live<'a>(pub &'a mut dyn Write);

impl Write for Live<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.0.write(buf)?;
        if buf.get(..n).is_some_and(|b| b.contains(&b'\n')) {
            self.0.flush()?;
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

/// How [`write_json`] lays a value out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Json {
    /// On one line: one of JSON lines (a frame of `pcap check`), a list of points.
    Line,
    /// Indented over several lines: a summary, a parameter set.
    Pretty,
}

/// Writes `value` as JSON laid out as `style`, then a newline.
pub fn write_json<T: Serialize + ?Sized>(
    out: &mut dyn Write,
    value: &T,
    style: Json,
) -> io::Result<()> {
    match style {
        Json::Line => serde_json::to_writer(&mut *out, value)?,
        Json::Pretty => serde_json::to_writer_pretty(&mut *out, value)?,
    }
    out.write_all(b"\n")
}

/// One line on stderr beside the results. A closed stderr is no reason to stop a run.
pub fn note(line: impl Display) {
    let _ = writeln!(io::stderr().lock(), "{line}");
}

/// How a failed command ends: `roce: MESSAGE` on stderr.
pub fn error(message: impl Display) {
    note(format_args!("roce: {message}"));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct Point {
        t_us: f64,
        name: &'static str,
    }

    #[test]
    fn json_is_one_line_or_indented_and_always_ends_the_line() {
        let p = Point {
            t_us: 1.5,
            name: "a",
        };
        let mut line = Vec::new();
        write_json(&mut line, &[&p, &p], Json::Line).unwrap();
        assert_eq!(
            String::from_utf8(line).unwrap(),
            "[{\"t_us\":1.5,\"name\":\"a\"},{\"t_us\":1.5,\"name\":\"a\"}]\n"
        );
        let mut pretty = Vec::new();
        write_json(&mut pretty, &p, Json::Pretty).unwrap();
        assert_eq!(
            String::from_utf8(pretty).unwrap(),
            "{\n  \"t_us\": 1.5,\n  \"name\": \"a\"\n}\n"
        );
    }

    /// A writer that records what reached it and when it was flushed.
    #[derive(Default)]
    struct Recorder {
        written: Vec<u8>,
        flushed_at: Vec<usize>,
    }

    impl Write for Recorder {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.written.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            self.flushed_at.push(self.written.len());
            Ok(())
        }
    }

    #[test]
    fn live_output_is_flushed_at_every_line_end() {
        let mut r = Recorder::default();
        {
            let mut live = Live(&mut r);
            write!(live, "size ").unwrap();
            writeln!(live, "64").unwrap();
            writeln!(live, "128").unwrap();
        }
        assert_eq!(r.written, b"size 64\n128\n");
        assert_eq!(r.flushed_at, [8, 12]);
    }
}
