//! The core of datadict: the data-dictionary models of the spec, every validation rule, the
//! streaming batcher and gzip, request building and response parsing, and the migration's source
//! reader and transform.
//!
//! This crate does no I/O and knows nothing of HTTP clients, wasm-bindgen, tokio or the DOM, so
//! the server, the web app and the npm module share every rule from one place. It never reads a
//! clock: rules that depend on "now" take it as a parameter (`now_ms`, `today`). It builds for
//! native targets and for `wasm32-unknown-unknown`.
//!
//! Where a rule comes from is marked at the rule: "spec §x" for the service spec, "FACTS.md" for
//! the vendor's documented behaviour that fills what the spec leaves "not shown".
//!
//! # Map
//!
//! Validation returns every issue as data ([`Issue`]: `path`, stable `code`, `message`), never only
//! the first; `Result` is for inputs that cannot be read at all.
//!
//! - Dictionary entries (spec §2.2–2.5): [`validate_schema_entry`], [`validate_schema_entry_json`]
//!   (module [`validate`]); models in [`schema`].
//! - Limits (FACTS.md), one struct with the documented defaults: [`Limits`].
//! - Events (spec §2.8, FACTS.md import rules): [`check_event`] checks one record in one borrowing
//!   pass and returns an [`EventCheck`] with every issue, the warnings (strings the service will
//!   truncate) and what it extracted (`event`, `time_ms`, `distinct_id`, `insert_id`, each
//!   property's JSON type); [`validate_event_json`] returns just the issues. Which fields are
//!   required and how time is treated are a route's [`EventRules`] (`IMPORT`, `TRACK`), passed to
//!   [`check_event_with_rules`]; [`complete_event`] is what a `/track` receiver adds.
//! - Whole import bodies: [`check_import_body`] (request limits, framing, every record, the
//!   strict-mode [`ImportResponse`]); [`failed_records`] builds `failed_records` entries.
//! - Profile updates (spec §2.9, FACTS.md `/engage`; group profiles of `/groups`, reference):
//!   [`validate_profile_update`], [`validate_profile_update_json`], [`check_profile_update`] (the
//!   batcher's one-parse check), and for either [`ProfileKind`] [`validate_update`],
//!   [`check_update`], [`parse_profile_update`]; model [`ProfileUpdate`] with its
//!   [`ProfileTarget`]; the [`Batcher`] batches them for `/engage` with
//!   [`RecordKind::ProfileUpdates`].
//! - Wire formats of the ingestion routes (form bodies, base64 `data`, `GET ?data=`, the `1`/`0`,
//!   verbose, pixel and callback answers): module [`wire`].
//! - Response bodies: [`ImportResponse`] (200/400/401/413/429), [`ManualSyncResponse`],
//!   [`BatchUploadRequest`], [`BatchUploadResponse`], [`DeleteResponse`], [`StatusResponse`]
//!   (module [`api`], with the warehouse default properties of spec §2.10 in [`api::warehouse`]).
//! - Against the dictionary: [`Dictionary`], [`check_against_dictionary`] (no schema, unknown
//!   property, type mismatch, dropped, hidden), [`check_profile_against_dictionary`] (a profile
//!   update against its `profile` schema: `$user`, or a group's key), [`remove_properties`];
//!   aggregate counts with example input positions: [`IssueSummary`]; the rule of the
//!   `datadict violations` CI gate ([`quality_gate`]).
//! - Streaming: [`RecordSplitter`] finds records in chunks split anywhere ([`split_body`] for a
//!   whole body); [`Batcher`] turns chunks into gzipped request bodies ([`Batch`]) of at most
//!   2,000 events and 10 MB, each event keeping its [`RecordPos`]; [`gzip()`], [`gunzip`].
//! - Requests: [`Endpoints`] (every operation, default/EU/India regions, configurable bases),
//!   [`Credentials`], [`import_headers`], [`import_request`], [`manual_sync_request`],
//!   [`parse_import_response`], [`parse_api_response`], [`map_failed_records`]; the retry policy
//!   as pure logic: [`RetryPolicy::decide`], [`parse_retry_after`]; the one wording of a failed
//!   request with what to do: [`explain_status`]; the upload of batches as a state machine
//!   without I/O (acknowledged batches, retries, refused records by input line, cancel and
//!   resume): [`Upload`].
//! - A datadict server's read API (no part of the spec): [`Endpoints::profile`],
//!   [`Endpoints::groups`], [`Endpoints::lookup_table`] and the others build its URLs.
//! - Migration (spec §4.3): [`validate_migration_request`], [`validate_source_tool`]; the source
//!   export archive [`ExportArchive`] (zip of gzipped NDJSON, member by member, read by the small
//!   [`unzip::ZipReader`]); the FACTS.md
//!   mapping [`transform_event`], [`transform_ndjson`], [`ProfileAccumulator`].
//! - Dictionary I/O: [`batch_body`], [`validate_batch_body`] (with [`duplicate_entries`]), [`dictionary_to_csv`],
//!   [`dictionary_from_csv`] (round-trips exactly), [`entity_json_schema`] (draft-07),
//!   [`diff_dictionaries`]; CSV (RFC 4180) for dictionary files, warehouse files and import
//!   reports in module [`csv`]: [`csv::push_record`], and [`csv::Reader`] for input in chunks with
//!   a size budget per record.

