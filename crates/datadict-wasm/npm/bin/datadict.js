#!/usr/bin/env node
// `npx datadict`: validate and import event/profile files, keep a project's dictionary in a file
// (pull, diff, push), and gate a CI job on the violations the server recorded. A thin shell over
// the package's importer and wasm core.
"use strict";

// V8 doubles the young generation (up to 16 MiB semi-spaces) whenever many objects survive a
// scavenge, which fetch's per-request objects make them do during an import; kept at its first
// size, the heap of a 1M-event import stays at 12 MiB instead of 42 (peak RSS about 20 MiB lower)
// for about 1% more instructions (BENCHMARKS.md, npm). A flag the user gives wins.
const v8Flags = `${process.execArgv.join(" ")} ${process.env.NODE_OPTIONS ?? ""}`;
if (!/semi[-_]space/.test(v8Flags)) require("node:v8").setFlagsFromString("--semi-space-growth-factor=1");

const fs = require("node:fs");
const { parseArgs } = require("node:util");
const wasm = require("../node/datadict_wasm.js");
const { loadImporter } = require("../lib/importer.js");

const USAGE = `usage: datadict <command> [options]

commands:
  validate FILE            check events (or --profiles) against the import rules and, with a
                           connection or --dictionary FILE, the project's dictionary; exit 1 on problems
  import FILE              import events (or --profiles) with a live progress line
  schemas pull FILE        write the project's dictionary to FILE (.json or .csv)
  schemas diff FILE        show what pushing FILE would change; exit 1 when it differs
  schemas push FILE        show the diff, then upload FILE; --truncate first deletes every schema
                           of the project (entries missing from FILE are otherwise kept)
  violations               the project's dictionary violations and rejected records by code,
                           event and property; exit 1 when a --fail-on code occurred (a CI gate)
  violations reset         delete the project's violations and rejected records (no question
                           asked); --events deletes its stored events too

connection (or environment variables):
  --base-url URL           DATADICT_BASE_URL, e.g. http://127.0.0.1:8080
  --region default|eu|in   with --endpoints FILE (JSON of every region's bases)
  --project-id N           DATADICT_PROJECT_ID
  --username U --secret S  DATADICT_USERNAME / DATADICT_SECRET (a service account)
  --token T                DATADICT_TOKEN (the project token; imports only)

import and validate:
  --profiles               the file holds profile updates ($distinct_id + one operation)
  --gzip-level N           0-9 (default 6)      --concurrency N  requests in flight (default 8)
  --batch-size N           records per request  --batch-bytes N  uncompressed bytes per request
  --checkpoint FILE        record acknowledged batches; a rerun sends only what is left
  --dictionary FILE        check against this dictionary (.json or .csv)
  --check-dictionary       fetch the project's dictionary and check against it
  --no-strict              import without strict mode
  --dry-run                validate and batch, send nothing
  --json                   print the result as JSON
  --namespace NS           the dictionary's metadata key (default com.vendor)

violations:
  --since T --until T      only these UTC days: YYYY-MM-DD, epoch ms, or before now (10m, 2h, 7d)
  --fail-on CODE           any (default), rejected, no_schema, unknown_property, type_mismatch,
                           hidden_event, hidden_property, dropped_event, dropped_property;
                           repeat it or separate codes with commas
  --json                   print the server's summary as JSON (the exit code is the same)

exit codes: 0 ok, 1 problems found (invalid records, a diff, violations), 2 usage error,
3 server or network error
`;

const OPTIONS = {
  "base-url": { type: "string" },
  endpoints: { type: "string" },
  region: { type: "string" },
  "project-id": { type: "string" },
  username: { type: "string" },
  secret: { type: "string" },
  token: { type: "string" },
  profiles: { type: "boolean" },
  "gzip-level": { type: "string" },
  concurrency: { type: "string" },
  "batch-size": { type: "string" },
  "batch-bytes": { type: "string" },
  checkpoint: { type: "string" },
  dictionary: { type: "string" },
  "check-dictionary": { type: "boolean" },
  "no-strict": { type: "boolean" },
  "dry-run": { type: "boolean" },
  json: { type: "boolean" },
  namespace: { type: "string" },
  truncate: { type: "boolean" },
  progress: { type: "boolean" },
  "max-attempts": { type: "string" },
  since: { type: "string" },
  until: { type: "string" },
  "fail-on": { type: "string", multiple: true },
  events: { type: "boolean" },
  help: { type: "boolean", short: "h" },
};

class UsageError extends Error {}

function int(value, name) {
  if (value == null) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new UsageError(`--${name} must be a whole number (got \`${value}\`)`);
  return n;
}

