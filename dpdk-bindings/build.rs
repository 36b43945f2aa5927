//! Finds DPDK with pkg-config, generates allowlisted bindings with bindgen and compiles `shim.c`,
//! which wraps DPDK's `static inline` fast-path functions so Rust can call them.

use std::env;
use std::path::PathBuf;
use std::process;

/// Headers we bind, included by the generated wrapper.
const HEADERS: &[&str] = &[
    "rte_common.h",
    "rte_errno.h",
    "rte_eal.h",
    "rte_lcore.h",
    "rte_cycles.h",
    "rte_dev.h",
    "rte_mempool.h",
    "rte_mbuf.h",
    "rte_ethdev.h",
    "rte_ring.h",
    "rte_eth_ring.h",
    "rte_telemetry.h",
    "shim.h",
];

/// Functions, types and constants we use. Everything else stays out of the bindings.
const FUNCTIONS: &[&str] = &[
    "rte_eal_init",
    "rte_eal_cleanup",
    "rte_strerror",
    "rte_socket_id",
    "rte_get_tsc_hz",
    "rte_dev_probe",
    "rte_dev_remove",
    "rte_pktmbuf_pool_create",
    "rte_mempool_free",
    "rte_mempool_avail_count",
    "rte_mempool_in_use_count",
    "rte_eth_dev_count_avail",
    "rte_eth_find_next_owned_by",
    "rte_eth_dev_is_valid_port",
    "rte_eth_dev_get_name_by_port",
    "rte_eth_dev_get_port_by_name",
    "rte_eth_dev_info_get",
    "rte_eth_dev_configure",
    "rte_eth_dev_adjust_nb_rx_tx_desc",
    "rte_eth_rx_queue_setup",
    "rte_eth_tx_queue_setup",
    "rte_eth_dev_start",
    "rte_eth_dev_stop",
    "rte_eth_dev_close",
    "rte_eth_dev_socket_id",
    "rte_eth_dev_set_mtu",
    "rte_eth_dev_get_mtu",
    "rte_eth_promiscuous_enable",
    "rte_eth_promiscuous_get",
    "rte_eth_link_get_nowait",
    "rte_eth_macaddr_get",
    "rte_eth_stats_get",
    "rte_eth_from_rings",
    "rte_ring_create",
    "rte_ring_free",
    "rte_thread_register",
    "rte_thread_unregister",
    "rte_eal_get_runtime_dir",
    "rte_telemetry_register_cmd",
    "rte_tel_data_.*",
    "roce_shim_.*",
];

const TYPES: &[&str] = &[
    "rte_mbuf",
    "rte_mempool",
    "rte_ring",
    "rte_eth_conf",
    "rte_eth_dev_info",
    "rte_eth_rxconf",
    "rte_eth_txconf",
    "rte_eth_link",
    "rte_eth_stats",
    "rte_ether_addr",
    "rte_tel_data",
    "telemetry_cb",
];

const VARS: &[&str] = &[
    "RTE_MAX_ETHPORTS",
    "RTE_MAX_LCORE",
    "RTE_ETH_NAME_MAX_LEN",
    "RTE_MBUF_DEFAULT_BUF_SIZE",
    "RTE_PKTMBUF_HEADROOM",
    "RTE_ETH_RX_OFFLOAD_.*",
    "RTE_ETH_TX_OFFLOAD_.*",
    "RTE_ETH_LINK_.*",
    "RTE_ETH_SPEED_NUM_.*",
    "RTE_ETHER_.*",
    "RTE_MBUF_F_.*",
    "RING_F_.*",
    "SOCKET_ID_ANY",
    "E_RTE_.*",
];

/// Types whose packed-and-aligned layout bindgen cannot express: kept as opaque blobs of the right
/// size and alignment. We only ever touch them through pointers and the shim.
const OPAQUE: &[&str] = &[
    "rte_mbuf",
    "rte_mempool",
    "rte_ring",
    "rte_ether_addr",
    "rte_l2tpv2_combined_msg_hdr",
    "rte_arp_hdr",
    "rte_arp_ipv4",
    "rte_gtp_psc_generic_hdr",
    "rte_mbuf_ext_shared_info",
    "rte_eth_dev_data",
    "rte_eth_rxtx_callback",
    "rte_flow.*",
];

/// Static linking: `pkg-config --static --libs libdpdk`, turned into `rustc-link-lib` lines
/// (link arguments of a library's build script do not reach the final link). The archives that
/// pkg-config wraps in `--whole-archive` (drivers and libraries, whose constructors register
/// themselves) keep that modifier; the rest (system libraries) link as usual.
fn link_static() {
    let out = process::Command::new("pkg-config")
        .args(["--static", "--libs", "libdpdk"])
        .output();
    let Some(out) = out.ok().filter(|o| o.status.success()) else {
        eprintln!("error: `pkg-config --static --libs libdpdk` failed: install libdpdk-dev");
        process::exit(1);
    };
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut whole = false;
    let mut seen = std::collections::HashSet::new();
    let mut missing = Vec::new();
    for arg in text.split_whitespace() {
        match arg {
            "-Wl,--whole-archive" => whole = true,
            "-Wl,--no-whole-archive" => whole = false,
            "-pthread" => println!("cargo:rustc-link-lib=pthread"),
            _ => {
                if let Some(dir) = arg.strip_prefix("-L") {
                    println!("cargo:rustc-link-search=native={dir}");
                } else if let Some(file) = arg.strip_prefix("-l:") {
                    let name = file
                        .strip_prefix("lib")
                        .and_then(|f| f.strip_suffix(".a"))
                        .unwrap_or(file);
                    if seen.insert(name.to_owned()) {
                        let modifiers = if whole {
                            ":+whole-archive,-bundle"
                        } else {
                            ":-bundle"
                        };
                        println!("cargo:rustc-link-lib=static{modifiers}={name}");
                    }
                } else if let Some(name) = arg.strip_prefix("-l") {
                    // DPDK's own libraries come as archives above; the shared names repeat them.
                    if name.starts_with("rte_") || !seen.insert(name.to_owned()) {
                        continue;
                    }
                    if system_lib_exists(name) {
                        println!("cargo:rustc-link-lib={name}");
                    } else {
                        // e.g. rdma-core's provider plugins (`-lmlx5-rdmav34`), which Debian
                        // ships only as dlopen()ed plugins: libibverbs loads them itself.
                        missing.push(name.to_owned());
                    }
                }
            }
        }
    }
    if !missing.is_empty() {
        println!(
            "cargo:warning=static DPDK: skipping libraries not installed: {}",
            missing.join(" ")
        );
    }
}

