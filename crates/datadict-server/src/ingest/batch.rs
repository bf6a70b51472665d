//! The batch check of every way events arrive (`POST /import`, `/track`, warehouse syncs,
//! migrations): the core's rules per record (the route's [`EventRules`], in an [`Intake`]), the
//! project tokens the events may name, the dictionary's drops ([`Drops`]), what the receiver
//! adds to a tracked event, string truncation, and the parts sent to the event writer
//! ([`check_batch`]); [`store_events`] runs it for a request, with the project's compiled
//! dictionary from `ingest::cache`, and waits for the commit of its events and data-quality rows.
//! [`send_checked`] does the same for a tracking body whose records [`check_body`] checked
//! already, when its tokens were read, and leaves the wait for the commit to its caller.

use crate::FastHash;
use crate::error::ApiError;
use crate::store::{EventBatch, EventSink, PendingInsert};
use crate::{AppState, Config};
use axum::body::Bytes;
use datadict_core::event::{EventCheck, PropertySeen};
use datadict_core::{
    check_against_dictionary, check_import_body_with_rules, ClientIp, check_import_records, complete_event_with, remove_properties, truncate_strings, CheckedRecord, Completion, Dictionary, EntityType,
    EventRules, FailedRecord, ImportBodyCheck, ImportBodyError, ImportRecords, InputFormat, IssueCode, Limits, SchemaEntry,
};
use serde_json::Value;
use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use super::quality::{reject, reject_withholding, Findings};
use super::redact::Withheld;
use super::shapes::ShapeCache;

/// The bad store's code of an event refused for naming another project's token (not a core code:
/// the core does not know projects).
pub const TOKEN_REFUSED: &str = "token_refused";

/// Why a record whose token (`field`: `properties.token`, `$token`) names no project is refused.
pub fn unknown_token(field: &str) -> String {
    format!("`{field}` is not the token of any project; send the project token from the project's settings")
}

/// What checking a batch produced.
#[derive(Debug, Default)]
pub struct Checked {
    /// Records in the body, valid or not.
    pub records: usize,
    /// Valid records sent to the event sink.
    pub stored: usize,
    /// Valid records that the dictionary drops (counted as imported, as the service does).
    pub dropped: usize,
    /// One entry per problem of every record not stored, by record index.
    pub failed: Vec<FailedRecord>,
    /// What the dictionary check on arrival found in the valid records (empty when it is off),
    /// the records the rules refused (the bad store), and good and bad counts per event name.
    pub findings: Findings,
}

/// How a route receives events.
#[derive(Debug, Clone, Default)]
pub struct Intake {
    /// The core's rules for each event ([`EventRules::IMPORT`] by default).
    pub rules: EventRules,
    /// The connection's address, to add as `ip` to events without one, with the `distinct_id`
    /// hashed from it for events without one (`ip=1`).
    pub ip: Option<ClientIp>,
    /// The project tokens the events carry (`/track`), when the rules read them.
    pub tokens: Option<Tokens>,
    /// The project's dictionary, to check every valid event against on arrival (`None`: the
    /// check is off, `--no-dictionary-check`). Indexed once per request or job.
    pub dictionary: Option<Arc<Dictionary>>,
    /// The route the records came by (`import`, `track`, `job`), as the bad store names it.
    pub route: &'static str,
    /// The project's dictionary version when the route has read it already (`/track`, with its
    /// token lookup), so that [`store_events`] does not read it again.
    pub dictionary_version: Option<i64>,
    /// The event shapes of the dictionary.
    pub shapes: Option<Arc<ShapeCache>>,
    /// The store's sampling tag at the check ([`crate::store::Store::sample_tag`], set by
    /// `check_and_store` from the clock reading its quality rows are dated by; 0 keeps every
    /// event on the full path).
    pub sample_tag: u64,
}

/// The project tokens named by a request's events and the project each names (`None`: none),
/// with the project the request writes to: an event that names another token is refused.
#[derive(Debug, Clone, Default)]
pub struct Tokens {
    pub project_id: i64,
    pub known: HashMap<String, Option<i64>, FastHash>,
}

impl Tokens {
    /// Why an event naming `token` is refused, if it is.
    fn refusal(&self, token: &str) -> Option<String> {
        let p = self.project_id;
        match self.known.get(token).copied().flatten() {
            Some(project) if project == p => None,
            Some(_) => Some(format!(
                "`properties.token` is the token of another project than project {p}, which this request writes to; send each project's events in their own request"
            )),
            None => Some(unknown_token("properties.token")),
        }
    }
}

