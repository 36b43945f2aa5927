//! The golden vectors in crates/roce-proto/tests/vectors (real Linux Soft-RoCE captures): where
//! they are and the README's table of them, for every test that reads them.

use std::path::{Path, PathBuf};

/// The vectors' folder.
pub const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../roce-proto/tests/vectors");

/// The vector file `name`.
pub fn path(name: &str) -> PathBuf {
    Path::new(DIR).join(name)
}

/// `(file, frames, RoCE frames)` of every vector, by file name, from the README's table.
pub const COUNTS: [(&str, usize, usize); 10] = [
    ("extra_rc_pingpong_1003_mtu256.pcap", 42, 30),
    ("host_peer_to_guest.pcap", 27, 15),
    ("ib_read_bw_8192_mtu1024.pcap", 86, 45),
    ("ib_write_bw_64.pcap", 50, 10),
    ("ib_write_bw_8192_mtu1024.pcap", 84, 45),
    ("rc_pingpong_send_64.pcap", 32, 20),
    ("rc_pingpong_send_8192_mtu1024.pcap", 66, 54),
    ("v6_rc_pingpong_64.pcap", 31, 20),
    ("verbs_ce_marked_to_a.pcap", 19, 7),
    ("verbs_imm_atomic.pcap", 38, 26),
];

/// The one vector with a deliberately corrupted ICRC (its frame 14).
pub const CORRUPTED: &str = "host_peer_to_guest.pcap";
