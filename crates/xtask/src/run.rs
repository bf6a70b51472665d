//! `cargo xtask run`: the one command that starts the whole system locally: it installs what is
//! missing, builds the web app, then starts the server on its embedded SQLite with a demo project
//! and prints the URL and the demo credentials. With `--postgres`, it first starts a local
//! PostgreSQL from Debian's package in `<data-dir>/postgres` (see `postgres.rs`) and runs the
//! server on it.

use crate::setup::{self, Need};
use crate::util::{cargo, run, step};

pub fn main(args: &[String]) -> anyhow::Result<()> {
    let mut listen = std::env::var("DATADICT_LISTEN").unwrap_or_else(|_| "127.0.0.1:8080".into());
    let mut data_dir = std::env::var("DATADICT_DATA_DIR").unwrap_or_else(|_| "data".into());
    let mut postgres = false;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--postgres" => postgres = true,
            "--listen" => listen = it.next().cloned().ok_or_else(|| anyhow::anyhow!("--listen needs an address such as 127.0.0.1:8080"))?,
            "--data-dir" => data_dir = it.next().cloned().ok_or_else(|| anyhow::anyhow!("--data-dir needs a folder"))?,
            other => anyhow::bail!("unknown option `{other}` for `run`: use --listen ADDR, --data-dir DIR or --postgres"),
        }
    }
    setup::ensure(Need::Run)?;
    crate::dist::build()?;
    step("building the server (release)");
    run(cargo().args(["build", "--release", "--package", "datadict-server"]))?;
    let mut server = std::process::Command::new("target/release/datadict-server");
    server.args(["--listen", &listen, "--data-dir", &data_dir, "--web-dir", "dist"]);
    if postgres {
        let url = crate::postgres::start_local(std::path::Path::new(&data_dir))?;
        step(&format!("starting the server on {listen} (data in PostgreSQL, {url})"));
        server.args(["--database", &url]);
    } else {
        step(&format!("starting the server on {listen} (data in {data_dir}/)"));
    }
    exec(server)
}

/// Replaces this process with the server, so that Ctrl-C reaches the server alone and it shuts
/// down cleanly without a parent that dies first.
#[cfg(unix)]
fn exec(mut cmd: std::process::Command) -> anyhow::Result<()> {
    use std::os::unix::process::CommandExt;
    Err(anyhow::Error::from(cmd.exec()).context("cannot start target/release/datadict-server"))
}

#[cfg(not(unix))]
fn exec(mut cmd: std::process::Command) -> anyhow::Result<()> {
    run(&mut cmd)
}
