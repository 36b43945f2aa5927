//! Whitespace-separated tokens with their line numbers: the HPCC simulator reads its files
//! with `std::istream >>`, so values may wrap lines; errors still name the line.

use super::HpccError;

/// A cursor over the tokens of one file.
pub(crate) struct Tokens<'a> {
    file: &'a str,
    toks: Vec<(usize, &'a str)>,
    pos: usize,
    last_line: usize,
}

impl<'a> Tokens<'a> {
    /// Splits `text` (of the file named `file`).
    pub(crate) fn new(file: &'a str, text: &'a str) -> Self {
        let toks: Vec<(usize, &str)> = text
            .lines()
            .enumerate()
            .flat_map(|(i, l)| l.split_whitespace().map(move |t| (i + 1, t)))
            .collect();
        Tokens {
            file,
            toks,
            pos: 0,
            last_line: text.lines().count().max(1),
        }
    }

    /// The next token and its line, if any.
    pub(crate) fn next(&mut self) -> Option<(usize, &'a str)> {
        let t = self.toks.get(self.pos).copied();
        if t.is_some() {
            self.pos += 1;
        }
        t
    }

    /// The line of the next token (or the last line at the end).
    pub(crate) fn line(&self) -> usize {
        self.toks.get(self.pos).map_or(self.last_line, |t| t.0)
    }

    /// An error at `line`.
    pub(crate) fn error(&self, line: usize, msg: impl Into<String>) -> HpccError {
        HpccError::Malformed {
            file: self.file.to_owned(),
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
        let line = self.line();
        let Some((line, tok)) = self.next() else {
            return Err(self.error(line, format!("file ends where {what} was expected")));
        };
        parse(tok)
            .map(|v| (line, v))
            .ok_or_else(|| self.error(line, format!("{tok:?} is not {what}")))
    }

    /// The next token as a number (`what` naming it in errors).
    pub(crate) fn num<T: std::str::FromStr>(&mut self, what: &str) -> Result<T, HpccError> {
        self.value(what, |t| t.parse().ok()).map(|(_, v)| v)
    }
}

impl Tokens<'_> {
    /// Whether a token is left.
    pub(crate) fn next_is_some(&self) -> bool {
        self.pos < self.toks.len()
    }
}
