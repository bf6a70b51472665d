//! One source record (one NDJSON line of the export) by the mapping of FACTS.md: an event of spec
//! §2.8 with its user's profile properties, or, for the source's `$identify` and
//! `$groupidentify` rows (which are not user actions), profile properties only.

use crate::limits::Limits;
use crate::time::parse_naive_utc_ms;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// The fields of a source record the mapping reads (FACTS.md); the others are not carried. Read
/// from the line's JSON object by name rather than by a `Deserialize` derive: the derive for
/// thirty optional fields was 22 KB of the web app's wasm, which transforms exports too.
#[derive(Debug, Default)]
struct SourceEvent {
    event_type: Option<String>,
    event_time: Option<String>,
    data_type: Option<String>,
    user_id: Option<Value>,
    device_id: Option<Value>,
    dollar_insert_id: Option<Value>,
    insert_id: Option<Value>,
    event_properties: Option<Map<String, Value>>,
    user_properties: Option<Map<String, Value>>,
    /// The line's other fields, which the mapping takes by name ([`MAPPED_FROM`], [`CARRIED_FROM`]).
    rest: Map<String, Value>,
}

impl SourceEvent {
    /// Reads a line: a JSON object whose named fields have the types the export gives them (a
    /// string, an object, or, for the others, any value); null is absent.
    fn read(line: &[u8]) -> Result<Self, TransformError> {
        let Value::Object(mut m) = serde_json::from_slice::<Value>(line).map_err(|e| TransformError::Json(e.to_string()))? else {
            return Err(TransformError::Json("it is not an object".into()));
        };
        m.retain(|_, v| !v.is_null());
        let mut src = Self {
            user_id: m.remove("user_id"),
            device_id: m.remove("device_id"),
            dollar_insert_id: m.remove("$insert_id"),
            insert_id: m.remove("insert_id"),
            ..Self::default()
        };
        for (key, slot) in [("event_type", &mut src.event_type), ("event_time", &mut src.event_time), ("data_type", &mut src.data_type)] {
            *slot = match m.remove(key) {
                None => None,
                Some(Value::String(s)) => Some(s),
                Some(other) => return Err(TransformError::Json(format!("`{key}` is {}, not a string", kind(&other)))),
            };
        }
        for (key, slot) in [("event_properties", &mut src.event_properties), ("user_properties", &mut src.user_properties)] {
            *slot = match m.remove(key) {
                None => None,
                Some(Value::Object(o)) => Some(o),
                Some(other) => return Err(TransformError::Json(format!("`{key}` is {}, not an object", kind(&other)))),
            };
        }
        src.rest = m;
        Ok(src)
    }

    /// A field of the line the mapping reads by name.
    fn take(&mut self, key: &str) -> Option<Value> {
        self.rest.remove(key)
    }
}

/// The source fields the transform maps, and the properties they become; `country` also gives
/// `mp_country_code` when it is a two-letter code.
const MAPPED_FROM: [(&str, &str); 8] = [
    ("ip_address", "ip"),
    ("city", "$city"),
    ("region", "$region"),
    ("country", "$country"),
    ("os_name", "$os"),
    ("os_version", "$os_version"),
    ("device_model", "$model"),
    ("device_brand", "$brand"),
];

/// The source fields carried as they are, and the properties that carry them.
const CARRIED_FROM: [(&str, &str); 10] = [
    ("uuid", "amplitude_uuid"),
    ("amplitude_id", "amplitude_id"),
    ("session_id", "amplitude_session_id"),
    ("platform", "amplitude_platform"),
    ("version_name", "amplitude_version_name"),
    ("library", "amplitude_library"),
    ("language", "amplitude_language"),
    ("device_carrier", "amplitude_carrier"),
    ("groups", "amplitude_groups"),
    ("group_properties", "amplitude_group_properties"),
];

/// The JSON type of `v` with its article, for messages.
fn kind(v: &Value) -> &'static str {
    crate::json_schema::json_type_of(v).with_article()
}

/// Why one source record cannot be transformed; the caller reports it with the line number.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TransformError {
    #[error("the line is not a JSON object ({0}); the export may be corrupt")]
    Json(String),
    #[error("`event_type` is missing or empty; the source event has no name")]
    NoEventType,
    #[error("`event_time` is {0:?}; expected `YYYY-MM-DD HH:MM:SS[.ffffff]` in UTC")]
    BadTime(String),
    #[error("the line is a `$identify` or `$groupidentify` row, a profile update rather than an event")]
    NotAnEvent,
}

