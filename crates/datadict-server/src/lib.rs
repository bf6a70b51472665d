//! The datadict server: the spec's HTTP API on embedded SQLite, and the host of the web app.
//!
//! [`app`] builds the whole router from an [`AppState`]; `main.rs` only reads configuration and
//! serves it, and the tests drive the same router over real HTTP.

pub mod admin;
pub mod auth;
pub mod demo;
pub mod error;
pub mod routes;
pub mod store;

use axum::Router;
use std::path::PathBuf;
use std::sync::Arc;
use tower_http::services::{ServeDir, ServeFile};

pub use error::ApiError;
pub use store::Store;

/// What every handler can reach.
#[derive(Clone)]
pub struct AppState {
    pub store: Store,
    pub config: Arc<Config>,
}

/// Server settings that handlers need (the listen address is `main.rs`'s business).
#[derive(Debug, Clone, Default)]
pub struct Config {
    /// The folder of the built web app (`cargo xtask dist`), served at `/` when present.
    pub web_dir: Option<PathBuf>,
}

/// The whole HTTP surface: the application API under `/api/app`, and the web app at `/`.
pub fn app(state: AppState) -> Router {
    let api = Router::new().merge(routes::schemas::router());
    let mut router = Router::new().nest("/api/app", api);
    if let Some(dir) = state.config.web_dir.as_ref().filter(|d| d.join("index.html").is_file()) {
        // Unknown paths fall back to index.html so that a reload on an app route still works.
        let index = ServeFile::new(dir.join("index.html"));
        router = router.fallback_service(ServeDir::new(dir).fallback(index));
    }
    router.with_state(state)
}
