//! What a finished `roce` process said: its one-line errors.

use std::process::Output;

/// The `roce:` lines of stderr (our errors; DPDK and warnings say other things).
pub fn error_lines(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.starts_with("roce: "))
        .map(str::to_owned)
        .collect()
}
