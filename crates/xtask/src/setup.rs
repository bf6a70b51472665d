//! `cargo xtask setup`: installs every tool the project needs, skipping what is already there at
//! the right version. Everything comes from crates.io, the Rust distribution or Debian's packages:
//! nothing here downloads a binary from anywhere else.

use crate::util::{cargo, probe, run, step, which};
use anyhow::{bail, Context};
use std::process::Command;

/// What a task needs installed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Need {
    /// Building the web app: the wasm32 target, the wasm-bindgen CLI and trunk.
    Run,
    /// Everything `Run` needs, plus browsers and their WebDriver servers for the tests.
    Test,
}

pub fn main(args: &[String]) -> anyhow::Result<()> {
    let need = match args.first().map(String::as_str) {
        None | Some("all") | Some("test") => Need::Test,
        Some("run") => Need::Run,
        Some(other) => bail!("unknown setup target `{other}`: use run, test or all"),
    };
    ensure(need)
}

/// Installs what `need` requires; fast (a few probes) when everything is present.
pub fn ensure(need: Need) -> anyhow::Result<()> {
    step("checking the toolchain (cargo xtask setup)");
    ensure_wasm_target()?;
    let version = wasm_bindgen_version()?;
    ensure_trunk_pins(&version)?;
    ensure_cargo_tool("wasm-bindgen", &["--version"], &format!("wasm-bindgen {version}"), "wasm-bindgen-cli", &version)?;
    ensure_cargo_tool("trunk", &["--version"], "trunk 0.21.", "trunk", "~0.21")?;
    if need >= Need::Test {
        ensure_apt(&[
            ("/usr/bin/chromium", "chromium"),
            ("/usr/bin/chromedriver", "chromium-driver"),
            ("/usr/bin/firefox-esr", "firefox-esr"),
            // The warehouse tests start their own PostgreSQL server on 127.0.0.1.
            ("/usr/lib/postgresql", "postgresql"),
        ])?;
        ensure_cargo_tool("geckodriver", &["--version"], "geckodriver 0.", "geckodriver", "0.37")?;
        ensure_node()?;
    }
    println!("    toolchain ready");
    Ok(())
}

/// The exact wasm-bindgen version pinned in the root Cargo.toml (`wasm-bindgen = "=0.2.x"`): the
/// CLI must match the crate byte for byte, so the pin is read from one place.
pub fn wasm_bindgen_version() -> anyhow::Result<String> {
    let manifest = std::fs::read_to_string("Cargo.toml").context("cannot read the root Cargo.toml")?;
    manifest
        .lines()
        .find_map(|l| l.trim().strip_prefix("wasm-bindgen = \"=")?.strip_suffix('"').map(str::to_owned))
        .context("the root Cargo.toml must pin wasm-bindgen exactly (`wasm-bindgen = \"=0.2.x\"`)")
}

fn ensure_trunk_pins(version: &str) -> anyhow::Result<()> {
    let trunk_toml = std::fs::read_to_string("Trunk.toml").context("cannot read Trunk.toml")?;
    let expected = format!("wasm_bindgen = \"{version}\"");
    if !trunk_toml.contains(&expected) {
        bail!("Trunk.toml must say `{expected}` under [tools] (the version pinned in Cargo.toml); otherwise trunk tries to download its own wasm-bindgen");
    }
    Ok(())
}

fn ensure_wasm_target() -> anyhow::Result<()> {
    let installed = probe("rustup", &["target", "list", "--installed"]).unwrap_or_default();
    if installed.lines().any(|l| l.trim() == "wasm32-unknown-unknown") {
        println!("    ok: rust target wasm32-unknown-unknown");
        return Ok(());
    }
    if let Some(fallback) = wasm_fallback_env() {
        println!("    ok: wasm32 through Debian's rustc-web ({} settings)", fallback.len());
        return Ok(());
    }
    step("installing the wasm32-unknown-unknown target");
    if run(Command::new("rustup").args(["target", "add", "wasm32-unknown-unknown"])).is_ok() {
        return Ok(());
    }
    // The fallback verified on this machine kind: Debian's Rust for the web, building std itself.
    step("rustup could not add the target; falling back to Debian's rustc-web");
    apt_install(&["rustc-web", "cargo-web", "rust-web-src", "lld-22"])?;
    wasm_fallback_env().map(|_| ()).context("rustc-web was installed but /usr/bin/rustc is missing")
}

