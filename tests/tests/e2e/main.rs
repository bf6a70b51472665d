//! The cross-crate tests in one test binary: the API over HTTP, and the browser end-to-end tests of
//! the web app and of the npm package's browser builds. One binary instead of one per file saves a
//! link and ~40 MB of disk per file.

mod api_http;
mod browser_e2e;
mod jobs_e2e;
mod node_library_e2e;
mod npm_browser;
mod tracking_library_e2e;
mod tracking_page_e2e;
mod web_app_e2e;
mod web_data_e2e;
mod web_nav_e2e;
mod web_profiles_e2e;
mod web_quality_e2e;
mod web_stale_e2e;
mod web_words_e2e;
