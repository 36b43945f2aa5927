//! The send window a controller may run beside its rate (the HPCC authors' ns-3 `HAS_WIN`,
//! `VAR_WIN`; `roce_proto::cc::window`): its size follows the rate, each controller's default
//! follows that model's run.py, and the QP holds new data while a window's worth is in flight,
//! every packet asking for its ACK, until ACKs open it again. RTT-driven controllers ask for an
//! ACK per packet as well (`ack_each`), as the same model acknowledges every packet.

use roce_testkit::cc_pair;

use cc_pair::{t, transmit, Pair};
use roce_proto::cc::{CcConfig, CongestionControl, Dctcp, DctcpParams, Rate};
use roce_proto::connect::RcOptions;
use roce_proto::verbs::Mtu;
use roce_proto::wire::parse_frame;

/// A pair whose sender runs DCTCP at 100 Gbit/s with `settings`, 1 KB MTU, and 16 KB posted.
fn dctcp_pair(settings: &[&str]) -> Pair {
    cc_pair_with("dctcp", settings)
}

/// A pair whose sender runs `cc` at 100 Gbit/s with `settings`, 1 KB MTU, and 16 KB posted.
fn cc_pair_with(cc: &str, settings: &[&str]) -> Pair {
    let mut p = Pair::new(cc_pair::config, &RcOptions::default(), 1 << 16);
    let mut cfg = CcConfig::new(cc, Rate::from_gbps(100)).unwrap();
    for s in settings {
        cfg.apply(s).unwrap();
    }
    p.a.set_congestion_control(p.sa.qpn, cfg.build(), 1 << 20)
        .unwrap();
    p.post_write(1, 16 * 1024);
    p
}

#[test]
fn a_full_window_holds_new_data_until_acks_open_it() {
    // 100 Gbit/s over 320 ns: a 4000-byte window, four 1 KB packets.
    let mut p = dctcp_pair(&["win_rtt=320"]);
    let first = transmit(&mut p.a, t(1_000));
    assert_eq!(first.len(), 4);
    // Each asks for its ACK: a coalesced ACK would come only after packets the window holds.
    for f in &first {
        assert!(parse_frame(f).unwrap().repr.bth.ack_req);
    }
    // Held by the window, not by a timer: no deadline in the past to spin on.
    assert!(p.a.poll_timeout().is_some_and(|d| d > t(1_000)));
    assert!(transmit(&mut p.a, t(2_000)).is_empty());
    // Two packets acknowledged: two more may leave.
    for f in &first[..2] {
        p.b.handle_frame(t(2_500), f);
    }
    for ack in transmit(&mut p.b, t(2_600)) {
        p.a.handle_frame(t(3_000), &ack);
    }
    assert_eq!(transmit(&mut p.a, t(3_000)).len(), 2);
}

#[test]
fn without_a_window_the_rate_alone_paces() {
    let mut p = dctcp_pair(&["win_rtt=0"]);
    // No ACK comes back, and all 16 packets leave as the pacer lets them.
    let frames: Vec<_> = (1..=4)
        .flat_map(|us| transmit(&mut p.a, t(us * 1_000)))
        .collect();
    assert_eq!(frames.len(), 16);
    // The default coalescing: an ACK request every 32 packets or at the message's end.
    let asks = frames
        .iter()
        .filter(|f| parse_frame(f).unwrap().repr.bth.ack_req)
        .count();
    assert_eq!(asks, 1);
}

/// The frames of the 16 KB WRITE that ask for an ACK, sent without any ACK coming back.
fn ack_requests(p: &mut Pair) -> usize {
    let frames: Vec<_> = (1..=4)
        .flat_map(|us| transmit(&mut p.a, t(us * 1_000)))
        .collect();
    assert_eq!(frames.len(), 16);
    frames
        .iter()
        .filter(|f| parse_frame(f).unwrap().repr.bth.ack_req)
        .count()
}