/// Environment for wasm32 builds when rustup's target is unavailable and Debian's rustc-web is
/// used instead; `None` when rustup's target is there (the normal case).
pub fn wasm_fallback_env() -> Option<Vec<(&'static str, &'static str)>> {
    let installed = probe("rustup", &["target", "list", "--installed"]).unwrap_or_default();
    if installed.lines().any(|l| l.trim() == "wasm32-unknown-unknown") {
        return None;
    }
    let debian_rustc = std::path::Path::new("/usr/bin/rustc").is_file()
        && std::path::Path::new("/usr/lib/rustlib/src").exists();
    debian_rustc.then(|| {
        vec![
            ("RUSTC", "/usr/bin/rustc"),
            ("RUSTC_BOOTSTRAP", "1"),
            ("CARGO_UNSTABLE_BUILD_STD", "std,panic_abort"),
        ]
    })
}

/// Applies the wasm fallback environment, if any, to a command that builds for wasm32.
pub fn wasm_command(mut cmd: Command) -> Command {
    for (k, v) in wasm_fallback_env().unwrap_or_default() {
        cmd.env(k, v);
    }
    cmd
}

fn ensure_cargo_tool(bin: &str, probe_args: &[&str], expect_prefix: &str, krate: &str, version: &str) -> anyhow::Result<()> {
    if let Some(path) = which(bin) {
        if let Some(found) = probe(path.to_str().unwrap_or(bin), probe_args) {
            if found.starts_with(expect_prefix) {
                println!("    ok: {found}");
                return Ok(());
            }
            println!("    {bin} is {found}; want {expect_prefix}*");
        }
    }
    step(&format!("installing {krate} {version} from crates.io (a few minutes)"));
    let locked = run(cargo().args(["install", krate, "--version", version, "--locked", "--force"]));
    if locked.is_err() {
        // A lock file can name a version the registry no longer serves; resolving afresh is the
        // next best thing.
        println!("    the locked install failed; retrying with fresh dependency resolution");
        run(cargo().args(["install", krate, "--version", version, "--force"]))?;
    }
    Ok(())
}

fn ensure_apt(packages: &[(&str, &str)]) -> anyhow::Result<()> {
    let missing: Vec<&str> = packages
        .iter()
        .filter(|(path, _)| !std::path::Path::new(path).exists())
        .map(|(_, pkg)| *pkg)
        .collect();
    for (path, pkg) in packages {
        if std::path::Path::new(path).exists() {
            println!("    ok: {pkg} ({path})");
        }
    }
    if missing.is_empty() {
        return Ok(());
    }
    apt_install(&missing)
}

fn apt_install(packages: &[&str]) -> anyhow::Result<()> {
    step(&format!("installing {} with apt-get", packages.join(" ")));
    let is_root = probe("id", &["-u"]).as_deref() == Some("0");
    let apt = |args: &[&str]| {
        let mut cmd = if is_root {
            Command::new("apt-get")
        } else {
            let mut c = Command::new("sudo");
            c.arg("apt-get");
            c
        };
        cmd.args(args).env("DEBIAN_FRONTEND", "noninteractive");
        cmd
    };
    run(&mut apt(&["update", "-qq"])).context("apt-get update failed; run it as root, or install the packages by hand")?;
    let mut args = vec!["install", "-y", "-qq"];
    args.extend_from_slice(packages);
    run(&mut apt(&args))
}

fn ensure_node() -> anyhow::Result<()> {
    let version = probe("node", &["--version"])
        .context("Node.js is missing: install Node 18 or newer (Debian: apt-get install nodejs npm)")?;
    let major: u32 = version.trim_start_matches('v').split('.').next().and_then(|m| m.parse().ok()).unwrap_or(0);
    if major < 18 {
        bail!("Node.js {version} is too old: the npm package needs Node 18 or newer");
    }
    probe("npm", &["--version"]).context("npm is missing: install it with Node.js")?;
    println!("    ok: node {version}");
    Ok(())
}
