//! The wait-for graph of a PFC deadlock search ([`crate::net::deadlock`]): the cycle it reports
//! and the depth-first search that finds one, apart from the fabric they are read from.

use crate::SwitchId;

/// A cycle of stuck lossless queues (see [`crate::net::deadlock`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeadlockCycle {
    /// The priority of its queues.
    pub prio: usize,
    /// Its queues as (switch, egress port), each waiting on the next and the last on the
    /// first.
    pub queues: Vec<(SwitchId, u16)>,
}

/// The first cycle of the graph `edges` (adjacency lists) a depth-first search from node 0,
/// 1, ... meets, as the nodes along it.
pub(super) fn find_cycle(edges: &[Vec<usize>]) -> Option<Vec<usize>> {
    // 0 unseen, 1 on the current path, 2 done.
    let mut state = vec![0u8; edges.len()];
    for root in 0..edges.len() {
        if state[root] != 0 {
            continue;
        }
        // The path: (node, next edge to try).
        let mut path: Vec<(usize, usize)> = vec![(root, 0)];
        state[root] = 1;
        while let Some(&mut (v, ref mut next)) = path.last_mut() {
            let Some(&w) = edges.get(v).and_then(|e| e.get(*next)) else {
                state[v] = 2;
                path.pop();
                continue;
            };
            *next += 1;
            match state.get(w) {
                Some(0) => {
                    state[w] = 1;
                    path.push((w, 0));
                }
                Some(1) => {
                    let from = path.iter().position(|&(u, _)| u == w)?;
                    return Some(path[from..].iter().map(|&(u, _)| u).collect());
                }
                _ => {}
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::find_cycle;

    #[test]
    fn the_first_cycle_is_found_from_where_it_closes() {
        // 0 -> 1 -> 2 -> 3 -> 1, and 4 alone.
        let edges = vec![vec![1], vec![2], vec![3], vec![1], vec![]];
        assert_eq!(find_cycle(&edges), Some(vec![1, 2, 3]));
        // A chain and a diamond have none.
        assert_eq!(find_cycle(&[vec![1], vec![2], vec![]]), None);
        assert_eq!(find_cycle(&[vec![1, 2], vec![3], vec![3], vec![]]), None);
        // Two queues pausing each other.
        assert_eq!(find_cycle(&[vec![1], vec![0]]), Some(vec![0, 1]));
    }
}
