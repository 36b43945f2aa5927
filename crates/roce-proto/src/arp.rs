//! ARP for IPv4 over Ethernet (RFC 826): the packet view and `ArpRepr`, and a sans-IO [`Resolver`]
//! that answers requests for our address and resolves peers through a neighbour cache with expiry.
//! No I/O and no clock: frames come in through `handle_frame(now, ..)`, go out through
//! `poll_transmit(now, ..)`. Not here: IPv6 neighbour discovery, proxy ARP, ARP over other links.

use std::collections::VecDeque;
use std::net::Ipv4Addr;

use crate::time::{Duration, Instant};
use crate::wire::ethernet;
use crate::wire::ethernet::{EtherType, EthernetAddress, VlanTag};
use crate::wire::{read_u16, write_u16};

mod field {
    use core::ops::Range;
    pub const HTYPE: usize = 0;
    pub const PTYPE: usize = 2;
    pub const HLEN: usize = 4;
    pub const PLEN: usize = 5;
    pub const OPER: usize = 6;
    pub const SHA: Range<usize> = 8..14;
    pub const SPA: Range<usize> = 14..18;
    pub const THA: Range<usize> = 18..24;
    pub const TPA: Range<usize> = 24..28;
}

/// Length of an Ethernet/IPv4 ARP packet.
pub const PACKET_LEN: usize = 28;
/// Hardware type of Ethernet.
pub const HTYPE_ETHERNET: u16 = 1;
/// Protocol type of IPv4 (its EtherType).
pub const PTYPE_IPV4: u16 = 0x0800;

/// Why an ARP frame was not taken, or could not be written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ArpError {
    /// The frame is not ARP (another EtherType).
    #[error("not an ARP frame")]
    NotArp,
    /// The frame ends before the ARP packet does.
    #[error("truncated ARP packet")]
    Truncated,
    /// ARP for another hardware or protocol type, or odd address lengths.
    #[error("unsupported ARP: htype {htype}, ptype {ptype:#06x}, hlen {hlen}, plen {plen}")]
    Unsupported {
        /// Hardware type.
        htype: u16,
        /// Protocol type.
        ptype: u16,
        /// Hardware address length.
        hlen: u8,
        /// Protocol address length.
        plen: u8,
    },
    /// The output buffer is shorter than the frame.
    #[error("buffer too small for an ARP frame")]
    BufferTooSmall,
}

/// The ARP operation; unknown values are kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operation {
    /// 1: who has `target_ip`?
    Request,
    /// 2: `sender_ip` is at `sender_mac`.
    Reply,
    /// Anything else (RARP and friends).
    Unknown(u16),
}

impl From<u16> for Operation {
    fn from(value: u16) -> Self {
        match value {
            1 => Operation::Request,
            2 => Operation::Reply,
            other => Operation::Unknown(other),
        }
    }
}

impl From<Operation> for u16 {
    fn from(value: Operation) -> Self {
        match value {
            Operation::Request => 1,
            Operation::Reply => 2,
            Operation::Unknown(other) => other,
        }
    }
}

