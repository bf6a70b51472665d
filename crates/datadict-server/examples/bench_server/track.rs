//! The `/track` case of `bench_server`: tracking sends many small requests, so each client sends
//! one event per request, form-encoded as tracking libraries send it (`data=` holding the base64
//! of the event's JSON, the project token in `properties.token`), over a keep-alive connection,
//! and every answer must be the text `1`. The server runs with its defaults, so every
//! acknowledged event was fsynced (`synchronous=FULL`), as in the `/import` cases. Each case is
//! measured beside three peers driven the same way in the same run: the ceiling peer (a bare
//! handler, no database), so that the figures say what share of this machine's HTTP capacity
//! `/track` reaches; the durable ceiling peer (the bare handler with a group-committed log
//! write and fsync, [`durable_ceiling`]), the most any server that acknowledges only what is on
//! disk could reach here; and the durable insert peer (the bare handler with the server's own
//! group-committed SQLite insert, [`durable_insert`]), the bare database insert of `/track`; and
//! beside the storage floor of the same events ([`bare_commits`]: the
//! store's own writes in transactions of as many events as there are clients, without HTTP). Each
//! case reports the server's and the client's CPU per request: both share this machine's cores.
//!
//! The clients are driven in one of two ways ([`Client`]). The judged figures use
//! [`Client::Events`], one thread driving every connection, as `wrk` or `oha` do: a load
//! generator's own cost should not decide a server's figure, and here it shares the server's two
//! cores. [`Client::Threads`] (one blocking `ureq` thread per connection, the older driver) is
//! kept as a second line at 16 clients: it costs about 35 µs of CPU a request against 10, and
//! each answer wakes a sleeping thread, which the server's send pays for.

use super::{cpu_secs, peak_rss_kib, percentile as pct, round, start_server, stored_events};
use datadict_server::store::{EventBatch, Store, Synchronous};
use base64::Engine;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

/// How a `/track` case drives its keep-alive connections (see the module's comment).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Client {
    /// One thread drives every connection, reading each answer when it arrives.
    Events,
    /// One blocking thread per connection.
    Threads,
}

impl Client {
    /// `BENCH_TRACK_CLIENT=threads` or `events` (the default); anything else is refused.
    pub fn from_env() -> Client {
        match std::env::var("BENCH_TRACK_CLIENT").as_deref() {
            Err(_) | Ok("events") => Client::Events,
            Ok("threads") => Client::Threads,
            Ok(other) => panic!("BENCH_TRACK_CLIENT={other}: use events or threads"),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Client::Events => "events",
            Client::Threads => "threads",
        }
    }
}

