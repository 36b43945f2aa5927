//! Reading the simulator's input files within bounds: line by line with a longest line, or
//! whole up to a size, and as text. `/dev/zero` fails at its first line (too long),
//! `/dev/urandom` at its first line that is not UTF-8, a file that never ends at its size
//! limit: each with one error naming the file and the line, after a bounded read.
//!
//! What a line means is the readers' business ([`crate::hpcc`], [`crate::flows::traffic`]).

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

/// Why a file could not be read within its bounds.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// The file could not be opened or read.
    #[error("reading {file}: {source}")]
    Io {
        /// The file.
        file: String,
        /// Why.
        source: std::io::Error,
    },
    /// A line longer than the format has.
    #[error("{file}:{line}: the line is longer than {max} bytes")]
    LineTooLong {
        /// The file.
        file: String,
        /// 1-based line number.
        line: usize,
        /// The longest line allowed.
        max: usize,
    },
    /// Bytes that are not text (a binary file).
    #[error("{file}:{line}: not text (a NUL byte, or bytes that are not UTF-8)")]
    NotText {
        /// The file.
        file: String,
        /// 1-based line number.
        line: usize,
    },
    /// A file longer than the format has.
    #[error("{file}: more than {max} bytes")]
    TooBig {
        /// The file.
        file: String,
        /// The most allowed.
        max: u64,
    },
}

/// Opens `path` for reading, the error naming it.
pub fn open(path: &Path) -> Result<BufReader<File>, InputError> {
    File::open(path)
        .map(BufReader::new)
        .map_err(|source| InputError::Io {
            file: path.display().to_string(),
            source,
        })
}

/// Reads the text at `path`, at most `max_bytes` of it. Bytes that are not UTF-8 text, or
/// NUL (which no text format we read has), end the read where they are found.
pub fn read_text(path: &Path, max_bytes: u64) -> Result<String, InputError> {
    let file = path.display().to_string();
    let io = |source| InputError::Io {
        file: file.clone(),
        source,
    };
    let mut src = open(path)?.take(max_bytes.saturating_add(1));
    let mut bytes = Vec::new();
    // Bytes before this are checked text.
    let mut checked = 0;
    loop {
        let buf = src.fill_buf().map_err(io)?;
        if buf.is_empty() {
            break;
        }
        let n = buf.len();
        bytes.extend_from_slice(buf);
        src.consume(n);
        let fresh = &bytes[checked..];
        let good = match std::str::from_utf8(fresh) {
            Ok(_) => fresh.len(),
            // A character cut at the end of this read is finished by the next.
            Err(e) if e.error_len().is_none() => e.valid_up_to(),
            Err(e) => return Err(not_text(&file, &bytes[..checked + e.valid_up_to()])),
        };
        if let Some(nul) = fresh[..good].iter().position(|&b| b == 0) {
            return Err(not_text(&file, &bytes[..checked + nul]));
        }
        checked += good;
    }
    if bytes.len() as u64 > max_bytes {
        return Err(InputError::TooBig {
            file,
            max: max_bytes,
        });
    }
    if checked < bytes.len() {
        return Err(not_text(&file, &bytes[..checked]));
    }
    String::from_utf8(bytes)
        .map_err(|e| not_text(&file, &e.as_bytes()[..e.utf8_error().valid_up_to()]))
}

/// Not text, after the text `good`: the error names the line it is on.
fn not_text(file: &str, good: &[u8]) -> InputError {
    let line = 1 + good.iter().filter(|&&b| b == b'\n').count();
    InputError::NotText {
        file: file.to_owned(),
        line,
    }
}

/// The lines of one file, each at most `max_line` bytes (without its `\n` or `\r\n`), the
/// whole at most `max_bytes`.
pub struct Lines<R> {
    file: String,
    src: R,
    max_line: usize,
    max_bytes: u64,
    read: u64,
    number: usize,
    buf: Vec<u8>,
}

impl<R: BufRead> Lines<R> {
    /// The lines of `src` (the file named `file`), each at most `max_line` bytes.
    pub fn new(file: impl Into<String>, src: R, max_line: usize) -> Self {
        Lines {
            file: file.into(),
            src,
            max_line,
            max_bytes: u64::MAX,
            read: 0,
            number: 0,
            buf: Vec::new(),
        }
    }

