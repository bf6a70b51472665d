// The bulk importer of the npm package, shared by Node and browsers: reads a source in chunks,
// batches it with the wasm core (rules, positions, gzip), and drives the core's upload machine
// (`Upload`): it sends with `fetch` what the machine names, reports each answer back, and sets a
// timer when the machine has retries waiting. Platform specifics (opening a file path,
// compressing on Node's thread pool, the checkpoint file) come in through `platform`.
//
// Every rule (event checks, batch limits, the concurrency bound, retry decisions, response
// parsing, failed-record mapping, the words of a failed request) is the core's; this file only
// moves bytes, keeps the bodies and counts.

import { ImportError, redactUrl, checkBaseUrl, wholeOption } from "./importer-options.mjs";
import { openSource, gunzipIfGzip, prettyObjectAsArray } from "./importer-sources.mjs";

export { ImportError, redactUrl, checkBaseUrl };

const DEFAULT_CONCURRENCY = 8;
const DEFAULT_GZIP_LEVEL = 6;
/// Failures kept in the result; past this only the count grows, so memory stays flat on a file
/// that is invalid throughout.
const DEFAULT_MAX_FAILURES = 10_000;
/// How long one request may take before it counts as a network error (and is retried).
const DEFAULT_REQUEST_TIMEOUT_MS = 60_000;

function credentialsOf(options) {
  if (options.credentials) return options.credentials;
  if (options.username || options.secret) return { kind: "serviceAccount", username: options.username ?? "", secret: options.secret ?? "" };
  if (options.token) return { kind: "projectToken", token: options.token };
  return null;
}

