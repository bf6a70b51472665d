//! Shared harness of the end-to-end tests: a real datadict server on 127.0.0.1 with its SQLite
//! file in a temporary folder, a small WebDriver client to drive real headless browsers, and the
//! read API's answers as types (`readback`).

pub mod readback;
pub mod server;
pub mod webdriver;

use std::path::PathBuf;

/// The workspace root (this crate lives in `tests/`).
pub fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..").canonicalize().expect("the workspace root exists")
}

/// The built web app (`cargo xtask dist`), which the browser tests serve.
pub fn dist_dir() -> PathBuf {
    let dist = workspace_root().join("dist");
    assert!(
        dist.join("index.html").is_file(),
        "dist/index.html is missing: build the web app first with `cargo xtask dist` (`cargo xtask test` does it)"
    );
    dist
}

/// Opens the app served by `server` and signs in as its demo owner (the settings form's ids); the
/// caller waits for whatever its test needs to see next.
pub fn sign_in_as_demo(session: &webdriver::Session, server: &server::TestServer) {
    session.goto(&server.url("/")).unwrap();
    session.type_into("#project-id", &server.demo.project_id.to_string()).unwrap();
    session.type_into("#username", &server.demo.username).unwrap();
    session.type_into("#secret", &server.demo.secret).unwrap();
    session.click("#connect").unwrap();
}

/// Where tests leave files for people to look at (screenshots); ignored by git.
pub fn artifacts_dir() -> PathBuf {
    let dir = workspace_root().join("tests/artifacts");
    std::fs::create_dir_all(&dir).expect("can create tests/artifacts");
    dir
}
