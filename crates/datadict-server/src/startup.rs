//! What a start checks before it serves: the command line's values that clap's types let
//! through (a namespace, a listen address, CORS origins, limits), the database's own memory of
//! its namespace, and the data folder (created owner-only; an admin command never creates a
//! database).

use crate::store::{self, Store};
use anyhow::{bail, Context};
use std::path::{Path, PathBuf};

/// `--namespace`: the vendor metadata key every stored dictionary flag is read under, so a key
/// that no JSON writer would type by mistake: not empty, and without spaces or control
/// characters.
pub fn parse_namespace(s: &str) -> Result<String, String> {
    if s.is_empty() {
        return Err("the namespace is empty; pass the vendor metadata key, such as com.vendor (the default)".into());
    }
    if let Some(c) = s.chars().find(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!("`{}` has a space or control character ({c:?}); a namespace is one word such as com.vendor", s.escape_debug()));
    }
    Ok(s.to_owned())
}

/// Checks `namespace` against the one the database remembers. A database keeps the namespace of
/// its first start: its dictionaries' `dropped` and `hidden` flags are stored under that key, and
/// a server reading them under another would store every dropped property and event without a
/// word. A database from before this check adopts the namespace of its next start (logged).
pub fn check_namespace(store: &Store, namespace: &str) -> anyhow::Result<()> {
    let (stored, now) = store.call_sync(|conn| {
        let tx = conn.transaction()?;
        let had_projects = store::project_count(&tx)? > 0;
        let out = store::settings::remember(&tx, store::settings::NAMESPACE, namespace)?;
        tx.commit()?;
        Ok((out.0, out.1 && had_projects))
    })?;
    if now {
        tracing::info!("the database now remembers its namespace `{namespace}`: later starts with another --namespace are refused");
    }
    if stored != namespace {
        bail!(
            "this database's dictionaries are kept under the namespace `{stored}` (set at its first start), but this server was started with \
             --namespace `{namespace}`, under which their dropped and hidden flags would be ignored; start it with --namespace {stored} \
             (or DATADICT_NAMESPACE), or give it another --data-dir or --database for `{namespace}`"
        );
    }
    Ok(())
}

/// What a `--database` value that is not a PostgreSQL URL looks like, without repeating it (it
/// may hold a password in any form): its scheme when it has one, or its shape.
pub fn what_database_is(url: &str) -> String {
    let scheme = url.split_once("://").map(|(scheme, _)| scheme).filter(|s| !s.is_empty() && s.len() <= 20 && s.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c)));
    match scheme {
        Some(scheme) => format!("this one is a `{scheme}://` URL"),
        None if url.contains('=') && !url.contains("://") => "this one is a `key=value` connection string; write it as a URL".to_owned(),
        None => "this one is not a URL".to_owned(),
    }
}

/// The largest count or size a flag takes: 2^53 - 1, the largest integer JavaScript holds
/// exactly, since `/api/app/limits` reports these values to the web app.
pub const MAX_FLAG_VALUE: u64 = (1 << 53) - 1;

/// The largest request body size a flag takes (1 GiB): a body is held in memory, uncompressed,
/// while it is checked.
pub const MAX_BODY_BYTES: u64 = 1 << 30;

/// A parser for a whole-number flag from `min` to `max`; a value outside gets a message naming
/// the range and `unset`, what leaving the flag out means. For clap's `value_parser`, so the
/// same message comes for the flag and for its environment variable.
pub fn whole_number(min: u64, max: u64, unset: &'static str) -> impl Fn(&str) -> Result<u64, String> + Clone + Send + Sync + 'static {
    move |text: &str| match text.trim().parse::<u64>() {
        Ok(n) if (min..=max).contains(&n) => Ok(n),
        _ => Err(format!("give a whole number from {min} to {max}; {unset}")),
    }
}

/// [`whole_number`] for a size held in a `usize`.
pub fn whole_size(min: u64, max: u64, unset: &'static str) -> impl Fn(&str) -> Result<usize, String> + Clone + Send + Sync + 'static {
    let parse = whole_number(min, max, unset);
    move |text: &str| parse(text).and_then(|n| usize::try_from(n).map_err(|_| format!("{n} is too large for this machine")))
}

/// The name of the SQLite database file in the data folder.
pub const DATABASE_FILE: &str = "datadict.sqlite3";

/// Creates `dir` and the folders above it that are missing, readable by the owner only (0700 on
/// Unix): the data folder holds every event and profile stored. A folder that exists is left as
/// it is.
pub fn create_private_dir(dir: &Path) -> anyhow::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir).with_context(|| format!("cannot create the folder {}", dir.display()))
}

