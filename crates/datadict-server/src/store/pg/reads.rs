//! The read API's queries on PostgreSQL: stored events by name, user, property and time, and
//! the 30-day counts per event name, with the same results as SQLite's.

use crate::store::events::HOUR_MS;
use crate::store::{EventCount, EventQuery, StoredEvent};
use postgres::fallible_iterator::FallibleIterator;
use postgres::types::ToSql;
use postgres::Client;

/// Stored events matching `q`, newest first (ties broken by storage order, `events.id`).
pub fn query_events(c: &mut Client, project_id: i64, q: &EventQuery) -> anyhow::Result<Vec<StoredEvent>> {
    let mut sql = String::from("SELECT id, time_ms, record FROM events WHERE project_id = $1");
    let mut args: Vec<Box<dyn ToSql + Sync>> = vec![Box::new(project_id)];
    let mut arg = |sql: &mut String, fragment: &str, value: Box<dyn ToSql + Sync>| {
        args.push(value);
        sql.push_str(&fragment.replace('?', &format!("${}", args.len())));
    };
    if let Some(e) = &q.event {
        arg(&mut sql, " AND event = ?", Box::new(e.clone()));
    }
    if let Some(d) = &q.distinct_id {
        arg(&mut sql, " AND distinct_id = ?", Box::new(d.clone()));
    }
    if let Some(from) = q.from_ms {
        arg(&mut sql, " AND time_ms >= ?", Box::new(from));
    }
    if let Some(to) = q.to_ms {
        arg(&mut sql, " AND time_ms < ?", Box::new(to));
    }
    if let Some((t, r)) = q.cursor {
        arg(&mut sql, " AND (time_ms, id) < (?", Box::new(t));
        arg(&mut sql, ", ?)", Box::new(r));
    }
    if let Some(f) = &q.filter {
        // As on SQLite: the property equals the string `value` or the JSON scalar it spells.
        let as_string = serde_json::to_string(&serde_json::Value::String(f.value.clone()))?;
        let as_scalar = match serde_json::from_str::<serde_json::Value>(&f.value) {
            Ok(v) if !v.is_array() && !v.is_object() => serde_json::to_string(&v)?,
            _ => as_string.clone(),
        };
        arg(
            &mut sql,
            " AND (record::jsonb -> 'properties' -> ?::text)",
            Box::new(f.property.clone()),
        );
        arg(&mut sql, " IN (?::text::jsonb", Box::new(as_string));
        arg(&mut sql, ", ?::text::jsonb)", Box::new(as_scalar));
    }
    arg(&mut sql, " ORDER BY time_ms DESC, id DESC LIMIT ?", Box::new(q.limit as i64));
    let params = args.iter().map(|a| a.as_ref() as &dyn ToSql);
    // Row by row, to stop at `max_bytes` as on SQLite.
    let mut rows = c.query_raw(&sql, params)?;
    let (mut out, mut bytes) = (Vec::new(), 0);
    while let Some(r) = rows.next()? {
        let event = StoredEvent { rowid: r.get(0), time_ms: r.get(1), record: r.get(2) };
        bytes += event.record.len();
        out.push(event);
        if bytes >= q.max_bytes {
            break;
        }
    }
    Ok(out)
}

/// Per event name, the events with `time >= since_ms`, most frequent first.
pub fn event_counts(c: &mut Client, project_id: i64, since_ms: i64) -> anyhow::Result<Vec<EventCount>> {
    // Whole hours from `event_volume`, and the events before the first whole hour counted one by
    // one, exactly as on SQLite.
    let first_hour = (since_ms.div_euclid(HOUR_MS) + i64::from(since_ms.rem_euclid(HOUR_MS) != 0)).max(1);
    let rows = c.query(
        "SELECT event, sum(n)::bigint AS total, max(last) FROM (
             SELECT event, count AS n, last_ms AS last FROM event_volume WHERE project_id = $1 AND hour >= $3
             UNION ALL
             SELECT event, count(*), max(time_ms) FROM events
             WHERE project_id = $1 AND time_ms >= $2 AND time_ms < $4 GROUP BY event
         ) AS counted GROUP BY event ORDER BY total DESC, event",
        &[&project_id, &since_ms, &first_hour, &first_hour.saturating_mul(HOUR_MS)],
    )?;
    Ok(rows
        .into_iter()
        .map(|r| EventCount {
            event: r.get(0),
            count: r.get(1),
            last_seen_ms: r.get(2),
        })
        .collect())
}
