//! The serde walk of [`check_event`](super::check_event): one pass over a record through serde's
//! visitors that builds no DOM, borrows strings from the input when they hold no escapes, checks
//! nesting depth, object keys, array items and string lengths as it goes, and keeps the fields the
//! whole-record rules read ([`Found`]). It is the reference for every message; the scanner in
//! `scan.rs` may answer only where this walk would find nothing to say.

use super::{EventCheck, PropertySeen};
use crate::issue::{child_path, index_path, Issue, IssueCode};
use crate::limits::Limits;
use crate::schema::PropertyType;
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::borrow::Cow;
use std::fmt;

/// The value of a field as the walk saw it; strings are kept only for the fields the rules read.
#[derive(Debug)]
pub(super) enum Seen<'de> {
    Null,
    Bool(bool),
    Int(i64),
    UInt(u64),
    Float(f64),
    Str(Option<Cow<'de, str>>),
    Array,
    Object,
}

impl Seen<'_> {
    pub(super) fn kind(&self) -> PropertyType {
        match self {
            Seen::Null => PropertyType::Null,
            Seen::Bool(_) => PropertyType::Boolean,
            Seen::Int(_) | Seen::UInt(_) => PropertyType::Integer,
            Seen::Float(_) => PropertyType::Number,
            Seen::Str(_) => PropertyType::String,
            Seen::Array => PropertyType::Array,
            Seen::Object => PropertyType::Object,
        }
    }

    /// Names the value for a message: its type and, for scalars, the value itself.
    pub(super) fn describe(&self) -> String {
        match self {
            Seen::Null => "null".to_owned(),
            Seen::Bool(b) => format!("the boolean {b}"),
            Seen::Int(n) => format!("the number {n}"),
            Seen::UInt(n) => format!("the number {n}"),
            // As JSON writers write it (serde_json's, as `validate::describe` does): past 1e21 in
            // scientific notation, not a row of hundreds of digits. The standard library's float
            // formatting is left out on purpose: it would add about 7 KB gzipped to the web app.
            Seen::Float(n) => format!("the number {}", serde_json::Value::from(*n)),
            Seen::Str(Some(s)) => format!("the string {:?}", excerpt(s)),
            Seen::Str(None) => "a string".to_owned(),
            Seen::Array => "an array".to_owned(),
            Seen::Object => "an object".to_owned(),
        }
    }
}

pub(super) fn excerpt(s: &str) -> Cow<'_, str> {
    match s.char_indices().nth(40) {
        Some((cut, _)) => Cow::Owned(format!("{}…", &s[..cut])),
        None => Cow::Borrowed(s),
    }
}

#[derive(Debug)]
pub(super) enum Seg<'de> {
    Key(Cow<'de, str>),
    Index(usize),
}

pub(super) struct Ctx<'l, 'de> {
    pub(super) limits: &'l Limits,
    pub(super) check: EventCheck<'de>,
    /// The path of the value being walked, built into a string only when an issue is reported.
    pub(super) path: Vec<Seg<'de>>,
    /// `too_deep` is reported once per top-level property, not once per nested level.
    pub(super) deep_reported: bool,
}

impl Ctx<'_, '_> {
    fn path_string(&self) -> String {
        let mut out = String::new();
        for seg in &self.path {
            out = match seg {
                Seg::Key(k) => child_path(&out, k),
                Seg::Index(i) => index_path(&out, *i),
            };
        }
        out
    }

    fn issue(&mut self, code: IssueCode, message: String) {
        let path = self.path_string();
        self.check.issues.push(Issue::new(path, code, message));
    }
}

/// The fields of a record that the rules read after the walk.
#[derive(Default)]
pub(super) struct Found<'de> {
    pub(super) is_object: Option<Seen<'de>>,
    pub(super) event: Option<Seen<'de>>,
    pub(super) properties: Option<Seen<'de>>,
    pub(super) time: Option<Seen<'de>>,
    pub(super) distinct_id: Option<Seen<'de>>,
    pub(super) insert_id: Option<Seen<'de>>,
    pub(super) token: Option<Seen<'de>>,
    pub(super) unknown_top: Vec<Cow<'de, str>>,
    /// Set by the scanner alone (see [`super::PropertyLayout`]).
    pub(super) layout: Option<super::PropertyLayout>,
}

/// A map key, borrowed from the input when it holds no escapes.
struct Key<'de>(Cow<'de, str>);

impl<'de> de::Deserialize<'de> for Key<'de> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string key")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
        }
        d.deserialize_str(V)
    }
}

pub(super) struct RecordSeed<'c, 'l, 'de> {
    pub(super) ctx: &'c mut Ctx<'l, 'de>,
}

impl<'de> DeserializeSeed<'de> for RecordSeed<'_, '_, 'de> {
    type Value = Found<'de>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for RecordSeed<'_, '_, 'de> {
    type Value = Found<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an event object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut found = Found::default();
        while let Some(Key(key)) = map.next_key()? {
            match key.as_ref() {
                "event" => {
                    self.ctx.path.push(Seg::Key(Cow::Borrowed("event")));
                    found.event = Some(map.next_value_seed(Walk { ctx: self.ctx, depth: 0, keep: true })?);
                    self.ctx.path.pop();
                }
                "properties" => {
                    self.ctx.path.push(Seg::Key(Cow::Borrowed("properties")));
                    found.properties = Some(map.next_value_seed(PropertiesSeed { ctx: self.ctx, found: &mut found })?);
                    self.ctx.path.pop();
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                    found.unknown_top.push(key);
                }
            }
        }
        Ok(found)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Found { is_object: Some(Seen::Array), ..Found::default() })
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        Ok(Found { is_object: Some(Seen::Bool(v)), ..Found::default() })
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Found { is_object: Some(Seen::Int(v)), ..Found::default() })
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(Found { is_object: Some(Seen::UInt(v)), ..Found::default() })
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Ok(Found { is_object: Some(Seen::Float(v)), ..Found::default() })
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Found { is_object: Some(Seen::Str(Some(Cow::Owned(v.to_owned())))), ..Found::default() })
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Found { is_object: Some(Seen::Null), ..Found::default() })
    }
}

