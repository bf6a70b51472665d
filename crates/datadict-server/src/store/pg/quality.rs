//! Data quality on PostgreSQL (migration 4): the violation and rejected-record rows of each
//! project and UTC day, as
//! on SQLite (see `store::quality`), with types and samples as the same JSON text. The statements
//! the event writer runs for every key of a group go with their parameter types (`query_typed`):
//! one round trip each instead of two (a prepare, then the execution).

use crate::store::quality::{RowKey, Samples, StoredViolation, Table, ViolationFilter, ViolationHead, ViolationRow};
use postgres::types::Type;
use postgres::Client;
use std::collections::HashMap;

pub fn count_violation_keys(c: &mut Client, table: Table, project_id: i64, day: &str) -> anyhow::Result<i64> {
    Ok(c.query_typed_one(&format!("SELECT count(*) FROM {t} WHERE project_id = $1 AND day = $2", t = table.name()), &[(&project_id, Type::INT8), (&day, Type::TEXT)])?.get(0))
}

/// The row of one key, `[kind, entity, property, code]`, if stored.
pub fn get_violation(c: &mut Client, table: Table, project_id: i64, day: &str, key: [&str; 4]) -> anyhow::Result<Option<ViolationRow>> {
    let [kind, entity, property, code] = key;
    let row = c.query_typed_opt(
        &format!("SELECT message, count, first_seen_ms, last_seen_ms, types, coalesce(s.samples, '[]')
         FROM {t} v LEFT JOIN {t}_samples s USING (project_id, day, kind, entity, property, code)
         WHERE project_id = $1 AND day = $2 AND kind = $3 AND entity = $4 AND property = $5 AND code = $6", t = table.name()),
        &key_params(&project_id, &day, &kind, &entity, &property, &code),
    )?;
    row.map(|r| {
        Ok(ViolationRow {
            kind: kind.to_owned(),
            entity: entity.to_owned(),
            property: property.to_owned(),
            code: code.to_owned(),
            message: r.get(0),
            count: r.get(1),
            first_seen_ms: r.get(2),
            last_seen_ms: r.get(3),
            types: serde_json::from_str(r.get(4))?,
            samples: serde_json::from_str(r.get(5))?,
        })
    })
    .transpose()
}

/// The heads of the stored rows among `keys` (`[kind, entity, property, code]` each), by key, in
/// one statement: the event writer asks for every key of a group at once.
pub fn violation_heads(c: &mut Client, table: Table, project_id: i64, day: &str, keys: &[[&str; 4]], max_samples: usize) -> anyhow::Result<HashMap<RowKey, ViolationHead>> {
    if keys.is_empty() {
        return Ok(HashMap::new());
    }
    let column = |i: usize| keys.iter().map(|k| k[i]).collect::<Vec<&str>>();
    let (kind, entity, property, code) = (column(0), column(1), column(2), column(3));
    let max = max_samples as i32;
    // The samples are parsed to count them only while the count is under the cap (see `ViolationHead`).
    let rows = c.query_typed(
        &format!("SELECT kind, entity, property, code, types, CASE WHEN count >= $7 THEN $7 ELSE coalesce(json_array_length(s.samples::json), 0) END
         FROM {t} v LEFT JOIN {t}_samples s USING (project_id, day, kind, entity, property, code)
         WHERE project_id = $1 AND day = $2
           AND (kind, entity, property, code) IN (SELECT * FROM unnest($3::text[], $4::text[], $5::text[], $6::text[]))", t = table.name()),
        &[(&project_id, Type::INT8), (&day, Type::TEXT), (&kind, Type::TEXT_ARRAY), (&entity, Type::TEXT_ARRAY), (&property, Type::TEXT_ARRAY), (&code, Type::TEXT_ARRAY), (&max, Type::INT4)],
    )?;
    rows.iter()
        .map(|r| {
            let head = ViolationHead { types: serde_json::from_str(r.get(4))?, samples: r.get::<_, i32>(5) as usize };
            Ok(((r.get(0), r.get(1), r.get(2), r.get(3)), head))
        })
        .collect()
}

/// The types and sample count of one key's row, `[kind, entity, property, code]`, if stored.
pub fn violation_head(c: &mut Client, table: Table, project_id: i64, day: &str, key: [&str; 4], max_samples: usize) -> anyhow::Result<Option<ViolationHead>> {
    let [kind, entity, property, code] = key;
    let max = max_samples as i32;
    let [p, d, k, e, pr, co] = key_params(&project_id, &day, &kind, &entity, &property, &code);
    let row = c.query_typed_opt(
        &format!("SELECT types, CASE WHEN count >= $7 THEN $7 ELSE coalesce(json_array_length(s.samples::json), 0) END
         FROM {t} v LEFT JOIN {t}_samples s USING (project_id, day, kind, entity, property, code)
         WHERE project_id = $1 AND day = $2 AND kind = $3 AND entity = $4 AND property = $5 AND code = $6", t = table.name()),
        &[p, d, k, e, pr, co, (&max, Type::INT4)],
    )?;
    row.map(|r| Ok(ViolationHead { types: serde_json::from_str(r.get(0))?, samples: r.get::<_, i32>(1) as usize })).transpose()
}

/// The typed parameters of a statement on one key: project, day, kind, entity, property, code.
fn key_params<'a>(
    project_id: &'a i64,
    day: &'a &str,
    kind: &'a &str,
    entity: &'a &str,
    property: &'a &str,
    code: &'a &str,
) -> [(&'a (dyn postgres::types::ToSql + Sync), Type); 6] {
    [(project_id, Type::INT8), (day, Type::TEXT), (kind, Type::TEXT), (entity, Type::TEXT), (property, Type::TEXT), (code, Type::TEXT)]
}

/// Adds each row to its key's stored row (or stores it), in order.
pub fn upsert_violations(c: &mut Client, table: Table, project_id: i64, day: &str, rows: &[(ViolationRow, Samples)]) -> anyhow::Result<()> {
    for (row, samples) in rows {
        upsert_violation(c, table, project_id, day, row, *samples)?;
    }
    Ok(())
}

fn upsert_violation(c: &mut Client, table: Table, project_id: i64, day: &str, row: &ViolationRow, samples: Samples) -> anyhow::Result<()> {
    // The count adds in SQL, so that two requests merging the same key at once both count.
    let upsert = format!(
        "INSERT INTO {t} (project_id, day, kind, entity, property, code, message, count, first_seen_ms, last_seen_ms, types)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
         ON CONFLICT (project_id, day, kind, entity, property, code) DO UPDATE SET
             count = {t}.count + excluded.count,
             first_seen_ms = least({t}.first_seen_ms, excluded.first_seen_ms),
             last_seen_ms = greatest({t}.last_seen_ms, excluded.last_seen_ms),
             types = excluded.types",
        t = table.name()
    );
    let types = serde_json::to_string(&row.types)?;
    let mut params: Vec<(&(dyn postgres::types::ToSql + Sync), Type)> = vec![
        (&project_id, Type::INT8),
        (&day, Type::TEXT),
        (&row.kind, Type::TEXT),
        (&row.entity, Type::TEXT),
        (&row.property, Type::TEXT),
        (&row.code, Type::TEXT),
        (&row.message, Type::TEXT),
        (&row.count, Type::INT8),
        (&row.first_seen_ms, Type::INT8),
        (&row.last_seen_ms, Type::INT8),
        (&types, Type::TEXT),
    ];
    if samples == Samples::Keep || row.samples.is_empty() {
        c.execute_typed(&upsert, &params)?;
        return Ok(());
    }
    // The samples go in the same statement (a data-modifying `WITH`): one round trip per key.
    let samples = serde_json::to_string(&row.samples)?;
    params.push((&samples, Type::TEXT));
    c.execute_typed(
        &format!(
            "WITH counted AS ({upsert} RETURNING 1)
             INSERT INTO {t}_samples (project_id, day, kind, entity, property, code, samples)
             SELECT $1, $2, $3, $4, $5, $6, $12 FROM counted
             ON CONFLICT (project_id, day, kind, entity, property, code) DO UPDATE SET samples = excluded.samples",
            t = table.name()
        ),
        &params,
    )?;
    Ok(())
}

pub fn list_violations(c: &mut Client, table: Table, project_id: i64, f: &ViolationFilter, limit: usize) -> anyhow::Result<Vec<StoredViolation>> {
    let key = |i: usize| f.after.as_ref().map(|k| k[i].as_str());
    let (k0, k1, k2, k3, k4) = (key(0), key(1), key(2), key(3), key(4));
    let rows = c.query(
        &format!("SELECT day, kind, entity, property, code, message, count, first_seen_ms, last_seen_ms, types, coalesce(s.samples, '[]')
         FROM {t} v LEFT JOIN {t}_samples s USING (project_id, day, kind, entity, property, code)
         WHERE project_id = $1 AND ($2::text IS NULL OR day >= $2) AND ($3::text IS NULL OR day <= $3) AND ($4::text IS NULL OR entity = $4)
           AND ($5::text IS NULL OR property = $5) AND ($6::text IS NULL OR code = $6) AND ($7::text IS NULL OR kind = $7)
           AND ($9::text IS NULL OR (day, kind, entity, property, code) > ($9::text, $10::text, $11::text, $12::text, $13::text))
         ORDER BY day, kind, entity, property, code LIMIT $8", t = table.name()),
        &[&project_id, &f.since_day, &f.until_day, &f.event, &f.property, &f.code, &f.kind, &(limit as i64), &k0, &k1, &k2, &k3, &k4],
    )?;
    rows.iter()
        .map(|r| {
            Ok(StoredViolation {
                day: r.get(0),
                row: ViolationRow {
                    kind: r.get(1),
                    entity: r.get(2),
                    property: r.get(3),
                    code: r.get(4),
                    message: r.get(5),
                    count: r.get(6),
                    first_seen_ms: r.get(7),
                    last_seen_ms: r.get(8),
                    types: serde_json::from_str(r.get(9))?,
                    samples: serde_json::from_str(r.get(10))?,
                },
            })
        })
        .collect()
}

pub fn delete_violations(c: &mut Client, table: Table, project_id: i64) -> anyhow::Result<usize> {
    c.execute(&format!("DELETE FROM {t}_samples WHERE project_id = $1", t = table.name()), &[&project_id])?;
    Ok(c.execute(&format!("DELETE FROM {t} WHERE project_id = $1", t = table.name()), &[&project_id])? as usize)
}

pub fn delete_events(c: &mut Client, project_id: i64) -> anyhow::Result<usize> {
    c.execute("DELETE FROM event_volume WHERE project_id = $1", &[&project_id])?;
    Ok(c.execute("DELETE FROM events WHERE project_id = $1", &[&project_id])? as usize)
}
