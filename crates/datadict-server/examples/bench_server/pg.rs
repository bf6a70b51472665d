//! The PostgreSQL mode of `bench_server` (`cargo xtask bench server --store postgres`): a real
//! PostgreSQL cluster from Debian's binaries in a scratch folder, with the server's durability
//! (`fsync` and `synchronous_commit` on, their defaults), the release server on it with one and
//! with two processes (the clients spread over them in turn), at each client count. Each case
//! gets a fresh database and starts after a checkpoint, and reports the WAL it wrote. Beside them, in the same run, a bare `COPY` of the same rows into the
//! same `events` table (one `COPY`, so one commit, per 2,000 rows, from one connection): the
//! ceiling the server is measured against, run before the first case and after each client
//! count, and each case gets `ratio_to_copy`, its rate over the mean of the two `COPY` runs
//! around it. The two-process case at the largest client count gets `ratio_two_to_one_process`.

use super::{base64_encode, cpu_secs, peak_rss_kib, rate, round, stored_events, BATCH};
use datadict_server::demo::DemoCredentials;
use datadict_server::store::{EventBatch, Store};
use serde_json::{json, Value};
use std::io::Write;
use std::path::Path;
use std::process::{Child, Command};
use std::sync::Arc;
use std::time::Instant;

/// Runs every PostgreSQL case and prints one JSON line per case, in the order they ran.
pub fn run(server: &str, batches: &Arc<Vec<Vec<u8>>>, rows: &[EventBatch], events: usize, clients: &[usize]) {
    let pg = Cluster::start();
    eprintln!("PostgreSQL {} on 127.0.0.1:{} (fsync on, synchronous_commit on)", pg.version, pg.port);
    let mut next_db = 0;
    let mut fresh_db = || {
        next_db += 1;
        pg.create_database(&format!("bench_{next_db}"))
    };
    let mut before = bare_copy(&fresh_db(), rows);
    println!("{before}");
    let mut one_at_last = 0.0;
    for (i, &c) in clients.iter().enumerate() {
        let one = server_case(server, &fresh_db(), batches, events, c, 1);
        let two = server_case(server, &fresh_db(), batches, events, c, 2);
        let after = bare_copy(&fresh_db(), rows);
        let copy = (rate(&before) + rate(&after)) / 2.0;
        for mut line in [one, two] {
            line["copy_events_per_sec_around"] = json!([rate(&before), rate(&after)]);
            line["ratio_to_copy"] = json!((rate(&line) / copy * 100.0).round() / 100.0);
            if line["processes"] == 1 {
                one_at_last = rate(&line);
            } else if i + 1 == clients.len() {
                line["ratio_two_to_one_process"] = json!((rate(&line) / one_at_last * 100.0).round() / 100.0);
            }
            println!("{line}");
        }
        println!("{after}");
        before = after;
    }
}

/// A PostgreSQL cluster in a temporary folder, stopped and removed on drop.
struct Cluster {
    dir: tempfile::TempDir,
    port: u16,
    bin: std::path::PathBuf,
    version: String,
    root: bool,
}

