// importEvents / importProfiles from the installed tarball against the real server binary.
const test = require("node:test");
const assert = require("node:assert/strict");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const { Readable } = require("node:stream");
const datadict = require("datadict");
const { startServer, api, allEvents, event, ndjson } = require(path.resolve(__dirname, "../../tests/npm/support/server.cjs"));

let server;
let tmp;
test.before(async () => {
  server = await startServer();
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), "datadict-importer-"));
});
test.after(async () => {
  await server?.stop();
});

const conn = () => ({ baseUrl: server.url, projectId: server.projectId, username: server.username, secret: server.secret });
/** Events of one test, told apart by their event name. */
const named = (name, n, extra) => {
  const e = event(n, extra);
  e.event = name;
  e.properties.$insert_id = `${name.replace(/_/g, "-")}-${n}`;
  return e;
};

test("a valid NDJSON file is imported whole, in several batches", async () => {
  const file = path.join(tmp, "valid.ndjson");
  fs.writeFileSync(file, ndjson(Array.from({ length: 4500 }, (_, i) => named("valid_file", i))));
  const progress = [];
  const r = await datadict.importEvents(file, { ...conn(), onProgress: (p) => progress.push(p) });
  assert.deepEqual(
    [r.counts.read, r.counts.valid, r.counts.sent, r.counts.imported, r.counts.failed, r.counts.retried, r.counts.batches],
    [4500, 4500, 4500, 4500, 0, 0, 3],
  );
  assert.deepEqual(r.failures, []);
  assert.ok(r.timings.totalMs >= 0 && r.timings.firstResponseMs !== null);
  assert.equal(progress.at(-1).imported, 4500);
  assert.equal(progress.at(-1).totalBytes, fs.statSync(file).size);
  assert.equal((await allEvents(server, "event=valid_file")).length, 4500);
});

test("invalid records are reported by input line, the valid ones are imported", async () => {
  const events = Array.from({ length: 30 }, (_, i) => named("partly_invalid", i));
  events[4].properties.time = 5; // before 1971
  delete events[9].properties.distinct_id;
  events[20].properties.$insert_id = "has:colon"; // forbidden character
  // A JSON array spread over lines: each element starts on its own line.
  const text = "[\n" + events.map((e) => JSON.stringify(e)).join(",\n") + "\n]\n";
  const file = path.join(tmp, "partly.json");
  fs.writeFileSync(file, text);
  const r = await datadict.importEvents(file, conn());
  assert.deepEqual([r.counts.read, r.counts.valid, r.counts.imported, r.counts.failed], [30, 27, 27, 3]);
  assert.deepEqual(r.failures.map((f) => [f.line, f.field]), [[6, "properties.time"], [11, "properties.distinct_id"], [22, "properties.$insert_id"]]);
  for (const f of r.failures) assert.ok(f.message.length > 10, f.message);
  assert.equal((await allEvents(server, "event=partly_invalid")).length, 27);
});

test("records the server refuses (a partial 400) are mapped to their lines and not resent", async () => {
  // The client is told insert ids may be 100 bytes long; the server keeps the documented 36, so
  // the server is the one that refuses them and answers a partial 400 with failed_records.
  const events = Array.from({ length: 12 }, (_, i) => named("server_refused", i));
  events[3].properties.$insert_id = "x".repeat(50);
  events[8].properties.$insert_id = "y".repeat(60);
  const file = path.join(tmp, "server-refused.ndjson");
  fs.writeFileSync(file, "\n" + ndjson(events)); // a leading blank line shifts every line by one
  const r = await datadict.importEvents(file, { ...conn(), limits: { maxInsertIdBytes: 100 }, maxEventsPerRequest: 5 });
  assert.deepEqual([r.counts.valid, r.counts.sent, r.counts.imported, r.counts.failed, r.counts.retried], [12, 12, 10, 2, 0]);
  assert.deepEqual(r.failures.map((f) => [f.line, f.source, f.insertId]), [[5, "server", "x".repeat(50)], [10, "server", "y".repeat(60)]]);
  assert.equal(r.counts.requests, 3, "a 400 is never resent");
  assert.equal((await allEvents(server, "event=server_refused")).length, 10);
});