pub mod amplitude;
pub mod api;
pub mod batch;
pub mod csv;
pub mod dict_io;
pub mod dictionary;
pub mod diff;
pub mod event;
#[doc(hidden)]
pub mod fixtures;
pub mod gzip;
pub mod import;
pub mod issue;
pub mod json_schema;
pub mod limits;
pub mod merge;
pub mod migration;
pub mod order;
pub mod profile;
pub mod quality_gate;
pub mod request;
pub mod retry;
pub mod schema;
pub mod split;
pub mod status;
pub mod summary;
pub mod time;
pub mod unzip;
pub mod upload;
pub mod validate;
pub mod wire;
mod words;

pub use issue::{count, Issue, IssueCode};
pub use schema::{
    EntityMetadata, EntityType, ErrorBody, ListSchemasResponse, PropertyDef, PropertyMetadata,
    PropertyType, Schema, SchemaEntry, DEFAULT_NAMESPACE,
};
pub use validate::{validate_schema_entry, validate_schema_entry_json, SchemaRules};
pub use event::{
    check_event, check_event_reference, check_event_text, check_event_with_rules, complete_event, complete_event_with, truncate_strings, truncated, validate_event_json, ClientIp, Completion,
    EventCheck, EventRules, PropertyLayout, PropertySeen,
};
pub use limits::{Limits, FORBIDDEN_IDS};
pub use merge::merge_schema;
pub use api::{
    failed_records, BatchUploadRequest, BatchUploadResponse, DeleteResponse, FailedRecord, ImportResponse,
    ManualSyncResponse, StatusResponse,
};
pub use profile::{
    check_profile_update, check_update, parse_profile_update, validate_profile_update, validate_profile_update_json, validate_update, ProfileCheck, ProfileKind,
    ProfileOperation, ProfileTarget, ProfileUpdate, TokenRule,
};
pub use split::{split_body, InputFormat, RawRecord, RecordPos, RecordSplitter, SplitError};
pub use gzip::{gunzip, gzip, is_gzip, GzipError};
pub use import::{check_import_body, check_import_body_with_rules, check_import_records, CheckedRecord, ImportBodyCheck, ImportBodyError, ImportRecords};
pub use dictionary::profile::{check_profile_against_dictionary, profile_schema_name, USER_PROFILE};
pub use dictionary::{check_against_dictionary, for_each_dictionary_finding, remove_properties, Dictionary, DictionaryFindings, Finding};
pub use summary::{IssueSummary, Tally};
pub use batch::{Batch, BatchOptions, BatchStats, Batcher, RecordKind, Rejected};
pub use request::{
    import_headers, import_request, manual_sync_request, map_failed_positions, map_failed_records, parse_api_response, parse_import_response, ApiError, Credentials,
    Endpoints, HttpRequest, Method, Region, RegionUrls,
};
pub use retry::{parse_retry_after, Attempt, Decision, GiveUp, RetryPolicy};
pub use status::{error_detail, explain_answer, explain_short_count, explain_status, StatusContext};
pub use upload::{Acknowledged, BatchMeta, Failed, Outcome, Registered, Reply, Retry, SendOrder, Stop, Upload, UploadOptions, UploadSummary};
pub use amplitude::{transform_event, transform_ndjson, transform_record, ExportArchive, ExportError, ProfileAccumulator, SourceRecord, TransformError, Transformed};
pub use migration::{validate_migration_request, validate_source_tool, DateRange, MigrationCheck, MigrationRequest};
pub use time::Date;
pub use dict_io::{batch_body, dictionary_from_csv, dictionary_to_csv, duplicate_entries, validate_batch_body};
pub use diff::{diff_dictionaries, DictionaryDiff, EntityChange, EntityKey, FieldChange};
pub use json_schema::entity_json_schema;
