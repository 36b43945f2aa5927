//! The RDMA operations a command can be asked to run (`--ops write,send,read`): one enum with
//! its names, parsing and display, shared by `roce demo` and `roce loopback`.
//!
//! Not here: how a command posts them (each command builds its own work requests).

use std::fmt;
use std::str::FromStr;

/// One kind of RC operation, by its command-line name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// RDMA WRITE (`write`).
    Write,
    /// RDMA READ (`read`).
    Read,
    /// SEND (`send`).
    Send,
    /// SEND with immediate (`send-imm`).
    SendImm,
    /// RDMA WRITE with immediate (`write-imm`).
    WriteImm,
    /// 8-byte atomic (`atomic`).
    Atomic,
}

impl Op {
    /// Every operation, in the order the names are listed.
    pub const ALL: [Op; 6] = [
        Op::Write,
        Op::Read,
        Op::Send,
        Op::SendImm,
        Op::WriteImm,
        Op::Atomic,
    ];

    /// The command-line name (`write`, `send-imm`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Op::Write => "write",
            Op::Read => "read",
            Op::Send => "send",
            Op::SendImm => "send-imm",
            Op::WriteImm => "write-imm",
            Op::Atomic => "atomic",
        }
    }

    /// Parses one name (surrounding blanks ignored) into any operation.
    pub fn parse(s: &str) -> anyhow::Result<Op> {
        Op::parse_among(s, &Op::ALL)
    }

    /// Parses one name, accepting only the operations in `allowed` (the error lists them).
    pub fn parse_among(s: &str, allowed: &[Op]) -> anyhow::Result<Op> {
        let t = s.trim();
        match allowed.iter().find(|o| o.name() == t) {
            Some(&op) => Ok(op),
            None => {
                let names: Vec<&str> = allowed.iter().map(|o| o.name()).collect();
                anyhow::bail!("unknown operation `{t}` (expected {})", names.join(", "))
            }
        }
    }

    /// The operation consumes a receive at the responder (SEND, SEND with immediate, WRITE with
    /// immediate).
    pub fn consumes_recv(self) -> bool {
        matches!(self, Op::Send | Op::SendImm | Op::WriteImm)
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Op {
    type Err = anyhow::Error;

    fn from_str(s: &str) -> anyhow::Result<Op> {
        Op::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::Op;

    #[test]
    fn every_name_parses_back_to_its_op() {
        for op in Op::ALL {
            assert_eq!(Op::parse(&format!(" {op} ")).ok(), Some(op));
        }
    }

    #[test]
    fn parse_among_refuses_other_ops_and_lists_the_allowed_ones() {
        let allowed = [Op::Write, Op::Send, Op::Read];
        let e = Op::parse_among("atomic", &allowed)
            .err()
            .map(|e| e.to_string());
        assert_eq!(
            e.as_deref(),
            Some("unknown operation `atomic` (expected write, send, read)")
        );
        assert_eq!(Op::parse_among("read", &allowed).ok(), Some(Op::Read));
    }
}
