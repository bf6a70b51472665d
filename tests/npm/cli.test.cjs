// The `datadict` command of the installed tarball (node_modules/.bin/datadict in the scratch
// project), run as a user would, against the real server binary.
const test = require("node:test");
const assert = require("node:assert/strict");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const { spawn, spawnSync } = require("node:child_process");
const { startServer, allEvents, event, ndjson, ROOT } = require(path.resolve(__dirname, "../../tests/npm/support/server.cjs"));

const BIN = path.join(__dirname, "node_modules/.bin/datadict");
const DEADLINE_MS = 60_000;

let server;
let tmp;
test.before(async () => {
  server = await startServer();
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), "datadict-cli-"));
});
test.after(async () => {
  await server?.stop();
});

function env(s = server, extra = {}) {
  return { ...process.env, DATADICT_BASE_URL: s.url, DATADICT_PROJECT_ID: String(s.projectId), DATADICT_USERNAME: s.username, DATADICT_SECRET: s.secret, ...extra };
}

/** Runs the command to its end; resolves to `{code, stdout, stderr}`. */
function run(args, { envVars = env() } = {}) {
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

const named = (name, n, extra) => {
  const e = event(n, extra);
  e.event = name;
  e.properties.$insert_id = `${name.replace(/_/g, "-")}-${n}`;
  return e;
};

function write(name, text) {
  const file = path.join(tmp, name);
  fs.writeFileSync(file, text);
  return file;
}

async function until(what, check) {
  const deadline = Date.now() + DEADLINE_MS;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setImmediate(r));
  }
}

test("validate: a clean file exits 0 with a summary table", async () => {
  const file = write("clean.ndjson", ndjson(Array.from({ length: 10 }, (_, i) => named("cli_clean", i))));
  const r = await run(["validate", file], { envVars: { ...process.env } });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /read\s+10\n/);
  assert.match(r.stdout, /valid\s+10\n/);
  assert.match(r.stdout, /failed\s+0\n/);
});

test("validate: problems give exit 1, issues by code and the input lines", async () => {
  const events = Array.from({ length: 6 }, (_, i) => named("cli_invalid", i));
  events[1].properties.time = 5;
  events[4].properties.$insert_id = "null";
  const file = write("invalid.ndjson", ndjson(events));
  const r = await run(["validate", file], { envVars: { ...process.env } });
  assert.equal(r.code, 1, r.stderr);
  assert.match(r.stdout, /failed\s+2\n/);
  assert.match(r.stdout, /issues by code:/);
  assert.match(r.stdout, /line 2: properties\.time: /);
  assert.match(r.stdout, /line 5: properties\.\$insert_id: /);
});

test("import: events are imported and the summary printed; profiles too", async () => {
  const file = write("import.ndjson", ndjson(Array.from({ length: 2100 }, (_, i) => named("cli_import", i))));
  const r = await run(["import", file, "--gzip-level", "1", "--concurrency", "2"]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /imported\s+2,100\n/);
  assert.equal((await allEvents(server, "event=cli_import")).length, 2100);

  const profiles = write("profiles.ndjson", ndjson([{ $distinct_id: "cli-p1", $set: { a: 1 } }, { $distinct_id: "cli-p2", $set_once: { b: 2 } }]));
  const p = await run(["import", profiles, "--profiles", "--json"]);
  assert.equal(p.code, 0, p.stderr);
  assert.equal(JSON.parse(p.stdout).counts.imported, 2);
});

