//! Link-time layout of the release `svc` binary (link/README.md).
//!
//! On x86_64 Linux with glibc, where rustc links with LLD, a release build asks the
//! linker to
//! - place the functions of `link/symbol-order.txt` (what start-up and the first
//!   requests run) first and together, so an idle server maps a few MB of its code
//!   instead of most of it;
//! - pack the relative relocations (`-z pack-relative-relocs`, glibc 2.36 or newer), so
//!   start-up reads a few KB of relocation records instead of 1.6 MB.
//!
//! Debug builds link as before. `SVC_LINK_LAYOUT=0` turns both off (for a linker other
//! than LLD, or an older glibc at run time).

use std::env;
use std::path::Path;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=link/symbol-order.txt");
    println!("cargo:rerun-if-env-changed=SVC_LINK_LAYOUT");
    let var = |k: &str| env::var(k).unwrap_or_default();
    let wanted = var("SVC_LINK_LAYOUT") != "0"
        && var("PROFILE") == "release"
        && var("CARGO_CFG_TARGET_ARCH") == "x86_64"
        && var("CARGO_CFG_TARGET_OS") == "linux"
        && var("CARGO_CFG_TARGET_ENV") == "gnu";
    if !wanted {
        return;
    }
    let order = Path::new(&var("CARGO_MANIFEST_DIR")).join("link/symbol-order.txt");
    if order.is_file() {
        println!(
            "cargo:rustc-link-arg-bin=svc=-Wl,--symbol-ordering-file={}",
            order.display()
        );
        // The list names functions of one build; those another build lacks are skipped.
        println!("cargo:rustc-link-arg-bin=svc=-Wl,--no-warn-symbol-ordering");
    }
    println!("cargo:rustc-link-arg-bin=svc=-Wl,-z,pack-relative-relocs");
}
