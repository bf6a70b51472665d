// `datadict schemas pull|diff|push`: a project's dictionary kept in a file (JSON or CSV).
"use strict";
const fs = require("node:fs");
const path = require("node:path");
const wasm = require("../node/datadict_wasm.js");
const { UsageError, readUserFile, connection, schemaRequest } = require("./cli-common.js");

function readDictionaryFile(file, namespace) {
  const text = readUserFile(file, "the dictionary file", "utf8");
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
  try {
    fs.writeFileSync(file, text);
  } catch (e) {
    const why = e.code === "ENOENT" ? `the folder ${path.dirname(file)} does not exist` : e.code === "EISDIR" ? "it is a folder" : e.message;
    throw new UsageError(`cannot write ${file}: ${why}`);
  }
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
  if (sub !== "pull") readUserFile(file, "the dictionary file");
  if (sub === "pull") {
    // Checked before the request, so a wrong path costs no download.
    const dir = path.dirname(path.resolve(file));
    if (!fs.existsSync(dir)) throw new UsageError(`cannot write ${file}: the folder ${path.dirname(file)} does not exist`);
    if (fs.existsSync(file) && fs.statSync(file).isDirectory()) throw new UsageError(`cannot write ${file}: it is a folder`);
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
  // Without --truncate only what differs is sent, each entry with the entity-level metadata keys
  // it no longer has sent as null: the server keeps a key a replace leaves out (FACTS.md), so the
  // diff printed above is what the server ends up with.
  const key = (e) => `${e.entityType}\0${e.name}`;
  const differing = new Set([...diff.added, ...diff.changed].map(key));
  const remoteByKey = new Map(remote.map((e) => [key(e), e]));
  const entries = v.truncate ? local : local.filter((e) => differing.has(key(e))).map((e) => withRemovedMetadata(e, remoteByKey.get(key(e)), v.namespace ?? wasm.defaultNamespace()));
  if (v["dry-run"]) {
    process.stdout.write("dry run: nothing pushed\n");
    return 0;
  }
  const res = await schemaRequest(conn, "POST", { entries, truncate: Boolean(v.truncate) });
  process.stdout.write(`pushed: ${res.results.added} added or replaced, ${res.results.deleted} deleted\n`);
  return 0;
}

/** `entry` with `null` for each entity-level metadata key (and each field of the namespace's
 * object) that the server's `old` entry has and `entry` lacks: a replace keeps those otherwise. */
function withRemovedMetadata(entry, old, namespace) {
  const oldMeta = old?.schemaJson?.metadata;
  if (!oldMeta || typeof oldMeta !== "object") return entry;
  const meta = { ...(entry.schemaJson?.metadata ?? {}) };
  let changed = false;
  for (const [k, value] of Object.entries(oldMeta)) {
    if (!(k in meta)) {
      meta[k] = null;
      changed = true;
    } else if (k === namespace && value && typeof value === "object" && meta[k] && typeof meta[k] === "object") {
      const fields = { ...meta[k] };
      for (const f of Object.keys(value)) {
        if (!(f in fields)) {
          fields[f] = null;
          changed = true;
        }
      }
      meta[k] = fields;
    }
  }
  return changed ? { ...entry, schemaJson: { ...entry.schemaJson, metadata: meta } } : entry;
}

module.exports = { readDictionaryFile, runSchemas };