test("import: a rerun after the importing process is killed sends only what is left; nothing lost, nothing doubled", async () => {
  const total = 40_000;
  const file = write("resume.ndjson", ndjson(Array.from({ length: total }, (_, i) => named("cli_resume", i))));
  const checkpoint = path.join(tmp, "resume.checkpoint");
  const args = ["import", file, "--checkpoint", checkpoint, "--batch-size", "200", "--concurrency", "2", "--json"];
  const child = spawn(BIN, args, { env: env(), cwd: tmp, stdio: "ignore" });
  const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
  const acked = () => (fs.existsSync(checkpoint) ? fs.readFileSync(checkpoint, "utf8").split("\n").filter((l) => l.startsWith('{"seq"')).length : 0);
  await until("5 acknowledged batches in the checkpoint", () => acked() >= 5);
  child.kill("SIGKILL");
  const end = await exited;
  assert.equal(end.signal, "SIGKILL", "the import ended before it could be killed; make the input larger");
  const before = acked();
  assert.ok(!fs.readFileSync(checkpoint, "utf8").includes('"complete"'));

  const r = await run(args);
  assert.equal(r.code, 0, r.stderr);
  const { counts } = JSON.parse(r.stdout);
  assert.equal(counts.read, total);
  assert.equal(counts.skipped, before * 200, "every acknowledged batch is skipped");
  assert.equal(counts.sent + counts.skipped, total);
  assert.ok(counts.sent < total);
  const stored = await allEvents(server, "event=cli_resume");
  const ids = new Set(stored.map((e) => e.properties.$insert_id));
  assert.equal(stored.length, total, "no event doubled");
  assert.equal(ids.size, total, "no event lost");

  // A third run finds the checkpoint complete and sends nothing.
  const again = await run(args);
  assert.equal(again.code, 0, again.stderr);
  assert.deepEqual([JSON.parse(again.stdout).counts.sent, JSON.parse(again.stdout).counts.skipped], [0, total]);
});

test("import: 429 answers are retried after Retry-After until everything is in", async () => {
  // 1.2 MB per minute: the bucket holds 1.2 MB, the file is about 1.35 MB.
  const limited = await startServer(["--ingest-rate-limit", "1200000"]);
  try {
    const file = write("limited.ndjson", ndjson(Array.from({ length: 1300 }, (_, i) => named("cli_limited", i, { pad: "p".repeat(900) }))));
    // The policy's own backoff is at most a few ms here, so a wait of a second or more can only
    // come from the server's Retry-After.
    const datadict = require("datadict");
    const retries = [];
    const r = await datadict.importEvents(file, {
      baseUrl: limited.url, projectId: limited.projectId, username: limited.username, secret: limited.secret,
      maxEventsPerRequest: 100, concurrency: 2,
      retryPolicy: { initialBackoffMs: 1, maxBackoffMs: 4, jitterMinMs: 0, jitterMaxMs: 1, maxAttempts: 50 },
      onRetry: (x) => retries.push(x),
    });
    assert.equal(r.counts.imported, 1300);
    assert.ok(retries.length >= 1, "the limit was never reached");
    assert.equal(r.counts.retried, retries.length);
    for (const x of retries) {
      assert.equal(x.status, 429);
      assert.ok(x.delayMs >= 1000, `waited ${x.delayMs} ms, less than the server's Retry-After`);
    }
    assert.equal((await allEvents(limited, "event=cli_limited")).length, 1300);

    // Once the attempts are used up, the CLI says so in words and exits 3.
    const big = write("limited-big.ndjson", ndjson(Array.from({ length: 1300 }, (_, i) => named("cli_limited2", i, { pad: "p".repeat(900) }))));
    const cli = await run(["import", big, "--batch-size", "100", "--max-attempts", "1"], { envVars: env(limited) });
    assert.equal(cli.code, 3, cli.stdout + cli.stderr);
    assert.match(cli.stderr, /429 \(rate limited\)/);
  } finally {
    await limited.stop();
  }
});

