//! What the hosts send and what it should take: [`workload`]s, Poisson [`traffic`] from size
//! distributions, [`collective`]s, and the flow-completion times flows are measured by
//! ([`fct`]).

pub mod collective;
pub mod fct;
pub mod traffic;
pub mod workload;
