// Hostile and mistaken input to the packed package: arguments of the wrong type, values the wasm
// module could not survive, strings where bytes go, answers that are not the import's, stops with
// requests in flight, and sources in unexpected shapes. The importer runs against a scripted
// `fetch`, so the order of answers is chosen by the test, not by timing.
const test = require("node:test");
const assert = require("node:assert/strict");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const zlib = require("node:zlib");
const datadict = require("datadict");

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "datadict-hardening-"));
const event = (i, extra = {}) => ({ event: "Buy", properties: { time: Math.floor(Date.now() / 1000) - 60, distinct_id: `u${i}`, $insert_id: `id-${i}`, ...extra } });
const ndjson = (n) => Array.from({ length: n }, (_, i) => JSON.stringify(event(i))).join("\n") + "\n";
const conn = { baseUrl: "http://127.0.0.1:9", projectId: 1, username: "bot", secret: "s3cret" };

/** A dry-run import and a validation: both must still work after whatever a test threw. */
async function stillWorks() {
  assert.deepEqual(datadict.validateSchemaEntryJson('{"entityType":"event","name":"A","schemaJson":{}}'), []);
  const r = await datadict.importEvents(Buffer.from(ndjson(3)), { dryRun: true });
  assert.deepEqual([r.counts.read, r.counts.valid], [3, 3]);
}

test("a wrong-type argument is a TypeError naming the function and parameter", async () => {
  const cases = [
    [() => datadict.checkEvent({ event: "x" }), /^checkEvent: record .* must be a string, got an object$/],
    [() => datadict.validateSchemaEntryJson(42), /^validateSchemaEntryJson: text must be a string, got a number$/],
    [() => datadict.validateSchemaEntry({}, 42), /^validateSchemaEntry: namespace must be a string, got a number$/],
    [() => datadict.dictionaryToCsv([], 10n), /^dictionaryToCsv: namespace must be a string, got a bigint$/],
    [() => datadict.explainAnswer(400, { error: "x" }), /^explainAnswer: body must be a string, got an object$/],
    [() => datadict.checkImportBody(42), /^checkImportBody: body must be bytes .* got a number$/],
    [() => datadict.checkImportBody({}), /^checkImportBody: body must be bytes .* got an object$/],
    [() => datadict.failOnCodes(42), /^failOnCodes: values must be an array of strings .* got a number$/],
    [() => datadict.gzip(new Date()), /^gzip: data must be bytes .* got a Date$/],
    [() => new datadict.Batcher({}).nextBatchPacked(42), /^Batcher.nextBatchPacked: into must be a Uint8Array, got a number$/],
  ];
  for (const [call, message] of cases) {
    assert.throws(call, (e) => e instanceof TypeError && message.test(e.message), String(message));
  }
  await stillWorks();
});

