//! Projects, service accounts, roles and project tokens on PostgreSQL.

use crate::store::{Role, ServiceAccount};
use anyhow::Context;
use postgres::Client;

pub fn project_count(c: &mut Client) -> anyhow::Result<i64> {
    Ok(c.query_one("SELECT count(*) FROM projects", &[])?.get(0))
}

pub fn project_exists(c: &mut Client, project_id: i64) -> anyhow::Result<bool> {
    Ok(c.query_opt("SELECT 1 FROM projects WHERE id = $1", &[&project_id])?.is_some())
}

pub fn insert_project(c: &mut Client, name: &str, token_hash: &str) -> anyhow::Result<i64> {
    Ok(c.query_one(
        "INSERT INTO projects (name, token_hash) VALUES ($1, $2) RETURNING id",
        &[&name, &token_hash],
    )?
    .get(0))
}

pub fn insert_service_account(c: &mut Client, username: &str, secret_hash: &str) -> anyhow::Result<i64> {
    Ok(c.query_one(
        "INSERT INTO service_accounts (username, secret_hash) VALUES ($1, $2) RETURNING id",
        &[&username, &secret_hash],
    )
    .with_context(|| format!("cannot create service account `{username}` (is the name taken?)"))?
    .get(0))
}

pub fn service_account_by_name(c: &mut Client, username: &str) -> anyhow::Result<Option<ServiceAccount>> {
    let row = c.query_opt(
        "SELECT id, username, secret_hash FROM service_accounts WHERE username = $1",
        &[&username],
    )?;
    Ok(row.map(|r| ServiceAccount {
        id: r.get(0),
        username: r.get(1),
        secret_hash: r.get(2),
    }))
}

pub fn set_secret_hash(c: &mut Client, account_id: i64, secret_hash: &str) -> anyhow::Result<()> {
    c.execute(
        "UPDATE service_accounts SET secret_hash = $2 WHERE id = $1",
        &[&account_id, &secret_hash],
    )?;
    Ok(())
}

pub fn grant_role(c: &mut Client, account_id: i64, project_id: i64, role: Role) -> anyhow::Result<()> {
    c.execute(
        "INSERT INTO roles (service_account_id, project_id, role) VALUES ($1, $2, $3)
         ON CONFLICT (service_account_id, project_id) DO UPDATE SET role = excluded.role",
        &[&account_id, &project_id, &role.as_str()],
    )?;
    Ok(())
}

pub fn revoke_role(c: &mut Client, account_id: i64, project_id: i64) -> anyhow::Result<bool> {
    Ok(c.execute(
        "DELETE FROM roles WHERE service_account_id = $1 AND project_id = $2",
        &[&account_id, &project_id],
    )? > 0)
}

pub fn role_of(c: &mut Client, account_id: i64, project_id: i64) -> anyhow::Result<Option<Role>> {
    let row = c.query_opt(
        "SELECT role FROM roles WHERE service_account_id = $1 AND project_id = $2",
        &[&account_id, &project_id],
    )?;
    Ok(row.and_then(|r| Role::parse(r.get(0))))
}

pub fn project_token_hash(c: &mut Client, project_id: i64) -> anyhow::Result<String> {
    Ok(c.query_one("SELECT token_hash FROM projects WHERE id = $1", &[&project_id])?.get(0))
}

pub fn project_and_dictionary_by_token_hash(c: &mut Client, token_hash: &str) -> anyhow::Result<Option<(i64, i64)>> {
    Ok(c.query_opt(
        "SELECT p.id, coalesce(v.version, 0) FROM projects p LEFT JOIN dictionary_versions v ON v.project_id = p.id
         WHERE p.token_hash = $1",
        &[&token_hash],
    )?
    .map(|r| (r.get(0), r.get(1))))
}
