// Starts the real datadict server binary on 127.0.0.1 (port 0) with a temporary data folder, waits
// for the lines it prints (URL and the demo project's credentials) and stops it at the end.
// Used by the importer and CLI tests; not a test file itself.
"use strict";
const { spawn, spawnSync } = require("node:child_process");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");

/** The repository root: the tests run in target/npm-scratch, this file sits in tests/npm/support. */
const ROOT = path.resolve(__dirname, "../../..");
const BINARY = path.join(ROOT, "target/debug/datadict-server");
const START_DEADLINE_MS = 120_000;

function ensureBinary() {
  if (fs.existsSync(BINARY)) return;
  const r = spawnSync("cargo", ["build", "-p", "datadict-server"], { cwd: ROOT, stdio: "inherit" });
  if (r.status !== 0) throw new Error("cannot build datadict-server (cargo build -p datadict-server failed)");
}

/**
 * Starts a server; `flags` are extra `serve` flags (e.g. `["--ingest-rate-limit", "1000"]`).
 * Resolves to `{url, projectId, username, secret, token, dataDir, stop()}`.
 */
async function startServer(flags = [], { dataDir } = {}) {
  ensureBinary();
  dataDir ??= fs.mkdtempSync(path.join(os.tmpdir(), "datadict-npm-"));
  const child = spawn(BINARY, ["--listen", "127.0.0.1:0", "--data-dir", dataDir, "--web-dir", path.join(dataDir, "no-web"), ...flags], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stderr.on("data", (d) => (err += d));
  const info = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the server printed no credentials within ${START_DEADLINE_MS} ms:\n${out}\n${err}`)), START_DEADLINE_MS);
    child.on("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`the server exited with ${code} before it was ready:\n${out}\n${err}`));
    });
    child.stdout.on("data", (d) => {
      out += d;
      const url = /listening on (http:\/\/[^/\s]+)/.exec(out)?.[1];
      const projectId = /demo project id:\s+(\d+)/.exec(out)?.[1];
      const username = /service account user:\s+(\S+)/.exec(out)?.[1];
      const secret = /service account secret:\s+(\S+)/.exec(out)?.[1];
      const token = /project token:\s+(\S+)/.exec(out)?.[1];
      if (url && projectId && username && secret && token) {
        clearTimeout(timer);
        child.removeAllListeners("exit");
        resolve({ url, projectId: Number(projectId), username, secret, token });
      }
    });
  });
  const stop = () =>
    new Promise((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      child.once("exit", () => resolve());
      // SIGKILL, not SIGTERM: a graceful shutdown waits for idle keep-alive connections, which
      // the test process's fetch pool holds open; the tests keep nothing that needs a clean stop.
      child.kill("SIGKILL");
    });
  return { ...info, dataDir, child, stop };
}

/** GET a path of the application API with the service account; resolves to the parsed body. */
async function api(server, pathAndQuery) {
  const auth = "Basic " + Buffer.from(`${server.username}:${server.secret}`).toString("base64");
  const res = await fetch(`${server.url}/api/app/projects/${server.projectId}${pathAndQuery}`, { headers: { authorization: auth } });
  const body = await res.json();
  if (!res.ok) throw new Error(`GET ${pathAndQuery} answered ${res.status}: ${JSON.stringify(body)}`);
  return body;
}

/** Every stored event of the project (all pages of the read API). */
async function allEvents(server, query = "") {
  const events = [];
  let cursor = null;
  for (;;) {
    const q = new URLSearchParams(query);
    q.set("limit", "1000");
    if (cursor) q.set("cursor", cursor);
    const page = await api(server, `/events?${q}`);
    events.push(...page.results);
    if (!page.next_cursor) return events;
    cursor = page.next_cursor;
  }
}

/** A valid event whose `$insert_id` is derived from `n`. */
function event(n, extra = {}) {
  return {
    event: "npm_test_event",
    properties: { time: Date.now() - 60_000, distinct_id: `user-${n % 97}`, $insert_id: `npm-${n}`, n, ...extra },
  };
}

/** NDJSON text of `events`. */
const ndjson = (events) => events.map((e) => JSON.stringify(e)).join("\n") + "\n";

module.exports = { ROOT, startServer, api, allEvents, event, ndjson };
