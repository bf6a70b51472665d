//! Warehouse imports (spec §2.10, §4.2, FACTS.md "Warehouse imports"): the definition of an
//! import (kind, source, column mapping), its validation (every problem listed), the redacted form
//! the API shows, and the mapping of one source row to an event or a profile update.

pub mod files;
pub mod source;
pub mod sync;
pub mod time;

use datadict_core::amplitude::{hashed_insert_id, valid_insert_id};
use datadict_core::api::warehouse as props;
use datadict_core::{Issue, IssueCode, Limits};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The kinds this server imports (FACTS.md lists more: `event_stream`, `groups`, `lookup_table`).
pub const KINDS: [&str; 2] = ["event_sync", "people"];

/// Where the rows come from: the embedded sources, which need nothing installed (a table of a
/// SQLite database file, or an NDJSON or CSV file with a header line, all on the server), and a
/// PostgreSQL table. A PostgreSQL password is never part of the import: `password_env` names the
/// server's environment variable that holds it (a reference, so the API stores no secret), one
/// whose name starts with [`PASSWORD_ENV_PREFIX`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
pub enum Source {
    /// `path`: absolute, or relative to the warehouse file folder (`DATADICT_WAREHOUSE_FILE_ROOT`),
    /// never to the server's working directory; as for every file source.
    Sqlite { path: String, table: String },
    /// One JSON object per line (a byte order mark before the first is skipped).
    Ndjson { path: String },
    /// A header line naming each column once; every value is read as a string, an empty field as
    /// no value.
    Csv { path: String },
    Postgres {
        host: String,
        #[serde(default = "default_pg_port")]
        port: u16,
        user: String,
        dbname: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        password_env: Option<String>,
        /// `table` or `schema.table`.
        table: String,
    },
}

/// The prefix of every environment variable a PostgreSQL source may name as `password_env`. A
/// project admin chooses the name and the host the password is sent to, so any other variable of
/// the server (its database URL, a cloud key) could be sent anywhere: the operator puts source
/// passwords in variables of this prefix, and only those can be named.
pub const PASSWORD_ENV_PREFIX: &str = "DATADICT_WAREHOUSE_";

/// The server setting that shares [`PASSWORD_ENV_PREFIX`] but holds no password.
const FILE_ROOT_ENV: &str = "DATADICT_WAREHOUSE_FILE_ROOT";

/// Why `var` may not be named as `password_env` (`None` when it may). Judged on the name alone,
/// before any lookup, so that a refusal says nothing of whether the variable exists.
pub fn password_env_refusal(var: &str) -> Option<String> {
    let allowed = var.len() > PASSWORD_ENV_PREFIX.len() && var.starts_with(PASSWORD_ENV_PREFIX) && var != FILE_ROOT_ENV;
    (!allowed).then(|| {
        format!(
            "`password_env` must name an environment variable whose name starts with `{PASSWORD_ENV_PREFIX}` (and is not `{FILE_ROOT_ENV}`), \
             so that an import cannot read the server's other settings; set one where the server runs \
             (for example `{PASSWORD_ENV_PREFIX}PG_PASSWORD=...`), restart the server, and name it here"
        )
    })
}

fn default_pg_port() -> u16 {
    5432
}

impl Source {
    /// The file of a file source.
    pub fn path(&self) -> Option<&str> {
        match self {
            Self::Sqlite { path, .. } | Self::Ndjson { path } | Self::Csv { path } => Some(path),
            Self::Postgres { .. } => None,
        }
    }

    /// The source as the server reads it: a file source's relative path made a path inside the
    /// warehouse file folder `root` (see [`files::resolve`]).
    pub fn resolved(&self, root: Option<&std::path::Path>) -> Result<Source, String> {
        let file = |path: &str| files::resolve(path, root).map(|p| p.to_string_lossy().into_owned());
        Ok(match self {
            Self::Sqlite { path, table } => Self::Sqlite { path: file(path)?, table: table.clone() },
            Self::Ndjson { path } => Self::Ndjson { path: file(path)? },
            Self::Csv { path } => Self::Csv { path: file(path)? },
            Self::Postgres { .. } => self.clone(),
        })
    }

