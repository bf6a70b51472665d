// The `datadict` command's edges: usage errors (exit 2, plain words, no secret echoed), every file
// of `validate` checked, the dictionary's findings in its exit code, a project token, `schemas push`
// doing what its diff shows, and an answer that is not the import's (exit 3).
const test = require("node:test");
const assert = require("node:assert/strict");
const fs = require("node:fs");
const http = require("node:http");
const os = require("node:os");
const path = require("node:path");
const { spawn } = require("node:child_process");
const { startServer, api, event, ndjson } = require(path.resolve(__dirname, "../../tests/npm/support/server.cjs"));

const BIN = path.join(__dirname, "node_modules/.bin/datadict");

let server;
let tmp;
test.before(async () => {
  server = await startServer();
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), "datadict-cli-usage-"));
});
test.after(async () => {
  await server?.stop();
});

const account = () => ({ DATADICT_BASE_URL: server.url, DATADICT_PROJECT_ID: String(server.projectId), DATADICT_USERNAME: server.username, DATADICT_SECRET: server.secret });
const bare = () => {
  const env = { ...process.env };
  for (const k of Object.keys(env)) if (k.startsWith("DATADICT_")) delete env[k];
  return env;
};

function run(args, envVars = bare()) {
  return new Promise((resolve, reject) => {
    const child = spawn(BIN, args, { env: envVars, cwd: tmp });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

function write(name, text) {
  const file = path.join(tmp, name);
  fs.writeFileSync(file, text);
  return file;
}

const events = (name, n) =>
  ndjson(
    Array.from({ length: n }, (_, i) => {
      const e = event(i);
      e.event = name;
      e.properties.$insert_id = `${name.replace(/_/g, "-")}-${i}`;
      return e;
    }),
  );

test("usage errors exit 2 with a plain message naming the flag or file", async () => {
  const file = write("ok.ndjson", events("usage", 3));
  const conn = ["--base-url", "http://127.0.0.1:9", "--username", "u", "--secret", "s"];
  write("bad.json", "{nope");
  write("ep.json", JSON.stringify({ app: { default: "http://a" }, ingest: { default: "http://a" }, migrate: "http://a" }));
  const cases = [
    [["import", file, ...conn, "--project-id", "abc"], /--project-id must be a whole number 1 or more \(got `abc`\)/],
    [["import", file, ...conn, "--project-id", "1.5"], /--project-id must be a whole number/],
    [["import", file, ...conn, "--project-id", "1", "--gzip-level", "12"], /--gzip-level must be a whole number from 0 to 9 \(got `12`\)/],
    [["import", file, ...conn, "--project-id", "1", "--concurrency", "0"], /--concurrency must be a whole number 1 or more/],
    [["import", file, "--username", "u", "--secret", "s", "--project-id", "1", "--endpoints", "bad.json"], /--endpoints bad.json is not JSON/],
    [["import", file, "--username", "u", "--secret", "s", "--project-id", "1", "--endpoints", "nope.json"], /--endpoints nope.json does not exist/],
    [["import", file, "--username", "u", "--secret", "s", "--project-id", "1", "--endpoints", "ep.json", "--region", "eu"], /has no `app.eu` base URL/],
    [["import", file, "--username", "u", "--secret", "s", "--project-id", "1", "--base-url", "not-a-url"], /--base-url `not-a-url` is not a URL/],
    [["import", ".", ...conn, "--project-id", "1"], /\. is a folder/],
    [["import", file, "other.ndjson", ...conn, "--project-id", "1"], /import takes one FILE; got also `other.ndjson`/],
    [["schemas", "pull", "/nodir/x.json", ...conn, "--project-id", "1"], /cannot write \/nodir\/x.json: the folder \/nodir does not exist/],
    [["violations", ...conn, "--project-id", "1", "--since", "2026-01-01", "--until", "2020-01-01"], /--since 2026-01-01 is after --until 2020-01-01/],
    [["validate", file, "--token", "t", "--base-url", "http://127.0.0.1:9", "--check-dictionary"], /needs a service account/],
  ];
  for (const [args, message] of cases) {
    const r = await run(args);
    assert.equal(r.code, 2, `${args.join(" ")}: ${r.stderr}`);
    assert.match(r.stderr, message, args.join(" "));
    assert.doesNotMatch(r.stderr, /expected u64|invalid type|ENOENT|EISDIR|options\.level/, args.join(" "));
  }
  const v = await run(["--version"]);
  assert.deepEqual([v.code, v.stdout.trim()], [0, require("datadict/package.json").version]);
});

test("credentials in --base-url are never printed", async () => {
  const file = write("creds.ndjson", events("creds", 2));
  for (const args of [
    ["import", file, "--base-url", `http://demo-owner:SUPERSECRET@${new URL(server.url).host}`, "--project-id", "1", "--username", "u", "--secret", "s"],
    ["schemas", "pull", "x.json", "--base-url", "http://demo-owner:SUPERSECRET@127.0.0.1:9", "--project-id", "1", "--username", "u", "--secret", "s"],
  ]) {
    const r = await run(args);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /holds credentials; give the server's origin alone, and the credentials with --username and --secret/);
    assert.doesNotMatch(r.stderr + r.stdout, /SUPERSECRET|demo-owner/);
  }
});

test("validate checks every file it is given", async () => {
  const good = write("good.ndjson", events("multi_good", 4));
  const bad = write("bad.ndjson", '{"event":""}\n');
  const r = await run(["validate", good, bad]);
  assert.equal(r.code, 1, r.stderr);
  assert.match(r.stdout, /good\.ndjson:\n[\s\S]*bad\.ndjson:\n[\s\S]*failed\s+1\n/);
});

test("validate exits 1 when records do not match the dictionary; hidden data does not fail it", async () => {
  const file = write("dict-events.ndjson", events("Gen", 5));
  const mismatch = write("dict1.json", JSON.stringify([{ entityType: "event", name: "Gen", schemaJson: { properties: { n: { type: "string" } } } }]));
  let r = await run(["validate", file, "--dictionary", mismatch]);
  assert.equal(r.code, 1, r.stdout + r.stderr);
  assert.match(r.stdout, /the dictionary does not describe every record: type_mismatch 5/);

  const hidden = write("dict2.json", JSON.stringify([{ entityType: "event", name: "Gen", schemaJson: { properties: { n: { type: "integer" } }, metadata: { "com.vendor": { hidden: true } } } }]));
  r = await run(["validate", file, "--dictionary", hidden]);
  assert.equal(r.code, 0, r.stdout + r.stderr);

  // With a service account, the project's dictionary (the demo's) knows no event `Gen`.
  r = await run(["validate", file], { ...bare(), ...account() });
  assert.equal(r.code, 1, r.stdout + r.stderr);
  assert.match(r.stdout, /no_schema 5/);
});

test("validate with a project token checks the import rules and says the dictionary was not read", async () => {
  const file = write("token.ndjson", events("token_validate", 3));
  const r = await run(["validate", file], { ...bare(), DATADICT_BASE_URL: server.url, DATADICT_TOKEN: server.token });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /valid\s+3\n/);
  assert.match(r.stderr, /not checked against the project's dictionary: reading it needs a service account/);
});

test("schemas push removes the metadata keys it shows as removed, so a diff after it passes", async () => {
  const env = { ...bare(), ...account() };
  const name = "Push Meta";
  const first = write("meta1.json", JSON.stringify([{ entityType: "event", name, schemaJson: { description: "d", metadata: { "com.vendor": { hidden: true, tags: ["a"] } } } }]));
  let r = await run(["schemas", "push", first], env);
  assert.equal(r.code, 0, r.stderr);
  const second = write("meta2.json", JSON.stringify([{ entityType: "event", name, schemaJson: { description: "d", metadata: { "com.vendor": { tags: ["a"] } } } }]));
  r = await run(["schemas", "push", second], env);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /metadata\["com.vendor"\]\.hidden: true -> null/);
  assert.match(r.stdout, /pushed: 1 added or replaced/);
  const stored = (await api(server, "/schemas")).results.find((e) => e.name === name);
  assert.deepEqual(stored.schemaJson.metadata, { "com.vendor": { tags: ["a"] } });
  r = await run(["schemas", "diff", second], env);
  assert.equal(r.code, 1, "the demo entries are only on the server");
  assert.doesNotMatch(r.stdout, /Push Meta/);
});

test("an import answered 200 with something else than the import's answer exits 3 and counts nothing as imported", async () => {
  const proxy = http.createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      res.writeHead(200, { "content-type": "text/html" });
      res.end("<html>proxy ok</html>");
    });
  });
  await new Promise((r) => proxy.listen(0, "127.0.0.1", r));
  try {
    const file = write("proxy.ndjson", events("proxy", 10));
    const r = await run(["import", file, "--base-url", `http://127.0.0.1:${proxy.address().port}`, "--project-id", "1", "--username", "u", "--secret", "s"]);
    assert.equal(r.code, 3, r.stdout + r.stderr);
    assert.match(r.stderr, /not the import's answer; check that the base URL points at a datadict server/);
    assert.match(r.stderr, /stopped after 10 read, 0 imported, 0 failed, 10 sent but not confirmed/);
  } finally {
    proxy.close();
  }
});
