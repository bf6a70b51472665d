//! Benchmark of the web app in headless Chromium against the real server (not a test: it prints
//! figures and asserts only that each step happened). Measures, with the app's own `performance`
//! marks so that network time is left out where it says so:
//!
//! - first render of a 5,000-entity dictionary (`dd:dictionary-loaded` → `dd:dictionary-rendered`);
//! - one filter keystroke (`dd:filter-input` → `dd:filter-rendered`), median of several;
//! - a row click to its side panel painted (the click → the frame after `dd:panel-rendered`),
//!   median of several rows;
//! - import of a generated NDJSON file (default 200 MB; `WEB_BENCH_MB` changes it): check and
//!   upload throughput to the local server, with the app's peak wasm memory and the JS heap;
//! - the size of the app's wasm, raw and gzipped (`gzip -9`).
//!
//! Run after `cargo xtask dist`: `cargo run --release -p datadict-tests --example web_bench`.

use datadict_tests::server::TestServer;
use datadict_tests::webdriver::{Browser, Session};
use datadict_tests::workspace_root;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const ENTITIES: usize = 5_000;

fn number(session: &Session, script: &str) -> f64 {
    session.script(script).unwrap().as_f64().unwrap_or(f64::NAN)
}

fn main() {
    let dist = workspace_root().join("dist");
    assert!(dist.join("index.html").is_file(), "build the app first: cargo xtask dist");
    let megabytes: usize = std::env::var("WEB_BENCH_MB").ok().and_then(|v| v.parse().ok()).unwrap_or(200);
    let server = TestServer::start(Some(dist.clone()));
    let pid = server.demo.project_id;

    // A 5,000-entity dictionary: descriptions, tags and five properties each.
    let entries: Vec<Value> = (0..ENTITIES)
        .map(|i| {
            json!({"entityType": "event", "name": format!("Event {i:05}"), "schemaJson": {
                "description": format!("benchmark event number {i} of the {} group", ["checkout", "search", "profile", "billing"][i % 4]),
                "properties": {
                    "price": {"type": "number", "description": "the amount"},
                    "sku": {"type": "string"},
                    "count": {"type": "integer"},
                    "tags": {"type": "array"},
                    "ok": {"type": "boolean", "metadata": {"com.vendor": {"hidden": i % 7 == 0}}}
                },
                "metadata": {"com.vendor": {"tags": [format!("team-{}", i % 20)], "hidden": i % 11 == 0, "dropped": i % 97 == 0,
                    "displayName": format!("Event number {i}"), "contacts": ["owner@example.com"]}}
            }})
        })
        .collect();
    let (status, body) = server.call("POST", &format!("/api/app/projects/{pid}/schemas"), Some(&server.demo_auth()), Some(&json!({"entries": entries, "truncate": true})));
    assert_eq!(status, 200, "{body}");

    let session = Session::start(Browser::Chromium).expect("chromedriver starts");
    session.goto(&server.url("/")).unwrap();
    session.type_into("#project-id", &pid.to_string()).unwrap();
    session.type_into("#username", &server.demo.username).unwrap();
    session.type_into("#secret", &server.demo.secret).unwrap();
    let clicked = Instant::now();
    session.click("#connect").unwrap();
    session.wait_for("document.querySelectorAll('#schema-list .schema-row').length > 0", "the dictionary", Duration::from_secs(60)).unwrap();
    let to_rows = clicked.elapsed();
    let render_ms = number(
        &session,
        "const l = performance.getEntriesByName('dd:dictionary-loaded').pop(); const r = performance.getEntriesByName('dd:dictionary-rendered').pop(); return r.startTime - l.startTime;",
    );
    // Where the first render's time goes: rows built from entries, filtered and sorted, drawn.
    let at = |name: &str| number(&session, &format!("return performance.getEntriesByName('{name}').pop().startTime;"));
    let (built, filtered, drawn) = (
        at("dd:rows-built") - at("dd:rows-start"),
        at("dd:rows-filtered") - at("dd:rows-built"),
        at("dd:dictionary-rendered") - at("dd:rows-filtered"),
    );
    let shown = session.script("return document.querySelector('#row-count').innerText;").unwrap();

    // Keystrokes: type "number 12" one character at a time; each waits for its own render mark.
    let query = "number 12";
    let mut keystrokes = Vec::new();
    for end in 1..=query.len() {
        let before = number(&session, "return performance.getEntriesByName('dd:filter-rendered').length;");
        let script = format!(
            "const e = document.querySelector('#search'); e.value = {}; e.dispatchEvent(new Event('input', {{bubbles: true}})); return true;",
            Value::from(&query[..end])
        );
        session.script(&script).unwrap();
        session
            .wait_for(&format!("performance.getEntriesByName('dd:filter-rendered').length > {before}"), "the filtered table", Duration::from_secs(10))
            .unwrap();
        keystrokes.push(number(
            &session,
            "const i = performance.getEntriesByName('dd:filter-input').pop(); const r = performance.getEntriesByName('dd:filter-rendered').pop(); return r.startTime - i.startTime;",
        ));
    }
    let mut sorted = keystrokes.clone();
    sorted.sort_by(f64::total_cmp);
    let median = sorted[sorted.len() / 2];
    let first_key = keystrokes[0];

    // Row click → panel painted: the time from the click to the first task after the frame that
    // follows the panel's mark (a task queued from `requestAnimationFrame` runs after that paint).
    session.script("const e = document.querySelector('#search'); e.value = ''; e.dispatchEvent(new Event('input', {bubbles: true})); return 1;").unwrap();
    session.wait_for("document.querySelectorAll('#schema-list .schema-row').length >= 10", "the unfiltered table", Duration::from_secs(10)).unwrap();
    let (mut panels, mut panel_dom) = (Vec::new(), Vec::new());
    for i in 0..9 {
        let script = format!(
            "window.__panel = null; const n0 = performance.getEntriesByName('dd:panel-rendered').length;
             const button = document.querySelectorAll('#schema-list .open-detail')[{i}];
             const t0 = performance.now(); button.click();
             const check = () => {{ const marks = performance.getEntriesByName('dd:panel-rendered');
                                    if (marks.length > n0) {{ window.__panel = performance.now() - t0; window.__panelDom = marks.pop().startTime - t0; }}
                                    else {{ requestAnimationFrame(() => setTimeout(check)); }} }};
             requestAnimationFrame(() => setTimeout(check)); return 1;"
        );
        session.script(&script).unwrap();
        session.wait_for("window.__panel !== null && document.querySelector('#detail')", "the row's panel", Duration::from_secs(10)).unwrap();
        panels.push(number(&session, "return window.__panel;"));
        panel_dom.push(number(&session, "return window.__panelDom;"));
        session.script("document.querySelector('#close-detail').click(); return 1;").unwrap();
        session.wait_for("!document.querySelector('#side-panel')", "the panel closed", Duration::from_secs(10)).unwrap();
    }
    let mut sorted_panels = panels.clone();
    sorted_panels.sort_by(f64::total_cmp);
    let panel_median = sorted_panels[sorted_panels.len() / 2];
    let panel_max = sorted_panels[sorted_panels.len() - 1];
    panel_dom.sort_by(f64::total_cmp);
    let panel_dom_median = panel_dom[panel_dom.len() / 2];

    // Import: a generated NDJSON file of about `megabytes` MB, ~500 bytes per event.
    session.script("document.querySelector('#nav-import').click(); return 1;").unwrap();
    let generate = format!(
        "const target = {megabytes} * 1024 * 1024; const parts = []; let size = 0, i = 0; const now = Date.now();
         while (size < target) {{ let s = '';
           for (let k = 0; k < 2000; k++, i++) {{
             s += JSON.stringify({{event: 'Bench ' + (i % 50), properties: {{time: now - (i % 86400000), distinct_id: 'user-' + (i % 10000),
               $insert_id: 'bench-' + i, plan: 'pro', price: (i % 1000) / 10, path: '/products/' + (i % 500),
               referrer: 'https://example.com/' + (i % 77), note: 'x'.repeat(300)}}}}) + '\\n'; }}
           parts.push(s); size += s.length; }}
         const dt = new DataTransfer(); dt.items.add(new File(parts, 'bench.ndjson'));
         const input = document.querySelector('#import-file'); input.files = dt.files;
         input.dispatchEvent(new Event('change', {{bubbles: true}})); window.__events = i; return size;"
    );
    let file_bytes = number(&session, &generate);
    let events = number(&session, "return window.__events;");
    let check_start = Instant::now();
    session.script("document.querySelector('#import-check').click(); return 1;").unwrap();
    session.wait_for("document.querySelector('#import-phase').innerText.startsWith('Checked')", "the check", Duration::from_secs(1800)).unwrap();
    let check_secs = check_start.elapsed().as_secs_f64();
    let upload_start = Instant::now();
    session.script("document.querySelector('#import-upload').click(); return 1;").unwrap();
    session.wait_for("document.querySelector('#import-phase').innerText.startsWith('Finished')", "the upload", Duration::from_secs(3600)).unwrap();
    let upload_secs = upload_start.elapsed().as_secs_f64();
    let imported = session.script("return document.querySelector('#stat-events').innerText;").unwrap();
    let wasm_memory = session.script("return document.querySelector('#stat-memory').innerText;").unwrap();
    let js_heap = number(&session, "return performance.memory ? performance.memory.usedJSHeapSize : NaN;");

    // The wasm file, raw and gzipped.
    let wasm = std::fs::read_dir(&dist).unwrap().filter_map(Result::ok).map(|e| e.path()).find(|p| p.extension().is_some_and(|e| e == "wasm")).unwrap();
    let raw = std::fs::metadata(&wasm).unwrap().len();
    let gz = std::process::Command::new("sh").arg("-c").arg(format!("gzip -9 -c '{}' | wc -c", wasm.display())).output().unwrap();
    let gz: u64 = String::from_utf8_lossy(&gz.stdout).trim().parse().unwrap_or(0);

    let mb = file_bytes / 1024.0 / 1024.0;
    println!("| measure | value |");
    println!("|---|---|");
    println!("| first render of {ENTITIES} entities (data in → rows in the DOM) | {render_ms:.1} ms |");
    println!("| … of which: build rows / filter+sort / draw | {built:.1} / {filtered:.1} / {drawn:.1} ms |");
    println!("| connect click → rows visible (incl. 2 requests) | {} ms |", to_rows.as_millis());
    println!("| rows drawn at first | {} |", shown.as_str().unwrap_or_default());
    println!("| filter keystroke, median of {} (first: {first_key:.1} ms) | {median:.1} ms |", keystrokes.len());
    println!("| row click → side panel painted, median of {} (slowest: {panel_max:.1} ms) | {panel_median:.1} ms |", panels.len());
    println!("| … of which the app's work (click → panel in the DOM, focused) | {panel_dom_median:.1} ms |");
    println!("| import file | {mb:.0} MB, {events} events |");
    println!("| step 1 check | {check_secs:.1} s, {:.1} MB/s |", mb / check_secs);
    println!("| step 2 upload (4 at once, gzip 6) | {upload_secs:.1} s, {:.1} MB/s, {:.0} events/s |", mb / upload_secs, events / upload_secs);
    println!("| events imported / batched | {} |", imported.as_str().unwrap_or_default());
    println!("| app wasm memory after import (peak) | {} |", wasm_memory.as_str().unwrap_or_default());
    println!("| JS heap after import | {:.1} MB |", js_heap / 1024.0 / 1024.0);
    println!("| wasm size | {:.0} KB raw, {:.0} KB gzipped |", raw as f64 / 1024.0, gz as f64 / 1024.0);
}
