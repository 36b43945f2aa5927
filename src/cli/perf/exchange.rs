//! roce's own exchange between two `roce perf` sides (`--peer-format roce`): JSON lines over the
//! out-of-band TCP connection, each one checked against our bounds when it arrives; what we
//! refuse is said to the peer in a refusal line first, so both sides end with the same one line.
//! Not here: the lines' types ([`roce::oob::perf`]), perftest's binary exchange
//! ([`super::perftest`]).

use anyhow::bail;
use serde::de::DeserializeOwned;
use serde::Serialize;

use roce::oob::perf::{decode_line, refusal_line, Hello};
use roce::oob::DecodeError;

use crate::cli::session::{Ask, Oob, Req};

/// The parameters both sides run with: the client sends its own, the server checks them (same
/// test, within its bounds) and answers with the agreed ones (the smaller MTU; selective repeat
/// only when both sides asked for it).
pub(super) fn agree(
    s: &mut impl Ask,
    oob: &Oob,
    is_client: bool,
    hello: Hello,
    max_memory: u64,
) -> anyhow::Result<Hello> {
    let test = hello.test;
    if is_client {
        let line = json_line(&hello)?;
        s.ask(oob, Req::Send("send parameters", line))?;
        let theirs: Hello =
            recv_checked(s, oob, ("read parameters", "parameters"), |t: &Hello| {
                t.check(max_memory).map_err(|e| e.to_string())
            })?;
        return Ok(Hello {
            mtu: theirs.mtu.min(hello.mtu),
            selective_repeat: hello.selective_repeat && theirs.selective_repeat,
            ..hello
        });
    }
    let theirs: Hello = recv_checked(s, oob, ("read parameters", "parameters"), |t: &Hello| {
        if t.test != test {
            return Err(format!(
                "\"test\" {}: this server runs {}: start both with the same test",
                t.test.name(),
                test.name()
            ));
        }
        t.check(max_memory).map_err(|e| e.to_string())
    })?;
    let agreed = Hello {
        mtu: theirs.mtu.min(hello.mtu),
        selective_repeat: theirs.selective_repeat && hello.selective_repeat,
        ..theirs
    };
    s.ask(oob, Req::Send("send parameters", json_line(&agreed)?))?;
    Ok(agreed)
}

/// `v` as one JSON line, newline included.
pub(super) fn json_line<T: Serialize>(v: &T) -> anyhow::Result<Vec<u8>> {
    let mut line = serde_json::to_vec(v)?;
    line.push(b'\n');
    Ok(line)
}

/// Reads the peer's next line as `T` and holds it to `check`; whatever we refuse (a line that
/// is not roce's, a value out of bounds) is said to the peer in a refusal line before we give
/// up, so both sides end with the same one line.
pub(super) fn recv_checked<T: DeserializeOwned>(
    s: &mut impl Ask,
    oob: &Oob,
    (step, what): (&'static str, &'static str),
    check: impl FnOnce(&T) -> Result<(), String>,
) -> anyhow::Result<T> {
    let line = s.ask(oob, Req::RecvLine(step))?;
    decode_checked(s, oob, what, &line, check)
}

/// [`recv_checked`] for a line already read.
pub(super) fn decode_checked<T: DeserializeOwned>(
    s: &mut impl Ask,
    oob: &Oob,
    what: &'static str,
    line: &[u8],
    check: impl FnOnce(&T) -> Result<(), String>,
) -> anyhow::Result<T> {
    let problem = match decode_line::<T>(what, line) {
        Ok(v) => match check(&v) {
            Ok(()) => return Ok(v),
            Err(why) => format!("the {}'s {what}: {why}", oob.peer()),
        },
        // The peer gave up first and said why: nothing to tell it.
        Err(e @ DecodeError::Refused { .. }) => bail!("{e}"),
        Err(e) => format!("the {}'s {e}", oob.peer()),
    };
    // Best effort: the peer may be gone already.
    let _ = s.ask(oob, Req::Send("send refusal", refusal_line(&problem)));
    bail!("{problem}")
}

/// Client sends first, server answers: both get the other's `mine`, as many as ours.
pub(super) fn swap<T: Serialize + DeserializeOwned>(
    s: &mut impl Ask,
    oob: &Oob,
    is_client: bool,
    mine: &[T],
    what: &'static str,
) -> anyhow::Result<Vec<T>> {
    let line = json_line(&mine)?;
    if is_client {
        s.ask(oob, Req::Send(what, line.clone()))?;
    }
    let theirs = recv_checked(s, oob, (what, what), |t: &Vec<T>| {
        if t.len() == mine.len() {
            Ok(())
        } else {
            Err(format!("{} entries, we have {}", t.len(), mine.len()))
        }
    })?;
    if !is_client {
        s.ask(oob, Req::Send(what, line))?;
    }
    Ok(theirs)
}
