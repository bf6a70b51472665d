//! Figures for BENCHMARKS.md "warehouse and migration": rows per second of a warehouse sync from a
//! generated SQLite table, and events per second of a migration from a generated export archive
//! served by a stand-in of the source tool on 127.0.0.1. Both go through the real server over
//! HTTP (the job runs in the server as it does in production). Not a test: it prints JSON lines.
//!
//! Usage: `cargo run --release -p datadict-server --example bench_jobs -- [rows] [events]`
//! (default 1,000,000 each).

use base64::Engine;
use datadict_server::store::Role;
use datadict_server::{admin, app, AppState, Config, Store};
use serde_json::{json, Value};
use std::io::{Cursor, Write};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rows: usize = args.first().map_or(1_000_000, |s| s.parse().expect("rows: a number"));
    let events: usize = args.get(1).map_or(1_000_000, |s| s.parse().expect("events: a number"));
    let dir = tempfile::tempdir().unwrap();

    // The source tool's stand-in, serving one archive built up front.
    let t0 = Instant::now();
    let days = 10usize;
    let today = datadict_core::Date::from_ms(now_ms());
    let archive = Arc::new(build_archive(today, days, events));
    let archive_s = t0.elapsed().as_secs_f64();
    let source = serve_archive(archive.clone());

    let mut config = Config::default();
    config.jobs.amplitude_url = source.clone();
    let store = Store::open(&dir.path().join("datadict.sqlite3")).unwrap();
    let base = serve(AppState::new(store.clone(), Arc::new(config)));
    let project = admin::create_project(&store, "bench").unwrap();
    let account = admin::create_service_account(&store, "bench").unwrap();
    admin::grant(&store, "bench", project.id, Role::Owner).unwrap();
    let auth = format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(format!("{}:{}", account.username, account.secret)));
    let agent: ureq::Agent = ureq::Agent::config_builder().http_status_as_error(false).build().into();

    // Warehouse sync.
    let t0 = Instant::now();
    let db = dir.path().join("warehouse.db");
    make_table(&db, rows);
    let table_s = t0.elapsed().as_secs_f64();
    let imports = format!("{base}/api/app/projects/{}/warehouse-sources/imports", project.id);
    let body = json!({"name": "bench", "kind": "event_sync", "source": {"type": "sqlite", "path": db.to_str().unwrap(), "table": "orders"},
        "mapping": {"event_column_name": "kind", "time_column_name": "ts", "user_column_name": "user_id", "key_column_names": ["id"]}});
    let created = call(&agent, "POST", &imports, &auth, Some(body));
    let id = created["results"]["id"].as_i64().expect("created");
    let t0 = Instant::now();
    let r = call(&agent, "PUT", &format!("{imports}/{id}/manual-sync"), &auth, Some(json!({})));
    let run_id = r["results"]["run_id"].as_str().unwrap().to_owned();
    let run = poll(|| call(&agent, "GET", &format!("{imports}/{id}/runs/{run_id}"), &auth, None)["results"].clone(), |r| r["status"] == "succeeded" || r["status"] == "failed");
    let wall = t0.elapsed().as_secs_f64();
    let loaded = run["events_loaded"].as_u64().unwrap();
    println!(
        "{}",
        json!({"case": "warehouse sync (SQLite, event_sync)", "rows": rows, "status": run["status"], "events_loaded": loaded,
               "rows_rejected": run["rows_rejected"], "seconds": round(wall), "rows_per_s": (rows as f64 / wall).round(),
               "table_generation_s": round(table_s)})
    );
    assert_eq!(loaded as usize, rows, "every row loads");

    // Migration into a second project.
    let target = admin::create_project(&store, "migrated").unwrap();
    let body = json!({"SOURCE_API_KEY": "k", "SOURCE_API_SECRET": "s", "TARGET_TOKEN": target.token,
        "START_DATE": today.add_days(-(days as i64)).to_string(), "END_DATE": today.add_days(-1).to_string()});
    for dry in [true, false] {
        let mut body = body.clone();
        body["DRY_RUN"] = json!(dry);
        let t0 = Instant::now();
        let r = call(&agent, "POST", &format!("{base}/migrate/amplitude"), "", Some(body));
        let url = format!("{base}{}", r["results"]["status_url"].as_str().expect("accepted"));
        let job = poll(|| call(&agent, "GET", &url, "", None)["results"].clone(), |j| j["phase"] == "succeeded" || j["phase"] == "failed");
        let wall = t0.elapsed().as_secs_f64();
        println!(
            "{}",
            json!({"case": if dry { "migration dry run" } else { "migration" }, "events": events, "phase": job["phase"],
                   "counted": job["events"]["counted"], "loaded": job["events"]["loaded"], "profiles_loaded": job["profiles"]["loaded"],
                   "archive_bytes": archive.len(), "seconds": round(wall), "events_per_s": (events as f64 / wall).round(),
                   "archive_generation_s": round(archive_s)})
        );
    }
    println!("{}", json!({"peak_rss_mib": peak_rss_mib()}));
}

