// What an import reads: a file path (through the platform), bytes, a Blob, a ReadableStream or an
// (async) iterable of records or byte chunks, turned into one stream of byte chunks; a gzip input
// is gunzipped as it is read.

import { ImportError } from "./importer-options.mjs";

/// Records of an object source are serialized into chunks of about this many bytes.
const RECORD_CHUNK_BYTES = 256 * 1024;
function isBytes(x) {
  return x instanceof Uint8Array || x instanceof ArrayBuffer || ArrayBuffer.isView(x);
}

function toBytes(x) {
  if (x instanceof Uint8Array) return x;
  if (x instanceof ArrayBuffer) return new Uint8Array(x);
  if (ArrayBuffer.isView(x)) return new Uint8Array(x.buffer, x.byteOffset, x.byteLength);
  return new TextEncoder().encode(String(x));
}

/// The first bytes of a gzip stream.
const isGzip = (bytes) => bytes.length >= 2 && bytes[0] === 0x1f && bytes[1] === 0x8b;

/// Gunzips a gzip source (a `.gz` file, say) as it is read: on Node with zlib, in browsers with
/// `DecompressionStream`; the first chunk tells. Any other source passes through.
export async function* gunzipIfGzip(chunks, platform) {
  const it = chunks[Symbol.asyncIterator]();
  let first = await it.next();
  while (!first.done && first.value.length === 0) first = await it.next();
  if (first.done) return;
  const rest = (async function* () {
    yield first.value;
    for (let r = await it.next(); !r.done; r = await it.next()) yield r.value;
  })();
  if (!isGzip(first.value)) {
    yield* rest;
    return;
  }
  if (platform.gunzipChunks) {
    yield* platform.gunzipChunks(rest);
  } else if (typeof DecompressionStream === "function") {
    const stream = new ReadableStream({
      async pull(controller) {
        const r = await rest.next();
        if (r.done) controller.close();
        else controller.enqueue(r.value);
      },
    }).pipeThrough(new DecompressionStream("gzip"));
    yield* readStreamChunks(stream);
  } else {
    throw new ImportError("the input is gzip-compressed and this platform cannot gunzip it: gunzip it first", { code: "bad_source" });
  }
}

/// Whether `bytes` start (after a BOM and blank space) with a line holding a lone `{`: one JSON
/// value spread over lines, as `JSON.stringify(event, null, 2)` writes it, which NDJSON cannot be.
function startsWithLoneBrace(bytes) {
  let i = bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 3 : 0;
  while (i < bytes.length && (bytes[i] === 0x20 || bytes[i] === 0x09 || bytes[i] === 0x0a || bytes[i] === 0x0d)) i += 1;
  if (bytes[i] !== 0x7b) return false;
  for (i += 1; i < bytes.length && bytes[i] !== 0x0a; i += 1) {
    if (bytes[i] !== 0x20 && bytes[i] !== 0x09 && bytes[i] !== 0x0d) return false;
  }
  return i < bytes.length;
}

/// A pretty-printed JSON event (line 1 a lone `{`) is read as a JSON array of it, whose records
/// may span lines; line numbers stay those of the input. Several such objects in a row then get a
/// framing error that names where the second starts.
export async function* prettyObjectAsArray(chunks) {
  let first = true;
  let wrapped = false;
  for await (const chunk of chunks) {
    if (first && chunk.length) {
      first = false;
      if (startsWithLoneBrace(chunk)) {
        wrapped = true;
        const bom = chunk[0] === 0xef && chunk[1] === 0xbb && chunk[2] === 0xbf ? 3 : 0;
        yield new Uint8Array([0x5b]);
        yield chunk.subarray(bom);
        continue;
      }
    }
    yield chunk;
  }
  if (wrapped) yield new Uint8Array([0x0a, 0x5d]);
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
export async function openSource(source, platform) {
  if (typeof source === "string" || (typeof URL !== "undefined" && source instanceof URL)) {
    if (!platform.openFile) throw new ImportError("a file path needs Node; in a browser pass a Blob or a ReadableStream", { code: "bad_source" });
    return platform.openFile(source);
  }
  if (isBytes(source)) {
    // A Buffer or typed array holds the whole input (not one record per element).
    const bytes = toBytes(source);
    return { chunks: (async function* () { yield bytes; })(), totalBytes: bytes.length };
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
  let index = -1;
  for await (const item of iterable) {
    index += 1;
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
      let line;
      try {
        line = JSON.stringify(item) + "\n";
      } catch (e) {
        // A record numbered like the report's lines: record i is line i + 1 of the NDJSON.
        throw new ImportError(
          `record ${index} of the source (line ${index + 1}) cannot be written as JSON (${e.message}); convert BigInts to numbers or strings and remove circular references`,
          { code: "bad_record", cause: e },
        );
      }
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

