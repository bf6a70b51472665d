//! The `datadict-server` binary: reads configuration, then serves [`datadict_server::app`] or
//! runs an administration command.

use anyhow::{bail, Context};
use clap::{Args as _, Parser, Subcommand};
use datadict_server::store::{Role, Synchronous};
use datadict_server::startup::{self, whole_number, whole_size, MAX_BODY_BYTES, MAX_FLAG_VALUE};
use datadict_server::{admin, app, demo, AppState, Config, Store};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

/// mimalloc in place of glibc's malloc: a tracking request allocates about 95 times, and glibc's
/// malloc and free were 15% of its instructions (callgrind); mimalloc cuts the request's count by
/// 8%. The library and its tests keep the system allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
// `serve` is the default: its options are taken with or without the word `serve`
// (`datadict-server --listen ADDR` and `datadict-server serve --listen ADDR`).
#[command(
    name = "datadict-server",
    version,
    about = "The datadict API and web app on embedded SQLite or PostgreSQL",
    after_help = "The migration service (POST /migrate/amplitude) is set by environment variables:\n  \
        DATADICT_AMPLITUDE_URL           the source's export API (default https://amplitude.com)\n  \
        DATADICT_AMPLITUDE_EU_URL        the same for REGION EU (default https://analytics.eu.amplitude.com)\n  \
        DATADICT_AMPLITUDE_TIMEOUT_SECS  the longest wait for any read from it (default 300)\n  \
        DATADICT_MAX_MIGRATION_EVENTS    a range must hold under this many events (default 15000000)\n\
        A stopping server (Ctrl-C, SIGTERM) finishes its requests in flight for at most\n  \
        DATADICT_SHUTDOWN_GRACE_SECS     seconds (default 30); a second signal stops it at once\n\
        A client may take any time to send a request's head unless\n  \
        DATADICT_HEADER_READ_TIMEOUT_SECS  limits it (and closes idle connections after as long)"
)]
struct Cli {
    /// Folder of the SQLite database (created if missing). With --database, it still holds the
    /// demo credentials and warehouse file sources.
    #[arg(long, env = "DATADICT_DATA_DIR", default_value = "data", global = true)]
    data_dir: PathBuf,
    /// A PostgreSQL database to run on instead of the SQLite file of --data-dir:
    /// `postgres://user:password@host:port/database`. Its tables are created or upgraded at start.
    #[arg(long, env = "DATADICT_DATABASE_URL", global = true)]
    database: Option<String>,
    /// When a write counts as done: `full` (the default) fsyncs every commit, so that an answered
    /// request survives a power cut; `normal` leaves syncing to checkpoints, so that an answered
    /// request survives a crash or `kill -9` of the server but not a power cut (faster imports;
    /// see BENCHMARKS.md).
    #[arg(long, env = "DATADICT_SQLITE_SYNCHRONOUS", default_value = "full", global = true, value_parser = parse_synchronous)]
    sqlite_synchronous: Synchronous,
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    serve: ServeArgs,
}

#[derive(clap::Args)]
struct ServeArgs {
    /// Address to listen on: an IP address or a host name, with its port; use port 0 for any
    /// free port.
    #[arg(long, env = "DATADICT_LISTEN", default_value = "127.0.0.1:8080", global = true, value_parser = startup::parse_listen)]
    listen: SocketAddr,
    /// Serve HTTPS only, with this PEM certificate chain (the server's certificate first); needs
    /// --tls-key. For clients that send some requests only over HTTPS, such as the service's Node
    /// library's `import`.
    #[arg(long, env = "DATADICT_TLS_CERT", requires = "tls_key", global = true)]
    tls_cert: Option<PathBuf>,
    /// The PEM private key of --tls-cert.
    #[arg(long, env = "DATADICT_TLS_KEY", requires = "tls_cert", global = true)]
    tls_key: Option<PathBuf>,
    /// Folder of the built web app (`cargo xtask dist`), served at `/`.
    #[arg(long, env = "DATADICT_WEB_DIR", default_value = "dist", global = true)]
    web_dir: PathBuf,
    /// Do not create the demo project on first start.
    #[arg(long, global = true)]