    /// Why the source's file cannot be read, if it cannot (see [`files::check`]); `Ok` for
    /// PostgreSQL. `self` is the source as given, `root` the warehouse file folder.
    pub fn check_file(&self, root: Option<&std::path::Path>) -> Result<(), String> {
        let Some(given) = self.path() else { return Ok(()) };
        let path = files::resolve(given, root)?;
        files::check(&path, given, root)
    }

    /// The source as the API shows it: the file name without its folders, so that the server's
    /// layout is not disclosed (the full path is given once, at creation, and never returned);
    /// for PostgreSQL, where it is and whether a password is referenced, never the password.
    pub fn redacted(&self) -> Value {
        let shown = || {
            let name = std::path::Path::new(self.path().unwrap_or_default()).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            format!("…/{name}")
        };
        match self {
            Self::Sqlite { table, .. } => serde_json::json!({"type": "sqlite", "path": shown(), "table": table}),
            Self::Ndjson { .. } => serde_json::json!({"type": "ndjson", "path": shown()}),
            Self::Csv { .. } => serde_json::json!({"type": "csv", "path": shown()}),
            Self::Postgres { host, port, user, dbname, password_env, table } => serde_json::json!({
                "type": "postgres", "host": host, "port": port, "user": user, "dbname": dbname, "table": table,
                "password": if password_env.is_some() { "referenced" } else { "none" },
            }),
        }
    }
}

/// Which columns become what. Names follow the vendor's interface where it has them
/// (`event_column_name`, `time_column_name`, `user_column_name`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Mapping {
    /// A constant event name for every row (`event_sync`; or `event_column_name`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event_column_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_column_name: Option<String>,
    /// The `distinct_id` of events; the `$distinct_id` of profiles.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_column_name: Option<String>,
    /// A column holding the `$insert_id` (`event_sync`; or `key_column_names`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub insert_id_column_name: Option<String>,
    /// Columns that identify a row; the `$insert_id` is a hash of their values, so a re-sync of
    /// the same rows makes the same ids and no duplicates.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub key_column_names: Vec<String>,
    /// The columns that become properties; all the columns not mapped above when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub property_column_names: Option<Vec<String>>,
}

/// The body of `POST .../warehouse-sources/imports`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewImport {
    pub name: String,
    pub kind: String,
    pub source: Source,
    pub mapping: Mapping,
}

