//! `cargo xtask setup`: installs every tool the project needs, skipping what is already there at
//! the right version, and says for each tool whether it was found or installed, from where, and
//! how long it took. Everything comes from crates.io, the Rust distribution or Debian's packages:
//! nothing here downloads a binary from anywhere else.
//!
//! With `DATADICT_TOOLS_DIR` set (`.ci/run` sets it to `target/tools` when `CI` is set), the tools
//! built with `cargo install` are looked for and installed only in that folder, so a clean clone
//! installs each of them afresh and a broken install command fails CI instead of hiding behind a
//! tool a developer installed by hand. With `CI` set, Debian's packages go through `apt-get
//! install` even when present (a no-op then), so their names are proven on every run too.

#[cfg(test)]
mod tests;

use crate::util::{cargo, human_secs, probe, run, show, step, which};
use anyhow::{bail, Context};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// What a task needs installed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Need {
    /// Building the web app: the wasm32 target, the wasm-bindgen CLI and trunk.
    Run,
    /// Everything `Run` needs, plus browsers and their WebDriver servers for the tests.
    Test,
}

/// The environment variable naming the folder that cargo-built tools live in (`--root` of
/// `cargo install`); unset, they live in cargo's own bin folder.
pub const TOOLS_DIR_VAR: &str = "DATADICT_TOOLS_DIR";

/// A tool built from crates.io with `cargo install`.
#[derive(Debug, Clone)]
pub struct CargoTool {
    pub bin: &'static str,
    pub krate: &'static str,
    /// The `--version` argument. Cargo takes an exact version (`0.2.130`) or a requirement that
    /// starts with an operator (`~0.21`); it refuses a bare `0.37`, which `tests.rs` checks
    /// against the real cargo.
    pub version: String,
    /// What `BIN --version` prints first when an acceptable version is installed.
    pub expect: String,
    pub need: Need,
}

/// A package from Debian's archive, and a file that proves it is installed.
#[derive(Debug, Clone, Copy)]
pub struct AptPackage {
    pub name: &'static str,
    pub path: &'static str,
}

/// Debian's packages the tests need.
pub const APT_PACKAGES: &[AptPackage] = &[
    AptPackage { name: "chromium", path: "/usr/bin/chromium" },
    AptPackage { name: "chromium-driver", path: "/usr/bin/chromedriver" },
    AptPackage { name: "firefox-esr", path: "/usr/bin/firefox-esr" },
    // The warehouse tests start their own PostgreSQL server on 127.0.0.1.
    AptPackage { name: "postgresql", path: "/usr/lib/postgresql" },
];

/// Every tool built with `cargo install`, in install order.
pub fn cargo_tools() -> anyhow::Result<Vec<CargoTool>> {
    let bindgen = wasm_bindgen_version()?;
    Ok(vec![
        CargoTool {
            bin: "wasm-bindgen",
            krate: "wasm-bindgen-cli",
            expect: format!("wasm-bindgen {bindgen}"),
            version: bindgen,
            need: Need::Run,
        },
        // Trunk 0.22 needs a newer rustc than this machine kind's 1.95.
        CargoTool { bin: "trunk", krate: "trunk", version: "~0.21".into(), expect: "trunk 0.21.".into(), need: Need::Run },
        CargoTool {
            bin: "geckodriver",
            krate: "geckodriver",
            version: "~0.37".into(),
            expect: "geckodriver 0.37.".into(),
            need: Need::Test,
        },
    ])
}

/// The arguments of the `cargo install` that installs `tool` (`root`: `--root`, when a tools
/// folder is in use).
pub fn install_args(tool: &CargoTool, root: Option<&Path>, locked: bool) -> Vec<String> {
    let mut args: Vec<String> = vec!["install".into(), tool.krate.into(), "--version".into(), tool.version.clone()];
    if locked {
        args.push("--locked".into());
    }
    args.push("--force".into());
    if let Some(root) = root {
        args.push("--root".into());
        args.push(root.display().to_string());
    }
    args
}

