//! The lookup-table check, one case a line: a CSV and the rows it gives, or its problems as
//! `(index, a piece of the message)`.

use super::*;

/// Checks `csv` and compares the stored records (JSON arrays) with `rows`.
fn ok(csv: &str, columns: &[&str], rows: &[&str]) {
    let table = check_csv(csv.as_bytes(), 1 << 20).unwrap_or_else(|p| panic!("{csv:?}: {p:?}"));
    assert_eq!(table.columns, columns, "{csv:?}");
    let got: Vec<&str> = table.rows.iter().map(|r| r.record.as_str()).collect();
    assert_eq!(got, rows, "{csv:?}");
    for row in &table.rows {
        let first: Vec<String> = serde_json::from_str(&row.record).unwrap();
        assert_eq!(first[0], row.key, "{csv:?}");
    }
}

/// Checks `csv` and compares its problems with `(index, piece of the message)`.
fn bad(csv: &[u8], want: &[(u64, &str)]) {
    let problems = check_csv(csv, 1 << 20).map(|t| t.rows).unwrap_err();
    let got: Vec<(u64, &str)> = problems.listed.iter().map(|f| (f.index, f.message.as_str())).collect();
    assert_eq!(got.len(), want.len(), "{:?}: {got:?}", String::from_utf8_lossy(csv));
    for ((index, message), (want_index, piece)) in got.iter().zip(want) {
        assert_eq!(index, want_index, "{message}");
        assert!(message.contains(piece), "`{piece}` not in {message}");
    }
    assert_eq!(problems.total, want.len());
}

#[test]
fn valid_tables() {
    ok("id,field1,field2\nkey1,v1,z1\nkey2,z1,z2\n", &["id", "field1", "field2"], &[r#"["key1","v1","z1"]"#, r#"["key2","z1","z2"]"#]);
    // A header alone is an empty table.
    ok("id,name\n", &["id", "name"], &[]);
    // CRLF, a byte-order mark, no final line end, blank lines between records.
    ok("\u{feff}id,v\r\na,1\r\n\r\nb,2", &["id", "v"], &[r#"["a","1"]"#, r#"["b","2"]"#]);
    // Quoted fields with commas, quotes and line ends inside; empty values besides the key.
    ok("id,note\n\"k,1\",\"say \"\"hi\"\"\nthen go\"\nk2,\n", &["id", "note"], &[r#"["k,1","say \"hi\"\nthen go"]"#, r#"["k2",""]"#]);
    // Keys are compared exactly: case and surrounding spaces make other keys.
    ok("id\na\nA\n a\n", &["id"], &[r#"["a"]"#, r#"["A"]"#, r#"[" a"]"#]);
}

#[test]
fn every_kind_of_bad_row_is_named_with_its_index_and_line() {
    // The reference's two examples: a blank key, and a row of the wrong width.
    bad(b"id,a,b\nk1,1,2\n,3,4\nk3,5\n", &[(2, "line 3: primary key is required and cannot be blank"), (3, "line 4: invalid row: wrong number of fields (2 where the header has 3)")]);
    bad(b"id,a\nk1,1\nk2,2\nk1,3\n", &[(3, "line 4: the primary key `k1` is already the key of the row on line 2")]);
    // A key of spaces is blank.
    bad(b"id,a\n  ,1\n", &[(1, "line 2: primary key is required")]);
    // An unclosed quote swallows the rest of the input into one record.
    bad(b"id,a\nk1,\"open\nk2,2\n", &[(1, "quoted field that opens on line 2 is not closed")]);
    bad(b"id,a\nk1,\xff\xfe\n", &[(1, "line 2 is not UTF-8 text")]);
    // A quoted field spanning lines: the index counts records, the message names the line.
    bad(b"id,a\nk1,\"x\ny\"\nk2\n", &[(2, "line 4: invalid row: wrong number of fields (1 where the header has 2)")]);
    // One row with two problems gives both.
    bad(b"id,a\n,1,2\n", &[(1, "wrong number of fields"), (1, "primary key is required")]);
}

#[test]
fn the_header_is_checked() {
    bad(b"", &[(0, "the CSV is empty")]);
    bad(b"\n\r\n\n", &[(0, "the CSV is empty")]);
    bad(b"id,,b\nk,1,2\n", &[(0, "line 1: column 2 of the header has no name")]);
    bad(b"id,a,a\nk,1,2\n", &[(0, "line 1: the header names columns 2 and 3 both `a`")]);
    bad(b"\"id\nx\nk\n", &[(0, "not closed")]);
}

#[test]
fn a_record_over_the_budget_is_refused_and_the_next_is_still_read() {
    let csv = format!("id,a\nk1,{}\nk2\n", "x".repeat(100));
    let problems = check_csv(csv.as_bytes(), 50).unwrap_err();
    let got: Vec<(u64, bool)> = problems.listed.iter().map(|f| (f.index, f.message.contains("line"))).collect();
    assert_eq!(got, [(1, true), (2, true)], "{problems:?}");
    assert!(problems.listed[0].message.contains("over 50 bytes"), "{problems:?}");
}

#[test]
fn the_list_is_capped_and_the_total_told() {
    let mut csv = String::from("id,a\n");
    for _ in 0..MAX_LISTED + 5 {
        csv.push_str(",1\n");
    }
    let problems = check_csv(csv.as_bytes(), 1 << 20).unwrap_err();
    assert_eq!((problems.listed.len(), problems.total), (MAX_LISTED, MAX_LISTED + 5));
    assert_eq!(problems.listed.last().unwrap().index, MAX_LISTED as u64);
}

#[test]
fn chunk_boundaries_do_not_matter() {
    // Records longer than a chunk, and a chunk boundary inside a quoted field and a CRLF.
    let long = "y".repeat(CHUNK + 3);
    let csv = format!("id,v\r\nk1,\"{long}\r\n\"\r\nk2,{long}\r\n");
    let table = check_csv(csv.as_bytes(), 1 << 20).unwrap();
    assert_eq!(table.rows.len(), 2);
    let second: Vec<String> = serde_json::from_str(&table.rows[1].record).unwrap();
    assert_eq!(second, ["k2".to_owned(), long.clone()]);
    let first: Vec<String> = serde_json::from_str(&table.rows[0].record).unwrap();
    assert_eq!(first[1], format!("{long}\r\n"));
}

#[test]
fn long_values_are_shortened_in_messages() {
    let key = "k".repeat(200);
    let problems = check_csv(format!("id\n{key}\n{key}\n").as_bytes(), 1 << 20).unwrap_err();
    let message = &problems.listed[0].message;
    assert!(message.contains(&format!("`{}…`", "k".repeat(60))) && message.len() < 300, "{message}");
}