impl TransformError {
    /// The code the data-quality record files the refused line under.
    pub fn code(&self) -> crate::IssueCode {
        match self {
            Self::Json(_) => crate::IssueCode::InvalidJson,
            Self::NoEventType => crate::IssueCode::MissingField,
            Self::NotAnEvent => crate::IssueCode::EventsOnly,
            Self::BadTime(_) => crate::IssueCode::WrongType,
        }
    }
}

/// One transformed source event.
#[derive(Debug, Clone, PartialEq)]
pub struct Transformed {
    /// The event of spec §2.8 as JSON bytes, ready for the batcher.
    pub event: Vec<u8>,
    pub time_ms: i64,
    /// `(user_id, user_properties)` when the source event carries a real user id and properties.
    pub profile: Option<(String, Map<String, Value>)>,
    /// The source fields this event could not carry (named as they would have been), because the
    /// event would then break an import rule (too many properties, too deep): the caller says so.
    pub left_out: Vec<String>,
}

/// What one source record becomes.
#[derive(Debug, Clone, PartialEq)]
pub enum SourceRecord {
    /// An event to load.
    Event(Transformed),
    /// A `$identify` row: `(user_id, user_properties)` for the user's profile, `None` when it has
    /// no real user id or no properties. Not an event.
    Identify { time_ms: i64, profile: Option<(String, Map<String, Value>)> },
    /// A `$groupidentify` row: `(group key, group id, properties)` of each group it names. Not an
    /// event.
    GroupIdentify { time_ms: i64, groups: Vec<(String, String, Map<String, Value>)> },
}

/// A string form of an id that may be a string or a number in the export; empty and null are none.
fn id_string(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// A deterministic `$insert_id` from parts: 32 hex digits of their SHA-256, which satisfies the
/// import's `[A-Za-z0-9-]{1,36}` (FACTS.md).
pub fn hashed_insert_id(parts: &[&str]) -> String {
    let mut h = Sha256::new();
    for p in parts {
        // Length-prefixing keeps ("ab","c") and ("a","bc") apart.
        h.update((p.len() as u64).to_le_bytes());
        h.update(p.as_bytes());
    }
    const HEX: &[u8; 16] = b"0123456789abcdef";
    h.finalize()[..16].iter().flat_map(|b| [HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]]).map(char::from).collect()
}

/// `id` when the import accepts it as an `$insert_id`; otherwise (a `:` or another character
/// outside `[A-Za-z0-9-]`, too long, a placeholder) its hash.
fn made_valid(id: &str, limits: &Limits) -> String {
    let mut issues = Vec::new();
    crate::event::check_insert_id(id, limits, &mut issues);
    if issues.is_empty() {
        id.to_owned()
    } else {
        hashed_insert_id(&["insert_id", id])
    }
}

/// FACTS.md: the source insert id made valid (kept when the import accepts it, else hashed); without one, a hash of
/// (device_id, event_time, event_type). Warehouse syncs use it; the migration prefers the
/// source's per-event `uuid` to that hash (see [`transform_record`]).
pub fn valid_insert_id(source: Option<&str>, device_id: &str, event_time: &str, event_type: &str, limits: &Limits) -> String {
    match source {
        Some(id) if !id.is_empty() => made_valid(id, limits),
        _ => hashed_insert_id(&[device_id, event_time, event_type]),
    }
}

/// An id the source filled in for a missing one (`undefined`, `null`, ...; FACTS.md's forbidden
/// ids) is no id.
fn real_id(id: Option<String>, limits: &Limits) -> Option<String> {
    id.filter(|id| !limits.is_forbidden_id(id))
}

/// Whether `value`, as the value of a property, keeps within the import's nesting rules (a value
/// that is an object or array is level 1).
fn fits(value: &Value, limits: &Limits, level: usize) -> bool {
    match value {
        Value::Object(m) => level < limits.max_depth && m.len() < limits.object_keys_below && m.values().all(|v| fits(v, limits, level + 1)),
        Value::Array(a) => level < limits.max_depth && a.len() < limits.array_items_below && a.iter().all(|v| fits(v, limits, level + 1)),
        _ => true,
    }
}

/// A value worth carrying: not null, not an empty string, object or array.
fn present(value: Option<Value>) -> Option<Value> {
    match value? {
        Value::Null => None,
        Value::String(s) if s.is_empty() => None,
        Value::Object(m) if m.is_empty() => None,
        Value::Array(a) if a.is_empty() => None,
        v => Some(v),
    }
}

