//! An aggregate of many records' issues: counts by code, by event name and by property, each with a
//! few example input positions, so a report of a million events stays short and points to lines.

use crate::issue::{Issue, IssueCode};
use crate::split::RecordPos;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A count with the first few input positions where it was seen.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tally {
    pub count: u64,
    pub examples: Vec<RecordPos>,
}

impl Tally {
    fn add(&mut self, pos: RecordPos, max_examples: usize) {
        self.count += 1;
        // A record with several issues of the same kind is one example, not several.
        if self.examples.len() < max_examples && self.examples.last() != Some(&pos) {
            self.examples.push(pos);
        }
    }
}

/// Issue counts over many records. Keys are ordered, so the summary serializes deterministically.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IssueSummary {
    /// Records added, with or without issues.
    pub records: u64,
    /// Records with at least one issue.
    pub records_with_issues: u64,
    pub by_code: BTreeMap<IssueCode, Tally>,
    /// Keyed by event name; records without a usable name are counted under the empty string.
    pub by_event: BTreeMap<String, Tally>,
    /// Keyed by the issue's path when it points into `properties` (e.g. `properties.plan`).
    pub by_property: BTreeMap<String, Tally>,
    /// How many example positions each tally keeps.
    pub max_examples: usize,
}

impl Default for IssueSummary {
    fn default() -> Self {
        Self::new(5)
    }
}

impl IssueSummary {
    /// An empty summary keeping up to `max_examples` positions per tally.
    pub fn new(max_examples: usize) -> Self {
        Self {
            records: 0,
            records_with_issues: 0,
            by_code: BTreeMap::new(),
            by_event: BTreeMap::new(),
            by_property: BTreeMap::new(),
            max_examples,
        }
    }

    /// Adds one record's issues.
    pub fn add(&mut self, pos: RecordPos, event: Option<&str>, issues: &[Issue]) {
        self.records += 1;
        if issues.is_empty() {
            return;
        }
        self.records_with_issues += 1;
        let max = self.max_examples;
        for issue in issues {
            self.by_code.entry(issue.code).or_default().add(pos, max);
            match self.by_event.get_mut(event.unwrap_or("")) {
                Some(t) => t.add(pos, max),
                None => self.by_event.entry(event.unwrap_or("").to_owned()).or_default().add(pos, max),
            }
            if issue.path.starts_with("properties.") || issue.path.starts_with("properties[") {
                match self.by_property.get_mut(&issue.path) {
                    Some(t) => t.add(pos, max),
                    None => self.by_property.entry(issue.path.clone()).or_default().add(pos, max),
                }
            }
        }
    }

    /// Adds every count of `other` (examples are kept up to this summary's maximum).
    pub fn merge(&mut self, other: &IssueSummary) {
        self.records += other.records;
        self.records_with_issues += other.records_with_issues;
        let max = self.max_examples;
        let join = |into: &mut Tally, from: &Tally| {
            into.count += from.count;
            for p in &from.examples {
                if into.examples.len() < max && !into.examples.contains(p) {
                    into.examples.push(*p);
                }
            }
        };
        for (k, t) in &other.by_code {
            join(self.by_code.entry(*k).or_default(), t);
        }
        for (k, t) in &other.by_event {
            join(self.by_event.entry(k.clone()).or_default(), t);
        }
        for (k, t) in &other.by_property {
            join(self.by_property.entry(k.clone()).or_default(), t);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use IssueCode::*;

    fn pos(index: u64) -> RecordPos {
        RecordPos { index, line: index + 1 }
    }

    #[test]
    fn counts_by_code_event_and_property_with_examples() {
        let mut s = IssueSummary::new(2);
        let issue = |path: &str, code| Issue::new(path, code, "m");
        s.add(pos(0), Some("Buy"), &[issue("properties.price", TypeMismatch), issue("properties.color", UnknownProperty)]);
        s.add(pos(1), Some("Buy"), &[]);
        s.add(pos(2), Some("Buy"), &[issue("properties.price", TypeMismatch)]);
        s.add(pos(3), None, &[issue("", InvalidJson)]);
        s.add(pos(4), Some("Buy"), &[issue("properties.price", TypeMismatch)]);
        assert_eq!((s.records, s.records_with_issues), (5, 4));
        assert_eq!(s.by_code[&TypeMismatch], Tally { count: 3, examples: vec![pos(0), pos(2)] });
        assert_eq!(s.by_code[&InvalidJson].count, 1);
        assert_eq!(s.by_event["Buy"].count, 4);
        assert_eq!(s.by_event["Buy"].examples, vec![pos(0), pos(2)]);
        assert_eq!(s.by_event[""].count, 1);
        assert_eq!(s.by_property.keys().collect::<Vec<_>>(), ["properties.color", "properties.price"]);
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(json["byCode"]["type_mismatch"]["count"], 3);
        assert_eq!(json["byCode"]["type_mismatch"]["examples"][1]["line"], 3);

        let mut total = IssueSummary::new(2);
        total.merge(&s);
        total.merge(&s);
        assert_eq!(total.by_code[&TypeMismatch].count, 6);
        assert_eq!(total.by_code[&TypeMismatch].examples, vec![pos(0), pos(2)]);
        assert_eq!(total.records, 10);
    }
}