/// One `/track` case: `records` (the events, without a token) sent one per request over
/// `clients` connections, driven as `client` says, to a fresh server. Right before, the same
/// bodies go the same way to the ceiling peer ([`ceiling`]), and the line reports both and their
/// ratio.
pub fn run_case(server: &str, records: &[Value], clients: usize, client: Client, folders: &mut Vec<tempfile::TempDir>) -> Value {
    let (mut child, base, creds, dir) = start_server(server, &[]);
    // The bodies are built before the clock starts: the client's encoding is not the server's cost.
    let bodies: Arc<Vec<String>> = Arc::new(records.iter().map(|r| form_body(r, &creds.project_token)).collect());
    let ceiling = ceiling(&bodies, clients, client);
    let durable = durable_ceiling(&bodies, clients, client, dir.path());
    let insert = durable_insert(records, &creds.project_token, &bodies, clients, client, dir.path());
    let fsync_ms = fsync_ms(dir.path());
    let cpu_before = cpu_secs(child.id());
    let client_cpu_before = cpu_secs(std::process::id());
    let (secs, l) = send_track(&format!("{base}/track"), &bodies, clients, client);
    let rss_kib = peak_rss_kib(child.id());
    let cpu = cpu_secs(child.id()) - cpu_before;
    // The client's own CPU (this process's threads sending the requests): it shares the
    // machine's cores with the server, so it bounds what the server can be given.
    let client_cpu = cpu_secs(std::process::id()) - client_cpu_before;
    let requests = records.len();
    let stored = stored_events(&base, &creds);
    assert_eq!(stored, requests, "the server stored {stored} of {requests} tracked events");
    child.kill().ok();
    child.wait().ok();
    folders.push(dir);
    let rate = (requests as f64 / secs).round();
    json!({"case": "track", "clients": clients, "client": client.name(), "requests": requests, "secs": round(secs),
        "requests_per_sec": rate, "p50_ms": round(pct(&l, 0.5)), "p99_ms": round(pct(&l, 0.99)),
        "server_peak_rss_mib": round(rss_kib as f64 / 1024.0), "server_cpu_secs": round(cpu),
        "requests_per_server_cpu_sec": (requests as f64 / cpu).round(), "client_cpu_secs": round(client_cpu),
        "server_cpu_us_per_request": (cpu * 1e6 / requests as f64).round(), "client_cpu_us_per_request": (client_cpu * 1e6 / requests as f64).round(),
        "ceiling_requests_per_sec": ceiling["requests_per_sec"], "ceiling_p50_ms": ceiling["p50_ms"], "ceiling_p99_ms": ceiling["p99_ms"],
        "ratio_to_ceiling": ratio(rate, &ceiling),
        "durable_ceiling_requests_per_sec": durable["requests_per_sec"], "durable_ceiling_p99_ms": durable["p99_ms"],
        "ratio_to_durable_ceiling": ratio(rate, &durable),
        "durable_insert_requests_per_sec": insert["requests_per_sec"], "durable_insert_p99_ms": insert["p99_ms"],
        "ratio_to_durable_insert": ratio(rate, &insert),
        "durable_insert_cpu_us_per_request_with_client": insert["cpu_us_per_request_with_client"],
        "durable_ceiling_cpu_us_per_request_with_client": durable["cpu_us_per_request_with_client"],
        "fsync_ms": (fsync_ms * 100.0).round() / 100.0})
}

/// `rate` over a peer's rate, to two places.
fn ratio(rate: f64, peer: &Value) -> f64 {
    (rate / peer["requests_per_sec"].as_f64().unwrap_or(f64::NAN) * 100.0).round() / 100.0
}

/// The storage floor of `/track` at `clients` clients: the same events written through the
/// server's own storage code (`Store::write_events`, as in the bench's bare insert) on one thread
/// of this process, without HTTP, checks or data-quality rows, in transactions of `clients` events
/// each: a group commit can hold at most one single-event request per client, so this is the
/// most commits per second the durable path allows at that concurrency on this disk and CPU.
pub fn bare_commits(records: &[Value], clients: usize, folders: &mut Vec<tempfile::TempDir>) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let synchronous = std::env::var("DATADICT_SQLITE_SYNCHRONOUS").ok().and_then(|s| Synchronous::parse(&s)).unwrap_or_default();
    let store = Store::open_with(&dir.path().join("bare.sqlite3"), synchronous).unwrap();
    let project = datadict_server::admin::create_project(&store, "bench").unwrap().id;
    let batches: Vec<EventBatch> = records
        .chunks(clients.max(1))
        .map(|chunk| {
            let mut batch = EventBatch::default();
            for r in chunk {
                let p = &r["properties"];
                let text = serde_json::to_string(r).unwrap();
                let (event, time) = (r["event"].as_str().unwrap(), p["time"].as_i64().unwrap());
                batch.push(event, time, p["distinct_id"].as_str().unwrap(), p["$insert_id"].as_str().unwrap(), &text);
            }
            batch
        })
        .collect();
    let cpu_before = cpu_secs(std::process::id());
    let started = Instant::now();
    for batch in &batches {
        store.write_events(project, batch, 0).unwrap();
    }
    let secs = started.elapsed().as_secs_f64();
    let cpu = cpu_secs(std::process::id()) - cpu_before;
    drop(store);
    folders.push(dir);
    json!({"case": "bare_track_commits", "events_per_commit": clients, "events": records.len(), "commits": batches.len(),
        "events_per_sec": (records.len() as f64 / secs).round(), "cpu_secs": round(cpu), "cpu_us_per_event": (cpu * 1e6 / records.len() as f64).round()})
}