/// A flag cargo does not know, put after the real arguments: cargo parses arguments in order, so
/// it reports a refused value before it reaches this flag, and stops at the flag when every value
/// before it was accepted. Nothing is installed either way.
const STOP_FLAG: &str = "--xtask-argument-check-stop";

/// Asks the real cargo whether it accepts `cargo ARGS`, without running it: `Err` carries cargo's
/// refusal. Setup asks before every install, so a refused line fails in a second rather than after
/// the installs before it.
pub fn cargo_accepts(args: &[String]) -> Result<(), String> {
    let out = cargo().args(args).arg(STOP_FLAG).env("CARGO_TERM_COLOR", "never").output().map_err(|e| format!("cannot run cargo: {e}"))?;
    let verdict = String::from_utf8_lossy(&out.stderr);
    if verdict.contains(&format!("unexpected argument '{STOP_FLAG}'")) {
        Ok(())
    } else {
        Err(verdict.trim().to_owned())
    }
}

/// The folder of cargo-built tools when `DATADICT_TOOLS_DIR` names one, made absolute.
pub fn tools_dir() -> Option<PathBuf> {
    let dir = PathBuf::from(std::env::var_os(TOOLS_DIR_VAR).filter(|v| !v.is_empty())?);
    Some(if dir.is_absolute() { dir } else { std::env::current_dir().ok()?.join(dir) })
}

/// Puts the tools folder (when set) and cargo's bin folder first on this process's `PATH`, so the
/// programs the tasks start (trunk, which looks for `wasm-bindgen`; cargo's wasm32 runner
/// `wasm-bindgen-test-runner`) find the very tools setup found or installed.
pub fn put_tools_on_path() {
    let mut dirs: Vec<PathBuf> = tools_dir().map(|d| d.join("bin")).into_iter().collect();
    dirs.push(crate::util::cargo_bin_dir());
    let rest = std::env::var_os("PATH").map(|p| std::env::split_paths(&p).collect::<Vec<_>>()).unwrap_or_default();
    let rest: Vec<PathBuf> = rest.into_iter().filter(|d| !dirs.contains(d)).collect();
    dirs.extend(rest);
    if let Ok(path) = std::env::join_paths(dirs) {
        std::env::set_var("PATH", path);
    }
}

/// One line of setup's report: a tool, what happened, where it is, how long it took.
#[derive(Debug)]
struct Report {
    tool: String,
    outcome: &'static str,
    place: String,
    secs: f64,
}

