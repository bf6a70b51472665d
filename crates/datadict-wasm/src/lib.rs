//! The JavaScript face of datadict-core, built into the npm package `datadict`: conversion and
//! naming only. Every rule lives in the core; a function here that grows logic belongs there.
//! Names are camelCase, values cross as plain objects through serde (DTOs where a core type holds
//! borrowed data or Rust-only shapes), failures are thrown as `Error`s, and each module ends with
//! the TypeScript types of what it exports.
//!
//! Every argument is checked by `args` before it reaches the core: a wrong type is a `TypeError`
//! naming the parameter, and no value can make the module trap.
//!
//! Modules: `rules` (schema entries, events, profile updates, import bodies, gzip, the
//! dictionary), `batcher` (the streaming `Batcher`), `requests` (URLs, headers, answers, the retry
//! policy, the wording of failed requests), `upload` (the `Upload` state machine an importer
//! drives), `migration` (the source tool's archive and transform), `quality` (the rule of the
//! `datadict violations` CI gate). Everything is re-exported at the root, where wasm-bindgen puts
//! it too.

mod args;
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
use serde::Serialize;
use wasm_bindgen::prelude::*;

/// What every export returns: its value, or the error it throws (a `TypeError` for an argument
/// of the wrong type, an `Error` otherwise).
type JsResult<T> = Result<T, JsValue>;

/// Serializes to plain JavaScript objects (maps as objects, not `Map`s).
fn to_js<T: Serialize>(value: &T) -> JsResult<JsValue> {
    value
        .serialize(&serde_wasm_bindgen::Serializer::json_compatible())
        .map_err(|e| args::error(&format!("cannot convert the result to JavaScript: {e}")))
}

/// A core error (its `Display`) as a thrown `Error`.
fn fail(e: impl std::fmt::Display) -> JsValue {
    args::error(&e.to_string())
}

/// The `namespace` parameter of function `at`: a string, or the default when left out.
fn namespace_or_default(namespace: &JsValue, at: &str) -> JsResult<String> {
    Ok(args::opt_text(namespace, &format!("{at}: namespace"))?.unwrap_or_else(|| DEFAULT_NAMESPACE.to_owned()))
}

fn rules(namespace: &JsValue, at: &str) -> JsResult<SchemaRules> {
    Ok(SchemaRules { namespace: namespace_or_default(namespace, at)? })
}

/// Reads `(index, line)` pairs, the packed positions of `Batcher.nextBatchPacked`.
fn unpack_positions(packed: &[f64]) -> Vec<datadict_core::RecordPos> {
    packed.chunks_exact(2).map(|p| datadict_core::RecordPos { index: p[0] as u64, line: p[1] as u64 }).collect()
}

/// Positions as a caller passes them: the packed `Float64Array` of `nextBatchPacked`, or an
/// array of `{index, line}`.
fn positions_arg(value: &JsValue, at: &str) -> JsResult<Vec<datadict_core::RecordPos>> {
    match value.dyn_ref::<js_sys::Float64Array>() {
        Some(packed) => Ok(unpack_positions(&packed.to_vec())),
        None => args::typed(value, at),
    }
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