function connection(v, { needCredentials = true } = {}) {
  const env = process.env;
  const c = {
    baseUrl: v["base-url"] ?? env.DATADICT_BASE_URL,
    region: v.region ?? env.DATADICT_REGION,
    projectId: v["project-id"] ?? env.DATADICT_PROJECT_ID,
    username: v.username ?? env.DATADICT_USERNAME,
    secret: v.secret ?? env.DATADICT_SECRET,
    token: v.token ?? env.DATADICT_TOKEN,
    namespace: v.namespace,
  };
  if (v.endpoints) c.endpoints = JSON.parse(fs.readFileSync(v.endpoints, "utf8"));
  if (!needCredentials) return c;
  if (!c.baseUrl && !c.endpoints) throw new UsageError("no server: pass --base-url (or set DATADICT_BASE_URL)");
  if (!c.username && !c.token) throw new UsageError("no credentials: pass --username and --secret of a service account, or --token");
  if (c.username && !c.projectId) throw new UsageError("no project: pass --project-id (or set DATADICT_PROJECT_ID)");
  if (c.username) c.credentials = { kind: "serviceAccount", username: c.username, secret: c.secret ?? "" };
  else c.credentials = { kind: "projectToken", token: c.token };
  return c;
}

function hasConnection(v) {
  const env = process.env;
  return Boolean((v["base-url"] ?? env.DATADICT_BASE_URL) && (v.username ?? env.DATADICT_USERNAME ?? v.token ?? env.DATADICT_TOKEN));
}

function readDictionaryFile(file, namespace) {
  const text = fs.readFileSync(file, "utf8");
  if (file.toLowerCase().endsWith(".csv")) {
    const { entries, issues } = wasm.dictionaryFromCsv(text, namespace);
    if (issues.length) {
      const lines = issues.map((i) => `  ${i.path}: ${i.message}`).join("\n");
      throw new UsageError(`${file} is not a valid dictionary CSV:\n${lines}`);
    }
    return entries;
  }
  let value;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw new UsageError(`${file} is not JSON (${e.message}); write the dictionary as a JSON array of schema entries or as CSV`);
  }
  const entries = Array.isArray(value) ? value : value.results ?? value.entries;
  if (!Array.isArray(entries)) throw new UsageError(`${file} holds no list of schema entries (a JSON array, or {"results": [...]})`);
  return entries;
}

function writeDictionaryFile(file, entries, namespace) {
  const sorted = [...entries].sort((a, b) => (a.entityType + "\0" + a.name).localeCompare(b.entityType + "\0" + b.name));
  const text = file.toLowerCase().endsWith(".csv") ? wasm.dictionaryToCsv(sorted, namespace) : JSON.stringify(sorted, null, 2) + "\n";
  fs.writeFileSync(file, text);
}

const fmt = (n) => Math.round(n).toLocaleString("en-US");
const mb = (b) => (b / 1e6).toFixed(1);

function table(rows) {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => String(r[i]).length)));
  return rows.map((r) => r.map((c, i) => (i === 0 ? String(c).padEnd(widths[i]) : String(c).padStart(widths[i]))).join("  ")).join("\n");
}

function printResult(result, { kind, out = process.stdout }) {
  const c = result.counts;
  const secs = result.timings.totalMs / 1000;
  const rows = [
    ["", kind],
    ["read", fmt(c.read)],
    ["valid", fmt(c.valid)],
  ];
  if (!result.dryRun) {
    rows.push(["sent", fmt(c.sent)], ["imported", fmt(c.imported)]);
    if (c.skipped) rows.push(["already imported (checkpoint)", fmt(c.skipped)]);
    rows.push(["retried requests", fmt(c.retried)]);
  }
  if (c.dropped) rows.push(["dropped by the dictionary", fmt(c.dropped)]);
  rows.push(["failed", fmt(c.failed)]);
  rows.push(["time", `${secs.toFixed(2)} s`]);
  if (secs > 0) rows.push(["rate", `${fmt(c.read / secs)} ${kind}/s, ${mb(c.bytesRead / secs)} MB/s`]);
  out.write(table(rows) + "\n");
  const byCode = result.summary?.byCode ?? result.summary?.by_code;
  if (byCode && Object.keys(byCode).length) {
    out.write("\nissues by code:\n" + table([["code", "records"], ...Object.entries(byCode).map(([code, t]) => [code, fmt(t.count)])]) + "\n");
  }
  if (result.failures.length) {
    out.write("\nfailed records:\n");
    for (const f of result.failures.slice(0, 50)) {
      out.write(`  line ${f.line}: ${f.field ? f.field + ": " : ""}${f.message}${f.source === "server" ? " (server)" : ""}\n`);
    }
    if (result.failures.length > 50 || result.failuresTruncated) out.write(`  ... and ${fmt(c.failed - Math.min(50, result.failures.length))} more\n`);
  }
}