/// The time of one small write and `fsync` in `dir` (the server's data folder, so the same file
/// system and disk), in milliseconds: the median of 200, after 16 untimed ones that allocate the
/// file's blocks, measured right before the case. An acknowledged event is on disk, so each
/// request waits for at least one `fsync` of the WAL, which requests of one group commit share.
/// Reported for context only: this host's `fsync` time moves by an order of magnitude from minute
/// to minute (0.17 to 4 ms seen in one quarter of an hour), so no bound derived from it held.
fn fsync_ms(dir: &std::path::Path) -> f64 {
    use std::io::{Seek, Write};
    let path = dir.join("fsync-probe");
    let mut file = std::fs::File::create(&path).unwrap();
    let page = [b'x'; 4096];
    let mut times = Vec::with_capacity(200);
    for i in 0..216u64 {
        let t = Instant::now();
        file.seek(std::io::SeekFrom::Start((i % 16) * 4096)).unwrap();
        file.write_all(&page).unwrap();
        file.sync_all().unwrap();
        if i >= 16 {
            times.push(t.elapsed().as_secs_f64() * 1000.0);
        }
    }
    drop(file);
    std::fs::remove_file(path).ok();
    times.sort_by(f64::total_cmp);
    pct(&times, 0.5)
}

/// The ceiling peer: what this machine can serve at all with the same client, the same
/// connections and the same bodies. A bare axum handler on 127.0.0.1 that reads the form body and
/// answers `1`, with no check, no database and no fsync, on a runtime of as many worker threads as
/// the server's (one per core). It runs in this process, beside the client threads, as the server
/// runs beside them on the same cores.
fn ceiling(bodies: &Arc<Vec<String>>, clients: usize, client: Client) -> Value {
    let app = axum::Router::new().route(
        "/track",
        axum::routing::post(|axum::Form(form): axum::Form<HashMap<String, String>>| async move {
            assert!(form.contains_key("data"), "a /track body without data=");
            "1"
        }),
    );
    serve_peer(app, bodies, clients, client)
}

/// The durable ceiling peer: the least a server must do to acknowledge only what is on disk.
/// The bare handler of [`ceiling`] hands each request's `data=` to one thread, which writes every
/// request queued meanwhile into a log in `dir` (the server's file system), `fdatasync`s it once,
/// and only then answers them: a group commit with nothing but the write and the fsync. The log is
/// allocated and synced before the clock starts and then overwritten from its start, as a WAL is
/// after a checkpoint (an append's fsync also commits the file's new size: 15–20% fewer requests/s
/// here). What `/track` reaches of this peer is what the server's own work costs.
///
/// `BENCH_PEER_SPIN_US=N` makes the handler spin N µs per request first: the peer's rate against
/// its CPU per request shows what CPU budget a rate leaves on this machine.
fn durable_ceiling(bodies: &Arc<Vec<String>>, clients: usize, client: Client, dir: &std::path::Path) -> Value {
    use std::io::Write;
    use std::os::unix::fs::FileExt;
    const LOG_BYTES: usize = 4 << 20;
    let mut log = std::fs::File::create(dir.join("durable-peer.log")).unwrap();
    log.write_all(&vec![0; LOG_BYTES]).unwrap();
    log.sync_all().unwrap();
    let spin = std::env::var("BENCH_PEER_SPIN_US").map_or(0, |us| us.parse().expect("BENCH_PEER_SPIN_US: a number of µs"));
    let job = move |data: String| {
        let started = Instant::now();
        while started.elapsed().as_micros() < spin {
            std::hint::spin_loop();
        }
        data
    };
    let (mut buffer, mut at) = (Vec::new(), 0);
    let commit = move |group: &[String]| {
        buffer.clear();
        group.iter().for_each(|data| {
            buffer.extend_from_slice(data.as_bytes());
            buffer.push(b'\n');
        });
        if at + buffer.len() > LOG_BYTES {
            at = 0;
        }
        log.write_all_at(&buffer, at as u64).unwrap();
        at += buffer.len();
        log.sync_data().unwrap();
    };
    group_commit_peer(bodies, clients, client, job, commit)
}

