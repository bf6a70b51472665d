//! Checks of setup's install commands that need no network: each `cargo install` line is parsed by
//! the real cargo, so a version argument cargo refuses fails here in a second, not after a cold
//! install of the tools before it.

use super::*;

fn in_workspace_root() {
    crate::util::enter_workspace_root().expect("the workspace root");
}

#[test]
fn cargo_accepts_every_install_command_of_setup() {
    in_workspace_root();
    let root = std::env::temp_dir().join("xtask-tools-never-written");
    for tool in cargo_tools().expect("the tool list") {
        for locked in [true, false] {
            let args = install_args(&tool, Some(&root), locked);
            if let Err(refusal) = cargo_accepts(&args) {
                panic!("cargo refuses `cargo {}`:\n{refusal}", args.join(" "));
            }
        }
    }
}

#[test]
fn the_check_catches_a_version_cargo_refuses() {
    // The mistake that cost a fresh machine 18 minutes: a bare `0.37` is neither a version nor a
    // requirement with an operator.
    in_workspace_root();
    let broken = CargoTool { version: "0.37".into(), ..cargo_tools().expect("the tool list").pop().expect("a tool") };
    let refusal = cargo_accepts(&install_args(&broken, None, true)).expect_err("cargo refuses `--version 0.37`");
    assert!(refusal.contains("invalid value '0.37'"), "{refusal}");
    // So does an unknown flag of our own making, which the check must not mistake for its stop.
    let typo = vec!["install".to_owned(), "trunk".to_owned(), "--lockd".to_owned()];
    assert!(cargo_accepts(&typo).is_err());
}

#[test]
fn the_tools_folder_is_the_install_root_and_only_place_looked_in() {
    in_workspace_root();
    let tool = cargo_tools().expect("the tool list").remove(0);
    let root = Path::new("/tmp/xtask-tools");
    let args = install_args(&tool, Some(root), true);
    let at = args.iter().position(|a| a == "--root").expect("--root is passed");
    assert_eq!(args[at + 1], "/tmp/xtask-tools");
    assert!(!install_args(&tool, None, true).contains(&"--root".to_owned()));
    // An empty folder finds nothing, even where the tool is on PATH.
    let empty = std::env::temp_dir().join(format!("xtask-empty-tools-{}", std::process::id()));
    assert_eq!(find_cargo_tool("cargo", Some(&empty)), None);
    assert!(find_cargo_tool("cargo", None).is_some(), "cargo is on PATH or in cargo's bin folder");
}

#[test]
fn every_version_pin_matches_what_the_probe_expects() {
    in_workspace_root();
    for tool in cargo_tools().expect("the tool list") {
        let digits = tool.version.trim_start_matches(['~', '=', '^']);
        assert!(tool.expect.starts_with(&format!("{} {digits}", tool.bin)), "{tool:?}");
    }
}

/// The pins of the client libraries are read from the real `tests/clients/package.json` and
/// found in its lock file, and only exact versions count as pins.
#[test]
fn the_client_library_pins_are_exact() {
    in_workspace_root();
    let manifest = std::fs::read_to_string(Path::new(CLIENTS_DIR).join("package.json")).unwrap();
    let pins = pinned_dependencies(&manifest).expect("tests/clients/package.json pins its dependencies exactly");
    let names: Vec<&str> = pins.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(names, ["mixpanel", "mixpanel-browser"]);
    let lock = std::fs::read_to_string(Path::new(CLIENTS_DIR).join("package-lock.json")).unwrap();
    for (name, version) in &pins {
        assert!(version.split('.').count() == 3, "{version}");
        assert!(lock.contains(&format!("\"node_modules/{name}\": {{\n      \"version\": \"{version}\"")), "the lock file has {name} {version}");
    }
    assert_eq!(pinned_dependencies("{\"dependencies\": {\n  \"x\": \"1.2.0\",\n  \"y\": \"^1.2.0\"\n}}"), None);
    assert_eq!(pinned_dependencies("{\"dependencies\": {\n}}"), None);
    assert_eq!(
        pinned_dependencies("{\"dependencies\": {\n  \"x\": \"1.2.0\",\n  \"y\": \"3.4.5\"\n},\n\"z\": \"^1\"}"),
        Some(vec![("x".into(), "1.2.0".into()), ("y".into(), "3.4.5".into())])
    );
}
