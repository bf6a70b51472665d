//! `cargo xtask npm`: builds the npm package `datadict` into `target/npm/` from the
//! `datadict-wasm` crate: a CommonJS build for Node (`require`), an ES-module wrapper of it for
//! Node (`import`), an ES-module build for browsers, TypeScript types, `package.json` and README,
//! plus the JavaScript importer and command line from `crates/datadict-wasm/npm/{lib,bin}`
//! (`importEvents`/`importProfiles` on the main entry and on `datadict/importer`, `npx datadict`).

use crate::setup::{self, wasm_command, Need};
use crate::util::{cargo, run, step, which};
use anyhow::Context;
use std::path::{Path, PathBuf};
use std::process::Command;

const CRATE_DIR: &str = "crates/datadict-wasm";
const OUT: &str = "target/npm";
/// The base name wasm-bindgen gives its output files.
const STEM: &str = "datadict_wasm";

pub fn main(args: &[String]) -> anyhow::Result<PathBuf> {
    if let Some(arg) = args.first() {
        anyhow::bail!("`npm` takes no arguments (got `{arg}`)");
    }
    setup::ensure(Need::Run)?;
    build()
}

/// Builds the package and returns its folder; assumes the toolchain is in place.
pub fn build() -> anyhow::Result<PathBuf> {
    step("building datadict-wasm for wasm32 (profile wasm-release)");
    run(wasm_command(cargo()).args([
        "build",
        "--package",
        "datadict-wasm",
        "--target",
        "wasm32-unknown-unknown",
        "--profile",
        "wasm-release",
    ]))?;
    let wasm = Path::new("target/wasm32-unknown-unknown/wasm-release").join(format!("{STEM}.wasm"));
    let out = Path::new(OUT);
    if out.exists() {
        std::fs::remove_dir_all(out).with_context(|| format!("cannot clear {OUT}"))?;
    }
    let bindgen = which("wasm-bindgen").context("wasm-bindgen is not installed: run `cargo xtask setup`")?;
    for (target, dir) in [("nodejs", "node"), ("web", "web")] {
        step(&format!("wasm-bindgen --target {target} -> {OUT}/{dir}"));
        run(Command::new(&bindgen).args(["--target", target, "--out-dir"]).arg(out.join(dir)).arg(&wasm))?;
    }
    write_esm_wrapper(out)?;
    for dir in JS_DIRS {
        copy_dir(&Path::new(CRATE_DIR).join("npm").join(dir), &out.join(dir))?;
    }
    write_node_entries(out)?;
    let version = read_version()?;
    std::fs::write(out.join("package.json"), package_json(&version))?;
    std::fs::copy(Path::new(CRATE_DIR).join("npm/README.md"), out.join("README.md"))
        .context("cannot copy crates/datadict-wasm/npm/README.md")?;
    println!("    package ready in {OUT}/ (version {version})");
    Ok(out.to_path_buf())
}

/// Node's ES-module entry: re-exports the CommonJS build by name, so `import { x } from
/// "datadict"` works without a bundler. The names are read from the generated CommonJS file,
/// so the wrapper can never fall behind the binding.
fn write_esm_wrapper(out: &Path) -> anyhow::Result<()> {
    let cjs = std::fs::read_to_string(out.join("node").join(format!("{STEM}.js")))?;
    let mut names: Vec<&str> = cjs
        .lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("exports.").or_else(|| l.strip_prefix("module.exports."))?;
            let name = rest.split([' ', '=']).next()?;
            (!name.is_empty() && !name.starts_with("__")).then_some(name)
        })
        .collect();
    names.sort_unstable();
    names.dedup();
    anyhow::ensure!(!names.is_empty(), "found no exports in the generated CommonJS module");
    let mut text = format!(
        "// ES-module entry for Node: the CommonJS build, re-exported by name.\nimport cjs from \"./{STEM}.js\";\n"
    );
    for name in &names {
        text.push_str(&format!("export const {name} = cjs.{name};\n"));
    }
    text.push_str("export * from \"../lib/importer.mjs\";\n");
    text.push_str("export default cjs;\n");
    std::fs::write(out.join("node/index.mjs"), text)?;
    Ok(())
}

/// The folders of hand-written JavaScript copied into the package as they are.
const JS_DIRS: [&str; 2] = ["lib", "bin"];

fn copy_dir(from: &Path, to: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from).with_context(|| format!("cannot read {}", from.display()))? {
        let path = entry?.path();
        if path.is_file() {
            std::fs::copy(&path, to.join(path.file_name().unwrap())).with_context(|| format!("cannot copy {}", path.display()))?;
        }
    }
    Ok(())
}

/// Node's CommonJS entry and its types: the binding and the importer under one name, so
/// `require("datadict").importEvents` works next to the validators.
fn write_node_entries(out: &Path) -> anyhow::Result<()> {
    std::fs::write(
        out.join("node/index.cjs"),
        format!("// CommonJS entry for Node: the binding and the importer.\n\"use strict\";\nmodule.exports = {{ ...require(\"./{STEM}.js\"), ...require(\"../lib/importer.js\") }};\n"),
    )?;
    std::fs::write(
        out.join("node/index.d.ts"),
        format!("export * from \"./{STEM}\";\nexport * from \"../lib/importer\";\n"),
    )?;
    Ok(())
}

fn read_version() -> anyhow::Result<String> {
    let manifest = std::fs::read_to_string("Cargo.toml")?;
    let in_package = manifest.split("[workspace.package]").nth(1).context("no [workspace.package] in Cargo.toml")?;
    in_package
        .lines()
        .find_map(|l| l.trim().strip_prefix("version = \"")?.strip_suffix('"').map(str::to_owned))
        .context("no version in [workspace.package]")
}

fn package_json(version: &str) -> String {
    format!(
        r#"{{
  "name": "datadict",
  "version": "{version}",
  "description": "Validate, check against a data dictionary, batch and gzip analytics events: the datadict core compiled to WebAssembly",
  "license": "MIT OR Apache-2.0",
  "engines": {{ "node": ">=18" }},
  "main": "./node/index.cjs",
  "module": "./web/{STEM}.js",
  "types": "./node/index.d.ts",
  "bin": {{ "datadict": "./bin/datadict.js" }},
  "exports": {{
    ".": {{
      "types": "./node/index.d.ts",
      "browser": "./web/{STEM}.js",
      "import": "./node/index.mjs",
      "require": "./node/index.cjs"
    }},
    "./importer": {{
      "types": "./lib/importer.d.ts",
      "browser": "./lib/importer.web.mjs",
      "import": "./lib/importer.mjs",
      "require": "./lib/importer.js"
    }},
    "./web": {{
      "types": "./web/{STEM}.d.ts",
      "default": "./web/{STEM}.js"
    }},
    "./package.json": "./package.json"
  }},
  "files": ["node/", "web/", "lib/", "bin/", "README.md"],
  "sideEffects": ["./web/{STEM}.js"],
  "keywords": ["analytics", "data-dictionary", "events", "import", "wasm"]
}}
"#
    )
}
