//! Who may do what (spec §5): service accounts with HTTP Basic, secrets hashed at rest and compared
//! in constant time, project tokens, and the extractors that judge a request's credentials before
//! its handler runs: 401 for missing or wrong credentials, 403 for valid ones without access.
//!
//! - [`ProjectRead`] and [`ProjectWrite`] (`extract.rs`): a service account with a role in the
//!   project of the path's `{project_id}`.
//! - [`IngestCaller`] (`ingest.rs`): the project an ingestion request writes to, by service
//!   account and `project_id` or by the project token; [`token_projects`] and
//!   [`records_project`] for requests authenticated by the tokens their records carry.

mod extract;
mod ingest;

pub use extract::{AccessLevel, Project, ProjectRead, ProjectWrite, ReadAccess, WriteAccess};
pub use ingest::{records_project, token_project, token_projects, token_projects_versioned, IngestCaller};

use crate::error::ApiError;
use crate::store::{self, Role, ServiceAccount};
use crate::AppState;
use crate::FastHash;
use axum::http::{header, HeaderMap};
use base64::Engine;
use rand::RngCore;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};
use subtle::ConstantTimeEq;

/// Who made a request and what they may do in the project it names.
#[derive(Debug, Clone)]
pub struct Principal {
    pub account_id: i64,
    /// The project the request names, read from its URL.
    pub project_id: i64,
    pub username: String,
    pub role: Role,
}

/// What an operation needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Read,
    Write,
}

/// A new secret: 32 random bytes, URL-safe base64 without padding (43 characters).
pub fn generate_secret() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// The stored form of a secret. Secrets are server-generated with 256 bits of entropy, so a fast
/// hash is enough: a slow password hash would only add latency to every import request, and there
/// is no low-entropy input to protect against guessing.
pub fn hash_secret(secret: &str) -> String {
    let digest = Sha256::digest(secret.as_bytes());
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256:");
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for byte in digest {
        out.push(char::from(HEX[usize::from(byte >> 4)]));
        out.push(char::from(HEX[usize::from(byte & 0xf)]));
    }
    out
}

/// [`hash_secret`] of a project token that ingestion presents, remembered: a tracking request
/// carries the same token as the thousands before it, and SHA-256 (without SHA extensions on
/// many CPUs) was 3% of its instructions. The memo is keyed by a BLAKE3 MAC of the token under a
/// key drawn when the process starts, so it holds no token and its lookups time nothing an
/// attacker can relate to one; what it holds, the SHA-256 hashes, is what the database holds.
/// Past 1,024 tokens (`TOKEN_MEMO_SIZE`; a flood of wrong ones, say) it starts again empty.
pub fn hash_token(token: &str) -> String {
    /// The MAC's key, and each MAC's hash.
    type Memo = ([u8; 32], Mutex<HashMap<[u8; 32], String, FastHash>>);
    static MEMO: LazyLock<Memo> = LazyLock::new(|| {
        let mut key = [0u8; 32];
        rand::rng().fill_bytes(&mut key);
        (key, Mutex::default())
    });
    let (key, memo) = &*MEMO;
    let mac = *blake3::keyed_hash(key, token.as_bytes()).as_bytes();
    if let Some(hash) = memo.lock().unwrap_or_else(|e| e.into_inner()).get(&mac) {
        return hash.clone();
    }
    let hash = hash_secret(token);
    let mut memo = memo.lock().unwrap_or_else(|e| e.into_inner());
    if memo.len() >= TOKEN_MEMO_SIZE {
        memo.clear();
    }
    memo.insert(mac, hash.clone());
    hash
}

/// How many token hashes [`hash_token`] keeps.
const TOKEN_MEMO_SIZE: usize = 1024;

/// Compares a presented secret with a stored hash in time independent of where they differ.
pub fn verify_secret(secret: &str, stored_hash: &str) -> bool {
    hash_secret(secret).as_bytes().ct_eq(stored_hash.as_bytes()).into()
}

/// Decodes an `Authorization: Basic` header into user name and password.
pub fn basic_credentials(headers: &HeaderMap) -> Result<(String, String), ApiError> {
    let value = headers.get(header::AUTHORIZATION).ok_or_else(|| {
        ApiError::Unauthorized(
            "missing credentials: send an `Authorization: Basic` header with the service account user name and secret".into(),
        )
    })?;
    let value = value
        .to_str()
        .map_err(|_| ApiError::Unauthorized("the `Authorization` header is not readable text".into()))?;
    let encoded = value
        .strip_prefix("Basic ")
        .or_else(|| value.strip_prefix("basic "))
        .ok_or_else(|| ApiError::Unauthorized("the `Authorization` header must use the `Basic` scheme".into()))?;
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .map_err(|_| ApiError::Unauthorized("the `Basic` credentials are not valid base64".into()))?;
    let text = String::from_utf8(decoded)
        .map_err(|_| ApiError::Unauthorized("the `Basic` credentials are not UTF-8 text".into()))?;
    let (user, pass) = text
        .split_once(':')
        .ok_or_else(|| ApiError::Unauthorized("the `Basic` credentials must be `user:secret`".into()))?;
    Ok((user.to_owned(), pass.to_owned()))
}