/// The durable insert peer: the bare database insert of `/track`, as the bare insert is to
/// `/import`. The bare handler of [`ceiling`] hands each request's `data=` to one thread, which
/// stores every request queued meanwhile with the server's own storage code (`Store::write_events`
/// on a fresh database in `dir`: the same table, key and de-duplication digest, the hourly
/// volumes, one transaction, `synchronous = FULL`) and only then answers them. It does no base64,
/// no JSON, no check, no data-quality rows: each event's fields are looked up by its `data=` value
/// in a map built before the clock starts. So it is what durability and SQLite cost a tracked
/// event on this machine, with the same HTTP in front; what `/track` reaches of it is what its
/// decoding, checks and tallies cost.
fn durable_insert(records: &[Value], token: &str, bodies: &Arc<Vec<String>>, clients: usize, client: Client, dir: &std::path::Path) -> Value {
    let store = Store::open_with(&dir.join("durable-insert.sqlite3"), Synchronous::Full).unwrap();
    let project = datadict_server::admin::create_project(&store, "insert-peer").unwrap().id;
    let rows: Arc<HashMap<String, usize>> = Arc::new(records.iter().enumerate().map(|(i, r)| (track_data(r, token), i)).collect());
    // (event, time, distinct_id, $insert_id, the record's text): what the server's writer gets.
    let fields: Vec<(String, i64, String, String, String)> = records
        .iter()
        .map(|r| {
            let (p, text) = (&r["properties"], serde_json::to_string(r).unwrap());
            let field = |name: &str| p[name].as_str().unwrap().to_owned();
            (r["event"].as_str().unwrap().to_owned(), p["time"].as_i64().unwrap(), field("distinct_id"), field("$insert_id"), text)
        })
        .collect();
    let job = move |data: String| *rows.get(&data).expect("a data= value the bench did not send");
    let commit = move |group: &[usize]| {
        let mut batch = EventBatch::default();
        for &i in group {
            let (event, time, distinct_id, insert_id, text) = &fields[i];
            batch.push(event, *time, distinct_id, insert_id, text);
        }
        store.write_events(project, &batch, 0).expect("the durable insert peer's write");
    };
    group_commit_peer(bodies, clients, client, job, commit)
}

/// A durable peer's group commit: the bare handler of [`ceiling`] turns each request's `data=`
/// into a job (`job`, on the request's task) and hands it to one thread, which `commit`s every job
/// queued meanwhile as one group and only then answers their requests. It ends when the runtime
/// drops the handler, and with it the queue. Served by [`serve_peer`].
fn group_commit_peer<J: Send + 'static>(
    bodies: &Arc<Vec<String>>,
    clients: usize,
    client: Client,
    job: impl Fn(String) -> J + Clone + Send + Sync + 'static,
    mut commit: impl FnMut(&[J]) + Send + 'static,
) -> Value {
    let (queue, jobs) = std::sync::mpsc::channel::<(J, tokio::sync::oneshot::Sender<()>)>();
    std::thread::spawn(move || {
        while let Ok(first) = jobs.recv() {
            let (group, answers): (Vec<J>, Vec<_>) = std::iter::once(first).chain(jobs.try_iter()).unzip();
            commit(&group);
            answers.into_iter().for_each(|done| done.send(()).unwrap_or_default());
        }
    });
    let app = axum::Router::new().route(
        "/track",
        axum::routing::post(move |axum::Form(mut form): axum::Form<HashMap<String, String>>| async move {
            let data = form.remove("data").expect("a /track body without data=");
            let (done, stored) = tokio::sync::oneshot::channel();
            queue.send((job(data), done)).unwrap();
            stored.await.expect("the durable peer's committing thread stopped");
            "1"
        }),
    );
    serve_peer(app, bodies, clients, client)
}

