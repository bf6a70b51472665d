// The Node case of `cargo xtask bench core`: the npm package's Batcher over the same NDJSON file
// (read → split → validate → batch → gzip, all inside wasm on one core). Prints one JSON line.
// Usage: node core.mjs <file> <gzip level> <path to the package's CommonJS entry>
import { createRequire } from "node:module";
import { openSync, readSync, closeSync } from "node:fs";

const [file, level, entry] = process.argv.slice(2);
const datadict = createRequire(import.meta.url)(entry);
const chunk = new Uint8Array(1 << 20);
const fd = openSync(file, "r");
const started = performance.now();
const cpu = process.cpuUsage();
const batcher = new datadict.Batcher({ nowMs: 1767225600000, gzipLevel: Number(level) });
let bytes = 0, events = 0, batches = 0, gzipBytes = 0;
const pull = () => {
  for (let b = batcher.nextBatch(); b !== undefined; b = batcher.nextBatch()) {
    events += b.events;
    batches += 1;
    gzipBytes += b.body.length;
  }
};
for (;;) {
  const n = readSync(fd, chunk, 0, chunk.length, null);
  if (n === 0) break;
  bytes += n;
  batcher.push(chunk.subarray(0, n));
  pull();
}
batcher.finish();
pull();
closeSync(fd);
const secs = (performance.now() - started) / 1000;
const used = process.cpuUsage(cpu);
const stats = batcher.stats();
if (stats.records !== events) throw new Error(`batched ${events} of ${stats.records} events`);
console.log(JSON.stringify({
  mode: "node", level: Number(level), workers: 0, bytes, events, secs: Number(secs.toFixed(3)),
  cpu_secs: Number(((used.user + used.system) / 1e6).toFixed(3)), rss_kib: process.resourceUsage().maxRSS, batches, gzip_bytes: gzipBytes,
}));
