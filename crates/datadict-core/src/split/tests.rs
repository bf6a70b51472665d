//! Tests of the record splitter: NDJSON and JSON arrays in chunks split anywhere, framing errors,
//! the byte-order mark, and oversized records counted without being buffered.

use super::*;

/// Splits `input` fed in chunks of `chunk` bytes and returns `(index, line, text)` per record.
fn split_in_chunks(input: &[u8], format: InputFormat, chunk: usize) -> Result<Vec<(u64, u64, String)>, SplitError> {
    let mut splitter = RecordSplitter::new(format, 1 << 20);
    let mut out = Vec::new();
    let mut emit = |r: RawRecord<'_>| out.push((r.pos.index, r.pos.line, String::from_utf8(r.bytes.to_vec()).unwrap()));
    for part in input.chunks(chunk.max(1)) {
        splitter.push(part, &mut emit)?;
    }
    splitter.finish(&mut emit)?;
    Ok(out)
}

/// Checks the split of `input` for every chunk size from 1 byte to the whole input.
fn check(input: &str, format: InputFormat, expected: Result<&[(u64, u64, &str)], SplitError>) {
    let expected = expected.map(|e| e.iter().map(|(i, l, t)| (*i, *l, (*t).to_owned())).collect::<Vec<_>>());
    for chunk in 1..=input.len().max(1) {
        assert_eq!(split_in_chunks(input.as_bytes(), format, chunk), expected, "{input:?} in chunks of {chunk}");
    }
    if let Ok(records) = &expected {
        let whole = split_body(input.as_bytes(), format).unwrap();
        let texts: Vec<&str> = whole.iter().map(|r| &input[r.range.clone()]).collect();
        assert_eq!(texts, records.iter().map(|r| r.2.as_str()).collect::<Vec<_>>());
    }
}

use InputFormat::*;

#[test]
fn ndjson_lines() {
    check("{\"a\":1}\n{\"b\":2}\n", Auto, Ok(&[(0, 1, "{\"a\":1}"), (1, 2, "{\"b\":2}")]));
    check("{\"a\":1}\r\n\n  \n{\"b\":\"x\\n\"}", Ndjson, Ok(&[(0, 1, "{\"a\":1}"), (1, 4, "{\"b\":\"x\\n\"}")]));
    check("\n\n{}", Auto, Ok(&[(0, 3, "{}")]));
    check("", Auto, Ok(&[]));
    check("  \n ", Ndjson, Ok(&[]));
    // A broken line is still a record: the record check reports it.
    check("{oops\n{}", Ndjson, Ok(&[(0, 1, "{oops"), (1, 2, "{}")]));
}

#[test]
fn json_arrays() {
    check("[]", Auto, Ok(&[]));
    check(" [ ] ", JsonArray, Ok(&[]));
    check(
        "[{\"a\":\"]}\\\"\"},\n {\"b\":[1,{\"c\":2}]}, 3 ,\"s\\\\\",null,[]]",
        Auto,
        Ok(&[
            (0, 1, "{\"a\":\"]}\\\"\"}"),
            (1, 2, "{\"b\":[1,{\"c\":2}]}"),
            (2, 2, "3"),
            (3, 2, "\"s\\\\\""),
            (4, 2, "null"),
            (5, 2, "[]"),
        ]),
    );
    check("[\n{\"é\":\"ü\"}\n]\n", JsonArray, Ok(&[(0, 2, "{\"é\":\"ü\"}")]));
}

#[test]
fn array_framing_errors() {
    check("{}", JsonArray, Err(SplitError::NoArray { line: 1, found: "`{`".into() }));
    check("[{} {}]", Auto, Err(SplitError::ExpectedComma { index: 0, line: 1, found: "`{`".into() }));
    check("[{},]", Auto, Err(SplitError::TrailingComma { line: 1 }));
    check("[{}] x", Auto, Err(SplitError::AfterArray { line: 1, found: "`x`".into() }));
    check("[{}", Auto, Err(SplitError::Unterminated { index: 1 }));
    check("[{\"a\":1}, {\"b\"", Auto, Err(SplitError::Unterminated { index: 1 }));
    check("[1", Auto, Err(SplitError::Unterminated { index: 0 }));
    check("", JsonArray, Err(SplitError::NoArray { line: 1, found: "the end of the input".into() }));
}

#[test]
fn byte_order_mark_is_skipped() {
    check("\u{feff}{}\n{}", Auto, Ok(&[(0, 1, "{}"), (1, 2, "{}")]));
    check("\u{feff}[1]", Auto, Ok(&[(0, 1, "1")]));
    check("{}", Auto, Ok(&[(0, 1, "{}")]));
    check("1", Ndjson, Ok(&[(0, 1, "1")]));
}

