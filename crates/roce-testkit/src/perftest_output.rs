//! Reading what perftest-style programs (perftest itself, `roce perf`) print. Shared by the
//! root tests (`roce perf`) and roce-verbs' (perftest on `libroce_verbs.so`).

/// The numbers of the result line under perftest's `header`.
pub fn result_row(stdout: &str, header: &str) -> Vec<f64> {
    let mut lines = stdout.lines();
    lines
        .by_ref()
        .find(|l| l.trim_start().starts_with(header))
        .unwrap_or_else(|| panic!("no {header:?} header in:\n{stdout}"));
    let row = lines.next().unwrap_or_default();
    row.split_whitespace()
        .map(|c| {
            c.parse()
                .unwrap_or_else(|_| panic!("not a number {c:?} in {row:?}"))
        })
        .collect()
}
