// The package as a bundler resolves it for browsers (the `browser` condition): the whole API,
// the importer included, with a clear error for a call before `init()`. Run in a child Node with
// `--conditions=browser`, since the condition is chosen when the process starts.
import test from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";

const script = `
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import * as m from "datadict";
const require = createRequire(process.cwd() + "/");
const out = { importer: typeof m.importEvents, importError: typeof m.ImportError };
try { m.validateSchemaEntry({}); } catch (e) { out.before = e.message; }
try { new m.Batcher(); } catch (e) { out.beforeClass = e.message; }
const wasm = readFileSync(require.resolve("datadict/package.json").replace("package.json", "web/datadict_wasm_bg.wasm"));
await m.default({ module_or_path: wasm });
out.after = m.validateSchemaEntry({ entityType: "event", name: "A", schemaJson: {} });
const lines = [1, 2].map((i) => JSON.stringify({ event: "A", properties: { time: Date.now() / 1000, distinct_id: "u", $insert_id: "i" + i } })).join("\\n");
out.imported = (await m.importEvents(new Blob([lines]), { dryRun: true })).counts.valid;
console.log(JSON.stringify(out));
`;

test("under the browser condition, datadict gives the importer and says to call init() first", () => {
  // Beside the scratch project's node_modules, where "datadict" resolves.
  const file = join(process.cwd(), "browser-entry-child.mjs");
  writeFileSync(file, script);
  const r = spawnSync(process.execPath, ["--conditions=browser", file], { cwd: process.cwd(), encoding: "utf8" });
  assert.equal(r.status, 0, r.stderr);
  const out = JSON.parse(r.stdout.trim().split("\n").at(-1));
  assert.deepEqual([out.importer, out.importError], ["function", "function"]);
  assert.match(out.before, /validateSchemaEntry needs the wasm module: call `await init\(\)`/);
  assert.match(out.beforeClass, /new Batcher needs the wasm module/);
  assert.deepEqual(out.after, []);
  assert.equal(out.imported, 2);
});