function progressLine(kind) {
  let last = null;
  let timer = null;
  const live = process.stderr.isTTY;
  const render = () => {
    if (!last) return;
    const secs = last.elapsedMs / 1000 || 1e-9;
    const rate = last.read / secs;
    const byteRate = last.bytesRead / secs;
    let eta = "";
    if (last.totalBytes && byteRate > 0) eta = `  ETA ${Math.max(0, Math.round((last.totalBytes - last.bytesRead) / byteRate))} s`;
    const line = `${kind} ${fmt(last.read)} read, ${fmt(last.imported)} imported, ${fmt(last.failed)} failed  ${mb(last.bytesRead)} MB  ${fmt(rate)}/s${eta}`;
    process.stderr.write(live ? `\r\x1b[K${line}` : line + "\n");
  };
  return {
    onProgress: (p) => {
      last = p;
      if (!timer) {
        timer = setInterval(render, live ? 250 : 5000);
        timer.unref();
      }
    },
    stop: () => {
      if (timer) clearInterval(timer);
      if (live && last) {
        render();
        process.stderr.write("\n");
      }
    },
  };
}

async function runImport(file, v, { validateOnly }) {
  if (!file) throw new UsageError(`${validateOnly ? "validate" : "import"} needs a FILE`);
  if (!fs.existsSync(file)) throw new UsageError(`${file} does not exist`);
  const kind = v.profiles ? "profiles" : "events";
  const dryRun = validateOnly || Boolean(v["dry-run"]);
  const conn = dryRun ? connection(v, { needCredentials: false }) : connection(v);
  const options = {
    ...conn,
    dryRun,
    strict: !v["no-strict"],
    compressionLevel: int(v["gzip-level"], "gzip-level"),
    concurrency: int(v.concurrency, "concurrency"),
    maxEventsPerRequest: int(v["batch-size"], "batch-size"),
    maxRequestBytes: int(v["batch-bytes"], "batch-bytes"),
    checkpoint: v.checkpoint,
  };
  if (v["max-attempts"]) options.retryPolicy = { maxAttempts: int(v["max-attempts"], "max-attempts") };
  if (v.dictionary) options.dictionary = readDictionaryFile(v.dictionary, v.namespace);
  else if (v["check-dictionary"] || (validateOnly && kind === "events" && hasConnection(v))) {
    options.dictionary = await (await loadImporter()).fetchDictionary(connection(v));
  }
  const progress = !v.json && (v.progress || !validateOnly) ? progressLine(kind) : null;
  if (progress) options.onProgress = progress.onProgress;
  options.onRetry = (r) => {
    if (!v.json) process.stderr.write(`${process.stderr.isTTY ? "\r\x1b[K" : ""}request of batch ${r.sequence} ${r.status ? `answered ${r.status}` : "failed (network)"}; retrying in ${(r.delayMs / 1000).toFixed(1)} s\n`);
  };
  const importer = await loadImporter();
  let result;
  try {
    result = await importer[kind === "events" ? "importEvents" : "importProfiles"](file, options);
  } finally {
    progress?.stop();
  }
  if (v.json) process.stdout.write(JSON.stringify(result) + "\n");
  else printResult(result, { kind });
  return result.counts.failed > 0 ? 1 : 0;
}

/** The URL of `operation` (with `extra` fields such as `since`) for the connection's project. */
function urlOf(conn, operation, extra = {}) {
  const endpoints = conn.endpoints ?? wasm.singleHostEndpoints(conn.baseUrl);
  return wasm.operationUrl({ endpoints, region: conn.region ?? "default", operation, projectId: Number(conn.projectId), ...extra });
}

const schemaRequest = (conn, method, body) => apiRequest(conn, method, urlOf(conn, "schemas"), body);

