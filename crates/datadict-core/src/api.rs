//! Request and response bodies of the application API (schemas, warehouse manual sync) and of the
//! event import, beyond the list and error bodies of spec §2.6–2.7 (which live in `schema`).
//! The shapes come from FACTS.md, since the spec leaves them "not shown".

use crate::event::EventCheck;
use crate::schema::SchemaEntry;
use serde::{Deserialize, Serialize};

/// FACTS.md: `POST /projects/{projectId}/schemas` body, `{"entries":[...],"truncate":false}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BatchUploadRequest {
    pub entries: Vec<SchemaEntry>,
    /// When true the whole dictionary of the project is deleted before inserting.
    #[serde(default)]
    pub truncate: bool,
}

/// FACTS.md: `{"added":N,"deleted":N}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchUploadResults {
    pub added: u64,
    pub deleted: u64,
}

/// FACTS.md: the 200 body of a batch upload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchUploadResponse {
    pub results: BatchUploadResults,
    pub status: String,
}

impl BatchUploadResponse {
    pub fn ok(added: u64, deleted: u64) -> Self {
        Self { results: BatchUploadResults { added, deleted }, status: "ok".to_owned() }
    }
}

/// FACTS.md: `{"delete_count":N}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeleteResults {
    pub delete_count: u64,
}

/// FACTS.md: the 200 body of every delete operation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeleteResponse {
    pub results: DeleteResults,
    pub status: String,
}

impl DeleteResponse {
    pub fn ok(delete_count: u64) -> Self {
        Self { results: DeleteResults { delete_count }, status: "ok".to_owned() }
    }
}

/// FACTS.md: `{"status":"ok"}`, the 200 body of a single-schema create-or-replace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusResponse {
    pub status: String,
}

impl StatusResponse {
    pub fn ok() -> Self {
        Self { status: "ok".to_owned() }
    }
}

/// FACTS.md: `{"run_id":"..."}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManualSyncResults {
    pub run_id: String,
}

/// Spec §4.2 / FACTS.md: the 200 body of a warehouse-import manual sync,
/// `{"status":"ok","results":{"run_id":"..."}}` (the request body is `{}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManualSyncResponse {
    pub status: String,
    pub results: ManualSyncResults,
}

impl ManualSyncResponse {
    pub fn ok(run_id: impl Into<String>) -> Self {
        Self { status: "ok".to_owned(), results: ManualSyncResults { run_id: run_id.into() } }
    }
}

/// Spec §2.10: default properties of events loaded by a warehouse import (tracked names).
pub mod warehouse {
    pub const IMPORT_ID: &str = "$warehouse_import_id";
    pub const IMPORT_JOB_ID: &str = "$warehouse_import_job_id";
    pub const IMPORT: &str = "$import";
    pub const SOURCE: &str = "$source";
    /// The value of `$source` on such events.
    pub const SOURCE_VALUE: &str = "warehouse-import";
    /// (tracked name, display name) pairs of spec §2.10.
    pub const DEFAULT_PROPERTIES: [(&str, &str); 4] = [
        (IMPORT_ID, "Warehouse Import ID"),
        (IMPORT_JOB_ID, "Warehouse Import Job ID"),
        (IMPORT, "Import"),
        (SOURCE, "Source"),
    ];
}

/// FACTS.md: one entry of `failed_records` in a strict-mode 400 of the import.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailedRecord {
    /// The record's position in the request body (0-based).
    pub index: usize,
    /// The record's `$insert_id` when it had a string one, else empty.
    #[serde(rename = "$insert_id", default)]
    pub insert_id: String,
    /// The field at fault, e.g. `properties.time` (empty for the whole record).
    pub field: String,
    pub message: String,
}

/// The `failed_records` entries of one checked event at request position `index`, one per issue.
pub fn failed_records(index: usize, check: &EventCheck<'_>) -> Vec<FailedRecord> {
    let insert_id = check.insert_id.as_deref().unwrap_or_default();
    check
        .issues
        .iter()
        .map(|issue| FailedRecord { index, insert_id: insert_id.to_owned(), field: issue.path.clone(), message: issue.message.clone() })
        .collect()
}

/// FACTS.md: the status words of the import's bodies.
pub mod import_status {
    pub const OK: &str = "OK";
    pub const BAD_REQUEST: &str = "Bad Request";
    pub const UNAUTHORIZED: &str = "Unauthorized";
    pub const PAYLOAD_TOO_LARGE: &str = "Request Entity Too Large";
    pub const TOO_MANY_REQUESTS: &str = "Too Many Requests";
    /// FACTS.md: the `error` of a strict-mode 400.
    pub const VALIDATION_FAILED: &str = "some data points in the request failed validation";
    /// FACTS.md: the `error` of a 429.
    pub const RATE_LIMITED: &str = "Project exceeded rate limits. Please retry the request with exponential backoff.";
    /// FACTS.md: the `error` of a 401.
    pub const INVALID_CREDENTIALS: &str = "Invalid credentials";
}

