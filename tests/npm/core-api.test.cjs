// The core's API in the packed npm package, loaded with CommonJS `require` as a user's project would:
// events, the streaming batcher (checked with Node's own gunzip), the dictionary, requests, migration.
const test = require("node:test");
const assert = require("node:assert/strict");
const zlib = require("node:zlib");
const datadict = require("datadict");

const nowMs = Date.UTC(2026, 0, 1);
const event = (i, extra = {}) =>
  JSON.stringify({ event: "Buy", properties: { time: nowMs / 1000, distinct_id: `u${i}`, $insert_id: `id-${i}`, ...extra } });

test("limits carry the documented defaults", () => {
  const limits = datadict.defaultLimits();
  assert.equal(limits.maxEventsPerRequest, 2000);
  assert.equal(limits.maxRequestBytes, 10 * 1024 * 1024);
  assert.equal(limits.maxInsertIdBytes, 36);
  assert.ok(limits.forbiddenIds.includes("undefined"));
});

test("checkEvent reports every issue and what it extracted", () => {
  const ok = datadict.checkEvent(event(1, { price: 9.5 }), { nowMs });
  assert.equal(ok.valid, true);
  assert.equal(ok.timeMs, nowMs);
  assert.equal(ok.insertId, "id-1");
  assert.deepEqual(ok.properties.at(-1), { name: "price", kind: "number" });
  const bad = datadict.checkEvent('{"event":"Buy","properties":{"time":0,"distinct_id":"null","$insert_id":"a:b"}}', { nowMs });
  assert.deepEqual(bad.issues.map((i) => `${i.path}:${i.code}`), [
    "properties.time:time_too_early",
    "properties.distinct_id:forbidden_id",
    "properties.$insert_id:invalid_insert_id",
  ]);
  const small = datadict.checkEvent(event(1, { a: 1 }), { nowMs, limits: { propertiesBelow: 4 } });
  assert.deepEqual(small.issues.map((i) => i.code), ["too_many_properties"]);
});

test("the Batcher streams gzipped bodies that Node's zlib reads, with input positions", () => {
  const lines = [];
  for (let i = 0; i < 7; i++) lines.push(event(i));
  lines.splice(3, 0, '{"event":"Buy","properties":{}}');
  const input = Buffer.from(lines.join("\n") + "\n");
  const batcher = new datadict.Batcher({ nowMs, gzipLevel: 1, limits: { maxEventsPerRequest: 3 } });
  const batches = [];
  for (let at = 0; at < input.length; at += 5) {
    batcher.push(input.subarray(at, at + 5));
    for (let b = batcher.nextBatch(); b; b = batcher.nextBatch()) batches.push(b);
  }
  batcher.finish();
  for (let b = batcher.nextBatch(); b; b = batcher.nextBatch()) batches.push(b);
  assert.deepEqual(batches.map((b) => b.events), [3, 3, 1]);
  const ids = batches.flatMap((b) => JSON.parse(zlib.gunzipSync(b.body)).map((e) => e.properties.$insert_id));
  assert.deepEqual(ids, ["id-0", "id-1", "id-2", "id-3", "id-4", "id-5", "id-6"]);
  assert.deepEqual(batches[1].positions.map((p) => p.line), [5, 6, 7]);
  const rejected = batcher.takeRejected();
  assert.deepEqual(rejected.map((r) => r.pos), [{ index: 3, line: 4 }]);
  assert.equal(batcher.summary().byCode.missing_field.count, 3);
  assert.equal(batcher.stats().batches, 3);
});

test("a 400's failed records map back to input lines", () => {
  const response = datadict.parseImportResponse(
    400,
    JSON.stringify({ code: 400, error: "x", failed_records: [{ index: 1, $insert_id: "b", field: "properties.time", message: "m" }], num_records_imported: 1, status: "Bad Request" }),
  );
  const mapped = datadict.mapFailedRecords([{ index: 0, line: 1 }, { index: 4, line: 9 }], response);
  assert.deepEqual(mapped[0].pos, { index: 4, line: 9 });
  assert.equal(datadict.parseImportResponse(502, "<html>").error, "<html>");
});

