//! Unit tests of [`super`]: marking, pause frames, routes.

use super::*;

#[test]
fn red_ramp_is_linear_between_kmin_and_kmax_and_step_overrides() {
    let ecn = EcnThresholds {
        kmin_bytes: 100,
        kmax_bytes: 300,
        pmax: 0.2,
        step_bytes: None,
    };
    assert_eq!(ecn.probability(100), 0.0);
    assert_eq!(ecn.probability(200), 0.1);
    assert_eq!(ecn.probability(300), 1.0);
    let step = EcnThresholds {
        step_bytes: Some(150),
        ..ecn
    };
    assert_eq!(step.probability(150), 1.0);
    assert_eq!(step.probability(140), 0.2 * 40.0 / 200.0);
}

#[test]
fn pause_frames_carry_the_configured_quanta_for_xoff_zero_for_xon_and_none_without_pfc() {
    let mut sw: Switch<u32, ()> = Switch::new("s".into(), SwitchConfig::default());
    let src = [2, 0, 0, 0, 0, 9];
    let quanta = |xoff| {
        let frame = sw.pause_frame(src, 3, xoff).expect("PFC is on");
        let pause = PauseRepr::parse(&frame).expect("a PFC frame");
        (pause.quanta[3], pause.quanta[2])
    };
    assert_eq!(quanta(true), (Some(PfcConfig::default().quanta), None));
    assert_eq!(quanta(false), (Some(0), None));
    sw.set_pfc(None);
    assert_eq!(sw.pause_frame(src, 3, true), None);
}

#[test]
fn route_picks_by_flow_hash_among_the_live_members_only() {
    let mut sw: Switch<u32, ()> = Switch::new("s".into(), SwitchConfig::default());
    sw.set_routes(vec![vec![4], vec![1, 2, 3, 5], vec![]]);
    // The pick the definition gives: the hash modulo the live members, in route order.
    let (groups, routes) = sw.routes.definition();
    let (groups, routes) = (groups.to_vec(), routes.to_vec());
    let reference = |host: usize, ip: &IpInfo, up: &dyn Fn(u16) -> bool| {
        let group = &groups[routes[host] as usize];
        let live: Vec<u16> = group.iter().copied().filter(|&p| up(p)).collect();
        let n = live.len() as u64;
        (n > 0).then(|| live[(flow_hash(ip, 0) % n) as usize])
    };
    let all = |_: u16| true;
    let no_3 = |p: u16| p != 3;
    let none = |_: u16| false;
    let mut seen = std::collections::BTreeSet::new();
    for sport in 0..64u16 {
        let ip = IpInfo {
            sport: 0xc000 + sport,
            dport: 4791,
            ..IpInfo::default()
        };
        for up in [&all as &dyn Fn(u16) -> bool, &no_3, &none] {
            (0..8).for_each(|p| sw.set_port_live(p, up(p)));
            for host in 0..3 {
                let got = sw.route(host, &ip);
                assert_eq!(got, reference(host, &ip, up), "host {host} sport {sport}");
                seen.extend(got.filter(|_| host == 1));
            }
        }
    }
    assert_eq!(seen.into_iter().collect::<Vec<_>>(), vec![1, 2, 3, 5]);
}

#[test]
fn adaptive_routing_takes_the_live_member_with_the_fewest_queued_bytes_ties_to_the_hash() {
    let cfg = SwitchConfig {
        routing: Routing::Adaptive,
        ..SwitchConfig::default()
    };
    let mut sw: Switch<u32, ()> = Switch::new("s".into(), cfg);
    (0..6).for_each(|_| {
        sw.add_port(());
    });
    sw.set_routes(vec![vec![1, 2, 3, 5]]);
    (0..6).for_each(|p| sw.set_port_live(p, true));
    let ip = IpInfo {
        sport: 0xc001,
        dport: 4791,
        ..IpInfo::default()
    };
    let hashed = [1, 2, 3, 5][(flow_hash(&ip, 0) % 4) as usize];
    // Empty queues: the hash's pick, as ECMP.
    assert_eq!(sw.route(0, &ip), Some(hashed));
    // Every member but 3 holds bytes (any priority counts): 3.
    let t = Instant::ZERO;
    for (i, p) in [1u16, 2, 5].into_iter().enumerate() {
        sw.enqueue(i as u32, (0, p), i % 2 * 3, 1000, t);
    }
    assert_eq!(sw.route(0, &ip), Some(3));
    // 3 holds the most now; 1 and 5 tie at 1000 with 2 at 2000 behind: the first of them
    // scanning from the hash's pick round the group.
    sw.enqueue(7, (0, 3), 0, 5000, t);
    sw.enqueue(8, (0, 2), 0, 1000, t);
    let order = [1u16, 2, 3, 5];
    let from = order.iter().position(|&p| p == hashed).unwrap_or(0);
    let want = (0..4)
        .map(|i| order[(from + i) % 4])
        .find(|p| [1, 5].contains(p));
    assert_eq!(sw.route(0, &ip), want);
    // A member whose link is down is never picked, however short its queue.
    sw.set_port_live(want.unwrap_or(1), false);
    let other = if want == Some(1) { 5 } else { 1 };
    assert_eq!(sw.route(0, &ip), Some(other));
    // ECMP ignores the queues.
    let mut ecmp: Switch<u32, ()> = Switch::new("e".into(), SwitchConfig::default());
    (0..6).for_each(|_| {
        ecmp.add_port(());
    });
    ecmp.set_routes(vec![vec![1, 2, 3, 5]]);
    (0..6).for_each(|p| ecmp.set_port_live(p, true));
    ecmp.enqueue(0, (0, hashed), 3, 9000, t);
    assert_eq!(ecmp.route(0, &ip), Some(hashed));
}

