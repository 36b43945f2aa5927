//! Compile-time constants for the data path. Each can be overridden at build time, e.g.
//! `ROCE_BURST_SIZE=64 cargo build`. Bindgen lives in dpdk-bindings/build.rs, not here.

use std::env;
use std::error::Error;
use std::fs;
use std::path::PathBuf;

/// (name, environment variable, default, doc)
const LIMITS: &[(&str, &str, u64, &str)] = &[
    (
        "BURST_SIZE",
        "ROCE_BURST_SIZE",
        32,
        "Frames per RX/TX burst.",
    ),
    (
        "MAX_FRAME",
        "ROCE_MAX_FRAME",
        9216,
        "Largest frame a buffer must hold, in bytes.",
    ),
    (
        "MAX_QPS",
        "ROCE_MAX_QPS",
        4096,
        "Queue pairs one endpoint can hold.",
    ),
];

fn main() -> Result<(), Box<dyn Error>> {
    let mut out = String::new();
    for (name, var, default, doc) in LIMITS {
        println!("cargo:rerun-if-env-changed={var}");
        let value = match env::var(var) {
            Ok(v) => v
                .parse::<u64>()
                .map_err(|_| format!("{var} must be a whole number, got {v:?}"))?,
            Err(_) => *default,
        };
        out.push_str(&format!(
            "/// {doc} (build-time `{var}`, default {default})\n"
        ));
        out.push_str(&format!("pub const {name}: usize = {value};\n"));
    }
    let dir = PathBuf::from(env::var("OUT_DIR").map_err(|e| format!("OUT_DIR: {e}"))?);
    let path = dir.join("limits.rs");
    fs::write(&path, out).map_err(|e| format!("writing {}: {e}", path.display()))?;
    println!("cargo:rerun-if-changed=build.rs");
    Ok(())
}
