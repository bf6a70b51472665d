//! The import screen: events for `/import` or profile updates for `/engage`, from a file (read in
//! chunks, never whole) or pasted text. Step 1 checks every record with the core's `Batcher` (spec
//! rules, and the dictionary for events) and shows a summary; step 2 uploads the batches through
//! the core's upload machine, with bounded concurrency, retries, cancel and resume, and ends with a
//! report that maps each rejected record back to its input line.
//!
//! `view` is the screen, `run` the two steps, `report` the rows of the report and its downloads.

mod outcome;
mod report;
mod run;
mod view;

pub use report::{report_csv, ReportRow};
pub use run::Progress;
pub use view::ImportPage;

use datadict_core::{RecordKind, TokenRule};

/// What the input holds, and so where it goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Target {
    /// Events for `POST /import`.
    #[default]
    Events,
    /// Profile updates for `POST /engage`.
    Profiles,
}

impl Target {
    /// The core's record kind. `$token` is optional in profile updates because the app sends them
    /// with the service account's Basic auth, and the server then accepts updates without it.
    pub fn kind(self) -> RecordKind {
        match self {
            Self::Events => RecordKind::Events,
            Self::Profiles => RecordKind::ProfileUpdates(TokenRule::Optional),
        }
    }

    pub fn noun(self) -> &'static str {
        match self {
            Self::Events => "events",
            Self::Profiles => "profile updates",
        }
    }
}

/// Where the screen is.
#[derive(Debug, Clone, PartialEq)]
pub enum Phase {
    Idle,
    Checking,
    Checked,
    Uploading,
    Cancelling,
    Cancelled,
    Finished,
    Failed(String),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reader::{text_blob, ChunkReader};
    use datadict_core::{BatchOptions, Batcher};
    use wasm_bindgen_test::wasm_bindgen_test;

    #[wasm_bindgen_test]
    async fn profile_updates_from_a_blob_become_engage_bodies_with_their_lines() {
        // No `$token`: the screen signs `/engage` with the service account, so it is optional.
        let text = "{\"$distinct_id\":\"u1\",\"$set\":{\"plan\":\"pro\"}}\n\n{\"$distinct_id\":\"u2\"}\n{\"$distinct_id\":\"u3\",\"$unset\":[\"plan\"]}\n";
        let mut reader = ChunkReader::new(text_blob(text).unwrap(), 5.0);
        let options = BatchOptions { kind: Target::Profiles.kind(), gzip_level: None, ..BatchOptions::default() };
        let mut batcher = Batcher::new(options);
        while let Some(chunk) = reader.next_chunk().await.unwrap() {
            batcher.push(&chunk).unwrap();
        }
        batcher.finish().unwrap();
        let rejected = batcher.take_rejected();
        assert_eq!(rejected.iter().map(|r| (r.pos.line, r.issues[0].code.as_str())).collect::<Vec<_>>(), [(3, "missing_operation")]);
        let batch = batcher.next_batch().unwrap();
        let body: Vec<serde_json::Value> = serde_json::from_slice(&batch.body).unwrap();
        assert_eq!(body.iter().map(|u| u["$distinct_id"].as_str().unwrap()).collect::<Vec<_>>(), ["u1", "u3"]);
        assert_eq!(batch.positions.iter().map(|p| p.line).collect::<Vec<_>>(), [1, 4]);
        assert_eq!(Target::Events.kind(), RecordKind::Events);
    }
}