/// What a project's dictionary drops at ingestion (spec §2.4, §2.5), by event name: the whole
/// event, or some of its properties.
///
/// The core's [`check_against_dictionary`] decides it, but is asked once per schema when the
/// request starts rather than once per event: besides the drops it writes every advisory finding
/// (no schema, unknown property, type mismatch, hidden) with a formatted path and message, which
/// the import does not use and which cost about a tenth of the import's CPU (callgrind). Its drop
/// decisions depend only on the event's name and the names of its properties (never on values or
/// types), so asking it about a probe event holding every property a schema defines gives the
/// answer for any event of that name; a test checks the two ways agree.
///
/// Its maps hash with foldhash instead of SipHash: they are asked once per event and once per
/// property of an event with dropped properties. Their keys come from the project's dictionary,
/// so a sender can only look names up, not fill the maps with colliding ones.
#[derive(Debug, Clone, Default)]
pub struct Drops {
    events: HashMap<String, Dropping, FastHash>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Dropping {
    Event,
    Properties(HashSet<String, FastHash>),
}

impl Drops {
    /// Reads the event schemas of `entries` (as [`Dictionary::new`] does, vendor metadata under
    /// `namespace`).
    pub fn new(entries: &[SchemaEntry], namespace: &str) -> Self {
        let dictionary = Dictionary::new(entries, namespace);
        let mut events: HashMap<String, Dropping, FastHash> = HashMap::default();
        for entry in entries.iter().filter(|e| e.entity_type == EntityType::Event) {
            let probe = EventCheck {
                event: Some(Cow::Borrowed(entry.name.as_str())),
                properties: (entry.schema_json.properties.iter().flatten())
                    .map(|(name, def)| PropertySeen { name: Cow::Borrowed(name.as_str()), kind: def.kind })
                    .collect(),
                ..EventCheck::default()
            };
            let findings = check_against_dictionary(&probe, &dictionary);
            if findings.drop_event {
                events.insert(entry.name.clone(), Dropping::Event);
            } else if !findings.dropped_properties.is_empty() {
                // Two entries with one name (the dictionary keeps one rule per name) add up.
                if let Dropping::Properties(names) =
                    events.entry(entry.name.clone()).or_insert_with(|| Dropping::Properties(HashSet::default()))
                {
                    names.extend(findings.dropped_properties);
                }
            }
        }
        Self { events }
    }

    /// What the dictionary drops of events named `name`, to keep out of a refused record's
    /// sample.
    fn withheld(&self, name: &str) -> Withheld {
        match self.events.get(name) {
            None => Withheld::Nothing,
            Some(Dropping::Event) => Withheld::Event,
            Some(Dropping::Properties(names)) => Withheld::Properties(names.iter().cloned().collect()),
        }
    }

    /// What to do with one valid event: `None` to drop it, else the properties to remove.
    pub(crate) fn of<'c>(&self, check: &'c EventCheck<'_>) -> Option<Vec<&'c str>> {
        // A valid event has a name; without one the dictionary has nothing to say either. Most
        // projects drop nothing: no name is hashed for them (`get` hashes even on an empty map).
        let Some(name) = check.event.as_deref().filter(|_| !self.events.is_empty()) else { return Some(Vec::new()) };
        match self.events.get(name) {
            None => Some(Vec::new()),
            Some(Dropping::Event) => None,
            Some(Dropping::Properties(names)) => {
                Some(check.properties.iter().map(|p| p.name.as_ref()).filter(|n| names.contains(*n)).collect())
            }
        }
    }
}

/// Rows per part sent to the event writer: small enough that the writer starts early, large
/// enough that a part costs nothing noticeable to send.
const ROWS_PER_PART: usize = 250;

/// The text room reserved for a request's first part (about 250 records of 1 KB); the record
/// count is not known before the records are read.
const FIRST_PART_BYTES: usize = 256 * 1024;

/// A body refused as a whole: 413 over the request limits, 400 for its framing.
fn refuse(e: ImportBodyError) -> ApiError {
    match e {
        ImportBodyError::TooLarge { .. } | ImportBodyError::TooManyRecords { .. } => ApiError::PayloadTooLarge(e.to_string()),
        ImportBodyError::Framing(_) => ApiError::BadRequest(e.to_string()),
    }
}

fn no_events() -> ApiError {
    ApiError::BadRequest("the body holds no events; send at least one event".into())
}

/// Every record of a body checked under `rules`, once: a tracking request's first pass, which
/// reads the tokens its events carry ([`body_tokens`]), so that the project, and the dictionary
/// the events are checked against, are known; [`send_checked`] then stores these checks without
/// checking the records a second time (that second check was about 4% of a small tracking
/// request's instructions, callgrind, and as much as the first for a large one). A body refused
/// as a whole is refused here.
pub fn check_body<'a>(body: &'a [u8], format: InputFormat, rules: &EventRules, limits: &Limits, now_ms: i64) -> Result<ImportBodyCheck<'a>, ApiError> {
    let checked = check_import_body_with_rules(body, format, rules, limits, now_ms).map_err(refuse)?;
    if checked.records.is_empty() {
        return Err(no_events());
    }
    Ok(checked)
}