/// The body of every answer of the event import (FACTS.md): 200 `{code, num_records_imported,
/// status}`, 400 adding `error` and `failed_records`, 401/413/429 `{code, error, status}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImportResponse {
    pub code: u16,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_records: Option<Vec<FailedRecord>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_records_imported: Option<u64>,
    pub status: String,
}

impl ImportResponse {
    /// 200: every record was imported.
    pub fn ok(imported: u64) -> Self {
        Self { code: 200, error: None, failed_records: None, num_records_imported: Some(imported), status: import_status::OK.to_owned() }
    }

    /// 400 of strict mode: some records failed; the valid ones (`imported`) were still ingested.
    pub fn validation_failed(failed_records: Vec<FailedRecord>, imported: u64) -> Self {
        Self {
            code: 400,
            error: Some(import_status::VALIDATION_FAILED.to_owned()),
            failed_records: Some(failed_records),
            num_records_imported: Some(imported),
            status: import_status::BAD_REQUEST.to_owned(),
        }
    }

    /// 400 for a body that cannot be read at all (not JSON, not gzip).
    pub fn bad_request(error: impl Into<String>) -> Self {
        Self::error(400, import_status::BAD_REQUEST, error)
    }

    /// 401: missing or invalid credentials.
    pub fn unauthorized() -> Self {
        Self::error(401, import_status::UNAUTHORIZED, import_status::INVALID_CREDENTIALS)
    }

    /// 413: the request is over a size or count limit; `error` says which.
    pub fn payload_too_large(error: impl Into<String>) -> Self {
        Self::error(413, import_status::PAYLOAD_TOO_LARGE, error)
    }

    /// 429: the project's rate limit is exceeded.
    pub fn rate_limited() -> Self {
        Self::error(429, import_status::TOO_MANY_REQUESTS, import_status::RATE_LIMITED)
    }

    fn error(code: u16, status: &str, error: impl Into<String>) -> Self {
        Self { code, error: Some(error.into()), failed_records: None, num_records_imported: None, status: status.to_owned() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{check_event, Limits};
    use serde_json::json;

    fn check<T: Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug>(value: &T, wire: serde_json::Value) {
        assert_eq!(serde_json::to_value(value).unwrap(), wire);
        assert_eq!(&serde_json::from_value::<T>(wire).unwrap(), value);
    }

    #[test]
    fn bodies_have_the_documented_shapes() {
        check(&ImportResponse::ok(3), json!({"code": 200, "num_records_imported": 3, "status": "OK"}));
        check(&ImportResponse::unauthorized(), json!({"code": 401, "error": "Invalid credentials", "status": "Unauthorized"}));
        check(
            &ImportResponse::rate_limited(),
            json!({"code": 429, "error": "Project exceeded rate limits. Please retry the request with exponential backoff.", "status": "Too Many Requests"}),
        );
        check(&ManualSyncResponse::ok("r1"), json!({"status": "ok", "results": {"run_id": "r1"}}));
        check(&BatchUploadResponse::ok(2, 1), json!({"results": {"added": 2, "deleted": 1}, "status": "ok"}));
        check(&DeleteResponse::ok(4), json!({"results": {"delete_count": 4}, "status": "ok"}));
        check(&StatusResponse::ok(), json!({"status": "ok"}));
        check(&BatchUploadRequest { entries: vec![], truncate: true }, json!({"entries": [], "truncate": true}));
        assert!(serde_json::from_value::<BatchUploadRequest>(json!({"entries": [], "extra": 1})).is_err());
    }

    #[test]
    fn failed_records_list_every_issue_of_a_record() {
        let record = br#"{"event":"e","properties":{"time":0,"distinct_id":"null","$insert_id":"a1"}}"#;
        let result = check_event(record, &Limits::default(), 1_767_225_600_000);
        let failed = failed_records(7, &result);
        assert_eq!(failed.len(), 2);
        assert_eq!((failed[0].index, failed[0].insert_id.as_str(), failed[0].field.as_str()), (7, "a1", "properties.time"));
        assert_eq!(failed[1].field, "properties.distinct_id");
        let body = ImportResponse::validation_failed(failed, 5);
        let wire = serde_json::to_value(&body).unwrap();
        assert_eq!(wire["failed_records"][0]["$insert_id"], "a1");
        assert_eq!(wire["error"], "some data points in the request failed validation");
        assert_eq!(wire["num_records_imported"], 5);
    }
}
