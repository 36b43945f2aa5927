//! An ethdev port behind the [`Port`] trait: configuration (MTU, promiscuous mode, offloads,
//! queue pairs), link wait, burst RX/TX. A port set up with several queue pairs splits into one
//! [`DpdkPort`] per queue ([`DpdkPort::into_queues`]), each for one lcore; the device stops when
//! the last of them goes. Not here: which queue a frame reaches (see `steer`).

use std::ffi::CStr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use dpdk_bindings as sys;

use super::eal::Eal;
use super::error::{check, DpdkError};
use super::mbuf::Mbuf;
use super::mempool::Mempool;
use roce_proto::port::{Port, PortCaps};

/// Ethernet header plus one VLAN tag: what a frame adds to the MTU.
const L2_OVERHEAD: usize = 14 + 4;

/// The largest MTU `rte_eth_dev_configure` accepts from a device reporting `max_mtu` and
/// `max_rx_pktlen`: it also holds the MTU plus the device's L2 overhead (the difference of the
/// two when the device reports a real `max_mtu`, else Ethernet header and CRC) to
/// `max_rx_pktlen`. DPDK 22.11's net_memif, for one, reports an MTU up to 65535 but frames of
/// at most 1518 bytes.
fn max_mtu(max_mtu: u16, max_rx_pktlen: u32) -> usize {
    let overhead = if max_mtu != u16::MAX && max_rx_pktlen > u32::from(max_mtu) {
        max_rx_pktlen - u32::from(max_mtu)
    } else {
        L2_OVERHEAD as u32
    };
    let by_frame = usize::try_from(max_rx_pktlen.saturating_sub(overhead)).unwrap_or(usize::MAX);
    usize::from(max_mtu).min(by_frame)
}

/// How to bring a port up.
#[derive(Clone, Debug)]
pub struct PortConfig {
    /// RX descriptors (adjusted to the device's limits).
    pub rx_desc: u16,
    /// TX descriptors (adjusted to the device's limits).
    pub tx_desc: u16,
    /// L3 MTU; `None` keeps the device's default (1500 where it can).
    pub mtu: Option<usize>,
    /// Receive every frame, not only those for our MAC.
    pub promiscuous: bool,
    /// How long [`DpdkPort::new`] waits for the link; zero does not wait.
    pub link_timeout: Duration,
    /// Frames per burst.
    pub burst: usize,
    /// Enable IPv4 header checksum TX offload when the device has it.
    pub tx_ipv4_checksum: bool,
    /// RX/TX queue pairs (one per lcore; at least 1).
    pub queues: u16,
}

impl Default for PortConfig {
    fn default() -> Self {
        PortConfig {
            rx_desc: 1024,
            tx_desc: 1024,
            mtu: None,
            promiscuous: true,
            link_timeout: Duration::from_secs(5),
            burst: roce_proto::limits::BURST_SIZE,
            tx_ipv4_checksum: false,
            queues: 1,
        }
    }
}

/// Offloads a device offers (or, from [`DpdkPort::enabled_offloads`], that we turned on).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Offloads {
    /// RX IPv4 header checksum check.
    pub rx_ipv4_checksum: bool,
    /// RX UDP checksum check.
    pub rx_udp_checksum: bool,
    /// RX of frames larger than one mbuf into chains.
    pub rx_scatter: bool,
    /// TX IPv4 header checksum.
    pub tx_ipv4_checksum: bool,
    /// TX UDP checksum.
    pub tx_udp_checksum: bool,
    /// TX of multi-segment mbufs.
    pub tx_multi_segs: bool,
    /// TX fast free (one pool, refcount 1).
    pub tx_mbuf_fast_free: bool,
}

impl Offloads {
    fn from_capa(rx: u64, tx: u64) -> Self {
        Offloads {
            rx_ipv4_checksum: rx & sys::RTE_ETH_RX_OFFLOAD_IPV4_CKSUM != 0,
            rx_udp_checksum: rx & sys::RTE_ETH_RX_OFFLOAD_UDP_CKSUM != 0,
            rx_scatter: rx & sys::RTE_ETH_RX_OFFLOAD_SCATTER != 0,
            tx_ipv4_checksum: tx & sys::RTE_ETH_TX_OFFLOAD_IPV4_CKSUM != 0,
            tx_udp_checksum: tx & sys::RTE_ETH_TX_OFFLOAD_UDP_CKSUM != 0,
            tx_multi_segs: tx & sys::RTE_ETH_TX_OFFLOAD_MULTI_SEGS != 0,
            tx_mbuf_fast_free: tx & sys::RTE_ETH_TX_OFFLOAD_MBUF_FAST_FREE != 0,
        }
    }

