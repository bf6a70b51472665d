//! Checks of events against a project's data dictionary (spec §1, §2.4, §2.5): an event without a
//! schema, a property its schema does not define, a property whose JSON type differs from its
//! definition, events and properties marked `dropped` (removed from the output, with a list of
//! what was removed) or `hidden`. The findings are advisory: the import itself accepts such events,
//! except that dropped data is discarded at ingestion. Profile updates are checked against a
//! `profile` schema by [`profile`]: user profiles against `$user`, group profiles against the
//! schema named by their group key.

pub mod profile;

use crate::api::warehouse;
use crate::event::EventCheck;
use crate::issue::{child_path, Issue, IssueCode};
use crate::schema::{EntityType, PropertyType, SchemaEntry};
use serde_json::Value;
use std::collections::HashMap;

/// Properties the sender or the service sets on every event; they need no definition in a schema.
/// `time`, `distinct_id`, `$insert_id` are the required fields of spec §2.8; the `$`-names and `ip`
/// are FACTS.md's reserved event properties; the `$warehouse_*`, `$import` and `$source` names are
/// spec §2.10's default properties.
pub const SYSTEM_PROPERTIES: [&str; 13] = [
    "time",
    "distinct_id",
    "$insert_id",
    "token",
    "$device_id",
    "$user_id",
    "$identified_id",
    "$anon_id",
    "ip",
    warehouse::IMPORT_ID,
    warehouse::IMPORT_JOB_ID,
    warehouse::IMPORT,
    warehouse::SOURCE,
];

/// The maps of the check hash with foldhash rather than SipHash: they are asked once per event and
/// once per property of every event that arrives, and their keys come from the project's
/// dictionary, so a sender can only look names up, not fill them.
type Map<V> = HashMap<String, V, foldhash::fast::RandomState>;

/// What a schema says about one property name, precompiled per schema.
#[derive(Debug, Clone, PartialEq)]
enum PropertyRule {
    /// A property the schema defines.
    Defined { kind: PropertyType, hidden: bool, dropped: bool },
    /// A [`SYSTEM_PROPERTIES`] name the schema does not define: accepted with any type. Kept in
    /// each event's map so that a property costs one lookup, whether defined, system or unknown.
    System,
}

#[derive(Debug, Clone, PartialEq, Default)]
struct EventRule {
    hidden: bool,
    dropped: bool,
    properties: Map<PropertyRule>,
}

/// A project's event and profile schemas indexed for checking; built once, used for every event
/// and update.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Dictionary {
    events: Map<EventRule>,
    /// The properties of each profile schema, by name: `$user` for user profiles (FACTS.md:
    /// `entityType=profile`, `name=$user`), a group key for that kind of group profile.
    profiles: Map<Map<PropertyRule>>,
}

/// The rules of a schema's properties, with the vendor metadata under `namespace`.
fn property_rules(entry: &SchemaEntry, namespace: &str) -> Map<PropertyRule> {
    (entry.schema_json.properties.iter().flatten())
        .map(|(name, def)| {
            let m = def.vendor(namespace);
            (name.clone(), PropertyRule::Defined { kind: def.kind, hidden: m.hidden == Some(true), dropped: m.dropped == Some(true) })
        })
        .collect()
}

/// [`property_rules`] plus the system properties the schema does not define, for an event schema.
/// The properties `/import` requires are never dropped, even where a dictionary stored before the
/// schema rules refused it says so ([`crate::event::REQUIRED_EVENT_PROPERTIES`]).
fn event_property_rules(entry: &SchemaEntry, namespace: &str) -> Map<PropertyRule> {
    let mut rules = property_rules(entry, namespace);
    for name in crate::event::REQUIRED_EVENT_PROPERTIES {
        if let Some(PropertyRule::Defined { dropped, .. }) = rules.get_mut(name) {
            *dropped = false;
        }
    }
    for name in SYSTEM_PROPERTIES {
        rules.entry(name.to_owned()).or_insert(PropertyRule::System);
    }
    rules
}

