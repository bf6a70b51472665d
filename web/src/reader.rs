//! Reading a `Blob` (a picked file, or pasted text wrapped in one) in fixed-size chunks through
//! `Blob.slice`, so that a file of several GB is never held in memory at once.

use wasm_bindgen_futures::JsFuture;
use web_sys::Blob;

/// The chunk size the import uses: large enough that per-chunk overhead is small, small enough
/// that memory stays flat.
pub const CHUNK_BYTES: f64 = 1024.0 * 1024.0;

/// Hands out a blob's bytes in order, one chunk per [`ChunkReader::next_chunk`].
#[derive(Debug, Clone)]
pub struct ChunkReader {
    blob: Blob,
    offset: f64,
    chunk: f64,
}

impl ChunkReader {
    pub fn new(blob: Blob, chunk_bytes: f64) -> Self {
        Self { blob, offset: 0.0, chunk: chunk_bytes.max(1.0) }
    }

    /// The blob's size in bytes.
    pub fn size(&self) -> f64 {
        self.blob.size()
    }

    /// How many bytes have been handed out.
    pub fn offset(&self) -> f64 {
        self.offset
    }

    /// The next chunk, or `None` at the end. Only this slice is read from disk.
    pub async fn next_chunk(&mut self) -> Result<Option<Vec<u8>>, String> {
        let size = self.blob.size();
        if self.offset >= size {
            return Ok(None);
        }
        let end = (self.offset + self.chunk).min(size);
        let slice = self.blob.slice_with_f64_and_f64(self.offset, end).map_err(|e| format!("the file cannot be sliced: {e:?}"))?;
        // The offset as an integer: an `f64` in a message would bring the standard library's float
        // formatting (about 7 KB gzipped) into the wasm, and nothing else of the app needs it.
        let buffer = JsFuture::from(slice.array_buffer())
            .await
            .map_err(|e| format!("the file could not be read at byte {}: {e:?}; pick it again", self.offset as u64))?;
        self.offset = end;
        Ok(Some(js_sys::Uint8Array::new(&buffer).to_vec()))
    }
}

/// Wraps text in a `Blob`, so that pasted input goes through the same chunked path as a file.
pub fn text_blob(text: &str) -> Result<Blob, String> {
    let parts = js_sys::Array::of1(&wasm_bindgen::JsValue::from_str(text));
    Blob::new_with_str_sequence(&parts).map_err(|e| format!("{e:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_bindgen_test::wasm_bindgen_test;

    #[wasm_bindgen_test]
    async fn a_blob_is_read_in_chunks_that_join_to_the_whole() {
        // Multi-byte characters make sure chunk edges fall inside a UTF-8 sequence.
        let text: String = (0..500).map(|i| format!("{{\"event\":\"é{i}\"}}\n")).collect();
        let mut reader = ChunkReader::new(text_blob(&text).unwrap(), 7.0);
        assert_eq!(reader.size() as usize, text.len());
        let mut joined = Vec::new();
        let mut chunks = 0;
        while let Some(chunk) = reader.next_chunk().await.unwrap() {
            assert!(chunk.len() <= 7);
            joined.extend_from_slice(&chunk);
            chunks += 1;
        }
        assert_eq!(chunks, text.len().div_ceil(7));
        assert_eq!(String::from_utf8(joined).unwrap(), text);
        assert_eq!(reader.next_chunk().await.unwrap(), None);
    }

    #[wasm_bindgen_test]
    async fn chunks_feed_the_core_batcher_with_line_numbers_intact() {
        let mut text = String::new();
        for i in 0..30 {
            if i == 11 {
                text.push_str("{\"event\":\"bad\"}\n");
            } else {
                text.push_str(&format!(
                    "{{\"event\":\"E\",\"properties\":{{\"time\":1700000000000,\"distinct_id\":\"u{i}\",\"$insert_id\":\"id-{i}\"}}}}\n"
                ));
            }
        }
        let mut reader = ChunkReader::new(text_blob(&text).unwrap(), 13.0);
        let options = datadict_core::BatchOptions { now_ms: 1_700_000_000_000, gzip_level: None, ..Default::default() };
        let mut batcher = datadict_core::Batcher::new(options);
        while let Some(chunk) = reader.next_chunk().await.unwrap() {
            batcher.push(&chunk).unwrap();
        }
        batcher.finish().unwrap();
        let rejected = batcher.take_rejected();
        assert_eq!(rejected.len(), 1);
        assert_eq!(rejected[0].pos.line, 12);
        assert_eq!(batcher.next_batch().unwrap().events(), 29);
    }
}