/// Validates a create body: every problem is listed. `columns` gives the source's columns when
/// they can be known up front (a SQLite table, a CSV header), so that a mapping to a column that
/// does not exist is refused at creation rather than at the first sync.
pub fn validate(body: &Value, file_root: Option<&std::path::Path>) -> (Option<NewImport>, Vec<Issue>) {
    let mut issues = Vec::new();
    let Some(obj) = body.as_object() else {
        issues.push(Issue::new("", IssueCode::WrongType, "the body must be a JSON object with `name`, `kind`, `source` and `mapping`"));
        return (None, issues);
    };
    for key in obj.keys().filter(|k| !["name", "kind", "source", "mapping"].contains(&k.as_str())) {
        issues.push(Issue::new(key.as_str(), IssueCode::UnknownField, format!("`{key}` is not a field of an import; the fields are `name`, `kind`, `source`, `mapping`")));
    }
    match obj.get("name") {
        Some(Value::String(s)) if !s.trim().is_empty() => {}
        _ => issues.push(Issue::new("name", IssueCode::MissingField, "`name` is required; give the import a non-empty name")),
    }
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
    if !KINDS.contains(&kind) {
        issues.push(Issue::new("kind", IssueCode::InvalidEnum, "`kind` must be `event_sync` (rows become events) or `people` (rows become user profiles)"));
    }
    let source = match obj.get("source") {
        None => {
            issues.push(Issue::new("source", IssueCode::MissingField, "`source` is required, e.g. {\"type\":\"sqlite\",\"path\":\"/data/w.db\",\"table\":\"orders\"}"));
            None
        }
        Some(v) => match serde_json::from_value::<Source>(v.clone()) {
            Ok(s) => Some(s),
            Err(e) => {
                issues.push(Issue::new("source", IssueCode::WrongType, format!("`source` cannot be read ({e}); use `type` sqlite (with `path` and `table`), ndjson or csv (with `path`)")));
                None
            }
        },
    };
    let mapping = match obj.get("mapping") {
        None => {
            issues.push(Issue::new("mapping", IssueCode::MissingField, "`mapping` is required; it names the columns to read"));
            None
        }
        Some(v) => match serde_json::from_value::<Mapping>(v.clone()) {
            Ok(m) => Some(m),
            Err(e) => {
                issues.push(Issue::new("mapping", IssueCode::WrongType, format!("`mapping` cannot be read ({e}); see the fields of a mapping in the API docs")));
                None
            }
        },
    };
    let mut columns = None;
    if let Some(s @ Source::Postgres { host, user, dbname, table, password_env, .. }) = &source {
        for (field, v) in [("host", host), ("user", user), ("dbname", dbname), ("table", table)] {
            if v.trim().is_empty() {
                issues.push(Issue::new(format!("source.{field}"), IssueCode::MissingField, format!("`source.{field}` is required for a PostgreSQL source")));
            }
        }
        if let Some(var) = password_env {
            // The name is judged before the variable is looked up, so that the answer never tells
            // whether a variable outside the allowed ones exists.
            if let Some(refusal) = password_env_refusal(var) {
                issues.push(Issue::new("source.password_env", IssueCode::InvalidName, refusal));
            } else if std::env::var_os(var).is_none() {
                issues.push(Issue::new("source.password_env", IssueCode::InvalidName, format!("the server has no environment variable `{var}`; set it to the password where the server runs, restart the server, then create the import")));
            }
        }
        if issues.is_empty() {
            match source::columns(s) {
                Ok(c) => columns = c,
                Err(e) => issues.push(Issue::new("source", IssueCode::InvalidName, e)),
            }
        }
    }
    if let Some(path) = source.as_ref().and_then(Source::path) {
        let s = source.as_ref().expect("a path comes from a source");
        if path.trim().is_empty() {
            issues.push(Issue::new("source.path", IssueCode::MissingField, "`source.path` is required; give the file's path on the server (absolute, or inside the warehouse file folder)"));
        } else if let Err(e) = s.check_file(file_root) {
            issues.push(Issue::new("source.path", IssueCode::InvalidName, e));
        } else {
            match s.resolved(file_root).and_then(|r| source::columns(&r)) {
                Ok(c) => columns = c,
                Err(e) => issues.push(Issue::new("source", IssueCode::InvalidName, e)),
            }
        }
        if let Source::Sqlite { table, .. } = s {
            if table.trim().is_empty() {
                issues.push(Issue::new("source.table", IssueCode::MissingField, "`source.table` is required; give the table to read"));
            }
        }
    }
    if let Some(m) = &mapping {
        check_mapping(kind, m, columns.as_deref(), &mut issues);
    }
    if issues.is_empty() {
        let name = obj["name"].as_str().unwrap_or_default().trim().to_owned();
        (Some(NewImport { name, kind: kind.to_owned(), source: source.expect("valid"), mapping: mapping.expect("valid") }), issues)
    } else {
        (None, issues)
    }
}

