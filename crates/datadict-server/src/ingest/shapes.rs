//! The shapes of a project's events, kept with its compiled dictionary (`ingest::cache`): for each
//! event name, the shapes seen (property names and JSON types, in order) and the violation rows
//! one event of that shape produces ([`ShapeRows`]).
//!
//! Why: a tracking request carries one event, so the per-request memo of `ingest::quality` never
//! sees a name twice, and every request made a row, a message, a key and a copy of its sample for
//! each finding (a dozen for an event with a dozen unknown properties), which the event writer
//! then merged and mostly threw away (its samples were already full): a quarter of a tracking
//! request's CPU. With the shape known and sampled, an event's violations are one count of a
//! shared [`ShapeRows`]; until it is sampled, they take the full path, which collects samples.
//!
//! Bounded: at most [`MAX_SHAPES_PER_NAME`] shapes per name, [`MAX_NAMES`] names and [`MAX_ROWS`]
//! rows in all (a sender's events cannot make it grow without end: a shape's rows are its findings,
//! up to one per property); events past a bound take the full path, as before. A dictionary
//! change builds a new compiled dictionary, and with it an empty cache.

use super::quality::{Shape, Violations};
use crate::FastHash;
use crate::store::ShapeRows;
use datadict_core::event::EventCheck;
use datadict_core::Dictionary;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

/// The most shapes kept per event name.
pub const MAX_SHAPES_PER_NAME: usize = 16;

/// The most event names kept.
pub const MAX_NAMES: usize = 4096;

/// The most violation rows kept, all shapes together (a few MB).
pub const MAX_ROWS: usize = 20_000;

/// The shapes of one name, each with its rows.
type Shapes = Vec<(Shape, Arc<ShapeRows>)>;

/// The shapes of one project's events under one version of its dictionary.
#[derive(Debug, Default)]
pub struct ShapeCache {
    kept: Mutex<Kept>,
}

#[derive(Debug, Default)]
struct Kept {
    names: HashMap<String, Shapes, FastHash>,
    /// The rows of every shape kept.
    rows: usize,
}

