//! Administration of projects and service accounts, shared by the `admin` command line and the
//! demo set-up. Secrets are generated here, returned once to the caller, and only their hashes are
//! stored.

use crate::auth::{generate_secret, hash_secret};
use crate::store::{self, Role, Store};
use anyhow::{bail, Context};

/// A new project and its token (shown once).
#[derive(Debug, Clone)]
pub struct NewProject {
    pub id: i64,
    pub name: String,
    pub token: String,
}

/// A new or rotated service-account secret (shown once).
#[derive(Debug, Clone)]
pub struct NewSecret {
    pub username: String,
    pub secret: String,
}

/// The longest project name, in characters: a name is shown on one line of the web app.
pub const MAX_PROJECT_NAME_CHARS: usize = 200;

/// The longest service account user name, in characters.
pub const MAX_USERNAME_CHARS: usize = 64;

pub fn create_project(store: &Store, name: &str) -> anyhow::Result<NewProject> {
    if name.trim().is_empty() {
        bail!("a project needs a name: pass a non-empty --name");
    }
    if name.chars().count() > MAX_PROJECT_NAME_CHARS {
        bail!("the project name has {} characters; give one of at most {MAX_PROJECT_NAME_CHARS}", name.chars().count());
    }
    if let Some(c) = name.chars().find(|c| c.is_control()) {
        bail!("the project name holds the control character {c:?}; give a name of printable characters (spaces are fine)");
    }
    let token = generate_secret();
    let hash = hash_secret(&token);
    let id = store.call_sync(|conn| store::insert_project(conn, name, &hash))?;
    Ok(NewProject { id, name: name.to_owned(), token })
}

pub fn create_service_account(store: &Store, username: &str) -> anyhow::Result<NewSecret> {
    if username.is_empty() || username.contains(':') || username.chars().any(|c| c.is_whitespace() || c.is_control()) {
        bail!("`{}` is not a usable user name: use letters, digits, dots, dashes or underscores, without `:`, spaces or control characters", username.escape_debug());
    }
    if username.chars().count() > MAX_USERNAME_CHARS {
        bail!("the user name has {} characters; give one of at most {MAX_USERNAME_CHARS}", username.chars().count());
    }
    let secret = generate_secret();
    let hash = hash_secret(&secret);
    store.call_sync(|conn| {
        if store::service_account_by_name(conn, username)?.is_some() {
            bail!("service account `{username}` already exists; for a new secret, run `admin rotate-secret --username {username}`");
        }
        store::insert_service_account(conn, username, &hash)
    })?;
    Ok(NewSecret { username: username.to_owned(), secret })
}

pub fn rotate_secret(store: &Store, username: &str) -> anyhow::Result<NewSecret> {
    let secret = generate_secret();
    let hash = hash_secret(&secret);
    store.call_sync(|conn| {
        let account = store::service_account_by_name(conn, username)?
            .with_context(|| format!("no service account named `{username}`"))?;
        store::set_secret_hash(conn, account.id, &hash)
    })?;
    Ok(NewSecret { username: username.to_owned(), secret })
}

pub fn grant(store: &Store, username: &str, project_id: i64, role: Role) -> anyhow::Result<()> {
    store.call_sync(|conn| {
        let account = store::service_account_by_name(conn, username)?
            .with_context(|| format!("no service account named `{username}`"))?;
        if !store::project_exists(conn, project_id)? {
            bail!("no project with id {project_id}");
        }
        store::grant_role(conn, account.id, project_id, role)
    })
}

pub fn revoke(store: &Store, username: &str, project_id: i64) -> anyhow::Result<bool> {
    store.call_sync(|conn| {
        let account = store::service_account_by_name(conn, username)?
            .with_context(|| format!("no service account named `{username}`"))?;
        if !store::project_exists(conn, project_id)? {
            bail!("no project with id {project_id}");
        }
        store::revoke_role(conn, account.id, project_id)
    })
}
