// The command line's shared pieces: usage errors, flag values, the connection from flags and
// environment, files named by the user, tables, and requests of the application API.
"use strict";
const fs = require("node:fs");
const wasm = require("../node/datadict_wasm.js");
const { loadImporter } = require("./importer.js");

class UsageError extends Error {}

function int(value, name, { min = 0, max = Number.MAX_SAFE_INTEGER } = {}) {
  if (value == null) return undefined;
  const n = value.trim() === "" ? NaN : Number(value);
  if (!Number.isInteger(n) || n < min || n > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `${min} or more` : `from ${min} to ${max}`;
    throw new UsageError(`${name.startsWith("DATADICT_") ? name : `--${name}`} must be a whole number ${range} (got \`${value}\`)`);
  }
  return n;
}

/** `url` with any user name and password masked. */
const redact = (text) => String(text).replace(/\/\/[^/@\s]*@/g, "//***@");

/** Reads a file the user named with a flag or as an argument; a missing file, a folder or an
 * unreadable one is a usage error that names it. */
function readUserFile(file, what, encoding) {
  let st;
  try {
    st = fs.statSync(file);
  } catch {
    throw new UsageError(`${what} ${file} does not exist`);
  }
  if (st.isDirectory()) throw new UsageError(`${what} ${file} is a folder; name a file`);
  try {
    return fs.readFileSync(file, encoding);
  } catch (e) {
    throw new UsageError(`cannot read ${what} ${file}: ${e.message}`);
  }
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
  const flag = (name, envName) => (v[name] !== undefined ? `--${name}` : envName);
  if (c.baseUrl) {
    let url;
    try {
      url = new URL(c.baseUrl);
    } catch {
      throw new UsageError(`${flag("base-url", "DATADICT_BASE_URL")} \`${redact(c.baseUrl)}\` is not a URL; give the server's origin, such as http://127.0.0.1:8080`);
    }
    if (url.username || url.password) {
      throw new UsageError(`${flag("base-url", "DATADICT_BASE_URL")} ${redact(c.baseUrl)} holds credentials; give the server's origin alone, and the credentials with --username and --secret (or --token)`);
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") {
      throw new UsageError(`${flag("base-url", "DATADICT_BASE_URL")} \`${c.baseUrl}\` is not http or https; give the server's origin, such as http://127.0.0.1:8080`);
    }
  }
  if (c.projectId !== undefined) c.projectId = int(String(c.projectId), flag("project-id", "DATADICT_PROJECT_ID").replace(/^--/, ""), { min: 1 });
  if (c.region !== undefined && !["default", "eu", "in"].includes(c.region)) {
    throw new UsageError(`--region must be default, eu or in (got \`${c.region}\`)`);
  }
  if (v.endpoints) {
    const text = readUserFile(v.endpoints, "--endpoints", "utf8");
    try {
      c.endpoints = JSON.parse(text);
    } catch (e) {
      throw new UsageError(`--endpoints ${v.endpoints} is not JSON (${e.message}); write {"app": {"default", "eu", "in"}, "ingest": {...}, "migrate"}`);
    }
    for (const part of ["app", "ingest"]) {
      const region = c.region ?? "default";
      if (typeof c.endpoints?.[part]?.[region] !== "string") {
        throw new UsageError(`--endpoints ${v.endpoints} has no \`${part}.${region}\` base URL; it needs \`app\` and \`ingest\` bases for default, eu and in, and \`migrate\``);
      }
    }
  }
  if (!needCredentials) return c;
  if (!c.baseUrl && !c.endpoints) throw new UsageError("no server: pass --base-url (or set DATADICT_BASE_URL)");
  if (!c.username && !c.token) throw new UsageError("no credentials: pass --username and --secret of a service account, or --token");
  if (c.username && c.secret === undefined) throw new UsageError("no secret: pass --secret (or set DATADICT_SECRET) with --username");
  if (c.username && !c.projectId) throw new UsageError("no project: pass --project-id (or set DATADICT_PROJECT_ID)");
  if (c.username) c.credentials = { kind: "serviceAccount", username: c.username, secret: c.secret ?? "" };
  else c.credentials = { kind: "projectToken", token: c.token };
  return c;
}

/** Whether a connection that can read the dictionary (a server and a service account) is set. */
function hasServiceAccount(v) {
  const env = process.env;
  return Boolean((v["base-url"] ?? env.DATADICT_BASE_URL ?? v.endpoints) && (v.username ?? env.DATADICT_USERNAME));
}


const fmt = (n) => Math.round(n).toLocaleString("en-US");
const mb = (b) => (b / 1e6).toFixed(1);

function table(rows) {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => String(r[i]).length)));
  return rows.map((r) => r.map((c, i) => (i === 0 ? String(c).padEnd(widths[i]) : String(c).padStart(widths[i]))).join("  ")).join("\n");
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

module.exports = { UsageError, int, redact, readUserFile, connection, hasServiceAccount, fmt, mb, table, urlOf, schemaRequest, apiRequest };
