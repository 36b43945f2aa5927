//! HPCC's in-band telemetry end to end: the INT shim keeps the RoCEv2 ICRC valid (inserted after
//! the ICRC is computed, filled by switches, stripped before verification), and two HPCC flows
//! of real endpoints sharing a bottleneck in the simulated fabric steer their rates from the
//! echoed INT records alone (no ECN marking, no CNPs).

use roce_testkit::cc_pair;

use std::net::{IpAddr, Ipv6Addr};

use cc_pair::Pair;

use roce_fabric::engines::mac_of;
use roce_fabric::net::topology::Topology;
use roce_fabric::{HostId, LinkConfig, SwitchConfig};
use roce_proto::cc::{CcConfig, CcMetrics, Rate};
use roce_proto::connect::{connect_rc, RcOptions, RcSide};
use roce_proto::endpoint::{Endpoint, EndpointConfig};
use roce_proto::engine::Engine;
use roce_proto::time::Instant;
use roce_proto::verbs::{AccessFlags, CqHandle, Mtu, SendWr};
use roce_proto::wire::int;
use roce_proto::wire::int::{HopRecord, Repr, INT_UDP_PORT};
use roce_proto::wire::{parse_frame, VlanTag, WireError};

/// A WRITE frame built by a real endpoint (IPv4, IPv6, tagged or not).
fn data_frame(v6: bool, vlan: Option<u16>) -> Vec<u8> {
    let cfg = |i: u8| {
        let mut c = cc_pair::config(i);
        if v6 {
            c.ipv4 = None;
            c.ipv6 = Some(Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, u16::from(i)));
        }
        c.marking.vlan = vlan;
        c
    };
    let mut p = Pair::new(cfg, &RcOptions::default(), 4096);
    p.post_write(1, 333);
    let a = &mut p.a;
    let mut buf = vec![0u8; 9000];
    let n = a.poll_transmit(Instant::from_nanos(1), &mut buf).unwrap();
    buf.truncate(n);
    buf
}

#[test]
fn int_shim_hides_the_frame_from_roce_parsers_and_stripping_restores_its_icrc() {
    for (v6, vlan) in [
        (false, None),
        (true, None),
        (false, Some(5)),
        (true, Some(9)),
    ] {
        let original = data_frame(v6, vlan);
        assert!(parse_frame(&original).is_ok());
        let mut frame = original.clone();
        frame.resize(original.len() + int::shim_len(3), 0);
        let n = int::insert(&mut frame, original.len(), &Repr::collect(3, 1));
        let n = n.unwrap_or_else(|e| panic!("{e:?} v6 {v6} vlan {vlan:?} len {}", original.len()));
        assert_eq!(n, original.len() + 4 + 3 * 10);
        // To a plain RoCE parser the shimmed frame is just UDP to another port.
        assert_eq!(parse_frame(&frame).err(), Some(WireError::NotRoce));
        let at = int::shim_offset(&frame).unwrap();
        assert_eq!(
            u16::from_be_bytes([frame[at - 6], frame[at - 5]]),
            INT_UDP_PORT
        );
        // Whole units (128 B of tx, 80 B of queue), so the records read back as written.
        let hop = |t: u64| HopRecord {
            ts_ns: t,
            tx_bytes: 128 * t,
            qlen_bytes: 800,
            rate_bps: 100_000_000_000,
        };
        assert!(int::push_hop(&mut frame, &hop(1)));
        assert!(int::push_hop(&mut frame, &hop(2)));
        let mut out = vec![0u8; frame.len()];
        let (len, shim) = int::strip(&frame, &mut out).unwrap();
        assert_eq!(&out[..len], &original[..], "v6 {v6} vlan {vlan:?}");
        assert!(parse_frame(&out[..len]).is_ok());
        assert_eq!(shim.records(), &[hop(1), hop(2)]);
        assert!(!shim.echo);
        if let Some(vid) = vlan {
            let tag = VlanTag::from_tci(u16::from_be_bytes([frame[14], frame[15]]));
            assert_eq!((tag.vid, tag.pcp), (vid, 3));
        }
    }
}

