//! The real `datadict-server` binary as a child process, over a data folder and, on PostgreSQL, a
//! database of the shared test cluster: for the tests that kill a server, stop it, or run two.

use super::Backend;
use datadict_server::demo::DemoCredentials;
use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStdout, Command, Stdio};

/// What a server process runs over: its data folder and, on PostgreSQL, the database's URL.
pub struct Data {
    pub dir: tempfile::TempDir,
    pub database: Option<String>,
}

/// A server process on a free port, with its stdout lines. Dropping it kills the process, so that
/// a failed test leaves none behind.
pub struct Proc {
    pub child: Child,
    /// `None` once closed (see [`Proc::close_stdout`]).
    lines: Option<std::io::Lines<BufReader<ChildStdout>>>,
    pub base: String,
    /// What it printed before the line that says where it listens (the log of its start).
    pub printed: String,
}

impl Data {
    /// A new data folder and, on PostgreSQL, a new database.
    pub fn new(backend: Backend) -> Self {
        let database = (backend == Backend::Postgres).then(super::postgres::fresh_database);
        Self { dir: tempfile::tempdir().unwrap(), database }
    }

    /// Another data folder over the same database: what a second process on the same
    /// PostgreSQL runs over.
    pub fn another_folder(&self) -> Self {
        Self { dir: tempfile::tempdir().unwrap(), database: self.database.clone() }
    }

    /// The server started with `command` (words before its options, such as `serve`), `RUST_LOG`
    /// set to `log`, and `stderr`.
    pub fn spawn(&self, log: &str, command: &[&str], stderr: Stdio) -> Proc {
        self.spawn_with(log, command, &[], &[], stderr)
    }

    /// [`Data::spawn`] with more `options` and environment variables.
    pub fn spawn_with(&self, log: &str, command: &[&str], options: &[&str], env: &[(&str, &str)], stderr: Stdio) -> Proc {
        match self.try_spawn(log, command, options, env, stderr) {
            Ok(proc) => proc,
            Err(ended) => panic!("the server exited before listening ({:?}): {}", ended.code, ended.stderr),
        }
    }

    /// The server started as [`Data::spawn_with`] starts it, or what it printed when it refused
    /// to start (its standard error only when `stderr` is `Stdio::piped()`).
    pub fn try_spawn(&self, log: &str, command: &[&str], options: &[&str], env: &[(&str, &str)], stderr: Stdio) -> Result<Proc, Ended> {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_datadict-server"));
        cmd.env("RUST_LOG", log).env("NO_COLOR", "1").envs(env.iter().copied()).arg("--data-dir").arg(self.dir.path());
        if let Some(url) = &self.database {
            cmd.args(["--database", url]);
        }
        let mut child = cmd
            .args(command)
            .args(["--listen", "127.0.0.1:0", "--web-dir"])
            .arg(self.dir.path().join("no-web-app"))
            .args(options)
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut printed = String::new();
        let base = loop {
            let Some(line) = lines.next() else {
                let mut stderr = String::new();
                if let Some(mut pipe) = child.stderr.take() {
                    std::io::Read::read_to_string(&mut pipe, &mut stderr).unwrap();
                }
                let code = child.wait().unwrap().code();
                return Err(Ended { code, stdout: printed, stderr });
            };
            let line = line.unwrap();
            if let Some(rest) = line.strip_prefix("datadict is listening on ") {
                break rest.trim_end_matches('/').to_owned();
            }
            printed.push_str(&line);
            printed.push('\n');
        };
        Ok(Proc { child, lines: Some(lines), base, printed })
    }
}

impl Proc {
    /// Reads the server's output until a line contains `needle`; returns that line.
    pub fn line_with(&mut self, needle: &str) -> String {
        for line in self.lines.as_mut().expect("the server's output was closed").by_ref() {
            let line = line.unwrap();
            if line.contains(needle) {
                return line;
            }
        }
        panic!("the server never printed `{needle}`");
    }

    /// Reads the server's output until a line contains `needle`.
    pub fn wait_for_line(&mut self, needle: &str) {
        for line in self.lines.as_mut().expect("the server's output was closed").by_ref() {
            if line.unwrap().contains(needle) {
                return;
            }
        }
        panic!("the server never printed `{needle}`");
    }

    /// Closes the reading end of the server's standard output, as a reader that went away does.
    pub fn close_stdout(&mut self) {
        self.lines = None;
    }

    /// Kills the process (SIGKILL on Unix) and reaps it.
    pub fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        // Gone already when the test killed or stopped it: then both calls only report that.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The demo project's credentials, which a server's first start wrote into `dir`.
pub fn credentials(dir: &std::path::Path) -> DemoCredentials {
    let text = std::fs::read_to_string(dir.join(datadict_server::demo::CREDENTIALS_FILE)).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// What a run of the binary that ends by itself (an admin command, a refused start) printed.
pub struct Ended {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

/// Runs the binary with `args` (and `env`) in the folder `cwd` until it exits; `RUST_LOG` is
/// `datadict_server=info` unless `env` sets it.
pub fn run_in(cwd: &std::path::Path, args: &[&str], env: &[(&str, &str)]) -> Ended {
    let out = Command::new(env!("CARGO_BIN_EXE_datadict-server"))
        .current_dir(cwd)
        .env("RUST_LOG", "datadict_server=info")
        .env("NO_COLOR", "1")
        .envs(env.iter().copied())
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    Ended { code: out.status.code(), stdout: String::from_utf8_lossy(&out.stdout).into_owned(), stderr: String::from_utf8_lossy(&out.stderr).into_owned() }
}