/// A read/write view of an ARP packet (the Ethernet payload).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> ArpPacket<T> {
    /// Wraps a buffer without checking its length.
    pub const fn new_unchecked(buffer: T) -> Self {
        ArpPacket { buffer }
    }

    /// Wraps a buffer after checking it holds an Ethernet/IPv4-sized ARP packet.
    pub fn new_checked(buffer: T) -> Result<Self, ArpError> {
        if buffer.as_ref().len() < PACKET_LEN {
            return Err(ArpError::Truncated);
        }
        Ok(Self::new_unchecked(buffer))
    }

    /// Hardware type (1 = Ethernet).
    pub fn htype(&self) -> u16 {
        read_u16(self.buffer.as_ref(), field::HTYPE)
    }
    /// Protocol type (0x0800 = IPv4).
    pub fn ptype(&self) -> u16 {
        read_u16(self.buffer.as_ref(), field::PTYPE)
    }
    /// Hardware address length.
    pub fn hlen(&self) -> u8 {
        self.buffer.as_ref()[field::HLEN]
    }
    /// Protocol address length.
    pub fn plen(&self) -> u8 {
        self.buffer.as_ref()[field::PLEN]
    }
    /// The operation.
    pub fn operation(&self) -> Operation {
        Operation::from(read_u16(self.buffer.as_ref(), field::OPER))
    }
    /// Sender hardware address.
    pub fn sender_mac(&self) -> EthernetAddress {
        mac_at(self.buffer.as_ref(), field::SHA)
    }
    /// Sender protocol address.
    pub fn sender_ip(&self) -> Ipv4Addr {
        ip_at(self.buffer.as_ref(), field::SPA)
    }
    /// Target hardware address.
    pub fn target_mac(&self) -> EthernetAddress {
        mac_at(self.buffer.as_ref(), field::THA)
    }
    /// Target protocol address.
    pub fn target_ip(&self) -> Ipv4Addr {
        ip_at(self.buffer.as_ref(), field::TPA)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> ArpPacket<T> {
    /// Writes the fixed Ethernet/IPv4 header fields (htype, ptype, hlen, plen).
    pub fn set_ethernet_ipv4(&mut self) {
        let data = self.buffer.as_mut();
        write_u16(data, field::HTYPE, HTYPE_ETHERNET);
        write_u16(data, field::PTYPE, PTYPE_IPV4);
        data[field::HLEN] = 6;
        data[field::PLEN] = 4;
    }
    /// Sets the operation.
    pub fn set_operation(&mut self, op: Operation) {
        write_u16(self.buffer.as_mut(), field::OPER, op.into());
    }
    /// Sets the sender hardware address.
    pub fn set_sender_mac(&mut self, mac: EthernetAddress) {
        self.buffer.as_mut()[field::SHA].copy_from_slice(&mac.0);
    }
    /// Sets the sender protocol address.
    pub fn set_sender_ip(&mut self, ip: Ipv4Addr) {
        self.buffer.as_mut()[field::SPA].copy_from_slice(&ip.octets());
    }
    /// Sets the target hardware address.
    pub fn set_target_mac(&mut self, mac: EthernetAddress) {
        self.buffer.as_mut()[field::THA].copy_from_slice(&mac.0);
    }
    /// Sets the target protocol address.
    pub fn set_target_ip(&mut self, ip: Ipv4Addr) {
        self.buffer.as_mut()[field::TPA].copy_from_slice(&ip.octets());
    }
}

fn mac_at(data: &[u8], range: core::ops::Range<usize>) -> EthernetAddress {
    let mut b = [0u8; 6];
    b.copy_from_slice(&data[range]);
    EthernetAddress(b)
}

fn ip_at(data: &[u8], range: core::ops::Range<usize>) -> Ipv4Addr {
    let mut b = [0u8; 4];
    b.copy_from_slice(&data[range]);
    Ipv4Addr::from(b)
}

/// A parsed Ethernet/IPv4 ARP packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ArpRepr {
    /// Request or reply.
    pub operation: Operation,
    /// Sender hardware address.
    pub sender_mac: EthernetAddress,
    /// Sender protocol address.
    pub sender_ip: Ipv4Addr,
    /// Target hardware address (all zeros in a request).
    pub target_mac: EthernetAddress,
    /// Target protocol address.
    pub target_ip: Ipv4Addr,
}

