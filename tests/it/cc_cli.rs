//! `roce cc show` / `roce cc replay` as a user runs them.

use crate::support::cli_output;

use cli_output::roce;

#[test]
fn replay_json_lists_every_change_of_rate_target_and_alpha() {
    let (code, out, _) = roce(&[
        "cc",
        "replay",
        "--cc",
        "dcqcn-paper",
        "--line-gbps",
        "100",
        "--events",
        "cnp@0us,cnp@12us",
        "--duration",
        "100us",
        "--json",
    ]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    let points: Vec<(f64, f64, f64)> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["t_us"].as_f64().unwrap(),
                p["rate_gbps"].as_f64().unwrap(),
                p["target_gbps"].as_f64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        points,
        [
            (0.0, 100.0, 100.0),
            (0.0, 50.0, 100.0),
            (12.0, 25.0, 50.0),
            (67.0, 37.5, 50.0)
        ]
    );
    assert_eq!(v[3]["alpha"].as_f64().unwrap(), 1.0 - 1.0 / 256.0);
}

#[test]
fn show_prints_the_full_parameter_set() {
    let (code, out, _) = roce(&["cc", "show", "dcqcn-mlx"]);
    assert_eq!(code, 0);
    // 19 DCQCN parameters and the send window's two (`win_rtt`, `var_win`; off by default).
    assert!(out.starts_with("dcqcn-mlx (21 parameters)"));
    assert!(out.contains("rpg_time_reset"));
    assert!(out.contains("1019 1/1024"));
}

#[test]
fn bad_input_gives_one_error_line_and_a_nonzero_exit() {
    for args in [
        &["cc", "show", "cubic"][..],
        &[
            "cc",
            "replay",
            "--cc",
            "dcqcn-mlx",
            "--set",
            "rpg_ai_rate=fast",
        ],
        &["cc", "replay", "--cc", "dcqcn-mlx", "--events", "cnp@soon"],
        &["cc", "replay", "--cc", "dcqcn-mlx", "--duration", "5"],
    ] {
        let (code, out, err) = roce(args);
        assert_eq!(code, 1, "{args:?}");
        assert!(out.is_empty(), "{args:?}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("roce: "), "{args:?}: {err}");
    }
}
