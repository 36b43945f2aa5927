//! Thread-CPU-time medians for the benches: preemption on a shared machine does not count
//! (cache and SMT interference still do).
#![allow(dead_code)]

/// Median ns per call of `f` over `runs` runs of `iters` calls, in thread CPU time.
pub fn cpu_median_ns(runs: usize, iters: u32, mut f: impl FnMut()) -> f64 {
    let mut v: Vec<f64> = (0..runs)
        .map(|_| {
            let t = cpu_time::ThreadTime::now();
            for _ in 0..iters {
                f();
            }
            t.elapsed().as_nanos() as f64 / f64::from(iters)
        })
        .collect();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}
