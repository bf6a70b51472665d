//! A real PostgreSQL for the tests, started from the installed binaries (Debian's package:
//! `apt-get install postgresql`): one cluster per test (`Postgres::start`, stopped on drop), or
//! one shared by the whole test binary with a new database per server (`fresh_database`).

use std::io::Write as _;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

/// A PostgreSQL cluster in a temporary folder, listening on 127.0.0.1 on a free port.
pub struct Postgres {
    pub dir: tempfile::TempDir,
    pub port: u16,
    runner: Vec<String>,
}

/// The path of an installed PostgreSQL program (Debian keeps them out of `PATH`).
pub fn pg_binary(name: &str) -> String {
    let found = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join("bin").join(name))
        .find(|p| p.is_file());
    found.map(|p| p.to_string_lossy().into_owned()).unwrap_or_else(|| name.to_owned())
}

impl Postgres {
    /// Starts a new cluster (initdb, then pg_ctl start, waiting until it accepts connections).
    pub fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        // PostgreSQL refuses to run as root: as root, run it as the `postgres` user.
        let root = Command::new("id")
            .arg("-u")
            .output()
            .map(|o| o.stdout.starts_with(b"0"))
            .unwrap_or(false);
        let runner: Vec<String> = if root {
            vec!["runuser".into(), "-u".into(), "postgres".into(), "--".into()]
        } else {
            Vec::new()
        };
        if root {
            let ok = Command::new("chown")
                .args(["-R", "postgres:postgres"])
                .arg(dir.path())
                .status()
                .unwrap()
                .success();
            assert!(ok, "cannot hand the test folder to the postgres user");
        }
        let mut pg = Self { dir, port: 0, runner };
        let data = pg.dir.path().join("data");
        let out = pg
            .command(&pg_binary("initdb"))
            .args(["-A", "trust", "-U", "postgres", "--no-sync", "-D"])
            .arg(&data)
            .output()
            .unwrap_or_else(|e| panic!("initdb cannot run ({e}); install PostgreSQL: apt-get install postgresql"));
        assert!(out.status.success(), "initdb failed: {}", String::from_utf8_lossy(&out.stderr));
        // A free port is found by binding port 0 and letting it go, so another process (a test
        // server, another cluster) may take it before PostgreSQL binds it: then try another.
        for attempt in 1.. {
            pg.port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
            let log = pg.dir.path().join(format!("log-{attempt}"));
            let options = format!(
                "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off",
                pg.port,
                pg.dir.path().display()
            );
            let out = pg
                .command(&pg_binary("pg_ctl"))
                .arg("-D")
                .arg(&data)
                .args(["-o", &options, "-w", "-l"])
                .arg(&log)
                .arg("start")
                .output()
                .unwrap();
            if out.status.success() {
                break;
            }
            let log = std::fs::read_to_string(&log).unwrap_or_default();
            assert!(
                attempt < 5 && log.contains("Address already in use"),
                "pg_ctl start failed (attempt {attempt}): {} {log}",
                String::from_utf8_lossy(&out.stdout),
            );
        }
        pg
    }

    /// `program` as the user PostgreSQL runs as.
    pub fn command(&self, program: &str) -> Command {
        match self.runner.split_first() {
            Some((first, rest)) => {
                let mut c = Command::new(first);
                c.args(rest).arg(program);
                c
            }
            None => Command::new(program),
        }
    }

    /// A client of the `postgres` database.
    pub fn client(&self) -> postgres::Client {
        postgres::Config::new()
            .host("127.0.0.1")
            .port(self.port)
            .user("postgres")
            .dbname("postgres")
            .connect(postgres::NoTls)
            .unwrap()
    }

    /// The URL of database `name`, as `--database` takes it.
    pub fn url(&self, name: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{name}", self.port)
    }

    fn stop_command(&self) -> Command {
        let mut c = self.command(&pg_binary("pg_ctl"));
        c.arg("-D").arg(self.dir.path().join("data")).args(["-m", "immediate", "stop"]);
        c
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let _ = self.stop_command().output();
    }
}

/// The cluster shared by the tests of this binary, and the pipe that stops it when the binary
/// exits (statics are never dropped).
struct Shared {
    pg: Postgres,
    admin: Mutex<postgres::Client>,
    _stop_on_exit: std::process::ChildStdin,
}

/// The URL of a new, empty database in the shared cluster (started on first use): each test
/// server gets its own, as each SQLite test server gets its own file.
pub fn fresh_database() -> String {
    static SHARED: OnceLock<Shared> = OnceLock::new();
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let shared = SHARED.get_or_init(|| {
        let pg = Postgres::start();
        // A watcher that stops the cluster and removes its folder once this process has gone:
        // its standard input is a pipe only this process holds, so its `cat` ends when the
        // kernel closes that pipe at exit, however the process ends.
        let stop = pg.stop_command();
        let script = format!(
            "cat >/dev/null; {} {}; rm -rf {}",
            stop.get_program().to_string_lossy(),
            stop.get_args()
                .map(|a| format!("'{}'", a.to_string_lossy()))
                .collect::<Vec<_>>()
                .join(" "),
            pg.dir.path().display()
        );
        // Never waited for: it must outlive this process, and is reaped by init once it has.
        #[allow(clippy::zombie_processes)]
        let mut watcher = Command::new("sh")
            .args(["-c", &script])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut stdin = watcher.stdin.take().unwrap();
        stdin.flush().unwrap();
        let admin = Mutex::new(pg.client());
        Shared {
            pg,
            admin,
            _stop_on_exit: stdin,
        }
    });
    let name = format!("test_{}", NEXT.fetch_add(1, Ordering::Relaxed));
    shared
        .admin
        .lock()
        .unwrap()
        .batch_execute(&format!("CREATE DATABASE {name}"))
        .unwrap();
    shared.pg.url(&name)
}