/// `prefix` + `name`, or with `_2`, `_3`, ... after it when `props` holds that name already.
fn free_name(props: &Map<String, Value>, prefix: &str, name: &str) -> String {
    let base = format!("{prefix}{name}");
    let mut candidate = base.clone();
    let mut n = 2;
    while props.contains_key(&candidate) {
        candidate = format!("{base}_{n}");
        n += 1;
    }
    candidate
}

/// The groups a `$groupidentify` row names, each with its properties: `groups` maps a group key to
/// one id or a list of ids; `group_properties` holds the properties either per key and id
/// (`{key: {id: {...}}}`, as the export's events carry them) or directly.
fn identified_groups(groups: Option<Value>, properties: Option<Value>, limits: &Limits) -> Vec<(String, String, Map<String, Value>)> {
    let Some(Value::Object(groups)) = groups else { return Vec::new() };
    let properties = match properties {
        Some(Value::Object(p)) => p,
        _ => Map::new(),
    };
    let mut out = Vec::new();
    for (key, ids) in groups {
        let ids: Vec<String> = match ids {
            Value::Array(a) => a.iter().filter_map(|v| id_string(Some(v))).collect(),
            v => id_string(Some(&v)).into_iter().collect(),
        };
        for id in ids.into_iter().filter(|id| !limits.is_forbidden_id(id)) {
            let nested = properties.get(&key).and_then(|by_id| by_id.get(&id)).and_then(Value::as_object);
            let props = match nested {
                Some(p) => p.clone(),
                None if properties.values().all(|v| !v.is_object()) => properties.clone(),
                None => Map::new(),
            };
            if !props.is_empty() {
                out.push((key.clone(), id, props));
            }
        }
    }
    out
}

