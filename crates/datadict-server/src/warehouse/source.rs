//! Reading the rows of an embedded source (a SQLite table, an NDJSON file, a CSV file) on a
//! blocking thread, in chunks sent to the sync task, so that memory stays flat on a large table.
//! CSV is read by the core's reader (`datadict_core::csv`), fed a buffer at a time.

use super::{Row, Source};
use datadict_core::csv::{self, CsvError};
use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags};
use serde_json::Value;
use std::io::BufRead;

/// One row as read: its number in the source (the line it starts on in a file, the row's position
/// in a table, from 1), and its columns or why it cannot be read.
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

/// A PostgreSQL error as a user can act on it: the database's own message, its SQLSTATE code, and
/// its detail and hint when it has them (the driver's `Display` says only "db error"); for an
/// error of the connection itself, its cause. No message of PostgreSQL holds the password.
fn pg_error(e: &postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        let mut out = format!("PostgreSQL says: {} (SQLSTATE {})", db.message(), db.code().code());
        if let Some(detail) = db.detail() {
            out.push_str(&format!("; {detail}"));
        }
        if let Some(hint) = db.hint() {
            out.push_str(&format!("; hint: {hint}"));
        }
        return out;
    }
    let mut out = e.to_string();
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        out.push_str(&format!(": {c}"));
        cause = c.source();
    }
    out
}

fn connect_pg(source: &Source) -> Result<postgres::Client, String> {
    let Source::Postgres { host, port, user, dbname, password_env, .. } = source else {
        return Err("not a PostgreSQL source".into());
    };
    let mut config = postgres::Config::new();
    config.host(host).port(*port).user(user).dbname(dbname).connect_timeout(std::time::Duration::from_secs(10));
    if let Some(var) = password_env {
        // An import stored before the prefix rule is held to it too.
        if let Some(refusal) = super::password_env_refusal(var) {
            return Err(refusal);
        }
        let password = std::env::var(var).map_err(|_| format!("the server has no environment variable `{var}`; set it to the database password"))?;
        config.password(password);
    }
    // The error names the host and database, never the password.
    let mut client = config
        .connect(postgres::NoTls)
        .map_err(|e| format!("cannot connect to PostgreSQL at {host}:{port}, database `{dbname}`, as `{user}` ({}); check the source settings", pg_error(&e)))?;
    // Timestamps with a zone are written in UTC, which the time mapping reads.
    client.batch_execute("SET TIME ZONE 'UTC'").map_err(|e| format!("the PostgreSQL session cannot be prepared ({})", pg_error(&e)))?;
    Ok(client)
}

/// The next row of a table, `None` at its end; a failed read ends the whole read.
fn next_row<T, E>(next: Result<Option<T>, E>, table: &str, n: u64, show: impl Fn(&E) -> String) -> Result<Option<T>, String> {
    next.map_err(|e| format!("reading the table `{table}` failed after {n} rows ({})", show(&e)))
}

/// Why a CSV header cannot name the columns: an empty name, or a name given twice (the values of
/// one column would overwrite another's); `None` when every name is given once.
fn header_problem(header: &[String]) -> Option<String> {
    let mut problems = Vec::new();
    let empty: Vec<String> = header.iter().enumerate().filter(|(_, h)| h.trim().is_empty()).map(|(i, _)| (i + 1).to_string()).collect();
    if !empty.is_empty() {
        problems.push(format!("column {} has no name", empty.join(", ")));
    }
    let mut twice: Vec<&str> = Vec::new();
    for (i, h) in header.iter().enumerate() {
        if !h.trim().is_empty() && header[..i].contains(h) && !twice.contains(&h.as_str()) {
            twice.push(h);
        }
    }
    if !twice.is_empty() {
        let names: Vec<String> = twice.iter().map(|h| format!("`{h}`")).collect();
        problems.push(format!("{} appear{} more than once", names.join(", "), if twice.len() == 1 { "s" } else { "" }));
    }
    (!problems.is_empty()).then(|| format!("the CSV header cannot name the columns: {}; give every column a name of its own", problems.join("; ")))
}

