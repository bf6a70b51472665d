// The importer for browsers (ES modules): sources are Blobs (a File from an <input>), ReadableStreams
// or (async) iterables; bodies are gzipped in wasm. The wasm module is loaded on first use.
import init, * as wasm from "../web/datadict_wasm.js";
import { makeImporter, ImportError } from "./importer-core.mjs";

let ready;
const api = makeImporter(wasm, {});
const loaded = () => (ready ??= init());

export async function importEvents(source, options) {
  await loaded();
  return api.importEvents(source, options);
}
export async function importProfiles(source, options) {
  await loaded();
  return api.importProfiles(source, options);
}
export async function fetchDictionary(options) {
  await loaded();
  return api.fetchDictionary(options);
}
/** The core's words for a status; the wasm module must be loaded (by any call above) first. */
export const explainStatus = api.explainStatus;
export { ImportError };
/** Loads the wasm module; resolves to the importer's functions and `ImportError`. */
export async function loadImporter() {
  await loaded();
  return { ...api, ImportError };
}
