//! Generates the libibverbs structs from the system's rdma-core headers (Debian 12:
//! `libibverbs-dev`, rdma-core 44) with an allowlisted bindgen, and gives the cdylib the
//! version script that names libibverbs' symbol versions (IBVERBS_1.1, ...), so programs linked
//! against `libibverbs.so.1` resolve their versioned imports to us under `LD_PRELOAD`.

use std::env;
use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=libibverbs.map");
    let header = "/usr/include/infiniband/verbs.h";
    if !std::path::Path::new(header).exists() {
        eprintln!("error: {header} is missing: install libibverbs-dev (tools/setup.sh)");
        std::process::exit(1);
    }
    let bindings = bindgen::Builder::default()
        .header_contents("wrapper.h", "#include <infiniband/verbs.h>\n")
        .allowlist_type("ibv_.*")
        .allowlist_type("verbs_context")
        .allowlist_type("_ibv_device_ops")
        .allowlist_var("IBV_.*")
        .default_enum_style(bindgen::EnumVariation::Consts)
        .prepend_enum_name(false)
        .derive_default(true)
        .generate_comments(false)
        .layout_tests(true)
        .generate();
    let bindings = match bindings {
        Ok(b) => b,
        Err(e) => {
            eprintln!("error: bindgen over {header} failed: {e}");
            std::process::exit(1);
        }
    };
    let out = PathBuf::from(env::var("OUT_DIR").unwrap_or_else(|_| ".".into()));
    if let Err(e) = bindings.write_to_file(out.join("verbs.rs")) {
        eprintln!("error: writing the bindings: {e}");
        std::process::exit(1);
    }
    let dir = env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".into());
    println!("cargo:rustc-cdylib-link-arg=-Wl,--version-script={dir}/libibverbs.map");
    // The library keeps its own soname; install it as libibverbs.so.1 (or LD_PRELOAD it).
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libroce_verbs.so");
}
