//! Sizes take the same suffixes in every command (`16K` = 16384, `5KB` = 5000, `1MiB`): the
//! loopback's message size, the simulator's ECN thresholds, a scenario's buffers.

use crate::support::cli_output;

use cli_output::roce;

fn json(args: &[&str]) -> serde_json::Value {
    let (code, out, err) = roce(args);
    assert_eq!(code, 0, "{args:?}: {out}{err}");
    serde_json::from_str(&out).expect("JSON summary")
}

#[test]
fn loopback_size_1m_moves_mebibyte_messages() {
    let v = json(&[
        "loopback", "--size", "1M", "--count", "3", "--ops", "write", "--json",
    ]);
    assert_eq!(v["verified"], true);
    assert_eq!(v["bytes_verified"], 3 * 1_048_576);
    let v = json(&[
        "loopback", "--size", "2KB", "--count", "4", "--ops", "write", "--json",
    ]);
    assert_eq!(v["bytes_verified"], 4 * 2_000);
}

#[test]
fn loopback_refuses_a_size_that_is_not_one_with_the_reason() {
    let (code, _, err) = roce(&["loopback", "--size", "1.5B"]);
    assert_ne!(code, 0);
    assert!(err.contains("not a whole number of bytes"), "{err}");
}

#[test]
fn sim_incast_kmin_5kb_marks_where_10mb_does_not() {
    let base = [
        "sim",
        "incast",
        "--senders",
        "4",
        "--duration",
        "100us",
        "--transport",
        "test",
        "--json",
    ];
    let run = |kmin: &str, kmax: &str| {
        let mut args = base.to_vec();
        args.extend(["--kmin", kmin, "--kmax", kmax]);
        json(&args)["ecn_marked"].as_u64().expect("ecn_marked")
    };
    assert!(run("5KB", "50KB") > 0);
    assert_eq!(run("10MB", "20MB"), 0, "queues stay below 10 MB");
    // The same thresholds written two ways run the same experiment.
    assert_eq!(run("5KB", "50KB"), run("5000", "50000"));
}

#[test]
fn scenario_size_fields_take_strings_with_suffixes() {
    use roce_fabric::experiment::scenario::Scenario;
    let with = |switch: &str, workload: &str| {
        let text = format!(
            "name = \"x\"\nduration_us = 10\nmessage_bytes = {m}\n\
             topology = {{ kind = \"star\", hosts = 3, link = {{ gbps = 100, delay_ns = 1000 }} }}\n\
             [switch]\n{switch}\nlossless = [3]\n\
             [[workloads]]\nkind = \"incast\"\nsenders = [0, 1]\nreceiver = 2\nbytes = {workload}\n",
            m = if switch.contains('"') { "\"64KiB\"" } else { "65536" },
        );
        Scenario::from_toml(&text).unwrap_or_else(|e| panic!("{text}: {e}"))
    };
    let words = with(
        "buffer_bytes = \"12MiB\"\nqueue_limit_bytes = \"1M\"\n\
         pfc_thresholds = { xoff_bytes = \"200KB\", xon_bytes = \"180KB\", headroom_bytes = \"150KB\", quanta = 65535 }\n\
         ecn = { kmin_bytes = \"5KB\", kmax_bytes = \"0.2MB\", pmax = 0.2, step_bytes = \"30K\" }",
        "\"1.5MB\"",
    );
    let numbers = with(
        "buffer_bytes = 12582912\nqueue_limit_bytes = 1048576\n\
         pfc_thresholds = { xoff_bytes = 200000, xon_bytes = 180000, headroom_bytes = 150000, quanta = 65535 }\n\
         ecn = { kmin_bytes = 5000, kmax_bytes = 200000, pmax = 0.2, step_bytes = 30720 }",
        "1500000",
    );
    assert_eq!(words, numbers);
    let bad = "name = \"x\"\nduration_us = 10\n\
               topology = { kind = \"star\", hosts = 2, link = { gbps = 10, delay_ns = 1 } }\n\
               [switch]\nbuffer_bytes = \"12 parsecs\"\nqueue_limit_bytes = 1\nlossless = []\n";
    let err = Scenario::from_toml(bad)
        .expect_err("not a size")
        .to_string();
    assert!(err.contains("`12 parsecs` is not a byte count"), "{err}");
}
