//! Release link layout of the `toolwright` binary.
//!
//! Most of a running server's resident memory is its own code pages, and the kernel maps
//! code in 64 KiB windows around each page fault. The code that serving runs (start-up,
//! dispatch, validation, the transports) is about 1.8 MB of an 8 MB text segment, but spread
//! over all of it. `layout/hot-functions.txt` (written by `scripts/hot-functions.py` from
//! callgrind runs of `toolwright serve`) lists those functions, and the linker puts them
//! first, side by side. Relative relocations are packed (DT_RELR) so that the loader reads
//! kilobytes instead of 400 KB of relocation records. Optimized builds also fold identical
//! functions (`--icf=all`).
//!
//! Only for release builds on x86_64 Linux, where rustc links with its bundled LLD. Set
//! `TOOLWRIGHT_PLAIN_LINK=1` to link without it (another linker, or to measure the effect).

use std::env;
use std::path::Path;

fn main() {
    let order = Path::new(&env::var("CARGO_MANIFEST_DIR").expect("cargo sets it"))
        .join("layout")
        .join("hot-functions.txt");
    println!("cargo:rerun-if-changed={}", order.display());
    println!("cargo:rerun-if-env-changed=TOOLWRIGHT_PLAIN_LINK");

    let release = env::var("PROFILE").as_deref() == Ok("release");
    let target = env::var("TARGET").unwrap_or_default();
    let plain = env::var_os("TOOLWRIGHT_PLAIN_LINK").is_some_and(|v| v != "0");
    if !release || plain || target != "x86_64-unknown-linux-gnu" || !order.exists() {
        return;
    }
    println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    // The optimized builds (`dist`) fold functions whose machine code is identical
    // (monomorphized copies of generic code that compile to the same bytes): 114 KB of the
    // shipped binary at opt-level "z". Rust gives no guarantee that two functions have
    // distinct addresses, so folding them changes no behaviour. The quick `release` build
    // (opt-level 0) skips it: it would only lengthen that link.
    if env::var("OPT_LEVEL").is_ok_and(|level| level != "0") {
        println!("cargo:rustc-link-arg-bins=-Wl,--icf=all");
    }
    println!(
        "cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={}",
        order.display()
    );
    // Names that a later change renamed only lose their place; the linker need not say so.
    println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
}
