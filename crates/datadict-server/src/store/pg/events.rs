//! The import's insert path on PostgreSQL: each batch in one `INSERT ... ON CONFLICT DO UPDATE`
//! (the latest copy of an event wins, as on SQLite), a request's new rows counted in
//! `event_volume` once, and the event writer's group commit. Statements go with their parameter
//! types (`query_typed`), so that each costs one round trip to the server instead of two (a
//! prepare, then the execution).

use crate::store::event_writer::{fail_each, InsertJob};
use crate::store::quality::record_quality;
use crate::store::Conn;
use anyhow::Context;
use std::cell::RefCell;
use crate::store::events::{EventBatch, HOUR_MS};
use postgres::types::Type;
use postgres::{Client, GenericClient};
use std::collections::HashMap;

/// New events per (event name, hour): how many, and the latest time among them.
pub(crate) type Volume = HashMap<(String, i64), (i64, i64)>;

/// Rows per statement: one statement of arrays per chunk keeps the parameters few and the
/// messages to the server a few hundred kilobytes.
const ROWS_PER_INSERT: usize = 2000;

/// Stores the rows of a batch inside the caller's transaction: new events inserted and added to
/// `volume` (which the caller writes to `event_volume` with [`add_volume`], once per request
/// rather than once per part), copies of stored events replacing them.
pub(crate) fn upsert_rows(c: &mut impl GenericClient, project_id: i64, batch: &EventBatch, now_s: i64, volume: &mut Volume) -> anyhow::Result<()> {
    // One statement may not touch a row twice (`ON CONFLICT DO UPDATE` refuses it), so a batch
    // keeps only the last copy of each event; earlier copies would be replaced anyway.
    let mut last: HashMap<(i64, [u8; 16]), usize> = HashMap::with_capacity(batch.len());
    let rows: Vec<_> = batch.rows.iter().map(|spans| batch.row(spans)).collect();
    for (i, row) in rows.iter().enumerate() {
        last.insert((row.time_ms, row.dedup), i);
    }
    let kept: Vec<_> = rows
        .iter()
        .enumerate()
        .filter(|(i, row)| last[&(row.time_ms, row.dedup)] == *i)
        .map(|(_, row)| row)
        .collect();
    for chunk in kept.chunks(ROWS_PER_INSERT) {
        let dedup: Vec<&[u8]> = chunk.iter().map(|r| &r.dedup[..]).collect();
        let event: Vec<&str> = chunk.iter().map(|r| r.event).collect();
        let time_ms: Vec<i64> = chunk.iter().map(|r| r.time_ms).collect();
        let distinct_id: Vec<&str> = chunk.iter().map(|r| r.distinct_id).collect();
        let insert_id: Vec<&str> = chunk.iter().map(|r| r.insert_id).collect();
        let record: Vec<&str> = chunk.iter().map(|r| r.record).collect();
        // `xmax = 0` tells a row this statement inserted from one it updated.
        let written = c.query_typed(
            "INSERT INTO events (project_id, dedup, event, time_ms, distinct_id, insert_id, record, ingested_at)
             SELECT $1, d, e, t, u, i, r, $2
             FROM unnest($3::bytea[], $4::text[], $5::bigint[], $6::text[], $7::text[], $8::text[]) AS x(d, e, t, u, i, r)
             ON CONFLICT (project_id, time_ms, dedup) DO UPDATE SET record = excluded.record, ingested_at = excluded.ingested_at
             RETURNING (xmax = 0), event, time_ms",
            &[
                (&project_id, Type::INT8),
                (&now_s, Type::INT8),
                (&dedup, Type::BYTEA_ARRAY),
                (&event, Type::TEXT_ARRAY),
                (&time_ms, Type::INT8_ARRAY),
                (&distinct_id, Type::TEXT_ARRAY),
                (&insert_id, Type::TEXT_ARRAY),
                (&record, Type::TEXT_ARRAY),
            ],
        )?;
        for row in written {
            if row.get::<_, bool>(0) {
                let time_ms: i64 = row.get(2);
                let entry = volume.entry((row.get(1), time_ms / HOUR_MS)).or_insert((0, i64::MIN));
                entry.0 += 1;
                entry.1 = entry.1.max(time_ms);
            }
        }
    }
    Ok(())
}

