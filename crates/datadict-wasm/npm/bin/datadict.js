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
const { UsageError, int, redact, connection, hasServiceAccount, fmt, mb, table, urlOf, apiRequest } = require("../lib/cli-common.js");
const { readDictionaryFile, runSchemas } = require("../lib/cli-schemas.js");

const USAGE = `usage: datadict <command> [options]

commands:
  validate FILE...         check events (or --profiles) against the import rules and, with a
                           service account or --dictionary FILE, the project's dictionary; exit 1
                           when a record breaks a rule or has no_schema, unknown_property or
                           type_mismatch (hidden and dropped data are reported, never fail)
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
  --timeout SECONDS        how long one request may take before it is retried (default 60)

import and validate:
  --profiles               the file holds profile updates ($distinct_id + one operation)
  --gzip-level N           0-9 (default 6)      --concurrency N  requests in flight (default 8)
  --batch-size N           records per request  --batch-bytes N  uncompressed bytes per request
  --checkpoint FILE        record acknowledged batches; a rerun sends only what is left
  --dictionary FILE        check against this dictionary (.json or .csv)
  --check-dictionary       fetch the project's dictionary and check against it
  --no-strict              import without strict mode
  --dry-run                validate and batch, send nothing
  --max-attempts N         attempts per request before giving up (default 10)
  --progress               show the progress line for validate too
  --json                   print the result as JSON
  --namespace NS           the dictionary's metadata key (default com.vendor)

violations:
  --since T --until T      only these UTC days: YYYY-MM-DD, epoch ms, or before now (10m, 2h, 7d)
  --fail-on CODE           any (default), rejected, no_schema, unknown_property, type_mismatch,
                           hidden_event, hidden_property, dropped_event, dropped_property;
                           repeat it or separate codes with commas
  --json                   print the server's summary as JSON (the exit code is the same)

  --version                print the package's version

exit codes: 0 ok, 1 problems found (invalid records, a diff, violations), 2 usage error,
3 server or network error (also an import the server did not confirm whole)
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
  timeout: { type: "string" },
  version: { type: "boolean" },
  since: { type: "string" },
  until: { type: "string" },
  "fail-on": { type: "string", multiple: true },
  events: { type: "boolean" },
  help: { type: "boolean", short: "h" },
};

/** The dictionary findings that make `validate` exit 1: a record the dictionary does not describe.
 * Hidden and dropped data are what the dictionary says to do, so they are reported only. */
const VALIDATE_FAILS_ON = ["no_schema", "unknown_property", "type_mismatch"];
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
  if (c.unconfirmed) rows.push(["sent, not confirmed by the server", fmt(c.unconfirmed)]);
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

/** Refuses a FILE argument that does not exist or is a folder. */
function checkInputFile(file) {
  let st;
  try {
    st = fs.statSync(file);
  } catch {
    throw new UsageError(`${file} does not exist`);
  }
  if (st.isDirectory()) throw new UsageError(`${file} is a folder; name a file of events (NDJSON or a JSON array)`);
}

async function runValidate(files, v) {
  if (!files.length) throw new UsageError("validate needs a FILE");
  files.forEach(checkInputFile);
  let code = 0;
  for (const file of files) {
    if (files.length > 1 && !v.json) process.stdout.write(`${code || file !== files[0] ? "\n" : ""}${file}:\n`);
    code = Math.max(code, await runImport(file, v, { validateOnly: true }));
  }
  return code;
}

async function runImport(file, v, { validateOnly }) {
  if (!file) throw new UsageError(`${validateOnly ? "validate" : "import"} needs a FILE`);
  checkInputFile(file);
  const kind = v.profiles ? "profiles" : "events";
  const dryRun = validateOnly || Boolean(v["dry-run"]);
  const conn = dryRun ? connection(v, { needCredentials: false }) : connection(v);
  const options = {
    ...conn,
    dryRun,
    strict: !v["no-strict"],
    compressionLevel: int(v["gzip-level"], "gzip-level", { max: 9 }),
    concurrency: int(v.concurrency, "concurrency", { min: 1 }),
    maxEventsPerRequest: int(v["batch-size"], "batch-size", { min: 1 }),
    maxRequestBytes: int(v["batch-bytes"], "batch-bytes", { min: 1 }),
    checkpoint: v.checkpoint,
  };
  if (v.timeout !== undefined) options.requestTimeoutMs = int(v.timeout, "timeout", { min: 1 }) * 1000;
  if (v["max-attempts"] !== undefined) options.retryPolicy = { maxAttempts: int(v["max-attempts"], "max-attempts", { min: 1 }) };
  if (v.dictionary) options.dictionary = readDictionaryFile(v.dictionary, v.namespace);
  else if (v["check-dictionary"] || (validateOnly && kind === "events" && hasServiceAccount(v))) {
    if (!hasServiceAccount(v)) throw new UsageError("--check-dictionary reads the project's dictionary, which needs a service account: pass --username and --secret (a project token only imports)");
    options.dictionary = await (await loadImporter()).fetchDictionary(connection(v));
  } else if (validateOnly && kind === "events" && (v.token ?? process.env.DATADICT_TOKEN) && !v.json) {
    process.stderr.write("note: not checked against the project's dictionary: reading it needs a service account (--username and --secret), or pass --dictionary FILE\n");
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
  if (result.counts.failed > 0) return 1;
  if (options.dictionary) {
    const byCode = Object.fromEntries(Object.entries(result.summary?.byCode ?? {}).map(([code, t]) => [code, t.count]));
    const hits = wasm.gateHits({ violations: { by_code: byCode }, rejected: { total: 0 } }, VALIDATE_FAILS_ON);
    if (hits.length) {
      if (!v.json) process.stdout.write(`\nthe dictionary does not describe every record: ${hits.map(([c, n]) => `${c} ${fmt(n)}`).join(", ")}\n`);
      return 1;
    }
  }
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
function checkTimeFlag(flag, value, now) {
  if (value === undefined) return undefined;
  const ms = wasm.parseSince(value, now);
  if (ms === undefined) {
    throw new UsageError(`--${flag} \`${value}\` is not a time: use a YYYY-MM-DD date, milliseconds since the epoch, or a time before now such as 10m, 2h or 7d`);
  }
  return ms;
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
    const events = topRows(v.by_event, r.by_event);
    if (events.length) out.write("\n" + table([["top events", "violations", "rejected"], ...events]) + "\n");
    if (Object.keys(v.by_profile ?? {}).length) out.write("\n" + table([["top profile schemas", "violations"], ...topRows(v.by_profile)]) + "\n");
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
  const now = Date.now();
  const since = checkTimeFlag("since", v.since, now);
  const until = checkTimeFlag("until", v.until, now);
  if (since !== undefined && until !== undefined && since > until) {
    throw new UsageError(`--since ${v.since} is after --until ${v.until}: the range would hold no day; swap them`);
  }
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
  if (v.version) {
    process.stdout.write(`${require("../package.json").version}\n`);
    return 0;
  }
  if (v.help || command === "help") {
    process.stdout.write(USAGE);
    return 0;
  }
  if (!command) {
    process.stderr.write(USAGE);
    return 2;
  }
  /** Refuses arguments past the `n` a command takes (a shell glob would otherwise be dropped). */
  const atMost = (n, what) => {
    if (rest.length > n) throw new UsageError(`${what} takes ${n === 1 ? "one FILE" : n === 2 ? "a subcommand and one FILE" : "at most one argument"}; got also \`${rest.slice(n).join(" ")}\``);
  };
  try {
    switch (command) {
      case "validate":
        return await runValidate(rest, v);
      case "import":
        atMost(1, "import");
        return await runImport(rest[0], v, { validateOnly: false });
      case "schemas":
        atMost(2, "schemas");
        return await runSchemas(rest[0], rest[1], v);
      case "violations":
        atMost(1, "violations");
        return await runViolations(rest[0], v);
      default:
        throw new UsageError(`unknown command \`${command}\``);
    }
  } catch (e) {
    // Options the importer refused (a bad value, a checkpoint of another import) are usage errors.
    if (e instanceof UsageError || ["bad_options", "bad_checkpoint", "bad_source", "bad_record"].includes(e.code)) {
      process.stderr.write(`datadict: ${redact(e.message)}\n${e instanceof UsageError ? `\n${USAGE}` : ""}`);
      return 2;
    }
    process.stderr.write(`datadict: ${redact(e.message)}\n`);
    const c = e.result?.counts;
    if (c) {
      const unconfirmed = c.unconfirmed ? `, ${fmt(c.unconfirmed)} sent but not confirmed` : "";
      process.stderr.write(`stopped after ${fmt(c.read)} read, ${fmt(c.imported)} imported, ${fmt(c.failed)} failed${unconfirmed}\n`);
    }
    // Input that is not NDJSON or a JSON array is a problem found, not a server's failure.
    return e.code === "bad_input" ? 1 : 3;
  }
}

main(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
});