test("a dry run validates and batches but sends nothing", async () => {
  const events = Array.from({ length: 2500 }, (_, i) => named("dry_run", i));
  events[7].event = "";
  const r = await datadict.importEvents(Readable.from([Buffer.from(ndjson(events))]), { ...conn(), dryRun: true });
  assert.deepEqual([r.counts.read, r.counts.valid, r.counts.sent, r.counts.imported, r.counts.failed, r.counts.requests, r.counts.batches], [2500, 2499, 0, 0, 1, 0, 2]);
  assert.equal(r.failures[0].line, 8);
  assert.equal(r.dryRun, true);
  assert.ok(Object.keys(r.summary.byCode ?? r.summary.by_code).length >= 1);
  assert.equal((await allEvents(server, "event=dry_run")).length, 0);
});

test("sources: records from an async generator, byte chunks split anywhere, a Blob, a web ReadableStream", async () => {
  async function* records() {
    for (let i = 0; i < 50; i++) yield named("src_records", i);
  }
  let r = await datadict.importEvents(records(), conn());
  assert.equal(r.counts.imported, 50);

  const bytes = Buffer.from(ndjson(Array.from({ length: 40 }, (_, i) => named("src_chunks", i))));
  const chunks = [];
  for (let i = 0; i < bytes.length; i += 7) chunks.push(bytes.subarray(i, i + 7));
  r = await datadict.importEvents(chunks, conn());
  assert.equal(r.counts.imported, 40);

  r = await datadict.importEvents(new Blob([ndjson(Array.from({ length: 30 }, (_, i) => named("src_blob", i)))]), conn());
  assert.equal(r.counts.imported, 30);

  const stream = new Blob([ndjson(Array.from({ length: 20 }, (_, i) => named("src_stream", i)))]).stream();
  r = await datadict.importEvents(stream, { ...conn(), compressionLevel: 1 });
  assert.equal(r.counts.imported, 20);

  for (const [name, n] of [["src_records", 50], ["src_chunks", 40], ["src_blob", 30], ["src_stream", 20]]) {
    assert.equal((await allEvents(server, `event=${name}`)).length, n, name);
  }
});

test("the project token works as credentials, and ES modules see the same API", async () => {
  const esm = await import("datadict");
  const r = await esm.importEvents([named("by_token", 1), named("by_token", 2)], { baseUrl: server.url, token: server.token });
  assert.equal(r.counts.imported, 2);
  const sub = await import("datadict/importer");
  assert.equal(typeof sub.importProfiles, "function");
});

test("a dictionary fetched from the schemas API is applied: dropped events are left out", async () => {
  const entry = { entityType: "event", name: "dict_dropped", schemaJson: { metadata: { "com.vendor": { dropped: true } } } };
  const auth = "Basic " + Buffer.from(`${server.username}:${server.secret}`).toString("base64");
  const res = await fetch(`${server.url}/api/app/projects/${server.projectId}/schemas`, {
    method: "POST",
    headers: { authorization: auth, "content-type": "application/json" },
    body: JSON.stringify({ entries: [entry], truncate: false }),
  });
  assert.equal(res.status, 200);
  const events = [named("dict_dropped", 1), named("dict_kept", 2), named("dict_kept", 3)];
  const r = await datadict.importEvents(events, { ...conn(), dictionary: true });
  assert.deepEqual([r.counts.read, r.counts.valid, r.counts.dropped, r.counts.imported], [3, 2, 1, 2]);
});

test("wrong credentials stop the import with a 401 that says what to check", async () => {
  await assert.rejects(
    datadict.importEvents([named("bad_auth", 1)], { ...conn(), secret: "wrong" }),
    (e) => e.status === 401 && /credentials/.test(e.message) && e.result.counts.imported === 0,
  );
});

test("an unreachable server is a network error, retried and then reported", async () => {
  const retries = [];
  await assert.rejects(
    datadict.importEvents([named("no_server", 1)], {
      ...conn(),
      baseUrl: "http://127.0.0.1:9", // the discard port: nothing listens there
      retryPolicy: { initialBackoffMs: 1, jitterMinMs: 0, jitterMaxMs: 1, maxAttempts: 3 },
      onRetry: (r) => retries.push(r),
    }),
    (e) => e.status === 0 && /cannot reach the server/.test(e.message),
  );
  assert.equal(retries.length, 2);
});