    no_demo: bool,
    /// Origins allowed to call the API from a browser (CORS), comma-separated, each
    /// `scheme://host[:port]` (such as https://app.example.com); `*` allows any.
    #[arg(long = "cors-origin", env = "DATADICT_CORS_ORIGINS", value_delimiter = ',', global = true, value_parser = startup::parse_cors_origin)]
    cors_origins: Vec<String>,
    /// Schemas API requests per minute per project (the service allows 5); unlimited when unset.
    #[arg(long, env = "DATADICT_SCHEMA_RATE_LIMIT", global = true, value_parser = whole_number(1, MAX_FLAG_VALUE, "leave it out for no limit"))]
    schema_rate_limit: Option<u64>,
    /// Events plus properties written per minute per project by schemas create/replace requests
    /// (the service allows 4000); unlimited when unset, since a local stand-in should not slow
    /// down the tests and scripts it serves. A request writing more than this alone is refused
    /// with 400 (split it).
    #[arg(long, env = "DATADICT_SCHEMA_UPDATE_RATE_LIMIT", global = true, value_parser = whole_number(1, MAX_FLAG_VALUE, "leave it out for no limit"))]
    schema_update_rate_limit: Option<u64>,
    /// Schemas one delete or `truncate` upload may remove (the service allows 3000); 0 removes
    /// the cap. On by default, unlike the rate limits, because it protects data.
    #[arg(long, env = "DATADICT_SCHEMA_DELETION_LIMIT", default_value_t = datadict_server::ratelimit::DEFAULT_SCHEMA_DELETIONS_PER_REQUEST, global = true, value_parser = whole_number(0, MAX_FLAG_VALUE, "0 removes the cap"))]
    schema_deletion_limit: u64,
    /// Uncompressed bytes per minute per project on /import, /track, /engage, /groups and
    /// lookup-table uploads (the service allows about 2 GB); unlimited when unset.
    #[arg(long, env = "DATADICT_INGEST_RATE_LIMIT", global = true, value_parser = whole_number(1, MAX_FLAG_VALUE, "leave it out for no limit"))]
    ingest_rate_limit: Option<u64>,
    /// Largest uncompressed body of /import, /track, /engage and /groups in bytes (FACTS.md: 10
    /// MiB); warehouse syncs and migrations cut their batches to it too.
    #[arg(long, env = "DATADICT_MAX_REQUEST_BYTES", global = true, default_value_t = datadict_core::Limits::default().max_request_bytes, value_parser = whole_size(1024, MAX_BODY_BYTES, "leave it out for 10 MiB"))]
    max_request_bytes: usize,
    /// Largest uncompressed CSV of `PUT /lookup-tables/{id}` in bytes (default 10 MiB, the size of
    /// one /import body: a table is held and checked in memory before it replaces the stored one).
    #[arg(long, env = "DATADICT_LOOKUP_TABLE_MAX_BYTES", default_value_t = datadict_server::routes::lookup::DEFAULT_MAX_BYTES, global = true, value_parser = whole_size(1, MAX_BODY_BYTES, "leave it out for 10 MiB"))]
    lookup_table_max_bytes: usize,
    /// The vendor metadata key of the dictionary.
    /// A database remembers the namespace of its first start and refuses another.
    #[arg(long, env = "DATADICT_NAMESPACE", default_value = datadict_core::DEFAULT_NAMESPACE, global = true, value_parser = datadict_server::startup::parse_namespace)]
    namespace: String,
    /// Turns off the check of every stored record against the project's dictionary on arrival,
    /// and with it the recording of violations (to compare ingestion speed with it on).
    #[arg(long, env = "DATADICT_NO_DICTIONARY_CHECK", global = true)]
    no_dictionary_check: bool,
    /// The most distinct violation keys kept per project and UTC day; beyond, counts go to an
    /// `$others` row.
    #[arg(long, env = "DATADICT_QUALITY_MAX_KEYS", default_value_t = datadict_server::DEFAULT_QUALITY_MAX_KEYS, global = true, value_parser = whole_size(1, 1_000_000, "leave it out for 1000"))]
    quality_max_keys: usize,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the API and the web app (the default); its options may come before or after the word.
    Serve,
    /// Manage projects and service accounts.
    #[command(subcommand)]
    Admin(AdminCommand),
}

