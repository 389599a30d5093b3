//! Hands the linker our memory layout (`link.x`) and, with the `defmt` feature, defmt's
//! section script. Done here rather than with `rustflags` so a caller's RUSTFLAGS cannot drop it.
fn main() {
    let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".into());
    println!("cargo:rustc-link-search={dir}");
    println!("cargo:rerun-if-changed=link.x");
    println!("cargo:rustc-link-arg-bins=-Tlink.x");
    if std::env::var_os("CARGO_FEATURE_DEFMT").is_some() {
        println!("cargo:rustc-link-arg-bins=-Tdefmt.x");
    }
}
