//! The core of datadict: the data-dictionary models of the spec, their validation rules,
//! and (as the crate grows) batching, compression and request building.
//!
//! This crate does no I/O and knows nothing of HTTP clients, wasm-bindgen, tokio or the DOM,
//! so the server, the web app and the npm module share every rule from one place.

pub mod amplitude;
pub mod api;
pub mod batch;
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
pub mod migration;
pub mod profile;
pub mod request;
pub mod retry;
pub mod schema;
pub mod split;
pub mod summary;
pub mod time;
pub mod validate;

pub use issue::{Issue, IssueCode};
pub use schema::{
    EntityMetadata, EntityType, ErrorBody, ListSchemasResponse, PropertyDef, PropertyMetadata,
    PropertyType, Schema, SchemaEntry, DEFAULT_NAMESPACE,
};
pub use validate::{validate_schema_entry, validate_schema_entry_json, SchemaRules};
pub use event::{check_event, validate_event_json, EventCheck, PropertySeen};
pub use limits::{Limits, FORBIDDEN_IDS};
pub use api::{
    failed_records, BatchUploadRequest, BatchUploadResponse, DeleteResponse, FailedRecord, ImportResponse,
    ManualSyncResponse, StatusResponse,
};
pub use profile::{validate_profile_update, validate_profile_update_json, ProfileOperation, ProfileUpdate, TokenRule};
pub use split::{split_body, InputFormat, RawRecord, RecordPos, RecordSplitter, SplitError};
pub use gzip::{gunzip, gzip, is_gzip, GzipError};
pub use import::{check_import_body, CheckedRecord, ImportBodyCheck, ImportBodyError};
pub use dictionary::{check_against_dictionary, remove_properties, Dictionary, DictionaryFindings};
pub use summary::{IssueSummary, Tally};
pub use batch::{Batch, BatchOptions, BatchStats, Batcher, Rejected};
pub use request::{
    import_headers, import_request, manual_sync_request, map_failed_positions, map_failed_records, parse_api_response, parse_import_response, ApiError, Credentials,
    Endpoints, HttpRequest, Method, Region, RegionUrls,
};
pub use retry::{parse_retry_after, Attempt, Decision, GiveUp, RetryPolicy};
pub use amplitude::{transform_event, transform_ndjson, ExportArchive, ExportError, ProfileAccumulator, TransformError, Transformed};
pub use migration::{validate_migration_request, validate_source_tool, DateRange, MigrationCheck, MigrationRequest};
pub use time::Date;
pub use dict_io::{batch_body, dictionary_from_csv, dictionary_to_csv, validate_batch_body};
pub use diff::{diff_dictionaries, DictionaryDiff, EntityChange, EntityKey, FieldChange};
pub use json_schema::entity_json_schema;
