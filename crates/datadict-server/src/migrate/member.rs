//! One member of the export read and transformed on a blocking thread: its events in batches
//! within the import's limits (each event with its source line and the profile properties it
//! carries), the profile updates of its `$identify` and `$groupidentify` rows, and the lines that
//! cannot be transformed.

use datadict_core::amplitude::{ndjson_lines, transform_record, ExportArchive, ExportError, SourceRecord};
use datadict_core::gzip::GzipError;
use serde_json::{Map, Value};
use std::sync::Arc;

/// The largest member of an export this server inflates.
const MAX_MEMBER_BYTES: usize = 1 << 30;

/// The profile properties one event carries: `(user_id, time_ms, user_properties)`.
pub type Carried = (String, i64, Map<String, Value>);

/// Events to check and store together: at most the import's events and bytes per request.
#[derive(Debug, Default)]
pub struct Batch {
    pub ndjson: Vec<u8>,
    /// Per event, in order: its 1-based line in the member.
    pub lines: Vec<u64>,
    /// Per event, in order: its profile properties when it carries them.
    pub profiles: Vec<Option<Carried>>,
}

/// A line that cannot be transformed.
#[derive(Debug)]
pub struct BadLine {
    pub line: u64,
    /// The source's `event_type` when the line has one.
    pub event: String,
    pub error: datadict_core::TransformError,
    pub text: Vec<u8>,
}

/// What one member holds.
#[derive(Debug, Default)]
pub struct Member {
    pub batches: Vec<Batch>,
    /// The profile updates of the member's `$identify` and `$groupidentify` rows.
    pub profile_rows: Vec<SourceRecord>,
    pub bad_lines: Vec<BadLine>,
    /// Events that could not carry some source fields: the first line and the fields, and how
    /// many events in all.
    pub left_out: Option<(u64, Vec<String>)>,
    pub left_out_count: u64,
}

impl Member {
    /// The member's event records: events and lines that cannot be transformed (the
    /// `$identify` and `$groupidentify` rows are profile updates, not events).
    pub fn records(&self) -> u64 {
        self.batches.iter().map(|b| b.lines.len() as u64).sum::<u64>() + self.bad_lines.len() as u64
    }
}

/// Why a member cannot be read, for the user of the migration: the archive came from the source,
/// so the advice is about the source and the download, not about the archive's making.
fn unreadable(name: &str, e: ExportError) -> String {
    let what = match e {
        ExportError::Gzip { source: GzipError::Invalid(io), .. } => format!("member `{name}` is not valid gzip ({io})"),
        ExportError::Gzip { source: GzipError::TooLarge { max }, .. } => format!("member `{name}` expands to more than {max} bytes"),
        ExportError::Member { source, .. } => format!("member `{name}` cannot be read ({source})"),
        ExportError::Zip(source) => format!("member `{name}` cannot be found ({source})"),
    };
    format!("{what}: the source's export is corrupt; start the migration again, and if it fails the same way, report the range to the source (nothing of this migration was loaded from that member on)")
}

/// Reads member `name` of `archive` and transforms its lines, in batches of at most
/// `max_events` events and `max_bytes` bytes.
pub async fn read(archive: Arc<Vec<u8>>, name: String, limits: datadict_core::Limits) -> anyhow::Result<Result<Member, String>> {
    Ok(tokio::task::spawn_blocking(move || {
        let data = match ExportArchive::new(&archive).and_then(|mut a| a.read_member(&name, MAX_MEMBER_BYTES)) {
            Ok(d) => d,
            Err(e) => return Err(unreadable(&name, e)),
        };
        Ok(transform(&data, &limits))
    })
    .await?)
}

fn transform(data: &[u8], limits: &datadict_core::Limits) -> Member {
    let (max_events, max_bytes) = (limits.max_events_per_request.max(1), limits.max_request_bytes);
    let mut member = Member::default();
    let mut batch = Batch::default();
    for (line, text) in ndjson_lines(data) {
        match transform_record(text, limits) {
            Ok(SourceRecord::Event(t)) => {
                if !t.left_out.is_empty() {
                    member.left_out_count += 1;
                    member.left_out.get_or_insert((line, t.left_out));
                }
                if !batch.lines.is_empty() && (batch.lines.len() >= max_events || batch.ndjson.len() + t.event.len() + 1 > max_bytes) {
                    member.batches.push(std::mem::take(&mut batch));
                }
                batch.ndjson.extend_from_slice(&t.event);
                batch.ndjson.push(b'\n');
                batch.lines.push(line);
                batch.profiles.push(t.profile.map(|(user, props)| (user, t.time_ms, props)));
            }
            Ok(record) => member.profile_rows.push(record),
            Err(error) => {
                let event = serde_json::from_slice::<Value>(text).ok().and_then(|v| v.get("event_type")?.as_str().map(str::to_owned)).unwrap_or_default();
                member.bad_lines.push(BadLine { line, event, error, text: text.to_vec() });
            }
        }
    }
    if !batch.lines.is_empty() {
        member.batches.push(batch);
    }
    member
}
