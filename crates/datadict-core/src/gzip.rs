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
    let mut out = Vec::with_capacity(size_hint(data, max_bytes));
    let mut decoder = flate2::read::MultiGzDecoder::new(data).take((max_bytes as u64).saturating_add(1));
    decoder.read_to_end(&mut out)?;
    if out.len() > max_bytes {
        return Err(GzipError::TooLarge { max: max_bytes });
    }
    Ok(out)
}

/// The output size a gzip stream announces in its last four bytes (ISIZE: the size of its last
/// member modulo 2^32), as a capacity to start from, so that the output is not grown and copied a
/// dozen times on the way to its size. Only a hint: a stream may lie, so it is capped at
/// `max_bytes + 1` (what the caller accepts), and reading still stops at the real end.
fn size_hint(data: &[u8], max_bytes: usize) -> usize {
    let Some(tail) = data.len().checked_sub(4).map(|at| &data[at..]) else { return 0 };
    let announced = u32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]]) as usize;
    announced.min(max_bytes.saturating_add(1))
}

/// Decompresses a single gzip member without a size cap beyond `max_bytes`; for export archives
/// whose members are one gzip stream each.
pub fn gunzip_member(data: &[u8], max_bytes: usize) -> Result<Vec<u8>, GzipError> {
    let mut out = Vec::with_capacity(size_hint(data, max_bytes));
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

    /// The announced size only sizes the first allocation: a stream announcing more or less
    /// than it holds decompresses to what it holds, within the cap.
    #[test]
    fn the_announced_size_is_only_a_hint() {
        let data = b"{\"event\":\"e\"}\n".repeat(100);
        let packed = gzip(&data, 6);
        assert_eq!(size_hint(&packed, 1 << 20), data.len());
        assert_eq!(size_hint(&packed, 10), 11);
        assert_eq!(size_hint(b"\x1f\x8b", 10), 0);
        for announced in [0u32, 1, u32::MAX] {
            let mut lying = packed.clone();
            let at = lying.len() - 4;
            lying[at..].copy_from_slice(&announced.to_le_bytes());
            // flate2 checks the trailer: a wrong size is an invalid stream, never a wrong output.
            assert!(matches!(gunzip(&lying, 1 << 20), Err(GzipError::Invalid(_))), "{announced}");
        }
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