/// Serves `app` on 127.0.0.1 from a runtime of its own while `bodies` are sent to its `/track`;
/// returns the rate and latencies. The runtime, and with it `app`, is gone when it returns.
fn serve_peer(app: axum::Router, bodies: &Arc<Vec<String>>, clients: usize, client: Client) -> Value {
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let listener = rt.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).unwrap();
    let addr = listener.local_addr().unwrap();
    rt.spawn(async move { axum::serve(listener, app).await.unwrap() });
    let cpu_before = cpu_secs(std::process::id());
    let (secs, l) = send_track(&format!("http://{addr}/track"), bodies, clients, client);
    // The peer and the client share this process: their CPU together, a request's.
    let cpu = cpu_secs(std::process::id()) - cpu_before;
    rt.shutdown_background();
    json!({"requests_per_sec": (bodies.len() as f64 / secs).round(), "p50_ms": round(pct(&l, 0.5)), "p99_ms": round(pct(&l, 0.99)),
        "cpu_us_per_request_with_client": (cpu * 1e6 / bodies.len() as f64).round()})
}

/// Sends every body once to `url` over `clients` keep-alive connections, driven as `client`
/// says, and checks that every answer is `1`; returns what [`super::drive`] returns.
fn send_track(url: &str, bodies: &Arc<Vec<String>>, clients: usize, client: Client) -> (f64, Vec<f64>) {
    if client == Client::Events {
        return send_track_events(url, bodies, clients);
    }
    let url = url.to_owned();
    super::drive(bodies, clients, move |agent, _, body| {
        let mut r = agent
            .post(&url)
            .header("Content-Type", "application/x-www-form-urlencoded")
            .send(body.as_bytes())
            .expect("a /track request failed");
        let text = r.body_mut().read_to_string().unwrap();
        assert_eq!((r.status().as_u16(), text.as_str()), (200, "1"), "a /track answer");
    })
}

/// Sends every body once to `url` over `clients` keep-alive connections, all driven by one
/// thread (as `wrk -t1` drives its connections): a connection's answer is read when it arrives,
/// without a thread to wake per connection. Each request is written by hand (HTTP/1.1,
/// `Content-Length`), and each answer must be `200` with a `Content-Length` body of `1`.
fn send_track_events(url: &str, bodies: &Arc<Vec<String>>, clients: usize) -> (f64, Vec<f64>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let rest = url.strip_prefix("http://").expect("an http:// url");
    let (host, path) = rest.split_once('/').map(|(h, p)| (h.to_owned(), format!("/{p}"))).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let started = Instant::now();
    let mut l: Vec<f64> = rt.block_on(async {
        let tasks: Vec<_> = (0..clients)
            .map(|_| {
                let (next, bodies, host, path) = (next.clone(), bodies.clone(), host.clone(), path.clone());
                tokio::spawn(async move {
                    let mut stream = tokio::net::TcpStream::connect(&host).await.expect("connect");
                    stream.set_nodelay(true).unwrap();
                    let (mut request, mut answer, mut mine) = (Vec::new(), vec![0u8; 4096], Vec::new());
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(body) = bodies.get(i) else { break };
                        let t = Instant::now();
                        request.clear();
                        request.extend_from_slice(format!("POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n", body.len()).as_bytes());
                        request.extend_from_slice(body.as_bytes());
                        stream.write_all(&request).await.expect("a /track request failed");
                        let mut filled = 0;
                        loop {
                            assert!(filled < answer.len(), "an answer longer than {} bytes", answer.len());
                            let n = stream.read(&mut answer[filled..]).await.expect("a /track answer");
                            assert!(n > 0, "the server closed the connection");
                            filled += n;
                            if let Some(end) = answer[..filled].windows(4).position(|w| w == b"\r\n\r\n") {
                                let head = std::str::from_utf8(&answer[..end]).unwrap().to_ascii_lowercase();
                                let length: usize = head.lines().find_map(|h| h.strip_prefix("content-length:")).expect("an answer with content-length").trim().parse().unwrap();
                                if filled >= end + 4 + length {
                                    assert!(head.starts_with("http/1.1 200"), "a /track answer: {head}");
                                    assert_eq!(&answer[end + 4..end + 4 + length], b"1", "a /track answer");
                                    assert_eq!(filled, end + 4 + length, "more than one answer");
                                    break;
                                }
                            }
                        }
                        mine.push(t.elapsed().as_secs_f64() * 1000.0);
                    }
                    mine
                })
            })
            .collect();
        let mut all = Vec::new();
        for t in tasks {
            all.extend(t.await.unwrap());
        }
        all
    });
    let secs = started.elapsed().as_secs_f64();
    l.sort_by(f64::total_cmp);
    (secs, l)
}