#[test]
fn insert_needs_room_and_strip_refuses_frames_without_a_shim() {
    let original = data_frame(false, None);
    let mut frame = original.clone();
    assert_eq!(
        int::insert(&mut frame, original.len(), &Repr::collect(1, 1)),
        Err(WireError::BufferTooSmall)
    );
    let mut out = vec![0u8; original.len()];
    assert_eq!(
        int::strip(&original, &mut out).err(),
        Some(WireError::NotRoce)
    );
    assert!(!int::push_hop(&mut frame, &HopRecord::default()));
}

/// WRITEs kept outstanding per flow.
const DEPTH: u32 = 4;
const MSG: u32 = 64 * 1024;

#[derive(Debug)]
struct Flow {
    qpn: u32,
    cq: CqHandle,
    wr: SendWr,
    outstanding: u32,
    completed: u64,
}

/// A fabric host: an endpoint whose flows keep `DEPTH` WRITEs in flight.
#[derive(Debug)]
struct Host {
    ep: Endpoint,
    flows: Vec<Flow>,
    /// Has transmitted: until then it asks the fabric to be polled at once.
    started: bool,
}

impl Host {
    fn drive(&mut self) {
        for f in &mut self.flows {
            while let Some(wc) = self.ep.poll_cq_one(f.cq) {
                f.outstanding -= 1;
                f.completed += u64::from(wc.byte_len);
            }
            while f.outstanding < DEPTH {
                self.ep.post_send(f.qpn, f.wr.clone()).unwrap();
                f.outstanding += 1;
            }
        }
    }
}

impl Engine for Host {
    fn handle_frame(&mut self, now: Instant, frame: &[u8]) {
        self.ep.handle_frame(now, frame);
        self.drive();
    }
    fn handle_timeout(&mut self, now: Instant) {
        self.ep.handle_timeout(now);
        self.drive();
    }
    fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        self.started = true;
        self.ep.poll_transmit(now, buf)
    }
    fn poll_timeout(&self) -> Option<Instant> {
        if !self.started && !self.flows.is_empty() {
            return Some(Instant::ZERO);
        }
        self.ep.poll_timeout()
    }
}

struct Outcome {
    metrics: Vec<CcMetrics>,
    completed: Vec<u64>,
    queue_at_end: u64,
    cnps: u64,
    echoes: u64,
}

