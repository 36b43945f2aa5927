//! Property tests whose every run can be replayed: each run draws a fresh seed (so CI explores
//! new cases) unless an environment variable names one, and prints it before the cases run.

use proptest::test_runner::{Config, RngSeed};

/// `cases` cases from the seed in the variable `var`, or from the clock; prints
/// "`what` proptest seed S (replay: `var`=S)", no failure persistence files.
pub fn config(what: &str, var: &str, cases: u32) -> Config {
    let seed = std::env::var(var)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
        });
    println!("{what} proptest seed {seed} (replay: {var}={seed})");
    Config {
        cases,
        rng_seed: RngSeed::Fixed(seed),
        failure_persistence: None,
        ..Config::default()
    }
}
