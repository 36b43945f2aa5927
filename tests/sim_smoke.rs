use roce::sim::testing::{TestFlow, TestHost};
use roce::sim::topology::Topology;
use roce::sim::{HostId, LinkConfig};
use roce::time::Instant;

#[test]
fn smoke() {
    let topo = Topology::back_to_back(LinkConfig::new(100.0, 1000));
    let ips: Vec<_> = topo.hosts.iter().map(|h| h.1).collect();
    let (mut f, _) = topo
        .build(1, |i, ip| {
            let h = TestHost::new(ip);
            if i == 0 { h.with_flow(TestFlow::bulk(ips[1], 17)) } else { h }
        })
        .unwrap();
    f.run_until(Instant::from_nanos(1_000_000));
    let rx = f.engine(HostId(1)).unwrap().counters;
    println!("{rx:?} events {}", f.events());
    let gbps = rx.rx_bytes as f64 * 8.0 / 1e-3 / 1e9;
    println!("goodput {gbps}");
}
