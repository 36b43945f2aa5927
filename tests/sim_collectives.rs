//! Collectives' output: a ring AllReduce that completes no iteration says so.

use roce_fabric::scenario::Scenario;

#[test]
fn an_allreduce_that_completes_no_iteration_says_so_in_one_clear_line() {
    let text = "name = \"short\"\nduration_us = 20\n\
                topology = { kind = \"star\", hosts = 4, link = { gbps = 100, delay_ns = 1000 } }\n\
                workloads = [{ kind = \"all_reduce\", hosts = [0, 1, 2, 3], bytes = \"4MiB\", iterations = 2 }]\n";
    let s = Scenario::from_toml(text).unwrap_or_else(|e| panic!("{e}"));
    let sum = s.run(|_| {}).expect("runs").0;
    let t = sum.table();
    assert_eq!(sum.allreduce_iter_us, [Vec::<f64>::new()]);
    assert!(
        t.contains("allreduce 0: no iteration completed in the run\n"),
        "{t}"
    );
    assert!(!t.contains("iterations us:"), "{t}");
}
