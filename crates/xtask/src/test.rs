//! `cargo xtask test`: installs what the tests need, then runs every suite and prints one summary
//! line per suite. A failing suite does not stop the others, so one run shows every failure.

use crate::setup::{self, wasm_command, Need};
use crate::util::{cargo, free_bytes, human_gib, human_secs, run, step, target_dir, timed, which};
use anyhow::{bail, Context};
use std::path::Path;
use std::process::Command;

/// Disk that a run of every suite from a clean checkout writes under the target folder (1.6 GiB
/// measured, see README's "Measured"), with some room to spare.
const DISK_NEEDED: u64 = 2 << 30;

/// Below this, a failed suite is most likely a full disk, and the summary says so.
const DISK_NEARLY_FULL: u64 = 256 << 20;

/// The suites in the order they run; names are what `cargo xtask test NAME` accepts.
const SUITES: &[(&str, &str)] = &[
    ("native", "unit and integration tests of every crate, server over real HTTP, browser end-to-end (app and npm browser build)"),
    ("wasm-chromium", "core and web app compiled to wasm, in headless Chromium"),
    ("wasm-firefox", "core and web app compiled to wasm, in headless Firefox"),
    ("npm", "the packed npm tarball installed into a scratch project, under Node's test runner"),
    ("lint", "clippy and rustdoc over the native crates, every warning an error"),
];

pub fn main(args: &[String]) -> anyhow::Result<()> {
    for arg in args {
        if !SUITES.iter().any(|(name, _)| name == arg) {
            let names = SUITES.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ");
            bail!("unknown suite `{arg}`: choose from {names}");
        }
    }
    let selected: Vec<&str> =
        SUITES.iter().map(|(n, _)| *n).filter(|n| args.is_empty() || args.iter().any(|a| a == n)).collect();

    warn_if_disk_is_short();
    let (ready, setup_secs) = timed(|| setup::ensure(Need::Test));
    ready?;
    // The end-to-end tests serve the built app and load the npm package's browser builds, so both
    // are built before the suites run.
    if selected.contains(&"native") {
        let (built, secs) = timed(crate::dist::build);
        built.context("building the web app for the end-to-end tests failed")?;
        println!("    web app built in {}", human_secs(secs));
        let (built, secs) = timed(crate::npm::build);
        built.context("building the npm package for the browser tests failed")?;
        println!("    npm package built in {}", human_secs(secs));
    }

    let mut results = Vec::new();
    for name in selected {
        let description = SUITES.iter().find(|(n, _)| *n == name).map_or("", |(_, d)| *d);
        step(&format!("suite {name}: {description}"));
        let (outcome, secs) = timed(|| run_suite(name));
        if let Err(err) = &outcome {
            println!("!!! suite {name} failed: {err:#}");
        }
        results.push((name, outcome.is_ok(), secs));
    }

    println!();
    println!("summary (setup {}):", human_secs(setup_secs));
    for (name, ok, secs) in &results {
        println!("  suite {name:<14} {} in {}", if *ok { "passed" } else { "FAILED" }, human_secs(*secs));
    }
    let failed = results.iter().filter(|(_, ok, _)| !ok).count();
    println!("suites: {} passed, {failed} failed", results.len() - failed);
    if failed > 0 {
        if let Some(free) = free_bytes(&target_dir()).filter(|free| *free < DISK_NEARLY_FULL) {
            println!(
                "the disk holding {} has only {} left: a suite that failed with \"No space left on device\" \
                 needs more free disk (about {})",
                target_dir().display(),
                human_gib(free),
                human_gib(DISK_NEEDED)
            );
        }
        bail!("{failed} suite(s) failed");
    }
    Ok(())
}

/// Says before the first build when the disk is unlikely to hold a full run, so a full disk is not
/// first seen as a compiler's write error half an hour in.
fn warn_if_disk_is_short() {
    let target = target_dir();
    if let Some(free) = free_bytes(&target).filter(|free| *free < DISK_NEEDED) {
        println!(
            "warning: {} free on the disk holding {}; a full test run from a clean checkout writes \
             up to {} there. Free some space, for example with `cargo clean` in checkouts you no \
             longer use.",
            human_gib(free),
            target.display(),
            human_gib(DISK_NEEDED)
        );
    }
}