#[test]
fn live_ports_and_shared_groups_are_kept_per_port() {
    let mut sw: Switch<u32, ()> = Switch::new("s".into(), SwitchConfig::default());
    sw.set_routes(vec![vec![1, 70], vec![2], vec![1, 70], vec![70, 1]]);
    let (groups, routes) = sw.routes.definition();
    assert_eq!((groups.len(), routes), (3, &[0, 1, 0, 2][..]));
    assert_eq!(sw.ecmp_members(), vec![1, 70]);
    assert!(!sw.port_live(70));
    sw.set_port_live(70, true);
    sw.set_port_live(1, true);
    sw.set_port_live(1, false);
    assert_eq!(
        (sw.port_live(1), sw.port_live(70), sw.port_live(6)),
        (false, true, false)
    );
    let ip = IpInfo::default();
    assert_eq!(sw.route(0, &ip), Some(70));
}

#[test]
fn a_standing_xoff_is_due_again_at_half_its_pause_time_until_xon_or_flush() {
    let cfg = SwitchConfig {
        pfc: Some(PfcConfig {
            xoff_bytes: 2_000,
            xon_bytes: 1_000,
            quanta: 1000,
            ..PfcConfig::default()
        }),
        ..SwitchConfig::default()
    };
    let mut sw: Switch<u32, ()> = Switch::new("s".into(), cfg);
    let (a, b) = (sw.add_port(()), sw.add_port(()));
    // 1000 quanta x 512 bits at 100 Gbit/s = 5.12 us: refreshed every 2.56 us.
    sw.set_port_rate(a, 100_000_000_000);
    let at = Instant::from_nanos;
    assert!(!sw.enqueue(1, (a, b), 3, 1_500, Instant::ZERO));
    assert!(
        sw.enqueue(2, (a, b), 3, 1_500, Instant::ZERO),
        "crossed XOFF"
    );
    assert_eq!(sw.xoff_refresh_at(a, 3), None, "not sent yet");
    assert_eq!(sw.xoff_sent(a, 3, at(1_000)), Some(at(3_560)));
    assert_eq!(sw.xoff_refresh_at(a, 3), Some(at(3_560)));
    assert_eq!(sw.next_xoff_due(), Some(at(3_560)));
    assert_eq!(sw.xoff_due(at(3_559)).count(), 0);
    assert_eq!(sw.xoff_due(at(3_560)).collect::<Vec<_>>(), [(a, 3)]);
    // A refresh moves the deadline; the time is the port's own (1.28 us at 400 Gbit/s).
    assert_eq!(sw.xoff_sent(a, 3, at(3_560)), Some(at(6_120)));
    sw.set_port_rate(b, 400_000_000_000);
    assert_eq!(sw.xoff_sent(b, 3, at(0)), Some(at(640)));
    assert_eq!(sw.xoff_refresh_at(b, 3), None, "no XOFF stands at b");
    // Draining below XON ends it.
    assert!(sw.dequeue(b, Instant::ZERO, |_, _| false).is_some());
    assert!(!sw.should_resume(a, 3), "1500 B left, above XON");
    assert_eq!(sw.xoff_refresh_at(a, 3), Some(at(6_120)));
    assert!(sw.dequeue(b, Instant::ZERO, |_, _| false).is_some());
    assert!(sw.should_resume(a, 3));
    assert_eq!((sw.xoff_refresh_at(a, 3), sw.next_xoff_due()), (None, None));
    assert_eq!(sw.xoff_due(at(10_000)).count(), 0);
    // So does a reboot.
    assert!(!sw.enqueue(3, (a, b), 3, 1_500, Instant::ZERO));
    assert!(sw.enqueue(4, (a, b), 3, 1_500, Instant::ZERO));
    assert!(sw.xoff_sent(a, 3, at(7_000)).is_some());
    sw.flush();
    assert_eq!(sw.xoff_refresh_at(a, 3), None);
    // Without PFC nothing is timed.
    sw.set_pfc(None);
    assert_eq!(sw.xoff_sent(a, 3, at(8_000)), None);
}
