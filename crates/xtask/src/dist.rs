//! `cargo xtask dist`: builds the static web app into `dist/` with trunk. Asset URLs are relative,
//! so the folder can be hosted under any path prefix.

use crate::setup::{self, wasm_command, Need};
use crate::util::{cargo, run, step, which};
use anyhow::Context;
use std::process::Command;

pub fn main(args: &[String]) -> anyhow::Result<()> {
    if let Some(arg) = args.first() {
        anyhow::bail!("`dist` takes no arguments (got `{arg}`)");
    }
    setup::ensure(Need::Run)?;
    build()
}

/// Builds `dist/` (release profile); assumes the toolchain is in place.
pub fn build() -> anyhow::Result<()> {
    // Trunk runs cargo with `--offline` (Trunk.toml), so that it can never download a tool; the
    // crates themselves must therefore be in cargo's cache first, which a new machine lacks.
    step("fetching the crates of the workspace (cargo fetch)");
    run(cargo().args(["fetch", "--locked"]))?;
    step("building the web app into dist/ (trunk build --release)");
    let trunk = which("trunk").context("trunk is not installed: run `cargo xtask setup run`")?;
    let mut cmd = wasm_command(Command::new(trunk));
    cmd.args(["build", "--release", "--public-url", "./", "--dist", "dist"]);
    // Trunk must use the wasm-bindgen CLI that setup installed, never download one.
    cmd.env("TRUNK_SKIP_VERSION_CHECK", "true").env("TRUNK_OFFLINE", "true");
    run(&mut cmd)?;
    // wasm-bindgen warns that `target_features` is missing: `strip = true` (Cargo.toml's
    // `wasm-release`) drops it with the name section, which keeps the app under its size budget.
    println!("    (the `target_features` warning above is expected: `strip = true` drops that section with the names, keeping the app under its 400 KB budget; the browser tests run this same build)");
    let index = std::path::Path::new("dist/index.html");
    anyhow::ensure!(index.is_file(), "trunk finished but dist/index.html is missing");
    Ok(())
}
