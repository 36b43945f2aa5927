//! Two endpoints under a spoofing attacker: the honest transfer ([`transfer`]), the attacker on
//! the link ([`forger`]) and the run with its verdict ([`pair`]). roce-proto's integration tests
//! sweep it as property tests; the fuzz target `spoofed_pair` drives the same run.

pub mod forger;
pub mod pair;
pub mod transfer;
