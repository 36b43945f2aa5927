//! Congestion control from `roce::cc` inside the real endpoints on the fabric's hosts: CNPs from
//! the receivers' notification points cut the senders' QP rates, which keeps the bottleneck queue
//! (and PFC) down compared with no congestion control.

use roce::sim::builtin::{Builtin, BuiltinKind};
use roce::sim::summary::Summary;
use roce::sim::HostId;

fn incast(cc: &str) -> (Summary, roce::sim::scenario::Built) {
    let s = Builtin {
        senders: Some(4),
        duration_us: Some(1_000.0),
        cc: cc.into(),
        ..Builtin::default()
    }
    .scenario(BuiltinKind::Incast);
    println!("scenario {} cc {cc} seed {}", s.name, s.seed);
    s.run(|_| {}).expect("runs")
}

#[test]
fn dcqcn_drains_the_incast_queue_that_no_cc_leaves_to_pfc() {
    let (none, _) = incast("none");
    let (dcqcn, built) = incast("dcqcn-paper");
    assert!(
        dcqcn.queue_mean_bytes < none.queue_mean_bytes / 10.0,
        "queue {} vs {}",
        dcqcn.queue_mean_bytes,
        none.queue_mean_bytes
    );
    assert!(dcqcn.pfc_pause_frames < none.pfc_pause_frames / 4);
    assert!(dcqcn.cnp_handled > 0);
    // Every sender's controller saw CNPs and cut its rate below line rate.
    for h in 0..4 {
        let m = built
            .fabric
            .engine(HostId(h))
            .unwrap()
            .cc_metrics(0)
            .unwrap();
        assert!(m.rp_cnp_handled > 0, "host {h}: {m:?}");
        assert!(m.rate.as_gbps_f64() < 100.0, "host {h}: {m:?}");
    }
    // The recorder sampled rate and alpha of every flow every microsecond.
    let rec = built.fabric.recorder().unwrap();
    assert_eq!(rec.rows.len(), 1000);
    assert!(rec.rows.iter().all(|r| r.cc.len() == 4));
}

#[test]
fn unknown_congestion_control_is_one_clear_error() {
    let s = Builtin {
        cc: "bogus".into(),
        ..Builtin::default()
    }
    .scenario(BuiltinKind::Incast);
    let err = s
        .validate()
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("unknown congestion control `bogus`"), "{err}");
}
