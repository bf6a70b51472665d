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
    share_wasm(out)?;
    write_esm_wrapper(out)?;
    for dir in JS_DIRS {
        copy_dir(&Path::new(CRATE_DIR).join("npm").join(dir), &out.join(dir))?;
    }
    write_node_entries(out)?;
    write_web_entry(out)?;
    let version = read_version()?;
    std::fs::write(out.join("package.json"), package_json(&version))?;
    for file in ["README.md", "LICENSE", "LICENSE-MIT", "LICENSE-APACHE"] {
        std::fs::copy(Path::new(CRATE_DIR).join("npm").join(file), out.join(file))
            .with_context(|| format!("cannot copy crates/datadict-wasm/npm/{file}"))?;
    }
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

/// Both builds hold the same wasm module: the Node one reads the web one's file, so the package
/// ships it once. The line wasm-bindgen writes to find the file is checked, so a new version that
/// writes another one fails here instead of shipping a broken package.
fn share_wasm(out: &Path) -> anyhow::Result<()> {
    let node = out.join("node");
    let wasm = format!("{STEM}_bg.wasm");
    let same = std::fs::read(node.join(&wasm))? == std::fs::read(out.join("web").join(&wasm))?;
    anyhow::ensure!(same, "the nodejs and web builds of wasm-bindgen hold different wasm modules; ship both");
    let glue_path = node.join(format!("{STEM}.js"));
    let glue = std::fs::read_to_string(&glue_path)?;
    let line = format!("const wasmPath = `${{__dirname}}/{wasm}`;");
    anyhow::ensure!(glue.contains(&line), "the Node glue no longer has `{line}`: update share_wasm in crates/xtask/src/npm.rs");
    std::fs::write(&glue_path, glue.replace(&line, &format!("const wasmPath = `${{__dirname}}/../web/{wasm}`;")))?;
    std::fs::remove_file(node.join(&wasm))?;
    std::fs::remove_file(node.join(format!("{STEM}_bg.wasm.d.ts")))?;
    Ok(())
}

/// The browser entry (`import ... from "datadict"` under a bundler's `browser` condition): the
/// web build and the importer under one name. Every function and class checks that `init()` has
/// loaded the wasm module and otherwise says so, instead of failing inside the glue; the importer's
/// functions load it themselves. The names are read from the generated module, as for Node.
fn write_web_entry(out: &Path) -> anyhow::Result<()> {
    let glue = std::fs::read_to_string(out.join("web").join(format!("{STEM}.js")))?;
    let mut text = format!(
        "// The browser entry of `datadict`: the web build, each export checking that `init()` loaded the\n\
         // wasm module first, and the importer (which loads it itself).\n\
         import init, {{ initSync }} from \"./{STEM}.js\";\n\
         import * as glue from \"./{STEM}.js\";\n\n\
         let ready = false;\n\
         function loaded(name) {{\n\
         \x20 if (ready) return;\n\
         \x20 try {{\n\
         \x20   glue.defaultNamespace();\n\
         \x20   ready = true;\n\
         \x20 }} catch {{\n\
         \x20   throw new Error(`datadict: ${{name}} needs the wasm module: call \\`await init()\\` (the default export) first, once`);\n\
         \x20 }}\n\
         }}\n\n\
         export default init;\n\
         export {{ initSync }};\n\
         export {{ importEvents, importProfiles, fetchDictionary, ImportError, loadImporter }} from \"../lib/importer.web.mjs\";\n"
    );
    let mut names = 0;
    for l in glue.lines() {
        if let Some(rest) = l.strip_prefix("export function ") {
            let name = rest.split('(').next().unwrap_or_default();
            text.push_str(&format!("export function {name}(...args) {{\n  loaded(\"{name}\");\n  return glue.{name}(...args);\n}}\n"));
            names += 1;
        } else if let Some(rest) = l.strip_prefix("export class ") {
            let name = rest.split([' ', '{']).next().unwrap_or_default();
            text.push_str(&format!(
                "export class {name} extends glue.{name} {{\n  constructor(...args) {{\n    loaded(\"new {name}\");\n    super(...args);\n  }}\n}}\n"
            ));
            names += 1;
        }
    }
    anyhow::ensure!(names > 10 && text.contains("function defaultNamespace("), "found too few exports in the generated web module");
    std::fs::write(out.join("web/index.js"), text)?;
    std::fs::write(
        out.join("web/index.d.ts"),
        format!("export * from \"./{STEM}\";\nexport {{ default }} from \"./{STEM}\";\nexport * from \"../lib/importer\";\n"),
    )?;
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
  "module": "./web/index.js",
  "types": "./node/index.d.ts",
  "bin": {{ "datadict": "./bin/datadict.js" }},
  "exports": {{
    ".": {{
      "browser": {{
        "types": "./web/index.d.ts",
        "default": "./web/index.js"
      }},
      "types": "./node/index.d.ts",
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
  "files": ["node/", "web/", "lib/", "bin/", "README.md", "LICENSE", "LICENSE-MIT", "LICENSE-APACHE"],
  "sideEffects": ["./web/{STEM}.js"],
  "keywords": ["analytics", "data-dictionary", "events", "import", "wasm"]
}}
"#
    )
}
