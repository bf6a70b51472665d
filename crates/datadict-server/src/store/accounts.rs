//! Projects, service accounts, their roles on projects, and project tokens.

use super::conn::{dispatch, Conn};

/// A project's role for a service account (FACTS.md: writes need owner or admin).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Owner,
    Admin,
    Consumer,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Owner => "owner",
            Self::Admin => "admin",
            Self::Consumer => "consumer",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "owner" => Some(Self::Owner),
            "admin" => Some(Self::Admin),
            "consumer" => Some(Self::Consumer),
            _ => None,
        }
    }

    pub fn can_write(self) -> bool {
        matches!(self, Self::Owner | Self::Admin)
    }
}

/// A stored service account: its id and the hash of its secret (the secret itself is never kept).
#[derive(Debug, Clone)]
pub struct ServiceAccount {
    pub id: i64,
    pub username: String,
    pub secret_hash: String,
}

pub fn project_count(conn: &Conn<'_>) -> anyhow::Result<i64> {
    dispatch!(conn, accounts::project_count())
}

pub fn project_exists(conn: &Conn<'_>, project_id: i64) -> anyhow::Result<bool> {
    dispatch!(conn, accounts::project_exists(project_id))
}

pub fn insert_project(conn: &Conn<'_>, name: &str, token_hash: &str) -> anyhow::Result<i64> {
    dispatch!(conn, accounts::insert_project(name, token_hash))
}

pub fn insert_service_account(conn: &Conn<'_>, username: &str, secret_hash: &str) -> anyhow::Result<i64> {
    dispatch!(conn, accounts::insert_service_account(username, secret_hash))
}

pub fn service_account_by_name(conn: &Conn<'_>, username: &str) -> anyhow::Result<Option<ServiceAccount>> {
    dispatch!(conn, accounts::service_account_by_name(username))
}

pub fn set_secret_hash(conn: &Conn<'_>, account_id: i64, secret_hash: &str) -> anyhow::Result<()> {
    dispatch!(conn, accounts::set_secret_hash(account_id, secret_hash))
}

pub fn grant_role(conn: &Conn<'_>, account_id: i64, project_id: i64, role: Role) -> anyhow::Result<()> {
    dispatch!(conn, accounts::grant_role(account_id, project_id, role))
}

pub fn revoke_role(conn: &Conn<'_>, account_id: i64, project_id: i64) -> anyhow::Result<bool> {
    dispatch!(conn, accounts::revoke_role(account_id, project_id))
}

pub fn role_of(conn: &Conn<'_>, account_id: i64, project_id: i64) -> anyhow::Result<Option<Role>> {
    dispatch!(conn, accounts::role_of(account_id, project_id))
}

/// The hash of project `project_id`'s token (the project exists: callers have authorized it).
pub fn project_token_hash(conn: &Conn<'_>, project_id: i64) -> anyhow::Result<String> {
    dispatch!(conn, accounts::project_token_hash(project_id))
}

/// The project whose token hashes to `token_hash`, with its dictionary version (see
/// [`dictionary_version`](super::dictionary_version)): one read for both, which `/track` makes
/// on every request.
pub fn project_and_dictionary_by_token_hash(conn: &Conn<'_>, token_hash: &str) -> anyhow::Result<Option<(i64, i64)>> {
    dispatch!(conn, accounts::project_and_dictionary_by_token_hash(token_hash))
}