/// `data=<base64 of the event with the token>`, percent-encoded as a form value.
fn form_body(record: &Value, token: &str) -> String {
    let encoded = track_data(record, token);
    let mut body = String::with_capacity(5 + encoded.len() * 3 / 2);
    body.push_str("data=");
    for c in encoded.chars() {
        match c {
            '+' => body.push_str("%2B"),
            '/' => body.push_str("%2F"),
            '=' => body.push_str("%3D"),
            c => body.push(c),
        }
    }
    body
}

/// The base64 of the event with the token: the value of `data=`.
fn track_data(record: &Value, token: &str) -> String {
    let mut event = record.clone();
    event["properties"]["token"] = json!(token);
    base64::engine::general_purpose::STANDARD.encode(serde_json::to_vec(&event).unwrap())
}

/// `/track` compared between two server binaries, `baseline` and `current`, in `rounds` rounds
/// that each run [`run_case`] on one then the other (`records`, `clients`): this host's speed
/// drifts within minutes (the ceiling peer alone from 28k to 48k requests/s), so only runs
/// alternated close together compare two builds. Prints every run's line, tagged with its
/// server, then the medians of each server and in how many rounds `current` was ahead.
pub fn compare(baseline: &str, current: &str, rounds: usize, records: &[Value], clients: usize, client: Client) {
    let mut folders = Vec::new();
    let mut runs: [Vec<Value>; 2] = [Vec::new(), Vec::new()];
    for _ in 0..rounds {
        for (i, (name, server)) in [("baseline", baseline), ("current", current)].into_iter().enumerate() {
            let mut line = run_case(server, records, clients, client, &mut folders);
            line["server"] = json!(name);
            println!("{line}");
            runs[i].push(line);
        }
    }
    let figure = |run: &Value, key: &str| run[key].as_f64().unwrap_or(f64::NAN);
    let median = |runs: &[Value], key: &str| {
        let mut v: Vec<f64> = runs.iter().map(|r| figure(r, key)).collect();
        v.sort_by(f64::total_cmp);
        let middle = match v.len() {
            0 => f64::NAN,
            n if n % 2 == 1 => v[n / 2],
            n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
        };
        (middle * 100.0).round() / 100.0
    };
    let ahead = |key: &str, lower_is_better: bool| {
        runs[0].iter().zip(&runs[1]).filter(|(b, c)| (figure(c, key) < figure(b, key)) == lower_is_better).count()
    };
    let keys = [
        "requests_per_sec",
        "server_cpu_us_per_request",
        "p99_ms",
        "ratio_to_ceiling",
        "durable_ceiling_requests_per_sec",
        "ratio_to_durable_ceiling",
        "durable_insert_requests_per_sec",
        "ratio_to_durable_insert",
    ];
    let medians = |runs: &[Value]| -> Value { keys.iter().map(|k| (k.to_string(), json!(median(runs, k)))).collect::<serde_json::Map<_, _>>().into() };
    println!(
        "{}",
        json!({"case": "track_compare", "clients": clients, "client": client.name(), "requests": records.len(), "rounds": rounds,
            "baseline": baseline, "current": current,
            "baseline_medians": medians(&runs[0]), "current_medians": medians(&runs[1]),
            "current_more_requests_per_sec_in": ahead("requests_per_sec", false),
            "current_less_cpu_per_request_in": ahead("server_cpu_us_per_request", true)})
    );
}
