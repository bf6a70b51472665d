//! Searching bytes eight at a time in a `u64` (portable: no SIMD, no `unsafe`, the same on wasm),
//! for the JSON scans that look for the end of a string: the splitter and the check's scanner.

const ONES: u64 = u64::from_le_bytes([1; 8]);
const HIGH: u64 = ONES << 7;

/// Flags (the high bit of a byte) the bytes of `word` equal to `byte`: the usual "a byte of
/// `word ^ pattern` is zero" trick. A flag may be wrong above a true one (a borrow), never below
/// it, so the lowest flag of a word is exact.
#[inline]
pub(crate) fn flag_byte(word: u64, byte: u8) -> u64 {
    let x = word ^ (ONES * u64::from(byte));
    x.wrapping_sub(ONES) & !x & HIGH
}

/// Flags the bytes of `word` below `limit` (at most 0x80), with the same lowest-flag guarantee.
#[inline]
pub(crate) fn flag_below(word: u64, limit: u8) -> u64 {
    word.wrapping_sub(ONES * u64::from(limit)) & !word & HIGH
}

/// The first byte flagged by `flags` in the whole eight-byte words of `bytes` from `at`, looking
/// at `max_words` words at most: `Ok(index)`, or `Err(index)` where the words ran out (fewer
/// than eight bytes left, or `max_words` searched) for the caller to go on byte by byte.
#[inline]
pub(crate) fn find_in_words(bytes: &[u8], mut at: usize, max_words: usize, flags: impl Fn(u64) -> u64) -> Result<usize, usize> {
    for _ in 0..max_words {
        let Some(word) = bytes.get(at..at + 8) else { break };
        let found = flags(u64::from_le_bytes(word.try_into().expect("eight bytes")));
        if found != 0 {
            return Ok(at + found.trailing_zeros() as usize / 8);
        }
        at += 8;
    }
    Err(at)
}
