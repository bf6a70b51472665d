//! Reading the rows of an embedded source (a SQLite table, an NDJSON file, a CSV file) on a
//! blocking thread, in chunks sent to the sync task, so that memory stays flat on a large table.

use super::{Row, Source};
use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags};
use serde_json::Value;
use std::io::BufRead;

/// One row as read: its 1-based number in the source, and its columns or why it cannot be read.
pub type ReadRow = (u64, Result<Row, String>);

/// How many rows go in one chunk.
pub const CHUNK_ROWS: usize = 2000;

fn open_sqlite(path: &str) -> Result<Connection, String> {
    Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX)
        .map_err(|e| format!("the SQLite source cannot be opened ({e}); check that the file is a SQLite database"))
}

fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// `table` or `schema.table`, each part quoted.
fn quote_pg(table: &str) -> String {
    table.split('.').map(quote).collect::<Vec<_>>().join(".")
}

fn connect_pg(source: &Source) -> Result<postgres::Client, String> {
    let Source::Postgres { host, port, user, dbname, password_env, .. } = source else {
        return Err("not a PostgreSQL source".into());
    };
    let mut config = postgres::Config::new();
    config.host(host).port(*port).user(user).dbname(dbname).connect_timeout(std::time::Duration::from_secs(10));
    if let Some(var) = password_env {
        let password = std::env::var(var).map_err(|_| format!("the server has no environment variable `{var}`; set it to the database password"))?;
        config.password(password);
    }
    // The error names the host and database, never the password.
    let mut client = config
        .connect(postgres::NoTls)
        .map_err(|e| format!("cannot connect to PostgreSQL at {host}:{port}, database `{dbname}`, as `{user}` ({e}); check the source settings"))?;
    // Timestamps with a zone are written in UTC, which the time mapping reads.
    client.batch_execute("SET TIME ZONE 'UTC'").map_err(|e| format!("the PostgreSQL session cannot be prepared ({e})"))?;
    Ok(client)
}

/// The columns of a source when they are known without reading its rows (`None` for NDJSON).
pub fn columns(source: &Source) -> Result<Option<Vec<String>>, String> {
    match source {
        Source::Sqlite { path, table } => {
            let conn = open_sqlite(path)?;
            let stmt = conn
                .prepare(&format!("SELECT * FROM {} LIMIT 0", quote(table)))
                .map_err(|e| format!("the table `{table}` cannot be read ({e}); check the table name"))?;
            Ok(Some(stmt.column_names().into_iter().map(str::to_owned).collect()))
        }
        Source::Csv { path } => {
            let file = std::fs::File::open(path).map_err(|e| format!("the CSV source cannot be opened ({e}); check the path"))?;
            let mut reader = CsvReader::new(std::io::BufReader::new(file));
            match reader.record() {
                Ok(Some(header)) => Ok(Some(header)),
                Ok(None) => Err("the CSV source is empty; its first line must name the columns".into()),
                Err(e) => Err(format!("the CSV header cannot be read ({e})")),
            }
        }
        Source::Ndjson { .. } => Ok(None),
        Source::Postgres { table, .. } => {
            let mut client = connect_pg(source)?;
            let stmt = client
                .prepare(&format!("SELECT * FROM {} LIMIT 0", quote_pg(table)))
                .map_err(|e| format!("the table `{table}` cannot be read ({e}); check the table name and the user's rights"))?;
            Ok(Some(stmt.columns().iter().map(|c| c.name().to_owned()).collect()))
        }
    }
}

