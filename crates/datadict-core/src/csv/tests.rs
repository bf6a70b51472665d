//! Tests of the CSV writer and reader: records and their lines, input in chunks split anywhere,
//! problems named by line, the size budget, and the import report written as before.

use super::*;
use proptest::prelude::*;

/// Reads `input` whole, then in every two-chunk split and byte by byte, and checks that each way
/// gives the same answers as the first.
fn read_all(input: &[u8], budget: usize) -> Vec<Result<Record, CsvError>> {
    let whole = read_chunks(input, &[input.len()], budget);
    for cut in 0..=input.len() {
        assert_eq!(read_chunks(input, &[cut, input.len()], budget), whole, "split at {cut} of {input:?}");
    }
    let bytes: Vec<usize> = (1..=input.len()).collect();
    assert_eq!(read_chunks(input, &bytes, budget), whole, "byte by byte: {input:?}");
    whole
}

/// Feeds `input` cut at the given ends.
fn read_chunks(input: &[u8], ends: &[usize], budget: usize) -> Vec<Result<Record, CsvError>> {
    let mut reader = Reader::with_budget(budget);
    let mut out = Vec::new();
    let mut start = 0;
    for &end in ends {
        reader.feed(&input[start..end]);
        out.extend(reader.by_ref());
        start = end;
    }
    reader.finish();
    out.extend(reader.by_ref());
    out
}

/// Checks the records of `input` as `(line, fields)` pairs.
fn check(input: &str, expected: &[(u64, &[&str])]) {
    let got = read_all(input.as_bytes(), DEFAULT_MAX_RECORD_BYTES);
    let want: Vec<Result<Record, CsvError>> = expected
        .iter()
        .map(|(line, fields)| Ok(Record { line: *line, fields: fields.iter().map(|f| (*f).to_owned()).collect() }))
        .collect();
    assert_eq!(got, want, "{input:?}");
    assert_eq!(parse(input), want.into_iter().collect::<Result<Vec<_>, _>>(), "{input:?}");
}

#[test]
fn records() {
    // The cases of the dictionary reader and of the warehouse reader that this module replaces.
    check("a,\"b,c\",\"d\"\"e\"\n\"multi\nline\",x\nlast", &[(1, &["a", "b,c", "d\"e"]), (2, &["multi\nline", "x"]), (4, &["last"])]);
    check("a,b\n1,2\n", &[(1, &["a", "b"]), (2, &["1", "2"])]);
    check("a,b\r\n\"x,y\",\"say \"\"hi\"\"\"\r\n", &[(1, &["a", "b"]), (2, &["x,y", "say \"hi\""])]);
    check("a\n\"two\nlines\"\n\n", &[(1, &["a"]), (2, &["two\nlines"])]);
    check("a,b\n,\n", &[(1, &["a", "b"]), (2, &["", ""])]);
    // Empty lines are skipped but counted; a line of one empty quoted field is a record.
    check("\n\r\na\n\n\nb\r\n", &[(3, &["a"]), (6, &["b"])]);
    check("\"\"\n", &[(1, &[""])]);
    check("", &[]);
    check("\n\n", &[]);
    // Line breaks inside quotes are kept as written, `\r\n` included.
    check("\"x\r\ny\",z\r\nnext", &[(1, &["x\r\ny", "z"]), (3, &["next"])]);
    // A quote opens a quoted field only at its start; elsewhere it is text.
    check("a\"b,\"\"\"\"\n", &[(1, &["a\"b", "\""])]);
    check("\"\"\"x\",\"\"\n", &[(1, &["\"x", ""])]);
    // A `\r` is a line end only before `\n` or at the very end; elsewhere it is text.
    check("a\rb,c\r", &[(1, &["a\rb", "c"])]);
    check("\r", &[]);
    check("x\n\ry\n", &[(1, &["x"]), (2, &["\ry"])]);
    // The byte-order mark is not part of the first field, and only at the start is it skipped.
    check("\u{feff}\"a\",b\n\u{feff}c\n", &[(1, &["a", "b"]), (2, &["\u{feff}c"])]);
    check("\u{feff}", &[]);
    check("\u{feff}\n\u{feff}", &[(2, &["\u{feff}"])]);
    check("é,ü\n", &[(1, &["é", "ü"])]);
}

#[test]
fn text_after_a_closing_quote_is_refused_and_reading_goes_on() {
    let got = read_all(b"id,a\n2,\"x\"y\n3,\"ok\"\r\n4,\"two\nlines\"z,w\n5,\"\"\n", DEFAULT_MAX_RECORD_BYTES);
    let record = |line, fields: &[&str]| Ok(Record { line, fields: fields.iter().map(|f| f.to_string()).collect() });
    assert_eq!(
        got,
        vec![record(1, &["id", "a"]), Err(CsvError::AfterQuote { line: 2 }), record(3, &["3", "ok"]), Err(CsvError::AfterQuote { line: 5 }), record(6, &["5", ""])]
    );
    let message = CsvError::AfterQuote { line: 2 }.to_string();
    assert!(message.contains("line 2") && message.contains("`\"\"`"), "{message}");
}

#[test]
fn a_part_of_a_bom_is_text() {
    // Two bytes of a byte-order mark and then others: the bytes are read as they are, and here
    // they are not UTF-8.
    let got = read_all(b"\xef\xbbx\nok\n", DEFAULT_MAX_RECORD_BYTES);
    assert_eq!(got, vec![Err(CsvError::NotUtf8 { line: 1 }), Ok(Record { line: 2, fields: vec!["ok".into()] })]);
}

