//! The client of the source tool's export API (FACTS.md): `GET <host>/api/2/export?start=
//! YYYYMMDDTHH&end=YYYYMMDDTHH` with Basic auth `key:secret`; the answer is a zip archive of
//! gzipped NDJSON, 404 when the range holds no data. Blocking (ureq): call it on a blocking thread.

use base64::Engine;
use datadict_core::migration::DateRange;

/// The largest export this server downloads (FACTS.md: the source answers 400 over 4 GB).
pub const MAX_EXPORT_BYTES: u64 = 4 << 30;

/// The export URL of a range: from hour 00 of the first day to hour 23 of the last, UTC.
pub fn export_url(base: &str, range: &DateRange) -> String {
    let day = |d: datadict_core::Date| d.to_string().replace('-', "");
    format!("{}/api/2/export?start={}T00&end={}T23", base.trim_end_matches('/'), day(range.start), day(range.end))
}

/// Downloads the export of `range`; `Ok(None)` when the source has no data in it. Errors say what
/// to do and never contain the key or the secret.
pub fn download(base: &str, key: &str, secret: &str, range: &DateRange) -> Result<Option<Vec<u8>>, String> {
    let url = export_url(base, range);
    let agent: ureq::Agent = ureq::Agent::config_builder().http_status_as_error(false).build().into();
    let auth = format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(format!("{key}:{secret}")));
    let mut response = agent
        .get(&url)
        .header("Authorization", &auth)
        .call()
        .map_err(|e| format!("the source's export API at {base} cannot be reached ({e}); check the network and the server's source URL setting"))?;
    let status = response.status().as_u16();
    match status {
        200 => {}
        404 => return Ok(None),
        401 | 403 => {
            return Err(format!(
                "the source refused the credentials ({status}); check SOURCE_API_KEY and SOURCE_API_SECRET, and REGION if the source project is in the EU"
            ))
        }
        400 => return Err("the source refused the export (400), which it does over 4 GB; split the range into shorter ones".into()),
        other => return Err(format!("the source's export API answered {other}; try again later")),
    }
    response
        .body_mut()
        .with_config()
        .limit(MAX_EXPORT_BYTES)
        .read_to_vec()
        .map(Some)
        .map_err(|e| format!("the export download broke off ({e}); start the migration again"))
}
