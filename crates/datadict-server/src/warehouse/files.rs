//! Where a file source is read: a relative `path` is read in the warehouse file folder
//! (`DATADICT_WAREHOUSE_FILE_ROOT`), never in the server's working directory, and a file is read
//! only when it exists, is a regular file (a FIFO or a device would block the run, a folder cannot
//! be read) and lies inside that folder, links resolved. Checked at creation and again at each run.

use std::path::{Component, Path, PathBuf};

/// The path the server opens for `given`: itself when absolute, else inside `root`; `Err` for a
/// relative path without a folder to read it in.
pub fn resolve(given: &str, root: Option<&Path>) -> Result<PathBuf, String> {
    let path = Path::new(given);
    if path.is_absolute() {
        return Ok(path.to_owned());
    }
    match root {
        Some(root) => Ok(root.join(path)),
        None => Err(format!(
            "`{given}` is a relative path and this server has no warehouse file folder (DATADICT_WAREHOUSE_FILE_ROOT) to read it in; give an absolute path"
        )),
    }
}

/// `path` with `.` and `..` taken out by its text alone (no link is followed).
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// Whether `path` is inside `root` by its text, `root` taken as given and with its links resolved.
fn lexically_inside(path: &Path, root: &Path) -> bool {
    let path = lexical(path);
    let given = lexical(&std::path::absolute(root).unwrap_or_else(|_| root.to_owned()));
    path.starts_with(given) || std::fs::canonicalize(root).is_ok_and(|r| path.starts_with(r))
}

/// Whether `path` (links resolved) lies inside `root`; always true without a root.
pub fn inside(path: &Path, root: Option<&Path>) -> bool {
    let Some(root) = root else { return true };
    match (std::fs::canonicalize(path), std::fs::canonicalize(root)) {
        (Ok(p), Ok(r)) => p.starts_with(r),
        _ => false,
    }
}

/// How a message names the file: its path inside the folder when it is in it (the user knows it;
/// the server's own layout is not disclosed), else as given.
fn shown(path: &Path, given: &str, root: Option<&Path>) -> String {
    let rel = root.and_then(|r| {
        let path = lexical(path);
        let r = lexical(&std::path::absolute(r).ok()?);
        path.strip_prefix(r).ok().map(|p| p.display().to_string())
    });
    match rel {
        Some(rel) => format!("`{rel}` in the warehouse file folder"),
        None => format!("`{given}`"),
    }
}

/// Why the file at `path` (resolved from `given`) cannot be read as a source, if it cannot. A
/// path outside `root` by its text is refused before the file is looked at, so that the answer
/// does not tell whether a file exists outside the folder.
pub fn check(path: &Path, given: &str, root: Option<&Path>) -> Result<(), String> {
    const OUTSIDE: &str = "the source file is outside the folder this server reads warehouse files from (DATADICT_WAREHOUSE_FILE_ROOT); put it there, and give its path inside that folder";
    if root.is_some_and(|r| !lexically_inside(path, r)) {
        return Err(OUTSIDE.into());
    }
    let name = shown(path, given, root);
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(format!("the source file does not exist: nothing at {name}; check the path, or put the file there"))
        }
        Err(e) => return Err(format!("the source file at {name} cannot be read by the server ({e}); check its permissions")),
    };
    if !meta.is_file() {
        let kind = file_kind(&meta);
        return Err(format!("the source at {name} is {kind}, not a regular file; give the path of a file"));
    }
    if !inside(path, root) {
        // A link inside the folder to a file outside it.
        return Err(OUTSIDE.into());
    }
    Ok(())
}

fn file_kind(meta: &std::fs::Metadata) -> &'static str {
    if meta.is_dir() {
        return "a folder";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let t = meta.file_type();
        if t.is_fifo() {
            return "a named pipe (FIFO)";
        }
        if t.is_block_device() || t.is_char_device() {
            return "a device";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    "not a file"
}