fn check_mapping(kind: &str, m: &Mapping, columns: Option<&[String]>, issues: &mut Vec<Issue>) {
    let mut named: Vec<(&'static str, String)> = Vec::new();
    let mut need = |field: &'static str, value: &Option<String>, issues: &mut Vec<Issue>, what: &str| match value {
        Some(c) if !c.trim().is_empty() => named.push((field, c.clone())),
        _ => issues.push(Issue::new(format!("mapping.{field}"), IssueCode::MissingField, format!("`mapping.{field}` is required: {what}"))),
    };
    match kind {
        "event_sync" => {
            match (&m.event_name, &m.event_column_name) {
                (Some(_), Some(_)) => issues.push(Issue::new("mapping.event_name", IssueCode::InvalidEnum, "give either `event_name` (one name for every row) or `event_column_name`, not both")),
                (None, None) => issues.push(Issue::new("mapping.event_name", IssueCode::MissingField, "give `event_name` (one name for every row) or `event_column_name` (the column holding the name)")),
                (Some(n), None) if n.trim().is_empty() => issues.push(Issue::new("mapping.event_name", IssueCode::InvalidName, "`event_name` is empty; give the event's name")),
                (None, Some(_)) => need("event_column_name", &m.event_column_name, issues, "the column holding the event name"),
                _ => {}
            }
            need("time_column_name", &m.time_column_name, issues, "the column holding the event time");
            need("user_column_name", &m.user_column_name, issues, "the column holding the distinct_id");
            if m.insert_id_column_name.is_some() && !m.key_column_names.is_empty() {
                issues.push(Issue::new("mapping.insert_id_column_name", IssueCode::InvalidEnum, "give either `insert_id_column_name` or `key_column_names`, not both"));
            } else if m.insert_id_column_name.is_some() {
                need("insert_id_column_name", &m.insert_id_column_name, issues, "the column holding the insert id");
            } else if m.key_column_names.is_empty() {
                issues.push(Issue::new("mapping.key_column_names", IssueCode::MissingField, "give `insert_id_column_name` or `key_column_names` (the columns that identify a row), so that a re-sync makes no duplicates"));
            }
        }
        "people" => {
            need("user_column_name", &m.user_column_name, issues, "the column holding the user's distinct_id");
            for (field, v) in [("event_name", &m.event_name), ("event_column_name", &m.event_column_name), ("time_column_name", &m.time_column_name), ("insert_id_column_name", &m.insert_id_column_name)] {
                if v.is_some() {
                    issues.push(Issue::new(format!("mapping.{field}"), IssueCode::UnknownField, format!("`{field}` does not apply to a `people` import; leave it out")));
                }
            }
        }
        _ => {}
    }
    let Some(columns) = columns else { return };
    let mut check = |path: String, c: &str| {
        if !columns.iter().any(|x| x == c) {
            issues.push(Issue::new(path, IssueCode::InvalidName, format!("the source has no column `{c}`; its columns are {}", columns.join(", "))));
        }
    };
    for (field, c) in named {
        check(format!("mapping.{field}"), &c);
    }
    for (i, c) in m.key_column_names.iter().enumerate() {
        check(format!("mapping.key_column_names[{i}]"), c);
    }
    for (i, c) in m.property_column_names.iter().flatten().enumerate() {
        check(format!("mapping.property_column_names[{i}]"), c);
    }
}

/// Why a row cannot be an event or a profile update: the code it is kept under in the rejected
/// store (route `job`), and the sentence the run shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub code: &'static str,
    pub message: String,
}

/// The code of a row whose time column holds no time.
pub const INVALID_TIME: &str = "invalid_time";
/// The code of a row the source could not read (not JSON, a CSV record that does not fit its
/// header, text that is not UTF-8, a value JSON cannot carry).
pub const UNREADABLE_ROW: &str = "unreadable_row";

impl Refusal {
    fn missing(message: String) -> Self {
        Self { code: IssueCode::MissingField.as_str(), message }
    }
}

/// A row of a source: column name to value.
pub type Row = Map<String, Value>;

/// The text of a key value: strings as they are, other scalars as JSON.
fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// The columns of `m` that are not properties when `property_column_names` is absent. Key
/// columns stay properties: they are data (an order id), not fields of the event record.
fn mapped(m: &Mapping) -> Vec<&str> {
    [&m.event_column_name, &m.time_column_name, &m.user_column_name, &m.insert_id_column_name]
        .into_iter()
        .flatten()
        .map(String::as_str)
        .collect()
}

fn properties(m: &Mapping, row: &Row) -> Map<String, Value> {
    let mut out = Map::new();
    match &m.property_column_names {
        Some(cols) => {
            for c in cols {
                if let Some(v) = row.get(c).filter(|v| !v.is_null()) {
                    out.insert(c.clone(), v.clone());
                }
            }
        }
        None => {
            let skip = mapped(m);
            for (k, v) in row {
                if !v.is_null() && !skip.contains(&k.as_str()) {
                    out.insert(k.clone(), v.clone());
                }
            }
        }
    }
    out
}

