//! Small helpers shared by the tasks: running commands loudly, finding tools, timing.

use anyhow::{bail, Context};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

/// Moves to the workspace root, so every path in the tasks is relative to it.
pub fn enter_workspace_root() -> anyhow::Result<()> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    std::env::set_current_dir(&root).with_context(|| format!("cannot enter {}", root.display()))
}

/// Prints a step in the form every task uses, so logs read alike.
pub fn step(msg: &str) {
    println!("==> {msg}");
}

/// Renders a command for the log.
pub fn show(cmd: &Command) -> String {
    let mut s = cmd.get_program().to_string_lossy().into_owned();
    for arg in cmd.get_args() {
        s.push(' ');
        s.push_str(&arg.to_string_lossy());
    }
    s
}

/// Runs a command with inherited output; fails with the command line when it fails.
pub fn run(cmd: &mut Command) -> anyhow::Result<()> {
    println!("$ {}", show(cmd));
    let status = cmd.status().with_context(|| format!("cannot start `{}`", show(cmd)))?;
    if !status.success() {
        bail!("`{}` failed ({status})", show(cmd));
    }
    Ok(())
}

/// Runs a command quietly and returns its trimmed standard output, or `None` when it cannot run
/// or fails (used to probe for installed tools).
pub fn probe(program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program).args(args).stdin(Stdio::null()).stderr(Stdio::null()).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// Finds a program on PATH or in cargo's bin folder (which a fresh shell may not have on PATH).
pub fn which(program: &str) -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH").map(|p| std::env::split_paths(&p).collect()).unwrap_or_default();
    dirs.push(cargo_bin_dir());
    dirs.into_iter().map(|d| d.join(program)).find(|p| p.is_file())
}

pub fn cargo_bin_dir() -> PathBuf {
    std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
        .unwrap_or_else(|| PathBuf::from("/root/.cargo"))
        .join("bin")
}

/// The `cargo` that runs this task (so a rustup override is honoured).
pub fn cargo() -> Command {
    Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
}

/// Measures a closure and returns its result with the elapsed seconds.
pub fn timed<T>(f: impl FnOnce() -> T) -> (T, f64) {
    let start = Instant::now();
    let value = f();
    (value, start.elapsed().as_secs_f64())
}

/// Prints a duration as `1m 23s` or `4.2s`.
pub fn human_secs(secs: f64) -> String {
    if secs >= 60.0 {
        format!("{}m {:02}s", (secs / 60.0) as u64, (secs % 60.0) as u64)
    } else {
        format!("{secs:.1}s")
    }
}

/// Free bytes on the disk that holds `path` (or its nearest existing parent), read from `df`;
/// `None` when `df` cannot tell.
pub fn free_bytes(path: &Path) -> Option<u64> {
    let existing = path.ancestors().find(|p| p.exists()).unwrap_or(Path::new("."));
    let out = Command::new("df").arg("-Pk").arg(existing).stderr(Stdio::null()).output().ok()?;
    // `df -P`: a header line, then `filesystem blocks used available capacity mount`.
    let text = String::from_utf8_lossy(&out.stdout);
    let kib: u64 = text.lines().nth(1)?.split_whitespace().nth(3)?.parse().ok()?;
    Some(kib * 1024)
}

/// Where cargo writes its builds: `CARGO_TARGET_DIR` or `target/` in the workspace.
pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| PathBuf::from("target"), PathBuf::from)
}

/// Prints a gibibyte count as `2.4 GiB`.
pub fn human_gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_bytes_reads_df_and_falls_back_to_the_nearest_existing_folder() {
        let dir = std::env::temp_dir();
        let here = free_bytes(&dir).expect("df reports the temporary folder");
        assert!(here > 0);
        // A folder that does not exist yet (a fresh checkout's target/) is on its parent's disk;
        // the two readings differ only by what other processes wrote in between.
        let later = free_bytes(&dir.join("not-created-yet/target")).expect("df reports the parent");
        assert!(here.abs_diff(later) < 1 << 30, "{here} vs {later}");
        assert_eq!(human_gib(3 << 30), "3.0 GiB");
    }
}