/// The project tokens the events of a body checked by [`check_body`] carry (`properties.token`),
/// each once, in the order of their first event.
pub fn body_tokens(checked: &ImportBodyCheck<'_>) -> Result<Vec<String>, ApiError> {
    let mut tokens = TokenList::default();
    checked.records.iter().for_each(|record| tokens.see(record));
    tokens.finish()
}

/// The distinct tokens of the records seen, in order, and how many records there were.
#[derive(Default)]
struct TokenList {
    tokens: Vec<String>,
    seen: usize,
}

impl TokenList {
    fn see(&mut self, record: &CheckedRecord<'_>) {
        self.seen += 1;
        if let Some(token) = record.check.token.as_deref() {
            if !self.tokens.iter().any(|t| t == token) {
                self.tokens.push(token.to_owned());
            }
        }
    }

    fn finish(self) -> Result<Vec<String>, ApiError> {
        match self.seen {
            0 => Err(no_events()),
            _ => Ok(self.tokens),
        }
    }
}

/// Bodies up to this size are checked on the request's own task rather than on the blocking
/// pool: a tracked event (a few hundred bytes) is checked in a few microseconds, less than the
/// hand-over to another thread and back costs, while a large import would hold up the other
/// requests of its runtime thread. `/track` checks its body once, for its tokens and then for
/// storing ([`check_body`], [`send_checked`]), on the blocking pool past this size.
pub const INLINE_BYTES: usize = 16 * 1024;

/// Checks and stores the events of one request (the text of `body`, framed by `format`) for
/// `project_id`, through [`check_batch`] and the event writer, with the project's compiled
/// dictionary (`ingest::cache`); returns once they are committed: what is counted as stored is on
/// disk.
pub async fn store_events(state: &AppState, project_id: i64, body: Bytes, format: InputFormat, mut intake: Intake) -> Result<Checked, ApiError> {
    let compiled = super::cache::compiled_dictionary(state, project_id, intake.dictionary_version).await?;
    intake.dictionary = compiled.dictionary;
    intake.shapes = Some(compiled.shapes);
    check_and_store(state, project_id, body, format, intake, compiled.drops).await
}

/// [`check_batch`] into the event writer, and the request's data-quality rows after the events,
/// so that the writer stores both in one transaction (one commit per request, shared by the
/// requests of a group commit); returns once they are committed.
pub(crate) async fn check_and_store<B: AsRef<[u8]> + Send + 'static>(
    state: &AppState,
    project_id: i64,
    body: B,
    format: InputFormat,
    mut intake: Intake,
    drops: Arc<Drops>,
) -> Result<Checked, ApiError> {
    // The config, not a copy of its limits: the limits hold strings, and a tracking request is
    // small enough for a copy to count.
    let config = state.config.clone();
    let now_ms = super::now_ms();
    intake.sample_tag = state.store.sample_tag(now_ms);
    let inline = body.as_ref().len() <= INLINE_BYTES;
    // A body checked here is checked whole before the writer hears of it (a ready sink).
    let sink = match inline {
        true => state.store.ready_event_sink(project_id, now_ms / 1000),
        false => state.store.event_sink(project_id, now_ms / 1000),
    };
    let run = move || {
        let records = check_import_records(body.as_ref(), format, &intake.rules, &config.limits, now_ms).map_err(refuse)?;
        check_into(body.as_ref(), RecordSource::Reading(records), &intake, &config, &drops, now_ms, sink)
    };
    let (checked, pending) = match inline {
        true => run()?,
        false => tokio::task::spawn_blocking(run).await.map_err(|e| ApiError::Internal(e.into()))??,
    };
    // The answer waits for the commit: a 200 is only sent for events on disk.
    pending.wait().await?;
    Ok(checked)
}