impl Report {
    fn print(&self) {
        println!("    {:<10} {:<28} {:<7} {}", self.outcome, self.tool, human_secs(self.secs), self.place);
    }
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
    let started = Instant::now();
    let root = tools_dir();
    match &root {
        Some(dir) => step(&format!("checking the toolchain (cargo xtask setup; cargo-built tools only in {})", dir.display())),
        None => step("checking the toolchain (cargo xtask setup)"),
    }
    ensure_trunk_pins(&wasm_bindgen_version()?)?;
    let mut reports = vec![ensure_wasm_target()?];
    if need >= Need::Test {
        reports.push(ensure_clippy()?);
    }
    for tool in cargo_tools()?.iter().filter(|t| t.need <= need) {
        reports.push(ensure_cargo_tool(tool, root.as_deref())?);
    }
    if need >= Need::Test {
        reports.extend(ensure_apt(APT_PACKAGES)?);
        reports.push(ensure_node()?);
        reports.push(ensure_client_libraries()?);
    }
    println!("    toolchain ready in {}:", human_secs(started.elapsed().as_secs_f64()));
    for report in &reports {
        report.print();
    }
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

fn has_rustup_wasm_target() -> bool {
    let installed = probe("rustup", &["target", "list", "--installed"]).unwrap_or_default();
    installed.lines().any(|l| l.trim() == "wasm32-unknown-unknown")
}

fn ensure_wasm_target() -> anyhow::Result<Report> {
    let started = Instant::now();
    let tool = "rust target wasm32-unknown-unknown".to_owned();
    let ci = std::env::var_os("CI").is_some();
    if has_rustup_wasm_target() && !ci {
        return Ok(Report { tool, outcome: "found", place: "rustup".into(), secs: 0.0 });
    }
    if !has_rustup_wasm_target() && wasm_fallback_env().is_some() {
        return Ok(Report { tool, outcome: "found", place: "Debian's rustc-web".into(), secs: 0.0 });
    }
    let was_there = has_rustup_wasm_target();
    step("adding the wasm32-unknown-unknown target (rustup)");
    if run(Command::new("rustup").args(["target", "add", "wasm32-unknown-unknown"])).is_ok() {
        let outcome = if was_there { "checked" } else { "installed" };
        return Ok(Report { tool, outcome, place: "rustup".into(), secs: started.elapsed().as_secs_f64() });
    }
    // The fallback verified on this machine kind: Debian's Rust for the web, building std itself.
    step("rustup could not add the target; falling back to Debian's rustc-web");
    apt_install(&["rustc-web", "cargo-web", "rust-web-src", "lld-22"])?;
    wasm_fallback_env().context("rustc-web was installed but /usr/bin/rustc or /usr/lib/rustlib/src is missing")?;
    Ok(Report { tool, outcome: "installed", place: "Debian's rustc-web (apt-get)".into(), secs: started.elapsed().as_secs_f64() })
}

/// Clippy, which the `lint` suite runs: part of rustup's default profile, added when a minimal
/// profile left it out (and on CI added again, a no-op when present, so the line is proven).
fn ensure_clippy() -> anyhow::Result<Report> {
    let started = Instant::now();
    let tool = "rust component clippy".to_owned();
    let present = || probe("cargo", &["clippy", "--version"]).is_some_and(|v| v.starts_with("clippy"));
    let was_there = present();
    if was_there && std::env::var_os("CI").is_none() {
        return Ok(Report { tool, outcome: "found", place: "rustup".into(), secs: 0.0 });
    }
    step("adding the clippy component (rustup)");
    run(Command::new("rustup").args(["component", "add", "clippy"])).context("rustup could not add clippy, which the lint suite needs")?;
    if !present() {
        bail!("rustup added clippy but `cargo clippy --version` still fails");
    }
    let outcome = if was_there { "checked" } else { "installed" };
    Ok(Report { tool, outcome, place: "rustup".into(), secs: started.elapsed().as_secs_f64() })
}

/// Environment for wasm32 builds when rustup's target is unavailable and Debian's rustc-web is
/// used instead; `None` when rustup's target is there (the normal case).
pub fn wasm_fallback_env() -> Option<Vec<(&'static str, &'static str)>> {
    if has_rustup_wasm_target() {
        return None;
    }
    let debian_rustc = Path::new("/usr/bin/rustc").is_file() && Path::new("/usr/lib/rustlib/src").exists();
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

/// The first line of `BIN --version` (geckodriver adds a paragraph about its source after it).
fn tool_version(path: &Path) -> Option<String> {
    probe(&path.to_string_lossy(), &["--version"]).map(|out| out.lines().next().unwrap_or_default().to_owned())
}

/// Where `bin` is looked for: only the tools folder when one is set, else `PATH` and cargo's bin.
fn find_cargo_tool(bin: &str, root: Option<&Path>) -> Option<PathBuf> {
    match root {
        Some(root) => Some(root.join("bin").join(bin)).filter(|p| p.is_file()),
        None => which(bin),
    }
}

fn ensure_cargo_tool(tool: &CargoTool, root: Option<&Path>) -> anyhow::Result<Report> {
    let started = Instant::now();
    if let Some(path) = find_cargo_tool(tool.bin, root) {
        match tool_version(&path) {
            Some(found) if found.starts_with(&tool.expect) => {
                return Ok(Report { tool: found, outcome: "found", place: path.display().to_string(), secs: 0.0 });
            }
            found => println!(
                "    {} is {}; want {}*",
                path.display(),
                found.as_deref().unwrap_or("a program that does not answer --version"),
                tool.expect
            ),
        }
    }
    step(&format!("installing {} {} from crates.io (a few minutes)", tool.krate, tool.version));
    let locked = install_args(tool, root, true);
    if let Err(refusal) = cargo_accepts(&locked) {
        bail!(
            "cargo refuses `cargo {}`:\n{refusal}\nWhat to do: fix the version of {} in crates/xtask/src/setup.rs \
             (an exact version such as 0.37.1, or a requirement with an operator such as ~0.37)",
            locked.join(" "),
            tool.krate
        );
    }
    if let Err(first) = run(cargo().args(&locked)) {
        // A lock file can name a dependency version the registry no longer serves; resolving
        // afresh is the next best thing.
        println!("    the locked install failed ({first:#}); retrying with fresh dependency resolution");
        let fresh = install_args(tool, root, false);
        let mut cmd = cargo();
        cmd.args(&fresh);
        run(&mut cmd).with_context(|| {
            format!(
                "installing {krate} failed: `{}`. What to do: check that crates.io serves a {krate} \
                 matching `{version}` (`cargo info {krate}`) that builds with this rustc (`rustc \
                 --version`), that the disk has room, then run `cargo xtask setup` again; to try \
                 another version, change it in crates/xtask/src/setup.rs",
                show(&cmd),
                krate = tool.krate,
                version = tool.version,
            )
        })?;
    }
    let path = find_cargo_tool(tool.bin, root)
        .with_context(|| format!("`cargo install {}` finished but `{}` is not where setup looks for it", tool.krate, tool.bin))?;
    let found = tool_version(&path).unwrap_or_default();
    if !found.starts_with(&tool.expect) {
        bail!("{} was installed at {} but says `{found}`, not `{}*`", tool.krate, path.display(), tool.expect);
    }
    Ok(Report {
        tool: found,
        outcome: "installed",
        place: format!("{} (crates.io)", path.display()),
        secs: started.elapsed().as_secs_f64(),
    })
}

/// Whether dpkg knows `package` as installed.
fn dpkg_installed(package: &str) -> bool {
    probe("dpkg-query", &["-W", "-f=${Status}", package]).is_some_and(|s| s.ends_with(" installed"))
}

fn ensure_apt(packages: &[AptPackage]) -> anyhow::Result<Vec<Report>> {
    let started = Instant::now();
    let present = |p: &AptPackage| dpkg_installed(p.name) && Path::new(p.path).exists();
    let missing: Vec<&str> = packages.iter().filter(|p| !present(p)).map(|p| p.name).collect();
    // On CI every package goes through apt-get as on a new machine: a no-op for those present,
    // and a wrong package name fails the run.
    let ci = std::env::var_os("CI").is_some();
    let to_install: Vec<&str> = if ci { packages.iter().map(|p| p.name).collect() } else { missing.clone() };
    if !to_install.is_empty() {
        apt_install(&to_install)?;
    }
    let secs = started.elapsed().as_secs_f64();
    packages
        .iter()
        .map(|p| {
            anyhow::ensure!(present(p), "apt-get installed {} but {} is missing", p.name, p.path);
            let installed = missing.contains(&p.name);
            let outcome = match (installed, ci) {
                (true, _) => "installed",
                (false, true) => "checked",
                (false, false) => "found",
            };
            let place = format!("{} (Debian{})", p.path, if installed || ci { ", apt-get" } else { "" });
            Ok(Report { tool: p.name.into(), outcome, place, secs: if installed || ci { secs } else { 0.0 } })
        })
        .collect()
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
    let mut cmd = apt(&args);
    run(&mut cmd).with_context(|| {
        format!("`{}` failed. What to do: check the package names with `apt-cache policy NAME`, then run `cargo xtask setup` again", show(&cmd))
    })
}

/// The folder of the service's own client libraries, pinned in its `package.json` and
/// `package-lock.json`: the browser library, which `tracking_library_e2e` serves to a page, and
/// the Node library, which `node_library_e2e` runs.
pub const CLIENTS_DIR: &str = "tests/clients";

/// The service's client libraries for the end-to-end tests, installed from npm with `npm ci` into
/// [`CLIENTS_DIR`] when an installed version is not the pinned one (and on CI always).
fn ensure_client_libraries() -> anyhow::Result<Report> {
    let started = Instant::now();
    let dir = Path::new(CLIENTS_DIR);
    let manifest = std::fs::read_to_string(dir.join("package.json")).with_context(|| format!("cannot read {CLIENTS_DIR}/package.json"))?;
    let pins = pinned_dependencies(&manifest).with_context(|| format!("{CLIENTS_DIR}/package.json must pin each dependency to an exact version"))?;
    let packages = pins.iter().map(|(name, version)| format!("{name} {version}")).collect::<Vec<_>>().join(", ");
    let tool = format!("npm {packages} (tests)");
    let current = pins.iter().all(|(name, pinned)| {
        let installed = std::fs::read_to_string(dir.join("node_modules").join(name).join("package.json")).unwrap_or_default();
        installed.contains(&format!("\"version\": \"{pinned}\""))
    });
    if current && std::env::var_os("CI").is_none() {
        return Ok(Report { tool, outcome: "found", place: CLIENTS_DIR.into(), secs: 0.0 });
    }
    step(&format!("installing {packages} into {CLIENTS_DIR} (npm ci)"));
    run(Command::new("npm").args(["ci", "--no-audit", "--no-fund"]).current_dir(dir))
        .with_context(|| format!("npm ci in {CLIENTS_DIR} failed: the client library tests need these packages from the npm registry"))?;
    let outcome = if current { "checked" } else { "installed" };
    Ok(Report { tool, outcome, place: CLIENTS_DIR.into(), secs: started.elapsed().as_secs_f64() })
}

/// The dependencies a `package.json` pins, as `(name, version)`: the `"name": "1.2.3"` lines of
/// its `"dependencies"` object, one a line. `None` if there are none, or one is a range.
pub fn pinned_dependencies(manifest: &str) -> Option<Vec<(String, String)>> {
    let deps = &manifest[manifest.find("\"dependencies\"")?..];
    let mut pins = Vec::new();
    for line in deps.lines().skip(1) {
        let line = line.trim().trim_end_matches(',');
        if line.starts_with('}') {
            break;
        }
        let (name, version) = line.split_once(':')?;
        let (name, version) = (name.trim().trim_matches('"'), version.trim().trim_matches('"'));
        let exact = !version.is_empty() && version.chars().all(|c| c.is_ascii_digit() || c == '.');
        if !exact {
            return None;
        }
        pins.push((name.to_owned(), version.to_owned()));
    }
    (!pins.is_empty()).then_some(pins)
}

fn ensure_node() -> anyhow::Result<Report> {
    let version = probe("node", &["--version"])
        .context("Node.js is missing: install Node 18 or newer (Debian: apt-get install nodejs npm)")?;
    let major: u32 = version.trim_start_matches('v').split('.').next().and_then(|m| m.parse().ok()).unwrap_or(0);
    if major < 18 {
        bail!("Node.js {version} is too old: the npm package needs Node 18 or newer");
    }
    let npm = probe("npm", &["--version"]).context("npm is missing: install it with Node.js")?;
    let place = which("node").map_or_else(|| "PATH".into(), |p| p.display().to_string());
    Ok(Report { tool: format!("node {version}, npm {npm}"), outcome: "found", place, secs: 0.0 })
}