#[test]
fn problems_name_their_line_and_reading_goes_on() {
    // A quote left open: the error names the line where it opens, not where the record starts.
    let got = read_all(b"a,b\nc,\"d\ne\n", DEFAULT_MAX_RECORD_BYTES);
    assert_eq!(got, vec![Ok(Record { line: 1, fields: vec!["a".into(), "b".into()] }), Err(CsvError::Unclosed { line: 2 })]);
    let got = read_all(b"\"a\nb\",\"c\n", DEFAULT_MAX_RECORD_BYTES);
    assert_eq!(got, vec![Err(CsvError::Unclosed { line: 2 })]);
    assert_eq!(parse("h\n\n\"open").unwrap_err(), CsvError::Unclosed { line: 3 });

    // Bytes that are not UTF-8 in a later line of a quoted field, then a good record.
    let got = read_all(b"x\n\"ok\nbad \xff\",y\nz\n", DEFAULT_MAX_RECORD_BYTES);
    assert_eq!(got, vec![
        Ok(Record { line: 1, fields: vec!["x".into()] }),
        Err(CsvError::NotUtf8 { line: 3 }),
        Ok(Record { line: 4, fields: vec!["z".into()] }),
    ]);

    // Over the budget: the record is refused with its first line, the next ones are read.
    let got = read_all(b"12345678\n123456789\n\"1\n23456\"\n1,2,3,4,5\n", 8);
    let too_large = |line| Err(CsvError::TooLarge { line, limit: 8 });
    assert_eq!(got, vec![
        Ok(Record { line: 1, fields: vec!["12345678".into()] }),
        too_large(2),
        too_large(3),
        too_large(5),
    ]);
    // The separators count: a line of commas cannot grow a record without bound.
    assert_eq!(read_all(b",,,,,,,,,\n", 8), vec![too_large(1)]);
}

#[test]
fn messages_name_the_line_and_what_to_do() {
    assert_eq!(CsvError::Unclosed { line: 4 }.to_string(), "the quoted field that opens on line 4 is not closed; close it with `\"`");
    let too_large = CsvError::TooLarge { line: 7, limit: 100 };
    assert_eq!(too_large.to_string(), "the record that starts on line 7 is over 100 bytes; split its values, or close a quote left open before it");
    assert_eq!(too_large.line(), 7);
    assert_eq!(CsvError::NotUtf8 { line: 2 }.to_string(), "line 2 is not UTF-8 text; save the file as UTF-8");
}

/// The import report's CSV as `web/src/pages/import.rs` wrote it before it used this module
/// (`csv_field` and `report_csv`, copied as they were), to show that the writer gives the same
/// text.
mod report_before {
    pub fn csv_field(s: &str) -> String {
        if s.contains([',', '"', '\n', '\r']) {
            format!("\"{}\"", s.replace('"', "\"\""))
        } else {
            s.to_owned()
        }
    }

    pub fn report_csv(rows: &[(u64, u64, &str, String, String)]) -> String {
        let mut out = String::from("line,index,source,field,message\n");
        for r in rows {
            out.push_str(&format!("{},{},{},{},{}\n", r.0, r.1, r.2, csv_field(&r.3), csv_field(&r.4)));
        }
        out
    }
}

/// The same report through [`push_record`], as the web app writes it now.
fn report_csv(rows: &[(u64, u64, &str, String, String)]) -> String {
    let mut out = String::new();
    push_record(&mut out, ["line", "index", "source", "field", "message"]);
    for (line, index, source, field, message) in rows {
        push_record(&mut out, [line.to_string().as_str(), &index.to_string(), source, field, message]);
    }
    out
}

#[test]
fn the_writer_gives_the_import_report_as_before() {
    let rows: Vec<(u64, u64, &str, String, String)> = vec![
        (3, 2, "server", "properties.time".into(), "bad, \"very\"".into()),
        (1, 0, "check", String::new(), "the record is not valid JSON (EOF); send one JSON object per event".into()),
        (7, 6, "batch", "x".into(), "line one\nline two\r\nand\rmore".into()),
        (9, 8, "check", "a\"b".into(), "plain".into()),
        (12, 11, "server", "ünïcødé, ok".into(), String::new()),
    ];
    assert_eq!(report_csv(&rows), report_before::report_csv(&rows));
    assert_eq!(report_csv(&[]), report_before::report_csv(&[]));
}

#[test]
fn writer() {
    let mut out = String::new();
    push_record(&mut out, ["a", "b,c", "say \"hi\"", "two\nlines", "cr\r", ""]);
    push_record(&mut out, [""]);
    push_record(&mut out, Vec::<String>::new());
    push_record(&mut out, ["", ""]);
    assert_eq!(out, "a,\"b,c\",\"say \"\"hi\"\"\",\"two\nlines\",\"cr\r\",\n\"\"\n\"\"\n,\n");
}

proptest! {
    #[test]
    fn what_is_written_reads_back(records in prop::collection::vec(prop::collection::vec("[a\",\r\n é]{0,6}", 1..5), 0..6)) {
        let mut text = String::new();
        for record in &records {
            push_record(&mut text, record);
        }
        let back: Vec<Vec<String>> = parse(&text).unwrap().into_iter().map(|r| r.fields).collect();
        prop_assert_eq!(back, records);
    }

    #[test]
    fn chunks_split_anywhere_read_as_a_whole(text in "[a\",\r\n\u{feff}]{0,24}", cut in 0usize..24) {
        let bytes = text.as_bytes();
        let cut = cut.min(bytes.len());
        let mut whole = Reader::default();
        whole.feed(bytes);
        whole.finish();
        let whole: Vec<_> = whole.collect();
        prop_assert_eq!(read_chunks(bytes, &[cut, bytes.len()], DEFAULT_MAX_RECORD_BYTES), whole);
    }
}