/// Maps one row of an `event_sync` import to an event (spec §2.8) carrying the default properties
/// of spec §2.10; `Err` says why the row cannot be an event.
pub fn row_to_event(m: &Mapping, import_id: i64, run_id: &str, row: &Row, limits: &Limits) -> Result<Value, Refusal> {
    let column = |name: &str| row.get(name).filter(|v| !v.is_null());
    let event = match (&m.event_name, &m.event_column_name) {
        (Some(n), _) => n.clone(),
        (None, Some(c)) => match column(c) {
            Some(v) if !text(v).is_empty() => text(v),
            _ => return Err(Refusal::missing(format!("the event name column `{c}` is empty"))),
        },
        (None, None) => return Err(Refusal::missing("the mapping names no event".into())),
    };
    let time_col = m.time_column_name.as_deref().unwrap_or_default();
    let time = match column(time_col) {
        None => return Err(Refusal::missing(format!("the time column `{time_col}` is empty"))),
        Some(v) => time::time_ms(v).map_err(|why| Refusal {
            code: INVALID_TIME,
            message: format!("the time column `{time_col}` {why}; use epoch seconds or milliseconds, or ISO 8601 such as `2024-05-01T13:45:00Z` or `2024-05-01 15:45:00+02:00`"),
        })?,
    };
    let user_col = m.user_column_name.as_deref().unwrap_or_default();
    // FACTS.md: an empty distinct_id is allowed (the event is not tied to a user).
    let distinct_id = column(user_col).map(text).unwrap_or_default();
    let insert_id = match &m.insert_id_column_name {
        Some(c) => match column(c) {
            Some(v) if !text(v).is_empty() => valid_insert_id(Some(&text(v)), "", "", "", limits),
            _ => return Err(Refusal::missing(format!("the insert id column `{c}` is empty"))),
        },
        None => {
            let id = import_id.to_string();
            let mut parts: Vec<String> = vec!["warehouse".into(), id];
            for c in &m.key_column_names {
                match column(c) {
                    Some(v) => parts.push(text(v)),
                    None => return Err(Refusal::missing(format!("the key column `{c}` is empty; every key column needs a value to derive the insert id"))),
                }
            }
            let refs: Vec<&str> = parts.iter().map(String::as_str).collect();
            hashed_insert_id(&refs)
        }
    };
    let mut p = properties(m, row);
    p.insert("time".into(), Value::from(time));
    p.insert("distinct_id".into(), Value::from(distinct_id));
    p.insert("$insert_id".into(), Value::from(insert_id));
    p.insert(props::IMPORT_ID.into(), Value::from(import_id.to_string()));
    p.insert(props::IMPORT_JOB_ID.into(), Value::from(run_id));
    p.insert(props::IMPORT.into(), Value::Bool(true));
    p.insert(props::SOURCE.into(), Value::from(props::SOURCE_VALUE));
    Ok(serde_json::json!({"event": event, "properties": p}))
}

/// Maps one row of a `people` import to a profile `$set` (spec §2.9).
pub fn row_to_profile(m: &Mapping, row: &Row, limits: &Limits) -> Result<(String, Map<String, Value>), Refusal> {
    let user_col = m.user_column_name.as_deref().unwrap_or_default();
    let distinct_id = row.get(user_col).map(text).unwrap_or_default();
    if distinct_id.is_empty() {
        return Err(Refusal::missing(format!("the user column `{user_col}` is empty; a profile needs a distinct_id")));
    }
    if limits.forbidden_ids.iter().any(|f| f.eq_ignore_ascii_case(&distinct_id)) {
        return Err(Refusal { code: IssueCode::ForbiddenId.as_str(), message: format!("the user column `{user_col}` holds `{distinct_id}`, a placeholder id the import refuses") });
    }
    Ok((distinct_id, properties(m, row)))
}

#[cfg(test)]
mod tests;
