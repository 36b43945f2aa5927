//! Integration tests of roce-verbs, one binary: unmodified RDMA programs on `libroce_verbs.so`
//! (`programs`), programs on the library against roce's own perftest and rc_pingpong
//! (`against_roce`), and both again over shared memory (`over_memif`), each pair of processes in a network namespace of its own, one namespace at a
//! time (`support`). Linux only; needs root.
#![cfg(target_os = "linux")]
// Tests may panic: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod against_roce;
mod over_memif;
mod programs;
mod support;
