//! A comparison's rows as a text table (for the terminal) and as CSV (for plotting and papers).

use std::borrow::Cow;
use std::fmt::Write as _;

use super::{Row, Stat};

/// The rows as a text table: per metric `mean ±sd (±ci95)`, the sample standard deviation and
/// the half-width of the 95% confidence interval of the mean over seeds (`(-)` where it is not
/// defined); with one run per variant a cell is the run's figure alone.
pub fn table(rows: &[Row]) -> String {
    let mut header = vec!["variant".to_owned(), "runs".to_owned()];
    if let Some(first) = rows.first() {
        header.extend(first.metrics.iter().map(|(n, _)| n.clone()));
    }
    let mut lines: Vec<Vec<String>> = vec![header];
    for r in rows {
        let mut cells = vec![r.variant.label(), r.runs.to_string()];
        cells.extend(r.metrics.iter().map(|(_, s)| {
            if r.runs > 1 {
                let ci = s
                    .ci95
                    .map_or_else(|| "-".to_owned(), |h| format!("±{}", num(h)));
                format!("{} ±{} ({ci})", num(s.mean), num(s.sd))
            } else {
                num(s.mean)
            }
        }));
        lines.push(cells);
    }
    let widths: Vec<usize> = (0..lines[0].len())
        .map(|c| {
            lines
                .iter()
                .map(|l| l[c].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for l in &lines {
        let cells: Vec<String> = l
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(i, (c, w))| {
                if i == 0 {
                    format!("{c:<w$}")
                } else {
                    format!("{c:>w$}")
                }
            })
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

fn num(x: f64) -> String {
    if x == x.trunc() && x.abs() < 1e12 {
        format!("{x:.0}")
    } else if x.abs() >= 100.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.3}")
    }
}

/// The columns of [`table_csv`] per metric, after the metric's name and `_`.
pub const CSV_STATS: [&str; 5] = ["mean", "sd", "ci95", "min", "max"];

/// The rows as CSV, one line per variant: `variant` (the label), `cc`, one column per swept
/// setting (named by its path, holding its value or `n/a`), `runs`, then per metric
/// `<metric>_mean`, `_sd`, `_ci95` (the half-width of the 95% confidence interval of the mean:
/// the interval is mean ± ci95), `_min` and `_max`. Figures are written in full precision; a
/// cell is empty where the figure is not defined (the interval of one run, a run without
/// finished flows). Fields holding a comma, quote or line break are quoted (RFC 4180).
pub fn table_csv(rows: &[Row]) -> String {
    let mut s = String::new();
    let Some(first) = rows.first() else {
        return s;
    };
    let mut header = vec!["variant".to_owned(), "cc".to_owned()];
    header.extend(
        first
            .variant
            .params
            .iter()
            .map(|p| p.split_once('=').map_or(p.as_str(), |(k, _)| k).to_owned()),
    );
    header.push("runs".to_owned());
    for (name, _) in &first.metrics {
        header.extend(CSV_STATS.iter().map(|st| format!("{name}_{st}")));
    }
    line(&mut s, header.iter().map(String::as_str));
    for r in rows {
        let mut cells = vec![r.variant.label(), r.variant.cc.clone()];
        cells.extend(
            r.variant
                .params
                .iter()
                .map(|p| p.split_once('=').map_or("", |(_, v)| v).to_owned()),
        );
        cells.push(r.runs.to_string());
        for (_, st) in &r.metrics {
            let Stat {
                mean,
                sd,
                min,
                max,
                ci95,
            } = *st;
            cells.extend([Some(mean), Some(sd), ci95, Some(min), Some(max)].map(figure));
        }
        line(&mut s, cells.iter().map(String::as_str));
    }
    s
}

/// A figure as a CSV cell: full precision, empty when undefined or not a number.
fn figure(x: Option<f64>) -> String {
    x.filter(|x| x.is_finite())
        .map_or_else(String::new, |x| x.to_string())
}

fn line<'a>(s: &mut String, cells: impl Iterator<Item = &'a str>) {
    let cells: Vec<Cow<str>> = cells.map(csv_field).collect();
    let _ = writeln!(s, "{}", cells.join(","));
}

/// `text` as one CSV field: as it is, or quoted with its quotes doubled when it holds a comma,
/// a quote or a line break (RFC 4180).
pub fn csv_field(text: &str) -> Cow<'_, str> {
    if text.contains([',', '"', '\n', '\r']) {
        Cow::Owned(format!("\"{}\"", text.replace('"', "\"\"")))
    } else {
        Cow::Borrowed(text)
    }
}