/// Hosts 0 and 1 each run an HPCC flow into host 2 through one 100 Gbit/s switch.
fn two_hpcc_flows_into_one_port(int_switch: bool) -> Outcome {
    let link = LinkConfig::new(100.0, 1000);
    let cfg = SwitchConfig {
        int: int_switch,
        ..SwitchConfig::default()
    };
    let topo = Topology::star(3, link, cfg);
    let mut eps: Vec<Option<Endpoint>> = topo
        .hosts
        .iter()
        .map(|(_, ip)| {
            let IpAddr::V4(v4) = *ip else { unreachable!() };
            Some(Endpoint::new(EndpointConfig::ipv4(mac_of(*ip), v4)))
        })
        .collect();
    let mut rx = eps[2].take().unwrap();
    let mut hosts: Vec<Option<Host>> = Vec::new();
    for ep in eps.iter_mut().take(2) {
        let mut ep = ep.take().unwrap();
        let opts = RcOptions {
            mtu: Mtu::Mtu1024,
            timeout: 10,
            ..RcOptions::default()
        };
        let (a, b): (RcSide, RcSide) = connect_rc(&mut ep, &mut rx, &opts).unwrap();
        let src = ep.reg_mr(a.pd, MSG as usize, AccessFlags::LOCAL_WRITE);
        let dst = rx.reg_mr(b.pd, MSG as usize, AccessFlags::REMOTE_WRITE);
        let wr = cc_pair::write_wr(0, &src, &dst, MSG);
        let cc = CcConfig::new("hpcc", Rate::from_gbps(100)).unwrap().build();
        ep.set_congestion_control(a.qpn, cc, 2048).unwrap();
        ep.enable_int(a.qpn, 2, 1).unwrap();
        let flow = Flow {
            qpn: a.qpn,
            cq: a.cq,
            wr,
            outstanding: 0,
            completed: 0,
        };
        let mut h = Host {
            ep,
            flows: vec![flow],
            started: false,
        };
        h.drive();
        hosts.push(Some(h));
    }
    hosts.push(Some(Host {
        ep: rx,
        flows: Vec::new(),
        started: false,
    }));
    let (mut fabric, _) = topo.build(5, |i, _| hosts[i].take().unwrap()).unwrap();
    fabric.run_until(Instant::from_nanos(2_000_000));
    let mut queue_at_end = 0;
    let ports: Vec<_> = fabric.switch_ports().collect();
    for (s, p) in ports {
        queue_at_end = queue_at_end.max(fabric.queue_bytes(s, p));
    }
    let sender = |i: usize| fabric.engine(HostId(i)).unwrap();
    let metrics = (0..2)
        .map(|i| sender(i).ep.cc_metrics(sender(i).flows[0].qpn).unwrap())
        .collect();
    let completed = (0..2).map(|i| sender(i).flows[0].completed).collect();
    let receiver = &fabric.engine(HostId(2)).unwrap().ep;
    let cnps = receiver.np_counters().np_cnp_sent
        + (0..2)
            .map(|i| sender(i).ep.counters().qp.rp_cnp_handled)
            .sum::<u64>();
    let echoes = (0..2)
        .map(|i| sender(i).ep.int_counters().echoes_received)
        .sum();
    Outcome {
        metrics,
        completed,
        queue_at_end,
        cnps,
        echoes,
    }
}

#[test]
fn two_hpcc_flows_share_a_bottleneck_by_int_alone() {
    let with = two_hpcc_flows_into_one_port(true);
    let without = two_hpcc_flows_into_one_port(false);
    for (i, m) in with.metrics.iter().enumerate() {
        println!(
            "int flow {i}: rate {:.2} Gbit/s, cuts {}, completed {} B",
            m.rate.as_gbps_f64(),
            m.rate_cuts,
            with.completed[i]
        );
    }
    println!(
        "int: queue at end {} B, echoes {}, cnps {}; no-int: queue at end {} B, rates {:.2} {:.2}",
        with.queue_at_end,
        with.echoes,
        with.cnps,
        without.queue_at_end,
        without.metrics[0].rate.as_gbps_f64(),
        without.metrics[1].rate.as_gbps_f64()
    );
    assert_eq!(
        with.cnps, 0,
        "no ECN marking, no CNPs: INT alone drives the rates"
    );
    assert!(with.echoes > 100);
    for m in &with.metrics {
        assert!(m.rate_cuts > 0);
        let gbps = m.rate.as_gbps_f64();
        assert!((35.0..=60.0).contains(&gbps), "rate {gbps} Gbit/s");
        assert_eq!(m.cnp_rate_cuts, 0);
    }
    let total: f64 = with.metrics.iter().map(|m| m.rate.as_gbps_f64()).sum();
    assert!(total <= 100.0, "sum of rates {total} Gbit/s");
    let (a, b) = (with.completed[0] as f64, with.completed[1] as f64);
    let jain = (a + b).powi(2) / (2.0 * (a * a + b * b));
    assert!(jain >= 0.95, "jain {jain}");
    // Without INT switches nothing reaches the controllers: line rate, and the queue builds.
    assert_eq!(without.echoes, 0);
    for m in &without.metrics {
        assert_eq!(m.rate, Rate::from_gbps(100));
    }
    assert!(with.queue_at_end * 4 < without.queue_at_end.max(1));
}
