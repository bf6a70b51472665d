//! A small reader of zip archives held in memory, enough for the source tool's export archive:
//! the central directory (zip64 included), then one member at a time, stored or deflated, checked
//! against its size and CRC-32. Written here rather than taken from the `zip` crate because the web
//! app migrates in the browser, and that crate's general reader was a tenth of the app's wasm.

use flate2::read::DeflateDecoder;
use std::io::Read;

/// Why an archive or one of its members cannot be read; the message says what was found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ZipError(pub &'static str);

/// One member as the central directory describes it.
#[derive(Debug, Clone)]
struct Entry {
    name: String,
    flags: u16,
    method: u16,
    crc: u32,
    compressed: u64,
    size: u64,
    local_offset: u64,
}

/// An archive's central directory over its bytes.
#[derive(Debug)]
pub struct ZipReader<'a> {
    bytes: &'a [u8],
    entries: Vec<Entry>,
}

const END: u32 = 0x0605_4b50;
const END64: u32 = 0x0606_4b50;
const END64_LOCATOR: u32 = 0x0706_4b50;
const CENTRAL: u32 = 0x0201_4b50;
const LOCAL: u32 = 0x0403_4b50;
/// A 32-bit field holding this value says the real one is in the zip64 records.
const FULL32: u64 = 0xFFFF_FFFF;

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at.checked_add(2)?)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at.checked_add(4)?)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at.checked_add(8)?)?.try_into().ok()?))
}

fn usize_of(n: u64) -> Result<usize, ZipError> {
    usize::try_from(n).map_err(|_| ZipError("a record points beyond what this machine can address"))
}

/// The end-of-central-directory record's offset: the last signature whose comment ends the file.
fn find_end(b: &[u8]) -> Result<usize, ZipError> {
    let last = b.len().checked_sub(22).ok_or(ZipError("the data is too short to be a zip archive"))?;
    let first = last.saturating_sub(0xFFFF);
    (first..=last)
        .rev()
        .find(|&at| u32_at(b, at) == Some(END) && u16_at(b, at + 20).is_some_and(|c| at + 22 + c as usize <= b.len()))
        .ok_or(ZipError("no end of central directory record was found"))
}

impl<'a> ZipReader<'a> {
    /// Reads the central directory; members are read later, one at a time.
    pub fn new(bytes: &'a [u8]) -> Result<Self, ZipError> {
        let short = ZipError("the central directory is cut short");
        let end = find_end(bytes)?;
        if u16_at(bytes, end + 4) != Some(0) || u16_at(bytes, end + 6) != Some(0) {
            return Err(ZipError("the archive is split over several files, which is not supported"));
        }
        let mut count = u64::from(u16_at(bytes, end + 10).ok_or(short.clone())?);
        let mut cd_size = u64::from(u32_at(bytes, end + 12).ok_or(short.clone())?);
        let mut cd_offset = u64::from(u32_at(bytes, end + 16).ok_or(short.clone())?);
        if count == 0xFFFF || cd_size == FULL32 || cd_offset == FULL32 {
            // Zip64: the locator sits just before the record and points at the zip64 record.
            let locator = end.checked_sub(20).filter(|&at| u32_at(bytes, at) == Some(END64_LOCATOR));
            if let Some(locator) = locator {
                let record = usize_of(u64_at(bytes, locator + 8).ok_or(short.clone())?)?;
                if u32_at(bytes, record) != Some(END64) {
                    return Err(ZipError("the zip64 end of central directory record is missing"));
                }
                count = u64_at(bytes, record + 32).ok_or(short.clone())?;
                cd_size = u64_at(bytes, record + 40).ok_or(short.clone())?;
                cd_offset = u64_at(bytes, record + 48).ok_or(short.clone())?;
            }
        }
        let start = usize_of(cd_offset)?;
        let dir = start.checked_add(usize_of(cd_size)?).and_then(|stop| bytes.get(start..stop)).ok_or(short.clone())?;
        // Each entry takes at least 46 bytes: a count the directory cannot hold is not trusted.
        let mut entries = Vec::with_capacity(usize_of(count)?.min(dir.len() / 46));
        let mut at = 0;
        for _ in 0..count {
            entries.push(read_entry(dir, &mut at).ok_or(short.clone())??);
        }
        Ok(Self { bytes, entries })
    }