/// Reads every row of `source`, calling `chunk` with at most [`CHUNK_ROWS`] rows at a time; stops
/// early when `chunk` returns false (the receiver is gone). `Err` when the source as a whole
/// cannot be read; a bad row is an `Err` row, never the end of the read.
pub fn read(source: &Source, mut chunk: impl FnMut(Vec<ReadRow>) -> bool) -> Result<(), String> {
    let mut buf: Vec<ReadRow> = Vec::with_capacity(CHUNK_ROWS);
    let mut push = |row: ReadRow, buf: &mut Vec<ReadRow>| -> bool {
        buf.push(row);
        if buf.len() >= CHUNK_ROWS {
            return chunk(std::mem::take(buf));
        }
        true
    };
    match source {
        Source::Sqlite { path, table } => {
            let conn = open_sqlite(path)?;
            let mut stmt = conn
                .prepare(&format!("SELECT * FROM {}", quote(table)))
                .map_err(|e| format!("the table `{table}` cannot be read ({e}); check the table name"))?;
            let names: Vec<String> = stmt.column_names().into_iter().map(str::to_owned).collect();
            let mut rows = stmt.query([]).map_err(|e| format!("the table `{table}` cannot be read ({e})"))?;
            let mut n = 0u64;
            loop {
                let row = match rows.next() {
                    Ok(Some(row)) => row,
                    Ok(None) => break,
                    Err(e) => return Err(format!("reading the table `{table}` failed after {n} rows ({e})")),
                };
                n += 1;
                let mut out = Row::new();
                for (i, name) in names.iter().enumerate() {
                    let v = match row.get_ref(i) {
                        Ok(ValueRef::Null) | Err(_) => Value::Null,
                        Ok(ValueRef::Integer(x)) => Value::from(x),
                        Ok(ValueRef::Real(x)) => Value::from(x),
                        Ok(ValueRef::Text(t)) => Value::from(String::from_utf8_lossy(t).into_owned()),
                        Ok(ValueRef::Blob(b)) => Value::from(b.iter().map(|x| format!("{x:02x}")).collect::<String>()),
                    };
                    out.insert(name.clone(), v);
                }
                if !push((n, Ok(out)), &mut buf) {
                    return Ok(());
                }
            }
        }
        Source::Ndjson { path } => {
            let file = std::fs::File::open(path).map_err(|e| format!("the NDJSON source cannot be opened ({e}); check the path"))?;
            let mut n = 0u64;
            for line in std::io::BufReader::new(file).split(b'\n') {
                let line = line.map_err(|e| format!("reading the NDJSON source failed after {n} lines ({e})"))?;
                n += 1;
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                let row = match serde_json::from_slice::<Value>(&line) {
                    Ok(Value::Object(map)) => Ok(map),
                    Ok(_) => Err("the line is not a JSON object".to_owned()),
                    Err(e) => Err(format!("the line is not valid JSON ({e})")),
                };
                if !push((n, row), &mut buf) {
                    return Ok(());
                }
            }
        }
        Source::Postgres { table, .. } => {
            use postgres::fallible_iterator::FallibleIterator;
            let mut client = connect_pg(source)?;
            // PostgreSQL turns each row into JSON itself (numbers stay numbers, timestamps become
            // ISO 8601 text), so every column type is read without a conversion table here.
            let sql = format!("SELECT row_to_json(t)::text FROM {} t", quote_pg(table));
            let mut rows = client
                .query_raw(sql.as_str(), std::iter::empty::<&(dyn postgres::types::ToSql + Sync)>())
                .map_err(|e| format!("the table `{table}` cannot be read ({e}); check the table name and the user's rights"))?;
            let mut n = 0u64;
            loop {
                let row = match rows.next() {
                    Ok(Some(row)) => row,
                    Ok(None) => break,
                    Err(e) => return Err(format!("reading the table `{table}` failed after {n} rows ({e})")),
                };
                n += 1;
                let text: Result<String, _> = row.try_get(0);
                let parsed = match text {
                    Ok(t) => match serde_json::from_str::<Value>(&t) {
                        Ok(Value::Object(map)) => Ok(map),
                        _ => Err("the row cannot be read as JSON".to_owned()),
                    },
                    Err(e) => Err(format!("the row cannot be read ({e})")),
                };
                if !push((n, parsed), &mut buf) {
                    return Ok(());
                }
            }
        }
        Source::Csv { path } => {
            let file = std::fs::File::open(path).map_err(|e| format!("the CSV source cannot be opened ({e}); check the path"))?;
            let mut reader = CsvReader::new(std::io::BufReader::new(file));
            let header = match reader.record() {
                Ok(Some(h)) => h,
                Ok(None) => return Ok(()),
                Err(e) => return Err(format!("the CSV header cannot be read ({e})")),
            };
            let mut n = 0u64;
            loop {
                let record = reader.record();
                n += 1;
                let row = match record {
                    Ok(None) => break,
                    Err(e) => Err(e),
                    Ok(Some(fields)) if fields.len() != header.len() => {
                        Err(format!("the row has {} fields and the header {}", fields.len(), header.len()))
                    }
                    // CSV has no types: every field stays a string (empty means no value), so that
                    // a value such as a zip code `01234` is not changed into a number.
                    Ok(Some(fields)) => Ok(header
                        .iter()
                        .zip(fields)
                        .map(|(k, v)| (k.clone(), if v.is_empty() { Value::Null } else { Value::from(v) }))
                        .collect()),
                };
                if !push((n, row), &mut buf) {
                    return Ok(());
                }
            }
        }
    }
    if !buf.is_empty() {
        chunk(buf);
    }
    Ok(())
}