fn run_suite(name: &str) -> anyhow::Result<()> {
    match name {
        "native" => {
            let mut cmd = cargo();
            cmd.args(["test", "--workspace", "--exclude", "datadict-web", "--no-fail-fast"]);
            // The browser tests drive Firefox through the geckodriver that setup found.
            if let Some(gecko) = which("geckodriver") {
                cmd.env("GECKODRIVER", gecko);
            }
            run(&mut cmd)
        }
        "wasm-chromium" => wasm_tests("CHROMEDRIVER", Path::new("/usr/bin/chromedriver").to_path_buf()),
        "wasm-firefox" => {
            let gecko = which("geckodriver").context("geckodriver is not installed: run `cargo xtask setup`")?;
            wasm_tests("GECKODRIVER", gecko)
        }
        "npm" => npm_tests(),
        "lint" => lint(),
        other => bail!("no suite `{other}`"),
    }
}

/// Clippy over every native crate and target, then their API docs, each with warnings made
/// errors: a warning either is fixed or says in the code why it is allowed. The web app builds
/// only for wasm32 and is left out, as in the native suite.
fn lint() -> anyhow::Result<()> {
    let mut clippy = cargo();
    clippy.args(["clippy", "--workspace", "--all-targets", "--exclude", "datadict-web", "--", "-D", "warnings"]);
    run(&mut clippy)?;
    let mut doc = cargo();
    doc.args(["doc", "--workspace", "--no-deps", "--exclude", "datadict-web"]).env("RUSTDOCFLAGS", "-D warnings");
    run(&mut doc)
}

/// Runs the wasm-bindgen tests of the binding and of the web app in one browser; the runner is
/// told which browser by the one WebDriver variable that is set.
fn wasm_tests(driver_var: &str, driver: std::path::PathBuf) -> anyhow::Result<()> {
    let mut cmd = wasm_command(cargo());
    cmd.args(["test", "--target", "wasm32-unknown-unknown", "--package", "datadict-wasm", "--package", "datadict-web"]);
    for var in ["CHROMEDRIVER", "GECKODRIVER", "SAFARIDRIVER", "WASM_BINDGEN_USE_BROWSER"] {
        cmd.env_remove(var);
    }
    cmd.env(driver_var, driver);
    // A generous timeout: a cold browser start on a busy 2-core machine can take a while.
    cmd.env("WASM_BINDGEN_TEST_TIMEOUT", "120");
    run(&mut cmd)
}

/// Packs the npm package, installs the tarball into a scratch project and runs the Node tests
/// there, so the tests see exactly what a user's `npm install` gives them.
fn npm_tests() -> anyhow::Result<()> {
    let package = crate::npm::build()?;
    // The Node tests start `target/debug/datadict-server`; built here so that they never run an
    // older build left there (cargo does nothing when it is up to date).
    step("cargo build -p datadict-server");
    run(cargo().args(["build", "-p", "datadict-server"]))?;
    let scratch = Path::new("target/npm-scratch");
    if scratch.exists() {
        std::fs::remove_dir_all(scratch)?;
    }
    std::fs::create_dir_all(scratch)?;
    let scratch = scratch.canonicalize()?;
    step("npm pack");
    let out = Command::new("npm")
        .args(["pack", "--silent", "--pack-destination"])
        .arg(&scratch)
        .current_dir(&package)
        .output()
        .context("cannot run npm pack")?;
    anyhow::ensure!(out.status.success(), "npm pack failed: {}", String::from_utf8_lossy(&out.stderr));
    let tarball = String::from_utf8_lossy(&out.stdout).trim().lines().last().unwrap_or_default().to_owned();
    println!("    packed {tarball}");
    std::fs::write(scratch.join("package.json"), "{\"name\":\"datadict-npm-scratch\",\"private\":true}\n")?;
    run(Command::new("npm")
        .args(["install", "--no-audit", "--no-fund", "--offline", "--silent"])
        .arg(format!("./{tarball}"))
        .current_dir(&scratch))?;
    let tests_dir = Path::new("tests/npm").canonicalize().context("tests/npm is missing")?;
    let mut files: Vec<_> = std::fs::read_dir(&tests_dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.contains(".test.")))
        .collect();
    files.sort();
    anyhow::ensure!(!files.is_empty(), "no *.test.* files in tests/npm");
    for file in &files {
        std::fs::copy(file, scratch.join(file.file_name().unwrap()))?;
    }
    let mut node = Command::new("node");
    node.arg("--test").current_dir(&scratch);
    for file in &files {
        node.arg(file.file_name().unwrap());
    }
    run(&mut node)
}
