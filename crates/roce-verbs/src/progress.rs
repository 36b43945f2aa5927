//! The progress thread: owns the EAL, the DPDK port and the host, pinned to one CPU, named
//! `roce-verbs`. It drains the command queue, turns the runtime loop and delivers completions,
//! so a passive side (a WRITE target that never polls) answers without the application's help.
//! After a quiet spell it parks for `idle_us` (an application's command unparks it at once),
//! after a long one for a millisecond.
//! Every second, and when the process exits, it writes the counters file.

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, TryRecvError};
use roce_dpdk::clock::MonotonicClock;
use roce_dpdk::{
    memif, pin_current_thread, DpdkPort, Eal, EalConfig, Mempool, MempoolConfig, PortConfig,
    PortSpec,
};
use roce_proto::cc::{CcConfig, Rate};
use roce_proto::endpoint::{EndpointConfig, FIRST_QPN};
use roce_proto::resolving::ResolvingEndpoint;
use roce_proto::wire::EthernetAddress;

use crate::command::{Command, Reply};
use crate::config::Config;
use crate::device::Device;
use crate::error::VerbsError;
use crate::info::{self, DeviceInfo};
use crate::worker::Worker;

/// Idle turns of the loop before it parks.
const SPIN_TURNS: u32 = 2000;
/// After this long without traffic or commands, the naps grow to [`LONG_NAP`].
const LONG_IDLE: Duration = Duration::from_millis(100);
/// The nap of a long-idle progress thread (an idle program costs little CPU; its first frame
/// waits at most this long).
const LONG_NAP: Duration = Duration::from_millis(1);
/// Commands taken per turn (the loop must keep the port moving under a flood of posts).
const COMMANDS_PER_TURN: usize = 64;
/// How often the counters file is rewritten.
const COUNTERS_EVERY: Duration = Duration::from_secs(1);

static DEVICE: OnceLock<Result<Arc<Device>, String>> = OnceLock::new();

/// The process's device, started on first use from the environment's configuration. A failed
/// start is final (EAL starts once per process): every later call reports the same reason.
pub fn device() -> Result<Arc<Device>, VerbsError> {
    DEVICE
        .get_or_init(|| {
            crate::init_tracing();
            let config = Config::from_env().map_err(|e| format!("configuration: {e}"))?;
            start(config).map(Arc::new)
        })
        .clone()
        .map_err(VerbsError::Start)
}

/// The device if it was started (for the exit handler, which must not start one).
pub(crate) fn started_device() -> Option<Arc<Device>> {
    DEVICE.get()?.as_ref().ok().cloned()
}

/// Starts the progress thread and waits until its port is up.
pub fn start(config: Config) -> Result<Device, String> {
    crate::sys::fork::watch();
    let (tx, rx) = crossbeam_channel::unbounded();
    let (ready_tx, ready_rx) = crossbeam_channel::bounded(1);
    let timeout = Duration::from_secs(config.timeout.max(1));
    let thread = std::thread::Builder::new()
        .name("roce-verbs".into())
        .spawn(move || run(config, rx, ready_tx))
        .map_err(|e| format!("cannot start the progress thread: {e}"))?;
    let info = ready_rx
        .recv_timeout(timeout)
        .map_err(|_| format!("the port did not come up within {} s", timeout.as_secs()))??;
    Ok(Device::new(tx, thread.thread().clone(), info))
}

/// The port, its pool and the EAL, in drop order.
struct Port {
    port: DpdkPort,
    _pool: Arc<Mempool>,
    _eal: Eal,
}

