//! `cargo xtask <task>`: the project's repetitive tasks (setup, run, test, npm, dist, bench),
//! in Rust so they behave the same on every machine and never drift like shell scripts.

mod bench_core;
mod bench_npm;
mod bench_server;
mod dist;
mod npm;
mod postgres;
mod run;
mod setup;
mod test;
#[cfg(test)]
mod tidy;
mod util;

use anyhow::bail;

const USAGE: &str = "usage: cargo xtask <task> [options]

tasks:
  setup [run|test|all]   install what is missing (wasm32 target, wasm-bindgen CLI, trunk,
                         chromium + chromedriver, firefox-esr + geckodriver,
                         postgresql); default: all. DATADICT_TOOLS_DIR=DIR installs the
                         cargo-built tools into DIR (relative to the workspace) and looks
                         for them only there
  run [--listen ADDR] [--data-dir DIR] [--postgres]
                         build the web app and start the server with a demo project;
                         --postgres runs it on a local PostgreSQL in DIR/postgres
                         (port 5433, or DATADICT_POSTGRES_PORT)
  test [SUITE...]        install what tests need, then run every suite (or the named ones)
  npm                    build the npm package `datadict` into target/npm/
  dist                   build the static web app into dist/
  bench core [--events N] [--no-node] [--no-write] [--from FILE]
                         the core pipeline (read, validate, batch, gzip) on a deterministic
                         1M-event file, beside raw gzip of the same file
  bench server [--events N] [--clients 1,4,16] [--track-events N] [--track-clients 1,16,64] [--store sqlite|postgres]
               [--track-against SERVER [--rounds N] [--track-client events|threads]]
                         1, 4 and 16 concurrent import clients over loopback, beside a bare
                         SQLite insert of the same rows; then single-event /track requests
                         from 1, 16 and 64 connections driven by one thread (as wrk does), and
                         16 with a thread each, beside the same events through /import;
                         --track-against: /track alone on an older server and this build in
                         alternating rounds;
                         --store postgres: the import clients on PostgreSQL with one and two
                         server processes, beside a bare COPY of the same rows
  bench npm [--events N] [--levels 1,6] [--concurrency N] [--package DIR]
                         `datadict import` of a deterministic file to a loopback sink
  (figures and how to read them: BENCHMARKS.md)
";

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // `--help` after any task (`cargo xtask bench core --help`) shows the same usage.
    if args.iter().any(|a| a == "--help" || a == "-h") {
        print!("{USAGE}");
        return Ok(());
    }
    let (task, rest) = match args.split_first() {
        Some((task, rest)) => (task.as_str(), rest),
        None => {
            eprint!("{USAGE}");
            bail!("no task given");
        }
    };
    util::enter_workspace_root()?;
    setup::put_tools_on_path();
    match task {
        "setup" => setup::main(rest),
        "run" => run::main(rest),
        "test" => test::main(rest),
        "npm" => npm::main(rest).map(|_| ()),
        "dist" => dist::main(rest),
        "bench" if rest.first().is_some_and(|t| t == "core") => bench_core::main(&rest[1..]),
        "bench" if rest.first().is_some_and(|t| t == "server") => bench_server::main(&rest[1..]),
        "bench" if rest.first().is_some_and(|t| t == "npm") => bench_npm::main(&rest[1..]),
        "bench" => {
            eprint!("{USAGE}");
            bail!("`bench` needs one of: core, server, npm")
        }
        "help" | "--help" | "-h" => {
            print!("{USAGE}");
            Ok(())
        }
        other => {
            eprint!("{USAGE}");
            bail!("unknown task `{other}`")
        }
    }
}
