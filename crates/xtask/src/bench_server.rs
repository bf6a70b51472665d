//! `cargo xtask bench server [--events N] [--clients 1,4,16]`: builds the release server and the
//! `bench_server` example of `datadict-server`, then runs it. The example starts the server binary
//! once per client count over a fresh data folder, sends gzipped 2,000-event batches over loopback
//! and prints events/s, p50/p99 request latency and the server's peak RSS, beside a bare SQLite
//! bulk insert of the same rows run before and after each case, and each case's ratio to the
//! mean of the two bare runs around it (see the example's header for the details). Then the
//! `/track` case: `--track-events` single-event form-encoded requests (0 skips it) from each of
//! `--track-clients`, beside the same events as 2,000-event `/import` batches. With
//! `--store postgres`, the `/import` cases run on a scratch PostgreSQL cluster instead, with one
//! and two server processes, beside a bare `COPY` of the same rows (the example's `pg.rs`); the
//! `/track` case is SQLite's only.

use crate::util::{cargo, run, step, target_dir};
use anyhow::{bail, Context};

pub fn main(args: &[String]) -> anyhow::Result<()> {
    let mut events = "200000".to_owned();
    let mut clients = "1,4,16".to_owned();
    let mut track_events = "50000".to_owned();
    let mut track_clients = "1,16,64".to_owned();
    let mut postgres = false;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--events" => events = it.next().context("--events needs a number")?.clone(),
            "--clients" => clients = it.next().context("--clients needs a list such as 1,4,16")?.clone(),
            "--track-events" => track_events = it.next().context("--track-events needs a number (0 skips the /track case)")?.clone(),
            "--track-clients" => track_clients = it.next().context("--track-clients needs a list such as 1,16,64")?.clone(),
            "--store" => match it.next().map(String::as_str) {
                Some("sqlite") => postgres = false,
                Some("postgres") => postgres = true,
                other => bail!("--store takes sqlite or postgres, not {}", other.unwrap_or("nothing")),
            },
            other => bail!("unknown option `{other}`: use --events N, --clients 1,4,16, --track-events N, --track-clients 1,16,64, --store sqlite|postgres"),
        }
    }
    step("building the release server and the bench example");
    run(cargo().args(["build", "--release", "-p", "datadict-server", "--bin", "datadict-server", "--example", "bench_server"]))?;
    let target = target_dir();
    let server = target.join("release/datadict-server");
    let example = target.join("release/examples/bench_server");
    let mut bench = std::process::Command::new(example);
    if postgres {
        step(&format!("benchmarking {events} events on PostgreSQL with {clients} concurrent clients, one and two server processes"));
        bench.arg("--postgres").arg(&server).arg(&events).arg(&clients);
    } else {
        step(&format!("benchmarking {events} events with {clients} concurrent clients"));
        bench.arg(&server).arg(&events).arg(&clients).arg(&track_events).arg(&track_clients);
    }
    run(&mut bench)
}