test("circular, very deep and huge values are refused with an error, and the module keeps working", async () => {
  const circular = { entityType: "event", name: "A", schemaJson: {} };
  circular.schemaJson.self = circular;
  let deep = {};
  for (let i = 0, at = deep; i < 5000; i++) at = at.a = {};
  const huge = "a".repeat(20 * 1024 * 1024);
  const calls = [
    [() => datadict.validateSchemaEntry(circular), /validateSchemaEntry: entry cannot be read as JSON \(Converting circular structure/],
    [() => datadict.validateProfileUpdate(circular), /validateProfileUpdate: update cannot be read as JSON/],
    [() => datadict.validateBatchBody({ entries: [circular] }), /validateBatchBody: body cannot be read as JSON/],
    [() => datadict.checkAgainstDictionary("{}", [circular]), /checkAgainstDictionary: entries .* cannot be read as JSON/],
    [() => datadict.entityJsonSchema(circular), /entityJsonSchema: entry cannot be read as JSON/],
    [() => new datadict.Batcher({ dictionary: [circular] }), /new Batcher: options cannot be read as JSON/],
    [() => datadict.validateSchemaEntry({ entityType: "event", name: "A", schemaJson: deep }), /validateSchemaEntry: entry (cannot be read as JSON|is nested more than)/],
    [() => datadict.validateBatchBody(JSON.parse("[".repeat(3000) + "]".repeat(3000))), /validateBatchBody: body is nested more than 127 levels deep/],
    [() => datadict.validateSchemaEntry(10n), /validateSchemaEntry: entry holds a BigInt/],
    [() => datadict.failOnCodes(huge), /--fail-on `a+… \(\d+ characters in all\)/],
    [() => datadict.gateHits({ violations: { by_code: {} }, rejected: { total: 0 } }, [huge]), /--fail-on `a+… \(\d+ characters in all\)/],
  ];
  for (const [call, message] of calls) {
    assert.throws(call, (e) => !(e instanceof WebAssembly.RuntimeError) && message.test(e.message) && e.message.length < 1000, String(message));
    await stillWorks();
  }
});

test("strings given where bytes go are their UTF-8, never zeros", () => {
  assert.equal(Buffer.from(datadict.gunzip(datadict.gzip("hello wörld"))).toString(), "hello wörld");
  assert.equal(zlib.gunzipSync(datadict.gzip("héllo", 1)).toString(), "héllo");
  assert.throws(() => datadict.gzip("x", 12), (e) => e instanceof RangeError && /level must be a whole number from 0 to 9/.test(e.message));
  assert.throws(() => datadict.gunzip("text"), TypeError);
  const body = `[${JSON.stringify(event(1))}]`;
  assert.deepEqual([datadict.checkImportBody(body).status, datadict.checkImportBody(body).valid], [200, 1]);
  assert.equal(datadict.checkImportBody(Buffer.from(body)).valid, 1);
  const batcher = new datadict.Batcher({ gzipLevel: null });
  batcher.push(ndjson(2));
  batcher.finish();
  assert.deepEqual(batcher.takeRejected(), []);
  assert.equal(batcher.stats().batched, 2);
});

test("the gate reads one code given as a string, and refuses what it cannot read", () => {
  const summary = { violations: { by_code: { no_schema: 3 } }, rejected: { total: 0 } };
  assert.deepEqual(datadict.gateHits(summary, "no_schema"), [["no_schema", 3]]);
  assert.deepEqual(datadict.failOnCodes("no_schema,rejected"), ["no_schema", "rejected"]);
  assert.throws(() => datadict.gateHits(summary, "no_shema"), /`no_shema` is not a code/);
  assert.throws(() => datadict.gateHits({}, ["any"]), (e) => e instanceof TypeError && /violations.by_code/.test(e.message));
});

/** A scripted `fetch`: each request waits until the test answers it. */
function scriptedFetch() {
  const requests = [];
  let arrived = () => {};
  const fetch = (url, init) =>
    new Promise((resolve, reject) => {
      const body = init.headers["content-encoding"] === "gzip" ? zlib.gunzipSync(init.body) : Buffer.from(init.body);
      const records = JSON.parse(body.toString()).length;
      const answer = (status, text) => resolve({ status, text: async () => text, headers: { get: () => null } });
      requests.push({ records, answer, ok: () => answer(200, JSON.stringify({ code: 200, num_records_imported: records, status: "OK" })), signal: init.signal, reject });
      arrived();
    });
  const waitFor = async (n) => {
    while (requests.length < n) await new Promise((r) => (arrived = r));
  };
  return { fetch, requests, waitFor };
}

/** Lets every pending promise chain run (a macrotask comes after all microtasks). */
const drainMicrotasks = () => new Promise((r) => setImmediate(r));

test("a 200 that is not the import's answer, or counts short, fails the import and is never counted as imported", async () => {
  for (const [text, code, imported, unconfirmed] of [
    ["<html>proxy ok</html>", "unexpected_answer", 0, 10],
    ["", "unexpected_answer", 0, 10],
    [JSON.stringify({ code: 200, num_records_imported: 3, status: "OK" }), "short_count", 3, 7],
  ]) {
    const f = scriptedFetch();
    const run = datadict.importEvents(Buffer.from(ndjson(10)), { ...conn, fetch: f.fetch });
    await f.waitFor(1);
    f.requests[0].answer(200, text);
    const e = await run.then(() => assert.fail("the import must fail"), (e) => e);
    assert.equal(e.name, "ImportError");
    assert.equal(e.code, code, e.message);
    assert.deepEqual([e.result.counts.sent, e.result.counts.imported, e.result.counts.unconfirmed], [10, imported, unconfirmed], text);
  }
});

test("after a failing batch or an abort, answers in flight are awaited and counted", async () => {
  const f = scriptedFetch();
  const run = datadict.importEvents(Buffer.from(ndjson(6000)), { ...conn, fetch: f.fetch, compressionLevel: 0 });
  await f.waitFor(3);
  f.requests[0].ok();
  f.requests[1].answer(500, JSON.stringify({ error: "boom", status: "error" }));
  await drainMicrotasks(); // the 500 has stopped the import by now
  f.requests[2].ok();
  const e = await run.then(() => assert.fail("the import must fail"), (e) => e);
  assert.equal(e.code, "not_retryable");
  assert.deepEqual([e.result.counts.sent, e.result.counts.imported], [4000, 4000]);

  const g = scriptedFetch();
  const controller = new AbortController();
  const aborted = datadict.importEvents(Buffer.from(ndjson(6000)), { ...conn, fetch: g.fetch, compressionLevel: 0, signal: controller.signal });
  await g.waitFor(3);
  controller.abort();
  await drainMicrotasks();
  for (const r of g.requests) r.ok();
  const a = await aborted.then(() => assert.fail("the import must fail"), (e) => e);
  assert.equal(a.code, "aborted");
  assert.deepEqual([a.result.counts.sent, a.result.counts.imported, g.requests.length], [6000, 6000, 3]);
});

test("a request that never answers times out and counts as unconfirmed", async () => {
  const f = scriptedFetch();
  const hanging = (url, init) => {
    const p = f.fetch(url, init);
    return new Promise((resolve, reject) => {
      p.then(resolve);
      init.signal.addEventListener("abort", () => reject(init.signal.reason), { once: true });
    });
  };
  // Node's timeout signals do not keep the process alive; a real request's socket would.
  const alive = setInterval(() => {}, 1000);
  const e = await datadict
    .importEvents(Buffer.from(ndjson(5)), { ...conn, fetch: hanging, requestTimeoutMs: 20, retryPolicy: { maxAttempts: 1 } })
    .then(() => assert.fail("the import must fail"), (e) => e)
    .finally(() => clearInterval(alive));
  assert.equal(e.code, "too_many_attempts");
  assert.match(e.message, /no answer within 0.02 s/);
  assert.deepEqual([e.result.counts.imported, e.result.counts.unconfirmed], [0, 5]);
});

test("options of the wrong type or value are refused before anything is sent", async () => {
  for (const [options, message] of [
    [{ projectId: "abc" }, /`projectId` must be a whole number/],
    [{ projectId: 1.5 }, /`projectId` must be a whole number/],
    [{ concurrency: "abc" }, /`concurrency` must be a whole number/],
    [{ compressionLevel: 12 }, /`compressionLevel` must be a whole number from 0 to 9/],
    [{ baseUrl: "http://demo-owner:SUPERSECRET@127.0.0.1:9" }, /holds credentials/],
    [{ baseUrl: "not-a-url" }, /is not a URL/],
    [{ endpoints: { app: {} }, region: "eu" }, /the endpoints or region cannot give a URL/],
  ]) {
    const e = await datadict.importEvents(Buffer.from(ndjson(1)), { ...conn, ...options, fetch: () => assert.fail("nothing is sent") }).then(
      () => assert.fail("the import must fail"),
      (e) => e,
    );
    assert.equal(e.code, "bad_options", e.message);
    assert.match(e.message, message);
    assert.ok(!e.message.includes("SUPERSECRET"), e.message);
  }
});

test("sources: a Buffer, a gzip file and a pretty-printed event are read; an unserializable record is named", async () => {
  const buffer = await datadict.importEvents(Buffer.from(ndjson(7)), { dryRun: true });
  assert.deepEqual([buffer.counts.read, buffer.counts.valid], [7, 7]);

  const gz = path.join(tmp, "events.ndjson.gz");
  fs.writeFileSync(gz, zlib.gzipSync(ndjson(25)));
  const gzipped = await datadict.importEvents(gz, { dryRun: true });
  assert.deepEqual([gzipped.counts.read, gzipped.counts.valid, gzipped.counts.failed], [25, 25, 0]);

  const pretty = path.join(tmp, "pretty.json");
  const one = event(1);
  delete one.properties.distinct_id;
  fs.writeFileSync(pretty, JSON.stringify(one, null, 2) + "\n");
  const single = await datadict.importEvents(pretty, { dryRun: true });
  assert.deepEqual([single.counts.read, single.failures[0]?.field, single.failures[0]?.line], [1, "properties.distinct_id", 1]);

  const records = [event(0), { ...event(1), big: 10n }];
  const e = await datadict.importEvents(records, { dryRun: true }).then(() => assert.fail("must fail"), (e) => e);
  assert.equal(e.code, "bad_record");
  assert.match(e.message, /record 1 of the source \(line 2\) cannot be written as JSON \(Do not know how to serialize a BigInt\)/);
});

test("the package: types match the runtime, the license is shipped, the wasm once", () => {
  const root = path.dirname(require.resolve("datadict/package.json"));
  const types = fs.readFileSync(path.join(root, "node/datadict_wasm.d.ts"), "utf8");
  assert.match(types, /export function checkEvent\(record: string, options\?: EventOptions\)/);
  assert.match(types, /export function retryDecision\([^)]*policy\?: Partial<RetryPolicy>\)/);
  const importer = fs.readFileSync(path.join(root, "lib/importer.d.ts"), "utf8");
  assert.match(importer, /export declare class ImportError extends Error/);
  assert.match(importer, /export declare function loadImporter\(\)/);
  assert.match(importer, /importEvents\(source: ImportSource, options\?: ImportOptions\)/);
  assert.equal(typeof datadict.loadImporter, "function");
  for (const file of ["LICENSE", "LICENSE-MIT", "LICENSE-APACHE"]) assert.ok(fs.existsSync(path.join(root, file)), file);
  const wasmFiles = [];
  for (const dir of ["node", "web"]) for (const f of fs.readdirSync(path.join(root, dir))) if (f.endsWith(".wasm")) wasmFiles.push(`${dir}/${f}`);
  assert.deepEqual(wasmFiles, ["web/datadict_wasm_bg.wasm"]);
});
