//! What a SQLite store keeps in memory of its projects so that an ingestion request reads nothing
//! from the database before its events are checked: which project each token hash names, and
//! each project's dictionary version (see `ingest::cache`).
//!
//! A project's token never changes and a project is never deleted, so a token found once names
//! its project for good; a token of no project is not remembered (the `admin` command may create
//! its project at any time, from another process).
//!
//! A dictionary version changes with every schema write, and a request that starts after the
//! write's commit must see the new one. Every schema write goes through the writer connection of
//! the server's one process (on SQLite, one server process owns the database: `main.rs` holds the
//! data folder's lock), whose update hook reports the first row written to `dictionary_versions`,
//! before the commit: from then on, until the writer's work has ended (committed or rolled
//! back), versions are read from the database, whose readers see exactly what is committed, and
//! none is remembered. A version read from the database is remembered only if no change began or
//! ended while it was read (the epoch), so a version read before a commit never outlives it.

use crate::FastHash;
use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

/// The memory of one store (see the module's text).
#[derive(Debug, Default)]
pub(crate) struct Known {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    /// Raised when a change to the versions begins and when it ends.
    epoch: u64,
    /// A change to the versions is under way on the writer connection.
    changing: bool,
    versions: HashMap<i64, i64, FastHash>,
    /// Token hash to project.
    projects: HashMap<String, i64, FastHash>,
}

/// A version not in memory: read it, then hand it to [`Known::remember_version`] with this.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Unknown {
    epoch: u64,
}

impl Known {
    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The project's dictionary version when memory has it, else what remembering a read needs.
    pub(crate) fn version(&self, project_id: i64) -> Result<i64, Unknown> {
        let inner = self.inner();
        match inner.versions.get(&project_id) {
            Some(&version) if !inner.changing => Ok(version),
            _ => Err(Unknown { epoch: inner.epoch }),
        }
    }

    /// What remembering a version read from now on needs.
    pub(crate) fn unknown(&self) -> Unknown {
        Unknown { epoch: self.inner().epoch }
    }

    /// Remembers a version read from the database after [`Known::version`] answered `unknown`,
    /// unless a change began or ended since.
    pub(crate) fn remember_version(&self, project_id: i64, version: i64, unknown: Unknown) {
        let mut inner = self.inner();
        if !inner.changing && inner.epoch == unknown.epoch {
            inner.versions.insert(project_id, version);
        }
    }

    /// The project a token hash names, when it was found before.
    pub(crate) fn project(&self, token_hash: &str) -> Option<i64> {
        self.inner().projects.get(token_hash).copied()
    }

    /// Remembers the project a token hash names (found in the database).
    pub(crate) fn remember_project(&self, token_hash: &str, project_id: i64) {
        self.inner().projects.insert(token_hash.to_owned(), project_id);
    }

    /// The writer connection has written a row of `dictionary_versions` (its update hook, inside
    /// the transaction): versions are read from the database until [`Known::settle`].
    pub(crate) fn changing(&self) {
        let mut inner = self.inner();
        if !inner.changing {
            inner.changing = true;
            inner.epoch += 1;
            inner.versions.clear();
        }
    }

    /// The writer connection's work has ended (its transaction committed or rolled back).
    pub(crate) fn settle(&self) {
        let mut inner = self.inner();
        if inner.changing {
            inner.changing = false;
            inner.epoch += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A version read while a change was under way, or across its beginning or end, is not
    /// remembered; one read after the change has settled is.
    #[test]
    fn a_version_read_across_a_change_is_not_remembered() {
        let known = Known::default();
        let before = known.version(1).unwrap_err();
        known.changing();
        known.remember_version(1, 3, before);
        assert!(known.version(1).is_err(), "read before the change began");
        let during = known.version(1).unwrap_err();
        known.remember_version(1, 3, during);
        assert!(known.version(1).is_err(), "read while it was under way");
        known.settle();
        known.remember_version(1, 3, during);
        assert!(known.version(1).is_err(), "read before it ended");
        let after = known.version(1).unwrap_err();
        known.remember_version(1, 4, after);
        assert_eq!(known.version(1).unwrap(), 4);
        known.changing();
        assert!(known.version(1).is_err(), "a change forgets every version");
        known.settle();
        assert!(known.version(1).is_err());
    }

    #[test]
    fn token_hashes_are_remembered_once_found() {
        let known = Known::default();
        assert_eq!(known.project("h"), None);
        known.remember_project("h", 7);
        assert_eq!(known.project("h"), Some(7));
    }
}