    /// Short names of the offloads present, for humans.
    pub fn names(&self) -> Vec<&'static str> {
        [
            (self.rx_ipv4_checksum, "rx-ipv4-cksum"),
            (self.rx_udp_checksum, "rx-udp-cksum"),
            (self.rx_scatter, "rx-scatter"),
            (self.tx_ipv4_checksum, "tx-ipv4-cksum"),
            (self.tx_udp_checksum, "tx-udp-cksum"),
            (self.tx_multi_segs, "tx-multi-segs"),
            (self.tx_mbuf_fast_free, "tx-mbuf-fast-free"),
        ]
        .into_iter()
        .filter_map(|(on, name)| on.then_some(name))
        .collect()
    }
}

/// Link state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkStatus {
    /// Carrier present.
    pub up: bool,
    /// Speed in Mbit/s (0 when unknown).
    pub speed_mbps: u32,
    /// Full duplex.
    pub full_duplex: bool,
}

/// What a port is, as `roce port info` prints it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortInfo {
    /// Port id.
    pub id: u16,
    /// ethdev name (e.g. `net_ring0`).
    pub name: String,
    /// Driver name (e.g. `net_null`).
    pub driver: String,
    /// MAC address.
    pub mac: [u8; 6],
    /// Current L3 MTU.
    pub mtu: usize,
    /// Smallest MTU the device takes.
    pub min_mtu: usize,
    /// Largest MTU the device takes.
    pub max_mtu: usize,
    /// Link state now.
    pub link: LinkStatus,
    /// Offloads the device offers.
    pub offloads: Offloads,
    /// NUMA socket (-1 when unknown).
    pub socket: i32,
    /// Most RX queues the device offers.
    pub max_rx_queues: u16,
    /// Most TX queues the device offers.
    pub max_tx_queues: u16,
}

/// A DPDK port's device counters (`rte_eth_stats_get`, DPDK's `struct rte_eth_stats`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EthStats {
    /// Frames received.
    pub rx_packets: u64,
    /// Frames sent.
    pub tx_packets: u64,
    /// Bytes received.
    pub rx_bytes: u64,
    /// Bytes sent.
    pub tx_bytes: u64,
    /// Frames the device dropped for lack of RX descriptors.
    pub rx_missed: u64,
    /// RX errors.
    pub rx_errors: u64,
    /// TX errors.
    pub tx_errors: u64,
    /// RX mbuf allocation failures.
    pub rx_nombuf: u64,
}

fn dev_info(eal: &Eal, port: u16) -> Result<sys::rte_eth_dev_info, DpdkError> {
    eal.check_port(port)?;
    let mut info = sys::rte_eth_dev_info::default();
    // SAFETY: valid port id; `info` is a valid out pointer.
    check("rte_eth_dev_info_get", unsafe {
        sys::rte_eth_dev_info_get(port, &mut info)
    })?;
    Ok(info)
}

fn link_status(port: u16) -> Result<LinkStatus, DpdkError> {
    let mut link = sys::rte_eth_link::default();
    // SAFETY: valid port id; `link` is a valid out pointer.
    check("rte_eth_link_get_nowait", unsafe {
        sys::rte_eth_link_get_nowait(port, &mut link)
    })?;
    Ok(LinkStatus {
        up: u32::from(link.link_status()) == sys::RTE_ETH_LINK_UP,
        speed_mbps: link.link_speed,
        full_duplex: u32::from(link.link_duplex()) == sys::RTE_ETH_LINK_FULL_DUPLEX,
    })
}