    /// The same lines behind a `dyn BufRead` (for readers that take any source).
    pub fn boxed<'a>(self) -> Lines<Box<dyn BufRead + 'a>>
    where
        R: 'a,
    {
        Lines {
            file: self.file,
            src: Box::new(self.src),
            max_line: self.max_line,
            max_bytes: self.max_bytes,
            read: self.read,
            number: self.number,
            buf: self.buf,
        }
    }

    /// Also at most `max_bytes` in all.
    pub fn with_max_bytes(mut self, max_bytes: u64) -> Self {
        self.max_bytes = max_bytes;
        self
    }

    /// The file's name.
    pub fn file(&self) -> &str {
        &self.file
    }

    /// Lines read so far.
    pub fn count(&self) -> usize {
        self.number
    }

    /// The next line and its number, `None` at the end.
    pub fn next_line(&mut self) -> Result<Option<(usize, &str)>, InputError> {
        self.buf.clear();
        // Room for the line, its "\r\n", and one byte more to tell a long line.
        let limit = (self.max_line as u64).saturating_add(3);
        let n = (&mut self.src)
            .take(limit)
            .read_until(b'\n', &mut self.buf)
            .map_err(|source| InputError::Io {
                file: self.file.clone(),
                source,
            })?;
        if n == 0 {
            return Ok(None);
        }
        self.number += 1;
        self.read = self.read.saturating_add(n as u64);
        if self.read > self.max_bytes {
            return Err(InputError::TooBig {
                file: self.file.clone(),
                max: self.max_bytes,
            });
        }
        let mut line = &self.buf[..];
        if let Some(l) = line.strip_suffix(b"\n") {
            line = l.strip_suffix(b"\r").unwrap_or(l);
        }
        if line.len() > self.max_line {
            return Err(InputError::LineTooLong {
                file: self.file.clone(),
                line: self.number,
                max: self.max_line,
            });
        }
        match std::str::from_utf8(line) {
            Ok(s) => Ok(Some((self.number, s))),
            Err(_) => Err(InputError::NotText {
                file: self.file.clone(),
                line: self.number,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(text: &[u8], max_line: usize) -> Result<Vec<(usize, String)>, String> {
        let mut l = Lines::new("f.txt", text, max_line);
        let mut out = Vec::new();
        while let Some((n, s)) = l.next_line().map_err(|e| e.to_string())? {
            out.push((n, s.to_owned()));
        }
        Ok(out)
    }

    #[test]
    fn lines_end_at_lf_or_crlf_and_are_bounded() {
        let want = |v: &[(usize, &str)]| -> Vec<(usize, String)> {
            v.iter().map(|&(n, s)| (n, s.to_owned())).collect()
        };
        assert_eq!(
            all(b"ab\r\ncd\n\nef", 4),
            Ok(want(&[(1, "ab"), (2, "cd"), (3, ""), (4, "ef")]))
        );
        assert_eq!(all(b"abcd\r\n", 4), Ok(want(&[(1, "abcd")])));
        assert_eq!(
            all(b"ab\nabcde\n", 4),
            Err("f.txt:2: the line is longer than 4 bytes".into())
        );
        assert_eq!(
            all(&[0u8; 1 << 20], 4096),
            Err("f.txt:1: the line is longer than 4096 bytes".into())
        );
        assert_eq!(
            all(b"1 2\n\xff\xfe\n", 4096),
            Err("f.txt:2: not text (a NUL byte, or bytes that are not UTF-8)".into())
        );
        let mut l = Lines::new("f.txt", &b"1\n2\n3\n"[..], 10).with_max_bytes(4);
        assert!(l.next_line().is_ok());
        assert!(l.next_line().is_ok());
        assert_eq!(
            l.next_line().unwrap_err().to_string(),
            "f.txt: more than 4 bytes"
        );
    }

    #[test]
    fn devices_that_never_end_fail_fast_with_one_line() {
        let zero = Path::new("/dev/zero");
        let e = read_text(zero, 1 << 20).unwrap_err().to_string();
        assert_eq!(
            e,
            "/dev/zero:1: not text (a NUL byte, or bytes that are not UTF-8)"
        );
        let mut l = Lines::new("/dev/zero", open(zero).unwrap(), 4096);
        assert_eq!(
            l.next_line().unwrap_err().to_string(),
            "/dev/zero:1: the line is longer than 4096 bytes"
        );
    }
}