/// Authenticates the service account `username` with `secret`, then checks its role for `access`
/// in `project` (the project id as the request wrote it, already parsed). The credentials are
/// judged first: without valid ones the answer is 401 whatever else is wrong, and only then does a
/// malformed project id get its 400 (the `Err` of `project`), and a missing role its 403.
pub async fn authorize(
    state: &AppState,
    (username, secret): (String, String),
    project: Result<i64, ApiError>,
    access: Access,
) -> Result<Principal, ApiError> {
    let asked = project.as_ref().ok().copied();
    let (account, role) = state
        .store
        .read(move |conn| {
            let account = store::service_account_by_name(conn, &username)?;
            let role = match (&account, asked) {
                (Some(a), Some(project_id)) => store::role_of(conn, a.id, project_id)?,
                _ => None,
            };
            Ok((account, role))
        })
        .await?;
    let account = verify_account(account, &secret)?;
    admit(account.id, account.username, project?, role, access)
}

/// A service account whose secret a request presented: who it is, before the request says which
/// project it means ([`authorize_account`] then checks its role there).
#[derive(Debug, Clone)]
pub struct Authenticated {
    pub account_id: i64,
    pub username: String,
}

/// Authenticates the service account `username` with `secret` (401 otherwise), for a request
/// whose project is only known once its body is read (the ingestion routes' `project_id` may be
/// a form field).
pub async fn authenticate(state: &AppState, (username, secret): (String, String)) -> Result<Authenticated, ApiError> {
    let account = state.store.read(move |conn| store::service_account_by_name(conn, &username)).await?;
    let account = verify_account(account, &secret)?;
    Ok(Authenticated { account_id: account.id, username: account.username })
}

/// [`authorize`] for an account [`authenticate`] admitted: the 400 of a malformed project id (the
/// `Err` of `project`), then the 403 of a missing role.
pub async fn authorize_account(
    state: &AppState,
    account: &Authenticated,
    project: Result<i64, ApiError>,
    access: Access,
) -> Result<Principal, ApiError> {
    let project_id = project?;
    let account_id = account.account_id;
    let role = state.store.read(move |conn| store::role_of(conn, account_id, project_id)).await?;
    admit(account_id, account.username.clone(), project_id, role, access)
}

/// The account, if `secret` is its secret; else the 401. An unknown user still pays for one hash
/// and comparison, so that timing does not tell which user names exist.
fn verify_account(account: Option<ServiceAccount>, secret: &str) -> Result<ServiceAccount, ApiError> {
    const UNKNOWN: &str = "sha256:0000000000000000000000000000000000000000000000000000000000000000";
    let stored = account.as_ref().map_or(UNKNOWN, |a| a.secret_hash.as_str());
    let valid = verify_secret(secret, stored) && account.is_some();
    account
        .filter(|_| valid)
        .ok_or_else(|| ApiError::Unauthorized("invalid credentials: check the service account user name and secret".into()))
}

/// The principal of account `account_id` in `project_id` when its `role` there allows `access`;
/// else the 403.
fn admit(account_id: i64, username: String, project_id: i64, role: Option<Role>, access: Access) -> Result<Principal, ApiError> {
    let Some(role) = role else {
        return Err(ApiError::Forbidden(format!(
            "service account `{username}` has no access to project {project_id}; ask a project owner to grant it a role"
        )));
    };
    if access == Access::Write && !role.can_write() {
        return Err(ApiError::Forbidden(format!(
            "service account `{username}` is a {} of project {project_id}; this request writes to the project (its dictionary, events, profiles, lookup tables or warehouse imports), which needs the owner or admin role",
            role.as_str()
        )));
    }
    Ok(Principal { account_id, project_id, username, role })
}

/// The project whose token is `token`, if any: the one lookup of a project by its token, for
/// ingestion (the token as Basic user name, or `$token` in the records) and migrations
/// (`TARGET_TOKEN`). Tokens are stored as the hashes of [`hash_secret`] and looked up by hash, so
/// the database compares digests, never the token itself, and how long a lookup takes tells nothing
/// about how much of a guessed token was right.
pub async fn project_by_token(state: &AppState, token: &str) -> Result<Option<i64>, ApiError> {
    let hash = hash_token(token);
    Ok(state.store.project_and_version_by_token_hash(hash).await?.map(|(project_id, _)| project_id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_verify_only_against_their_own_hash() {
        let secret = generate_secret();
        assert_eq!(secret.len(), 43);
        let hash = hash_secret(&secret);
        assert!(hash.starts_with("sha256:") && !hash.contains(&secret));
        assert!(verify_secret(&secret, &hash));
        assert!(!verify_secret("wrong", &hash));
        assert_ne!(generate_secret(), secret);
    }

    #[test]
    fn a_remembered_token_hash_is_the_token_hash() {
        let tokens: Vec<String> = (0..TOKEN_MEMO_SIZE + 10).map(|_| generate_secret()).collect();
        // Twice over more tokens than the memo keeps: each answer, first or remembered, is the hash.
        for _ in 0..2 {
            for token in &tokens {
                assert_eq!(hash_token(token), hash_secret(token));
            }
        }
        assert_ne!(hash_token(&tokens[0]), hash_token(&tokens[1]));
    }

    #[test]
    fn basic_header_is_decoded() {
        let mut headers = HeaderMap::new();
        assert!(matches!(basic_credentials(&headers), Err(ApiError::Unauthorized(_))));
        headers.insert(header::AUTHORIZATION, "Basic dXNlcjpwYTpzcw==".parse().unwrap());
        assert_eq!(basic_credentials(&headers).unwrap(), ("user".into(), "pa:ss".into()));
        headers.insert(header::AUTHORIZATION, "Bearer x".parse().unwrap());
        assert!(matches!(basic_credentials(&headers), Err(ApiError::Unauthorized(_))));
    }
}