impl ArpRepr {
    /// Parses a checked packet; only Ethernet/IPv4 ARP is accepted.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &ArpPacket<&T>) -> Result<ArpRepr, ArpError> {
        if packet.buffer.as_ref().len() < PACKET_LEN {
            return Err(ArpError::Truncated);
        }
        let (htype, ptype, hlen, plen) =
            (packet.htype(), packet.ptype(), packet.hlen(), packet.plen());
        if htype != HTYPE_ETHERNET || ptype != PTYPE_IPV4 || hlen != 6 || plen != 4 {
            return Err(ArpError::Unsupported {
                htype,
                ptype,
                hlen,
                plen,
            });
        }
        Ok(ArpRepr {
            operation: packet.operation(),
            sender_mac: packet.sender_mac(),
            sender_ip: packet.sender_ip(),
            target_mac: packet.target_mac(),
            target_ip: packet.target_ip(),
        })
    }

    /// Always [`PACKET_LEN`].
    pub const fn buffer_len(&self) -> usize {
        PACKET_LEN
    }

    /// Writes exactly `buffer_len()` bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, packet: &mut ArpPacket<&mut T>) {
        packet.set_ethernet_ipv4();
        packet.set_operation(self.operation);
        packet.set_sender_mac(self.sender_mac);
        packet.set_sender_ip(self.sender_ip);
        packet.set_target_mac(self.target_mac);
        packet.set_target_ip(self.target_ip);
    }

    /// A request from `mac`/`ip` asking who has `target`.
    pub const fn request(mac: EthernetAddress, ip: Ipv4Addr, target: Ipv4Addr) -> ArpRepr {
        ArpRepr {
            operation: Operation::Request,
            sender_mac: mac,
            sender_ip: ip,
            target_mac: EthernetAddress([0; 6]),
            target_ip: target,
        }
    }
}

/// Parses a whole Ethernet frame carrying ARP (an 802.1Q tag is allowed).
pub fn parse_frame(frame: &[u8]) -> Result<(ethernet::Repr, ArpRepr), ArpError> {
    let eth = ethernet::Frame::new_checked(frame).map_err(|_| ArpError::Truncated)?;
    let eth_repr = ethernet::Repr::parse(&eth).map_err(|_| ArpError::Truncated)?;
    if eth_repr.ethertype != EtherType::Arp {
        return Err(ArpError::NotArp);
    }
    let arp = ArpPacket::new_checked(eth.payload())?;
    Ok((eth_repr, ArpRepr::parse(&arp)?))
}

/// Writes `arp` in an Ethernet frame from `src` to `dst` (with an optional tag) into `buf`;
/// returns the frame length (42, or 46 tagged; the NIC pads to the 60-byte minimum).
pub fn emit_frame(
    arp: &ArpRepr,
    src: EthernetAddress,
    dst: EthernetAddress,
    vlan: Option<VlanTag>,
    buf: &mut [u8],
) -> Result<usize, ArpError> {
    let eth = ethernet::Repr {
        dst,
        src,
        vlan,
        ethertype: EtherType::Arp,
    };
    let len = eth.buffer_len() + arp.buffer_len();
    let out = buf.get_mut(..len).ok_or(ArpError::BufferTooSmall)?;
    let mut frame = ethernet::Frame::new_unchecked(&mut *out);
    eth.emit(&mut frame);
    arp.emit(&mut ArpPacket::new_unchecked(frame.payload_mut()));
    Ok(len)
}

/// How a [`Resolver`] behaves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// Our MAC.
    pub mac: EthernetAddress,
    /// Our IPv4 address: requests for it are answered.
    pub ip: Ipv4Addr,
    /// 802.1Q tag on frames we send, if any.
    pub vlan: Option<VlanTag>,
    /// How long a learned entry is trusted.
    pub reachable_time: Duration,
    /// Time between two requests for the same address.
    pub retry_interval: Duration,
    /// Requests sent before an address is declared unreachable.
    pub max_requests: u32,
    /// Most entries the cache holds.
    pub capacity: usize,
}

impl Config {
    /// Defaults like Linux's: 30 s reachable time, a request per second, three requests, 256 entries.
    pub const fn new(mac: EthernetAddress, ip: Ipv4Addr) -> Self {
        Config {
            mac,
            ip,
            vlan: None,
            reachable_time: Duration::from_secs(30),
            retry_interval: Duration::from_secs(1),
            max_requests: 3,
            capacity: 256,
        }
    }
}