/// An RFC 4180 reader: comma-separated fields, double quotes around fields holding commas,
/// quotes or line breaks, `""` for a quote inside.
struct CsvReader<R> {
    input: R,
}

impl<R: BufRead> CsvReader<R> {
    fn new(input: R) -> Self {
        Self { input }
    }

    /// The next record, `None` at the end; `Err` for a record that is not valid CSV (the reader
    /// is then at the next line and can go on).
    fn record(&mut self) -> Result<Option<Vec<String>>, String> {
        let mut line = String::new();
        loop {
            line.clear();
            match self.input.read_line(&mut line) {
                Ok(0) => return Ok(None),
                Ok(_) => {}
                Err(e) => return Err(format!("the line cannot be read ({e})")),
            }
            if !line.trim_end_matches(['\r', '\n']).is_empty() {
                break;
            }
        }
        let mut fields = Vec::new();
        let mut field = String::new();
        let mut quoted = false;
        let mut chars: Vec<char> = line.chars().collect();
        let mut i = 0;
        loop {
            if i >= chars.len() {
                if quoted {
                    // A line break inside quotes: the record goes on on the next line.
                    let mut more = String::new();
                    match self.input.read_line(&mut more) {
                        Ok(0) => return Err("a quoted field is not closed".into()),
                        Ok(_) => {
                            chars.extend(more.chars());
                            continue;
                        }
                        Err(e) => return Err(format!("the line cannot be read ({e})")),
                    }
                }
                break;
            }
            let c = chars[i];
            i += 1;
            if quoted {
                if c == '"' {
                    if chars.get(i) == Some(&'"') {
                        field.push('"');
                        i += 1;
                    } else {
                        quoted = false;
                    }
                } else {
                    field.push(c);
                }
            } else {
                match c {
                    ',' => fields.push(std::mem::take(&mut field)),
                    '"' if field.is_empty() => quoted = true,
                    '\r' | '\n' => {}
                    _ => field.push(c),
                }
            }
        }
        fields.push(field);
        Ok(Some(fields))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(input: &str, expected: &[&[&str]]) {
        let mut r = CsvReader::new(std::io::Cursor::new(input.as_bytes()));
        let mut got = Vec::new();
        while let Some(rec) = r.record().unwrap() {
            got.push(rec);
        }
        let want: Vec<Vec<String>> = expected.iter().map(|r| r.iter().map(|s| (*s).to_owned()).collect()).collect();
        assert_eq!(got, want, "{input:?}");
    }

    #[test]
    fn csv_records() {
        check("a,b\n1,2\n", &[&["a", "b"], &["1", "2"]]);
        check("a,b\r\n\"x,y\",\"say \"\"hi\"\"\"\r\n", &[&["a", "b"], &["x,y", "say \"hi\""]]);
        check("a\n\"two\nlines\"\n\n", &[&["a"], &["two\nlines"]]);
        check("a,b\n,\n", &[&["a", "b"], &["", ""]]);
    }
}
