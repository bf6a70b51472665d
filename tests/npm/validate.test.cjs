// The packed npm package, loaded with CommonJS `require` exactly as a user's project would.
const test = require("node:test");
const assert = require("node:assert/strict");
const datadict = require("datadict");

test("a valid entry has no issues", () => {
  const issues = datadict.validateSchemaEntry({
    entityType: "event",
    name: "Purchase",
    schemaJson: { properties: { price: { type: "number" } } },
  });
  assert.deepEqual(issues, []);
});

test("every issue is reported with path, code and message", () => {
  const issues = datadict.validateSchemaEntry({ entityType: "thing", schemaJson: { properties: { p: { type: "float" } } } });
  assert.deepEqual(
    issues.map((i) => `${i.path}:${i.code}`),
    ["entityType:invalid_enum", "name:missing_field", "schemaJson.properties.p.type:invalid_enum"],
  );
  for (const issue of issues) assert.ok(issue.message.length > 10, issue.message);
});

test("another namespace can be named", () => {
  const entry = { entityType: "event", name: "e", schemaJson: { metadata: { "com.mixpanel": { hiden: true } } } };
  assert.equal(datadict.validateSchemaEntry(entry).length, 0);
  assert.deepEqual(datadict.validateSchemaEntry(entry, "com.mixpanel").map((i) => i.code), ["unknown_field"]);
  assert.equal(datadict.defaultNamespace(), "com.vendor");
});

test("invalid JSON text is an issue, not an exception", () => {
  const issues = datadict.validateSchemaEntryJson("{");
  assert.equal(issues.length, 1);
  assert.equal(issues[0].code, "invalid_json");
});
