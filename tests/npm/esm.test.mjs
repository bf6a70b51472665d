// The packed npm package, loaded as an ES module from Node.
import test from "node:test";
import assert from "node:assert/strict";
import { validateSchemaEntryJson, validateSchemaEntry } from "datadict";
import * as pkg from "datadict";

test("named ES-module exports work", () => {
  assert.deepEqual(validateSchemaEntryJson('{"entityType":"event","name":"Signup","schemaJson":{}}'), []);
  const issues = validateSchemaEntry({ entityType: "profile", name: "$user", schemaJson: { metadata: { "com.vendor": { dropped: true } } } });
  assert.deepEqual(issues.map((i) => i.code), ["events_only"]);
  assert.equal(typeof pkg.default.validateSchemaEntry, "function");
});
