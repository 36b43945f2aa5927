//! What the modules of this binary share: running the CLI and reading what it says
//! (`cli_output`), child processes and TCP ports (`child`), hostile HTTP clients (`http_attack`), the worked example of a congestion
//! controller (`my_cc`), the TCP exchanges in a capture (`oob_capture`) and the scenario files
//! several tests run (`scenario_files`). What other crates' tests share too is in roce-testkit.

#[cfg(feature = "dpdk")]
pub mod child;
pub mod cli_output;
pub mod http_attack;
pub mod my_cc;
pub mod oob_capture;
pub mod scenario_files;
