// The bulk importer of the npm package, shared by Node and browsers: reads a source in chunks,
// batches it with the wasm core (rules, positions, gzip), uploads batches with `fetch` under
// bounded concurrency, and follows the core's retry policy. Platform specifics (opening a file
// path, compressing on Node's thread pool, the checkpoint file) come in through `platform`.
//
// Every rule (event checks, batch limits, retry decisions, response parsing, failed-record
// mapping) is the core's; this file only moves bytes and counts.

const DEFAULT_CONCURRENCY = 8;
const DEFAULT_GZIP_LEVEL = 6;
/// Failures kept in the result; past this only the count grows, so memory stays flat on a file
/// that is invalid throughout.
const DEFAULT_MAX_FAILURES = 10_000;
/// Records of an object source are serialized into chunks of about this many bytes.
const RECORD_CHUNK_BYTES = 256 * 1024;

/** An import that stopped: `status` is the HTTP status (0 for a network failure), `result` the
 * counts up to the stop. */
export class ImportError extends Error {
  constructor(message, { status = 0, code = "failed", result, cause } = {}) {
    super(message, cause ? { cause } : undefined);
    this.name = "ImportError";
    this.status = status;
    this.code = code;
    this.result = result;
  }
}

/** Words for a status the user can act on. */
export function explainStatus(status, detail, context = {}) {
  const where = context.url ? ` (${context.url})` : "";
  const extra = detail ? `: ${detail}` : "";
  switch (status) {
    case 0:
      return `cannot reach the server${where}${extra}; check the base URL and that the server is running`;
    case 401:
      return `the server rejected the credentials (401)${extra}; check the service-account username and secret, or the project token`;
    case 403:
      return `the credentials are valid but lack permission on project ${context.projectId ?? "?"} (403)${extra}; ask a project owner for a role that allows this`;
    case 413:
      return `a request was too large for the server (413)${extra}; lower the batch limits (maxRequestBytes / maxEventsPerRequest, CLI --batch-bytes / --batch-size)`;
    case 429:
      return `the server kept answering 429 (rate limited) after every retry${extra}; retry later or lower the concurrency`;
    default:
      return `the server answered ${status}${extra}`;
  }
}

function sleep(ms, signal) {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason ?? new Error("aborted"));
    const t = setTimeout(resolve, ms);
    signal?.addEventListener?.("abort", () => {
      clearTimeout(t);
      reject(signal.reason ?? new Error("aborted"));
    }, { once: true });
  });
}

function isBytes(x) {
  return x instanceof Uint8Array || x instanceof ArrayBuffer || ArrayBuffer.isView(x);
}

function toBytes(x) {
  if (x instanceof Uint8Array) return x;
  if (x instanceof ArrayBuffer) return new Uint8Array(x);
  if (ArrayBuffer.isView(x)) return new Uint8Array(x.buffer, x.byteOffset, x.byteLength);
  return new TextEncoder().encode(String(x));
}

async function* readStreamChunks(stream) {
  const reader = stream.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      yield toBytes(value);
    }
  } finally {
    reader.releaseLock?.();
  }
}

/// Turns any accepted source into `{chunks: AsyncIterable<Uint8Array>, totalBytes?}`.
async function openSource(source, platform) {
  if (typeof source === "string" || (typeof URL !== "undefined" && source instanceof URL)) {
    if (!platform.openFile) throw new ImportError("a file path needs Node; in a browser pass a Blob or a ReadableStream", { code: "bad_source" });
    return platform.openFile(source);
  }
  if (source && typeof source.stream === "function" && typeof source.size === "number") {
    return { chunks: readStreamChunks(source.stream()), totalBytes: source.size };
  }
  if (source && typeof source.getReader === "function") {
    return { chunks: readStreamChunks(source) };
  }
  const iterable = source?.[Symbol.asyncIterator] ? source : source?.[Symbol.iterator] && typeof source !== "string" ? source : null;
  if (!iterable) {
    throw new ImportError("the source must be a file path, a Node readable, an (async) iterable of records or byte chunks, a Blob or a ReadableStream", { code: "bad_source" });
  }
  return { chunks: normalizeIterable(iterable) };
}

/// Byte chunks pass through; records (objects) become NDJSON, one per line, so that line N of the
/// report is the N-th record.
async function* normalizeIterable(iterable) {
  const encoder = new TextEncoder();
  let pending = [];
  let size = 0;
  for await (const item of iterable) {
    if (isBytes(item)) {
      if (pending.length) {
        yield encoder.encode(pending.join(""));
        pending = [];
        size = 0;
      }
      yield toBytes(item);
    } else if (typeof item === "string") {
      yield encoder.encode(item);
    } else {
      const line = JSON.stringify(item) + "\n";
      pending.push(line);
      size += line.length;
      if (size >= RECORD_CHUNK_BYTES) {
        yield encoder.encode(pending.join(""));
        pending = [];
        size = 0;
      }
    }
  }
  if (pending.length) yield encoder.encode(pending.join(""));
}