impl Cluster {
    fn start() -> Self {
        let bin = pg_bin_dir().expect("PostgreSQL is not installed: run `cargo xtask setup run` or apt-get install postgresql");
        let version = bin.parent().and_then(|v| v.file_name()).map(|v| v.to_string_lossy().into_owned()).unwrap_or_default();
        let dir = tempfile::tempdir().unwrap();
        // PostgreSQL refuses to run as root: as root, the cluster belongs to the `postgres` user.
        let root = Command::new("id").arg("-u").output().map(|o| o.stdout.starts_with(b"0")).unwrap_or(false);
        if root {
            assert!(Command::new("chown").args(["-R", "postgres:postgres"]).arg(dir.path()).status().unwrap().success());
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let pg = Self { dir, port, bin, version, root };
        let data = pg.dir.path().join("data");
        let out = pg.command("initdb").args(["-A", "trust", "-U", "postgres", "-D"]).arg(&data).output().unwrap();
        assert!(out.status.success(), "initdb failed: {}", String::from_utf8_lossy(&out.stderr));
        // Only what a bench needs differs from the defaults: the address, and enough connections
        // for two servers' pools. Durability stays as shipped (fsync and synchronous_commit on).
        let options = format!("-p {port} -k {} -c listen_addresses=127.0.0.1 -c max_connections=100", pg.dir.path().display());
        let out = pg.command("pg_ctl").arg("-D").arg(&data).args(["-o", &options, "-w", "-l"]).arg(pg.dir.path().join("log")).arg("start").output().unwrap();
        assert!(out.status.success(), "pg_ctl start failed: {}", std::fs::read_to_string(pg.dir.path().join("log")).unwrap_or_default());
        pg
    }

    /// `program` of the cluster's binaries, as the user PostgreSQL runs as.
    fn command(&self, program: &str) -> Command {
        let program = self.bin.join(program);
        if self.root {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(program);
            c
        } else {
            Command::new(program)
        }
    }

    /// Creates database `name` and returns its URL. Then a checkpoint, so that no case pays for
    /// the write-ahead log of the cases before it: `max_wal_size` is 1 GB, and each case writes
    /// `wal_mib` of it (in its line).
    fn create_database(&self, name: &str) -> String {
        let mut admin = client(&format!("postgres://postgres@127.0.0.1:{}/postgres", self.port));
        admin.batch_execute(&format!("CREATE DATABASE {name}")).unwrap();
        admin.batch_execute("CHECKPOINT").unwrap();
        format!("postgres://postgres@127.0.0.1:{}/{name}", self.port)
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = self.command("pg_ctl").arg("-D").arg(self.dir.path().join("data")).args(["-m", "immediate", "stop"]).output();
    }
}

fn client(url: &str) -> postgres::Client {
    postgres::Client::connect(url, postgres::NoTls).unwrap()
}

/// The cluster's current write-ahead log position, in bytes.
fn wal_bytes(c: &mut postgres::Client) -> f64 {
    c.query_one("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::float8", &[]).unwrap().get(0)
}

/// The `bin` folder of the newest installed PostgreSQL.
fn pg_bin_dir() -> Option<std::path::PathBuf> {
    let mut found: Vec<_> = std::fs::read_dir("/usr/lib/postgresql").ok()?.flatten().map(|e| e.path().join("bin")).filter(|p| p.join("initdb").is_file()).collect();
    found.sort_by_key(|p| p.parent().and_then(|v| v.file_name()).and_then(|v| v.to_str()).and_then(|v| v.parse::<u32>().ok()));
    found.pop()
}

/// One server case: `processes` server processes on the database at `url`, `clients` threads
/// sending the batches, each thread to the processes in turn (thread `i` to process
/// `i % processes`).
fn server_case(server: &str, url: &str, batches: &Arc<Vec<Vec<u8>>>, events: usize, clients: usize, processes: usize) -> Value {
    // One data folder for both: it holds only the demo credentials, which the first process
    // writes and the second reads back (the demo project is in the database already).
    let dir = tempfile::tempdir().unwrap();
    let mut children = Vec::new();
    let mut bases = Vec::new();
    for _ in 0..processes {
        let (child, base) = start_server(server, url, dir.path());
        children.push(child);
        bases.push(base);
    }
    let creds: DemoCredentials = serde_json::from_str(&std::fs::read_to_string(dir.path().join("demo-credentials.json")).unwrap()).unwrap();
    let auth = format!("Basic {}", base64_encode(format!("{}:", creds.project_token).as_bytes()));
    let mut db = client(url);
    let wal_before = wal_bytes(&mut db);
    let cpu_before: f64 = children.iter().map(|c| cpu_secs(c.id())).sum();
    let (secs, l) = super::send_imports(&bases, &auth, batches, clients);
    let wal_mib = (wal_bytes(&mut db) - wal_before) / 1048576.0;
    let rss: Vec<f64> = children.iter().map(|c| round(peak_rss_kib(c.id()) as f64 / 1024.0)).collect();
    let cpu: f64 = children.iter().map(|c| cpu_secs(c.id())).sum::<f64>() - cpu_before;
    // Every event arrived, and each process reads all of them (they share the database).
    for base in &bases {
        let stored = stored_events(base, &creds);
        assert_eq!(stored, events, "the server at {base} reads {stored} of {events} events");
    }
    for mut child in children {
        child.kill().ok();
        child.wait().ok();
    }
    let pct = |p: f64| super::percentile(&l, p);
    json!({"case": "server_postgres", "processes": processes, "clients": clients, "events": events, "secs": round(secs),
        "events_per_sec": (events as f64 / secs).round(), "p50_ms": round(pct(0.5)), "p99_ms": round(pct(0.99)),
        "server_peak_rss_mib": rss, "server_cpu_secs": round(cpu), "wal_mib": round(wal_mib)})
}

/// Starts one server process on the database at `url`; returns it and its base URL.
fn start_server(server: &str, url: &str, dir: &Path) -> (Child, String) {
    super::spawn_server(server, dir, &["--database", url])
}

/// The same rows with `COPY` into the `events` table of a fresh database (migrated by the
/// server's own code), one `COPY` per 2,000-row batch on one connection: no HTTP, gzip,
/// validation, de-duplication or volume counting.
fn bare_copy(url: &str, rows: &[EventBatch]) -> Value {
    let store = Store::open_postgres(url).unwrap();
    let project = datadict_server::admin::create_project(&store, "bench").unwrap().id;
    drop(store);
    let mut c = client(url);
    // The `COPY` text of each batch is built before the clock starts, as the server's rows (with
    // their digest) are built before its writer runs.
    let texts: Vec<Vec<u8>> = rows.iter().map(|batch| copy_text(project, batch)).collect();
    let wal_before = wal_bytes(&mut c);
    let started = Instant::now();
    for text in &texts {
        let mut w = c.copy_in("COPY events (project_id, dedup, event, time_ms, distinct_id, insert_id, record, ingested_at) FROM STDIN").unwrap();
        w.write_all(text).unwrap();
        w.finish().unwrap();
    }
    let secs = started.elapsed().as_secs_f64();
    let wal_mib = (wal_bytes(&mut c) - wal_before) / 1048576.0;
    let events: usize = rows.iter().map(EventBatch::len).sum();
    let stored: i64 = c.query_one("SELECT count(*) FROM events", &[]).unwrap().get(0);
    assert_eq!(stored as usize, events, "COPY stored {stored} of {events} rows");
    json!({"case": "bare_postgres_copy", "events": events, "rows_per_copy": BATCH, "secs": round(secs), "events_per_sec": (events as f64 / secs).round(), "wal_mib": round(wal_mib)})
}

/// A batch in `COPY`'s text format.
fn copy_text(project: i64, batch: &EventBatch) -> Vec<u8> {
    let mut out = Vec::with_capacity(batch.text_len() + batch.len() * 80);
    for row in batch.iter() {
        // A `bytea` in text form is `\x` and hex; the backslash itself is escaped in `COPY` text.
        let hex: String = row.dedup.iter().map(|b| format!("{b:02x}")).collect();
        write!(out, "{project}\t\\\\x{hex}\t").unwrap();
        escape(&mut out, row.event);
        write!(out, "\t{}\t", row.time_ms).unwrap();
        escape(&mut out, row.distinct_id);
        out.push(b'\t');
        escape(&mut out, row.insert_id);
        out.push(b'\t');
        escape(&mut out, row.record);
        out.extend_from_slice(b"\t0\n");
    }
    out
}

/// Appends `s` escaped for `COPY`'s text format (backslash, tab, newline, carriage return).
fn escape(out: &mut Vec<u8>, s: &str) {
    for b in s.bytes() {
        match b {
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\t' => out.extend_from_slice(b"\\t"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            _ => out.push(b),
        }
    }
}