/// Describes port `port` without configuring it.
pub(crate) fn port_info(eal: &Eal, port: u16) -> Result<PortInfo, DpdkError> {
    let info = dev_info(eal, port)?;
    let driver = if info.driver_name.is_null() {
        String::new()
    } else {
        // SAFETY: non-null, NUL-terminated static string owned by the driver.
        unsafe { CStr::from_ptr(info.driver_name) }
            .to_string_lossy()
            .into_owned()
    };
    let mut name = [0 as core::ffi::c_char; 64];
    // SAFETY: valid port; `name` holds RTE_ETH_NAME_MAX_LEN (64) bytes.
    check("rte_eth_dev_get_name_by_port", unsafe {
        sys::rte_eth_dev_get_name_by_port(port, name.as_mut_ptr())
    })?;
    // SAFETY: DPDK wrote a NUL-terminated name into the 64-byte buffer.
    let name = unsafe { CStr::from_ptr(name.as_ptr()) }
        .to_string_lossy()
        .into_owned();
    // rte_ether_addr is 6 bytes aligned to 2; three u16s have that layout.
    let mut mac_words = [0u16; 3];
    // SAFETY: valid port; the buffer has rte_ether_addr's size and alignment.
    check("rte_eth_macaddr_get", unsafe {
        sys::rte_eth_macaddr_get(port, mac_words.as_mut_ptr().cast())
    })?;
    let mut mac = [0u8; 6];
    for (chunk, w) in mac.chunks_exact_mut(2).zip(mac_words) {
        chunk.copy_from_slice(&w.to_ne_bytes());
    }
    let mut mtu = 0u16;
    // SAFETY: valid port; valid out pointer.
    check("rte_eth_dev_get_mtu", unsafe {
        sys::rte_eth_dev_get_mtu(port, &mut mtu)
    })?;
    Ok(PortInfo {
        id: port,
        name,
        driver,
        mac,
        mtu: usize::from(mtu),
        min_mtu: usize::from(info.min_mtu),
        max_mtu: max_mtu(info.max_mtu, info.max_rx_pktlen),
        link: link_status(port)?,
        offloads: Offloads::from_capa(info.rx_offload_capa, info.tx_offload_capa),
        // SAFETY: valid port id.
        socket: unsafe { sys::rte_eth_dev_socket_id(port) },
        max_rx_queues: info.max_rx_queues,
        max_tx_queues: info.max_tx_queues,
    })
}

impl Eal {
    /// Describes port `port` (driver, MAC, MTU, link, offloads) without configuring it.
    pub fn port_info(&self, port: u16) -> Result<PortInfo, DpdkError> {
        port_info(self, port)
    }
}

/// A started device; stopped and closed when the last queue's [`DpdkPort`] goes.
#[derive(Debug)]
struct Device {
    id: u16,
    /// The pool the RX queues fill from: dropped after the device is closed.
    _pool: Arc<Mempool>,
}

impl Drop for Device {
    fn drop(&mut self) {
        // SAFETY: we started the port; stop releases its mbufs back to our pool (still alive:
        // we hold an Arc to it) and close frees the queues, so no queue outlives the pool.
        unsafe {
            let ret = sys::rte_eth_dev_stop(self.id);
            if ret < 0 {
                tracing::warn!(port = self.id, ret, "rte_eth_dev_stop failed");
            }
            let ret = sys::rte_eth_dev_close(self.id);
            if ret < 0 {
                tracing::warn!(port = self.id, ret, "rte_eth_dev_close failed");
            }
        }
    }
}

/// One RX/TX queue pair of a started ethdev port (queue 0 unless split with
/// [`DpdkPort::into_queues`]).
#[derive(Debug)]
pub struct DpdkPort {
    id: u16,
    queue: u16,
    queues: u16,
    device: Arc<Device>,
    pool: Arc<Mempool>,
    caps: PortCaps,
    info: PortInfo,
    enabled: Offloads,
}