#[derive(Subcommand)]
enum AdminCommand {
    /// Create a project and print its id and token.
    CreateProject {
        /// The project's name, shown in the web app (at most 200 characters, no control characters).
        #[arg(long)]
        name: String,
    },
    /// Create a service account and print its secret (shown once).
    CreateAccount {
        /// The account's user name, for HTTP Basic authentication (at most 64 characters: letters,
        /// digits, dots, dashes or underscores; no `:` or spaces).
        #[arg(long)]
        username: String,
    },
    /// Give a service account a role in a project (owner, admin or consumer).
    Grant {
        /// The service account's user name.
        #[arg(long)]
        username: String,
        /// The project's id (printed by create-project).
        #[arg(long)]
        project: i64,
        /// owner or admin (may read and write the dictionary and the project's data) or consumer
        /// (may read only); a second grant replaces the role.
        #[arg(long, value_parser = parse_role)]
        role: Role,
    },
    /// Take a service account's role in a project away.
    Revoke {
        /// The service account's user name.
        #[arg(long)]
        username: String,
        /// The project's id.
        #[arg(long)]
        project: i64,
    },
    /// Replace a service account's secret and print the new one (shown once).
    RotateSecret {
        /// The service account's user name.
        #[arg(long)]
        username: String,
    },
}

/// The command line, parsed. The serve options are global, so that they take effect before or after
/// the word `serve` (`serve` is the default, and an option written before it was once parsed and
/// then dropped). `admin` takes none of them: it refuses one given on its command line rather
/// than ignore it, and its help does not list them.
fn parse_cli() -> Cli {
    use clap::{CommandFactory, FromArgMatches};
    let serve_args: Vec<clap::Arg> = ServeArgs::augment_args(clap::Command::new("serve")).get_arguments().cloned().collect();
    // A hidden global copy in `admin` keeps clap from propagating the listed one there (it skips
    // an argument a subcommand already has), so that `admin --help` lists only its own options.
    let mut command = Cli::command().mut_subcommand("admin", |admin| admin.args(serve_args.iter().map(|a| a.clone().hide(true))));
    let matches = command.get_matches_mut();
    if matches.subcommand_name() == Some("admin") {
        let given: Vec<String> = serve_args
            .iter()
            .filter(|a| matches.value_source(a.get_id().as_str()) == Some(clap::parser::ValueSource::CommandLine))
            .map(|a| format!("--{}", a.get_long().unwrap_or_default()))
            .collect();
        if !given.is_empty() {
            command
                .error(
                    clap::error::ErrorKind::ArgumentConflict,
                    format!("{} {} of `serve`, which `admin` does not take; leave {} out of the admin command", given.join(", "), if given.len() == 1 { "is an option" } else { "are options" }, if given.len() == 1 { "it" } else { "them" }),
                )
                .exit();
        }
    }
    Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.format(&mut command).exit())
}

fn parse_synchronous(s: &str) -> Result<Synchronous, String> {
    Synchronous::parse(s).ok_or_else(|| format!("unknown value `{s}`: use full or normal"))
}

fn parse_role(s: &str) -> Result<Role, String> {
    Role::parse(s).ok_or_else(|| format!("unknown role `{s}`: use owner, admin or consumer"))
}

/// Writes one line to standard output and flushes it.
fn write_line(args: std::fmt::Arguments<'_>) -> std::io::Result<()> {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{args}")?;
    out.flush()
}

/// A line for whoever watches a running server. A closed standard output (the server piped into
/// `head`, a supervisor gone) must not stop a server that is storing data, so a failed write is
/// ignored rather than turned into a panic as `println!` would.
macro_rules! say {
    ($($arg:tt)*) => {{
        let _ = write_line(format_args!($($arg)*));
    }};
}

/// A line an admin command must deliver (a secret is shown once): a failed write is an error, so
/// the command exits non-zero instead of losing the secret silently or panicking.
macro_rules! shown {
    ($($arg:tt)*) => {
        write_line(format_args!($($arg)*)).context("cannot write to standard output")?
    };
}

