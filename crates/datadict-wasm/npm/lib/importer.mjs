// The importer for Node, ES modules: `import { importEvents } from "datadict"`.
import wasm from "../node/datadict_wasm.js";
import platform from "./node-platform.js";
import { makeImporter, ImportError } from "./importer-core.mjs";

const api = makeImporter(wasm, platform);
export const importEvents = api.importEvents;
export const importProfiles = api.importProfiles;
export const fetchDictionary = api.fetchDictionary;
export const explainStatus = api.explainStatus;
export { ImportError };
/** The importer's functions and `ImportError` (what the CommonJS entry's `loadImporter` gives). */
export const loadImporter = async () => ({ ...api, ImportError });
