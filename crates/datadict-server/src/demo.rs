//! The demo project created on a server's first start, so that a newcomer sees a working
//! dictionary at once. Its credentials are kept in a file of the data folder (readable by the
//! owner only) so that `cargo xtask run` can print them on every start; the database itself holds
//! only their hashes, as for every other account. A start checks the kept secret against the
//! account: once `admin rotate-secret` replaced it, the file loses it (the rotation updates the
//! file itself when it can), and the start says so instead of printing a secret that no longer
//! works.

use crate::admin;
use crate::store::{self, Role, Store};
use datadict_core::{SchemaEntry, DEFAULT_NAMESPACE};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// What a person needs to sign in to the demo project.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DemoCredentials {
    pub project_id: i64,
    pub username: String,
    /// Empty once the account's secret was rotated and the new one is not known here.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub secret: String,
    pub project_token: String,
}

pub const CREDENTIALS_FILE: &str = "demo-credentials.json";

/// Creates the demo project when the database has no project yet, its dictionary's metadata under
/// `namespace` (the server's `--namespace`, so that its hidden and dropped flags take effect), and
/// returns the demo credentials (read back from the data folder on later starts, when the file is
/// still there).
pub fn ensure_demo(store: &Store, data_dir: &Path, namespace: &str) -> anyhow::Result<Option<DemoCredentials>> {
    let file = data_dir.join(CREDENTIALS_FILE);
    if store.call_sync(|conn| store::project_count(conn))? > 0 {
        return kept_credentials(store, &file);
    }
    let project = admin::create_project(store, "Demo project")?;
    let account = admin::create_service_account(store, "demo-owner")?;
    admin::grant(store, &account.username, project.id, Role::Owner)?;
    let entries = sample_dictionary_under(namespace);
    store.call_sync(|conn| {
        let tx = conn.transaction()?;
        for entry in &entries {
            store::put_schema(&tx, project.id, entry)?;
        }
        tx.commit()?;
        Ok(())
    })?;
    let creds = DemoCredentials {
        project_id: project.id,
        username: account.username,
        secret: account.secret,
        project_token: project.token,
    };
    write_private(&file, &serde_json::to_string_pretty(&creds)?)?;
    Ok(Some(creds))
}

/// The credentials kept in `file` on a later start: none when there is no file (a server started
/// with `--no-demo`, or the file deleted); none, with a warning, when it cannot be read; without
/// their secret when the account's secret no longer matches it (rotated), which is then dropped
/// from the file.
fn kept_credentials(store: &Store, file: &Path) -> anyhow::Result<Option<DemoCredentials>> {
    let text = match std::fs::read_to_string(file) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            tracing::warn!("cannot read the demo credentials in {}: {e}; they are not shown", file.display());
            return Ok(None);
        }
    };
    let mut creds: DemoCredentials = match serde_json::from_str(&text) {
        Ok(creds) => creds,
        Err(e) => {
            tracing::warn!("the demo credentials in {} cannot be read ({e}); they are not shown (delete the file to stop this warning)", file.display());
            return Ok(None);
        }
    };
    if creds.secret.is_empty() {
        return Ok(Some(creds));
    }
    let username = creds.username.clone();
    let account = store.call_sync(|conn| store::service_account_by_name(conn, &username))?;
    if account.is_some_and(|a| a.secret_hash == crate::auth::hash_secret(&creds.secret)) {
        return Ok(Some(creds));
    }
    creds.secret.clear();
    if let Err(e) = write_private(file, &serde_json::to_string_pretty(&creds)?) {
        tracing::warn!("cannot drop the rotated secret from {}: {e:#}", file.display());
    }
    Ok(Some(creds))
}

/// After `admin rotate-secret` of `username`: puts the new secret into the demo credentials of
/// `data_dir` when they are that account's. Returns whether it did.
pub fn record_rotation(data_dir: &Path, username: &str, secret: &str) -> anyhow::Result<bool> {
    let file = data_dir.join(CREDENTIALS_FILE);
    let Ok(text) = std::fs::read_to_string(&file) else { return Ok(false) };
    let Ok(mut creds) = serde_json::from_str::<DemoCredentials>(&text) else { return Ok(false) };
    if creds.username != username {
        return Ok(false);
    }
    creds.secret = secret.to_owned();
    write_private(&file, &serde_json::to_string_pretty(&creds)?)?;
    Ok(true)
}

fn write_private(path: &Path, text: &str) -> anyhow::Result<()> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)?.write_all(text.as_bytes())?;
    Ok(())
}

/// [`sample_dictionary`] with its metadata under `namespace` instead of the default one.
pub fn sample_dictionary_under(namespace: &str) -> Vec<SchemaEntry> {
    let mut entries = sample_dictionary();
    if namespace == DEFAULT_NAMESPACE {
        return entries;
    }
    let rename = |metadata: &mut Option<serde_json::Map<String, serde_json::Value>>| {
        if let Some(vendor) = metadata.as_mut().and_then(|m| m.remove(DEFAULT_NAMESPACE)) {
            metadata.get_or_insert_with(Default::default).insert(namespace.to_owned(), vendor);
        }
    };
    for entry in &mut entries {
        rename(&mut entry.schema_json.metadata);
        for def in entry.schema_json.properties.iter_mut().flat_map(|p| p.values_mut()) {
            rename(&mut def.metadata);
        }
    }
    entries
}

