//! `cargo xtask bench server [--events N] [--clients 1,4,16]`: builds the release server and the
//! `bench_server` example of `datadict-server`, then runs it. The example starts the server binary
//! once per client count over a fresh data folder, sends gzipped 2,000-event batches over loopback
//! and prints events/s, p50/p99 request latency and the server's peak RSS, beside a bare SQLite
//! bulk insert of the same rows run before and after each case, and each case's ratio to the
//! mean of the two bare runs around it (see the example's header for the details). Then the
//! `/track` case: `--track-events` single-event form-encoded requests (0 skips it) from each of
//! `--track-clients` (one thread driving every connection, as `wrk` does), then 16 clients with a
//! blocking thread each, beside the same events as 2,000-event `/import` batches. With
//! `--store postgres`, the `/import` cases run on a scratch PostgreSQL cluster instead, with one
//! and two server processes, beside a bare `COPY` of the same rows (the example's `pg.rs`); the
//! `/track` case is SQLite's only. With `--track-against <server-binary>` (an older build, say),
//! only the `/track` case runs, on that binary and on the freshly built one in turn for `--rounds`
//! rounds (6), `--track-events` requests (20,000) from `--track-clients` clients (16) each, and
//! the example prints the medians of both and in how many rounds the new build was ahead;
//! `--track-client threads` drives that comparison with a blocking thread per connection.

use crate::util::{cargo, run, step, target_dir};
use anyhow::{bail, Context};

pub fn main(args: &[String]) -> anyhow::Result<()> {
    let mut events = "200000".to_owned();
    let mut clients = "1,4,16".to_owned();
    let mut track_events = "50000".to_owned();
    let mut track_clients = "1,16,64".to_owned();
    let mut postgres = false;
    let mut against: Option<String> = None;
    let mut rounds = "6".to_owned();
    let mut track_client = "events".to_owned();
    let given = |name: &str| args.iter().any(|a| a == name);
    let (track_events_given, track_clients_given) = (given("--track-events"), given("--track-clients"));
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
            "--track-against" => against = Some(it.next().context("--track-against needs the path of a datadict-server binary")?.clone()),
            "--rounds" => rounds = it.next().context("--rounds needs a number")?.clone(),
            "--track-client" => match it.next().map(String::as_str) {
                Some(c @ ("events" | "threads")) => track_client = c.to_owned(),
                other => bail!("--track-client takes events or threads, not {}", other.unwrap_or("nothing")),
            },
            other => bail!("unknown option `{other}`: use --events N, --clients 1,4,16, --track-events N, --track-clients 1,16,64, --store sqlite|postgres, --track-against SERVER --rounds N --track-client events|threads"),
        }
    }
    step("building the release server and the bench example");
    run(cargo().args(["build", "--release", "-p", "datadict-server", "--bin", "datadict-server", "--example", "bench_server"]))?;
    let target = target_dir();
    let server = target.join("release/datadict-server");
    let example = target.join("release/examples/bench_server");
    let mut bench = std::process::Command::new(example);
    if let Some(baseline) = against {
        let requests = if track_events_given { track_events } else { "20000".to_owned() };
        let clients = if track_clients_given { track_clients } else { "16".to_owned() };
        if clients.contains(',') {
            bail!("--track-against compares at one client count: give --track-clients a single number");
        }
        step(&format!("comparing /track on {baseline} and this build: {rounds} rounds of {requests} requests from {clients} clients each"));
        bench.arg("--track-compare").arg(&baseline).arg(&server).arg(&rounds).arg(&requests).arg(&clients);
        bench.env("BENCH_TRACK_CLIENT", &track_client);
        return run(&mut bench);
    }
    if postgres {
        step(&format!("benchmarking {events} events on PostgreSQL with {clients} concurrent clients, one and two server processes"));
        bench.arg("--postgres").arg(&server).arg(&events).arg(&clients);
    } else {
        step(&format!("benchmarking {events} events with {clients} concurrent clients"));
        bench.arg(&server).arg(&events).arg(&clients).arg(&track_events).arg(&track_clients);
    }
    run(&mut bench)
}
