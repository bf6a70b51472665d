//! Tests of the zip reader against archives written by the `zip` crate: stored, deflated and zip64
//! members, directories, and archives that are cut short, corrupt or not zip at all.

use super::*;
use std::io::{Cursor, Write};
use zip::write::SimpleFileOptions;
use zip::CompressionMethod;

fn write(members: &[(&str, &[u8])], options: SimpleFileOptions) -> Vec<u8> {
    let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
    zip.set_comment("an archive comment moves the end record away from the file's end").unwrap();
    for (name, data) in members {
        if name.ends_with('/') {
            zip.add_directory(*name, options).unwrap();
        } else {
            zip.start_file(*name, options).unwrap();
            zip.write_all(data).unwrap();
        }
    }
    zip.finish().unwrap().into_inner()
}

fn text(n: usize) -> Vec<u8> {
    (0..n).flat_map(|i| format!("{{\"line\":{i}}}\n").into_bytes()).collect()
}

#[test]
fn stored_deflated_and_zip64_members_read_back() {
    let (a, b) = (text(2_000), text(3));
    let stored = SimpleFileOptions::default().compression_method(CompressionMethod::Stored);
    let deflated = SimpleFileOptions::default().compression_method(CompressionMethod::Deflated);
    for options in [stored, deflated, deflated.large_file(true)] {
        let bytes = write(&[("d/", b""), ("d/a.json", &a), ("d/b.json", &b), ("d/empty", b"")], options);
        let zip = ZipReader::new(&bytes).unwrap();
        assert_eq!(zip.len(), 4);
        assert_eq!(zip.names().collect::<Vec<_>>(), ["d/", "d/a.json", "d/b.json", "d/empty"]);
        assert_eq!(zip.read("d/a.json").unwrap(), a);
        assert_eq!(zip.read("d/b.json").unwrap(), b);
        assert_eq!(zip.read("d/empty").unwrap(), b"");
        assert!(zip.read("d/none").is_err());
    }
}

#[test]
fn an_empty_archive_has_no_members() {
    let bytes = write(&[], SimpleFileOptions::default());
    let zip = ZipReader::new(&bytes).unwrap();
    assert!(zip.is_empty());
}

#[test]
fn what_is_not_a_whole_zip_is_refused() {
    assert!(ZipReader::new(b"").is_err());
    assert!(ZipReader::new(b"not a zip archive, only some text that is long enough").is_err());
    let bytes = write(&[("a.json", &text(500))], SimpleFileOptions::default());
    // Every cut of the archive fails to open or fails on the member; none reads wrong data.
    for cut in 0..bytes.len() {
        if let Ok(zip) = ZipReader::new(&bytes[..cut]) {
            assert!(zip.read("a.json").is_err(), "cut at {cut}");
        }
    }
}

#[test]
fn a_corrupt_member_is_an_error() {
    let a = text(50);
    let stored = SimpleFileOptions::default().compression_method(CompressionMethod::Stored);
    let mut bytes = write(&[("a.json", &a)], stored);
    let at = bytes.windows(a.len()).position(|w| w == a).unwrap();
    bytes[at + 3] ^= 1;
    let zip = ZipReader::new(&bytes).unwrap();
    assert_eq!(zip.read("a.json").unwrap_err(), ZipError("the member's CRC-32 differs from the central directory's: the archive is corrupt"));
}
