//! `roce sim compare`: the grid of congestion controls × seeds is deterministic (the same table on
//! one thread and on several), each of its runs equals the single `roce sim run` with the same
//! overrides, swept parameters become variants, failed runs make it exit non-zero, and `--out`
//! leaves the table, the per-run CSV, every run's files and the overlay plots.

use std::process::{Command, Output};

use serde_json::Value;

use crate::support::scenario_files;

use scenario_files::{INCAST as SCENARIO, RETRIES_EXHAUSTED as FAILING};

fn roce(args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_roce"))
        .args(args)
        .output()
        .expect("run roce");
    println!("roce {}", args.join(" "));
    println!("stderr: {}", String::from_utf8_lossy(&out.stderr));
    out
}

fn json(out: &Output) -> Value {
    assert!(out.status.success(), "exit {:?}", out.status);
    serde_json::from_slice(&out.stdout).expect("JSON on stdout")
}

#[test]
fn three_variants_two_seeds_give_the_same_table_twice_and_match_the_single_runs() {
    let grid = |threads: &str| {
        json(&roce(&[
            "sim",
            "compare",
            SCENARIO,
            "--cc",
            "none,dcqcn-mlx,dctcp",
            "--seeds",
            "2",
            "--set",
            "duration_us=150",
            "--threads",
            threads,
            "--json",
        ]))
    };
    let one = grid("1");
    let two = grid("3");
    assert_eq!(one, two, "the grid depends on the thread count");
    let rows = one["rows"].as_array().expect("rows");
    let labels: Vec<&str> = rows
        .iter()
        .map(|r| r["variant"]["cc"].as_str().expect("cc"))
        .collect();
    assert_eq!(labels, ["none", "dcqcn-mlx", "dctcp"]);
    let runs = one["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 6);
    for run in runs {
        let cc = run["variant"].as_str().expect("variant");
        let seed = run["seed"].as_u64().expect("seed").to_string();
        let single = json(&roce(&[
            "sim",
            "run",
            SCENARIO,
            "--cc",
            cc,
            "--seed",
            &seed,
            "--set",
            "duration_us=150",
            "--json",
        ]));
        assert_eq!(run["summary"], single, "{cc} seed {seed}");
    }
    // The row's mean is the mean of its runs.
    for (v, row) in rows.iter().enumerate() {
        let goodput = |r: &Value| {
            r["summary"]["total_goodput_gbps"]
                .as_f64()
                .expect("goodput")
        };
        let mean = (goodput(&runs[2 * v]) + goodput(&runs[2 * v + 1])) / 2.0;
        let got = row["metrics"]
            .as_array()
            .and_then(|m| m.iter().find(|m| m[0] == "goodput_gbps"))
            .map(|m| m[1]["mean"].as_f64().expect("mean"))
            .expect("goodput row");
        assert!((got - mean).abs() < 1e-9, "{got} != {mean}");
    }
}

#[test]
fn swept_parameters_are_variants_and_out_leaves_the_tables_runs_and_plots() {
    let dir = std::env::temp_dir().join(format!("roce-compare-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let out = roce(&[
        "sim",
        "compare",
        SCENARIO,
        "--cc",
        "dcqcn-mlx",
        "--set",
        "duration_us=100",
        "--param",
        "switch.ecn.kmin_bytes=5000,50000",
        "--param",
        "cc.rpg_ai_rate=5,40",
        "--out",
        dir.to_str().expect("utf-8 path"),
    ]);
    assert!(out.status.success());
    let table = String::from_utf8_lossy(&out.stdout);
    let variants: Vec<&str> = table
        .lines()
        .skip(1)
        .map(|l| l.split("  ").next().unwrap_or(""))
        .collect();
    assert_eq!(
        variants,
        [
            "dcqcn-mlx switch.ecn.kmin_bytes=5000 cc.rpg_ai_rate=5",
            "dcqcn-mlx switch.ecn.kmin_bytes=5000 cc.rpg_ai_rate=40",
            "dcqcn-mlx switch.ecn.kmin_bytes=50000 cc.rpg_ai_rate=5",
            "dcqcn-mlx switch.ecn.kmin_bytes=50000 cc.rpg_ai_rate=40",
        ]
    );
    for f in [
        "compare.txt",
        "compare.json",
        "runs.csv",
        "goodput.svg",
        "queue.svg",
    ] {
        assert!(dir.join(f).is_file(), "{f} missing");
    }
    let csv = std::fs::read_to_string(dir.join("runs.csv")).expect("runs.csv");
    assert_eq!(csv.lines().count(), 5, "{csv}");
    let run = dir.join("runs/dcqcn-mlx_switch.ecn.kmin_bytes_5000_cc.rpg_ai_rate_40-seed1");
    let scenario = std::fs::read_to_string(run.join("scenario.toml")).expect("run's scenario");
    assert!(scenario.contains("kmin_bytes = 5000"), "{scenario}");
    assert!(scenario.contains("rpg_ai_rate=40"), "{scenario}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn failed_runs_make_compare_exit_non_zero_naming_them_and_bad_settings_say_why() {
    let out = roce(&["sim", "compare", FAILING, "--cc", "none"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("1 of 1 runs had failed or stalled flows: none seed"),
        "{err}"
    );
    assert!(!out.stdout.is_empty(), "the table is still printed");
    assert!(roce(&["sim", "compare", FAILING, "--allow-failures"])
        .status
        .success());

    let out = roce(&["sim", "compare", SCENARIO, "--set", "name.x=1"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim(), "roce: name.x: name is not a table of settings");
    let out = roce(&["sim", "run", SCENARIO, "--set", "switch.ecn.pmax"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("is not PATH=VALUE"), "{err}");
}

/// With finite flows (the FB_Hadoop fat tree), the table adds the FCT slowdown percentiles over
/// each run's finished flows, and they are the single run's.
#[test]
fn finite_flows_add_the_slowdown_percentiles_of_each_run() {
    let scenario = scenario_files::FAT_TREE_FB_HADOOP;
    let grid = json(&roce(&[
        "sim",
        "compare",
        scenario,
        "--cc",
        "dcqcn-mlx,dctcp",
        "--json",
    ]));
    let rows = grid["rows"].as_array().expect("rows");
    let names: Vec<&str> = rows[0]["metrics"]
        .as_array()
        .expect("metrics")
        .iter()
        .filter_map(|m| m[0].as_str())
        .collect();
    assert_eq!(
        &names[names.len() - 3..],
        ["slowdown_p50", "slowdown_p95", "slowdown_p99"]
    );
    for (row, run) in rows.iter().zip(grid["runs"].as_array().expect("runs")) {
        let fct = &run["summary"]["fct"];
        let mut slowdowns: Vec<f64> = fct["flows"]
            .as_array()
            .expect("fct flows")
            .iter()
            .map(|f| f["slowdown"].as_f64().expect("slowdown").max(1.0))
            .collect();
        slowdowns.sort_by(f64::total_cmp);
        // fct_analysis.py's percentile: the element at int(n * p).
        let pctl =
            |p: f64| slowdowns[((slowdowns.len() as f64 * p) as usize).min(slowdowns.len() - 1)];
        let metric = |name: &str| {
            row["metrics"]
                .as_array()
                .and_then(|m| m.iter().find(|m| m[0] == name))
                .map(|m| m[1]["mean"].as_f64().expect("mean"))
                .expect("metric")
        };
        assert_eq!(metric("slowdown_p50"), pctl(0.5), "{}", row["variant"]);
        assert_eq!(metric("slowdown_p99"), pctl(0.99), "{}", row["variant"]);
        assert!(metric("slowdown_p50") >= 1.0);
    }
}

#[test]
fn a_controller_parameter_sweep_skips_controllers_without_it_and_says_when_it_changed_nothing() {
    // 200 us of incast end before DCQCN's first rate increase, so its additive step cannot
    // matter: the sweep must say so, and `none` must run once, not once per value.
    let out = roce(&[
        "sim",
        "compare",
        SCENARIO,
        "--cc",
        "dcqcn-mlx,none",
        "--param",
        "cc.rpg_ai_rate=5,40",
        "--set",
        "duration_us=200",
        "--json",
    ]);
    let doc = json(&out);
    let labels: Vec<&str> = doc["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .filter_map(|r| r["variant"]["params"][0].as_str())
        .collect();
    assert_eq!(
        labels,
        [
            "cc.rpg_ai_rate=5",
            "cc.rpg_ai_rate=40",
            "cc.rpg_ai_rate=n/a"
        ]
    );
    assert_eq!(doc["inert_sweeps"], serde_json::json!(["cc.rpg_ai_rate"]));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("note: cc.rpg_ai_rate changed nothing"),
        "{stderr}"
    );
}
