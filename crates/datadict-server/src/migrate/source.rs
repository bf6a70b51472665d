//! The client of the source tool's export API (FACTS.md): `GET <host>/api/2/export?start=
//! YYYYMMDDTHH&end=YYYYMMDDTHH` with Basic auth `key:secret`; the answer is a zip archive of
//! gzipped NDJSON, 404 when the range holds no data. Blocking (ureq): call it on a blocking thread.
//!
//! A connection is given [`SourceSettings::connect_timeout`], and each read (the answer's head
//! included) [`SourceSettings::read_timeout`], so that a source that stops answering fails the
//! job instead of holding it forever. A 429 or 5xx is asked again after a backoff (the core's
//! [`RetryPolicy`]: 2 s doubling to 60 s, at least the `Retry-After` the source asks for), a
//! bounded number of times.

use base64::Engine;
use datadict_core::migration::DateRange;
use datadict_core::retry::{parse_retry_after, Attempt, Decision, RetryPolicy};
use std::time::Duration;

/// The largest export this server downloads (FACTS.md: the source answers 400 over 4 GB).
pub const MAX_EXPORT_BYTES: u64 = 4 << 30;

/// How the export is downloaded.
#[derive(Debug, Clone)]
pub struct SourceSettings {
    /// The longest wait for a connection to the source.
    pub connect_timeout: Duration,
    /// The longest wait for any read from the source, its answer's head included: the source may
    /// prepare a large export before it sends the first byte.
    pub read_timeout: Duration,
    /// When to ask again after a 429 or 5xx.
    pub retry: RetryPolicy,
    /// The longest wait between two attempts; a source asking for longer fails the job, saying so.
    pub max_wait: Duration,
}

/// The default of [`SourceSettings::read_timeout`], in seconds.
pub const DEFAULT_READ_TIMEOUT_SECS: u64 = 300;

impl Default for SourceSettings {
    fn default() -> Self {
        Self {
            connect_timeout: Duration::from_secs(30),
            read_timeout: Duration::from_secs(DEFAULT_READ_TIMEOUT_SECS),
            retry: RetryPolicy { max_attempts: 5, retry_statuses: vec![429, 500, 502, 503, 504], ..RetryPolicy::default() },
            max_wait: Duration::from_secs(600),
        }
    }
}

impl SourceSettings {
    /// The defaults, with the read timeout from `DATADICT_AMPLITUDE_TIMEOUT_SECS` when it is set.
    pub fn from_env() -> Self {
        let mut s = Self::default();
        if let Some(secs) = std::env::var("DATADICT_AMPLITUDE_TIMEOUT_SECS").ok().and_then(|v| v.trim().parse::<u64>().ok()).filter(|s| *s > 0) {
            s.read_timeout = Duration::from_secs(secs);
        }
        s
    }
}

/// The export as downloaded, with what the source said of it (for the errors of an archive that
/// cannot be read).
#[derive(Debug, Default)]
pub struct Export {
    pub bytes: Vec<u8>,
    /// The answer's `Content-Type`, if any.
    pub content_type: Option<String>,
}

impl Export {
    /// What the source answered, for an error about it: its content type and first bytes.
    pub fn describe(&self) -> String {
        let head: String = String::from_utf8_lossy(&self.bytes[..self.bytes.len().min(60)]).chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
        format!(
            "the source answered 200 with {} bytes of `{}` starting {head:?}",
            self.bytes.len(),
            self.content_type.as_deref().unwrap_or("no content type")
        )
    }
}

/// The export URL of a range: from hour 00 of the first day to hour 23 of the last, UTC.
pub fn export_url(base: &str, range: &DateRange) -> String {
    let day = |d: datadict_core::Date| d.to_string().replace('-', "");
    format!("{}/api/2/export?start={}T00&end={}T23", base.trim_end_matches('/'), day(range.start), day(range.end))
}

/// Why one attempt did not give the export.
enum Failure {
    /// Worth another attempt: the status and the wait the source asked for.
    Retry { status: u16, retry_after_ms: Option<u64> },
    /// Final.
    Fatal(String),
}

