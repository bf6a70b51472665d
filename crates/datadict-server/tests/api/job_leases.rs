//! Jobs held by leases, on both stores: a starting process fails only the unfinished runs and
//! migrations whose lease expired (those of a stopped process), a queued run is claimed once, and
//! a finished job is never changed again.

use crate::common::{now_ms, on_both_stores, Backend, Server};
use datadict_server::store::jobs::{self, Counts, ImportRow, Job, Lease, MigrationJob, MigrationPhase, Queued};
use datadict_server::{AppState, Config};
use std::sync::Arc;

fn migration(id: &str, project_id: i64) -> MigrationJob {
    MigrationJob {
        job_id: id.into(),
        source_tool: "amplitude".into(),
        project_id,
        phase: MigrationPhase::Loading,
        dry_run: false,
        region: None,
        start_date: "2024-01-01".into(),
        end_date: "2024-01-02".into(),
        events: Counts::default(),
        profiles: Counts::default(),
        errors: Vec::new(),
        created_at: now_ms(),
        finished_at: None,
    }
}

/// An import of project `p` with one queued run per `(run id, lease)`, each on an import of its
/// own (an import has one unfinished run at most).
fn queued_runs(server: &Server, p: i64, runs: &[(&str, Lease<'_>)]) -> Vec<i64> {
    let mut imports = Vec::new();
    for (run_id, lease) in runs {
        let row = ImportRow { id: 0, project_id: p, name: "n".into(), kind: "event_sync".into(), source: "{}".into(), mapping: "{}".into(), created_at: now_ms() };
        let import = server.store.call_sync(|conn| jobs::insert_import(conn, &row)).unwrap();
        let queued = server.store.call_sync(|conn| jobs::queue_manual_run(conn, import, run_id, 5, now_ms(), lease)).unwrap();
        assert_eq!(queued, Queued::Queued);
        imports.push(import);
    }
    imports
}

fn a_start_fails_only_the_jobs_whose_lease_expired(backend: Backend) {
    let server = Server::start_on(backend);
    let p = server.project("p").id;
    let now = now_ms();
    let live = Lease { owner: "a live process", until_ms: now + 60_000 };
    let gone = Lease { owner: "a stopped process", until_ms: now - 1 };
    let imports = queued_runs(&server, p, &[("live-queued", live), ("gone-queued", gone), ("live-running", live), ("gone-running", gone)]);
    for (run, import) in [("live-running", imports[2]), ("gone-running", imports[3])] {
        let lease = if run.starts_with("live") { live } else { gone };
        assert!(server.store.call_sync(|conn| jobs::claim_run(conn, run, now, &lease)).unwrap());
        assert!(!server.store.call_sync(|conn| jobs::claim_run(conn, run, now, &lease)).unwrap(), "{run} of {import} was claimed twice");
    }
    for (id, lease) in [("live-migration", live), ("gone-migration", gone)] {
        server.store.call_sync(|conn| jobs::save_migration(conn, &migration(id, p), &lease)).unwrap();
    }

    // What a second process does when it starts.
    datadict_server::jobs::init(&AppState::new(server.store.clone(), Arc::new(Config::default())));

    let status = |import: i64, run: &str| server.store.call_sync(|conn| jobs::get_run(conn, import, run)).unwrap().unwrap().status;
    assert_eq!(status(imports[0], "live-queued"), "queued");
    assert_eq!(status(imports[1], "gone-queued"), "failed");
    assert_eq!(status(imports[2], "live-running"), "running");
    assert_eq!(status(imports[3], "gone-running"), "failed");
    let phase = |id: &str| server.store.call_sync(|conn| jobs::get_migration(conn, id)).unwrap().unwrap().phase;
    assert_eq!(phase("live-migration"), MigrationPhase::Loading);
    assert_eq!(phase("gone-migration"), MigrationPhase::Failed);

    // The stopped process's leases cannot be renewed any more, nor its jobs changed; the live
    // process's can.
    let later = |lease: Lease<'static>| Lease { until_ms: lease.until_ms + 60_000, ..lease };
    let renew = |job: Job<'_>, lease: Lease<'_>| server.store.call_sync(|conn| jobs::renew_lease(conn, job, &lease)).unwrap();
    assert!(renew(Job::Run("live-running"), later(live)));
    assert!(renew(Job::Migration("live-migration"), later(live)));
    assert!(!renew(Job::Run("gone-running"), later(gone)));
    assert!(!renew(Job::Migration("gone-migration"), later(gone)));
    // Another owner cannot renew a lease it does not hold.
    assert!(!renew(Job::Run("live-running"), Lease { owner: "someone else", until_ms: now + 120_000 }));
    let mut run = server.store.call_sync(|conn| jobs::get_run(conn, imports[3], "gone-running")).unwrap().unwrap();
    run.status = "succeeded".into();
    server.store.call_sync(|conn| jobs::update_run(conn, &run)).unwrap();
    assert_eq!(status(imports[3], "gone-running"), "failed");
    let mut job = migration("gone-migration", p);
    job.phase = MigrationPhase::Succeeded;
    server.store.call_sync(|conn| jobs::save_migration(conn, &job, &gone)).unwrap();
    assert_eq!(phase("gone-migration"), MigrationPhase::Failed);

    // Once the live process's lease expires too, the next start fails its jobs.
    server.store.call_sync(|conn| jobs::fail_interrupted(conn, now + 200_000)).unwrap();
    assert_eq!(status(imports[2], "live-running"), "failed");
    assert_eq!(phase("live-migration"), MigrationPhase::Failed);
}

/// A job whose process stopped within its lease (a crash, `kill -9`, then no start for a long
/// time) is failed when someone looks at it once the lease ran out: the routes that show runs
/// and migrations never show one `running` forever, and leave a live process's jobs alone.
fn the_routes_that_show_jobs_fail_the_abandoned_ones(backend: Backend) {
    let server = Server::start_on(backend);
    let project = server.project("p");
    let owner = server.account("owner", project.id, Some(datadict_server::store::Role::Owner));
    let now = now_ms();
    let live = Lease { owner: "a live process", until_ms: now + 60_000 };
    let gone = Lease { owner: "a crashed process", until_ms: now - 1 };
    for (id, lease) in [("live-migration", live), ("gone-migration", gone)] {
        server.store.call_sync(|conn| jobs::save_migration(conn, &migration(id, project.id), &lease)).unwrap();
    }
    let phase = |id: &str| {
        let r = server.send("GET", &format!("/migrate/jobs/{id}"), None, &[], None);
        assert_eq!(r.status, 200, "{}", r.text);
        r.json()["results"]["phase"].as_str().unwrap().to_owned()
    };
    assert_eq!(phase("gone-migration"), "failed");
    assert_eq!(phase("live-migration"), "loading");

    let imports = queued_runs(&server, project.id, &[("gone-run", gone), ("live-run", live)]);
    let runs = |import: i64| {
        let r = server.get(&format!("/api/app/projects/{}/warehouse-sources/imports/{import}/runs", project.id), &owner);
        assert_eq!(r.status, 200, "{}", r.text);
        r.json()["results"][0]["status"].as_str().unwrap().to_owned()
    };
    assert_eq!(runs(imports[0]), "failed");
    assert_eq!(runs(imports[1]), "queued");
}

on_both_stores!(a_start_fails_only_the_jobs_whose_lease_expired, the_routes_that_show_jobs_fail_the_abandoned_ones);