/** A JSON request of the application API with the service account; resolves to the parsed body. */
async function apiRequest(conn, method, url, body) {
  const headers = { accept: "application/json", authorization: wasm.authorizationHeader(conn.credentials) };
  if (body) headers["content-type"] = "application/json";
  // The core's words for a failed request; a write's 403 names the role that writes need.
  const { explainStatus, explainAnswer } = await loadImporter();
  const context = { url, projectId: conn.projectId, writes: method !== "GET" };
  let res;
  try {
    res = await fetch(url, { method, headers, body: body ? JSON.stringify(body) : undefined });
  } catch (e) {
    throw Object.assign(new Error(explainStatus(0, e.cause?.code ?? e.message, context)), { status: 0 });
  }
  const text = await res.text();
  const retryAfter = res.headers.get("retry-after");
  if (retryAfter != null) context.retryAfterMs = wasm.parseRetryAfter(retryAfter, Date.now());
  if (!res.ok) throw Object.assign(new Error(explainAnswer(res.status, text, context)), { status: res.status });
  return JSON.parse(text);
}

function printDiff(diff, out = process.stdout) {
  const key = (e) => `${e.entityType} ${e.name}`;
  for (const e of diff.added) out.write(`+ ${key(e)}\n`);
  for (const e of diff.removed) out.write(`- ${key(e)} (only on the server)\n`);
  for (const c of diff.changed) {
    out.write(`~ ${key(c.entity ?? c)}\n`);
    for (const f of c.changes) out.write(`    ${f.path}: ${JSON.stringify(f.old ?? null)} -> ${JSON.stringify(f.new ?? null)}\n`);
  }
  const n = diff.added.length + diff.removed.length + diff.changed.length;
  out.write(n ? `${diff.added.length} to add, ${diff.changed.length} to change, ${diff.removed.length} only on the server\n` : "no differences\n");
}

async function runSchemas(sub, file, v) {
  if (!["pull", "push", "diff"].includes(sub)) throw new UsageError("schemas needs `pull`, `push` or `diff`");
  if (!file) throw new UsageError(`schemas ${sub} needs a FILE (.json or .csv)`);
  const conn = connection(v);
  if (!conn.username) throw new UsageError("the schemas API needs a service account: pass --username and --secret");
  if (sub === "pull") {
    const body = await schemaRequest(conn, "GET");
    writeDictionaryFile(file, body.results, v.namespace);
    process.stdout.write(`wrote ${body.results.length} schema entries to ${file}\n`);
    return 0;
  }
  const local = readDictionaryFile(file, v.namespace);
  const issues = wasm.validateBatchBody({ entries: local, truncate: Boolean(v.truncate) }, v.namespace);
  if (issues.length) {
    process.stderr.write(`${file} has ${issues.length} problem(s):\n${issues.map((i) => `  ${i.path}: ${i.message}`).join("\n")}\n`);
    return 1;
  }
  const remote = (await schemaRequest(conn, "GET")).results;
  const diff = wasm.diffDictionaries(remote, local);
  printDiff(diff);
  const differs = diff.added.length + diff.removed.length + diff.changed.length > 0;
  if (sub === "diff") return differs ? 1 : 0;
  if (!differs && !v.truncate) {
    process.stdout.write("nothing to push\n");
    return 0;
  }
  if (v.truncate) process.stdout.write(`--truncate: every schema of project ${conn.projectId} is deleted first, so the server ends up with exactly ${file}\n`);
  else if (diff.removed.length) process.stdout.write(`entries only on the server are kept; pass --truncate to delete them\n`);
  if (v["dry-run"]) {
    process.stdout.write("dry run: nothing pushed\n");
    return 0;
  }
  const res = await schemaRequest(conn, "POST", { entries: local, truncate: Boolean(v.truncate) });
  process.stdout.write(`pushed: ${res.results.added} added or replaced, ${res.results.deleted} deleted\n`);
  return 0;
}

const TOP = 10;

// The gate's rule (the `--fail-on` codes, which counts fail, how `--since` reads) is the core's,
// through the wasm package: `failOnCodes`, `gateHits`, `parseSince`.
function failOnCodes(values) {
  try {
    return wasm.failOnCodes(values ?? []);
  } catch (e) {
    throw new UsageError(e.message);
  }
}

/** Refuses a `--since`/`--until` value the server would not read, before any request. */
function checkTimeFlag(flag, value) {
  if (value !== undefined && wasm.parseSince(value, Date.now()) === undefined) {
    throw new UsageError(`--${flag} \`${value}\` is not a time: use a YYYY-MM-DD date, milliseconds since the epoch, or a time before now such as 10m, 2h or 7d`);
  }
}

/** The `TOP` largest keys of the `by` maps (summed), as table rows with one count per map. */
function topRows(...by) {
  const keys = [...new Set(by.flatMap((m) => Object.keys(m ?? {})))];
  const total = (k) => by.reduce((sum, m) => sum + (m?.[k] ?? 0), 0);
  keys.sort((a, b) => total(b) - total(a) || a.localeCompare(b));
  const rows = keys.slice(0, TOP).map((k) => [k === "" ? "(no event name)" : k, ...by.map((m) => fmt(m?.[k] ?? 0))]);
  if (keys.length > TOP) rows.push([`... ${keys.length - TOP} more`, ...by.map(() => "")]);
  return rows;
}

