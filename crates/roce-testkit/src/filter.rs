//! The test-name filter of the `harness = false` test binaries (the DPDK ones: one EAL per
//! process, so they run their tests in sequence under a runner of their own), taking the words
//! `cargo test ... -- WORD` passes as libtest's filter does.

/// The command line's test filter: a test runs when no word is given (options aside) or its
/// name contains one of them.
pub fn name_filter() -> impl Fn(&str) -> bool {
    let words: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    move |name| words.is_empty() || words.iter().any(|w| name.contains(w.as_str()))
}