/// A refusal (a folder in use, a bad `--database`) is printed as its chain of causes, one line,
/// without the backtrace that `anyhow` adds when `RUST_BACKTRACE` is set: it is a message for
/// the person who started the server, not a crash.
fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("Error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run() -> anyhow::Result<()> {
    // Colours only for a person watching a terminal: a log written to a file or a journal
    // carried the escape codes. `NO_COLOR` (set and not empty) turns them off there too.
    let colour = std::io::IsTerminal::is_terminal(&std::io::stdout()) && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    tracing_subscriber::fmt()
        .with_ansi(colour)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "datadict_server=info".into()),
        )
        .init();
    let cli = parse_cli();
    // A server creates its data folder (owner-only); an admin command never does, nor a database.
    let serving = !matches!(cli.command, Some(Command::Admin(_)));
    if serving {
        startup::create_private_dir(&cli.data_dir)?;
    }
    // On SQLite one server process owns the database: it keeps what it knows of the projects'
    // dictionaries in memory (`store::sqlite::known`), which another server's schema writes would
    // leave stale. The admin commands take no lock: they add projects and accounts only.
    let _lock = match cli.database.is_none() && serving {
        true => Some(lock_data_dir(&cli.data_dir)?),
        false => None,
    };
    let (store, database) = match &cli.database {
        Some(url) if url.starts_with("postgres://") || url.starts_with("postgresql://") => (Store::open_postgres(url)?, "PostgreSQL (--database)".to_owned()),
        Some(url) => bail!(
            "--database takes a PostgreSQL URL, and {} (the value is not repeated, since it may hold a password); pass postgres://user:password@host:port/database, or leave it out to use the SQLite file of --data-dir",
            datadict_server::startup::what_database_is(url)
        ),
        None if serving => {
            let file = cli.data_dir.join(startup::DATABASE_FILE);
            startup::create_private_file(&file)?;
            (Store::open_with(&file, cli.sqlite_synchronous)?, file.display().to_string())
        }
        None => {
            let file = startup::existing_database(&cli.data_dir)?;
            (Store::open_with(&file, cli.sqlite_synchronous)?, file.display().to_string())
        }
    };
    match cli.command {
        None | Some(Command::Serve) => serve(store, &cli.data_dir, &database, cli.serve),
        Some(Command::Admin(cmd)) => run_admin(&store, &cli.data_dir, cmd),
    }
}

/// Holds the data folder's server lock for as long as the returned file is open, or says which
/// folder another server holds.
fn lock_data_dir(data_dir: &std::path::Path) -> anyhow::Result<std::fs::File> {
    let path = data_dir.join("server.lock");
    startup::create_private_file(&path)?;
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .with_context(|| format!("cannot open the lock file {}", path.display()))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => bail!(
            "another datadict server is running on the data folder {} (it holds {}); stop it, or give this server its own --data-dir (several servers share one database only on PostgreSQL, with --database)",
            data_dir.display(),
            path.display()
        ),
        Err(std::fs::TryLockError::Error(e)) => Err(e).with_context(|| format!("cannot lock {}", path.display())),
    }
}

fn run_admin(store: &Store, data_dir: &std::path::Path, cmd: AdminCommand) -> anyhow::Result<()> {
    match cmd {
        AdminCommand::CreateProject { name } => {
            let p = admin::create_project(store, &name)?;
            shown!("project id:    {}\nproject token: {} (shown once)", p.id, p.token);
        }
        AdminCommand::CreateAccount { username } => {
            let s = admin::create_service_account(store, &username)?;
            shown!("service account: {}\nsecret:          {} (shown once)", s.username, s.secret);
        }
        AdminCommand::Grant { username, project, role } => {
            admin::grant(store, &username, project, role)?;
            shown!("{username} is now {} of project {project}", role.as_str());
        }
        AdminCommand::Revoke { username, project } => {
            let removed = admin::revoke(store, &username, project)?;
            shown!("{}", if removed { "role revoked" } else { "that account had no role in that project" });
        }
        AdminCommand::RotateSecret { username } => {
            let s = admin::rotate_secret(store, &username)?;
            shown!("service account: {}\nnew secret:      {} (shown once)", s.username, s.secret);
            // The demo account's secret is kept to be printed at every start: kept current, or
            // dropped by the next start when this fails.
            match demo::record_rotation(data_dir, &s.username, &s.secret) {
                Ok(true) => shown!("(also written to {})", data_dir.join(demo::CREDENTIALS_FILE).display()),
                Ok(false) => {}
                Err(e) => shown!("(cannot update {}: {e:#}; the next start stops showing the old secret)", data_dir.join(demo::CREDENTIALS_FILE).display()),
            }
        }
    }
    Ok(())
}

