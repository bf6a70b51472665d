// Node's side of the importer: file paths as sources, gzip on libuv's thread pool (so compression
// runs beside the wasm batching on another core), and the checkpoint file of acknowledged batches.
"use strict";
const fs = require("node:fs");
const os = require("node:os");
const zlib = require("node:zlib");

const READ_CHUNK_BYTES = 256 * 1024;
const CHECKPOINT_VERSION = 1;
/// The most of zlib's output buffer: with the default 16 KiB, every piece of output costs a
/// callback on the main thread (a fifth of the importer's time in a profile); a batch compresses
/// to a few hundred KiB.
const GZIP_CHUNK_BYTES = 512 * 1024;

function openFile(path) {
  const totalBytes = fs.statSync(path).size;
  return { chunks: readFile(path), totalBytes };
}

/// The file's bytes in chunks read into two buffers used in turn: the next read runs while the
/// caller works on the current chunk, and no chunk is allocated per read (a stream allocates a
/// new buffer for each, garbage that grows the heap's external memory between collections).
/// A chunk is valid until the caller asks for the next one (the batcher copies it at once).
async function* readFile(path) {
  const handle = await fs.promises.open(path, "r");
  let pending = null;
  try {
    const buffers = [Buffer.allocUnsafe(READ_CHUNK_BYTES), Buffer.allocUnsafe(READ_CHUNK_BYTES)];
    let turn = 0;
    pending = handle.read(buffers[turn], 0, READ_CHUNK_BYTES, null);
    for (;;) {
      const { bytesRead, buffer } = await pending;
      pending = null;
      if (bytesRead === 0) return;
      turn ^= 1;
      pending = handle.read(buffers[turn], 0, READ_CHUNK_BYTES, null);
      yield buffer.subarray(0, bytesRead);
    }
  } finally {
    // A caller that stops early (a failed import) leaves a read running: it ends before the close.
    await pending?.catch(() => {});
    await handle.close();
  }
}

function describeFile(path) {
  const st = fs.statSync(path);
  return { size: st.size, mtimeMs: Math.trunc(st.mtimeMs) };
}

function gzip(bytes, level) {
  // One output buffer a little larger than the compressed body (JSON events compress to a
  // quarter or less), so that the body it becomes holds no idle half megabyte; a body that
  // compresses worse takes a second buffer.
  const chunkSize = Math.min(GZIP_CHUNK_BYTES, Math.max(64 * 1024, Math.ceil((bytes.length * 0.35) / 4096) * 4096));
  return new Promise((resolve, reject) =>
    zlib.gzip(bytes, { level, chunkSize }, (err, out) => (err ? reject(err) : resolve(new Uint8Array(out.buffer, out.byteOffset, out.length)))));
}

/// Gunzips chunks as they come (a `.gz` input file); several gzip members in a row are read as
/// one stream, as `gunzip` reads them.
async function* gunzipChunks(chunks) {
  const { Readable } = require("node:stream");
  // The source may reuse its buffers once asked for the next chunk: each is copied first.
  const input = Readable.from((async function* () {
    for await (const c of chunks) yield Buffer.from(c);
  })());
  const gunzip = zlib.createGunzip();
  input.on("error", (e) => gunzip.destroy(e));
  input.pipe(gunzip);
  try {
    for await (const out of gunzip) yield out;
  } catch (e) {
    throw new Error(`the input starts as gzip but cannot be gunzipped (${e.message}); check the file, or gunzip it yourself to see where it breaks`);
  }
}

/// Compressions that run at once: one per core, at most the pool's threads (4 unless
/// UV_THREADPOOL_SIZE says otherwise).
const parallelism = Math.max(1, Math.min(os.availableParallelism?.() ?? os.cpus().length, Number(process.env.UV_THREADPOOL_SIZE) || 4));

/// The checkpoint: a header line naming the import, then one line per acknowledged batch
/// (`{"seq":N,"records":n}`), appended and synced as each batch is acknowledged, and a final
/// `{"complete":true}`. Batches are cut deterministically from the same input and limits, so a
/// rerun skips exactly the acknowledged ones; a batch that was in flight at the crash is sent
/// again, which the server's de-duplication by `$insert_id` makes harmless.
async function openCheckpoint(path, identity) {
  const header = JSON.stringify({ datadictCheckpoint: CHECKPOINT_VERSION, ...identity });
  const done = new Set();
  let exists = false;
  try {
    const text = fs.readFileSync(path, "utf8");
    exists = true;
    const lines = text.split("\n");
    if (lines[0] !== header) {
      throw Object.assign(
        new Error(`the checkpoint ${path} belongs to another import (another input file or a changed one, kind, project, server or batch limits); delete it or pass another --checkpoint`),
        { code: "bad_checkpoint" },
      );
    }
    for (const line of lines.slice(1)) {
      if (!line.trim()) continue;
      let entry;
      try {
        entry = JSON.parse(line);
      } catch {
        continue; // A line cut short by a crash: that batch was not recorded, so it is sent again.
      }
      if (typeof entry.seq === "number") done.add(entry.seq);
    }
  } catch (e) {
    if (e.code !== "ENOENT") throw e;
  }
  const handle = await fs.promises.open(path, "a");
  if (!exists) {
    await handle.write(header + "\n");
    await handle.datasync();
  }
  let chain = Promise.resolve();
  const append = (line) => (chain = chain.then(async () => {
    await handle.write(line + "\n");
    await handle.datasync();
  }));
  return {
    resumed: done.size,
    /// The acknowledged batches, for the core's upload machine to skip.
    acknowledged: [...done],
    has: (seq) => done.has(seq),
    ack: (seq, records) => append(JSON.stringify({ seq, records })),
    complete: () => append(JSON.stringify({ complete: true })),
    close: async () => {
      await chain.catch(() => {});
      await handle.close();
    },
  };
}

module.exports = { openFile, describeFile, gzip, gunzipChunks, parallelism, openCheckpoint };
