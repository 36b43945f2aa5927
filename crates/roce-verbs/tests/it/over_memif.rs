//! The verbs programs of [`crate::programs`] again, the two processes' ports the ends of one
//! net_memif (shared memory, `memif:SOCKET,server` and `memif:SOCKET,client`) instead of taps on
//! a bridge: the library's data path with no kernel in it. TCP exchanges still meet at the
//! bridge's address. Needs root, as the tap tests.

use crate::against_roce::bw_pair;
use crate::programs::{checked_pingpong, multithreaded, perftest};
use crate::support::{Link, BW_HEADER, LAT_HEADER, WRITE_BW_64K};

#[test]
fn ibv_rc_pingpong_checks_every_buffer_over_memif() {
    checked_pingpong(Link::Memif, "memif-pingpong", "200", &["-s", "8192"]);
}

#[test]
fn ib_write_bw_read_bw_and_send_lat_over_memif() {
    let write = perftest(
        Link::Memif,
        "memif-write-bw",
        "ib_write_bw",
        &WRITE_BW_64K[6..],
        BW_HEADER,
    );
    if let Some(rows) = write {
        assert_eq!(rows, [[65536.0, 200.0]; 2]);
    }
    let read = perftest(
        Link::Memif,
        "memif-read-bw",
        "ib_read_bw",
        &["-s", "16384", "-n", "200"],
        BW_HEADER,
    );
    if let Some(rows) = read {
        assert_eq!(rows, [[16384.0, 200.0]; 2]);
    }
    let lat = perftest(
        Link::Memif,
        "memif-send-lat",
        "ib_send_lat",
        &["-n", "200"],
        LAT_HEADER,
    );
    if let Some(rows) = lat {
        assert_eq!(rows, [[2.0, 200.0]; 2]);
    }
}

#[test]
fn a_multithreaded_program_gets_every_byte_over_memif() {
    multithreaded(Link::Memif, "memif-mt");
}

#[test]
fn ib_write_bw_on_the_library_against_roce_perf_over_memif_both_ways() {
    let perf = [
        "perf",
        "write-bw",
        "--peer-format",
        "perftest",
        "-s",
        "65536",
        "-n",
        "200",
    ];
    bw_pair(Link::Memif, "memif-vs-perf", true, &perf, &WRITE_BW_64K);
    bw_pair(Link::Memif, "memif-vs-perf-2", false, &perf, &WRITE_BW_64K);
}
