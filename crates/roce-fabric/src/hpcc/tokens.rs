//! Whitespace-separated tokens with their line numbers: the HPCC simulator reads its files
//! with `std::istream >>`, so values may wrap lines; errors still name the line. Lines are
//! read as the tokens are taken (a flow file's trailing description is never read), each
//! within its file's bounds ([`crate::limits::input::Lines`]).

use std::io::BufRead;

use super::HpccError;
use crate::limits::bounds::excerpt;
use crate::limits::input::Lines;

/// A cursor over the tokens of one file.
pub(crate) struct Tokens<'a> {
    lines: Lines<Box<dyn BufRead + 'a>>,
    /// The line being read, its number, and where its next token starts at the earliest.
    line: String,
    line_no: usize,
    pos: usize,
    eof: bool,
}

impl<'a> Tokens<'a> {
    /// The tokens of `text` (of the file named `file`), lines of any length.
    pub(crate) fn of_text(file: &str, text: &'a str) -> Self {
        Tokens::new(Lines::new(file, text.as_bytes(), usize::MAX))
    }

    /// The tokens of `lines`.
    pub(crate) fn new(lines: Lines<impl BufRead + 'a>) -> Self {
        Tokens {
            lines: lines.boxed(),
            line: String::new(),
            line_no: 0,
            pos: 0,
            eof: false,
        }
    }

    /// The next token's line and byte range in `self.line`, reading lines as needed; `None`
    /// at the end of the file.
    fn peek(&mut self) -> Result<Option<(usize, usize, usize)>, HpccError> {
        loop {
            let rest = self.line.get(self.pos..).unwrap_or_default();
            if let Some(off) = rest.find(|c: char| !c.is_whitespace()) {
                let start = self.pos + off;
                let tail = self.line.get(start..).unwrap_or_default();
                let end = start + tail.find(char::is_whitespace).unwrap_or(tail.len());
                self.pos = start;
                return Ok(Some((self.line_no, start, end)));
            }
            self.line.clear();
            self.pos = 0;
            if self.eof {
                return Ok(None);
            }
            match self.lines.next_line()? {
                Some((n, text)) => {
                    self.line.push_str(text);
                    self.line_no = n;
                }
                None => self.eof = true,
            }
        }
    }

    /// The next token and its line, taken, if any.
    pub(crate) fn next_owned(&mut self) -> Result<Option<(usize, String)>, HpccError> {
        let Some((line, start, end)) = self.peek()? else {
            return Ok(None);
        };
        let tok = self.line.get(start..end).unwrap_or_default().to_owned();
        self.pos = end;
        Ok(Some((line, tok)))
    }

    /// The line of the next token (or the last line at the end).
    pub(crate) fn line(&mut self) -> Result<usize, HpccError> {
        Ok(match self.peek()? {
            Some((line, ..)) => line,
            None => self.lines.count().max(1),
        })
    }

    /// The file's name.
    pub(crate) fn file(&self) -> &str {
        self.lines.file()
    }

    /// An error at `line`.
    pub(crate) fn error(&self, line: usize, msg: impl Into<String>) -> HpccError {
        HpccError::Malformed {
            file: self.lines.file().to_owned(),
            line,
            msg: msg.into(),
        }
    }

    /// The next token parsed by `parse`, `what` naming it in errors.
    pub(crate) fn value<T>(
        &mut self,
        what: &str,
        parse: impl FnOnce(&str) -> Option<T>,
    ) -> Result<(usize, T), HpccError> {
        let Some((line, start, end)) = self.peek()? else {
            let line = self.line()?;
            return Err(self.error(line, format!("file ends where {what} was expected")));
        };
        let tok = self.line.get(start..end).unwrap_or_default();
        match parse(tok) {
            Some(v) => {
                self.pos = end;
                Ok((line, v))
            }
            None => Err(self.error(line, format!("{} is not {what}", excerpt(tok)))),
        }
    }

    /// The next token as a number (`what` naming it in errors).
    pub(crate) fn num<T: std::str::FromStr>(&mut self, what: &str) -> Result<T, HpccError> {
        self.value(what, |t| t.parse().ok()).map(|(_, v)| v)
    }

    /// Whether a token is left.
    pub(crate) fn next_is_some(&mut self) -> Result<bool, HpccError> {
        Ok(self.peek()?.is_some())
    }
}