    /// The number of members, directories included.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The members' names in the directory's order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|e| e.name.as_str())
    }

    /// The member named `name`, uncompressed.
    pub fn read(&self, name: &str) -> Result<Vec<u8>, ZipError> {
        let e = self.entries.iter().find(|e| e.name == name).ok_or(ZipError("the archive has no member of that name"))?;
        if e.flags & 1 != 0 {
            return Err(ZipError("the member is encrypted, which is not supported"));
        }
        let truncated = ZipError("the member's data is cut short");
        let local = usize_of(e.local_offset)?;
        if u32_at(self.bytes, local) != Some(LOCAL) {
            return Err(ZipError("the member's local header is missing"));
        }
        let name_len = u16_at(self.bytes, local + 26).ok_or(truncated.clone())? as usize;
        let extra_len = u16_at(self.bytes, local + 28).ok_or(truncated.clone())? as usize;
        let start = local + 30 + name_len + extra_len;
        let data = start.checked_add(usize_of(e.compressed)?).and_then(|stop| self.bytes.get(start..stop)).ok_or(truncated)?;
        let size = usize_of(e.size)?;
        let out = match e.method {
            0 => data.to_vec(),
            8 => {
                let mut out = Vec::with_capacity(size.min(64 << 20));
                DeflateDecoder::new(data)
                    .take(e.size.saturating_add(1))
                    .read_to_end(&mut out)
                    .map_err(|_| ZipError("the member's deflated data is corrupt"))?;
                out
            }
            _ => return Err(ZipError("the member uses a compression method other than stored or deflated")),
        };
        if out.len() != size {
            return Err(ZipError("the member's size differs from the central directory's"));
        }
        let mut crc = flate2::Crc::new();
        crc.update(&out);
        if crc.sum() != e.crc {
            return Err(ZipError("the member's CRC-32 differs from the central directory's: the archive is corrupt"));
        }
        Ok(out)
    }
}

/// One central directory entry at `*at`, moving `*at` past it; `None` when the directory ends
/// inside it.
fn read_entry(dir: &[u8], at: &mut usize) -> Option<Result<Entry, ZipError>> {
    let h = *at;
    if u32_at(dir, h)? != CENTRAL {
        return Some(Err(ZipError("a central directory entry has a wrong signature")));
    }
    let (name_len, extra_len, comment_len) = (u16_at(dir, h + 28)? as usize, u16_at(dir, h + 30)? as usize, u16_at(dir, h + 32)? as usize);
    let flags = u16_at(dir, h + 8)?;
    let raw_name = dir.get(h + 46..h + 46 + name_len)?;
    let extra = dir.get(h + 46 + name_len..h + 46 + name_len + extra_len)?;
    *at = h + 46 + name_len + extra_len + comment_len;
    dir.get(..*at)?;
    // Names are UTF-8 when flag bit 11 says so, and in practice ASCII otherwise.
    let name = String::from_utf8_lossy(raw_name).into_owned();
    let mut e = Entry {
        name,
        flags,
        method: u16_at(dir, h + 10)?,
        crc: u32_at(dir, h + 16)?,
        compressed: u64::from(u32_at(dir, h + 20)?),
        size: u64::from(u32_at(dir, h + 24)?),
        local_offset: u64::from(u32_at(dir, h + 42)?),
    };
    // The zip64 extra field holds, in this order, each of the three that is full in 32 bits.
    let mut x = 0;
    while let (Some(id), Some(len)) = (u16_at(extra, x), u16_at(extra, x + 2)) {
        let body = extra.get(x + 4..x + 4 + len as usize)?;
        if id == 1 {
            let mut fields = body.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap_or_default()));
            for field in [&mut e.size, &mut e.compressed, &mut e.local_offset] {
                if *field == FULL32 {
                    *field = fields.next()?;
                }
            }
        }
        x += 4 + len as usize;
    }
    Some(Ok(e))
}

#[cfg(test)]
mod tests;
