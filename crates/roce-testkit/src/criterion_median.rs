//! The medians criterion wrote in this run, for a bench's own summary (ratios, rates): the
//! bench calls [`mark_start`] first thing in `main`, then [`median_ns`] per case.

/// When this process started.
static STARTED: std::sync::OnceLock<std::time::SystemTime> = std::sync::OnceLock::new();

/// Notes the start of the run (estimates older than it are not this run's).
pub fn mark_start() {
    let _ = STARTED.set(std::time::SystemTime::now());
}

/// Median nanoseconds per iteration criterion measured for `group/function` in this run.
pub fn median_ns(group: &str, function: &str) -> Option<f64> {
    let path = crate::target_dir()
        .join("criterion")
        .join(group)
        .join(function)
        .join("new")
        .join("estimates.json");
    // Only estimates written by this process count (not a filtered-out row's older run).
    let written = std::fs::metadata(&path).ok()?.modified().ok()?;
    if written < *STARTED.get()? {
        return None;
    }
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()?;
    v["median"]["point_estimate"].as_f64()
}
