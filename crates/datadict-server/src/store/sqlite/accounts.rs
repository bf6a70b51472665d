//! Projects, service accounts, roles and project tokens on SQLite.

use anyhow::Context;
use crate::store::{Role, ServiceAccount};
use rusqlite::{params, Connection, OptionalExtension};

pub fn project_count(conn: &Connection) -> anyhow::Result<i64> {
    Ok(conn.query_row("SELECT count(*) FROM projects", [], |r| r.get(0))?)
}

pub fn project_exists(conn: &Connection, project_id: i64) -> anyhow::Result<bool> {
    Ok(conn
        .query_row("SELECT 1 FROM projects WHERE id = ?1", [project_id], |_| Ok(()))
        .optional()?
        .is_some())
}

pub fn insert_project(conn: &Connection, name: &str, token_hash: &str) -> anyhow::Result<i64> {
    conn.execute("INSERT INTO projects (name, token_hash) VALUES (?1, ?2)", params![name, token_hash])?;
    Ok(conn.last_insert_rowid())
}

pub fn insert_service_account(conn: &Connection, username: &str, secret_hash: &str) -> anyhow::Result<i64> {
    conn.execute(
        "INSERT INTO service_accounts (username, secret_hash) VALUES (?1, ?2)",
        params![username, secret_hash],
    )
    .with_context(|| format!("cannot create service account `{username}` (is the name taken?)"))?;
    Ok(conn.last_insert_rowid())
}

pub fn service_account_by_name(conn: &Connection, username: &str) -> anyhow::Result<Option<ServiceAccount>> {
    Ok(conn
        .query_row(
            "SELECT id, username, secret_hash FROM service_accounts WHERE username = ?1",
            [username],
            |r| Ok(ServiceAccount { id: r.get(0)?, username: r.get(1)?, secret_hash: r.get(2)? }),
        )
        .optional()?)
}

pub fn set_secret_hash(conn: &Connection, account_id: i64, secret_hash: &str) -> anyhow::Result<()> {
    conn.execute("UPDATE service_accounts SET secret_hash = ?2 WHERE id = ?1", params![account_id, secret_hash])?;
    Ok(())
}

pub fn grant_role(conn: &Connection, account_id: i64, project_id: i64, role: Role) -> anyhow::Result<()> {
    conn.execute(
        "INSERT INTO roles (service_account_id, project_id, role) VALUES (?1, ?2, ?3)
         ON CONFLICT (service_account_id, project_id) DO UPDATE SET role = excluded.role",
        params![account_id, project_id, role.as_str()],
    )?;
    Ok(())
}

pub fn revoke_role(conn: &Connection, account_id: i64, project_id: i64) -> anyhow::Result<bool> {
    Ok(conn.execute(
        "DELETE FROM roles WHERE service_account_id = ?1 AND project_id = ?2",
        params![account_id, project_id],
    )? > 0)
}

pub fn role_of(conn: &Connection, account_id: i64, project_id: i64) -> anyhow::Result<Option<Role>> {
    let role: Option<String> = conn
        .query_row(
            "SELECT role FROM roles WHERE service_account_id = ?1 AND project_id = ?2",
            params![account_id, project_id],
            |r| r.get(0),
        )
        .optional()?;
    Ok(role.as_deref().and_then(Role::parse))
}

/// The hash of project `project_id`'s token (the project exists: callers have authorized it).
pub fn project_token_hash(conn: &Connection, project_id: i64) -> anyhow::Result<String> {
    Ok(conn.query_row("SELECT token_hash FROM projects WHERE id = ?1", [project_id], |r| r.get(0))?)
}

/// The project whose token hashes to `token_hash`, with its dictionary version.
pub fn project_and_dictionary_by_token_hash(conn: &Connection, token_hash: &str) -> anyhow::Result<Option<(i64, i64)>> {
    Ok(conn
        .prepare_cached(
            "SELECT p.id, coalesce(v.version, 0) FROM projects p LEFT JOIN dictionary_versions v ON v.project_id = p.id
             WHERE p.token_hash = ?1",
        )?
        .query_row([token_hash], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?)
}