/// [`store_events`] for a body already checked by [`check_body`] at `now_ms` (a tracking
/// request's first pass), up to handing its events to the event writer: its records are prepared
/// from those checks, on this thread. Returns what was checked and the commit to wait for before
/// answering.
pub async fn send_checked(
    state: &AppState,
    project_id: i64,
    body: &[u8],
    checked: ImportBodyCheck<'_>,
    now_ms: i64,
    mut intake: Intake,
) -> Result<(Checked, PendingInsert), ApiError> {
    let compiled = super::cache::compiled_dictionary(state, project_id, intake.dictionary_version).await?;
    intake.dictionary = compiled.dictionary;
    intake.shapes = Some(compiled.shapes);
    intake.sample_tag = state.store.sample_tag(now_ms);
    let sink = state.store.ready_event_sink(project_id, now_ms / 1000);
    check_into(body, RecordSource::checked(checked), &intake, &state.config, &compiled.drops, now_ms, sink)
}

/// [`check_batch`] of `records` into `sink`, then the request's quality rows; returns what was
/// checked and the commit to wait for.
fn check_into(
    body: &[u8],
    records: RecordSource<'_, '_>,
    intake: &Intake,
    config: &Config,
    drops: &Drops,
    now_ms: i64,
    mut sink: EventSink,
) -> Result<(Checked, PendingInsert), ApiError> {
    let mut checked = check_batch(body, records, intake, &config.limits, drops, &mut sink)?;
    sink.send_quality(std::mem::take(&mut checked.findings).into_rows(now_ms, config.quality_max_keys))?;
    Ok((checked, sink.close()))
}

/// The records [`check_batch`] prepares: checked as they are read, or checked already.
pub enum RecordSource<'a, 'l> {
    Reading(ImportRecords<'a, 'l>),
    Checked { records: std::vec::IntoIter<CheckedRecord<'a>>, failed_records: Vec<FailedRecord> },
}

impl<'a> RecordSource<'a, '_> {
    fn checked(body: ImportBodyCheck<'a>) -> Self {
        Self::Checked { records: body.records.into_iter(), failed_records: body.failed_records }
    }

    /// The next record, or the error that refuses the body as a whole.
    fn next(&mut self) -> Option<Result<CheckedRecord<'a>, ImportBodyError>> {
        match self {
            Self::Reading(records) => records.next(),
            Self::Checked { records, .. } => records.next().map(Ok),
        }
    }

    /// One entry per issue of every invalid record, once every record was taken.
    fn into_failed_records(self) -> Vec<FailedRecord> {
        match self {
            Self::Reading(records) => records.failed_records,
            Self::Checked { failed_records, .. } => failed_records,
        }
    }
}