function endpointsOf(wasm, options) {
  if (options.endpoints) return options.endpoints;
  if (options.baseUrl) return wasm.singleHostEndpoints(checkBaseUrl(options.baseUrl));
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

  /** An operation's URL; `endpoints` or `region` of the wrong shape is a usage error. */
  const urlOf = (request) => {
    try {
      return wasm.operationUrl(request);
    } catch (e) {
      throw new ImportError(`the endpoints or region cannot give a URL (${e.message}); endpoints need \`app\` and \`ingest\` bases for default, eu and in, and \`migrate\`; region is default, eu or in`, { code: "bad_options", cause: e });
    }
  };

  /** GET the project's dictionary (every schema entry) from the schemas API. */
  async function fetchDictionary(options) {
    const credentials = credentialsOf(options);
    const endpoints = endpointsOf(wasm, options);
    const projectId = wholeOption(options.projectId, "projectId", { min: 1 });
    if (projectId == null) throw new ImportError("no project: pass `projectId` to read its dictionary", { code: "bad_options" });
    if (credentials?.kind === "projectToken") {
      throw new ImportError("reading the dictionary needs a service account (`username` and `secret`); a project token only imports", { code: "bad_options" });
    }
    const url = urlOf({ endpoints, region: options.region ?? "default", operation: "schemas", projectId });
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
    if (options === null || typeof options !== "object") {
      throw new ImportError(`the options must be an object (baseUrl, projectId, username, secret, ...), got ${options === null ? "null" : typeof options}`, { code: "bad_options" });
    }
    const dryRun = Boolean(options.dryRun);
    const strict = options.strict ?? true;
    const concurrency = wholeOption(options.concurrency, "concurrency", { min: 1, fallback: DEFAULT_CONCURRENCY });
    const gzipLevel = wholeOption(options.compressionLevel ?? options.gzipLevel, "compressionLevel", { max: 9, fallback: DEFAULT_GZIP_LEVEL });
    const maxFailures = wholeOption(options.maxFailures, "maxFailures", { fallback: DEFAULT_MAX_FAILURES });
    const requestTimeoutMs = wholeOption(options.requestTimeoutMs, "requestTimeoutMs", { min: 1, fallback: DEFAULT_REQUEST_TIMEOUT_MS });
    wholeOption(options.maxEventsPerRequest, "maxEventsPerRequest", { min: 1 });
    wholeOption(options.maxRequestBytes, "maxRequestBytes", { min: 1 });
    if (options.compressConcurrency != null) wholeOption(options.compressConcurrency, "compressConcurrency", { min: 1 });
    const limits = { ...(options.limits ?? {}) };
    if (options.maxEventsPerRequest) limits[kind === "events" ? "maxEventsPerRequest" : "maxProfileUpdatesPerRequest"] = options.maxEventsPerRequest;
    if (options.maxRequestBytes) limits.maxRequestBytes = options.maxRequestBytes;
    const credentials = credentialsOf(options);
    const projectId = wholeOption(options.projectId, "projectId", { min: 1, fallback: null });
    let url = null;
    let endpoints = null;
    if (!dryRun) {
      if (!credentials) throw new ImportError("no credentials: pass `username` and `secret` of a service account, or the project `token`", { code: "bad_options" });
      if (projectId == null && credentials.kind === "serviceAccount") throw new ImportError("no project: pass `projectId` with service-account credentials", { code: "bad_options" });
      endpoints = endpointsOf(wasm, options);
      const region = options.region ?? "default";
      if (kind === "events") {
        url = urlOf({ endpoints, region, operation: "import", projectId: projectId ?? 0, strict });
        if (projectId == null) {
          // A project token names its project itself (FACTS.md); the URL carries no project id.
          const u = new URL(url);
          u.searchParams.delete("project_id");
          url = u.toString();
        }
      } else {
        const params = new URLSearchParams({ strict: strict ? "1" : "0" });
        if (projectId != null) params.set("project_id", String(projectId));
        url = `${urlOf({ endpoints, region, operation: "engage" })}?${params}`;
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

    const counts = { read: 0, valid: 0, sent: 0, imported: 0, failed: 0, unconfirmed: 0, retried: 0, dropped: 0, skipped: 0, batches: 0, requests: 0, bytesRead: 0, bytesSent: 0 };
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

    /** Stops the import with `e`: nothing more is sent. Requests in flight are not aborted: their
     * answers are still counted, so the result says exactly what the server stored (each is
     * bounded by the request timeout). */
    function stop(e) {
      if (fatal) return;
      fatal = e instanceof ImportError ? e : new ImportError(e?.message ?? String(e), { cause: e });
      upload?.cancel();
      clearTimeout(timer);
      notify();
    }
    const onAbort = () => {
      const why = options.signal.reason?.message ?? String(options.signal.reason ?? "aborted");
      stop(new ImportError(`the import was aborted (${why}); requests already sent were awaited and are counted in the result`, { code: "aborted", cause: options.signal.reason }));
    };
    if (options.signal?.aborted) onAbort();
    else options.signal?.addEventListener?.("abort", onAbort, { once: true });

    /** Waits for every request in flight, including any started meanwhile. */
    async function settle() {
      while (inflight.size) await Promise.allSettled([...inflight]);
    }

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
      // Stopped while compressing: never sent, so nothing to count.
      if (fatal) return;
      const headers = wasm.importHeaders(credentials, batch.gzipped);
      if (kind === "profiles") headers["content-type"] = "application/json";
      let status = null;
      let text = "";
      let retryAfter = null;
      try {
        counts.requests += 1;
        const res = await fetchImpl(options)(url, { method: "POST", headers, body: batch.body, signal: timeoutSignal(requestTimeoutMs) });
        status = res.status;
        text = await res.text();
        retryAfter = res.headers.get("retry-after");
        if (timings.firstResponseMs == null) timings.firstResponseMs = Date.now() - started;
      } catch (e) {
        status = null;
        text = e?.name === "TimeoutError" ? `no answer within ${requestTimeoutMs / 1000} s (requestTimeoutMs)` : String(e?.cause?.code ?? e?.message ?? e);
      }
      // Reported even after a stop: an acknowledged answer still counts.
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
        // What the answer did count (a short count), and what no answer confirmed: a 2xx that
        // said less (or nothing), or no answer at all, may have stored the rest.
        counts.imported += out.imported;
        for (const f of out.failed) {
          addFailure({ line: f.pos?.line ?? 0, index: f.pos?.index ?? -1, source: "server", code: "rejected_by_server", field: f.failure.field ?? "", insertId: f.failure.$insert_id, message: f.failure.message });
        }
        if (out.status == null || (out.status >= 200 && out.status < 300)) {
          const refused = new Set(out.failed.map((f) => f.failure.index)).size;
          // Sent, and answered (or not) without a count of them: sent = imported + refused + unconfirmed.
          counts.sent += out.records;
          counts.unconfirmed += Math.max(0, out.records - out.imported - refused);
        }
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

    /** Runs a step of the batcher; its framing error (the input is not NDJSON or a JSON array)
     * stops the import as the input's fault. */
    const framed = (step) => {
      try {
        step();
      } catch (e) {
        throw new ImportError(`the input cannot be read: ${e.message}`, { code: "bad_input", cause: e });
      }
    };

    const drain = async () => {
      collectRejected();
      for (let b = nextBatch(); b; b = nextBatch()) await dispatch(b);
    };

    try {
      opened = await openSource(source, platform);
      const plain = gunzipIfGzip(opened.chunks, platform);
      for await (const chunk of options.format && options.format !== "auto" ? plain : prettyObjectAsArray(plain)) {
        if (fatal) break;
        framed(() => batcher.push(chunk));
        await drain();
        progress();
      }
      if (!fatal) {
        framed(() => batcher.finish());
        await drain();
      }
      while (!fatal && upload && !upload.isIdle()) await waitForChange();
      await settle();
      if (fatal) throw fatal;
      if (checkpoint) await checkpoint.complete();
      progress();
      return result();
    } catch (e) {
      // Reading stopped (or a batch failed, which already aborted the rest): nothing new is
      // sent, and the answers of requests in flight are still counted.
      upload?.cancel();
      clearTimeout(timer);
      await settle();
      const err = fatal ?? (e instanceof ImportError ? e : new ImportError(e.message ?? String(e), { code: "failed", cause: e }));
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

/// A signal that aborts after `ms` with a `TimeoutError`.
function timeoutSignal(ms) {
  if (AbortSignal.timeout) return AbortSignal.timeout(ms);
  const c = new AbortController();
  setTimeout(() => c.abort(new DOMException("timed out", "TimeoutError")), ms);
  return c.signal;
}