/// Adds a batch's new events to `event_volume`, in key order so that concurrent writers (other
/// processes) take the rows' locks in the same order.
fn add_volume(c: &mut impl GenericClient, project_id: i64, volume: Volume) -> anyhow::Result<()> {
    if volume.is_empty() {
        return Ok(());
    }
    let mut entries: Vec<_> = volume.into_iter().collect();
    entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    let event: Vec<&str> = entries.iter().map(|((e, _), _)| e.as_str()).collect();
    let hour: Vec<i64> = entries.iter().map(|((_, h), _)| *h).collect();
    let count: Vec<i64> = entries.iter().map(|(_, (n, _))| *n).collect();
    let last_ms: Vec<i64> = entries.iter().map(|(_, (_, l))| *l).collect();
    c.execute_typed(
        "INSERT INTO event_volume (project_id, event, hour, count, last_ms)
         SELECT $1, e, h, n, l FROM unnest($2::text[], $3::bigint[], $4::bigint[], $5::bigint[]) AS x(e, h, n, l)
         ON CONFLICT (project_id, event, hour)
         DO UPDATE SET count = event_volume.count + excluded.count, last_ms = greatest(event_volume.last_ms, excluded.last_ms)",
        &[(&project_id, Type::INT8), (&event, Type::TEXT_ARRAY), (&hour, Type::INT8_ARRAY), (&count, Type::INT8_ARRAY), (&last_ms, Type::INT8_ARRAY)],
    )?;
    Ok(())
}

/// Stores the jobs of a group in one transaction, each in a savepoint (all of a request's parts
/// or none), then the quality rows of the jobs stored; returns each job's outcome. The
/// transaction is opened with statements rather than `Client::transaction`, so that the quality
/// rows are written through the store's [`Conn`], which holds a client.
pub(crate) fn write_group(c: &mut Client, jobs: &mut [InsertJob]) -> Vec<anyhow::Result<usize>> {
    if let Err(e) = c.batch_execute("BEGIN") {
        return fail_each(jobs, &anyhow::Error::from(e).context("cannot begin a transaction"));
    }
    let mut results = Vec::with_capacity(jobs.len());
    let mut quality = Vec::new();
    for job in jobs.iter_mut() {
        let mut stored = || -> anyhow::Result<usize> {
            c.batch_execute("SAVEPOINT job")?;
            let mut volume = Volume::new();
            let (project_id, now_s) = (job.project_id, job.now_s);
            let drained = job.drain(|batch| upsert_rows(c, project_id, batch, now_s, &mut volume));
            // The request's volume is written inside its savepoint, so that a request rolled back
            // takes its counts with it.
            match drained.and_then(|drained| add_volume(c, job.project_id, volume).map(|()| drained)) {
                Ok(drained) => {
                    c.batch_execute("RELEASE SAVEPOINT job")?;
                    quality.extend(drained.quality.map(|q| (job.project_id, q)));
                    Ok(drained.rows)
                }
                Err(e) => {
                    c.batch_execute("ROLLBACK TO SAVEPOINT job; RELEASE SAVEPOINT job")?;
                    Err(e)
                }
            }
        };
        results.push(stored());
    }
    let recorded = record_quality(&Conn::Postgres(RefCell::new(&mut *c)), quality).context("cannot record the data quality of the events");
    let committed = recorded.and_then(|()| c.batch_execute("COMMIT").context("cannot commit the events"));
    match committed {
        Ok(()) => results,
        Err(e) => {
            // The transaction may still be open (a failed statement aborts it but does not end it).
            let _ = c.batch_execute("ROLLBACK");
            fail_each(jobs, &e)
        }
    }
}
