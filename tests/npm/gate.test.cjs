// The `datadict violations` CI gate of the installed tarball against the real server binary: what
// the server's dictionary check recorded on arrival fails the gate by code, and a reset clears it.
// Its own server, so that the other CLI tests' undocumented events do not count here.
const test = require("node:test");
const assert = require("node:assert/strict");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const { spawn } = require("node:child_process");
const { startServer, allEvents } = require(path.resolve(__dirname, "../../tests/npm/support/server.cjs"));

const BIN = path.join(__dirname, "node_modules/.bin/datadict");

let server;
let tmp;
test.before(async () => {
  server = await startServer();
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), "datadict-gate-"));
});
test.after(async () => {
  await server?.stop();
});

function env(extra = {}) {
  return { ...process.env, DATADICT_BASE_URL: server.url, DATADICT_PROJECT_ID: String(server.projectId), DATADICT_USERNAME: server.username, DATADICT_SECRET: server.secret, ...extra };
}

/** Runs the command to its end; resolves to `{code, stdout, stderr}`. */
function run(args, envVars = env()) {
  return new Promise((resolve, reject) => {
    const child = spawn(BIN, args, { env: envVars, cwd: tmp });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

/** Sends `events` to the strict import as the app under test would; resolves to the status. */
async function send(events) {
  const auth = "Basic " + Buffer.from(`${server.username}:${server.secret}`).toString("base64");
  const res = await fetch(`${server.url}/import?strict=1&project_id=${server.projectId}`, {
    method: "POST",
    headers: { authorization: auth, "content-type": "application/json" },
    body: JSON.stringify(events),
  });
  await res.text();
  return res.status;
}

const tracked = (name, id, properties = {}) => ({ event: name, properties: { time: Date.now() - 60_000, distinct_id: "gate-user", $insert_id: id, ...properties } });

test("a project that received nothing passes the gate", async () => {
  const r = await run(["violations"]);
  assert.equal(r.code, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /0 dictionary violation\(s\), 0 rejected record\(s\)/);
  assert.match(r.stdout, /passed: nothing of --fail-on any occurred/);
});

test("an undocumented event fails the default gate with a table; --fail-on type_mismatch passes", async () => {
  assert.equal(await send([tracked("CI Undocumented", "gate-1")]), 200);
  const r = await run(["violations"]);
  assert.equal(r.code, 1, r.stdout + r.stderr);
  assert.match(r.stdout, /^code\s+violations\s+rejected$/m);
  assert.match(r.stdout, /^no_schema\s+1\s+0$/m);
  assert.match(r.stdout, /^total\s+1\s+0$/m);
  assert.match(r.stdout, /^top events\s+violations\s+rejected\n(.*\n)*CI Undocumented\s+1\s+0$/m);
  assert.match(r.stdout, /failed: no_schema 1 \(--fail-on any\)/);

  const narrow = await run(["violations", "--fail-on", "type_mismatch"]);
  assert.equal(narrow.code, 0, narrow.stdout + narrow.stderr);
  assert.match(narrow.stdout, /passed: nothing of --fail-on type_mismatch occurred/);
  const several = await run(["violations", "--fail-on", "unknown_property,type_mismatch", "--fail-on", "rejected"]);
  assert.equal(several.code, 0, several.stdout + several.stderr);
  const named = await run(["violations", "--fail-on", "type_mismatch", "--fail-on", "no_schema"]);
  assert.equal(named.code, 1, named.stdout + named.stderr);
});

test("a property of the wrong type fails --fail-on type_mismatch; --json prints the summary", async () => {
  assert.equal(await send([tracked("Purchase", "gate-2", { price: "12.50", currency: "EUR" })]), 200);
  const r = await run(["violations", "--fail-on", "type_mismatch", "--since", "10m"]);
  assert.equal(r.code, 1, r.stdout + r.stderr);
  assert.match(r.stdout, /^type_mismatch\s+1\s+0$/m);
  assert.match(r.stdout, /^top properties\s+violations\nprice\s+1$/m);
  assert.match(r.stdout, /failed: type_mismatch 1 \(--fail-on type_mismatch\)/);

  const j = await run(["violations", "--json", "--since", "10m"]);
  assert.equal(j.code, 1, j.stdout + j.stderr);
  const summary = JSON.parse(j.stdout);
  assert.equal(summary.violations.total, 2);
  assert.deepEqual(summary.violations.by_code, { no_schema: 1, type_mismatch: 1 });
  assert.deepEqual(summary.violations.by_property, { price: 1 });
  assert.equal(summary.rejected.total, 0);
});

test("a record the strict import refuses fails --fail-on rejected", async () => {
  assert.equal(await send([tracked("Sign Up", "gate-3", { time: 5 })]), 400);
  const r = await run(["violations", "--fail-on", "rejected"]);
  assert.equal(r.code, 1, r.stdout + r.stderr);
  assert.match(r.stdout, /^total\s+2\s+1$/m);
  assert.match(r.stdout, /failed: rejected 1 \(--fail-on rejected\)/);
});

test("violations reset clears the record, then the gate passes; --events deletes the stored events too", async () => {
  const r = await run(["violations", "reset"]);
  assert.equal(r.code, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /^reset project \d+: deleted [1-9]\d* violation row\(s\), 1 rejected-record row\(s\)\n$/);
  const after = await run(["violations"]);
  assert.equal(after.code, 0, after.stdout + after.stderr);
  assert.match(after.stdout, /passed: nothing of --fail-on any occurred/);

  assert.equal((await allEvents(server)).length, 2, "a reset without --events keeps the stored events");
  const all = await run(["violations", "reset", "--events"]);
  assert.equal(all.code, 0, all.stdout + all.stderr);
  assert.match(all.stdout, /deleted 0 violation row\(s\), 0 rejected-record row\(s\), 2 stored event\(s\)\n$/);
  assert.equal((await allEvents(server)).length, 0);
});

test("profile updates are counted under their profile schema, not as events", async () => {
  const update = { $token: server.token, $distinct_id: "gate-user", $set: { "gate unknown": 1 } };
  const res = await fetch(`${server.url}/engage?verbose=1`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify([update]) });
  assert.equal(res.status, 200, await res.text());
  const r = await run(["violations"]);
  assert.equal(r.code, 1, r.stdout + r.stderr);
  assert.match(r.stdout, /^top profile schemas\s+violations\n\$user\s+1$/m);
  assert.doesNotMatch(r.stdout, /^top events/m, "no event table without events");
  assert.equal((await run(["violations", "reset"])).code, 0);
});

test("usage and connection errors exit 2 and 3 in the core's words", async () => {
  const bad = await run(["violations", "--fail-on", "nope"]);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /--fail-on `nope` is not a code: use any, rejected, no_schema/);
  const soon = await run(["violations", "--since", "soon"]);
  assert.equal(soon.code, 2);
  assert.match(soon.stderr, /--since `soon` is not a time: use a YYYY-MM-DD date/);
  const stray = await run(["violations", "purge"]);
  assert.equal(stray.code, 2);
  assert.match(stray.stderr, /violations takes no argument but `reset`/);

  const down = await run(["violations"], env({ DATADICT_BASE_URL: "http://127.0.0.1:9" }));
  assert.equal(down.code, 3);
  assert.match(down.stderr, /cannot reach the server/);
  const refused = await run(["violations", "reset"], env({ DATADICT_SECRET: "wrong" }));
  assert.equal(refused.code, 3);
  assert.match(refused.stderr, /rejected the credentials \(401\)/);
});