function credentialsOf(options) {
  if (options.credentials) return options.credentials;
  if (options.username || options.secret) return { kind: "serviceAccount", username: options.username ?? "", secret: options.secret ?? "" };
  if (options.token) return { kind: "projectToken", token: options.token };
  return null;
}

function endpointsOf(wasm, options) {
  if (options.endpoints) return options.endpoints;
  if (options.baseUrl) return wasm.singleHostEndpoints(String(options.baseUrl));
  throw new ImportError("no server given: pass `baseUrl` (a datadict server's origin) or `endpoints` (every region's bases) with `region`", { code: "bad_options" });
}

/** Builds the API over a loaded wasm module and a platform (Node or browser). */
export function makeImporter(wasm, platform = {}) {
  const fetchImpl = (options) => options.fetch ?? platform.fetch ?? globalThis.fetch;

  /** GET the project's dictionary (every schema entry) from the schemas API. */
  async function fetchDictionary(options) {
    const credentials = credentialsOf(options);
    const endpoints = endpointsOf(wasm, options);
    const url = wasm.operationUrl({ endpoints, region: options.region ?? "default", operation: "schemas", projectId: Number(options.projectId) });
    const headers = { accept: "application/json" };
    if (credentials) headers.authorization = wasm.authorizationHeader(credentials);
    let res;
    try {
      res = await fetchImpl(options)(url, { headers, signal: options.signal });
    } catch (e) {
      throw new ImportError(explainStatus(0, e.cause?.code ?? e.message, { url }), { status: 0, code: "network", cause: e });
    }
    const body = new Uint8Array(await res.arrayBuffer());
    if (!res.ok) {
      const detail = safeError(body);
      throw new ImportError(explainStatus(res.status, detail, { url, projectId: options.projectId }), { status: res.status, code: "http" });
    }
    return JSON.parse(new TextDecoder().decode(body)).results;
  }

  async function run(kind, source, options = {}) {
    const started = Date.now();
    const dryRun = Boolean(options.dryRun);
    const strict = options.strict ?? true;
    const concurrency = Math.max(1, Number(options.concurrency ?? DEFAULT_CONCURRENCY));
    const gzipLevel = options.compressionLevel ?? options.gzipLevel ?? DEFAULT_GZIP_LEVEL;
    const maxFailures = options.maxFailures ?? DEFAULT_MAX_FAILURES;
    const limits = { ...(options.limits ?? {}) };
    if (options.maxEventsPerRequest) limits[kind === "events" ? "maxEventsPerRequest" : "maxProfileUpdatesPerRequest"] = options.maxEventsPerRequest;
    if (options.maxRequestBytes) limits.maxRequestBytes = options.maxRequestBytes;
    const credentials = credentialsOf(options);
    const projectId = options.projectId == null ? null : Number(options.projectId);
    let url = null;
    let endpoints = null;
    if (!dryRun) {
      if (!credentials) throw new ImportError("no credentials: pass `username` and `secret` of a service account, or the project `token`", { code: "bad_options" });
      if (projectId == null && credentials.kind === "serviceAccount") throw new ImportError("no project: pass `projectId` with service-account credentials", { code: "bad_options" });
      endpoints = endpointsOf(wasm, options);
      const region = options.region ?? "default";
      if (kind === "events") {
        url = wasm.operationUrl({ endpoints, region, operation: "import", projectId: projectId ?? 0, strict });
        if (projectId == null) {
          // A project token names its project itself (FACTS.md); the URL carries no project id.
          const u = new URL(url);
          u.searchParams.delete("project_id");
          url = u.toString();
        }
      } else {
        const params = new URLSearchParams({ strict: strict ? "1" : "0" });
        if (projectId != null) params.set("project_id", String(projectId));
        url = `${wasm.operationUrl({ endpoints, region, operation: "engage" })}?${params}`;
      }
    }

    let dictionary = options.dictionary;
    if (kind === "events" && (dictionary === true || dictionary === "fetch")) {
      dictionary = await fetchDictionary(options);
    }
    if (!Array.isArray(dictionary)) dictionary = undefined;

    // On Node the body is compressed on the thread pool, in parallel with the batching.
    const compressOutside = Boolean(platform.gzip) && options.compressIn !== "wasm" && gzipLevel != null && gzipLevel > 0;
    // Compressing holds a batch's raw body (about 1 MB) and a thread of Node's pool, a request in
    // flight only the compressed body (a quarter of that): fewer batches compress at once than
    // are in flight, as many as there are cores to run them.
    const compressLimit = Math.max(1, Math.min(concurrency, Number(options.compressConcurrency ?? platform.parallelism ?? concurrency)));
    const batcherOptions = { gzipLevel: compressOutside || gzipLevel === 0 ? null : gzipLevel, nowMs: Date.now(), limits, dictionary, namespace: options.namespace };
    if (options.format) batcherOptions.format = options.format;
    if (kind === "profiles") {
      // `/engage` updates go through the core's batcher too (its profile rules and limits); a
      // service account authenticates the request, so `$token` may be left out.
      Object.assign(batcherOptions, { kind: "profileUpdates", profileToken: "optional", dictionary: undefined });
    }
    const batcher = new wasm.Batcher(batcherOptions);
    // Raw bodies that are compressed on the thread pool are needed only until then: their
    // buffers are recycled (one per compression slot and one in hand), so a run allocates a few
    // instead of one per batch, which the collector would free only now and then.
    const rawBuffers = [];
    const recycle = (body) => {
      if (compressOutside && body && rawBuffers.length <= compressLimit) rawBuffers.push(new Uint8Array(body.buffer));
    };
    // Positions as one Float64Array per batch rather than 2,000 objects (older modules lack it).
    const nextBatch = batcher.nextBatchPacked
      ? () => {
          const into = compressOutside ? rawBuffers.at(-1) : undefined;
          const batch = batcher.nextBatchPacked(into);
          if (into && batch?.body.buffer === into.buffer) rawBuffers.pop();
          return batch;
        }
      : () => batcher.nextBatch();

    const checkpoint = options.checkpoint && !dryRun ? await platform.openCheckpoint(options.checkpoint, {
      kind, projectId, url, limits, dictionary: Boolean(dictionary),
      // A changed input file cuts other batches: its size and time of change are part of the identity.
      input: typeof source === "string" && platform.describeFile ? platform.describeFile(source) : null,
      // Profile updates were batched in JavaScript before the core's batcher took them over; a
      // checkpoint of those batches is refused rather than trusted to match the core's cuts.
      ...(kind === "profiles" ? { batcher: "core" } : {}),
    }) : null;

    const counts = { read: 0, valid: 0, sent: 0, imported: 0, failed: 0, retried: 0, dropped: 0, skipped: 0, batches: 0, requests: 0, bytesRead: 0, bytesSent: 0 };
    const failures = [];
    const addFailure = (f) => {
      counts.failed += 1;
      if (failures.length < maxFailures) failures.push(f);
    };
    let opened;
    const timings = { startedAt: new Date(started).toISOString(), firstResponseMs: null, totalMs: 0 };
    const result = () => {
      const stats = batcher.stats();
      counts.read = stats.records;
      counts.valid = stats.batched;
      counts.dropped = stats.dropped ?? 0;
      counts.bytesRead = stats.inputBytes;
      timings.totalMs = Date.now() - started;
      return {
        counts: { ...counts },
        failures: failures.slice().sort((a, b) => a.line - b.line || a.index - b.index),
        failuresTruncated: counts.failed > failures.length,
        summary: batcher.summary(),
        timings: { ...timings },
        dryRun,
      };
    };
    const progress = () => {
      if (!options.onProgress) return;
      const stats = batcher.stats();
      options.onProgress({
        read: stats.records,
        valid: stats.batched,
        sent: counts.sent,
        imported: counts.imported,
        failed: counts.failed,
        retried: counts.retried,
        skipped: counts.skipped,
        bytesRead: stats.inputBytes,
        totalBytes: opened?.totalBytes ?? null,
        elapsedMs: Date.now() - started,
      });
    };

    const collectRejected = () => {
      for (const r of batcher.takeRejected()) {
        for (const issue of r.issues.length ? r.issues : [{ path: "", code: "invalid", message: "invalid record" }]) {
          addFailure({ line: r.pos.line, index: r.pos.index, source: "client", code: issue.code, field: issue.path, message: issue.message });
          break; // one entry per record; the first issue names it, the summary has them all
        }
      }
    };

    const inflight = new Set();
    let compressing = 0;
    // dispatch() waits here for a free request or compression slot; send() wakes it.
    let waiters = [];
    const notify = () => {
      const w = waiters;
      waiters = [];
      for (const wake of w) wake();
    };
    let fatal = null;
    const controller = new AbortController();
    const signal = options.signal ? anySignal([options.signal, controller.signal]) : controller.signal;

    async function send(batch) {
      let body = batch.body;
      let gzipped = batch.gzipped;
      if (compressOutside) {
        compressing += 1;
        try {
          body = await platform.gzip(body, gzipLevel);
        } finally {
          compressing -= 1;
          recycle(batch.body);
          batch.body = null; // the raw body goes before the upload, not after it
          notify();
        }
        gzipped = true;
      }
      const headers = wasm.importHeaders(credentials, gzipped);
      if (kind === "profiles") headers["content-type"] = "application/json";
      for (let attempt = 1; ; attempt++) {
        if (fatal) return;
        let status = null;
        let text = "";
        let retryAfterMs = null;
        try {
          counts.requests += 1;
          const res = await fetchImpl(options)(url, { method: "POST", headers, body, signal });
          status = res.status;
          text = await res.text();
          const ra = res.headers.get("retry-after");
          if (ra != null) retryAfterMs = wasm.parseRetryAfter(ra, Date.now()) ?? null;
          if (timings.firstResponseMs == null) timings.firstResponseMs = Date.now() - started;
        } catch (e) {
          if (fatal || options.signal?.aborted) return;
          status = null;
          text = String(e.cause?.code ?? e.message);
        }
        const decision = wasm.retryDecision(attempt, status, retryAfterMs, Math.random(), options.retryPolicy);
        const response = status == null ? null : wasm.parseImportResponse(status, text);
        if (decision.action === "done" || (decision.action === "giveUp" && decision.reason === "invalid_request" && response?.failed_records)) {
          // A 400 with failed_records: the valid records were imported; the others are reported,
          // never resent as they are.
          counts.sent += batch.events;
          counts.bytesSent += body.length;
          counts.imported += response.num_records_imported ?? (status === 200 ? batch.events : 0);
          if (response.failed_records?.length) {
            for (const f of wasm.mapFailedRecords(batch.positions, response)) {
              addFailure({ line: f.pos?.line ?? 0, index: f.pos?.index ?? -1, source: "server", code: "rejected_by_server", field: f.failure.field ?? "", insertId: f.failure.$insert_id, message: f.failure.message });
            }
          }
          if (checkpoint) await checkpoint.ack(batch.sequence, batch.events);
          progress();
          return;
        }
        if (decision.action === "retry") {
          counts.retried += 1;
          options.onRetry?.({ attempt, status: status ?? 0, delayMs: decision.delayMs, sequence: batch.sequence });
          await sleep(decision.delayMs, signal);
          continue;
        }
        const detail = status == null ? text : response?.error ?? "";
        const s = status ?? 0;
        throw new ImportError(explainStatus(s === 400 ? 400 : s, detail, { url, projectId }), { status: s, code: decision.reason ?? "http" });
      }
    }

    async function dispatch(batch) {
      counts.batches += 1;
      if (dryRun) return recycle(batch.body);
      if (checkpoint?.has(batch.sequence)) {
        counts.skipped += batch.events;
        return recycle(batch.body);
      }
      while (inflight.size >= concurrency || (compressOutside && compressing >= compressLimit)) {
        await new Promise((wake) => waiters.push(wake));
        if (fatal) throw fatal;
      }
      if (fatal) throw fatal;
      const p = send(batch).catch((e) => {
        if (!fatal) {
          fatal = e instanceof ImportError ? e : new ImportError(e.message, { cause: e });
          controller.abort(fatal);
        }
      }).finally(() => {
        inflight.delete(p);
        notify();
      });
      inflight.add(p);
    }

    const drain = async () => {
      collectRejected();
      for (let b = nextBatch(); b; b = nextBatch()) await dispatch(b);
    };

    try {
      opened = await openSource(source, platform);
      for await (const chunk of opened.chunks) {
        if (fatal) break;
        batcher.push(chunk);
        await drain();
        progress();
      }
      if (!fatal) {
        batcher.finish();
        await drain();
      }
      await Promise.all(inflight);
      if (fatal) throw fatal;
      if (checkpoint) await checkpoint.complete();
      progress();
      return result();
    } catch (e) {
      await Promise.allSettled(inflight);
      const err = e instanceof ImportError ? e : new ImportError(e.message ?? String(e), { code: "failed", cause: e });
      err.result = result();
      throw err;
    } finally {
      await checkpoint?.close();
      batcher.free?.();
    }
  }

  return {
    importEvents: (source, options) => run("events", source, options),
    importProfiles: (source, options) => run("profiles", source, options),
    fetchDictionary,
  };
}

function safeError(body) {
  const text = new TextDecoder().decode(body);
  try {
    return JSON.parse(text).error ?? text.slice(0, 200);
  } catch {
    return text.slice(0, 200);
  }
}

function anySignal(signals) {
  if (AbortSignal.any) return AbortSignal.any(signals);
  const c = new AbortController();
  for (const s of signals) s.addEventListener("abort", () => c.abort(s.reason), { once: true });
  return c.signal;
}