/// Walks the `properties` object: counts properties, records each one's type and keeps the values
/// of `time`, `distinct_id`, `$insert_id` and `token`.
struct PropertiesSeed<'c, 'f, 'l, 'de> {
    ctx: &'c mut Ctx<'l, 'de>,
    found: &'f mut Found<'de>,
}

impl<'de> DeserializeSeed<'de> for PropertiesSeed<'_, '_, '_, 'de> {
    type Value = Seen<'de>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for PropertiesSeed<'_, '_, '_, 'de> {
    type Value = Seen<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object of properties")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while let Some(Key(name)) = map.next_key()? {
            let slot = match name.as_ref() {
                "time" => Some(&mut self.found.time),
                "distinct_id" => Some(&mut self.found.distinct_id),
                "$insert_id" => Some(&mut self.found.insert_id),
                "token" => Some(&mut self.found.token),
                _ => None,
            };
            self.ctx.path.push(Seg::Key(name.clone()));
            self.ctx.deep_reported = false;
            let seen = map.next_value_seed(Walk { ctx: self.ctx, depth: 0, keep: slot.is_some() })?;
            self.ctx.path.pop();
            self.ctx.check.properties.push(PropertySeen { name, kind: seen.kind() });
            if let Some(slot) = slot {
                *slot = Some(seen);
            }
        }
        Ok(Seen::Object)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Seen::Array)
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        Ok(Seen::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Seen::Int(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(Seen::UInt(v))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Ok(Seen::Float(v))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Seen::Str(Some(Cow::Owned(v.to_owned()))))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Seen::Null)
    }
}

/// Walks any value below the top level, checking nesting depth, object keys, array items and
/// string lengths. `depth` is the nesting level of the value's parent container (0 for the value
/// of a top-level property).
struct Walk<'c, 'l, 'de> {
    ctx: &'c mut Ctx<'l, 'de>,
    depth: usize,
    /// Whether to keep a string's value (only the fields the rules read are kept).
    keep: bool,
}

impl Walk<'_, '_, '_> {
    fn enter(&mut self, what: &str) -> usize {
        let level = self.depth + 1;
        if level > self.ctx.limits.max_depth && !self.ctx.deep_reported {
            self.ctx.deep_reported = true;
            let max = self.ctx.limits.max_depth;
            self.ctx.issue(
                IssueCode::TooDeep,
                format!("{what} here is nested {level} levels deep; at most {max} levels are allowed: flatten the value"),
            );
        }
        level
    }

    fn string(&mut self, len: usize) {
        let max = self.ctx.limits.string_truncate_bytes;
        if len > max {
            let path = self.ctx.path_string();
            self.ctx.check.warnings.push(Issue::new(
                path,
                IssueCode::StringTruncated,
                format!("the string is {len} bytes; the service keeps the first {max} bytes, shorten it to keep all of it"),
            ));
        }
    }
}

impl<'de> DeserializeSeed<'de> for Walk<'_, '_, 'de> {
    type Value = Seen<'de>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walk<'_, '_, 'de> {
    type Value = Seen<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<Self::Value, A::Error> {
        let level = self.enter("an object");
        let mut keys = 0usize;
        while let Some(Key(key)) = map.next_key()? {
            keys += 1;
            self.ctx.path.push(Seg::Key(key));
            map.next_value_seed(Walk { ctx: self.ctx, depth: level, keep: false })?;
            self.ctx.path.pop();
        }
        let limit = self.ctx.limits.object_keys_below;
        if keys >= limit {
            self.ctx.issue(
                IssueCode::TooManyKeys,
                format!("the object has {keys} keys; a nested object must have fewer than {limit}"),
            );
        }
        Ok(Seen::Object)
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<Self::Value, A::Error> {
        let level = self.enter("an array");
        let mut items = 0usize;
        loop {
            self.ctx.path.push(Seg::Index(items));
            let next = seq.next_element_seed(Walk { ctx: self.ctx, depth: level, keep: false })?;
            self.ctx.path.pop();
            if next.is_none() {
                break;
            }
            items += 1;
        }
        let limit = self.ctx.limits.array_items_below;
        if items >= limit {
            self.ctx.issue(
                IssueCode::TooManyItems,
                format!("the array has {items} items; an array must have fewer than {limit}"),
            );
        }
        Ok(Seen::Array)
    }

    fn visit_borrowed_str<E: de::Error>(mut self, v: &'de str) -> Result<Self::Value, E> {
        self.string(v.len());
        Ok(Seen::Str(self.keep.then_some(Cow::Borrowed(v))))
    }
    fn visit_str<E: de::Error>(mut self, v: &str) -> Result<Self::Value, E> {
        self.string(v.len());
        Ok(Seen::Str(self.keep.then(|| Cow::Owned(v.to_owned()))))
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        Ok(Seen::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Seen::Int(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(Seen::UInt(v))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Ok(Seen::Float(v))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Seen::Null)
    }
}
