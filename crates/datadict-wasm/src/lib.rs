//! The JavaScript face of datadict-core, built into the npm package `datadict`: conversion and
//! naming only. Every rule lives in the core; a function here that grows logic belongs there.
//! Names are camelCase, values cross as plain objects through serde (DTOs where a core type holds
//! borrowed data or Rust-only shapes), failures are thrown as `Error`s, and each module ends with
//! the TypeScript types of what it exports.
//!
//! Modules: `rules` (schema entries, events, profile updates, import bodies, gzip, the
//! dictionary), `batcher` (the streaming `Batcher`), `requests` (URLs, headers, answers, the retry
//! policy, the wording of failed requests), `upload` (the `Upload` state machine an importer
//! drives), `migration` (the source tool's archive and transform), `quality` (the rule of the
//! `datadict violations` CI gate). Everything is re-exported at the root, where wasm-bindgen puts
//! it too.

mod batcher;
mod migration;
mod quality;
mod requests;
mod rules;
mod upload;

pub use batcher::*;
pub use migration::*;
pub use quality::*;
pub use requests::*;
pub use rules::*;
pub use upload::*;

use datadict_core::{SchemaRules, DEFAULT_NAMESPACE};
use serde::de::DeserializeOwned;
use serde::Serialize;
use wasm_bindgen::prelude::*;

/// Serializes to plain JavaScript objects (maps as objects, not `Map`s).
fn to_js<T: Serialize>(value: &T) -> Result<JsValue, JsError> {
    value
        .serialize(&serde_wasm_bindgen::Serializer::json_compatible())
        .map_err(|e| JsError::new(&format!("cannot convert the result to JavaScript: {e}")))
}

/// Reads a JavaScript value into a Rust type; `what` names the argument in the error.
fn from_js<T: DeserializeOwned>(value: JsValue, what: &str) -> Result<T, JsError> {
    serde_wasm_bindgen::from_value(value).map_err(|e| JsError::new(&format!("{what} has the wrong shape: {e}")))
}

/// Reads an optional argument: `undefined` and `null` give the default.
fn opt_from_js<T: DeserializeOwned + Default>(value: JsValue, what: &str) -> Result<T, JsError> {
    if value.is_undefined() || value.is_null() {
        Ok(T::default())
    } else {
        from_js(value, what)
    }
}

fn namespace_or_default(namespace: Option<String>) -> String {
    namespace.unwrap_or_else(|| DEFAULT_NAMESPACE.to_owned())
}

fn rules(namespace: Option<String>) -> SchemaRules {
    SchemaRules { namespace: namespace_or_default(namespace) }
}

/// Reads `(index, line)` pairs, the packed positions of `Batcher.nextBatchPacked`.
fn unpack_positions(packed: &[f64]) -> Vec<datadict_core::RecordPos> {
    packed.chunks_exact(2).map(|p| datadict_core::RecordPos { index: p[0] as u64, line: p[1] as u64 }).collect()
}

#[wasm_bindgen(typescript_custom_section)]
const TS_SHARED: &'static str = r#"
/** One problem found in an input. */
export interface Issue {
  /** Where, in the dotted form the API uses, e.g. `schemaJson.properties.price.type` or `properties.time`. */
  path: string;
  /** A stable identifier such as `missing_field`, `time_too_early`, `type_mismatch`. */
  code: string;
  /** What was found and how to fix it. */
  message: string;
}

export type EntityType = "event" | "profile";
export type PropertyType = "array" | "boolean" | "integer" | "null" | "number" | "object" | "string";

export interface PropertyDef {
  type: PropertyType;
  description?: string;
  metadata?: Record<string, unknown>;
}

/** Keys other than these three are allowed (spec §2.3) and kept as sent. */
export interface Schema {
  description?: string;
  properties?: Record<string, PropertyDef>;
  metadata?: Record<string, unknown>;
  [key: string]: unknown;
}

export interface SchemaEntry {
  entityType: EntityType;
  name: string;
  schemaJson: Schema;
}

/** The import and profile limits; `max*` are inclusive, `*Below` exclusive. */
export interface Limits {
  maxEventsPerRequest: number;
  maxRequestBytes: number;
  eventBytesBelow: number;
  propertiesBelow: number;
  maxDepth: number;
  objectKeysBelow: number;
  arrayItemsBelow: number;
  stringTruncateBytes: number;
  maxInsertIdBytes: number;
  forbiddenIds: string[];
  maxFutureMs: number;
  minTimeMs: number;
  maxProfileUpdatesPerRequest: number;
  maxProfileUpdateBytes: number;
  maxProfileProperties: number;
}
"#;