/// The answer to [`Resolver::lookup`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lookup {
    /// The address is known.
    Reachable(EthernetAddress),
    /// A request is queued or outstanding; an [`Event`] will tell how it ends.
    Pending,
    /// The cache is full of unresolved entries; try again later.
    TableFull,
}

/// What the resolver learned, in order (poll with [`Resolver::poll_event`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// A pending address answered.
    Resolved {
        /// The address asked for.
        ip: Ipv4Addr,
        /// Its MAC.
        mac: EthernetAddress,
    },
    /// No answer after `max_requests` requests.
    Unreachable {
        /// The address asked for.
        ip: Ipv4Addr,
    },
}

/// Counters, named after what they count.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// ARP frames handled (well-formed Ethernet/IPv4 ARP).
    pub rx_arp: u64,
    /// Requests for our address.
    pub rx_requests_for_us: u64,
    /// Replies received (for any address).
    pub rx_replies: u64,
    /// ARP frames that were truncated or not Ethernet/IPv4.
    pub rx_malformed: u64,
    /// Replies we sent.
    pub tx_replies: u64,
    /// Requests we sent (first tries, retries and announcements).
    pub tx_requests: u64,
    /// Pending addresses that resolved.
    pub resolved: u64,
    /// Pending addresses given up on.
    pub unreachable: u64,
    /// Entries dropped because they expired or made room.
    pub evicted: u64,
    /// Requests for our address left unanswered because [`MAX_QUEUED_REPLIES`] were waiting.
    pub replies_dropped: u64,
}

/// Most replies waiting to be sent: every request for our address asks for one, so a flood
/// queues one per asker and at most this many in all (the rest are dropped and counted).
pub const MAX_QUEUED_REPLIES: usize = 64;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Known until `expires` (`Instant::FAR_FUTURE` for static entries).
    Reachable {
        mac: EthernetAddress,
        expires: Instant,
    },
    /// Waiting for a reply; the next request (or the verdict) is due at `next`.
    Incomplete { sent: u32, next: Instant },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    ip: Ipv4Addr,
    state: State,
}

/// The ARP responder and resolver: a neighbour cache plus the frames it owes the network.
#[derive(Debug, Clone)]
pub struct Resolver {
    config: Config,
    entries: Vec<Entry>,
    /// Replies owed: (asker's MAC, asker's IP).
    replies: VecDeque<(EthernetAddress, Ipv4Addr)>,
    announce: bool,
    events: VecDeque<Event>,
    counters: Counters,
}