/// The header of a CSV source (its first record), refused when it cannot name the columns.
fn csv_header<R: BufRead>(reader: &mut CsvFile<R>) -> Result<Option<Vec<String>>, String> {
    match reader.record()? {
        Some(Ok(h)) => match header_problem(&h.fields) {
            Some(problem) => Err(problem),
            None => Ok(Some(h.fields)),
        },
        None => Ok(None),
        Some(Err(e)) => Err(format!("the CSV header cannot be read ({e})")),
    }
}

/// A SQLite value as JSON, or why it cannot be one: a real that is not finite (JSON has no
/// `Infinity` or `NaN`), or text that is not UTF-8 (it would be changed); the row is then
/// rejected with the reason, as a CSV row is, rather than stored without the value or altered.
fn sqlite_value(v: ValueRef<'_>, column: &str) -> Result<Value, String> {
    Ok(match v {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(x) => Value::from(x),
        ValueRef::Real(x) if x.is_finite() => Value::from(x),
        ValueRef::Real(x) => {
            return Err(format!("the column `{column}` holds {x}, which is not a finite number and cannot be stored; store NULL or a finite number"))
        }
        ValueRef::Text(t) => match std::str::from_utf8(t) {
            Ok(text) => Value::from(text),
            Err(e) => {
                return Err(format!(
                    "the column `{column}` holds text that is not UTF-8 (a bad byte after {} bytes); store it as UTF-8 text, or as a BLOB to import it as hex",
                    e.valid_up_to()
                ))
            }
        },
        ValueRef::Blob(b) => Value::from(b.iter().map(|x| format!("{x:02x}")).collect::<String>()),
    })
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
        Source::Csv { path } => match csv_header(&mut CsvFile::open(path)?)? {
            Some(header) => Ok(Some(header)),
            None => Err("the CSV source is empty; its first line must name the columns".into()),
        },
        Source::Ndjson { .. } => Ok(None),
        Source::Postgres { table, .. } => {
            let mut client = connect_pg(source)?;
            let stmt = client
                .prepare(&format!("SELECT * FROM {} LIMIT 0", quote_pg(table)))
                .map_err(|e| format!("the table `{table}` cannot be read ({}); check the table name and the user's rights", pg_error(&e)))?;
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
            while let Some(row) = next_row(rows.next(), table, n, ToString::to_string)? {
                n += 1;
                let out = names
                    .iter()
                    .enumerate()
                    .map(|(i, name)| {
                        let v = row.get_ref(i).map_err(|e| format!("the column `{name}` cannot be read ({e})"))?;
                        Ok((name.clone(), sqlite_value(v, name)?))
                    })
                    .collect::<Result<Row, String>>();
                if !push((n, out), &mut buf) {
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
                // A byte order mark before the first line is not part of it (as in a CSV source).
                let line = if n == 1 { line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&line) } else { &line };
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                let row = match serde_json::from_slice::<Value>(line) {
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
                .map_err(|e| format!("the table `{table}` cannot be read ({}); check the table name and the user's rights", pg_error(&e)))?;
            let mut n = 0u64;
            while let Some(row) = next_row(rows.next(), table, n, pg_error)? {
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
            let mut reader = CsvFile::open(path)?;
            let Some(header) = csv_header(&mut reader)? else { return Ok(()) };
            while let Some(record) = reader.record()? {
                // A row is numbered by the line it starts on, as in its messages and as NDJSON
                // rows are (the header is line 1).
                let n = match &record {
                    Ok(r) => r.line,
                    Err(e) => e.line(),
                };
                let row = match record {
                    Err(e) => Err(e.to_string()),
                    Ok(record) if record.fields.len() != header.len() => {
                        Err(format!("the row on line {} has {} fields and the header {}", record.line, record.fields.len(), header.len()))
                    }
                    // CSV has no types: every field stays a string (empty means no value), so that
                    // a value such as a zip code `01234` is not changed into a number.
                    Ok(record) => Ok(header
                        .iter()
                        .zip(record.fields)
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

/// A CSV file read through the core's reader a buffer at a time, so that memory holds one
/// buffer and at most one record (of at most the reader's budget), however large the file.
struct CsvFile<R> {
    input: R,
    reader: csv::Reader,
    /// Records read so far, for the message of a read that fails.
    records: u64,
    ended: bool,
}

impl CsvFile<std::io::BufReader<std::fs::File>> {
    fn open(path: &str) -> Result<Self, String> {
        let file = std::fs::File::open(path).map_err(|e| format!("the CSV source cannot be opened ({e}); check the path"))?;
        Ok(CsvFile::new(std::io::BufReader::new(file)))
    }
}

impl<R: BufRead> CsvFile<R> {
    fn new(input: R) -> Self {
        Self { input, reader: csv::Reader::default(), records: 0, ended: false }
    }

    /// The next record (`Err` for one that is not valid CSV; the reader goes on after it), `None`
    /// at the end. `Err` when the file itself cannot be read.
    fn record(&mut self) -> Result<Option<Result<csv::Record, CsvError>>, String> {
        loop {
            if let Some(record) = self.reader.next() {
                self.records += 1;
                return Ok(Some(record));
            }
            if self.ended {
                return Ok(None);
            }
            let buf = match self.input.fill_buf() {
                Ok(buf) => buf,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(format!("reading the CSV source failed after {} records ({e})", self.records)),
            };
            if buf.is_empty() {
                self.reader.finish();
                self.ended = true;
            } else {
                let len = buf.len();
                self.reader.feed(buf);
                self.input.consume(len);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads `input` as the CSV source reads a file, with a buffer of `capacity` bytes.
    fn read_records(input: &[u8], capacity: usize) -> Vec<Result<csv::Record, CsvError>> {
        let mut file = CsvFile::new(std::io::BufReader::with_capacity(capacity, input));
        let mut got = Vec::new();
        while let Some(record) = file.record().unwrap() {
            got.push(record);
        }
        got
    }

    fn check(input: &str, expected: &[&[&str]]) {
        for capacity in [1, 2, 3, 7, 8192] {
            let got: Vec<Vec<String>> = read_records(input.as_bytes(), capacity).into_iter().map(|r| r.unwrap().fields).collect();
            let want: Vec<Vec<String>> = expected.iter().map(|r| r.iter().map(|s| (*s).to_owned()).collect()).collect();
            assert_eq!(got, want, "{input:?} with a buffer of {capacity} bytes");
        }
    }

    #[test]
    fn csv_records() {
        check("a,b\n1,2\n", &[&["a", "b"], &["1", "2"]]);
        check("a,b\r\n\"x,y\",\"say \"\"hi\"\"\"\r\n", &[&["a", "b"], &["x,y", "say \"hi\""]]);
        check("a\n\"two\nlines\"\n\n", &[&["a"], &["two\nlines"]]);
        check("a,b\n,\n", &[&["a", "b"], &["", ""]]);
    }

    #[test]
    fn a_bad_record_names_its_line_and_reading_goes_on() {
        let got = read_records(b"a\nbad \xff\nok\n\"open\nz\n", 4);
        assert_eq!(got, vec![
            Ok(csv::Record { line: 1, fields: vec!["a".into()] }),
            Err(CsvError::NotUtf8 { line: 2 }),
            Ok(csv::Record { line: 3, fields: vec!["ok".into()] }),
            Err(CsvError::Unclosed { line: 4 }),
        ]);
    }

    /// Every row of a CSV source as `read` gives it: its number and its columns or why not.
    fn rows(text: &str) -> Vec<ReadRow> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rows.csv");
        std::fs::write(&path, text).unwrap();
        let mut got = Vec::new();
        read(&Source::Csv { path: path.to_str().unwrap().to_owned() }, |chunk| {
            got.extend(chunk);
            true
        })
        .unwrap();
        got
    }

    #[test]
    fn csv_rows() {
        let got = rows("\u{feff}id,zip\n\n1,01234\n2\n3,\n\"4\n");
        let row = |pairs: &[(&str, Value)]| Ok(pairs.iter().map(|(k, v)| ((*k).to_owned(), v.clone())).collect::<Row>());
        assert_eq!(got, vec![
            (3, row(&[("id", "1".into()), ("zip", "01234".into())])),
            (4, Err("the row on line 4 has 1 fields and the header 2".to_owned())),
            (5, row(&[("id", "3".into()), ("zip", Value::Null)])),
            (6, Err("the quoted field that opens on line 6 is not closed; close it with `\"`".to_owned())),
        ]);
    }
}
