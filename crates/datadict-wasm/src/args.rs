//! Arguments as JavaScript passes them, checked before anything reaches the core. A parameter
//! of the wrong type is a `TypeError` that names the function and the parameter; a value that
//! cannot be read safely (a circular or very deep object, a string or buffer past
//! [`MAX_INPUT_BYTES`]) is refused with an error saying why. Nothing a caller passes can make the
//! module trap: a trap (an out-of-bounds access, a stack overflow, an allocation failure) would
//! leave the one wasm instance of the process unusable for every later call.
//!
//! Objects cross as JSON text (`JSON.stringify`, then `serde_json`), never by walking them from
//! Rust: the engine refuses a circular object or BigInt with its own `TypeError`, and
//! `serde_json` stops at 128 levels of nesting with an error instead of recursing until the
//! stack overflows.

use serde::de::DeserializeOwned;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

/// The largest string (in UTF-16 units) or byte argument taken, 128 Mi: larger ones are refused
/// with a `RangeError` before they are copied, since copies of that size could exhaust the
/// module's memory, which aborts it.
pub const MAX_INPUT_BYTES: u32 = 128 << 20;

pub fn type_error(message: &str) -> JsValue {
    js_sys::TypeError::new(message).into()
}

pub fn range_error(message: &str) -> JsValue {
    js_sys::RangeError::new(message).into()
}

/// An `Error` with this message (what `JsError` throws). A message that quotes a huge input is
/// cut to its first [`MAX_MESSAGE_CHARS`] characters.
pub fn error(message: &str) -> JsValue {
    let message = match message.char_indices().nth(MAX_MESSAGE_CHARS) {
        Some((cut, _)) => format!("{}… ({} characters in all)", &message[..cut], message.chars().count()),
        None => message.to_owned(),
    };
    js_sys::Error::new(&message).into()
}

/// The longest message thrown whole.
const MAX_MESSAGE_CHARS: usize = 500;

/// What a value is, for a message: `a number`, `an object`, `undefined`.
pub fn describe(value: &JsValue) -> String {
    if value.is_undefined() {
        return "undefined".into();
    }
    if value.is_null() {
        return "null".into();
    }
    if let Some(n) = value.as_f64().filter(|n| !n.is_finite()) {
        return if n.is_nan() { "NaN".into() } else { "an infinite number".into() };
    }
    if js_sys::Array::is_array(value) {
        return "an array".into();
    }
    if value.is_instance_of::<js_sys::Uint8Array>() {
        return "a Uint8Array".into();
    }
    if value.is_instance_of::<js_sys::ArrayBuffer>() {
        return "an ArrayBuffer".into();
    }
    let kind = value.js_typeof().as_string().unwrap_or_default();
    match kind.as_str() {
        "object" => {
            let name = js_sys::Object::from(value.clone()).constructor().name().as_string().unwrap_or_default();
            if name.is_empty() || name == "Object" { "an object".into() } else { format!("a {name}") }
        }
        "undefined" | "" => "undefined".into(),
        other => format!("a {other}"),
    }
}

fn too_large(at: &str, what: &str, size: u32) -> JsValue {
    range_error(&format!(
        "{at} is {what} {} Mi long; at most {} Mi is taken: split the input (the Batcher takes any input in chunks)",
        size >> 20,
        MAX_INPUT_BYTES >> 20
    ))
}

/// A string parameter; `at` names it (`checkEvent: record`).
pub fn text(value: &JsValue, at: &str) -> Result<String, JsValue> {
    let Some(s) = value.dyn_ref::<js_sys::JsString>() else {
        return Err(type_error(&format!("{at} must be a string, got {}", describe(value))));
    };
    if s.length() > MAX_INPUT_BYTES {
        return Err(too_large(at, "a string", s.length()));
    }
    Ok(value.as_string().unwrap_or_default())
}

/// An optional string parameter: `undefined` and `null` give `None`.
pub fn opt_text(value: &JsValue, at: &str) -> Result<Option<String>, JsValue> {
    if value.is_undefined() || value.is_null() {
        return Ok(None);
    }
    text(value, at).map(Some)
}

/// Bytes: a `Uint8Array` (a Node `Buffer`), an `ArrayBuffer`, any other view of one, or a string,
/// which is taken as its UTF-8.
pub fn bytes(value: &JsValue, at: &str) -> Result<Vec<u8>, JsValue> {
    if value.is_string() {
        return text(value, at).map(String::into_bytes);
    }
    let view = if let Some(a) = value.dyn_ref::<js_sys::Uint8Array>() {
        a.clone()
    } else if let Some(b) = value.dyn_ref::<js_sys::ArrayBuffer>() {
        js_sys::Uint8Array::new(b)
    } else if js_sys::ArrayBuffer::is_view(value) {
        let get = |key: &str| js_sys::Reflect::get(value, &JsValue::from_str(key)).ok().and_then(|v| v.as_f64()).unwrap_or(0.0) as u32;
        let buffer = js_sys::Reflect::get(value, &JsValue::from_str("buffer")).unwrap_or(JsValue::UNDEFINED);
        js_sys::Uint8Array::new_with_byte_offset_and_length(&buffer, get("byteOffset"), get("byteLength"))
    } else {
        return Err(type_error(&format!("{at} must be bytes (a Uint8Array, Buffer or ArrayBuffer) or a string, got {}", describe(value))));
    };
    if view.length() > MAX_INPUT_BYTES {
        return Err(too_large(at, "a buffer", view.length()));
    }
    Ok(view.to_vec())
}

