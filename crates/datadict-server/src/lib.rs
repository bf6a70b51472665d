//! The datadict server: the spec's HTTP API on embedded SQLite or PostgreSQL, and the host of the
//! web app.
//!
//! [`app`] builds the whole router from an [`AppState`]; `main.rs` only reads configuration and
//! serves it, and the tests drive the same router over real HTTP.
//!
//! Routes (their OpenAPI document, generated from the same registrations, is served at
//! `/openapi.json`):
//! - `/api/app/projects/{id}/schemas[/{entityType}[/{name}]]`: the schemas API (`routes::schemas`);
//! - `POST /import`, `/track`, `/engage`, `/groups`: events, user and group profile updates, in
//!   every wire format of tracking libraries (`routes::import`, `routes::track`,
//!   `routes::engage`, `routes::groups`, sharing `routes::wire` and `routes::profiles`);
//! - `GET /api/app/projects/{id}/events`, `.../profiles/{distinct_id}`, `.../groups[/{key}/{id}]`,
//!   `.../event-counts`: the read API for checking what arrived (`routes::data`);
//! - `GET /lookup-tables`, `PUT /lookup-tables/{id}` (CSV), and `/api/app/projects/{id}/lookup-tables[/{table_id}]`
//!   to create, read and delete them: lookup tables (`routes::lookup`);
//! - `/api/app/projects/{id}/warehouse-sources/imports[/...]`: warehouse imports and their runs
//!   (`routes::warehouse`); `POST /migrate/{source_tool}`, `GET /migrate/jobs/{job_id}`: the
//!   migration service (`routes::migrate`); `jobs::init` fails the jobs a stopped process left;
//! - `GET /api/app/limits`, `GET /openapi.json` (`routes::meta`); the web app at `/`.
//!
//! Storage is behind `store` (SQLite in WAL mode, or a PostgreSQL server that several processes
//! may share; on both, an event writer thread commits concurrent import requests together).

pub mod admin;
pub mod auth;
pub mod demo;
pub mod drain;
pub mod error;
pub mod hosting;
pub mod jobs;
pub mod ingest;
pub mod migrate;
pub mod nul;
pub mod ratelimit;
pub mod routes;
pub mod serving;
pub mod startup;
pub mod store;
pub mod tls;
pub mod warehouse;

use axum::response::IntoResponse;
use axum::Router;
use std::path::PathBuf;
use std::sync::Arc;
use tower::ServiceExt;
use tower_http::services::{ServeDir, ServeFile};

pub use error::ApiError;
pub use store::Store;

/// The hasher of the server's hash maps that are asked on every request (a tracking request asked
/// about twenty with SipHash, std's default: 3% of its instructions, callgrind): foldhash, seeded
/// per process. Where senders choose the keys, the map lives for one request, whose size the
/// limits bound, or holds what only the server puts in it (token hashes, project ids).
pub type FastHash = foldhash::fast::RandomState;

/// What every handler can reach: [`Shared`] behind one `Arc`, since axum clones the state for
/// every extractor of every request (a clone of the store's dozen `Arc`s each time showed in a
/// tracking request's CPU).
#[derive(Clone)]
pub struct AppState(Arc<Shared>);

/// The contents of [`AppState`].
pub struct Shared {
    pub store: Store,
    pub config: Arc<Config>,
}

impl AppState {
    pub fn new(store: Store, config: Arc<Config>) -> Self {
        Self(Arc::new(Shared { store, config }))
    }
}

impl std::ops::Deref for AppState {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.0
    }
}

/// Server settings that handlers need (the listen address is `main.rs`'s business). Build it with
/// `Config { web_dir, ..Default::default() }` so that new settings keep their defaults.
#[derive(Debug, Clone)]
pub struct Config {
    /// The folder of the built web app (`cargo xtask dist`), served at `/` when present.
    pub web_dir: Option<PathBuf>,
    /// The vendor metadata key of the dictionary (FACTS.md: `com.vendor` by default).
    pub namespace: String,
    /// Requests per minute per project on the schemas API (FACTS.md: the service allows 5).
    /// `None`, the default, means unlimited: a local stand-in should not slow down its tests.
    pub schema_rate_limit: Option<u64>,
    /// Events plus properties written per minute per project by schemas create/replace requests
    /// (FACTS.md: the service allows 4,000, [`ratelimit::SERVICE_SCHEMA_UPDATES_PER_MINUTE`]).
    /// `None`, the default, means unlimited, like `schema_rate_limit`.
    pub schema_update_rate_limit: Option<u64>,
    /// Schemas one request may delete or truncate (FACTS.md: 3,000,
    /// [`ratelimit::DEFAULT_SCHEMA_DELETIONS_PER_REQUEST`], the default). `None` means no cap.
    pub schema_deletion_limit: Option<u64>,
    /// Uncompressed bytes per minute per project on `/import` and `/engage` (FACTS.md: the
    /// service allows about 2 GB). `None`, the default, means unlimited.
    pub ingest_rate_limit: Option<u64>,
    /// Origins allowed to call the API from a browser (CORS). Empty means same-origin only; `*`
    /// allows any origin.
    pub cors_origins: Vec<String>,
    /// The limits of `/import` and `/engage` (FACTS.md defaults, from the core).
    pub limits: datadict_core::Limits,
    /// The largest uncompressed CSV of `PUT /lookup-tables/{id}`, in bytes
    /// ([`routes::lookup::DEFAULT_MAX_BYTES`] by default; its documentation says why).
    pub lookup_table_max_bytes: usize,
    /// The buckets behind the rate limits, shared by every clone of the configuration.
    pub rate_limiter: ratelimit::RateLimiter,
    /// Warehouse imports and migrations: source hosts, sync limits (see [`jobs::JobsConfig`]).
    pub jobs: jobs::JobsConfig,
    /// How the migration service downloads the source's export: timeouts and retries (see
    /// [`migrate::source::SourceSettings`]).
    pub migration_source: migrate::source::SourceSettings,
    /// Whether every stored record is checked against the project's dictionary on arrival and
    /// its violations recorded (issue 20); on by default, off with `--no-dictionary-check`.
    pub dictionary_check: bool,
    /// The most distinct violation keys kept per project and UTC day; beyond, counts go to the
    /// `$others` rows ([`DEFAULT_QUALITY_MAX_KEYS`] by default).
    pub quality_max_keys: usize,
    /// Each project's dictionary compiled for ingestion, shared by every clone of the
    /// configuration and kept current by the project's dictionary version (`ingest::cache`).
    pub dictionaries: ingest::cache::DictionaryCache,
}