#[test]
fn oversized_records_are_counted_not_buffered() {
    for format in [Ndjson, JsonArray] {
        let input = match format {
            Ndjson => "{}\n{\"big\":\"xxxxxxxxxxxxxxxx\"}\n{}".to_owned(),
            _ => "[{},{\"big\":\"xxxxxxxxxxxxxxxx\"},{}]".to_owned(),
        };
        for chunk in 1..input.len() {
            let mut splitter = RecordSplitter::new(format, 10);
            let mut seen = Vec::new();
            let mut emit = |r: RawRecord<'_>| seen.push((r.pos.index, r.bytes.to_vec(), r.oversized));
            for part in input.as_bytes().chunks(chunk) {
                splitter.push(part, &mut emit).unwrap();
                assert!(splitter.carry.len() <= 10, "carry grew to {}", splitter.carry.len());
            }
            splitter.finish(&mut emit).unwrap();
            assert_eq!(seen, vec![(0, b"{}".to_vec(), None), (1, vec![], Some(26)), (2, b"{}".to_vec(), None)], "{format:?} {chunk}");
        }
    }
}

/// The eight-bytes-at-a-time search finds what a byte-by-byte search finds, at every length
/// around its word and 32-byte boundaries, with the match at every place, with high bytes
/// (UTF-8) before it, and with both kinds of match.
#[test]
fn quote_or_backslash_search_matches_a_plain_search() {
    let naive = |b: &[u8]| b.iter().position(|&c| c == b'"' || c == b'\\');
    let fillers: [&[u8]; 3] = [b"abcdefgh", "é€\u{7f}\u{80}ÿ".as_bytes(), b"\x21\x23\x5b\x5d\x01\xff\x00\x22"];
    for filler in fillers {
        for len in 0..80 {
            let base: Vec<u8> = filler.iter().copied().filter(|&c| c != b'"' && c != b'\\').cycle().take(len).collect();
            assert_eq!(find_quote_or_backslash(&base), naive(&base), "{base:?}");
            for at in 0..len {
                for mark in [b'"', b'\\'] {
                    let mut bytes = base.clone();
                    bytes[at] = mark;
                    assert_eq!(find_quote_or_backslash(&bytes), Some(at), "{bytes:?}");
                    // A second match later on never hides the first.
                    if at + 3 < len {
                        bytes[at + 3] = b'"' ^ b'\\' ^ mark;
                        assert_eq!(find_quote_or_backslash(&bytes), Some(at), "{bytes:?}");
                    }
                }
            }
        }
    }
}

/// Arrays of generated elements (escapes at every offset of a word, brackets and quotes inside
/// strings, strings longer than a word, newlines between tokens) split as a byte-by-byte reading
/// of the same text splits them, fed whole and in chunks that cut words at every offset.
#[test]
fn generated_arrays_split_as_a_byte_by_byte_reading() {
    let mut seed = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move |n: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n as u64) as usize
    };
    let strings = ["", "a", "\\\"", "\\\\", "x\\\\\\\"y", "]}[{", "é\\n", "0123456789abcdef0123456789abcdef-long", "\\\\\\\\\\\""];
    for round in 0..200 {
        let mut text = String::from("[");
        let elements = 1 + next(6);
        for e in 0..elements {
            if e > 0 {
                text.push_str([",", " ,", ",\n", "\n,\n "][next(4)]);
            }
            let mut element = String::new();
            match next(5) {
                0 => element.push_str(&format!("\"{}\"", strings[next(strings.len())])),
                1 => element.push_str(["1", "-2.5e3", "true", "null"][next(4)]),
                _ => {
                    element.push('{');
                    for k in 0..next(6) {
                        let sep = if k > 0 { "," } else { "" };
                        let key = strings[next(strings.len())];
                        let value = match next(4) {
                            0 => format!("\"{}\"", strings[next(strings.len())]),
                            1 => format!("[\"{}\",{{\"n\":[{}]}}]", strings[next(strings.len())], next(100)),
                            2 => "\n 12 ".to_owned(),
                            _ => format!("{{\"{}\":\"{}\"}}", key, strings[next(strings.len())]),
                        };
                        element.push_str(&format!("{sep}\"{key}\":{value}"));
                    }
                    element.push('}');
                }
            }
            text.push_str(&" ".repeat(next(9)));
            text.push_str(&element);
        }
        text.push(']');
        let expected = byte_by_byte(&text);
        for chunk in [1, 3, 7, 8, 9, 13, 64, text.len()] {
            let got: Vec<String> = split_in_chunks(text.as_bytes(), JsonArray, chunk).unwrap().into_iter().map(|(_, _, t)| t).collect();
            assert_eq!(got, expected, "round {round}, chunks of {chunk}: {text:?}");
        }
    }
}

/// The elements of a JSON array, found one byte at a time (the reference for the test above).
fn byte_by_byte(text: &str) -> Vec<String> {
    let bytes = text.as_bytes();
    let (mut out, mut depth, mut in_string, mut escape, mut start) = (Vec::new(), 0, false, false, None);
    for (i, &b) in bytes.iter().enumerate().skip(1) {
        if in_string {
            match (escape, b) {
                (true, _) => escape = false,
                (false, b'\\') => escape = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
        } else {
            match b {
                b'"' => in_string = true,
                b'{' | b'[' => depth += 1,
                b'}' | b']' => depth -= 1,
                _ => {}
            }
            if start.is_none() && !b" \n,".contains(&b) && depth >= 0 {
                start = Some(i);
            }
        }
        let at_end = depth <= 0 && !in_string && bytes.get(i + 1).is_some_and(|n| b" \n,]".contains(n));
        if let (Some(s), true) = (start, at_end) {
            out.push(text[s..=i].to_owned());
            start = None;
        }
    }
    out
}
