//! What the integration tests share: the spoofed-peer harness, its attacker and the transfer
//! it attacks.

pub mod forger;
pub mod spoofed_pair;
pub mod transfer;