#[cfg(test)]
mod tests {
    use super::super::Variant;
    use super::*;

    fn row(params: &[&str], runs: usize, goodput: &[f64]) -> Row {
        Row {
            variant: Variant {
                cc: "dcqcn-mlx".into(),
                params: params.iter().map(|p| (*p).to_owned()).collect(),
            },
            runs,
            metrics: vec![
                ("goodput_gbps".into(), Stat::of(goodput)),
                ("slowdown_p50".into(), Stat::of(&[f64::NAN])),
            ],
        }
    }

    #[test]
    fn the_csv_has_a_column_per_sweep_and_five_per_metric() {
        let rows = [
            row(&["cc.rpg_ai_rate=5", "x.list=[1, 2]"], 3, &[1.0, 2.0, 6.0]),
            row(&["cc.rpg_ai_rate=n/a", "x.list=a\"b"], 1, &[4.0]),
        ];
        let csv = table_csv(&rows);
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(
            lines[0],
            "variant,cc,cc.rpg_ai_rate,x.list,runs,\
             goodput_gbps_mean,goodput_gbps_sd,goodput_gbps_ci95,goodput_gbps_min,goodput_gbps_max,\
             slowdown_p50_mean,slowdown_p50_sd,slowdown_p50_ci95,slowdown_p50_min,slowdown_p50_max"
        );
        // sd = sqrt(7), ci95 = t(0.975, 2) sqrt(7) / sqrt(3) = 4.302653 * 1.527525 = 6.572411.
        let st = Stat::of(&[1.0, 2.0, 6.0]);
        assert!((st.ci95.unwrap() - 6.572_411).abs() < 1e-5);
        assert_eq!(
            lines[1],
            format!(
                "\"dcqcn-mlx cc.rpg_ai_rate=5 x.list=[1, 2]\",dcqcn-mlx,5,\"[1, 2]\",3,3,{},{},1,6,,,,,",
                7f64.sqrt(),
                st.ci95.unwrap()
            )
        );
        // One run: no interval; a quote doubled inside a quoted field.
        assert_eq!(
            lines[2],
            "\"dcqcn-mlx cc.rpg_ai_rate=n/a x.list=a\"\"b\",dcqcn-mlx,n/a,\"a\"\"b\",1,4,0,,4,4,,,,,"
        );
        assert_eq!(lines.len(), 3);
        assert_eq!(table_csv(&[]), "");
    }

    #[test]
    fn the_text_table_shows_the_interval_only_where_it_is_defined() {
        let text = table(&[
            row(&[], 3, &[1.0, 2.0, 6.0]),
            row(&[], 1, &[4.0]),
            row(&[], 2, &[4.0, f64::NAN]),
        ]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0].split_whitespace().collect::<Vec<_>>(),
            ["variant", "runs", "goodput_gbps", "slowdown_p50"]
        );
        fn cells(l: &str) -> Vec<&str> {
            l.split("  ")
                .filter(|c| !c.is_empty())
                .map(str::trim)
                .collect()
        }
        assert_eq!(
            cells(lines[1]),
            ["dcqcn-mlx", "3", "3 ±2.646 (±6.572)", "NaN ±NaN (-)"]
        );
        assert_eq!(cells(lines[2]), ["dcqcn-mlx", "1", "4", "NaN"]);
        assert_eq!(
            cells(lines[3]),
            ["dcqcn-mlx", "2", "NaN ±NaN (-)", "NaN ±NaN (-)"]
        );
        // Columns line up: every line as wide as the header, in characters.
        let width = |l: &str| l.chars().count();
        assert!(lines.iter().all(|l| width(l) == width(lines[0])), "{text}");
    }
}