/// Downloads the export of `range`; `Ok(None)` when the source has no data in it. Errors say what
/// happened and what to do, and never contain the key or the secret.
pub fn download(base: &str, key: &str, secret: &str, range: &DateRange, settings: &SourceSettings) -> Result<Option<Export>, String> {
    let url = export_url(base, range);
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_connect(Some(settings.connect_timeout))
        .timeout_per_read(Some(settings.read_timeout))
        .build()
        .into();
    let auth = format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(format!("{key}:{secret}")));
    let mut attempt = 1;
    loop {
        match attempt_download(&agent, &url, &auth, base, settings) {
            Ok(export) => return Ok(export),
            Err(Failure::Fatal(e)) => return Err(e),
            Err(Failure::Retry { status, retry_after_ms }) => {
                let random = f64::from(rand::random::<u32>()) / f64::from(u32::MAX);
                match settings.retry.decide(attempt, Attempt::Status(status), retry_after_ms, random) {
                    Decision::RetryAfterMs(ms) if ms <= settings.max_wait.as_millis() as u64 => {
                        tracing::info!("the source's export API answered {status}; asking again in {} ms (attempt {})", ms, attempt + 1);
                        std::thread::sleep(Duration::from_millis(ms));
                        attempt += 1;
                    }
                    Decision::RetryAfterMs(ms) => {
                        return Err(format!(
                            "the source's export API answered {status} and asked to wait {} s, longer than this server waits; start the migration again later",
                            ms.div_ceil(1000)
                        ))
                    }
                    _ => {
                        return Err(format!(
                            "the source's export API answered {status} {attempt} times in a row (asked again with backoff); it is busy or failing: start the migration again later"
                        ))
                    }
                }
            }
        }
    }
}

fn attempt_download(agent: &ureq::Agent, url: &str, auth: &str, base: &str, settings: &SourceSettings) -> Result<Option<Export>, Failure> {
    let timeout = |e: &ureq::Error| matches!(e, ureq::Error::Timeout(_));
    let mut response = agent.get(url).header("Authorization", auth).call().map_err(|e| {
        Failure::Fatal(if let ureq::Error::Timeout(kind) = &e {
            let (what, limit) = match kind {
                ureq::Timeout::Connect | ureq::Timeout::Resolve => ("could not be connected to", settings.connect_timeout),
                _ => ("did not answer", settings.read_timeout),
            };
            format!(
                "the source's export API at {base} {what} within {} s ({e}); check the network and the server's source URL setting (DATADICT_AMPLITUDE_URL, DATADICT_AMPLITUDE_EU_URL for REGION EU), then start the migration again",
                limit.as_secs_f64()
            )
        } else {
            format!("the source's export API at {base} cannot be reached ({e}); check the network and the server's source URL setting (DATADICT_AMPLITUDE_URL, DATADICT_AMPLITUDE_EU_URL for REGION EU)")
        })
    })?;
    let status = response.status().as_u16();
    let header = |name: &str| response.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
    match status {
        200 => {}
        404 => return Ok(None),
        401 | 403 => {
            return Err(Failure::Fatal(format!(
                "the source refused the credentials ({status}); check SOURCE_API_KEY and SOURCE_API_SECRET, and REGION if the source project is in the EU"
            )))
        }
        400 => return Err(Failure::Fatal("the source refused the export (400), which it does over 4 GB; split the range into shorter ones".into())),
        429 | 500..=599 => {
            let retry_after_ms = header("retry-after").and_then(|v| parse_retry_after(&v, crate::ingest::now_ms()));
            return Err(Failure::Retry { status, retry_after_ms });
        }
        other => {
            return Err(Failure::Fatal(format!(
                "the source's export API answered {other} with `{}`, which it does not document; check the server's source URL setting, then start the migration again",
                header("content-type").unwrap_or_else(|| "no content type".into())
            )))
        }
    }
    let content_type = header("content-type");
    let bytes = response.body_mut().with_config().limit(MAX_EXPORT_BYTES).read_to_vec().map_err(|e| {
        Failure::Fatal(if timeout(&e) {
            format!("the export download stalled: the source sent nothing for {} s ({e}); start the migration again", settings.read_timeout.as_secs_f64())
        } else {
            format!("the export download broke off ({e}); start the migration again")
        })
    })?;
    Ok(Some(Export { bytes, content_type }))
}
