//! Gzip in and out of memory (flate2 with its pure-Rust miniz_oxide backend, so it builds for
//! wasm32). Decompression is capped, so a small hostile body cannot expand without bound.

use flate2::read::GzDecoder;
use flate2::write::GzEncoder;
use flate2::Compression;
use std::io::{Read, Write};

/// The two magic bytes every gzip member starts with.
pub const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// Why a gzip body could not be read.
#[derive(Debug, thiserror::Error)]
pub enum GzipError {
    #[error("the body is not valid gzip ({0}); compress it with gzip or drop `Content-Encoding: gzip`")]
    Invalid(#[from] std::io::Error),
    #[error("the body expands to more than {max} bytes; send at most {max} bytes of uncompressed JSON per request")]
    TooLarge { max: usize },
}

/// Whether `data` starts like a gzip stream.
pub fn is_gzip(data: &[u8]) -> bool {
    data.starts_with(&GZIP_MAGIC)
}

/// Compresses `data` at `level` (0–9; 1 is fastest, 6 the usual default, 9 the smallest).
pub fn gzip(data: &[u8], level: u32) -> Vec<u8> {
    let mut encoder = GzEncoder::new(Vec::with_capacity(data.len() / 4 + 64), Compression::new(level.min(9)));
    // Writing into a Vec cannot fail.
    encoder.write_all(data).expect("writing to memory");
    encoder.finish().expect("writing to memory")
}

/// Decompresses a gzip body (several concatenated members are read as one stream, as `gunzip`
/// does), failing once the output would exceed `max_bytes`.
pub fn gunzip(data: &[u8], max_bytes: usize) -> Result<Vec<u8>, GzipError> {
    let mut out = Vec::new();
    let mut decoder = flate2::read::MultiGzDecoder::new(data).take((max_bytes as u64).saturating_add(1));
    decoder.read_to_end(&mut out)?;
    if out.len() > max_bytes {
        return Err(GzipError::TooLarge { max: max_bytes });
    }
    Ok(out)
}

/// Decompresses a single gzip member without a size cap beyond `max_bytes`; for export archives
/// whose members are one gzip stream each.
pub fn gunzip_member(data: &[u8], max_bytes: usize) -> Result<Vec<u8>, GzipError> {
    let mut out = Vec::new();
    GzDecoder::new(data).take((max_bytes as u64).saturating_add(1)).read_to_end(&mut out)?;
    if out.len() > max_bytes {
        return Err(GzipError::TooLarge { max: max_bytes });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_at_every_level() {
        let data = b"{\"event\":\"e\"}\n".repeat(1000);
        for level in 0..=9 {
            let packed = gzip(&data, level);
            assert!(is_gzip(&packed));
            assert_eq!(gunzip(&packed, data.len()).unwrap(), data, "level {level}");
        }
        let mut two = gzip(b"ab", 6);
        two.extend(gzip(b"cd", 1));
        assert_eq!(gunzip(&two, 10).unwrap(), b"abcd");
        assert_eq!(gunzip_member(&two, 10).unwrap(), b"ab");
    }

    #[test]
    fn caps_and_garbage_are_errors() {
        let packed = gzip(&[b'x'; 1000], 6);
        assert!(matches!(gunzip(&packed, 999), Err(GzipError::TooLarge { max: 999 })));
        assert_eq!(gunzip(&packed, 1000).unwrap().len(), 1000);
        let err = gunzip(b"\x1f\x8bnot gzip at all", 100).unwrap_err();
        assert!(matches!(err, GzipError::Invalid(_)), "{err}");
        assert!(!is_gzip(b"[]"));
    }
}
