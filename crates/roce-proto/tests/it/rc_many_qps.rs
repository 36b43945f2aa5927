//! Many QPs on one endpoint over a lossy link: every QP's retransmission timer fires when it is
//! due. An endpoint keeps its QPs' deadlines one way up to 32 QPs and another way above
//! (`qp/due.rs`); both must recover every write.

use roce_testkit::rc;

use rc::*;
use roce_proto::connect::RcOptions;
use roce_proto::fault::FaultConfig;
use roce_proto::verbs::WcStatus;

/// Connects `qps` QP pairs, writes 20 KB on each over a link losing 5% of frames, and returns
/// (writes completed successfully, packets retransmitted, frames dropped).
fn lossy_writes(qps: usize) -> (usize, u64, u64) {
    let mut p = pair(
        FaultConfig {
            loss: 0.05,
            ..FaultConfig::default()
        },
        7,
    );
    let o = RcOptions {
        retry_cnt: 7,
        ..RcOptions::default()
    };
    let len = 20_000;
    let mut sides = Vec::new();
    for i in 0..qps {
        let (sa, sb) = connect(&mut p, &o);
        let src = mr(&mut p.a, &sa, len, i as u8);
        let dst = mr(&mut p.b, &sb, len, 0);
        p.a.post_send(sa.qpn, write_wr(i as u64, &src, &dst, len as u32))
            .expect("post");
        sides.push((sa, src, dst));
    }
    let mut wcs = Vec::new();
    let end = deadline(&p, 10);
    let ok = p.run_until(end, |_, a, _| {
        for (sa, _, _) in &sides {
            drain(a, sa, &mut wcs);
        }
        wcs.len() == qps
    });
    assert!(ok, "{qps} QPs: {} of {qps} writes completed", wcs.len());
    for (_, src, dst) in &sides {
        assert_eq!(
            p.b.mr(dst.lkey).map(|m| m.bytes().to_vec()),
            p.a.mr(src.lkey).map(|m| m.bytes().to_vec()),
            "the written bytes landed"
        );
    }
    let retransmitted = sides
        .iter()
        .filter_map(|(sa, _, _)| p.a.qp(sa.qpn))
        .map(|q| q.counters().retransmitted_packets)
        .sum();
    let ok = wcs.iter().filter(|w| w.status == WcStatus::Success).count();
    (ok, retransmitted, p.port_a.counters().dropped)
}

#[test]
fn few_and_many_qps_recover_every_write() {
    // 4 QPs: deadlines scanned; 40: kept ordered.
    for qps in [4, 40] {
        let (ok, retransmitted, dropped) = lossy_writes(qps);
        assert_eq!(ok, qps);
        assert!(
            dropped > 0 && retransmitted > 0,
            "{qps} QPs: {dropped} {retransmitted}"
        );
    }
}
