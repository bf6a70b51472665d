// Uses the npm package's browser builds exactly as a page without a bundler would: the core's
// ES module (`datadict/web`) and the importer (`datadict/importer`, browser entry). The server's
// credentials arrive in the URL fragment. The outcome is left in `window.__outcome` for the test.
import init, { validateSchemaEntry } from "./pkg/web/datadict_wasm.js";
import { importEvents } from "./pkg/lib/importer.web.mjs";

const out = document.getElementById("out");
const params = new URLSearchParams(location.hash.slice(1));

async function run() {
  await init();
  const issues = validateSchemaEntry({ entityType: "thing", schemaJson: {} });
  const now = Date.now();
  const lines = [
    { event: "Browser Event", properties: { time: now, distinct_id: "u1", $insert_id: "npm-browser-1" } },
    { event: "Browser Event", properties: { time: 0, distinct_id: "u1", $insert_id: "npm-browser-2" } },
    { event: "Browser Event", properties: { time: now, distinct_id: "u2", $insert_id: "npm-browser-3" } },
  ].map((e) => JSON.stringify(e)).join("\n");
  const result = await importEvents(new Blob([lines + "\n"]), {
    baseUrl: location.origin,
    projectId: Number(params.get("project")),
    username: params.get("user"),
    secret: params.get("secret"),
    concurrency: 2,
  });
  return {
    issueCodes: issues.map((i) => `${i.path}:${i.code}`),
    counts: result.counts,
    failedLines: result.failures.map((f) => f.line),
  };
}

run().then(
  (outcome) => {
    window.__outcome = outcome;
    out.textContent = JSON.stringify(outcome, null, 2);
  },
  (err) => {
    window.__outcome = { error: String(err && err.stack ? err.stack : err) };
    out.textContent = window.__outcome.error;
  },
);