/// The default of [`Config::quality_max_keys`].
pub const DEFAULT_QUALITY_MAX_KEYS: usize = 1000;

impl Default for Config {
    fn default() -> Self {
        Self {
            web_dir: None,
            namespace: datadict_core::DEFAULT_NAMESPACE.to_owned(),
            schema_rate_limit: None,
            schema_update_rate_limit: None,
            schema_deletion_limit: Some(ratelimit::DEFAULT_SCHEMA_DELETIONS_PER_REQUEST),
            ingest_rate_limit: None,
            cors_origins: Vec::new(),
            limits: datadict_core::Limits::default(),
            lookup_table_max_bytes: routes::lookup::DEFAULT_MAX_BYTES,
            rate_limiter: ratelimit::RateLimiter::default(),
            jobs: jobs::JobsConfig::default(),
            migration_source: migrate::source::SourceSettings::default(),
            dictionary_check: true,
            quality_max_keys: DEFAULT_QUALITY_MAX_KEYS,
            dictionaries: ingest::cache::DictionaryCache::default(),
        }
    }
}

/// The largest JSON body of the application API (schemas, warehouse imports, migrations): the
/// dictionary of a large project fits easily. [`error::JsonBody`] applies
/// it, and reads a larger body to its end before answering 413 (see `read_limited`).
pub const JSON_BODY_LIMIT: usize = 16 * 1024 * 1024;

/// The whole HTTP surface: the application API under `/api/app`, and the web app at `/`.
pub fn app(state: AppState) -> Router {
    jobs::init(&state);
    let (api, doc) = routes::meta::api();
    let api_roots = routes::meta::api_roots(&doc);
    let mut router = api.merge(routes::meta::openapi_route(doc)).method_not_allowed_fallback(routes::meta::method_not_allowed);
    let web_dir = state.config.web_dir.clone().filter(|d| d.join("index.html").is_file());
    if let Some(dir) = &web_dir {
        // Unknown paths fall back to index.html so that a reload on an app route still works;
        // any other method than GET and HEAD gets the JSON 404 (the files would answer an empty
        // 405, which tells a client posting to a wrong path nothing), and so does a path under
        // one of the API's own first segments (`/lookup-tables/`, `/import/x`): a client of the
        // API would read the app's HTML, with a 200, as its answer. The app's own addresses are
        // hash routes, under none of them. A missing file (a last segment with a dot, such as
        // `/favicon.ico` or a stale `/app-1234.js`) is a 404 too: the page's HTML in its place
        // makes a browser report a script of the wrong type instead of a missing one.
        let files = ServeDir::new(dir).fallback(ServeFile::new(dir.join("index.html")));
        let assets = ServeDir::new(dir);
        router = router.fallback(move |request: axum::extract::Request| async move {
            let read = matches!(*request.method(), axum::http::Method::GET | axum::http::Method::HEAD);
            let uri = request.uri().clone();
            if !read || routes::meta::is_under(&api_roots, uri.path()) {
                return routes::meta::not_found(axum::extract::OriginalUri(uri)).await.into_response();
            }
            let file = uri.path().rsplit('/').next().is_some_and(|last| last.contains('.'));
            let served = match file {
                true => assets.clone().oneshot(request).await,
                false => files.clone().oneshot(request).await,
            };
            match served {
                Ok(response) if response.status() == axum::http::StatusCode::NOT_FOUND => routes::meta::not_found(axum::extract::OriginalUri(uri)).await.into_response(),
                Ok(response) => response.into_response(),
                Err(never) => match never {},
            }
        });
    } else {
        router = router.fallback(routes::meta::not_found);
    }
    // One middleware over every route (see `hosting::hosting`): CORS, the security headers, the
    // refusal of `%00` in addresses and the draining of unread bodies.
    let csp = hosting::content_security_policy(web_dir.as_deref());
    let hosting = Arc::new(hosting::Hosting::new(&state.config, &csp));
    router = router.layer(axum::middleware::from_fn_with_state(hosting, hosting::hosting));
    router.with_state(state)
}
