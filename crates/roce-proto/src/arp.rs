//! A sans-IO ARP [`Resolver`] (RFC 826) for IPv4 over Ethernet: answers requests for our address
//! and resolves peers through a neighbour cache with expiry. No I/O and no clock: frames come in
//! through `handle_frame(now, ..)`, go out through `poll_transmit(now, ..)`. The wire format is
//! [`crate::wire::arp`]. Not here: IPv6 neighbour discovery, proxy ARP, ARP over other links.

use std::collections::VecDeque;
use std::net::Ipv4Addr;

use crate::time::{Duration, Instant};
use crate::wire::arp::{emit_frame, parse_frame, ArpRepr, Operation};
use crate::wire::ethernet::{EthernetAddress, VlanTag};

/// Why a frame was not taken, or could not be written (the wire format's error).
pub use crate::wire::arp::ArpError;

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