fn serve(store: Store, data_dir: &std::path::Path, database: &str, args: ServeArgs) -> anyhow::Result<()> {
    datadict_server::startup::check_namespace(&store, &args.namespace)?;
    let demo = if args.no_demo { None } else { demo::ensure_demo(&store, data_dir, &args.namespace)? };
    let web_dir = args.web_dir.join("index.html").is_file().then_some(args.web_dir.clone());
    let mut config = Config {
        web_dir: web_dir.clone(),
        namespace: args.namespace.clone(),
        schema_rate_limit: args.schema_rate_limit,
        schema_update_rate_limit: args.schema_update_rate_limit,
        schema_deletion_limit: (args.schema_deletion_limit > 0).then_some(args.schema_deletion_limit),
        ingest_rate_limit: args.ingest_rate_limit,
        cors_origins: args.cors_origins.iter().map(|o| o.trim().to_owned()).filter(|o| !o.is_empty()).collect(),
        jobs: datadict_server::jobs::JobsConfig::from_env(),
        migration_source: datadict_server::migrate::source::SourceSettings::from_env(),
        lookup_table_max_bytes: args.lookup_table_max_bytes,
        dictionary_check: !args.no_dictionary_check,
        quality_max_keys: args.quality_max_keys,
        ..Default::default()
    };
    config.limits.max_request_bytes = args.max_request_bytes;
    // The served binary never lets a project admin read arbitrary files of the machine: file
    // sources of warehouse imports must lie in one folder, by default inside the data folder.
    if config.jobs.warehouse_file_root.is_none() {
        let root = data_dir.join("warehouse-files");
        startup::create_private_dir(&root)?;
        config.jobs.warehouse_file_root = Some(root.canonicalize()?);
    }
    let file_root = config.jobs.warehouse_file_root.clone().unwrap_or_default();
    let migration_urls = (config.jobs.amplitude_url.clone(), config.jobs.amplitude_eu_url.clone());
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Some(datadict_server::tls::server_config(cert, key)?),
        _ => None,
    };
    let scheme = if tls.is_some() { "https" } else { "http" };
    let grace = shutdown_grace()?;
    let header_read_timeout = header_read_timeout()?;
    let state = AppState::new(store, Arc::new(config));
    let runtime = tokio::runtime::Runtime::new()?;
    let served = runtime.block_on(async move {
        let (shutdown, force) = shutdown_signals();
        let listener = tokio::net::TcpListener::bind(args.listen)
            .await
            .with_context(|| format!("cannot listen on {} (is another server running? pass --listen)", args.listen))?;
        let addr = listener.local_addr()?;
        say!("datadict is listening on {scheme}://{addr}/");
        match &web_dir {
            Some(dir) => say!("  web app:     {scheme}://{addr}/ (from {})", dir.display()),
            None => say!(
                "  web app:     not served: {} has no index.html (build it with `cargo xtask dist`)",
                args.web_dir.display()
            ),
        }
        say!("  data:        {database}");
        say!("  warehouse file sources must be in: {} (DATADICT_WAREHOUSE_FILE_ROOT)", file_root.display());
        say!("  migration source: {} (DATADICT_AMPLITUDE_URL), EU: {} (DATADICT_AMPLITUDE_EU_URL)", migration_urls.0, migration_urls.1);
        if let Some(c) = demo {
            say!("  demo project id:        {}", c.project_id);
            say!("  service account user:   {}", c.username);
            match c.secret.is_empty() {
                true => say!("  service account secret: (rotated with `admin rotate-secret`; not shown)"),
                false => say!("  service account secret: {}", c.secret),
            }
            say!("  project token:          {}", c.project_token);
        }
        say!("Press Ctrl-C to stop.");
        let stop = datadict_server::serving::Stop { shutdown, force, grace, header_read_timeout };
        datadict_server::tls::serve_with(listener, app(state), tls, stop).await?;
        say!("datadict stopped");
        anyhow::Ok(())
    });
    // A job's blocking work (a download waiting on its source, a file being read) would otherwise
    // keep the process, and with it the data folder's lock, until it ends. What was answered is
    // committed; the job's lease lets the next start fail it as interrupted.
    runtime.shutdown_timeout(SHUTDOWN_GRACE);
    served
}

