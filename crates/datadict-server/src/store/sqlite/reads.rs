//! The read API's queries on SQLite: stored events by name, user, property and time, and the
//! 30-day counts per event name.

use crate::store::events::HOUR_MS;
use crate::store::{EventCount, EventQuery, StoredEvent};
use rusqlite::{params, Connection};

/// Stored events matching `q`, newest first (ties broken by storage order).
pub fn query_events(conn: &Connection, project_id: i64, q: &EventQuery) -> anyhow::Result<Vec<StoredEvent>> {
    use rusqlite::types::Value as Sql;
    let mut sql = String::from("SELECT rowid, time_ms, record FROM events WHERE project_id = ?");
    let mut args: Vec<Sql> = vec![Sql::Integer(project_id)];
    if let Some(e) = &q.event {
        sql.push_str(" AND event = ?");
        args.push(Sql::Text(e.clone()));
    }
    if let Some(d) = &q.distinct_id {
        sql.push_str(" AND distinct_id = ?");
        args.push(Sql::Text(d.clone()));
    }
    if let Some(from) = q.from_ms {
        sql.push_str(" AND time_ms >= ?");
        args.push(Sql::Integer(from));
    }
    if let Some(to) = q.to_ms {
        sql.push_str(" AND time_ms < ?");
        args.push(Sql::Integer(to));
    }
    if let Some((t, r)) = q.cursor {
        sql.push_str(" AND (time_ms < ? OR (time_ms = ? AND rowid < ?))");
        args.extend([Sql::Integer(t), Sql::Integer(t), Sql::Integer(r)]);
    }
    if let Some(f) = &q.filter {
        // Compared by value, not by the stored text: a value sent as `"caf\u00e9"`, `2.50` or
        // `1e3` matches `café`, `2.5` and `1000` (as PostgreSQL's `jsonb` compares).
        let path = Sql::Text(format!("$.properties.\"{}\"", f.property));
        sql.push_str(" AND ((json_type(record, ?) = 'text' AND (record ->> ?) = ?)");
        args.extend([path.clone(), path.clone(), Sql::Text(f.value.clone())]);
        match serde_json::from_str::<serde_json::Value>(&f.value) {
            Ok(serde_json::Value::Number(n)) => {
                sql.push_str(" OR (json_type(record, ?) IN ('integer', 'real') AND (record ->> ?) = ?)");
                let n = match n.as_i64() {
                    Some(i) => Sql::Integer(i),
                    None => Sql::Real(n.as_f64().unwrap_or(f64::NAN)),
                };
                args.extend([path.clone(), path, n]);
            }
            Ok(serde_json::Value::String(text)) => {
                sql.push_str(" OR (json_type(record, ?) = 'text' AND (record ->> ?) = ?)");
                args.extend([path.clone(), path, Sql::Text(text)]);
            }
            Ok(serde_json::Value::Bool(b)) => {
                sql.push_str(" OR json_type(record, ?) = ?");
                args.extend([path, Sql::Text(b.to_string())]);
            }
            Ok(serde_json::Value::Null) => {
                sql.push_str(" OR json_type(record, ?) = 'null'");
                args.push(path);
            }
            _ => {}
        }
        sql.push(')');
    }
    sql.push_str(" ORDER BY time_ms DESC, rowid DESC LIMIT ?");
    args.push(Sql::Integer(q.limit as i64));
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt.query_map(rusqlite::params_from_iter(args), |r| {
        Ok(StoredEvent { rowid: r.get(0)?, time_ms: r.get(1)?, record: r.get(2)? })
    })?;
    let (mut out, mut bytes) = (Vec::new(), 0);
    for row in rows {
        let row = row?;
        bytes += row.record.len();
        out.push(row);
        if bytes >= q.max_bytes {
            break;
        }
    }
    Ok(out)
}

/// Per event name, the events with `time >= since_ms`, most frequent first.
pub fn event_counts(conn: &Connection, project_id: i64, since_ms: i64) -> anyhow::Result<Vec<EventCount>> {
    // Whole hours from `event_volume` (hour h >= 1 holds exactly the times [h, h + 1) hours), and
    // the events before the first whole hour counted one by one, so the cut is exact.
    let first_hour = (since_ms.div_euclid(HOUR_MS) + i64::from(since_ms.rem_euclid(HOUR_MS) != 0)).max(1);
    let mut stmt = conn.prepare_cached(
        "SELECT event, sum(n) AS total, max(last) FROM (
             SELECT event, count AS n, last_ms AS last FROM event_volume WHERE project_id = ?1 AND hour >= ?3
             UNION ALL
             SELECT event, count(*), max(time_ms) FROM events
             WHERE project_id = ?1 AND time_ms >= ?2 AND time_ms < ?4 GROUP BY event
         ) GROUP BY event ORDER BY total DESC, event",
    )?;
    let rows = stmt.query_map(params![project_id, since_ms, first_hour, first_hour.saturating_mul(HOUR_MS)], |r| {
        Ok(EventCount { event: r.get(0)?, count: r.get(1)?, last_seen_ms: r.get(2)? })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}