impl ShapeCache {
    /// The violation rows of `check`'s shape against `dictionary` (made and kept on first sight),
    /// or `None` past the bounds or for an event without a name.
    pub fn shape_of(&self, check: &EventCheck<'_>, dictionary: &Dictionary) -> Option<Arc<ShapeRows>> {
        let name = check.event.as_deref()?;
        let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        let Kept { names, rows: kept_rows } = &mut *kept;
        if let Some(shapes) = names.get(name) {
            if let Some((_, rows)) = shapes.iter().find(|(shape, _)| shape.matches(&check.properties)) {
                return Some(rows.clone());
            }
            if shapes.len() >= MAX_SHAPES_PER_NAME {
                return None;
            }
        } else if names.len() >= MAX_NAMES {
            return None;
        }
        // Full: no shape is made only to be refused.
        if *kept_rows >= MAX_ROWS {
            return None;
        }
        // The rows are the full path's, for this one event.
        let mut one = Violations::default();
        one.check_event(check, dictionary, b"");
        let rows = Arc::new(ShapeRows::new(Some(name.to_owned()), one.into_rows(0)));
        if *kept_rows + rows.rows().len() > MAX_ROWS {
            return None;
        }
        *kept_rows += rows.rows().len();
        let mut shape = Shape::default();
        shape.set(&check.properties);
        names.entry(name.to_owned()).or_default().push((shape, rows.clone()));
        Some(rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingest::quality::Findings;
    use datadict_core::{check_event, Limits};
    use std::collections::{BTreeMap, BTreeSet};

    type Tallies = BTreeMap<(String, String, String), (i64, BTreeSet<String>)>;

    /// The findings' violations and counts of valid events, by key.
    fn tallies(findings: Findings) -> Tallies {
        let mut rows = findings.into_rows(0, 1_000);
        rows.expand_shapes();
        let mut out = Tallies::new();
        for row in rows.violations.into_iter().chain(rows.counts) {
            let slot = out.entry((row.entity, row.property, row.code)).or_default();
            slot.0 += row.count;
            slot.1.extend(row.types);
        }
        out
    }

    /// Once its shapes are sampled, events record the same counts, types and counts of valid
    /// events as a count of each shape as through the full path, and make no row of their own;
    /// before, they take the full path and note their shapes as collecting samples. Duplicate
    /// property names, other types, names without a schema and events without properties
    /// included.
    #[test]
    fn counted_shapes_tally_what_the_full_path_tallies() {
        let dictionary = Dictionary::new(&crate::demo::sample_dictionary(), datadict_core::DEFAULT_NAMESPACE);
        let now = 1_767_225_600_000;
        let shapes = [r#","plan":"pro","color":"red""#, r#","plan":1"#, r#","plan":"pro","plan":2,"x":null"#, r#","price":"9","items":[]"#, ""];
        let names = ["Sign Up", "Purchase", "Page View", "Nope"];
        let mut records = Vec::new();
        for round in 0..3 {
            for name in names {
                for p in shapes.iter().skip(round % 2) {
                    records.push(format!(r#"{{"event":"{name}","properties":{{"time":{now},"distinct_id":"u","$insert_id":"i"{p}}}}}"#));
                }
            }
        }
        let cache = ShapeCache::default();
        let tag = 7 << 32 | 1;
        let run = |shapes: Option<(&ShapeCache, u64)>| {
            let mut findings = Findings::default();
            for record in &records {
                let check = check_event(record.as_bytes(), &Limits::default(), now);
                assert!(check.is_valid(), "{record}: {:?}", check.issues);
                // As `ingest::batch` does: a shape's count stands for the event's valid count.
                if !findings.check_event(&check, &dictionary, shapes, record.as_bytes()) {
                    findings.counts.good(check.event.as_deref().unwrap());
                }
            }
            findings
        };
        let full = tallies(run(None));
        assert!(full.len() > 8, "{full:?}");
        let first = run(Some((&cache, tag)));
        assert!(first.shapes.is_empty());
        assert_eq!(first.sampling.len(), names.len() * shapes.len());
        first.sampling.iter().for_each(|(shape, tag)| shape.mark_sampled(*tag));
        assert_eq!(tallies(first), full);
        let counted = run(Some((&cache, tag)));
        assert!(counted.violations.is_empty() && counted.sampling.is_empty() && counted.counts.is_empty());
        assert_eq!(counted.shapes.iter().map(|(_, n)| n).sum::<i64>(), records.len() as i64);
        assert_eq!(tallies(counted), full);
        // Another tag (a reset, another day) takes the full path again.
        assert!(!run(Some((&cache, tag + 1))).violations.is_empty());
    }

    /// The cache stops growing at its bounds, and what it keeps stays usable: past
    /// [`MAX_SHAPES_PER_NAME`] shapes of a name, and past [`MAX_ROWS`] rows in all.
    #[test]
    fn the_cache_is_bounded() {
        let names: Vec<String> = (0..200).map(|i| format!("E{i}")).collect();
        let entries: Vec<datadict_core::SchemaEntry> =
            serde_json::from_value(serde_json::Value::Array(names.iter().map(|n| serde_json::json!({"entityType": "event", "name": n, "schemaJson": {}})).collect())).unwrap();
        let dictionary = Dictionary::new(&entries, datadict_core::DEFAULT_NAMESPACE);
        let now = 1_767_225_600_000;
        let limits = Limits { properties_below: 1_000, ..Limits::default() };
        let cache = ShapeCache::default();
        let event = |name: &str, props: std::ops::Range<usize>| {
            let props: String = props.map(|p| format!(r#","p{p}":1"#)).collect();
            format!(r#"{{"event":"{name}","properties":{{"time":{now},"distinct_id":"u","$insert_id":"i"{props}}}}}"#)
        };
        let shape_of = |record: &str| {
            let check = check_event(record.as_bytes(), &limits, now);
            assert!(check.is_valid(), "{:?}", check.issues);
            cache.shape_of(&check, &dictionary)
        };
        // One name: a shape per property count, up to the bound.
        let kept = (1..=MAX_SHAPES_PER_NAME + 3).filter(|&n| shape_of(&event("E0", 0..n)).is_some()).count();
        assert_eq!(kept, MAX_SHAPES_PER_NAME);
        assert!(shape_of(&event("E0", 0..2)).is_some(), "a kept shape is still found");
        // 150 rows a shape (a finding per unknown property): the rows' bound stops the names.
        let before: usize = (1..=MAX_SHAPES_PER_NAME).sum();
        let kept = names[1..].iter().filter(|n| shape_of(&event(n, 0..150)).is_some()).count();
        assert_eq!(kept, (MAX_ROWS - before) / 150);
    }
}