test("requests, headers and the retry policy", () => {
  const endpoints = datadict.singleHostEndpoints("http://127.0.0.1:8080");
  assert.equal(datadict.operationUrl({ endpoints, operation: "schema", projectId: 3, entityType: "profile", name: "$user" }), "http://127.0.0.1:8080/api/app/projects/3/schemas/profile/%24user");
  assert.equal(datadict.operationUrl({ endpoints, operation: "import", projectId: 3 }), "http://127.0.0.1:8080/import?strict=1&project_id=3");
  assert.throws(() => datadict.operationUrl({ endpoints, operation: "nope" }), /unknown operation/);
  const headers = datadict.importHeaders({ kind: "serviceAccount", username: "bot", secret: "s3cret" }, true);
  assert.deepEqual(headers, { "content-encoding": "gzip", "content-type": "application/json", accept: "application/json", authorization: "Basic Ym90OnMzY3JldA==" });
  assert.deepEqual(datadict.retryDecision(1, 503, null, 0), { action: "retry", delayMs: 3000 });
  assert.deepEqual(datadict.retryDecision(2, null, 120000, 0), { action: "retry", delayMs: 120000 });
  assert.deepEqual(datadict.retryDecision(1, 400, null, 0), { action: "giveUp", reason: "invalid_request" });
  assert.equal(datadict.parseRetryAfter("7", 0), 7000);
});

test("the upload machine: packed batches in, sends, retries and lines out; a status in the core's words", () => {
  const batcher = new datadict.Batcher({ nowMs, gzipLevel: null, limits: { maxEventsPerRequest: 2 } });
  batcher.push(new TextEncoder().encode([0, 1, 2].map((i) => event(i)).join("\n")));
  batcher.finish();
  const upload = new datadict.Upload({ concurrency: 1, projectId: "3", acknowledged: [] });
  const first = batcher.nextBatchPacked();
  const second = batcher.nextBatchPacked();
  assert.equal(upload.register(first.sequence, first.uncompressedBytes, first.positions), "queued");
  assert.equal(upload.register(second.sequence, second.uncompressedBytes, second.positions), "queued");
  assert.equal(upload.nextSend(0), first.sequence);
  assert.equal(upload.nextSend(0), undefined, "one request at a time");
  const retry = upload.answer(first.sequence, 503, "", "2", 0, 0);
  assert.deepEqual([retry.kind, retry.delayMs, retry.dueMs], ["retry", 3000, 3000]);
  assert.equal(upload.nextWakeMs(), 3000);
  assert.equal(upload.nextSend(2999), undefined);
  assert.equal(upload.nextSend(3000), first.sequence);
  const partial = { code: 400, error: "x", failed_records: [{ index: 1, $insert_id: "id-1", field: "event", message: "m" }], num_records_imported: 1, status: "Bad Request" };
  const ack = upload.answer(first.sequence, 400, JSON.stringify(partial), null, 3001, 0);
  assert.deepEqual([ack.kind, ack.imported, ack.failed[0].pos.line], ["acknowledged", 1, 2]);
  assert.equal(upload.nextSend(3001), second.sequence);
  const failed = upload.answer(second.sequence, 403, JSON.stringify({ error: "no", status: "error" }), null, 3002, 0);
  assert.deepEqual([failed.kind, failed.reason, failed.status], ["failed", "unauthorized", 403]);
  assert.match(failed.message, /lack permission on project 3 \(403\): no/);
  assert.deepEqual([...upload.acknowledged()], [first.sequence]);
  assert.equal(upload.isIdle(), true);
  assert.match(datadict.explainStatus(0, "ECONNREFUSED", { url: "http://127.0.0.1:9" }), /^cannot reach the server at http:\/\/127\.0\.0\.1:9: ECONNREFUSED;/);
  assert.match(datadict.explainAnswer(413, "", {}), /^a request was too large for the server \(413\); lower the batch limits/);
});

