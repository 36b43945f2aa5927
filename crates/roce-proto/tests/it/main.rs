//! Integration tests of roce-proto, one binary: two endpoints on virtual time against an
//! attacker on the link.

mod spoofed_peer;
