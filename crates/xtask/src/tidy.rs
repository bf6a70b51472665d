//! The tidiness rules of the source tree, checked by a test of the native suite (as
//! rust-analyzer's `tidy` does), so that they hold without anyone remembering them: every Rust
//! file opens with a `//!` line saying what it is for, and no Rust file is over 600 lines.

use std::path::{Path, PathBuf};

/// The most lines a Rust file may have; a longer one is split by responsibility.
const MAX_LINES: usize = 600;

/// Files allowed over [`MAX_LINES`] for now, each with why. Only files that someone is splitting
/// right now belong here; an entry whose file is back under the limit is an error, so the list
/// cannot go stale.
const LONG_FILES: &[(&str, &str)] = &[
    ("crates/datadict-wasm/src/lib.rs", "being split by responsibility in issue 18, on another branch"),
    ("web/src/pages/import.rs", "being split into view, run and report in issue 18 (deliverable 6), on another branch"),
];

/// The folders of the workspace that hold Rust sources.
const SOURCE_ROOTS: &[&str] = &["crates", "web", "tests"];

/// Folders never looked into: build output, npm installs, hidden folders (`.git` and the like).
fn skipped(name: &str) -> bool {
    name == "target" || name == "node_modules" || name.starts_with('.')
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every `.rs` file below the source roots, as a path relative to the workspace root with `/`
/// separators, in sorted order.
fn rust_files(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut folders: Vec<PathBuf> = SOURCE_ROOTS.iter().map(|r| root.join(r)).collect();
    while let Some(folder) = folders.pop() {
        let entries = std::fs::read_dir(&folder).unwrap_or_else(|e| panic!("cannot list {}: {e}", folder.display()));
        for entry in entries {
            let entry = entry.unwrap_or_else(|e| panic!("cannot list {}: {e}", folder.display()));
            let name = entry.file_name().to_string_lossy().into_owned();
            let kind = entry.file_type().unwrap_or_else(|e| panic!("cannot read {}: {e}", entry.path().display()));
            if kind.is_dir() && !skipped(&name) {
                folders.push(entry.path());
            } else if kind.is_file() && name.ends_with(".rs") {
                let relative = entry.path().strip_prefix(root).expect("below the root").to_path_buf();
                out.push(relative.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/"));
            }
        }
    }
    out.sort();
    out
}

/// Whether a file says it is generated (the `@generated` marker near its top); such files are
/// not written by hand and are left alone.
fn is_generated(text: &str) -> bool {
    text.lines().take(5).any(|line| line.contains("@generated"))
}

/// Whether the file's first line (after any `#![...]` attribute lines) is a `//!` line.
fn opens_with_module_doc(text: &str) -> bool {
    text.lines().find(|line| !line.starts_with("#![")).is_some_and(|line| line.starts_with("//!"))
}

/// What is wrong with the tree: one line per offending file.
fn problems(root: &Path) -> Vec<String> {
    let files = rust_files(root);
    assert!(files.iter().any(|f| f == "crates/xtask/src/tidy.rs"), "the walk did not find this file below {}", root.display());
    let mut out = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(root.join(file)).unwrap_or_else(|e| panic!("cannot read {file}: {e}"));
        if is_generated(&text) {
            continue;
        }
        if !opens_with_module_doc(&text) {
            out.push(format!("{file}: does not open with a `//!` line; add one saying what the module is for"));
        }
        let lines = text.lines().count();
        let allowed = LONG_FILES.iter().any(|(long, _)| long == file);
        if lines > MAX_LINES && !allowed {
            out.push(format!("{file}: {lines} lines, over {MAX_LINES}; split it by responsibility"));
        }
        if lines <= MAX_LINES && allowed {
            out.push(format!("{file}: {lines} lines, within {MAX_LINES} now; remove it from LONG_FILES in crates/xtask/src/tidy.rs"));
        }
    }
    for (long, _) in LONG_FILES {
        if !files.iter().any(|f| f == long) {
            out.push(format!("{long}: named in LONG_FILES but not found; remove it from crates/xtask/src/tidy.rs"));
        }
    }
    out
}

#[test]
fn source_files_are_tidy() {
    let problems = problems(&workspace_root());
    assert!(problems.is_empty(), "{} problem(s) in the source tree:\n{}", problems.len(), problems.join("\n"));
}

#[test]
fn the_rules_see_what_they_should() {
    assert!(opens_with_module_doc("//! A module.\nfn f() {}\n"));
    assert!(opens_with_module_doc("#![cfg(test)]\n//! Tests of something.\n"));
    assert!(!opens_with_module_doc("use super::*;\n//! Too late.\n"));
    assert!(!opens_with_module_doc("/// An item's doc, not the module's.\nfn f() {}\n"));
    assert!(!opens_with_module_doc(""));
    assert!(is_generated("// @generated by a tool\nfn f() {}\n"));
    assert!(!is_generated("//! Written by hand.\n"));
    assert!(skipped("target") && skipped(".git") && skipped("node_modules") && !skipped("src"));
}
