// Types of the importer (`importEvents`, `importProfiles`, `fetchDictionary`).

import type { IssueSummary, SchemaEntry, StatusContext } from "../node/datadict_wasm";

/** A service account (every operation) or the project token (imports only). */
export type ImportCredentials =
  | { kind: "serviceAccount"; username: string; secret: string }
  | { kind: "projectToken"; token: string };

/** What an import reads: a file path (Node), the whole input as bytes (a Buffer), a Node readable,
 * an (async) iterable of records or of byte chunks, a Blob/File or a ReadableStream of bytes.
 * NDJSON or one JSON array, or either gzipped. */
export type ImportSource =
  | string
  | URL
  | Uint8Array
  | ArrayBuffer
  | Blob
  | ReadableStream<Uint8Array>
  | AsyncIterable<Uint8Array | string | Record<string, unknown>>
  | Iterable<Uint8Array | string | Record<string, unknown>>;

export interface ImportProgress {
  read: number;
  valid: number;
  sent: number;
  imported: number;
  failed: number;
  retried: number;
  skipped: number;
  bytesRead: number;
  /** Known for files and Blobs. */
  totalBytes: number | null;
  elapsedMs: number;
}

export interface ImportOptions {
  /** A datadict server's origin, e.g. `http://127.0.0.1:8080`. */
  baseUrl?: string | URL;
  /** Every region's bases (`{app: {default, eu, in}, ingest: {...}, migrate}`); with `region`. */
  endpoints?: unknown;
  region?: "default" | "eu" | "in";
  projectId?: number | string;
  /** Service-account credentials, or use `username`/`secret`, or `token`. */
  credentials?: ImportCredentials;
  username?: string;
  secret?: string;
  token?: string;
  /** Strict mode (default true): invalid records are reported by line. */
  strict?: boolean;
  /** gzip level 0–9 (default 6); 0 sends uncompressed bodies. */
  compressionLevel?: number;
  /** Requests in flight at once (default 8). */
  concurrency?: number;
  /** Node: bodies compressed at once on the thread pool (default: the cores, at most the pool's
   * 4 threads and `concurrency`). Each holds an uncompressed body until it is compressed. */
  compressConcurrency?: number;
  /** Records per request (default 2,000). */
  maxEventsPerRequest?: number;
  /** Uncompressed bytes per request (default 10 MB). */
  maxRequestBytes?: number;
  /** Any other limit of the core (`defaultLimits()` lists them). */
  limits?: Record<string, unknown>;
  /** Validate and batch, send nothing. */
  dryRun?: boolean;
  /** Schema entries to check events against, or `true` to fetch them from the schemas API. */
  dictionary?: unknown[] | true;
  /** The metadata namespace of the dictionary (default `com.vendor`). */
  namespace?: string;
  /** `"ndjson"`, `"jsonarray"` or `"auto"` (default). */
  format?: "auto" | "ndjson" | "jsonarray";
  /** Node: a file recording acknowledged batches; a rerun skips them. */
  checkpoint?: string;
  /** Overrides of the core's retry policy (`initialBackoffMs`, `maxBackoffMs`, `jitterMinMs`,
   * `jitterMaxMs`, `maxAttempts`, `retryStatuses`). */
  retryPolicy?: Record<string, unknown>;
  /** Failures kept in the result (default 10,000); the count is always complete. */
  maxFailures?: number;
  /** How long one request may take before it counts as a network error and is retried
   * (default 60,000 ms). */
  requestTimeoutMs?: number;
  onProgress?: (progress: ImportProgress) => void;
  onRetry?: (info: { attempt: number; status: number; delayMs: number; sequence: number }) => void;
  /** Stops the import: nothing more is sent, requests already sent are awaited and counted, and
   * the import rejects with an `ImportError` of code `aborted`. */
  signal?: AbortSignal;
  fetch?: typeof fetch;
}

export interface ImportFailure {
  /** 1-based line of the input where the record starts. */
  line: number;
  /** 0-based record ordinal in the input. */
  index: number;
  /** `client`: left out by the rules before sending; `server`: in the 400's failed_records. */
  source: "client" | "server";
  code: string;
  field: string;
  insertId?: string;
  message: string;
}

export interface ImportResult {
  counts: {
    read: number;
    valid: number;
    sent: number;
    imported: number;
    failed: number;
    /** Records sent whose storage the server neither confirmed nor refused: a success that
     * counted fewer (or said nothing), or no answer before the import stopped. */
    unconfirmed: number;
    retried: number;
    dropped: number;
    /** Records of batches a checkpoint showed as already acknowledged. */
    skipped: number;
    batches: number;
    requests: number;
    bytesRead: number;
    bytesSent: number;
  };
  failures: ImportFailure[];
  failuresTruncated: boolean;
  /** Issues tallied by code, event (for profile updates: operation) and property. */
  summary: IssueSummary;
  timings: { startedAt: string; firstResponseMs: number | null; totalMs: number };
  dryRun: boolean;
}

/** What an import rejects with. CommonJS reaches the class through `(await loadImporter()).ImportError`. */
export declare class ImportError extends Error {
  constructor(message: string, options?: { status?: number; code?: string; result?: ImportResult; cause?: unknown });
  name: "ImportError";
  /** The HTTP status, 0 when there was none (a network failure, a refused option). */
  status: number;
  /** `bad_options`, `bad_source`, `bad_record` and `bad_checkpoint` for the caller's input;
   * `aborted`; else why the batch failed (`unauthorized`, `too_large`, `not_retryable`,
   * `too_many_attempts`, `invalid_request`, `unexpected_answer`, `short_count`, `http`, `network`). */
  code: string;
  /** The counts up to the stop. */
  result?: ImportResult;
}

export declare function importEvents(source: ImportSource, options?: ImportOptions): Promise<ImportResult>;
export declare function importProfiles(source: ImportSource, options?: ImportOptions): Promise<ImportResult>;
export declare function fetchDictionary(options: ImportOptions): Promise<SchemaEntry[]>;

/** The importer's functions and the `ImportError` class, once loaded (CommonJS loads the shared
 * ES module on first use). */
export declare function loadImporter(): Promise<{
  importEvents: typeof importEvents;
  importProfiles: typeof importProfiles;
  fetchDictionary: typeof fetchDictionary;
  explainStatus: (status: number | null, detail?: string | null, context?: StatusContext) => string;
  explainAnswer: (status: number, body: string, context?: StatusContext) => string;
  ImportError: typeof ImportError;
}>;