/// How long a stopping server waits for background work after the last request was answered (or
/// after the requests' own grace ran out).
const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// Two futures: the first resolves on Ctrl-C or SIGTERM, the second on the next one, which stops
/// the server at once however many requests are in flight. The handlers are installed when this
/// is called, before the server listens: installed on a future's first poll, a SIGTERM sent right
/// after the first request arrived could still find the default action and kill the server
/// without its graceful stop (seen in the durability tests on a busy machine).
fn shutdown_signals() -> (impl std::future::Future<Output = ()>, impl std::future::Future<Output = ()>) {
    let (first_tx, first) = tokio::sync::oneshot::channel::<()>();
    let (second_tx, second) = tokio::sync::oneshot::channel::<()>();
    #[cfg(unix)]
    let (mut interrupt, mut term) = {
        use tokio::signal::unix::{signal, SignalKind};
        (signal(SignalKind::interrupt()).ok(), signal(SignalKind::terminate()).ok())
    };
    tokio::spawn(async move {
        #[cfg(unix)]
        next_signal(&mut interrupt, &mut term).await;
        #[cfg(not(unix))]
        let _ = tokio::signal::ctrl_c().await;
        // Printed (and flushed) so that a supervisor, or a test, knows the signal was taken.
        say!("shutting down: finishing the requests in flight (a second Ctrl-C or SIGTERM stops at once)");
        let _ = first_tx.send(());
        #[cfg(unix)]
        next_signal(&mut interrupt, &mut term).await;
        #[cfg(not(unix))]
        let _ = tokio::signal::ctrl_c().await;
        say!("stopping now");
        let _ = second_tx.send(());
    });
    let wait = |rx: tokio::sync::oneshot::Receiver<()>| async move {
        // A dropped sender (the runtime going away) stops too.
        let _ = rx.await;
    };
    (wait(first), wait(second))
}

/// The next SIGINT or SIGTERM (never, for a handler that could not be installed).
#[cfg(unix)]
async fn next_signal(interrupt: &mut Option<tokio::signal::unix::Signal>, term: &mut Option<tokio::signal::unix::Signal>) {
    async fn recv(s: Option<&mut tokio::signal::unix::Signal>) {
        match s {
            Some(s) => {
                s.recv().await;
            }
            None => std::future::pending::<()>().await,
        }
    }
    tokio::select! {
        () = recv(interrupt.as_mut()) => {},
        () = recv(term.as_mut()) => {},
    }
}

/// The time limit on a request's head, `DATADICT_HEADER_READ_TIMEOUT_SECS`, or none (see
/// [`datadict_server::serving::HEADER_READ_TIMEOUT`]).
fn header_read_timeout() -> anyhow::Result<Option<std::time::Duration>> {
    match std::env::var("DATADICT_HEADER_READ_TIMEOUT_SECS") {
        Err(_) => Ok(None),
        Ok(text) => match text.trim().parse::<u64>() {
            Ok(secs) if (1..=3600).contains(&secs) => Ok(Some(std::time::Duration::from_secs(secs))),
            _ => bail!("DATADICT_HEADER_READ_TIMEOUT_SECS is `{text}`; give whole seconds from 1 to 3600 (30 is usual), or leave it unset for no limit"),
        },
    }
}

/// How long a stopping server waits for its requests in flight: `DATADICT_SHUTDOWN_GRACE_SECS`,
/// by default [`datadict_server::serving::SHUTDOWN_GRACE`].
fn shutdown_grace() -> anyhow::Result<std::time::Duration> {
    match std::env::var("DATADICT_SHUTDOWN_GRACE_SECS") {
        Err(_) => Ok(datadict_server::serving::SHUTDOWN_GRACE),
        Ok(text) => match text.trim().parse::<u64>() {
            Ok(secs) if (1..=3600).contains(&secs) => Ok(std::time::Duration::from_secs(secs)),
            _ => bail!("DATADICT_SHUTDOWN_GRACE_SECS is `{text}`; give whole seconds from 1 to 3600, or leave it unset for 30"),
        },
    }
}