impl Dictionary {
    /// Indexes the event and profile entries of `entries`, reading the vendor metadata under
    /// `namespace` (normally [`crate::DEFAULT_NAMESPACE`]).
    pub fn new(entries: &[SchemaEntry], namespace: &str) -> Self {
        let mut events = Map::default();
        let mut profiles = Map::default();
        for entry in entries {
            match entry.entity_type {
                EntityType::Event => {
                    let meta = entry.schema_json.vendor(namespace);
                    let properties = event_property_rules(entry, namespace);
                    events.insert(
                        entry.name.clone(),
                        EventRule { hidden: meta.hidden == Some(true), dropped: meta.dropped == Some(true), properties },
                    );
                }
                EntityType::Profile => {
                    profiles.insert(entry.name.clone(), property_rules(entry, namespace));
                }
            }
        }
        Self { events, profiles }
    }

    /// Whether the dictionary has the user-profile schema (`profile` `$user`).
    pub fn has_user_profile(&self) -> bool {
        self.has_profile(profile::USER_PROFILE)
    }

    /// Whether the dictionary has a `profile` schema named `name` (`$user`, or a group key).
    pub fn has_profile(&self, name: &str) -> bool {
        self.profiles.contains_key(name)
    }

    /// The number of event schemas.
    pub fn len(&self) -> usize {
        self.events.len()
    }

    /// Whether there is no event schema (profile schemas aside).
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }
}

/// What the dictionary says about one event.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DictionaryFindings {
    /// Advisory issues, in the order: event-level, then properties in input order.
    pub issues: Vec<Issue>,
    /// The whole event is dropped at ingestion: leave it out of the output.
    pub drop_event: bool,
    /// Properties dropped at ingestion: remove them from the output (see [`remove_properties`]).
    pub dropped_properties: Vec<String>,
}

impl DictionaryFindings {
    /// Whether the event must be rewritten (a property to strip) before it is sent.
    pub fn must_rewrite(&self) -> bool {
        !self.drop_event && !self.dropped_properties.is_empty()
    }
}

/// Whether a value of type `seen` satisfies a definition of type `defined` (an integer is also a
/// number, as in JSON Schema).
pub fn type_matches(defined: PropertyType, seen: PropertyType) -> bool {
    defined == seen || (defined == PropertyType::Number && seen == PropertyType::Integer)
}

/// One finding of the dictionary check, borrowed from the event and the dictionary so that a
/// caller that only counts findings allocates nothing: the path and the message are built only
/// when asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Finding<'a> {
    /// The event's name.
    pub event: &'a str,
    /// The property the finding is about, `None` for the whole event.
    pub property: Option<&'a str>,
    /// The kind of problem.
    pub code: IssueCode,
    /// The property's JSON type as sent and its type in the schema, for a type mismatch.
    types: Option<(PropertyType, PropertyType)>,
    /// The property's JSON type as sent, for a finding about a property.
    seen: Option<PropertyType>,
}

impl Finding<'_> {
    /// The JSON type of the property as sent (`None` for a finding about the whole event), so that
    /// a caller recording observed types need not look the property up again.
    pub fn seen_type(&self) -> Option<PropertyType> {
        self.seen
    }

    /// The issue path: `event` for the whole event, `properties.name` (or `properties["odd name"]`)
    /// for a property.
    pub fn path(&self) -> String {
        match self.property {
            Some(name) => child_path("properties", name),
            None => "event".to_owned(),
        }
    }

    /// The message that says what was found and what to do.
    pub fn message(&self) -> String {
        let (name, prop) = (self.event, self.property.unwrap_or_default());
        match self.code {
            IssueCode::NoSchema => format!("event `{name}` has no schema in the dictionary; add one to describe it, or fix the event name"),
            IssueCode::DroppedEvent => format!(
                "event `{name}` is marked dropped: it is discarded at ingestion and left out of the output; clear `dropped` in its schema to keep it"
            ),
            IssueCode::HiddenEvent => format!("event `{name}` is marked hidden: it is ingested but not shown in the UI"),
            IssueCode::UnknownProperty => format!("property `{prop}` is not in the schema of `{name}`; add it to the schema, or fix its name"),
            IssueCode::DroppedProperty => {
                format!("property `{prop}` is marked dropped: it is removed from the output; clear `dropped` in the schema to keep it")
            }
            IssueCode::TypeMismatch => match self.types {
                Some((seen, defined)) => format!("property `{prop}` is a JSON {seen}; its schema says {defined}: send {} or change the definition", defined.with_article()),
                None => self.code.describe().to_owned(),
            },
            IssueCode::HiddenProperty => format!("property `{prop}` is marked hidden: it is ingested but not shown in the UI"),
            // The check reports no other code.
            other => other.describe().to_owned(),
        }
    }

    /// The finding as an owned [`Issue`].
    pub fn to_issue(&self) -> Issue {
        Issue::new(self.path(), self.code, self.message())
    }
}

