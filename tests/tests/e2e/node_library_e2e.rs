//! The service's own Node library (npm `mixpanel`, pinned in `tests/clients/package.json`,
//! installed by `cargo xtask setup`), run by Node against a datadict server that speaks HTTPS, as
//! a server-side application under test would run it. The library sends `/import` only over HTTPS
//! (it refuses to send credentials over plain HTTP), so this is what `--tls-cert` is for. Node
//! trusts the test's self-signed certificate through `NODE_EXTRA_CA_CERTS`, as a user's would.

use crate::tracking_page_e2e::{events_named, read_when};
use datadict_tests::server::TestServer;
use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;

/// What the application does with the library; it prints each call's callback error (or `null`).
const SCRIPT: &str = r#"
const Mixpanel = require('mixpanel');
const env = process.env;
const credentials = new Mixpanel.ServiceAccountCredentials(env.DD_USER, env.DD_SECRET, env.DD_PROJECT);
const mixpanel = Mixpanel.init(env.DD_TOKEN, {host: env.DD_HOST, protocol: 'https', credentials, verbose: true});
const call = (send) => new Promise((resolve) => send((e) => resolve(e ? String(e) : null)));
(async () => {
  const results = {};
  const now = Date.now();
  results.import = await call((cb) => mixpanel.import('Node Import', now, {distinct_id: 'node-user', $insert_id: 'node-1', plan: 'team'}, cb));
  results.again = await call((cb) => mixpanel.import('Node Import', now, {distinct_id: 'node-user', $insert_id: 'node-1', plan: 'team'}, cb));
  const batch = [1, 2, 3].map((n) => ({event: 'Node Batch', properties: {time: now - n, distinct_id: 'node-user', $insert_id: 'batch-' + n, n}}));
  results.batch = await call((cb) => mixpanel.import_batch(batch, (errors) => cb(errors && errors.length ? errors.join('; ') : null)));
  results.track = await call((cb) => mixpanel.track('Node Track', {distinct_id: 'node-user'}, cb));
  results.people = await call((cb) => mixpanel.people.set('node-user', {plan: 'team', seats: 3}, cb));
  console.log(JSON.stringify(results));
})();
"#;

#[test]
fn the_node_library_imports_over_https() {
    let server = TestServer::start_https();
    let clients = Path::new(env!("CARGO_MANIFEST_DIR")).join("clients");
    assert!(
        clients.join("node_modules/mixpanel/package.json").is_file(),
        "the Node library is missing from {}: run `cargo xtask setup`, which installs it with npm ci",
        clients.display()
    );
    let output = Command::new("node")
        .args(["-e", SCRIPT])
        .current_dir(&clients)
        .env("NODE_EXTRA_CA_CERTS", server.certificate.as_ref().unwrap())
        .env("DD_HOST", server.addr.to_string())
        .env("DD_USER", &server.demo.username)
        .env("DD_SECRET", &server.demo.secret)
        .env("DD_PROJECT", server.demo.project_id.to_string())
        .env("DD_TOKEN", &server.demo.project_token)
        .output()
        .expect("can run node");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "node failed: {stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    let results: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert_eq!(results, json!({"import": null, "again": null, "batch": null, "track": null, "people": null}), "each call's error as the library saw it");

    // The second import of `node-1` replaced the first: one copy.
    let imported = events_named(&server, "Node Import");
    assert_eq!(imported.len(), 1, "{imported:?}");
    let props = &imported[0]["properties"];
    assert_eq!((&props["distinct_id"], &props["plan"], &props["mp_lib"]), (&json!("node-user"), &json!("team"), &json!("node")), "{props}");
    let batch = read_when(&server, "/events?event=Node%20Batch", "the three batch events", |status, body| {
        status == 200 && body["results"].as_array().is_some_and(|events| events.len() == 3)
    });
    let mut numbers: Vec<i64> = batch["results"].as_array().unwrap().iter().map(|e| e["properties"]["n"].as_i64().unwrap()).collect();
    numbers.sort_unstable();
    assert_eq!(numbers, [1, 2, 3]);
    let tracked = events_named(&server, "Node Track");
    assert!(tracked[0]["properties"].get("token").is_none(), "the token is not stored: {tracked:?}");
    let profile = read_when(&server, "/profiles/node-user", "the profile", |status, _| status == 200);
    assert_eq!((&profile["results"]["$properties"]["plan"], &profile["results"]["$properties"]["seats"]), (&json!("team"), &json!(3)), "{profile}");
}
