//! `roce sim compare --shard I/N` and `--merge`: a grid split over three tasks and merged gives
//! the very table and run summaries of the grid run at once; shards that miss a run or come
//! from another grid are refused with one clear line.

use crate::support::cli_output;

use cli_output::{roce, scratch_dir};
use serde_json::Value;

use crate::support::scenario_files;

use scenario_files::INCAST as SCENARIO;

fn grid_args(duration: &str) -> Vec<&str> {
    vec![
        "sim",
        "compare",
        SCENARIO,
        "--cc",
        "none,dctcp",
        "--seeds",
        "2",
        "--set",
        duration,
        "--threads",
        "1",
    ]
}

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

#[test]
fn three_shards_merge_into_the_table_of_the_whole_grid() {
    let dir = scratch_dir("sim-shard");
    let mut whole = grid_args("duration_us=120");
    whole.push("--json");
    let (code, out, err) = roce(&whole);
    assert_eq!(code, 0, "{err}");
    let expected = json(&out);

    let shards: Vec<String> = (1..=3)
        .map(|i| dir.join(format!("task{i}")).display().to_string())
        .collect();
    for (i, shard_dir) in shards.iter().enumerate() {
        let spec = format!("{}/3", i + 1);
        let mut args = grid_args("duration_us=120");
        args.extend(["--shard", &spec, "--out", shard_dir]);
        let (code, out, err) = roce(&args);
        assert_eq!(code, 0, "{err}");
        // 4 runs round-robin over 3 tasks: 2, 1, 1.
        let want = if i == 0 { "2 of 4 runs" } else { "1 of 4 runs" };
        assert!(out.contains(want), "{out}");
    }
    let mut merge = vec!["sim", "compare", "--json", "--merge"];
    merge.extend(shards.iter().map(String::as_str));
    let (code, out, err) = roce(&merge);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        json(&out),
        expected,
        "merged shards differ from the whole grid"
    );

    // A missing shard: the runs it held are named.
    let (code, _, err) = roce(&["sim", "compare", "--merge", &shards[0], &shards[1]]);
    assert_eq!(code, 1);
    assert!(err.contains("hold 3 of 4 runs; missing runs: 2"), "{err}");
    // A shard of another grid (different flags).
    let other = dir.join("other").display().to_string();
    let mut args = grid_args("duration_us=100");
    args.extend(["--shard", "3/3", "--out", &other]);
    assert_eq!(roce(&args).0, 0);
    let (code, _, err) = roce(&["sim", "compare", "--merge", &shards[0], &shards[1], &other]);
    assert_eq!(code, 1);
    assert!(err.contains("a shard of another grid"), "{err}");
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_shard_specs_are_one_line_errors() {
    for (args, needle) in [
        (
            vec![
                "sim", "compare", SCENARIO, "--shard", "4/3", "--out", "/tmp/x",
            ],
            "is not I/N",
        ),
        (vec!["sim", "compare", SCENARIO, "--shard", "1/3"], "--out"),
        (vec!["sim", "compare"], "SCENARIO"),
    ] {
        let (code, _, err) = roce(&args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}