/// Transforms one source record (one NDJSON line of the export) by the mapping of FACTS.md:
///
/// - `event` ← `event_type`; `time` ← `event_time` as UTC milliseconds;
/// - `distinct_id` ← `user_id`, or else `device_id`, or else `""` (an id the source filled in for
///   a missing one, such as `undefined`, counts as missing); `$user_id` and `$device_id` keep the
///   source's values as they are;
/// - `$insert_id` ← the source insert id made valid; without one, the source's per-event `uuid`
///   made valid; without either, a hash of the whole line, so that two different events never
///   share an id while a re-run of the same export still de-duplicates;
/// - `ip` ← `ip_address`; `$city`, `$region`; `$country` ← `country` (the source gives a country
///   name), and `mp_country_code` ← `country` only when it is a two-letter code; `$os`,
///   `$os_version`, `$model`, `$brand`;
/// - `amplitude_uuid`, `amplitude_id`, `amplitude_session_id`, `amplitude_platform`,
///   `amplitude_version_name`, `amplitude_library`, `amplitude_language`, `amplitude_carrier`,
///   `amplitude_groups`, `amplitude_group_properties` ← the source fields of those names
///   (`device_carrier` for the carrier), when the event stays within the import's rules with them
///   (otherwise [`Transformed::left_out`] names them);
/// - then `user_properties` and `event_properties` spread into the properties, the event's own
///   winning. A source property whose name is taken (by the fields above, or a user property by
///   an event property) is kept as `amplitude_user_<name>` or `amplitude_event_<name>`.
///
/// A `$identify` row (`data_type` `identify`) and a `$groupidentify` row (`group_identify`) are
/// profile updates, not events.
pub fn transform_record(line: &[u8], limits: &Limits) -> Result<SourceRecord, TransformError> {
    let mut src = SourceEvent::read(line)?;
    let event_type = src.event_type.take().filter(|s| !s.is_empty());
    let data_type = src.data_type.as_deref().unwrap_or_default();
    let identify = data_type == "identify" || event_type.as_deref() == Some("$identify");
    let group_identify = data_type == "group_identify" || event_type.as_deref() == Some("$groupidentify");
    let event_type = match event_type {
        Some(t) => t,
        None if identify || group_identify => String::new(),
        None => return Err(TransformError::NoEventType),
    };
    let event_time = src.event_time.take().unwrap_or_default();
    let time_ms = parse_naive_utc_ms(&event_time).ok_or_else(|| TransformError::BadTime(event_time.clone()))?;
    let source_user = id_string(src.user_id.as_ref());
    let user_id = real_id(source_user.clone(), limits);
    let profile = match (&user_id, src.user_properties.as_ref()) {
        (Some(u), Some(p)) if !p.is_empty() => Some((u.clone(), p.clone())),
        _ => None,
    };
    if identify {
        return Ok(SourceRecord::Identify { time_ms, profile });
    }
    if group_identify {
        let (groups, properties) = (src.take("groups"), src.take("group_properties"));
        return Ok(SourceRecord::GroupIdentify { time_ms, groups: identified_groups(groups, properties, limits) });
    }
    let source_device = id_string(src.device_id.as_ref());
    let device_id = real_id(source_device.clone(), limits);
    let source_insert = id_string(src.dollar_insert_id.as_ref()).or_else(|| id_string(src.insert_id.as_ref()));
    let insert_id = match (source_insert, id_string(src.rest.get("uuid"))) {
        (Some(id), _) => made_valid(&id, limits),
        (None, Some(uuid)) => made_valid(&uuid, limits),
        (None, None) => hashed_insert_id(&["line", String::from_utf8_lossy(line.trim_ascii()).as_ref()]),
    };

    let mut props = Map::new();
    props.insert("time".into(), Value::from(time_ms));
    // FACTS.md: an empty distinct_id is allowed (the event is not tied to a user).
    props.insert("distinct_id".into(), Value::from(user_id.or(device_id).unwrap_or_default()));
    props.insert("$insert_id".into(), Value::from(insert_id));
    if let Some(d) = source_device {
        props.insert("$device_id".into(), Value::from(d));
    }
    if let Some(u) = source_user {
        props.insert("$user_id".into(), Value::from(u));
    }
    for (from, name) in MAPPED_FROM {
        let Some(v) = present(src.take(from)) else { continue };
        let code = match (&v, from) {
            (Value::String(c), "country") if c.len() == 2 && c.bytes().all(|b| b.is_ascii_alphabetic()) => Some(c.to_ascii_uppercase()),
            _ => None,
        };
        props.insert(name.into(), v);
        if let Some(code) = code {
            props.insert("mp_country_code".into(), Value::from(code));
        }
    }
    // The transform's names, whether this event has a value for them or not: a source property of
    // one of them is renamed, so that a name always means the same thing.
    let taken = |k: &str| {
        ["time", "distinct_id", "$insert_id", "$device_id", "$user_id", "mp_country_code"].contains(&k)
            || MAPPED_FROM.iter().chain(&CARRIED_FROM).any(|(_, name)| *name == k)
    };
    let user_properties = src.user_properties.take().unwrap_or_default();
    for (k, v) in &user_properties {
        let name = if taken(k) { free_name(&props, "amplitude_user_", k) } else { k.clone() };
        props.insert(name, v.clone());
    }
    for (k, v) in src.event_properties.take().unwrap_or_default() {
        if taken(&k) {
            let name = free_name(&props, "amplitude_event_", &k);
            props.insert(name, v);
        } else if let Some(shadowed) = props.insert(k.clone(), v) {
            // The event's own value wins; the user property of that name is kept beside it.
            if user_properties.contains_key(&k) {
                let name = free_name(&props, "amplitude_user_", &k);
                props.insert(name, shadowed);
            }
        }
    }
    // The carried source fields come last, while the event stays within the import's rules.
    let mut left_out = Vec::new();
    for (from, name) in CARRIED_FROM {
        match present(src.take(from)) {
            Some(v) if fits(&v, limits, 0) && props.len() + 1 < limits.properties_below => {
                props.insert(name.into(), v);
            }
            Some(_) => left_out.push(name.to_owned()),
            None => {}
        }
    }
    let mut event = Map::new();
    event.insert("event".into(), Value::from(event_type));
    event.insert("properties".into(), Value::Object(props));
    Ok(SourceRecord::Event(Transformed {
        event: serde_json::to_vec(&Value::Object(event)).expect("a JSON value serializes"),
        time_ms,
        profile,
        left_out,
    }))
}

/// [`transform_record`] for a line that must be an event: a `$identify` or `$groupidentify` row
/// is [`TransformError::NotAnEvent`].
pub fn transform_event(line: &[u8], limits: &Limits) -> Result<Transformed, TransformError> {
    match transform_record(line, limits)? {
        SourceRecord::Event(t) => Ok(t),
        _ => Err(TransformError::NotAnEvent),
    }
}