#[test]
fn rtt_controllers_ask_for_an_ack_per_packet_unless_told_otherwise() {
    // An RTT sample per packet, as the ns-3 model's per-packet ACKs give TIMELY.
    for cc in ["timely", "patched-timely"] {
        assert_eq!(ack_requests(&mut cc_pair_with(cc, &[])), 16, "{cc}");
        // The NIC's coalescing: the message's last packet only (under 32 packets).
        assert_eq!(
            ack_requests(&mut cc_pair_with(cc, &["ack_each=0"])),
            1,
            "{cc}"
        );
    }
    assert_eq!(ack_requests(&mut cc_pair_with("dcqcn-mlx", &[])), 1);
}

#[test]
fn the_window_is_the_bdp_scaled_by_the_rate() {
    // DCTCP's default: the 5 us base RTT at 100 Gbit/s, 62,500 bytes, VAR_WIN.
    let mut d = Dctcp::new(DctcpParams::default(), Rate::from_gbps(100));
    assert_eq!(d.window(), Some(62_500));
    d.on_cnp(t(0)); // alpha 1 halves the rate, and with it the window
    assert_eq!(d.rate(), Rate::from_gbps(50));
    assert_eq!(d.window(), Some(31_250));
    let mut fixed = DctcpParams::default();
    fixed.win.var_win = false;
    let mut d = Dctcp::new(fixed, Rate::from_gbps(100));
    d.on_cnp(t(0));
    assert_eq!(d.window(), Some(62_500));
}

#[test]
fn windows_default_as_the_reference_run_py_gives_them() {
    // run.py: HAS_WIN 1 for dctcp and hp, 0 for dcqcn, dcqcn_paper and timely (patched TIMELY
    // is not in it; it keeps TIMELY's).
    let window = |name: &str| {
        CcConfig::new(name, Rate::from_gbps(100))
            .unwrap()
            .build()
            .window()
    };
    assert_eq!(window("dctcp"), Some(62_500));
    assert_eq!(window("hpcc"), Some(125_000));
    for name in [
        "none",
        "dcqcn-mlx",
        "dcqcn-paper",
        "timely",
        "patched-timely",
    ] {
        assert_eq!(window(name), None, "{name}");
    }
    // Every controller with parameters takes the window's two.
    let mut cfg = CcConfig::new("dcqcn-mlx", Rate::from_gbps(100)).unwrap();
    cfg.apply("win_rtt=5000").unwrap();
    cfg.apply("var_win=1").unwrap();
    assert_eq!(cfg.build().window(), Some(62_500));
    let info = cfg.describe();
    let win = info.iter().find(|p| p.name == "win_rtt").unwrap();
    assert_eq!((win.value.as_str(), win.unit), ("5000", "ns"));
}

#[test]
fn swift_and_nscc_count_their_windows_in_packets_of_the_qps_path_mtu() {
    // Three packets of window at 100 Gbit/s (the line rate paces nothing here): three of the
    // 16 KB WRITE's packets leave, 1 KB or 4 KB each, and the rest wait for ACKs.
    let cases = [(Mtu::Mtu1024, 16), (Mtu::Mtu4096, 4)];
    for (name, (mtu, packets)) in ["swift", "nscc"]
        .into_iter()
        .flat_map(|n| cases.map(|c| (n, c)))
    {
        let opts = RcOptions {
            mtu,
            ..RcOptions::default()
        };
        let mut p = Pair::new(cc_pair::config, &opts, 1 << 16);
        let mut cfg = CcConfig::new(name, Rate::from_gbps(100)).unwrap();
        cfg.apply("init_cwnd=3").unwrap();
        p.a.set_congestion_control(p.sa.qpn, cfg.build(), 1 << 20)
            .unwrap();
        p.post_write(1, 16 * 1024);
        let first = transmit(&mut p.a, t(1_000));
        assert_eq!(first.len(), 3, "{name} {mtu:?}");
        let payload = parse_frame(&first[0]).unwrap().payload.len();
        assert_eq!(payload, 16 * 1024 / packets, "{name} {mtu:?}");
        assert!(transmit(&mut p.a, t(2_000)).is_empty());
    }
}
