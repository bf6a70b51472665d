//! The one wording of a failed request: what a status (or no answer at all) means and what to do
//! about it. The web app, the npm importer and its command line all say the same words for the
//! same answer, because they all ask here.

use crate::retry::Attempt;
use crate::schema::ErrorBody;
use serde::{Deserialize, Serialize};

/// What the words may name besides the status.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct StatusContext {
    /// The URL asked; named when the server could not be reached, since a wrong base URL is the
    /// usual cause.
    pub url: Option<String>,
    /// The project the request was about; named by a 403.
    pub project_id: Option<u64>,
    /// Whether the request writes: a 403 then names the role that writes need.
    pub writes: bool,
    /// The server's `Retry-After` in milliseconds, when a 429 carried one.
    pub retry_after_ms: Option<u64>,
    /// How many attempts were made; more than one says that retrying did not help.
    pub attempts: u32,
}

/// Says what `outcome` means and what to do, with the server's own `detail` (its error message,
/// or the network layer's reason) after the status. A 2xx reaches here only when its body could
/// not be read.
pub fn explain_status(outcome: Attempt, detail: &str, context: &StatusContext) -> String {
    let detail = detail.trim();
    let said = if detail.is_empty() { String::new() } else { format!(": {detail}") };
    let tried = if context.attempts > 1 { format!(" after {} attempts", context.attempts) } else { String::new() };
    let status = match outcome {
        Attempt::NetworkError => {
            let at = context.url.as_deref().map(|u| format!(" at {u}")).unwrap_or_default();
            return format!("cannot reach the server{at}{tried}{said}; check the base URL and that the server is running");
        }
        Attempt::Status(status) => status,
    };
    match status {
        200..=299 => format!("the server's answer could not be read{said}; check that the base URL points at a datadict server of this version"),
        400 => format!("the server refused the request (400){said}; fix what it names and send the request again"),
        401 => format!("the server rejected the credentials (401){said}; check the service-account user name and secret, or the project token"),
        403 => {
            let project = context.project_id.map_or_else(|| "the project".to_owned(), |p| format!("project {p}"));
            // The server's own detail may already say whom to ask; the page said it twice.
            let advice = if detail.contains("project owner") || detail.contains(" role") {
                String::new()
            } else if context.writes {
                "; this request writes, which needs the owner or admin role: ask a project owner for it".to_owned()
            } else {
                "; ask a project owner for a role that allows this".to_owned()
            };
            format!("the credentials are valid but lack permission on {project} (403){said}{advice}")
        }
        404 => format!("the server has no such resource (404){said}; check the base URL, the project id and the name"),
        413 => format!(
            "a request was too large for the server (413){said}; lower the batch limits (records and bytes per request: \
             maxEventsPerRequest and maxRequestBytes, or the command line's --batch-size and --batch-bytes)"
        ),
        429 => {
            let wait = match context.retry_after_ms {
                Some(ms) => format!("the server asks to wait {} s", ms.div_ceil(1000)),
                None => "wait a minute".to_owned(),
            };
            format!("the server answered 429 (rate limited){tried}{said}; {wait}, then try again, or lower the concurrency")
        }
        500..=599 => format!("the server failed ({status}){tried}{said}; try again later, and if it persists, the server's log says why"),
        _ => format!("the server answered {status}{tried}{said}"),
    }
}

/// Says that an answer (`status`) counted `imported` and refused `refused` of the `records` of
/// a batch sent from input lines `lines`: the others are not known to be stored.
pub fn explain_short_count(status: u16, imported: u64, refused: u64, records: u64, lines: (u64, u64)) -> String {
    let missing = records.saturating_sub(imported + refused);
    let refused = if refused > 0 { format!(" and refused {refused}") } else { String::new() };
    format!(
        "the server answered {status} but counted {imported}{refused} of the {records} records sent from input lines {} to {}; \
         the other {missing} are not known to be stored: check the server's log, then import again (records sent twice with \
         the same $insert_id are stored once)",
        lines.0, lines.1
    )
}

/// The server's message in an error body: its `error` (spec §2.7, and the import's bodies), or
/// the start of a body that is not one (a proxy's page, an empty 503).
pub fn error_detail(body: &[u8]) -> String {
    match serde_json::from_slice::<ErrorBody>(body) {
        Ok(err) => err.error,
        Err(_) => String::from_utf8_lossy(body).trim().chars().take(200).collect(),
    }
}