/// Checks one event (as extracted by [`crate::check_event`]) against the dictionary and hands each
/// finding to `visit`, in the order: event-level, then properties in input order. This is the one
/// rule; [`check_against_dictionary`] collects its findings, and the server tallies them without
/// building a path or a message per finding.
pub fn for_each_dictionary_finding<'a>(event: &'a EventCheck<'_>, dictionary: &'a Dictionary, mut visit: impl FnMut(Finding<'a>)) {
    let Some(name) = event.event.as_deref() else {
        return;
    };
    let whole = |code| Finding { event: name, property: None, code, types: None, seen: None };
    let Some(rule) = dictionary.events.get(name) else {
        visit(whole(IssueCode::NoSchema));
        return;
    };
    if rule.dropped {
        visit(whole(IssueCode::DroppedEvent));
        return;
    }
    if rule.hidden {
        visit(whole(IssueCode::HiddenEvent));
    }
    for prop in &event.properties {
        let prop_name: &str = prop.name.as_ref();
        let at = |code, types| Finding { event: name, property: Some(prop_name), code, types, seen: Some(prop.kind) };
        match rule.properties.get(prop_name) {
            Some(PropertyRule::System) => {}
            None => visit(at(IssueCode::UnknownProperty, None)),
            Some(PropertyRule::Defined { dropped: true, .. }) => visit(at(IssueCode::DroppedProperty, None)),
            Some(&PropertyRule::Defined { kind, hidden, .. }) => {
                if !type_matches(kind, prop.kind) {
                    visit(at(IssueCode::TypeMismatch, Some((prop.kind, kind))));
                }
                if hidden {
                    visit(at(IssueCode::HiddenProperty, None));
                }
            }
        }
    }
}

/// Checks one event (as extracted by [`crate::check_event`]) against the dictionary.
pub fn check_against_dictionary(event: &EventCheck<'_>, dictionary: &Dictionary) -> DictionaryFindings {
    let mut out = DictionaryFindings::default();
    for_each_dictionary_finding(event, dictionary, |f| {
        match (f.code, f.property) {
            (IssueCode::DroppedEvent, _) => out.drop_event = true,
            (IssueCode::DroppedProperty, Some(name)) => out.dropped_properties.push(name.to_owned()),
            _ => {}
        }
        out.issues.push(f.to_issue());
    });
    out
}

/// Why a record could not be rewritten.
#[derive(Debug, thiserror::Error)]
#[error("the record cannot be rewritten ({0}); check that it is one JSON object with `properties`")]
pub struct RewriteError(#[from] serde_json::Error);

/// Removes `names` from a record's `properties`, keeping every other key in its order. This is the
/// slow path of the batcher (design notes, step 4): only records that must change are parsed.
pub fn remove_properties(record: &[u8], names: &[String]) -> Result<Vec<u8>, RewriteError> {
    let mut value: Value = serde_json::from_slice(record)?;
    if let Some(Value::Object(props)) = value.get_mut("properties") {
        for name in names {
            props.shift_remove(name);
        }
    }
    Ok(serde_json::to_vec(&value)?)
}

#[cfg(test)]
mod tests;