/// Creates the empty file `path`, readable and writable by the owner only (0600 on Unix), when it
/// does not exist; an existing file is left as it is. SQLite gives its `-wal` and `-shm` files the
/// permissions of the database file, so creating the database this way first covers them too.
pub fn create_private_file(path: &Path) -> anyhow::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    match options.open(path) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e).with_context(|| format!("cannot create {}", path.display())),
    }
}

/// The SQLite database of `data_dir` for an admin command, which never creates one: a mistyped
/// `--data-dir`, or the default `data` in another working folder, would otherwise get a new,
/// empty database that no server uses, and its tokens and accounts a 401 hard to explain.
pub fn existing_database(data_dir: &Path) -> anyhow::Result<PathBuf> {
    let file = data_dir.join(DATABASE_FILE);
    if !file.is_file() {
        bail!(
            "there is no datadict database in {} (no {DATABASE_FILE}); is --data-dir right? A server creates it at its first start: \
             run `datadict-server --data-dir {}` once, or pass --database for PostgreSQL",
            data_dir.display(),
            data_dir.display()
        );
    }
    Ok(file)
}

/// `--listen`: an IP address with its port, or a host name with its port (`localhost:8080`),
/// resolved here to its first address.
pub fn parse_listen(text: &str) -> Result<std::net::SocketAddr, String> {
    if let Ok(addr) = text.parse() {
        return Ok(addr);
    }
    let example = "such as 127.0.0.1:8080, [::1]:8080 or localhost:8080";
    let Some((host, port)) = text.rsplit_once(':') else { return Err(format!("give an address with its port, {example}")) };
    if port.parse::<u16>().is_err() {
        return Err(format!("`{port}` is not a port (0 to 65535); give an address with its port, {example}"));
    }
    if host.is_empty() {
        return Err(format!("the address has no host; {example}"));
    }
    match std::net::ToSocketAddrs::to_socket_addrs(text) {
        Ok(mut addrs) => addrs.next().ok_or_else(|| format!("`{host}` has no address; give an IP address with its port, {example}")),
        Err(e) => Err(format!("cannot resolve `{host}` ({e}); give an IP address with its port, {example}")),
    }
}

/// One `--cors-origin` entry: `*`, or an origin `scheme://host[:port]` (a trailing `/` is
/// dropped); anything else would never match a browser's `Origin` and leave the allow-list
/// silently empty. An empty entry (an empty `DATADICT_CORS_ORIGINS`) allows nothing more.
pub fn parse_cors_origin(text: &str) -> Result<String, String> {
    let origin = text.trim().trim_end_matches('/');
    if origin.is_empty() || origin == "*" {
        return Ok(origin.to_owned());
    }
    if origin == "null" {
        return Err("`null` (the origin of a page that has none) cannot be allowed by name; allow * instead, or the page's own origin".into());
    }
    let shaped = axum::http::HeaderValue::from_str(origin).is_ok_and(|v| crate::hosting::is_origin(&v)) && origin != "null";
    match shaped {
        true => Ok(origin.to_owned()),
        false if !origin.contains("://") => Err(format!("`{origin}` is not an origin: write it with its scheme, such as https://{origin} (or * for any origin)")),
        false => Err(format!("`{origin}` is not an origin: write scheme://host[:port], such as https://app.example.com, without a path (or * for any origin)")),
    }
}