test("clear messages: 401, 403, network failure, usage", async () => {
  const file = write("one.ndjson", ndjson([named("cli_errors", 1)]));
  const bad = await run(["import", file], { envVars: env(server, { DATADICT_SECRET: "wrong" }) });
  assert.equal(bad.code, 3);
  assert.match(bad.stderr, /rejected the credentials \(401\)/);

  const made = spawnSync(path.join(ROOT, "target/debug/datadict-server"), ["--data-dir", server.dataDir, "admin", "create-account", "--username", "cli-reader"], { encoding: "utf8" });
  assert.equal(made.status, 0, made.stderr);
  const secret = /secret:\s+(\S+)/.exec(made.stdout)[1];
  const grant = spawnSync(path.join(ROOT, "target/debug/datadict-server"), ["--data-dir", server.dataDir, "admin", "grant", "--username", "cli-reader", "--project", String(server.projectId), "--role", "consumer"], { encoding: "utf8" });
  assert.equal(grant.status, 0, grant.stderr);
  const dict = write("push-403.json", "[]");
  const forbidden = await run(["schemas", "push", dict, "--truncate"], { envVars: env(server, { DATADICT_USERNAME: "cli-reader", DATADICT_SECRET: secret }) });
  assert.equal(forbidden.code, 3, forbidden.stdout + forbidden.stderr);
  assert.match(forbidden.stderr, /lack permission .*\(403\)/);

  const down = await run(["import", file, "--max-attempts", "1"], { envVars: env(server, { DATADICT_BASE_URL: "http://127.0.0.1:9" }) });
  assert.equal(down.code, 3);
  assert.match(down.stderr, /cannot reach the server/);

  const usage = await run(["import"]);
  assert.equal(usage.code, 2);
  assert.match(usage.stderr, /import needs a FILE/);
});

test("schemas pull, diff and push round-trip through JSON and CSV", async () => {
  const json = path.join(tmp, "dictionary.json");
  let r = await run(["schemas", "pull", json]);
  assert.equal(r.code, 0, r.stderr);
  const pulled = JSON.parse(fs.readFileSync(json, "utf8"));
  assert.ok(pulled.length >= 1, "the demo project has a dictionary");

  r = await run(["schemas", "diff", json]);
  assert.equal(r.code, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /no differences/);

  const edited = structuredClone(pulled);
  edited[0].schemaJson.description = "changed by the CLI test";
  edited.push({ entityType: "event", name: "CLI Added", schemaJson: { description: "new", properties: { n: { type: "integer" } } } });
  fs.writeFileSync(json, JSON.stringify(edited, null, 2));
  r = await run(["schemas", "diff", json]);
  assert.equal(r.code, 1);
  assert.match(r.stdout, /\+ event CLI Added/);
  assert.match(r.stdout, new RegExp(`~ ${edited[0].entityType} ${edited[0].name.replace(/[$]/g, "\\$")}`));
  assert.match(r.stdout, /description: .* -> "changed by the CLI test"/);

  r = await run(["schemas", "push", json]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /pushed: /);
  r = await run(["schemas", "diff", json]);
  assert.equal(r.code, 0, r.stdout);

  // CSV: pull, drop one entry, push with --truncate; the server then holds exactly the file.
  const csv = path.join(tmp, "dictionary.csv");
  r = await run(["schemas", "pull", csv]);
  assert.equal(r.code, 0, r.stderr);
  const fewer = edited.filter((e) => e.name !== "CLI Added");
  fs.writeFileSync(json, JSON.stringify(fewer));
  r = await run(["schemas", "push", json]);
  assert.match(r.stdout, /only on the server are kept; pass --truncate/);
  r = await run(["schemas", "push", json, "--truncate"]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /- event CLI Added/);
  const back = path.join(tmp, "back.json");
  await run(["schemas", "pull", back]);
  assert.ok(!JSON.parse(fs.readFileSync(back, "utf8")).some((e) => e.name === "CLI Added"));
  r = await run(["schemas", "push", csv]);
  assert.equal(r.code, 0, r.stderr);
  r = await run(["schemas", "diff", csv]);
  assert.equal(r.code, 0, r.stdout);
  assert.match(r.stdout, /no differences/);
});

test("import: a 413 from a server with a lower request limit says to lower --batch-bytes", async () => {
  const small = await startServer(["--max-request-bytes", "4000"]);
  try {
    const file = write("too-large.ndjson", ndjson(Array.from({ length: 60 }, (_, i) => named("cli_too_large", i))));
    const r = await run(["import", file], { envVars: env(small) });
    assert.equal(r.code, 3, r.stderr);
    assert.match(r.stderr, /a request was too large for the server \(413\)/);
    assert.match(r.stderr, /--batch-bytes/);
    const ok = await run(["import", file, "--batch-bytes", "4000", "--json"], { envVars: env(small) });
    assert.equal(ok.code, 0, ok.stderr);
    assert.equal(JSON.parse(ok.stdout).counts.imported, 60);
  } finally {
    await small.stop();
  }
});
