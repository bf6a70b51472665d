//! Rate-limit buckets on PostgreSQL: one row per project and kind, charged by one
//! `INSERT ... ON CONFLICT DO UPDATE ... RETURNING`, so that concurrent charges from any number
//! of processes are applied one after the other on the row's lock.

use crate::store::buckets::Charge;
use postgres::Client;

/// Refills the bucket for the time since its last charge (never above its capacity), then takes
/// the cost when it holds that much. A new bucket starts full. The time never moves backwards
/// (`greatest`), so a process whose clock is a little behind another's refills nothing rather
/// than refilling twice. The parameters are typed where first seen, since PostgreSQL cannot infer
/// `$3 - $4`. The expressions are those of the in-memory buckets, in the same order,
/// so that both give the same `Retry-After`.
const TAKE: &str = "
INSERT INTO rate_buckets AS b (project_id, kind, tokens, at_us, granted)
VALUES ($1::bigint, $2::text, $3::float8 - $4::float8, $5::bigint, true)
ON CONFLICT (project_id, kind) DO UPDATE SET
    tokens = CASE
        WHEN least(b.tokens + (greatest($5 - b.at_us, 0)::float8 / 1000000) * ($3 / 60), $3) >= $4
        THEN least(b.tokens + (greatest($5 - b.at_us, 0)::float8 / 1000000) * ($3 / 60), $3) - $4
        ELSE least(b.tokens + (greatest($5 - b.at_us, 0)::float8 / 1000000) * ($3 / 60), $3)
    END,
    granted = least(b.tokens + (greatest($5 - b.at_us, 0)::float8 / 1000000) * ($3 / 60), $3) >= $4,
    at_us = greatest(b.at_us, $5)
RETURNING tokens, granted";

pub fn take_tokens(c: &mut Client, charge: &Charge<'_>) -> anyhow::Result<Result<(), f64>> {
    let row = c.query_one(TAKE, &[&charge.project_id, &charge.kind, &charge.capacity, &charge.cost, &charge.now_us])?;
    let (tokens, granted): (f64, bool) = (row.get(0), row.get(1));
    Ok(if granted { Ok(()) } else { Err(tokens) })
}