test("whole import bodies are judged as the import would", () => {
  const body = Buffer.from(`[${event(1)},${event(2, { time: 0 })}]`);
  const checked = datadict.checkImportBody(body, { nowMs });
  assert.equal(checked.status, 400);
  assert.equal(checked.response.num_records_imported, 1);
  assert.equal(checked.response.failed_records[0].index, 1);
  assert.equal(datadict.checkImportBody(body, { nowMs, limits: { maxEventsPerRequest: 1 } }).status, 413);
  assert.deepEqual([...datadict.gunzip(datadict.gzip(body, 9))], [...body]);
});

test("dictionary checks, CSV round trip, JSON Schema and diff", () => {
  const entries = [{ entityType: "event", name: "Buy", schemaJson: { properties: { price: { type: "number" }, card: { type: "string", metadata: { "com.vendor": { dropped: true } } } } } }];
  const findings = datadict.checkAgainstDictionary(event(1, { price: "9", card: "4111", color: "red" }), entries);
  assert.deepEqual(findings.issues.map((i) => `${i.path}:${i.code}`), ["properties.price:type_mismatch", "properties.card:dropped_property", "properties.color:unknown_property"]);
  assert.deepEqual(findings.droppedProperties, ["card"]);
  const csv = datadict.dictionaryToCsv(entries);
  assert.deepEqual(datadict.dictionaryFromCsv(csv), { entries, issues: [] });
  assert.equal(datadict.entityJsonSchema(entries[0]).properties.properties.properties.price.type, "number");
  assert.deepEqual(datadict.diffDictionaries(entries, []).removed, [{ entityType: "event", name: "Buy" }]);
});

test("migration requests and source events", () => {
  const check = datadict.validateMigrationRequest({ SOURCE_API_KEY: "k", SOURCE_API_SECRET: "s", TARGET_TOKEN: "t", START_DATE: "2026-02-30" }, "2026-03-15");
  assert.deepEqual(check.issues.map((i) => i.code), ["invalid_date"]);
  assert.equal(check.range, null);
  const t = new datadict.MigrationTransformer();
  const out = t.transformMember(Buffer.from('{"event_type":"Buy","event_time":"2026-01-02 03:04:05.678000","device_id":"d1"}\nnot json\n'));
  assert.equal(out.events, 1);
  assert.deepEqual(out.errors.map((e) => e.line), [2]);
  const converted = JSON.parse(Buffer.from(t.takeNdjson()).toString().trim());
  assert.equal(converted.properties.time, Date.UTC(2026, 0, 2, 3, 4, 5, 678));
  assert.equal(converted.properties.distinct_id, "d1");
  assert.match(converted.properties.$insert_id, /^[0-9a-f]{32}$/);
});

test("a packed batch's positions map a partial 400 back to lines like the object form", async () => {
  const body = Buffer.from([event(1), event(2), event(3)].join("\n") + "\n");
  const batcher = new datadict.Batcher({ gzipLevel: null, nowMs });
  batcher.push(body);
  batcher.finish();
  const packed = batcher.nextBatchPacked();
  assert.ok(packed.positions instanceof Float64Array);
  assert.deepEqual(Array.from(packed.positions), [0, 1, 1, 2, 2, 3]);
  assert.equal(packed.events, 3);
  const response = { code: 400, status: "Bad Request", num_records_imported: 2, failed_records: [{ index: 2, $insert_id: "x", field: "properties.time", message: "m" }] };
  const objects = Array.from({ length: 3 }, (_, i) => ({ index: packed.positions[2 * i], line: packed.positions[2 * i + 1] }));
  assert.deepEqual(datadict.mapFailedRecords(packed.positions, response), datadict.mapFailedRecords(objects, response));
  assert.deepEqual(datadict.mapFailedRecords(packed.positions, response)[0].pos, { index: 2, line: 3 });
  // A recycled buffer that is large enough receives the next body; the bytes are the same.
  const again = new datadict.Batcher({ gzipLevel: null, nowMs });
  again.push(body);
  again.finish();
  const into = new Uint8Array(packed.body.length + 10);
  const reused = again.nextBatchPacked(into);
  assert.equal(reused.body.buffer, into.buffer);
  assert.deepEqual(Buffer.from(reused.body), Buffer.from(packed.body));
  batcher.free();
  again.free();
});
