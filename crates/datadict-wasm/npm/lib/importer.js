// The importer for Node, CommonJS: `const { importEvents } = require("datadict")`.
"use strict";
const wasm = require("../node/datadict_wasm.js");
const platform = require("./node-platform.js");

let api;
function load() {
  // The shared implementation is an ES module (browsers use it too); Node loads it on first use.
  api ??= import("./importer-core.mjs").then((m) => ({ ...m.makeImporter(wasm, platform), ImportError: m.ImportError }));
  return api;
}

/** Imports events into a project; see the package README. */
async function importEvents(source, options) {
  return (await load()).importEvents(source, options);
}

/** Imports user-profile updates (`/engage`); see the package README. */
async function importProfiles(source, options) {
  return (await load()).importProfiles(source, options);
}

/** The project's dictionary (every schema entry) from the schemas API. */
async function fetchDictionary(options) {
  return (await load()).fetchDictionary(options);
}

module.exports = { importEvents, importProfiles, fetchDictionary, loadImporter: load };
// ImportError lives in the ES module, explainStatus (the core's words for a status) in the
// importer it makes; `(await loadImporter()).ImportError` reaches both.