/// Whether the linker can find `-l{name}` in the usual library directories (or it is part of
/// libc / libgcc).
fn system_lib_exists(name: &str) -> bool {
    if ["pthread", "dl", "rt", "m", "atomic", "c"].contains(&name) {
        return true;
    }
    [
        "/usr/lib/x86_64-linux-gnu",
        "/lib/x86_64-linux-gnu",
        "/usr/lib",
        "/usr/local/lib",
    ]
    .iter()
    .any(|dir| {
        ["so", "a"]
            .iter()
            .any(|ext| std::path::Path::new(&format!("{dir}/lib{name}.{ext}")).exists())
    })
}

/// A directory cargo names in a build script's environment (`OUT_DIR`, `CARGO_MANIFEST_DIR`).
/// Run outside cargo there is none, and the build stops with one line saying so.
fn cargo_dir(var: &str) -> PathBuf {
    match env::var_os(var) {
        Some(dir) => PathBuf::from(dir),
        None => {
            eprintln!("error: {var} is not set: build dpdk-bindings with cargo");
            process::exit(1);
        }
    }
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=shim.c");
    println!("cargo:rerun-if-changed=shim.h");
    let statik = env::var_os("CARGO_FEATURE_STATIC").is_some();

    let lib = match pkg_config::Config::new()
        .atleast_version("22.11")
        .statik(statik)
        .cargo_metadata(!statik)
        .probe("libdpdk")
    {
        Ok(lib) => lib,
        Err(_) => {
            // pkg-config's own multi-line report adds nothing to this one line.
            eprintln!(
                "error: DPDK (libdpdk >= 22.11) not found by pkg-config: install it with \
                 `apt-get install libdpdk-dev`, or build roce without DPDK: \
                 `cargo build --no-default-features`"
            );
            process::exit(1);
        }
    };

    if statik {
        link_static();
    } else {
        // The ring PMD is a plugin on Debian; we call rte_eth_from_rings directly, so link it.
        println!("cargo:rustc-link-lib=dylib=rte_net_ring");
    }

    // pkg-config's cflags carry `-include rte_config.h` and the ISA baseline DPDK was built with.
    let mut cflags: Vec<String> = Vec::new();
    for path in &lib.include_paths {
        cflags.push(format!("-I{}", path.display()));
    }
    let raw = process::Command::new("pkg-config")
        .args(["--cflags", "libdpdk"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    let mut words = raw.split_whitespace();
    while let Some(w) = words.next() {
        if w == "-include" {
            if let Some(file) = words.next() {
                cflags.push("-include".into());
                cflags.push(file.into());
            }
        } else if !w.starts_with("-I") {
            cflags.push(w.into());
        }
    }

    let manifest = cargo_dir("CARGO_MANIFEST_DIR");
    let mut build = cc::Build::new();
    build
        .file(manifest.join("shim.c"))
        .include(&manifest)
        .opt_level(3);
    for f in &cflags {
        build.flag(f);
    }
    build.compile("roce_dpdk_shim");

    let wrapper: String = HEADERS
        .iter()
        .map(|h| format!("#include <{h}>\n"))
        .collect();
    let mut b = bindgen::Builder::default()
        .header_contents("wrapper.h", &wrapper)
        .clang_arg(format!("-I{}", manifest.display()))
        .clang_args(&cflags)
        .use_core()
        .derive_default(true)
        .derive_debug(false)
        .layout_tests(false)
        .generate_comments(false)
        .allowlist_recursively(true)
        .prepend_enum_name(false)
        .parse_callbacks(Box::new(bindgen::CargoCallbacks::new()));
    for f in FUNCTIONS {
        b = b.allowlist_function(f);
    }
    for t in TYPES {
        b = b.allowlist_type(t);
    }
    for v in VARS {
        b = b.allowlist_var(v);
    }
    for o in OPAQUE {
        b = b.opaque_type(o);
    }
    let bindings = match b.generate() {
        Ok(b) => b,
        Err(e) => {
            eprintln!(
                "error: bindgen failed on the DPDK headers ({e}); is libclang-dev installed?"
            );
            process::exit(1);
        }
    };
    let out = cargo_dir("OUT_DIR");
    if let Err(e) = bindings.write_to_file(out.join("bindings.rs")) {
        eprintln!("error: cannot write bindings: {e}");
        process::exit(1);
    }
}
