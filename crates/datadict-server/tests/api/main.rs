//! The server's integration tests over real HTTP on 127.0.0.1 and real SQLite files or a real
//! PostgreSQL (started by the test binary, see `common::postgres`), in one test binary: one file
//! per area, with shared helpers in `common`. One binary instead of one per file saves a link and
//! ~40 MB of disk per file, which CI machines with little free disk need.

mod common;

mod auth;
mod bad_input;
mod durability;
mod engage;
mod groups;
mod hosting;
mod import;
mod job_leases;
mod logging;
mod lookup;
mod migrate;
mod migrate_download;
mod migrate_export;
mod nul;
mod openapi;
mod outages;
mod postgres_store;
mod processes;
mod quality;
mod quality_concurrency;
mod quality_profiles;
mod reads;
mod redaction;
mod schema_limits;
mod schemas;
mod startup;
mod tls;
mod track;
mod store_events;
mod warehouse;
mod warehouse_runs;
mod warehouse_sources;
mod wire;