impl DpdkPort {
    /// Configures and starts `port` with `config.queues` queue pairs, receiving into `pool`;
    /// the port returned is queue 0 (see [`DpdkPort::into_queues`] for the others).
    pub fn new(
        eal: &Eal,
        port: u16,
        pool: Arc<Mempool>,
        config: &PortConfig,
    ) -> Result<DpdkPort, DpdkError> {
        let info = dev_info(eal, port)?;
        let offered = Offloads::from_capa(info.rx_offload_capa, info.tx_offload_capa);
        let room = pool.max_frame().saturating_sub(L2_OVERHEAD);
        let (min, max) = (
            usize::from(info.min_mtu),
            max_mtu(info.max_mtu, info.max_rx_pktlen),
        );
        let mtu = config
            .mtu
            .unwrap_or(1500.clamp(min, max.max(min)).min(room));
        if mtu < min || mtu > max || mtu > room {
            return Err(DpdkError::Mtu {
                port,
                mtu,
                min,
                max,
                room,
            });
        }

        let mut conf = sys::rte_eth_conf::default();
        conf.rxmode.mtu = u32::try_from(mtu).unwrap_or(u32::MAX);
        let mut enabled = Offloads::default();
        if offered.tx_mbuf_fast_free {
            conf.txmode.offloads |= sys::RTE_ETH_TX_OFFLOAD_MBUF_FAST_FREE;
            enabled.tx_mbuf_fast_free = true;
        }
        if config.tx_ipv4_checksum && offered.tx_ipv4_checksum {
            conf.txmode.offloads |= sys::RTE_ETH_TX_OFFLOAD_IPV4_CKSUM;
            enabled.tx_ipv4_checksum = true;
        }
        let queues = config.queues.max(1);
        if queues > info.max_rx_queues.max(1) || queues > info.max_tx_queues.max(1) {
            return Err(DpdkError::Queues {
                port,
                asked: queues,
                rx: info.max_rx_queues,
                tx: info.max_tx_queues,
            });
        }
        // SAFETY: valid port; `conf` is a valid, zero-initialised configuration.
        check("rte_eth_dev_configure", unsafe {
            sys::rte_eth_dev_configure(port, queues, queues, &conf)
        })?;
        let mut started = DpdkPort {
            id: port,
            queue: 0,
            queues,
            device: Arc::new(Device {
                id: port,
                _pool: pool.clone(),
            }),
            pool,
            caps: PortCaps {
                mtu,
                burst: config.burst,
            },
            info: port_info(eal, port)?,
            enabled,
        };
        let (mut rxd, mut txd) = (config.rx_desc, config.tx_desc);
        // SAFETY: valid, configured port; valid out pointers.
        check("rte_eth_dev_adjust_nb_rx_tx_desc", unsafe {
            sys::rte_eth_dev_adjust_nb_rx_tx_desc(port, &mut rxd, &mut txd)
        })?;
        // SAFETY: valid port id.
        let socket = unsafe { sys::rte_eth_dev_socket_id(port) };
        let socket = u32::try_from(socket).unwrap_or(sys::SOCKET_ID_ANY as u32);
        for q in 0..queues {
            // SAFETY: configured port; NULL rxconf means the device default; the pool outlives
            // the queue because the device holds an Arc to it and is closed before dropping it.
            check("rte_eth_rx_queue_setup", unsafe {
                sys::rte_eth_rx_queue_setup(
                    port,
                    q,
                    rxd,
                    socket,
                    std::ptr::null(),
                    started.pool.as_ptr(),
                )
            })?;
            // SAFETY: configured port; NULL txconf means the device default.
            check("rte_eth_tx_queue_setup", unsafe {
                sys::rte_eth_tx_queue_setup(port, q, txd, socket, std::ptr::null())
            })?;
        }
        // SAFETY: configured port with its queues set up.
        check("rte_eth_dev_start", unsafe { sys::rte_eth_dev_start(port) })?;
        if config.promiscuous {
            // SAFETY: started port. Not every PMD supports it (ENOTSUP is fine).
            let ret = unsafe { sys::rte_eth_promiscuous_enable(port) };
            if ret < 0 {
                tracing::debug!(port, ret, "promiscuous mode not available");
            }
        }
        if !config.link_timeout.is_zero() {
            started.wait_link(config.link_timeout)?;
        }
        started.info = port_info(eal, port)?;
        tracing::info!(port, name = %started.info.name, driver = %started.info.driver, mtu, "port started");
        Ok(started)
    }

