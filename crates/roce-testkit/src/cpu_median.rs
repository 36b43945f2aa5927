//! Thread-CPU-time medians for the benches: preemption on a shared machine does not count
//! (cache and SMT interference still do).

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

/// A subject timed in alternation with its baseline: medians of each (ns per call, thread CPU
/// time) and the median of the per-run ratios, which cancels the slow drifts of a shared machine
/// (a neighbour's load, frequency changes) that separate medians keep.
#[derive(Clone, Copy, Debug)]
pub struct Paired {
    /// The subject's median, ns per call.
    pub subject_ns: f64,
    /// The baseline's median, ns per call.
    pub baseline_ns: f64,
    /// The median of the per-run ratios subject / baseline.
    pub ratio: f64,
}

/// Runs `subject` and `baseline` `runs` times each, alternately, `iters` calls per run.
pub fn cpu_paired(
    runs: usize,
    iters: u32,
    mut subject: impl FnMut(),
    mut baseline: impl FnMut(),
) -> Paired {
    let time = |f: &mut dyn FnMut()| {
        let t = cpu_time::ThreadTime::now();
        for _ in 0..iters {
            f();
        }
        t.elapsed().as_nanos() as f64 / f64::from(iters)
    };
    let mut s = Vec::with_capacity(runs);
    let mut b = Vec::with_capacity(runs);
    let mut r = Vec::with_capacity(runs);
    for _ in 0..runs {
        let sn = time(&mut subject);
        let bn = time(&mut baseline);
        s.push(sn);
        b.push(bn);
        r.push(sn / bn);
    }
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    Paired {
        subject_ns: median(s),
        baseline_ns: median(b),
        ratio: median(r),
    }
}
