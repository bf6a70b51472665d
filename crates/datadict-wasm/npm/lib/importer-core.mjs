// The bulk importer of the npm package, shared by Node and browsers: reads a source in chunks,
// batches it with the wasm core (rules, positions, gzip), and drives the core's upload machine
// (`Upload`): it sends with `fetch` what the machine names, reports each answer back, and sets a
// timer when the machine has retries waiting. Platform specifics (opening a file path,
// compressing on Node's thread pool, the checkpoint file) come in through `platform`.
//
// Every rule (event checks, batch limits, the concurrency bound, retry decisions, response
// parsing, failed-record mapping, the words of a failed request) is the core's; this file only
// moves bytes, keeps the bodies and counts.

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
  /** The core's words for a status (0 for no answer) and the server's `detail`; `context` may
   * name the `url` and the `projectId`. */
  const explainStatus = (status, detail, context) => wasm.explainStatus(status || 0, detail == null ? "" : String(detail), context);
  /** The core's words for an answer's status and raw body text. */
  const explainAnswer = (status, body, context) => wasm.explainAnswer(status, body ?? "", context);

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
    const text = await res.text();
    if (!res.ok) {
      throw new ImportError(explainAnswer(res.status, text, { url, projectId: options.projectId }), { status: res.status, code: "http" });
    }
    return JSON.parse(text).results;
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
    // Positions come as one Float64Array per batch rather than 2,000 objects, and the upload
    // machine takes them in that form.
    const nextBatch = () => {
      const into = compressOutside ? rawBuffers.at(-1) : undefined;
      const batch = batcher.nextBatchPacked(into);
      if (into && batch?.body.buffer === into.buffer) rawBuffers.pop();
      return batch;
    };

    const checkpoint = options.checkpoint && !dryRun ? await platform.openCheckpoint(options.checkpoint, {
      kind, projectId, url, limits, dictionary: Boolean(dictionary),
      // A changed input file cuts other batches: its size and time of change are part of the identity.
      input: typeof source === "string" && platform.describeFile ? platform.describeFile(source) : null,
      // Profile updates were batched in JavaScript before the core's batcher took them over; a
      // checkpoint of those batches is refused rather than trusted to match the core's cuts.
      ...(kind === "profiles" ? { batcher: "core" } : {}),
    }) : null;

    // The core's upload machine: which batch to send, what an answer means, what waits for a
    // retry. The first batch that fails stops the import (a 401 or a 413 would fail them all).
    const upload = dryRun ? null : new wasm.Upload({
      concurrency,
      retryPolicy: options.retryPolicy,
      stopOnFailure: true,
      url,
      projectId,
      acknowledged: checkpoint?.acknowledged ?? [],
    });

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

    // Batches registered with the machine and not yet acknowledged: their bodies live here.
    const held = new Map();
    const inflight = new Set();
    let compressing = 0;
    // dispatch() and the end of the run wait here; every change of the machine's state wakes them.
    let waiters = [];
    const notify = () => {
      const w = waiters;
      waiters = [];
      for (const wake of w) wake();
    };
    const waitForChange = () => new Promise((wake) => waiters.push(wake));
    let fatal = null;
    // One timer, set for the machine's earliest waiting retry.
    let timer = null;
    let timerAt = Infinity;
    const controller = new AbortController();
    const signal = options.signal ? anySignal([options.signal, controller.signal]) : controller.signal;

    /** Stops the import with `e`: nothing more is sent, and requests in flight are aborted. */
    function stop(e) {
      if (fatal) return;
      fatal = e instanceof ImportError ? e : new ImportError(e?.message ?? String(e), { cause: e });
      upload?.cancel();
      clearTimeout(timer);
      controller.abort(fatal);
      notify();
    }
    const onAbort = () => stop(options.signal.reason ?? new Error("aborted"));
    if (options.signal?.aborted) onAbort();
    else options.signal?.addEventListener?.("abort", onAbort, { once: true });

    /** Sends whatever the machine names now, and sets the timer for its next retry. */
    function pump() {
      if (fatal || !upload) return;
      const now = Date.now();
      for (let seq = upload.nextSend(now); seq !== undefined; seq = upload.nextSend(now)) {
        const batch = held.get(seq);
        const p = send(batch).catch(stop).finally(() => {
          inflight.delete(p);
          pump();
        });
        inflight.add(p);
      }
      const wake = upload.nextWakeMs();
      if (wake !== undefined && wake < timerAt) {
        clearTimeout(timer);
        timerAt = wake;
        timer = setTimeout(() => {
          timerAt = Infinity;
          pump();
        }, Math.max(0, wake - Date.now()));
      }
      notify();
    }

    /** One request of `batch` (compressed first, once, on Node), its answer reported to the machine. */
    async function send(batch) {
      if (compressOutside && !batch.compressed) {
        const raw = batch.body;
        compressing += 1;
        let body;
        try {
          body = await platform.gzip(raw, gzipLevel);
        } finally {
          compressing -= 1;
          batch.body = null; // the raw body goes before the upload, not after it
          recycle(raw);
          notify();
        }
        Object.assign(batch, { body, gzipped: true, compressed: true });
      }
      if (fatal) return;
      const headers = wasm.importHeaders(credentials, batch.gzipped);
      if (kind === "profiles") headers["content-type"] = "application/json";
      let status = null;
      let text = "";
      let retryAfter = null;
      try {
        counts.requests += 1;
        const res = await fetchImpl(options)(url, { method: "POST", headers, body: batch.body, signal });
        status = res.status;
        text = await res.text();
        retryAfter = res.headers.get("retry-after");
        if (timings.firstResponseMs == null) timings.firstResponseMs = Date.now() - started;
      } catch (e) {
        if (fatal || options.signal?.aborted) return;
        status = null;
        text = String(e.cause?.code ?? e.message);
      }
      if (fatal) return;
      const out = upload.answer(batch.sequence, status, text, retryAfter, Date.now(), Math.random());
      if (out?.kind === "acknowledged") {
        // A 400 with failed_records is acknowledged too: its valid records were imported, and the
        // others are reported by line, never resent as they are.
        held.delete(batch.sequence);
        counts.sent += batch.events;
        counts.bytesSent += batch.body.length;
        counts.imported += out.imported;
        for (const f of out.failed) {
          addFailure({ line: f.pos?.line ?? 0, index: f.pos?.index ?? -1, source: "server", code: "rejected_by_server", field: f.failure.field ?? "", insertId: f.failure.$insert_id, message: f.failure.message });
        }
        if (checkpoint) await checkpoint.ack(batch.sequence, batch.events);
        progress();
      } else if (out?.kind === "retry") {
        counts.retried += 1;
        options.onRetry?.({ attempt: out.attempt, status: out.status ?? 0, delayMs: out.delayMs, sequence: batch.sequence });
      } else if (out?.kind === "failed") {
        held.delete(batch.sequence);
        // A batch cancelled because the import is stopping is not a failure of its own.
        if (out.reason !== "cancelled") throw new ImportError(out.message, { status: out.status ?? 0, code: out.reason });
      }
    }

    /** Hands a batch to the machine, then waits until it wants another (and a compression slot is free). */
    async function dispatch(batch) {
      counts.batches += 1;
      if (dryRun) return recycle(batch.body);
      if (fatal) throw fatal;
      // Sequence numbers of one batcher never repeat, so a batch not queued is one a checkpoint
      // shows as acknowledged.
      if (upload.register(batch.sequence, batch.uncompressedBytes, batch.positions) !== "queued") {
        counts.skipped += batch.events;
        return recycle(batch.body);
      }
      held.set(batch.sequence, batch);
      pump();
      while (!fatal && !(upload.wantsMore() && !(compressOutside && compressing >= compressLimit))) await waitForChange();
      if (fatal) throw fatal;
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
      while (!fatal && upload && !upload.isIdle()) await waitForChange();
      await Promise.allSettled(inflight);
      if (fatal) throw fatal;
      if (checkpoint) await checkpoint.complete();
      progress();
      return result();
    } catch (e) {
      // Reading stopped (or a batch failed, which already aborted the rest): nothing new is
      // sent, and the answers of requests in flight are still counted.
      upload?.cancel();
      clearTimeout(timer);
      await Promise.allSettled(inflight);
      const err = e instanceof ImportError ? e : new ImportError(e.message ?? String(e), { code: "failed", cause: e });
      err.result = result();
      throw err;
    } finally {
      clearTimeout(timer);
      options.signal?.removeEventListener?.("abort", onAbort);
      await checkpoint?.close();
      batcher.free?.();
      upload?.free?.();
    }
  }

  return {
    importEvents: (source, options) => run("events", source, options),
    importProfiles: (source, options) => run("profiles", source, options),
    fetchDictionary,
    explainStatus,
    explainAnswer,
  };
}

function anySignal(signals) {
  if (AbortSignal.any) return AbortSignal.any(signals);
  const c = new AbortController();
  for (const s of signals) s.addEventListener("abort", () => c.abort(s.reason), { once: true });
  return c.signal;
}