/// [`explain_status`] of an answer whose body is still raw bytes.
pub fn explain_answer(status: u16, body: &[u8], context: &StatusContext) -> String {
    explain_status(Attempt::Status(status), &error_detail(body), context)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(outcome: Attempt, detail: &str, context: StatusContext, expected: &str) {
        assert_eq!(explain_status(outcome, detail, &context), expected, "{outcome:?}");
    }

    #[test]
    fn every_status_in_words_with_what_to_do() {
        use Attempt::*;
        let none = StatusContext::default;
        let url = StatusContext { url: Some("http://127.0.0.1:9/import".into()), attempts: 3, ..none() };
        check(NetworkError, "ECONNREFUSED", url, "cannot reach the server at http://127.0.0.1:9/import after 3 attempts: ECONNREFUSED; check the base URL and that the server is running");
        check(NetworkError, "", none(), "cannot reach the server; check the base URL and that the server is running");
        check(Status(401), "bad secret", none(), "the server rejected the credentials (401): bad secret; check the service-account user name and secret, or the project token");
        let project = StatusContext { project_id: Some(7), ..none() };
        check(Status(403), "", project.clone(), "the credentials are valid but lack permission on project 7 (403); ask a project owner for a role that allows this");
        let writes = StatusContext { writes: true, ..project };
        check(Status(403), " no access ", writes, "the credentials are valid but lack permission on project 7 (403): no access; this request writes, which needs the owner or admin role: ask a project owner for it");
        // The server's detail that already names the role or whom to ask is not repeated.
        let project = StatusContext { project_id: Some(7), writes: true, ..none() };
        check(Status(403), "the account has no access to project 7; ask a project owner to grant it a role", project.clone(),
            "the credentials are valid but lack permission on project 7 (403): the account has no access to project 7; ask a project owner to grant it a role");
        check(Status(413), "", none(), "a request was too large for the server (413); lower the batch limits (records and bytes per request: maxEventsPerRequest and maxRequestBytes, or the command line's --batch-size and --batch-bytes)");
        let waited = StatusContext { retry_after_ms: Some(6_500), ..none() };
        check(Status(429), "slow down", waited, "the server answered 429 (rate limited): slow down; the server asks to wait 7 s, then try again, or lower the concurrency");
        let retried = StatusContext { attempts: 10, ..none() };
        check(Status(429), "", retried.clone(), "the server answered 429 (rate limited) after 10 attempts; wait a minute, then try again, or lower the concurrency");
        check(Status(503), "", retried, "the server failed (503) after 10 attempts; try again later, and if it persists, the server's log says why");
        check(Status(400), "invalid JSON", none(), "the server refused the request (400): invalid JSON; fix what it names and send the request again");
        check(Status(404), "", none(), "the server has no such resource (404); check the base URL, the project id and the name");
        check(Status(418), "teapot", none(), "the server answered 418: teapot");
        check(Status(200), "expected `results`", none(), "the server's answer could not be read: expected `results`; check that the base URL points at a datadict server of this version");
    }

    #[test]
    fn a_short_count_says_how_many_are_unaccounted_for() {
        assert_eq!(
            explain_short_count(200, 3, 0, 10, (1, 10)),
            "the server answered 200 but counted 3 of the 10 records sent from input lines 1 to 10; the other 7 are not known to be stored: \
             check the server's log, then import again (records sent twice with the same $insert_id are stored once)"
        );
        assert!(explain_short_count(400, 5, 2, 10, (4, 13)).contains("counted 5 and refused 2 of the 10 records sent from input lines 4 to 13; the other 3"));
    }

    #[test]
    fn the_detail_comes_from_the_error_body_or_the_start_of_the_text() {
        assert_eq!(error_detail(br#"{"error":"bad credentials","status":"error"}"#), "bad credentials");
        assert_eq!(error_detail(br#"{"code":401,"error":"invalid token","status":"Unauthorized"}"#), "invalid token");
        assert_eq!(error_detail(b"  <html>Bad Gateway</html>\n"), "<html>Bad Gateway</html>");
        assert_eq!(error_detail(&[b'x'; 300]).len(), 200);
        assert_eq!(explain_answer(401, br#"{"error":"no","status":"error"}"#, &StatusContext::default()), explain_status(Attempt::Status(401), "no", &StatusContext::default()));
    }
}
