//! Failures of the storage itself, which a client can only wait out: a full disk (SQLite's
//! `SQLITE_FULL`, PostgreSQL's `disk_full`) or a PostgreSQL server that cannot be reached. The
//! API answers them 507 and 503 with `Retry-After` and a message that says what is wrong, not the
//! opaque 500 of a fault (see `ApiError::from`).

/// What kind of outage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outage {
    /// The disk of the database is full.
    DiskFull,
    /// The PostgreSQL server cannot be reached (stopped, restarting, refusing connections).
    Unreachable,
}

/// An outage carried through code that passes failures on as text (the event writer answers
/// every job of a failed group with the group's failure).
#[derive(Debug)]
pub struct StoreOutage {
    pub kind: Outage,
    /// The database's own message, for the log.
    pub detail: String,
}

impl std::fmt::Display for StoreOutage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.detail)
    }
}

impl std::error::Error for StoreOutage {}

/// The outage behind `err`, if it is one.
pub fn outage_of(err: &anyhow::Error) -> Option<Outage> {
    err.chain().find_map(|e| {
        if let Some(outage) = e.downcast_ref::<StoreOutage>() {
            return Some(outage.kind);
        }
        if let Some(rusqlite::Error::SqliteFailure(failure, _)) = e.downcast_ref::<rusqlite::Error>() {
            return (failure.code == rusqlite::ErrorCode::DiskFull).then_some(Outage::DiskFull);
        }
        let pg = e.downcast_ref::<postgres::Error>()?;
        match pg.code() {
            Some(code) if *code == postgres::error::SqlState::DISK_FULL => Some(Outage::DiskFull),
            // Connection exceptions (class 08), a server shutting down or starting (57P01-57P03),
            // too many connections (53300).
            Some(code) => {
                let code = code.code();
                (code.starts_with("08") || matches!(code, "57P01" | "57P02" | "57P03" | "53300")).then_some(Outage::Unreachable)
            }
            // No SQL state: the connection itself failed or closed.
            None => Some(Outage::Unreachable),
        }
    })
}

/// The same failure again, for another job of a failed group: an outage keeps its kind, any
/// other failure becomes its text.
pub(crate) fn again(err: &anyhow::Error) -> anyhow::Error {
    match outage_of(err) {
        Some(kind) => anyhow::Error::new(StoreOutage { kind, detail: format!("{err:#}") }),
        None => anyhow::anyhow!("{err:#}"),
    }
}