fn round(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64
}

fn peak_rss_mib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status.lines().find_map(|l| l.strip_prefix("VmHWM:")).and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok()).unwrap_or(0) / 1024
}

fn call(agent: &ureq::Agent, method: &str, url: &str, auth: &str, body: Option<Value>) -> Value {
    let mut b = ureq::http::Request::builder().method(method).uri(url).header("Content-Type", "application/json");
    if !auth.is_empty() {
        b = b.header("Authorization", auth);
    }
    let bytes = body.map(|v| v.to_string().into_bytes()).unwrap_or_default();
    let mut r = agent.run(b.body(bytes).unwrap()).unwrap();
    let text = r.body_mut().read_to_string().unwrap();
    serde_json::from_str(&text).unwrap_or_else(|_| panic!("{method} {url}: {text}"))
}

fn poll(mut get: impl FnMut() -> Value, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(3600);
    loop {
        let v = get();
        if done(&v) {
            return v;
        }
        assert!(Instant::now() < deadline, "did not end: {v}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

fn serve(state: AppState) -> String {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        runtime().block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(listener.local_addr().unwrap()).unwrap();
            axum::serve(listener, app(state)).await.unwrap();
        })
    });
    format!("http://{}", rx.recv().unwrap())
}

fn serve_archive(archive: Arc<Vec<u8>>) -> String {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        runtime().block_on(async move {
            let route = axum::routing::get(move || {
                let a = archive.clone();
                async move { (*a).clone() }
            });
            let router = axum::Router::new().route("/api/2/export", route);
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(listener.local_addr().unwrap()).unwrap();
            axum::serve(listener, router).await.unwrap();
        })
    });
    format!("http://{}", rx.recv().unwrap())
}

fn make_table(path: &std::path::Path, rows: usize) {
    let mut conn = rusqlite::Connection::open(path).unwrap();
    conn.execute_batch("CREATE TABLE orders (id INTEGER PRIMARY KEY, kind TEXT, ts INTEGER, user_id TEXT, amount REAL, sku TEXT, country TEXT)").unwrap();
    let tx = conn.transaction().unwrap();
    {
        let now_s = now_ms() / 1000;
        let mut stmt = tx.prepare("INSERT INTO orders VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)").unwrap();
        for i in 0..rows as i64 {
            let kind = ["Purchase", "Refund", "Checkout Started"][(i % 3) as usize];
            stmt.execute(rusqlite::params![i, kind, now_s - 86_400 * 20 + i % (86_400 * 19), format!("user-{}", i % 50_000), (i % 1000) as f64 / 10.0, format!("sku-{}", i % 977), "FR"]).unwrap();
        }
    }
    tx.commit().unwrap();
}

/// `events` source events over `days` days before today, ~500 bytes each, one member per hour.
fn build_archive(today: datadict_core::Date, days: usize, events: usize) -> Vec<u8> {
    let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    let per_day = events.div_ceil(days);
    let mut left = events;
    for d in 0..days {
        let day = today.add_days(-(days as i64) + d as i64);
        let n = per_day.min(left);
        left -= n;
        let mut hours: Vec<String> = vec![String::new(); 24];
        for i in 0..n {
            let ms = (i as u64) * 86_400_000 / n.max(1) as u64;
            let (h, m, s, f) = (ms / 3_600_000, ms / 60_000 % 60, ms / 1000 % 60, ms % 1000);
            let line = json!({
                "event_type": (["Page Viewed", "Purchase", "Signed Up", "Search"][i % 4]),
                "event_time": format!("{day} {h:02}:{m:02}:{s:02}.{f:03}000"),
                "user_id": format!("user-{}", i % 20_000), "device_id": format!("dev-{}", i % 30_000),
                "$insert_id": format!("{day}:{i}"),
                "event_properties": {"path": format!("/products/{}", i % 500), "price": (i % 100) as f64 + 0.99, "query": "red shoes", "n": i},
                "user_properties": {"plan": (["free", "pro", "team"][i % 3]), "signup_day": day.to_string()},
                "os_name": "iOS", "os_version": "17.2", "device_model": "iPhone15,2", "device_brand": "Apple",
                "city": "Paris", "region": "Île-de-France", "country": "FR", "ip_address": "10.1.2.3", "library": "amplitude-ios/8.0", "session_id": i / 20,
            });
            hours[h as usize].push_str(&line.to_string());
            hours[h as usize].push('\n');
        }
        for (h, ndjson) in hours.iter().enumerate().filter(|(_, s)| !s.is_empty()) {
            zip.start_file(format!("187/187_{day}_{h}#0.json.gz"), options).unwrap();
            zip.write_all(&datadict_core::gzip(ndjson.as_bytes(), 1)).unwrap();
        }
    }
    zip.finish().unwrap().into_inner()
}