fn run(config: Config, rx: Receiver<Command>, ready: Reply<Result<DeviceInfo, String>>) {
    let (port, info) = match open_port(&config) {
        Ok(p) => p,
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    if !pin_current_thread(config.core) {
        tracing::warn!(core = config.core, "cannot pin the progress thread");
    }
    let mut cfg = EndpointConfig::ipv4(info.mac, info.ip);
    cfg.ipv6 = Some(info::link_local(info.mac));
    cfg.first_qpn = random_first_qpn(cfg.max_qps);
    let mut host = ResolvingEndpoint::new(cfg);
    host.announce();
    let cc = config.cc.as_deref().and_then(|name| {
        let line = if info.speed_mbps > 0 {
            Rate::from_mbps(u64::from(info.speed_mbps))
        } else {
            Rate::from_gbps(10)
        };
        CcConfig::new(name, line)
            .map_err(|e| tracing::warn!(cc = name, error = %e, "congestion control not used"))
            .ok()
    });
    let Port { port, _pool, _eal } = port;
    let mut worker = Worker::new(port, MonotonicClock::new(), host, cc, info.active_mtu)
        .with_recovery(config.recovery);
    tracing::info!(port = %config.port, mac = %info.mac, ip = %info.ip, "roce-verbs: port up");
    if ready.send(Ok(info)).is_err() {
        return;
    }
    let idle_sleep = Duration::from_micros(config.idle_us);
    let mut idle_turns = 0u32;
    let mut idle_since = Instant::now();
    let mut next_counters = Instant::now() + COUNTERS_EVERY;
    loop {
        let mut busy = 0;
        for _ in 0..COMMANDS_PER_TURN {
            match rx.try_recv() {
                Ok(Command::Finish(reply)) => {
                    finish(&mut worker, &config);
                    let _ = reply.send(());
                }
                Ok(cmd) => {
                    worker.handle(cmd);
                    busy += 1;
                }
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => return,
            }
        }
        busy += worker.poll();
        if busy > 0 {
            idle_turns = 0;
        } else {
            if idle_turns == 0 {
                idle_since = Instant::now();
            }
            idle_turns = idle_turns.saturating_add(1);
            if idle_turns > SPIN_TURNS && !idle_sleep.is_zero() {
                let nap = if idle_since.elapsed() > LONG_IDLE {
                    idle_sleep.max(LONG_NAP)
                } else {
                    idle_sleep
                };
                std::thread::park_timeout(nap);
            }
        }
        if config.counters.is_some() && Instant::now() >= next_counters {
            next_counters = Instant::now() + COUNTERS_EVERY;
            write_counters(&worker, &config);
        }
    }
}

/// Polls until 20 ms pass without traffic (at most 500 ms), then writes the counters.
fn finish<P: roce_proto::port::Port>(worker: &mut Worker<P, MonotonicClock>, config: &Config) {
    let start = Instant::now();
    let mut quiet_since = Instant::now();
    while start.elapsed() < Duration::from_millis(500)
        && quiet_since.elapsed() < Duration::from_millis(20)
    {
        if worker.poll() > 0 {
            quiet_since = Instant::now();
        }
    }
    write_counters(worker, config);
}

fn write_counters<P: roce_proto::port::Port>(worker: &Worker<P, MonotonicClock>, config: &Config) {
    let Some(path) = &config.counters else {
        return;
    };
    let mut text = String::new();
    for (name, value) in worker.counters() {
        text.push_str(&format!("{name} {value}\n"));
    }
    // Readers never see half a file.
    let tmp = path.with_extension("tmp");
    if let Err(e) = std::fs::write(&tmp, text).and_then(|()| std::fs::rename(&tmp, path)) {
        tracing::warn!(path = %path.display(), error = %e, "cannot write the counters");
    }
}

/// EAL with the configured port, the port up, our MAC and the port's limits.
fn open_port(c: &Config) -> Result<(Port, DeviceInfo), String> {
    let mut args = if c.eal.contains("--log-level") {
        c.eal.clone()
    } else {
        // EAL's start-up notices would bury the program's own output.
        format!("--log-level=3 {}", c.eal)
    };
    let user = shlex::split(&c.eal).unwrap_or_default();
    if !user
        .iter()
        .any(|a| a == "-l" || a == "-c" || a.starts_with("--lcores"))
    {
        args.push_str(&format!(" -l {}", c.core));
    }
    for a in c.port.eal_args(0) {
        args.push(' ');
        args.push_str(&shlex::try_quote(&a).unwrap_or_default());
    }
    let label = format!("ROCE_VERBS_PORT={}", c.port);
    let memif = matches!(c.port, PortSpec::Memif { .. });
    memif::prepare(&c.port, Duration::from_secs(c.timeout.max(1)))
        .map_err(|e| format!("{label}: {e}"))?;
    let eal = Eal::init(&EalConfig::new(args)).map_err(|e| format!("{label}: {e}"))?;
    let id = *eal
        .port_ids()
        .first()
        .ok_or_else(|| format!("{label}: DPDK created no port"))?;
    // RoCE headers (Eth 14 + IPv4 20 + UDP 8 + BTH 12 + RETH 16 + ICRC 4) on top of the MTU.
    let l3 = c.mtu.bytes() as usize + 80;
    // + 530: net_af_packet wants 2048-byte frames (2016 bytes past its headroom) in an mbuf.
    let pool = Mempool::new(
        &eal,
        &MempoolConfig::for_frames(l3.max(1500) + 18 + 530, 8191),
    )
    .map_err(|e| format!("{label}: the mbuf pool: {e}"))?;
    let pool = Arc::new(pool);
    let pc = PortConfig {
        mtu: (l3 > 1500).then_some(l3),
        // A memif link comes up when the peer process connects, which may be after this one
        // has opened its device and published its address (a perftest server): do not wait.
        link_timeout: if memif {
            Duration::ZERO
        } else {
            Duration::from_secs(c.timeout.clamp(1, 10))
        },
        ..PortConfig::default()
    };
    let port = DpdkPort::new(&eal, id, pool.clone(), &pc).map_err(|e| format!("{label}: {e}"))?;
    let p = port.info();
    let mac = c
        .mac
        .unwrap_or_else(|| EthernetAddress(c.port.host_mac(p.mac)));
    let info = DeviceInfo {
        mac,
        ip: c.ip,
        active_mtu: c.mtu,
        // A memif port is plugged in from the start, as a NIC's cable is: programs that
        // insist on an active port (perftest) start before their peer has connected.
        link_up: p.link.up || memif,
        speed_mbps: p.link.speed_mbps,
    };
    Ok((
        Port {
            port,
            _pool: pool,
            _eal: eal,
        },
        info,
    ))
}

/// The first QP number of the process, drawn from the OS's randomness: an off-path attacker
/// cannot count on QP numbers starting at 17 (they still go up by one from here).
fn random_first_qpn(max_qps: usize) -> u32 {
    // 24-bit QPNs; 0xffffff is the multicast QPN.
    let last = 0x00ff_fffe_u32.saturating_sub(u32::try_from(max_qps).unwrap_or(u32::MAX));
    rand::random_range(FIRST_QPN..=last.max(FIRST_QPN))
}