function printViolations(summary, { conn, since, until, codes, hits, out = process.stdout }) {
  const { violations: v, rejected: r } = summary;
  const days = since || until ? ` for the UTC days ${since ? `from ${since}` : ""}${since && until ? " " : ""}${until ? `to ${until}` : ""}` : "";
  out.write(`project ${conn.projectId}: ${fmt(v.total)} dictionary violation(s), ${fmt(r.total)} rejected record(s)${days}\n`);
  const codeKeys = [...new Set([...Object.keys(v.by_code), ...Object.keys(r.by_code)])].sort();
  if (codeKeys.length) {
    const rows = [["code", "violations", "rejected"], ...codeKeys.map((c) => [c, fmt(v.by_code[c] ?? 0), fmt(r.by_code[c] ?? 0)]), ["total", fmt(v.total), fmt(r.total)]];
    out.write("\n" + table(rows) + "\n");
    out.write("\n" + table([["top events", "violations", "rejected"], ...topRows(v.by_event, r.by_event)]) + "\n");
    if (Object.keys(v.by_property).length) out.write("\n" + table([["top properties", "violations"], ...topRows(v.by_property)]) + "\n");
  }
  const list = hits.map(([code, n]) => `${code} ${fmt(n)}`).join(", ");
  out.write(hits.length ? `\nfailed: ${list} (--fail-on ${codes.join(",")})\n` : `\npassed: nothing of --fail-on ${codes.join(",")} occurred\n`);
}

async function runViolations(sub, v) {
  if (sub !== undefined && sub !== "reset") throw new UsageError(`violations takes no argument but \`reset\` (got \`${sub}\`)`);
  const conn = connection(v);
  if (!conn.username) throw new UsageError("the data-quality API needs a service account: pass --username and --secret");
  if (sub === "reset") {
    for (const flag of ["since", "until", "fail-on"]) if (v[flag] !== undefined) throw new UsageError(`violations reset deletes every day; it takes no --${flag}`);
    const url = urlOf(conn, "qualityReset", { events: Boolean(v.events) });
    const { results: d } = await apiRequest(conn, "DELETE", url);
    const events = v.events ? `, ${fmt(d.events_deleted)} stored event(s)` : "";
    process.stdout.write(`reset project ${conn.projectId}: deleted ${fmt(d.violations_deleted)} violation row(s), ${fmt(d.rejected_deleted)} rejected-record row(s)${events}\n`);
    return 0;
  }
  if (v.events) throw new UsageError("--events goes with `violations reset` (it deletes the stored events)");
  const codes = failOnCodes(v["fail-on"]);
  checkTimeFlag("since", v.since);
  checkTimeFlag("until", v.until);
  const url = urlOf(conn, "qualitySummary", { since: v.since, until: v.until });
  const { results: summary } = await apiRequest(conn, "GET", url);
  const hits = wasm.gateHits(summary, codes);
  if (v.json) process.stdout.write(JSON.stringify(summary) + "\n");
  else printViolations(summary, { conn, since: v.since, until: v.until, codes, hits });
  return hits.length ? 1 : 0;
}

async function main(argv) {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  } catch (e) {
    process.stderr.write(`${e.message}\n\n${USAGE}`);
    return 2;
  }
  const { values: v, positionals: [command, ...rest] } = parsed;
  if (v.help || !command || command === "help") {
    process.stdout.write(USAGE);
    return command || v.help ? 0 : 2;
  }
  try {
    switch (command) {
      case "validate":
        return await runImport(rest[0], v, { validateOnly: true });
      case "import":
        return await runImport(rest[0], v, { validateOnly: false });
      case "schemas":
        return await runSchemas(rest[0], rest[1], v);
      case "violations":
        return await runViolations(rest[0], v);
      default:
        throw new UsageError(`unknown command \`${command}\``);
    }
  } catch (e) {
    if (e instanceof UsageError) {
      process.stderr.write(`datadict: ${e.message}\n\n${USAGE}`);
      return 2;
    }
    process.stderr.write(`datadict: ${e.message}\n`);
    const r = e.result;
    if (r) process.stderr.write(`stopped after ${fmt(r.counts.read)} read, ${fmt(r.counts.imported)} imported, ${fmt(r.counts.failed)} failed\n`);
    return e.status !== undefined || e.name === "ImportError" ? 3 : 3;
  }
}

main(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
});