/// A JSON-compatible value (an object, array, string, number, boolean or null), read through its
/// JSON text; `undefined` reads as `null`.
pub fn json(value: &JsValue, at: &str) -> Result<serde_json::Value, JsValue> {
    let text = json_text(value, at)?;
    serde_json::from_str(&text).map_err(|e| serde_error(at, "cannot be read", &e))
}

/// A value of a Rust type, read through its JSON text; `what` says what the shape error is about.
pub fn typed<T: DeserializeOwned>(value: &JsValue, at: &str) -> Result<T, JsValue> {
    let text = json_text(value, at)?;
    serde_json::from_str(&text).map_err(|e| serde_error(at, "has the wrong shape", &e))
}

/// An optional argument: `undefined` and `null` give the default.
pub fn opt_typed<T: DeserializeOwned + Default>(value: &JsValue, at: &str) -> Result<T, JsValue> {
    if value.is_undefined() || value.is_null() {
        Ok(T::default())
    } else {
        typed(value, at)
    }
}

fn json_text(value: &JsValue, at: &str) -> Result<String, JsValue> {
    if value.is_undefined() {
        return Ok("null".into());
    }
    if value.is_bigint() {
        return Err(type_error(&format!("{at} holds a BigInt, which JSON cannot carry; pass a number or a string")));
    }
    let text = js_sys::JSON::stringify(value).map_err(|e| {
        let e = js_sys::Error::from(e);
        let why = e.message().as_string().unwrap_or_default();
        // The engine ran out of stack on a deep value (Chromium: a `RangeError`, "Maximum call
        // stack size exceeded"; Firefox: an `InternalError`, "too much recursion"), which the
        // JSON rules refuse anyway past 127 levels.
        if matches!(e.name().as_string().as_deref(), Some("RangeError" | "InternalError")) {
            return error(&format!("{at} is nested more than 127 levels deep; flatten it"));
        }
        type_error(&format!("{at} cannot be read as JSON ({why}); pass plain objects without cycles or BigInts"))
    })?;
    let Some(text) = text.dyn_ref::<js_sys::JsString>() else {
        // A function or a symbol stringifies to `undefined`.
        return Err(type_error(&format!("{at} must be a JSON value (an object, array, string, number, boolean or null), got {}", describe(value))));
    };
    if text.length() > MAX_INPUT_BYTES {
        return Err(too_large(at, "a value whose JSON text is", text.length()));
    }
    Ok(String::from(text))
}

/// A `serde_json` error without the position in text the caller never saw.
fn serde_error(at: &str, verb: &str, e: &serde_json::Error) -> JsValue {
    let message = e.to_string();
    let message = match message.rfind(" at line ") {
        Some(cut) if e.line() > 0 => &message[..cut],
        _ => &message,
    };
    if message.contains("recursion limit") {
        return error(&format!("{at} is nested more than 127 levels deep; flatten it"));
    }
    error(&format!("{at} {verb}: {message}"))
}

/// Strings from an array of strings, or one string taken as a list of one.
pub fn strings(value: &JsValue, at: &str) -> Result<Vec<String>, JsValue> {
    if value.is_string() {
        return Ok(vec![text(value, at)?]);
    }
    if value.is_undefined() || value.is_null() {
        return Ok(Vec::new());
    }
    let Some(array) = value.dyn_ref::<js_sys::Array>() else {
        return Err(type_error(&format!("{at} must be an array of strings (or one string), got {}", describe(value))));
    };
    array
        .iter()
        .enumerate()
        .map(|(i, item)| {
            if item.is_string() {
                text(&item, &format!("{at}[{i}]"))
            } else {
                Err(type_error(&format!("{at}[{i}] must be a string, got {}", describe(&item))))
            }
        })
        .collect()
}

/// A number parameter that may be left out; `NaN` and non-numbers are refused.
pub fn opt_number(value: &JsValue, at: &str) -> Result<Option<f64>, JsValue> {
    if value.is_undefined() || value.is_null() {
        return Ok(None);
    }
    match value.as_f64() {
        Some(n) if n.is_finite() => Ok(Some(n)),
        _ => Err(type_error(&format!("{at} must be a finite number, got {}", describe(value)))),
    }
}
