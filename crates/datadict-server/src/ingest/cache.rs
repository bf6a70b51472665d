//! Each project's dictionary compiled for ingestion ([`Drops`] and the indexed [`Dictionary`]),
//! kept in memory between requests and rebuilt when the project's schemas change.
//!
//! A tracking request carries one event, so reading every event schema of the project and
//! indexing them again for each request cost more than checking and storing the event. The
//! compiled dictionary is kept per project with the project's dictionary version
//! (`store::dictionary_version`), a counter that every schema write raises in its own
//! transaction, on SQLite and PostgreSQL alike. Each request reads the version (`/track` in the
//! same read as its token lookup) and uses the copy only if it has that version: a schema written
//! by this process or by another one on the same PostgreSQL database is seen by the next request
//! that starts after its commit, never later. The version is read before the schemas, so that a
//! write committed between the two reads makes the copy look older than it is (rebuilt once more),
//! never newer.
//!
//! One entry per project that has ingested since the server started: projects are few, and an
//! entry is about the size of the project's event schemas.

use super::batch::Drops;
use super::shapes::ShapeCache;
use crate::FastHash;
use crate::error::ApiError;
use crate::store::{self, Conn};
use crate::AppState;
use datadict_core::{Dictionary, SchemaEntry};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

/// A project's dictionary as ingestion uses it.
#[derive(Debug, Clone)]
pub struct Compiled {
    /// The project's dictionary version this was built from.
    version: i64,
    /// What the dictionary drops at ingestion.
    pub drops: Arc<Drops>,
    /// The dictionary of the check on arrival, event and profile schemas (`None` when the check
    /// is off): events are checked against the first, user and group profile updates against the
    /// second.
    pub dictionary: Option<Arc<Dictionary>>,
    /// The violation rows of the event shapes seen under this dictionary (`ingest::shapes`).
    pub shapes: Arc<ShapeCache>,
}

/// The compiled dictionaries of the projects, shared by every clone (it lives in the server's
/// `Config`, beside the rate limiter's buckets).
#[derive(Clone, Default)]
pub struct DictionaryCache {
    projects: Arc<Mutex<HashMap<i64, Compiled, FastHash>>>,
}

impl std::fmt::Debug for DictionaryCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.projects.lock().map_or(0, |p| p.len());
        write!(f, "DictionaryCache({n} projects)")
    }
}

impl DictionaryCache {
    fn get(&self, project_id: i64, version: i64) -> Option<Compiled> {
        let projects = self.projects.lock().unwrap_or_else(PoisonError::into_inner);
        projects.get(&project_id).filter(|c| c.version == version).cloned()
    }

    fn put(&self, project_id: i64, compiled: Compiled) {
        let mut projects = self.projects.lock().unwrap_or_else(PoisonError::into_inner);
        // Two requests may build the same project's dictionary at once; the newer version stays.
        if projects.get(&project_id).is_none_or(|c| c.version <= compiled.version) {
            projects.insert(project_id, compiled);
        }
    }
}

/// The project's compiled dictionary, from memory when it is current. `version` is the project's
/// dictionary version when the caller has just read it (with the token lookup); otherwise it is
/// read here.
pub async fn compiled_dictionary(state: &AppState, project_id: i64, version: Option<i64>) -> Result<Compiled, ApiError> {
    let cache = &state.config.dictionaries;
    let version = match version {
        Some(v) => v,
        None => state.store.dictionary_version(project_id).await?,
    };
    if let Some(compiled) = cache.get(project_id, version) {
        return Ok(compiled);
    }
    let check = state.config.dictionary_check;
    let (version, entries) = state.store.read(move |conn| read_schemas(conn, project_id, check)).await?;
    let namespace = &state.config.namespace;
    let compiled = Compiled {
        version,
        drops: Arc::new(Drops::new(&entries, namespace)),
        dictionary: check.then(|| Arc::new(Dictionary::new(&entries, namespace))),
        shapes: Arc::default(),
    };
    cache.put(project_id, compiled.clone());
    Ok(compiled)
}

/// The version, then the schemas ingestion needs: with the check on, every schema, of events and
/// profiles (`Drops` keeps only events that drop something); with it off, only the schemas that
/// may drop.
fn read_schemas(conn: &Conn<'_>, project_id: i64, check: bool) -> anyhow::Result<(i64, Vec<SchemaEntry>)> {
    let version = store::dictionary_version(conn, project_id)?;
    let entries = match check {
        true => store::list_schemas(conn, project_id, None, None)?,
        false => store::dropping_schemas(conn, project_id)?,
    };
    Ok((version, entries))
}
