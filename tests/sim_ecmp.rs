//! ECMP polarisation (scenarios/ecmp-polarisation.toml): with the same hash salt on every
//! switch the second ECMP stage repeats the first stage's choice, so half of its members carry
//! nothing; a salt per switch spreads the flows over them and the goodput rises. The summary's
//! per-member load shows both.

use roce_fabric::ecmp::EcmpLoad;
use roce_fabric::scenario::Scenario;
use roce_fabric::summary::Summary;

const POLARISED: &str = include_str!("../scenarios/ecmp-polarisation.toml");

fn run(text: &str) -> Summary {
    let s = Scenario::from_toml(text).unwrap_or_else(|e| panic!("{e}"));
    println!("scenario {} seed {}", s.name, s.seed);
    s.run(|_| {}).expect("runs").0
}

/// Bytes the member `switch` -> `peer` sent.
fn member(e: &EcmpLoad, switch: &str, peer: &str) -> u64 {
    e.uplinks
        .iter()
        .find(|u| u.switch == switch && u.peer == peer)
        .unwrap_or_else(|| panic!("no member {switch} -> {peer}"))
        .bytes
}

#[test]
fn equal_salts_polarise_the_second_stage_and_per_switch_salts_fix_it() {
    let bad = run(POLARISED);
    let e = bad.ecmp.as_ref().expect("ECMP load");
    let t = bad.table();
    // The first stage splits; the second repeats its choice: a0 only uses b0, a1 only b1.
    assert!(
        member(e, "t1", "a0") > 1_000_000 && member(e, "t1", "a1") > 1_000_000,
        "{t}"
    );
    assert!(
        member(e, "a0", "b0") > 1_000_000 && member(e, "a1", "b1") > 1_000_000,
        "{t}"
    );
    assert_eq!(
        (member(e, "a0", "b1"), member(e, "a1", "b0")),
        (0, 0),
        "{t}"
    );
    // The ACKs coming back polarise the same way at b0 and b1.
    assert_eq!(e.idle_members, 4, "{t}");
    assert!(t.contains("ecmp: 12 members, 4 idle"), "{t}");
    // Two 50G middle cables carry everything.
    assert!(bad.total_goodput_gbps < 100.0, "{t}");

    let fixed = run(&POLARISED.replace(
        "ecmp_salt_per_switch = false",
        "ecmp_salt_per_switch = true",
    ));
    let f = fixed.ecmp.as_ref().expect("ECMP load");
    let ft = fixed.table();
    assert!(
        member(f, "a0", "b0") > 1_000_000 && member(f, "a0", "b1") > 1_000_000,
        "{ft}"
    );
    assert!(f.idle_members <= 1, "{ft}");
    assert!(
        fixed.total_goodput_gbps > 1.3 * bad.total_goodput_gbps,
        "{t}\n{ft}"
    );
}

#[test]
fn a_written_out_topology_refuses_cables_to_nothing() {
    let text = POLARISED.replace("{ a = \"b1\", b = \"r\" }", "{ a = \"b1\", b = \"r9\" }");
    let err = Scenario::from_toml(&text)
        .expect_err("r9 does not exist")
        .to_string();
    assert!(
        err.contains("cable end \"r9\" is neither a switch nor one of the 16 hosts"),
        "{err}"
    );
}