    /// Waits until the link is up, polling every 10 ms, at most `timeout`.
    pub fn wait_link(&self, timeout: Duration) -> Result<LinkStatus, DpdkError> {
        let start = Instant::now();
        loop {
            let link = link_status(self.id)?;
            if link.up {
                return Ok(link);
            }
            if start.elapsed() >= timeout {
                return Err(DpdkError::LinkDown {
                    port: self.id,
                    waited_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
                });
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// The port id.
    pub fn id(&self) -> u16 {
        self.id
    }

    /// The queue pair this handle sends and receives on.
    pub fn queue(&self) -> u16 {
        self.queue
    }

    /// Queue pairs the device was set up with.
    pub fn queue_count(&self) -> u16 {
        self.queues
    }

    /// One handle per queue pair, queue 0 first: each goes to the lcore that polls it (a queue
    /// must be polled by one thread at a time, which owning its handle guarantees).
    pub fn into_queues(self) -> Vec<DpdkPort> {
        let mut out = Vec::with_capacity(usize::from(self.queues));
        for q in 1..self.queues {
            out.push(DpdkPort {
                id: self.id,
                queue: q,
                queues: self.queues,
                device: self.device.clone(),
                pool: self.pool.clone(),
                caps: self.caps,
                info: self.info.clone(),
                enabled: self.enabled,
            });
        }
        out.insert(0, self);
        out
    }

    /// What the device is (as of start).
    pub fn info(&self) -> &PortInfo {
        &self.info
    }

    /// Offloads we enabled.
    pub fn enabled_offloads(&self) -> Offloads {
        self.enabled
    }

    /// The link now.
    pub fn link(&self) -> Result<LinkStatus, DpdkError> {
        link_status(self.id)
    }

    /// The pool this port allocates from.
    pub fn pool(&self) -> &Arc<Mempool> {
        &self.pool
    }

    /// Device counters.
    pub fn stats(&self) -> Result<EthStats, DpdkError> {
        let mut s = sys::rte_eth_stats::default();
        // SAFETY: valid port; valid out pointer.
        check("rte_eth_stats_get", unsafe {
            sys::rte_eth_stats_get(self.id, &mut s)
        })?;
        Ok(EthStats {
            rx_packets: s.ipackets,
            tx_packets: s.opackets,
            rx_bytes: s.ibytes,
            tx_bytes: s.obytes,
            rx_missed: s.imissed,
            rx_errors: s.ierrors,
            tx_errors: s.oerrors,
            rx_nombuf: s.rx_nombuf,
        })
    }
}

impl Port for DpdkPort {
    type Buf = Mbuf;

    fn caps(&self) -> PortCaps {
        self.caps
    }

    fn alloc(&mut self) -> Option<Mbuf> {
        // Frames start so their ICRC-hashed bytes begin on a cache line (see ICRC_LEAD).
        self.pool.alloc_aligned(roce_proto::wire::ICRC_LEAD as u16)
    }

    fn rx_burst(&mut self, out: &mut Vec<Mbuf>, max: usize) -> usize {
        let max = u16::try_from(max).unwrap_or(u16::MAX);
        out.reserve(usize::from(max));
        let len = out.len();
        // SAFETY: the port is started; `out` has room for `max` more elements and Mbuf is
        // repr(transparent) over a non-null rte_mbuf pointer.
        let n = unsafe {
            sys::roce_shim_rx_burst(
                self.id,
                self.queue,
                out.as_mut_ptr().add(len).cast::<*mut sys::rte_mbuf>(),
                max,
            )
        };
        let n = usize::from(n).min(usize::from(max));
        // SAFETY: DPDK wrote n valid mbufs we now own after `len`.
        unsafe { out.set_len(len + n) };
        n
    }

    fn tx_burst(&mut self, bufs: &mut Vec<Mbuf>) -> usize {
        let len = bufs.len();
        let n = u16::try_from(len).unwrap_or(u16::MAX);
        // SAFETY: the port is started; the first n elements are owned mbuf pointers. The PMD
        // takes ownership of the first `sent` of them.
        let sent = unsafe {
            sys::roce_shim_tx_burst(
                self.id,
                self.queue,
                bufs.as_mut_ptr().cast::<*mut sys::rte_mbuf>(),
                n,
            )
        };
        let sent = usize::from(sent).min(len);
        // SAFETY: the first `sent` mbufs now belong to the PMD: shift the rest to the front and
        // shorten without dropping (no double free); nothing here can panic in between.
        unsafe {
            let p = bufs.as_mut_ptr();
            std::ptr::copy(p.add(sent), p, len - sent);
            bufs.set_len(len - sent);
        }
        sent
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_mtu_is_what_configure_accepts_of_both_limits() {
        // net_memif (22.11): an MTU up to 65535, frames up to 1518.
        assert_eq!(max_mtu(u16::MAX, 1518), 1500);
        // net_ring: no frame limit.
        assert_eq!(max_mtu(u16::MAX, u32::MAX), 65535);
        // A NIC with VLAN tags in its overhead: the MTU it reports is the limit.
        assert_eq!(max_mtu(9574, 9600), 9574);
        // A frame limit below what the reported MTU and the same overhead give.
        assert_eq!(max_mtu(3542, 3000), 2982);
    }
}
