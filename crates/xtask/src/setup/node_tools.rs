//! Tools that setup installs from npm's registry with `npm install --prefix`, each into a folder of
//! its own under the tools root, and runs under Node: today binaryen's `wasm-opt`, which trunk runs
//! on the web app. Debian's binaryen is too old to read what rustc emits, and npm is one of the
//! registries the project may install from, so the pinned npm package is the one used everywhere.

use super::Report;
use crate::util::{probe, run, show, step};
use anyhow::{bail, Context};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// A tool from an npm package, pinned to one exact version.
#[derive(Debug, Clone)]
pub struct NodeTool {
    /// The program the package installs into `node_modules/.bin`.
    pub bin: &'static str,
    pub package: &'static str,
    /// An exact version (`132.0.0`), never a range: the tool's output is part of the build.
    pub version: &'static str,
    /// What `BIN --version` prints first when the pinned version is installed.
    pub expect: &'static str,
}

/// Every tool installed from npm, in install order; all of them are needed to build the web app.
pub fn node_tools() -> Vec<NodeTool> {
    // Trunk.toml names the same release (`wasm_opt = "version_132"`); setup checks that they agree.
    vec![NodeTool { bin: "wasm-opt", package: "binaryen", version: "132.0.0", expect: "wasm-opt version 132 " }]
}

/// The `[tools]` line of Trunk.toml that makes trunk accept exactly this wasm-opt: trunk reads the
/// third word of `wasm-opt --version` and calls it `version_<word>`.
pub fn trunk_wasm_opt_pin(tool: &NodeTool) -> String {
    let release = tool.expect.split_whitespace().nth(2).unwrap_or_default();
    format!("wasm_opt = \"version_{release}\"")
}

/// Where the package is installed: `<root>/<package>`, with `root` the tools folder when one is
/// set and cargo's home otherwise (the folder cargo-built tools go to by default).
pub fn prefix(tool: &NodeTool, root: Option<&Path>) -> PathBuf {
    let home = || crate::util::cargo_bin_dir().parent().map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    root.map_or_else(home, Path::to_path_buf).join(tool.package)
}

/// The folder of the package's programs, which `put_tools_on_path` puts first on `PATH`.
pub fn bin_dir(tool: &NodeTool, root: Option<&Path>) -> PathBuf {
    prefix(tool, root).join("node_modules").join(".bin")
}

/// The one place setup looks for the tool: another `wasm-opt` on `PATH` (Debian's, say) is
/// another version, which trunk would refuse.
pub fn find(tool: &NodeTool, root: Option<&Path>) -> Option<PathBuf> {
    Some(bin_dir(tool, root).join(tool.bin)).filter(|p| p.is_file())
}

/// The arguments of the `npm` command that installs `tool` into `prefix`.
pub fn install_args(tool: &NodeTool, prefix: &Path) -> Vec<String> {
    vec![
        "install".into(),
        "--prefix".into(),
        prefix.display().to_string(),
        // The audit and funding requests add nothing to a pinned tool and cost a round trip each.
        "--no-audit".into(),
        "--no-fund".into(),
        format!("{}@{}", tool.package, tool.version),
    ]
}

/// Finds `tool` at its pinned version, or installs it from npm's registry.
pub fn ensure(tool: &NodeTool, root: Option<&Path>) -> anyhow::Result<Report> {
    let started = Instant::now();
    if let Some(path) = find(tool, root) {
        match version(&path) {
            Some(found) if found.starts_with(tool.expect) => {
                return Ok(Report { tool: name(tool), outcome: "found", place: path.display().to_string(), secs: 0.0 });
            }
            found => println!(
                "    {} is {}; want {}*",
                path.display(),
                found.as_deref().unwrap_or("a program that does not answer --version"),
                tool.expect
            ),
        }
    }
    step(&format!("installing {}@{} from npm (seconds)", tool.package, tool.version));
    let prefix = prefix(tool, root);
    std::fs::create_dir_all(&prefix).with_context(|| format!("cannot create {}", prefix.display()))?;
    let mut cmd = Command::new("npm");
    cmd.args(install_args(tool, &prefix));
    run(&mut cmd).with_context(|| {
        format!(
            "installing {package} failed: `{}`. What to do: check that npm's registry serves {package} \
             {version} (`npm view {package}@{version} version`) and that the disk has room, then run \
             `cargo xtask setup` again; to try another version, change it in \
             crates/xtask/src/setup/node_tools.rs and Trunk.toml",
            show(&cmd),
            package = tool.package,
            version = tool.version,
        )
    })?;
    let path = find(tool, root).with_context(|| {
        format!("`npm install {}` finished but `{}` is not in {}", tool.package, tool.bin, bin_dir(tool, root).display())
    })?;
    let found = version(&path).unwrap_or_default();
    if !found.starts_with(tool.expect) {
        bail!("{} was installed at {} but says `{found}`, not `{}*`", tool.package, path.display(), tool.expect);
    }
    Ok(Report { tool: name(tool), outcome: "installed", place: format!("{} (npm)", path.display()), secs: started.elapsed().as_secs_f64() })
}

/// The tool as setup's report names it: the program and the package it came from, since
/// `wasm-opt --version` names only binaryen's release.
fn name(tool: &NodeTool) -> String {
    format!("{} ({} {})", tool.bin, tool.package, tool.version)
}

/// The first line of `BIN --version`.
fn version(path: &Path) -> Option<String> {
    probe(&path.to_string_lossy(), &["--version"]).map(|out| out.lines().next().unwrap_or_default().to_owned())
}
