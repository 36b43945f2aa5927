//! A switch's forwarding table: the equal-cost group of egress ports toward each destination
//! host, and which of those ports have a link their sending end believes up.
//!
//! Every packet a switch forwards looks its destination up here, so the per-destination part
//! is kept small: two bytes per host naming one of the switch's few distinct groups, whose live
//! members sit together in a table of a few cache lines. Twelve bytes per host (the live group
//! inline) made a 1,280-host fabric's tables 2.7 MB, a cache miss on most lookups.

use std::collections::HashMap;

/// The live members of one equal-cost group: `len` ports from `start` in
/// `RouteTable::live_ports`, the first of them (if any) kept inline.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct LiveGroup {
    pub(crate) start: u32,
    pub(crate) len: u32,
    pub(crate) first: u16,
}

/// The routes of one switch (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct RouteTable {
    /// The equal-cost group toward each destination (host index), an index into `groups`.
    routes: Vec<u32>,
    /// The distinct equal-cost groups (egress ports): a three-tier fabric's hundreds of
    /// destinations share a handful.
    groups: Vec<Vec<u16>>,
    /// Bit `p` set while port `p` has a link its sending end believes up (what a lookup may
    /// pick): one word per 64 ports.
    live: Vec<u64>,
    /// The live members of each group (`spans[g]` for group `g`), or, when there are more
    /// groups than a `u16` names, of each destination (then `group_of` is empty).
    spans: Vec<LiveGroup>,
    /// Per destination host, its group as an index into `spans`.
    group_of: Vec<u16>,
    /// The live members of every group, group after group, in route order.
    live_ports: Vec<u16>,
}

impl RouteTable {
    /// Sets the equal-cost egress ports toward each destination (indexed by host).
    pub(crate) fn set_routes(&mut self, routes: Vec<Vec<u16>>) {
        let mut index = HashMap::new();
        self.groups.clear();
        self.routes = routes
            .into_iter()
            .map(|r| {
                *index.entry(r).or_insert_with_key(|r| {
                    self.groups.push(r.clone());
                    (self.groups.len() - 1) as u32
                })
            })
            .collect();
        self.relive();
    }

    /// Rebuilds `spans`, `group_of` and `live_ports` from the routes and the live-port bits.
    fn relive(&mut self) {
        let mut ports = std::mem::take(&mut self.live_ports);
        ports.clear();
        let spans: Vec<LiveGroup> = self
            .groups
            .iter()
            .map(|g| {
                let start = ports.len();
                ports.extend(g.iter().copied().filter(|&p| self.port_live(p)));
                LiveGroup {
                    start: start as u32,
                    len: (ports.len() - start) as u32,
                    first: ports.get(start).copied().unwrap_or(0),
                }
            })
            .collect();
        self.live_ports = ports;
        if spans.len() <= usize::from(u16::MAX) + 1 {
            self.group_of = self.routes.iter().map(|&g| g as u16).collect();
            self.spans = spans;
        } else {
            self.group_of.clear();
            self.spans = self
                .routes
                .iter()
                .map(|&g| spans.get(g as usize).copied().unwrap_or_default())
                .collect();
        }
    }

    /// The live members of the group toward `host`, as a span of [`RouteTable::members`]
    /// (`None` for a destination without routes).
    #[inline]
    pub(crate) fn group(&self, host: usize) -> Option<LiveGroup> {
        let i = if self.group_of.is_empty() {
            host
        } else {
            usize::from(*self.group_of.get(host)?)
        };
        self.spans.get(i).copied()
    }

    /// The `len` live ports of a group from `start` (see [`LiveGroup`]).
    #[inline]
    pub(crate) fn members(&self, g: LiveGroup) -> Option<&[u16]> {
        let start = g.start as usize;
        self.live_ports.get(start..start + g.len as usize)
    }

    /// The distinct groups, and each destination's group among them (for tests that check
    /// a lookup against the definition).
    #[cfg(test)]
    pub(crate) fn definition(&self) -> (&[Vec<u16>], &[u32]) {
        (&self.groups, &self.routes)
    }

    /// Ports that are members of an equal-cost group (a route with more than one port).
    pub(crate) fn ecmp_members(&self) -> Vec<u16> {
        let mut m: Vec<u16> = self
            .groups
            .iter()
            .filter(|r| r.len() > 1)
            .flatten()
            .copied()
            .collect();
        m.sort_unstable();
        m.dedup();
        m
    }

    /// Records whether `port` has a link its sending end believes up.
    pub(crate) fn set_port_live(&mut self, port: u16, live: bool) {
        let (word, bit) = (usize::from(port) / 64, port % 64);
        if self.live.len() <= word {
            self.live.resize(word + 1, 0);
        }
        if let Some(w) = self.live.get_mut(word) {
            *w = (*w & !(1 << bit)) | (u64::from(live) << bit);
        }
        self.relive();
    }

    /// Whether `port` has a link its sending end believes up, as last set by
    /// [`RouteTable::set_port_live`] (false for a port never set).
    pub(crate) fn port_live(&self, port: u16) -> bool {
        self.live
            .get(usize::from(port) / 64)
            .is_some_and(|w| w & (1 << (port % 64)) != 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The live members `table` gives toward each of `hosts` destinations.
    fn live(table: &RouteTable, hosts: usize) -> Vec<Option<Vec<u16>>> {
        (0..hosts)
            .map(|h| Some(table.members(table.group(h)?)?.to_vec()))
            .collect()
    }

    #[test]
    fn lookups_give_each_destinations_live_members_in_route_order() {
        let mut t = RouteTable::default();
        for p in 0..4 {
            t.set_port_live(p, true);
        }
        t.set_routes(vec![vec![0], vec![2, 3], vec![1], vec![2, 3], vec![]]);
        let want = |v: &[&[u16]]| v.iter().map(|m| Some(m.to_vec())).collect::<Vec<_>>();
        assert_eq!(live(&t, 6)[..5], want(&[&[0], &[2, 3], &[1], &[2, 3], &[]]));
        assert_eq!(live(&t, 6)[5], None, "no route toward an unknown host");
        assert_eq!(t.group(1).map(|g| g.first), Some(2));
        assert_eq!(t.group(1), t.group(3), "one group, shared");
        t.set_port_live(2, false);
        assert_eq!(live(&t, 5)[..4], want(&[&[0], &[3], &[1], &[3]]));
        assert_eq!(t.group(3).map(|g| (g.len, g.first)), Some((1, 3)));
        assert_eq!(t.ecmp_members(), vec![2, 3]);
    }

    #[test]
    fn more_groups_than_a_u16_names_fall_back_to_a_span_per_destination() {
        // 70,000 destinations, each its own group of two ports out of 400.
        let hosts = 70_000;
        let pair = |h: usize| vec![(h % 400) as u16, ((h / 400) % 400) as u16];
        let mut routes: Vec<Vec<u16>> = (0..hosts).map(pair).collect();
        // Make every group distinct: distinct (a, b) pairs for h below 160,000.
        routes.iter_mut().for_each(|r| r.dedup());
        let mut t = RouteTable::default();
        for p in 0..400 {
            t.set_port_live(p, true);
        }
        t.set_routes(routes.clone());
        assert!(t.group_of.is_empty(), "{} groups", t.spans.len());
        for h in [0, 1, 399, 400, 65_535, 65_536, 69_999] {
            let got = t.group(h).and_then(|g| t.members(g)).map(<[u16]>::to_vec);
            assert_eq!(got.as_ref(), routes.get(h), "host {h}");
        }
        assert_eq!(t.group(hosts), None);
    }
}
