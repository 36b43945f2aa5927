//! The figures of one metric over a variant's runs: mean, sample standard deviation, extremes,
//! and the 95% confidence interval of the mean (Student's t over the seeds).

use serde::Serialize;
use statrs::distribution::{ContinuousCDF, StudentsT};

/// Mean and spread of one metric over a variant's runs.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Stat {
    /// Mean.
    pub mean: f64,
    /// Sample standard deviation (0 for one run; `NaN` where a run's figure is).
    pub sd: f64,
    /// Smallest.
    pub min: f64,
    /// Largest.
    pub max: f64,
    /// Half-width of the two-sided 95% confidence interval of the mean, `t(0.975, n-1) · sd /
    /// √n`: the interval is `mean ± ci95`. `None` (JSON `null`) for one run, where it is not
    /// defined, and where a run's figure is not a number.
    pub ci95: Option<f64>,
}

impl Stat {
    /// Of `xs` (not empty).
    pub fn of(xs: &[f64]) -> Stat {
        let n = xs.len().max(1) as f64;
        let mean = xs.iter().sum::<f64>() / n;
        let var = if xs.len() > 1 {
            xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)
        } else if mean.is_finite() {
            0.0
        } else {
            f64::NAN
        };
        let sd = var.sqrt();
        let ci95 = t975(xs.len().saturating_sub(1) as u64)
            .map(|t| t * sd / n.sqrt())
            .filter(|h| h.is_finite());
        Stat {
            mean,
            sd,
            min: xs.iter().copied().fold(f64::INFINITY, f64::min),
            max: xs.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            ci95,
        }
    }

    /// Lower end of the 95% confidence interval of the mean.
    pub fn ci95_lo(&self) -> Option<f64> {
        self.ci95.map(|h| self.mean - h)
    }

    /// Upper end of the 95% confidence interval of the mean.
    pub fn ci95_hi(&self) -> Option<f64> {
        self.ci95.map(|h| self.mean + h)
    }
}

/// The 0.975 quantile of Student's t with `df` degrees of freedom (the factor of a two-sided 95%
/// interval); `None` for `df = 0`.
pub fn t975(df: u64) -> Option<f64> {
    if df == 0 {
        return None;
    }
    StudentsT::new(0.0, 1.0, df as f64)
        .ok()
        .map(|t| t.inverse_cdf(0.975))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_t_quantile_matches_the_published_table() {
        // Two-sided 95% critical values of Student's t, as printed in the usual tables.
        for (df, want) in [
            (1, 12.706),
            (2, 4.303),
            (4, 2.776),
            (9, 2.262),
            (30, 2.042),
            (120, 1.980),
        ] {
            let got = t975(df).unwrap();
            assert!(
                (got - want).abs() < 5e-4,
                "t(0.975, {df}) = {got}, not {want}"
            );
        }
        // Towards the normal's 1.960 from above (a grid has at most 100 000 runs).
        let big = t975(10_000).unwrap();
        assert!((big - 1.960_201).abs() < 1e-5, "{big}");
        assert_eq!(t975(0), None);
    }

    #[test]
    fn stats_are_mean_sample_spread_and_the_t_interval() {
        let s = Stat::of(&[1.0, 2.0, 3.0, 6.0]);
        assert_eq!(s.mean, 3.0);
        let sd = (14.0f64 / 3.0).sqrt();
        assert!((s.sd - sd).abs() < 1e-12);
        assert_eq!((s.min, s.max), (1.0, 6.0));
        // n = 4: t(0.975, 3) = 3.182446..., half-width t · sd / 2.
        let h = s.ci95.unwrap();
        assert!((h - 3.182_446_305 * sd / 2.0).abs() < 1e-6, "{h}");
        assert_eq!(s.ci95_lo(), Some(3.0 - h));
        assert_eq!(s.ci95_hi(), Some(3.0 + h));
        // Three equal runs: an interval of width 0, defined.
        assert_eq!(Stat::of(&[2.5, 2.5, 2.5]).ci95, Some(0.0));
    }

    #[test]
    fn one_run_has_no_interval_and_a_missing_figure_none_either() {
        let one = Stat::of(&[4.0]);
        assert_eq!((one.mean, one.sd, one.ci95), (4.0, 0.0, None));
        assert_eq!((one.ci95_lo(), one.ci95_hi()), (None, None));
        let nan = Stat::of(&[1.0, f64::NAN, 3.0]);
        assert!(nan.mean.is_nan() && nan.sd.is_nan());
        assert!(Stat::of(&[f64::NAN]).sd.is_nan());
        assert_eq!(nan.ci95, None);
        assert_eq!(
            serde_json::to_value(one).unwrap()["ci95"],
            serde_json::Value::Null
        );
    }
}