/// A small dictionary that shows every feature: descriptions, display names, tags, contacts,
/// hidden and dropped entities and properties, and the user profile, under the default namespace.
pub fn sample_dictionary() -> Vec<SchemaEntry> {
    let raw = serde_json::json!([
        {"entityType": "event", "name": "Sign Up", "schemaJson": {
            "description": "A visitor created an account.",
            "properties": {
                "plan": {"type": "string", "description": "The plan chosen at sign-up.", "metadata": {"com.vendor": {"displayName": "Plan"}}},
                "referrer": {"type": "string", "description": "Where the visitor came from."},
                "marketing_opt_in": {"type": "boolean", "description": "Whether the user accepted marketing e-mail."}
            },
            "metadata": {"com.vendor": {"displayName": "Sign up", "tags": ["onboarding", "core"], "contacts": ["growth-lead@example.com"], "teamContacts": ["Growth"]}}
        }},
        {"entityType": "event", "name": "Purchase", "schemaJson": {
            "description": "An order was paid.",
            "properties": {
                "price": {"type": "number", "description": "Total paid, in the order's currency.", "metadata": {"com.vendor": {"displayName": "Price"}}},
                "currency": {"type": "string", "description": "ISO 4217 code."},
                "items": {"type": "array", "description": "SKUs in the order."},
                "card_last4": {"type": "string", "description": "Must never be tracked.", "metadata": {"com.vendor": {"dropped": true}}}
            },
            "metadata": {"com.vendor": {"tags": ["revenue", "core"], "contacts": ["finance@example.com"], "teamContacts": ["Payments"]}}
        }},
        {"entityType": "event", "name": "Page View", "schemaJson": {
            "description": "A page was shown.",
            "properties": {
                "path": {"type": "string"},
                "duration_ms": {"type": "integer", "metadata": {"com.vendor": {"hidden": true}}}
            },
            "metadata": {"com.vendor": {"tags": ["web"], "hidden": true}}
        }},
        {"entityType": "event", "name": "Debug Ping", "schemaJson": {
            "description": "Heartbeat from debug builds; dropped at ingestion.",
            "metadata": {"com.vendor": {"tags": ["noise"], "dropped": true}}
        }},
        {"entityType": "profile", "name": "$user", "schemaJson": {
            "description": "A signed-up user.",
            "properties": {
                "$email": {"type": "string", "metadata": {"com.vendor": {"displayName": "E-mail"}}},
                "plan": {"type": "string"},
                "lifetime_value": {"type": "number", "metadata": {"com.vendor": {"hidden": true}}}
            },
            "metadata": {"com.vendor": {"displayName": "User", "teamContacts": ["Data"]}}
        }}
    ]);
    serde_json::from_value(raw).expect("the sample dictionary is valid")
}

#[cfg(test)]
mod tests {
    use super::*;
    use datadict_core::{validate_schema_entry, SchemaRules};

    #[test]
    fn the_sample_dictionary_passes_validation() {
        for entry in sample_dictionary() {
            let value = serde_json::to_value(&entry).unwrap();
            assert_eq!(validate_schema_entry(&value, &SchemaRules::default()), vec![], "{}", entry.name);
        }
    }

    /// A server started with another `--namespace` seeds the demo dictionary under it, so that its
    /// hidden and dropped flags take effect there.
    #[test]
    fn the_demo_is_seeded_under_the_configured_namespace() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_in_memory().unwrap();
        let creds = ensure_demo(&store, dir.path(), "com.mixpanel").unwrap().unwrap();
        let stored = store.call_sync(|conn| store::list_schemas(conn, creds.project_id, None, None)).unwrap();
        assert_eq!(stored.len(), sample_dictionary().len());
        let debug = stored.iter().find(|e| e.name == "Debug Ping").unwrap();
        assert_eq!(debug.schema_json.vendor("com.mixpanel").dropped, Some(true));
        assert!(!serde_json::to_string(&stored).unwrap().contains(DEFAULT_NAMESPACE));
    }

    /// Under another namespace the same flags are read there, and nothing is left under the
    /// default one, where the server would not look.
    #[test]
    fn the_sample_dictionary_moves_to_another_namespace() {
        let entries = sample_dictionary_under("com.mixpanel");
        let text = serde_json::to_string(&entries).unwrap();
        assert!(!text.contains(DEFAULT_NAMESPACE), "{text}");
        let rules = SchemaRules { namespace: "com.mixpanel".into() };
        for entry in &entries {
            assert_eq!(validate_schema_entry(&serde_json::to_value(entry).unwrap(), &rules), vec![], "{}", entry.name);
        }
        // The dictionary the checks read (hidden, dropped) is the default one's, read there.
        use datadict_core::Dictionary;
        let read = Dictionary::new(&entries, "com.mixpanel");
        assert_eq!(read, Dictionary::new(&sample_dictionary(), DEFAULT_NAMESPACE));
        assert_ne!(read, Dictionary::new(&sample_dictionary(), "com.mixpanel"));
        assert_eq!(sample_dictionary_under(DEFAULT_NAMESPACE), sample_dictionary());
    }
}