test("profiles: updates are applied, invalid ones reported by line", async () => {
  const updates = [
    { $distinct_id: "profile-1", $set: { plan: "pro", seats: 3 } },
    { $distinct_id: "profile-2", $set: { plan: "free" } },
    { $distinct_id: "profile-3", $frobnicate: { x: 1 } },
    { $distinct_id: "profile-1", $set: { seats: 5 } },
  ];
  const file = path.join(tmp, "profiles.ndjson");
  fs.writeFileSync(file, ndjson(updates));
  const r = await datadict.importProfiles(file, conn());
  assert.deepEqual([r.counts.read, r.counts.valid, r.counts.imported, r.counts.failed], [4, 3, 3, 1]);
  assert.equal(r.failures[0].line, 3);
  // The core's batcher tallies profile updates too: the summary counts every update.
  assert.deepEqual([r.summary.records, r.summary.recordsWithIssues], [4, 1]);
  const tallies = Object.values(r.summary.byCode);
  assert.ok(tallies.length >= 1);
  for (const t of tallies) assert.deepEqual(t.examples.map((p) => p.line), [3]);
  const profile = await api(server, "/profiles/profile-1");
  const props = profile.results?.properties ?? profile.results ?? profile.properties ?? profile;
  assert.equal(JSON.stringify(props).includes('"seats":5'), true, JSON.stringify(profile));
  assert.equal(JSON.stringify(props).includes('"plan":"pro"'), true, JSON.stringify(profile));
});

test("a checkpoint is refused for another or a changed input file", async () => {
  const file = path.join(tmp, "checkpointed.ndjson");
  const checkpoint = path.join(tmp, "checkpointed.checkpoint");
  fs.writeFileSync(file, ndjson(Array.from({ length: 10 }, (_, i) => named("checkpointed", i))));
  let r = await datadict.importEvents(file, { ...conn(), checkpoint });
  assert.deepEqual([r.counts.sent, r.counts.skipped], [10, 0]);
  r = await datadict.importEvents(file, { ...conn(), checkpoint });
  assert.deepEqual([r.counts.sent, r.counts.skipped], [0, 10]);
  fs.appendFileSync(file, ndjson([named("checkpointed", 10)]));
  await assert.rejects(datadict.importEvents(file, { ...conn(), checkpoint }), /belongs to another import/);
  assert.equal((await allEvents(server, "event=checkpointed")).length, 10);
});

test("profiles: a checkpoint resumes; one of the JavaScript batcher of earlier versions is refused", async () => {
  const file = path.join(tmp, "profiles-checkpointed.ndjson");
  const checkpoint = path.join(tmp, "profiles.checkpoint");
  fs.writeFileSync(file, ndjson([{ $distinct_id: "cp-1", $set: { a: 1 } }, { $distinct_id: "cp-2", $set: { a: 2 } }]));
  let r = await datadict.importProfiles(file, { ...conn(), checkpoint });
  assert.deepEqual([r.counts.sent, r.counts.skipped], [2, 0]);
  r = await datadict.importProfiles(file, { ...conn(), checkpoint });
  assert.deepEqual([r.counts.sent, r.counts.skipped], [0, 2]);
  const [header, ...rest] = fs.readFileSync(checkpoint, "utf8").split("\n");
  const earlier = JSON.parse(header);
  assert.equal(earlier.batcher, "core");
  delete earlier.batcher;
  fs.writeFileSync(checkpoint, [JSON.stringify(earlier), ...rest].join("\n"));
  await assert.rejects(datadict.importProfiles(file, { ...conn(), checkpoint }), /belongs to another import/);
});

test("a server with a lower request limit answers 413: the import stops with a message that names the batch limits", async () => {
  const small = await startServer(["--max-request-bytes", "4000"]);
  try {
    const events = Array.from({ length: 60 }, (_, i) => named("too_large", i));
    const options = { baseUrl: small.url, projectId: small.projectId, username: small.username, secret: small.secret };
    await assert.rejects(datadict.importEvents(events, options), (e) => {
      assert.equal(e.status, 413);
      assert.match(e.message, /too large for the server \(413\)/);
      assert.match(e.message, /maxRequestBytes/);
      assert.equal(e.result.counts.imported, 0);
      return true;
    });
    // Told the server's limit, the same records go through in smaller requests.
    const r = await datadict.importEvents(events, { ...options, maxRequestBytes: 4000 });
    assert.equal(r.counts.imported, 60);
    assert.ok(r.counts.batches >= 2, `${r.counts.batches} batches`);
  } finally {
    await small.stop();
  }
});