/// Prepares the records of `body`, checked with the core's rules (`intake.rules`), for storage.
/// A body that cannot be split, holds no record or too many is refused as a whole; otherwise
/// every record is judged on its own, and the valid ones are prepared for storage and sent to
/// `sink` in parts: events naming another project's token are refused, events the dictionary
/// drops are left out, properties it drops are removed, what the rules ask the receiver to add is
/// added (a time, `ip`; the token removed), and long strings are truncated. On an error the
/// caller drops the sink, which rolls back what was sent.
pub fn check_batch(
    body: &[u8],
    mut records: RecordSource<'_, '_>,
    intake: &Intake,
    limits: &Limits,
    drops: &Drops,
    sink: &mut EventSink,
) -> Result<Checked, ApiError> {
    let mut out = Checked::default();
    let mut refused = Vec::new();
    // The first part's text is at most the body; later parts are sized from the one before.
    // Room for as many rows as the body could hold at ~32 bytes a record (a small body's part
    // is small: 250 rows' room is 22 KB, which a one-event tracking request allocated and freed).
    let mut rows = EventBatch::with_capacity(ROWS_PER_PART.min(body.len() / 32 + 1), body.len().min(FIRST_PART_BYTES));
    let mut seen = 0usize;
    // With the event writer idle, each part is sent as soon as it is prepared, so that the writer
    // stores the first parts while the rest are checked (with one client, the two overlap on two
    // cores). With other requests in hand the writer would wait for each of this request's parts
    // while theirs are ready, so the parts are held until every record is checked, and then
    // follow each other quickly. A JSON array's framing and record count are only known at its
    // end (the core reads it once): an error there returns here, and the caller drops the sink,
    // which rolls back the parts already sent (held parts are never sent).
    let mut held: Option<Vec<EventBatch>> = if sink.writer_is_idle() { None } else { Some(Vec::new()) };
    while let Some(record) = records.next() {
        let record = record.map_err(refuse)?;
        seen += 1;
        let mut check = record.check;
        if !check.is_valid() {
            let issues: Vec<(&'static str, &str)> = check.issues.iter().map(|i| (i.code.as_str(), i.message.as_str())).collect();
            let name = check.event.as_deref().unwrap_or_default();
            // The check reads no token of a record that is not JSON: the request's other tokens
            // are redacted too, wherever the record holds them.
            let known = intake.tokens.iter().flat_map(|t| t.known.keys().map(String::as_str));
            let tokens: Vec<&str> = check.token.as_deref().into_iter().chain(known).collect();
            let withheld = drops.withheld(name);
            reject_withholding(&mut out.findings.rejected, intake.route, name, &issues, &body[record.record.range], &tokens, &withheld);
            out.findings.counts.bad(name);
            continue;
        }
        if let (Some(tokens), Some(token)) = (&intake.tokens, check.token.as_deref()) {
            if let Some(message) = tokens.refusal(token) {
                let issues = [(TOKEN_REFUSED, message.as_str())];
                let name = check.event.as_deref().unwrap_or_default();
                reject(&mut out.findings.rejected, intake.route, name, &issues, &body[record.record.range.clone()], &[token]);
                out.findings.counts.bad(name);
                let insert_id = check.insert_id.as_deref().unwrap_or_default().to_owned();
                refused.push(FailedRecord { index: record.record.pos.index as usize, insert_id, field: "properties.token".into(), message });
                continue;
            }
        }
        // A string over the truncation length is stored cut: the event is then known by its cut
        // name and distinct_id, for the dictionary's drops, the dedup key and the columns alike.
        let truncates = check.warnings.iter().any(|w| w.code == IssueCode::StringTruncated);
        if truncates {
            check.truncate_key_fields(limits.string_truncate_bytes);
        }
        // `Some` for every valid record (the core's rules require `event` and a time); the
        // invalid ones were skipped above and are reported in `failed_records`.
        let Some(key) = check.valid_key() else { continue };
        // The check on arrival sees every valid event, dropped ones included (it reports the drop).
        // A shape's count stands for the event's count of valid events too.
        let counted = intake.dictionary.as_ref().is_some_and(|dictionary| {
            let shapes = intake.shapes.as_deref().filter(|_| intake.sample_tag != 0).map(|cache| (cache, intake.sample_tag));
            out.findings.check_event(&check, dictionary, shapes, &body[record.record.range.clone()])
        });
        if !counted {
            out.findings.counts.good(key.event);
        }
        let mut bytes = Cow::Borrowed(&body[record.record.range]);
        let Some(dropped_properties) = drops.of(&check) else {
            out.dropped += 1;
            continue;
        };
        if !dropped_properties.is_empty() {
            let names: Vec<String> = dropped_properties.into_iter().map(str::to_owned).collect();
            let rewritten = remove_properties(&bytes, &names).map_err(|e| ApiError::Internal(e.into()))?;
            bytes = Cow::Owned(rewritten);
        }
        let completion = Completion::of(&check, &intake.rules, intake.ip.as_ref());
        if !completion.is_empty() {
            // The check's layout is of the record as it came, not of one rewritten above.
            let layout = check.layout.as_ref().filter(|_| matches!(bytes, Cow::Borrowed(_)));
            let rewritten = complete_event_with(&bytes, &completion, layout).map_err(|e| ApiError::Internal(e.into()))?;
            bytes = Cow::Owned(rewritten);
        }
        // The event is known by the `distinct_id` it is stored with, a hashed one included.
        let distinct_id = completion.distinct_id.unwrap_or(key.distinct_id);
        if truncates {
            let record = truncate_record(&bytes, limits.string_truncate_bytes)?;
            rows.push(key.event, key.time_ms, distinct_id, key.insert_id, &record);
        } else {
            // The record is valid JSON, hence UTF-8: the core kept the text it validated, and a
            // record rewritten here is checked again.
            let text = match (&bytes, record.text) {
                (Cow::Borrowed(_), Some(text)) => text,
                _ => std::str::from_utf8(&bytes).map_err(|e| ApiError::Internal(e.into()))?,
            };
            rows.push(key.event, key.time_ms, distinct_id, key.insert_id, text);
        }
        if rows.len() == ROWS_PER_PART {
            out.stored += rows.len();
            let next = EventBatch::with_capacity(ROWS_PER_PART, rows.text_len() + rows.text_len() / 8);
            let part = std::mem::replace(&mut rows, next);
            match &mut held {
                Some(held) => held.push(part),
                None => sink.send(part)?,
            }
        }
    }
    if seen == 0 {
        return Err(no_events());
    }
    out.stored += rows.len();
    for part in held.into_iter().flatten() {
        sink.send(part)?;
    }
    sink.send(rows)?;
    out.records = seen;
    out.failed = records.into_failed_records();
    if !refused.is_empty() {
        out.failed.extend(refused);
        // Stable: a record's problems keep their order.
        out.failed.sort_by_key(|f| f.index);
    }
    Ok(out)
}

/// Re-serializes a record whose strings are longer than the service keeps (FACTS.md: truncated at
/// `max` bytes), cutting each on a character boundary.
fn truncate_record(bytes: &[u8], max: usize) -> Result<String, ApiError> {
    let mut value: Value = serde_json::from_slice(bytes).map_err(|e| ApiError::Internal(e.into()))?;
    truncate_strings(&mut value, max);
    serde_json::to_string(&value).map_err(|e| ApiError::Internal(e.into()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use datadict_core::check_event;

    /// `Drops` gives the core's per-event answer for every event: dropped events, dropped
    /// properties (also when they appear twice), other properties, events of other names, and a
    /// name defined twice.
    #[test]
    fn drops_agree_with_the_core_per_event() {
        let entries: Vec<SchemaEntry> = serde_json::from_value(serde_json::json!([
            {"entityType": "event", "name": "Debug Ping", "schemaJson": {"metadata": {"com.vendor": {"dropped": true}}}},
            {"entityType": "event", "name": "Purchase", "schemaJson": {"properties": {
                "card": {"type": "string", "metadata": {"com.vendor": {"dropped": true}}},
                "price": {"type": "number"},
                "secret": {"type": "integer", "metadata": {"com.vendor": {"dropped": true, "hidden": true}}}}}},
            {"entityType": "event", "name": "Kept", "schemaJson": {"properties": {
                "x": {"type": "string", "metadata": {"com.vendor": {"dropped": false}}}}}},
            {"entityType": "event", "name": "Other NS", "schemaJson": {"properties": {
                "x": {"type": "string", "metadata": {"com.elsewhere": {"dropped": true}}}}}},
            {"entityType": "profile", "name": "$user", "schemaJson": {"metadata": {"com.vendor": {"dropped": true}}}}
        ]))
        .unwrap();
        let dictionary = Dictionary::new(&entries, datadict_core::DEFAULT_NAMESPACE);
        let drops = Drops::new(&entries, datadict_core::DEFAULT_NAMESPACE);
        let props = [
            r#""card":"4242","price":1.5"#,
            r#""card":1,"secret":2,"card":"again""#,
            r#""price":"free","unknown":true"#,
            r#""x":"y""#,
            "",
        ];
        let names = ["Debug Ping", "Purchase", "Kept", "Other NS", "$user", "Sign Up"];
        let now = 1_767_225_600_000;
        for name in names {
            for p in props {
                let sep = if p.is_empty() { "" } else { "," };
                let record = format!(r#"{{"event":"{name}","properties":{{"time":{now},"distinct_id":"u","$insert_id":"i"{sep}{p}}}}}"#);
                let check = check_event(record.as_bytes(), &Limits::default(), now);
                assert!(check.is_valid(), "{record}: {:?}", check.issues);
                let core = check_against_dictionary(&check, &dictionary);
                let expected = if core.drop_event { None } else { Some(core.dropped_properties.clone()) };
                let got = drops.of(&check).map(|v| v.into_iter().map(str::to_owned).collect::<Vec<_>>());
                assert_eq!(got, expected, "{record}");
            }
        }
    }
}
