// The benchmark's loopback sink for `cargo xtask bench npm`: accepts POST /import, gunzips the
// body (on libuv's thread pool), counts the records and answers like the import does. Nothing is
// parsed or stored, so the figures measure the importer. Prints `listening on http://...` when
// ready and, on SIGTERM, `received N records in M requests, B bytes`.
"use strict";
const http = require("node:http");
const zlib = require("node:zlib");

const KEY = Buffer.from('"$insert_id"');
/// Bodies are at most 10 MB uncompressed; a batch of 2,000 events of 500 B is about 1 MB.
const GUNZIP_CHUNK_BYTES = 2 * 1024 * 1024;
let records = 0;
let requests = 0;
let bytes = 0;

function count(buf) {
  let n = 0;
  for (let i = buf.indexOf(KEY); i >= 0; i = buf.indexOf(KEY, i + KEY.length)) n++;
  return n;
}

const server = http.createServer((req, res) => {
  const parts = [];
  req.on("data", (d) => parts.push(d));
  req.on("end", () => {
    const body = Buffer.concat(parts);
    bytes += body.length;
    const done = (err, raw) => {
      if (err) {
        res.writeHead(400, { "content-type": "application/json" });
        res.end(JSON.stringify({ code: 400, error: String(err), status: "Bad Request" }));
        return;
      }
      const n = count(raw);
      records += n;
      requests += 1;
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ code: 200, num_records_imported: n, status: "OK" }));
    };
    // One output buffer for a whole body: with zlib's default 16 KiB, a 1 MB body costs this
    // process 64 callbacks and a copy, CPU the importer under test would share on a small machine.
    if (req.headers["content-encoding"] === "gzip") zlib.gunzip(body, { chunkSize: GUNZIP_CHUNK_BYTES }, done);
    else done(null, body);
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, "127.0.0.1", () => console.log(`listening on http://127.0.0.1:${server.address().port}`));
process.on("SIGTERM", () => {
  console.log(`received ${records} records in ${requests} requests, ${bytes} bytes`);
  process.exit(0);
});