impl Resolver {
    /// An empty cache answering for `config.ip`.
    pub fn new(config: Config) -> Self {
        Resolver {
            config,
            entries: Vec::new(),
            replies: VecDeque::new(),
            announce: false,
            events: VecDeque::new(),
            counters: Counters::default(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The counters so far.
    pub fn counters(&self) -> Counters {
        self.counters
    }

    /// Takes one Ethernet frame. Returns the ARP packet it carried, or why it was not taken
    /// (`NotArp` for other EtherTypes: the caller hands those elsewhere).
    pub fn handle_frame(&mut self, now: Instant, frame: &[u8]) -> Result<ArpRepr, ArpError> {
        let (_, arp) = match parse_frame(frame) {
            Ok(parsed) => parsed,
            Err(ArpError::NotArp) => return Err(ArpError::NotArp),
            Err(e) => {
                self.counters.rx_malformed += 1;
                tracing::debug!(error = %e, "dropping malformed ARP frame");
                return Err(e);
            }
        };
        self.counters.rx_arp += 1;
        self.handle_arp(now, &arp);
        Ok(arp)
    }

    /// Takes one parsed ARP packet (RFC 826 "merge": refresh a known sender, learn the sender
    /// of a packet addressed to us, answer requests for our address).
    pub fn handle_arp(&mut self, now: Instant, arp: &ArpRepr) {
        if arp.operation == Operation::Reply {
            self.counters.rx_replies += 1;
        }
        let sender_valid = !arp.sender_mac.is_multicast() && !arp.sender_ip.is_unspecified();
        let for_us = arp.target_ip == self.config.ip;
        if sender_valid && arp.sender_ip != self.config.ip {
            let known = self.position(arp.sender_ip).is_some();
            if known || for_us {
                self.learn(now, arp.sender_ip, arp.sender_mac);
            }
        }
        if for_us && arp.operation == Operation::Request {
            self.counters.rx_requests_for_us += 1;
            let reply = (arp.sender_mac, arp.sender_ip);
            if !sender_valid || self.replies.contains(&reply) {
                // Nobody to answer, or the answer is already on its way.
            } else if self.replies.len() >= MAX_QUEUED_REPLIES {
                self.counters.replies_dropped += 1;
            } else {
                tracing::trace!(asker = %arp.sender_ip, "answering ARP request");
                self.replies.push_back(reply);
            }
        }
    }

    /// The MAC of `ip`, or `Pending` after queueing a request (sent by `poll_transmit`).
    pub fn lookup(&mut self, now: Instant, ip: Ipv4Addr) -> Lookup {
        if let Some(i) = self.position(ip) {
            match self.entries.get(i).map(|e| e.state) {
                Some(State::Reachable { mac, expires }) if expires > now => {
                    return Lookup::Reachable(mac)
                }
                Some(State::Incomplete { .. }) => return Lookup::Pending,
                _ => {
                    self.entries.swap_remove(i);
                    self.counters.evicted += 1;
                }
            }
        }
        if !self.make_room(now) {
            return Lookup::TableFull;
        }
        self.entries.push(Entry {
            ip,
            state: State::Incomplete { sent: 0, next: now },
        });
        Lookup::Pending
    }

    /// Adds an entry that never expires (a pre-seeded neighbour).
    pub fn insert_static(&mut self, ip: Ipv4Addr, mac: EthernetAddress) {
        self.set(ip, mac, Instant::FAR_FUTURE);
    }

    /// Queues one gratuitous ARP request announcing our address.
    pub fn announce(&mut self) {
        self.announce = true;
    }

    /// Writes the next frame owed (replies first, then announcements, then due requests) into
    /// `buf` and returns its length; `Ok(None)` when nothing is due. On `BufferTooSmall` the
    /// frame stays queued.
    #[must_use = "a returned length is a frame to send"]
    pub fn poll_transmit(
        &mut self,
        now: Instant,
        buf: &mut [u8],
    ) -> Result<Option<usize>, ArpError> {
        let (mac, ip, vlan) = (self.config.mac, self.config.ip, self.config.vlan);
        if let Some(&(asker_mac, asker_ip)) = self.replies.front() {
            let reply = ArpRepr {
                operation: Operation::Reply,
                sender_mac: mac,
                sender_ip: ip,
                target_mac: asker_mac,
                target_ip: asker_ip,
            };
            let len = emit_frame(&reply, mac, asker_mac, vlan, buf)?;
            self.replies.pop_front();
            self.counters.tx_replies += 1;
            return Ok(Some(len));
        }
        if self.announce {
            let len = emit_frame(
                &ArpRepr::request(mac, ip, ip),
                mac,
                EthernetAddress::BROADCAST,
                vlan,
                buf,
            )?;
            self.announce = false;
            self.counters.tx_requests += 1;
            return Ok(Some(len));
        }
        let max = self.config.max_requests;
        let due = self.entries.iter().position(
            |e| matches!(e.state, State::Incomplete { sent, next } if next <= now && sent < max),
        );
        let Some(i) = due else { return Ok(None) };
        let Some(entry) = self.entries.get_mut(i) else {
            return Ok(None);
        };
        let request = ArpRepr::request(mac, ip, entry.ip);
        let len = emit_frame(&request, mac, EthernetAddress::BROADCAST, vlan, buf)?;
        if let State::Incomplete { sent, next } = &mut entry.state {
            *sent += 1;
            *next = now + self.config.retry_interval;
        }
        self.counters.tx_requests += 1;
        Ok(Some(len))
    }

    /// When `handle_timeout` or `poll_transmit` next has work: the earliest request retry or
    /// give-up time. Expired reachable entries are dropped lazily and do not wake the driver.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let mut earliest = None;
        if !self.replies.is_empty() || self.announce {
            return Some(Instant::ZERO);
        }
        for e in &self.entries {
            if let State::Incomplete { next, .. } = e.state {
                earliest = Some(earliest.map_or(next, |t: Instant| t.min(next)));
            }
        }
        earliest
    }

    /// Gives up on addresses that used all their requests, and drops expired entries.
    pub fn handle_timeout(&mut self, now: Instant) {
        let max = self.config.max_requests;
        let mut i = 0;
        while let Some(e) = self.entries.get(i) {
            match e.state {
                State::Incomplete { sent, next } if sent >= max && next <= now => {
                    tracing::debug!(ip = %e.ip, "ARP: no answer, unreachable");
                    self.events.push_back(Event::Unreachable { ip: e.ip });
                    self.counters.unreachable += 1;
                    self.entries.swap_remove(i);
                }
                State::Reachable { expires, .. } if expires <= now => {
                    self.counters.evicted += 1;
                    self.entries.swap_remove(i);
                }
                _ => i += 1,
            }
        }
    }

    /// The next event, oldest first.
    #[must_use]
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// Number of entries (reachable, possibly expired, or pending).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// No entries at all.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn position(&self, ip: Ipv4Addr) -> Option<usize> {
        self.entries.iter().position(|e| e.ip == ip)
    }

    fn learn(&mut self, now: Instant, ip: Ipv4Addr, mac: EthernetAddress) {
        let expires = now + self.config.reachable_time;
        if let Some(i) = self.position(ip) {
            if let Some(entry) = self.entries.get_mut(i) {
                match entry.state {
                    State::Incomplete { .. } => {
                        self.events.push_back(Event::Resolved { ip, mac });
                        self.counters.resolved += 1;
                        entry.state = State::Reachable { mac, expires };
                    }
                    // A static entry stays static (only its MAC may change).
                    State::Reachable { expires: old, .. } => {
                        entry.state = State::Reachable {
                            mac,
                            expires: old.max(expires),
                        };
                    }
                }
            }
            return;
        }
        if self.make_room(now) {
            self.entries.push(Entry {
                ip,
                state: State::Reachable { mac, expires },
            });
        }
    }

    fn set(&mut self, ip: Ipv4Addr, mac: EthernetAddress, expires: Instant) {
        if let Some(i) = self.position(ip) {
            self.entries.swap_remove(i);
        } else if !self.make_room(Instant::ZERO) {
            return;
        }
        self.entries.push(Entry {
            ip,
            state: State::Reachable { mac, expires },
        });
    }

    /// Makes room for one entry: drops an expired one, else the reachable entry that expires
    /// first. False when every entry is pending.
    fn make_room(&mut self, now: Instant) -> bool {
        if self.entries.len() < self.config.capacity {
            return true;
        }
        let victim = self
            .entries
            .iter()
            .enumerate()
            .filter_map(|(i, e)| match e.state {
                State::Reachable { expires, .. } => Some((i, expires)),
                State::Incomplete { .. } => None,
            })
            .min_by_key(|&(_, expires)| expires.max(now));
        match victim {
            Some((i, _)) => {
                self.entries.swap_remove(i);
                self.counters.evicted += 1;
                true
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod tests;
