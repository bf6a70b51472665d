// The core's streaming API as ES-module named exports from Node.
import test from "node:test";
import assert from "node:assert/strict";
import { gunzipSync } from "node:zlib";
import { Batcher, checkEvent, defaultLimits } from "datadict";

test("named exports include the batcher class and the event rules", () => {
  const nowMs = Date.UTC(2026, 0, 1);
  const record = JSON.stringify({ event: "e", properties: { time: nowMs, distinct_id: "", $insert_id: "x1" } });
  assert.equal(checkEvent(record, { nowMs }).valid, true);
  const batcher = new Batcher({ nowMs, format: "jsonarray" });
  batcher.push(new TextEncoder().encode(`[${record},${record}]`));
  batcher.finish();
  const batch = batcher.nextBatch();
  assert.equal(JSON.parse(gunzipSync(batch.body)).length, 2);
  assert.equal(batcher.nextBatch(), undefined);
  assert.equal(defaultLimits().maxDepth, 3);
});
