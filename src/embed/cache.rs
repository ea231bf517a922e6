//! An on-disk cache of vectors, in front of any embedder.

use std::path::Path;
use std::sync::{Arc, Mutex};

use super::{Embedder, EmbedderPins};
use crate::error::Result;
use crate::store::side::VectorFile;

/// Remembers every vector its embedder computes, in a SQLite file keyed by blake3 over the
/// embedder's pins, the text's kind (document or query) and the text.
///
/// The embedder is deterministic, so a cached vector is the vector it would compute again: a
/// store built through the cache is byte-identical to one built without it. The cache is shared
/// safely between processes (WAL, busy timeout, insert-or-ignore) and between embedders (their
/// pins are part of every key). Its pins are the inner embedder's.
///
/// ```
/// use std::sync::Arc;
/// use mnemon::embed::{CachedEmbedder, Embedder, HashingEmbedder};
/// # let dir = tempfile::tempdir().unwrap();
/// let cached = CachedEmbedder::open(dir.path().join("vectors.db"), Arc::new(HashingEmbedder::default()))?;
/// let a = cached.embed_documents(&["I live in Porto."])?;
/// assert_eq!(cached.embed_documents(&["I live in Porto."])?, a);
/// assert_eq!(cached.stats(), (1, 1));
/// # Ok::<(), mnemon::Error>(())
/// ```
pub struct CachedEmbedder {
    inner: Arc<dyn Embedder>,
    file: VectorFile,
    prefix: [u8; 32],
    counts: Mutex<(u64, u64)>,
}

impl CachedEmbedder {
    /// Opens (creating if needed) the cache file at `path` in front of `inner`.
    pub fn open(path: impl AsRef<Path>, inner: Arc<dyn Embedder>) -> Result<CachedEmbedder> {
        let file = VectorFile::open(path.as_ref())?;
        let p = inner.pins();
        let pins = serde_json::json!([p.name, p.revision, p.dim, p.template]).to_string();
        Ok(CachedEmbedder {
            prefix: *blake3::hash(pins.as_bytes()).as_bytes(),
            inner,
            file,
            counts: Mutex::new((0, 0)),
        })
    }

    /// `(hits, misses)` since this cache was opened.
    pub fn stats(&self) -> (u64, u64) {
        *self.counts.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn key(&self, kind: u8, text: &str) -> [u8; 32] {
        let mut h = blake3::Hasher::new();
        h.update(&self.prefix);
        h.update(&[kind]);
        h.update(text.as_bytes());
        *h.finalize().as_bytes()
    }

    fn cached(
        &self,
        kind: u8,
        texts: &[&str],
        compute: impl Fn(&[&str]) -> Result<Vec<Vec<f32>>>,
    ) -> Result<Vec<Vec<f32>>> {
        let keys: Vec<[u8; 32]> = texts.iter().map(|t| self.key(kind, t)).collect();
        let mut out = self.file.get(&keys)?;
        let missing: Vec<usize> = (0..texts.len()).filter(|i| out[*i].is_none()).collect();
        if !missing.is_empty() {
            let todo: Vec<&str> = missing.iter().map(|i| texts[*i]).collect();
            let fresh = compute(&todo)?;
            let entries: Vec<(&[u8; 32], &[f32])> =
                missing.iter().zip(&fresh).map(|(i, v)| (&keys[*i], v.as_slice())).collect();
            self.file.put(&entries)?;
            for (i, v) in missing.iter().zip(fresh) {
                out[*i] = Some(v);
            }
        }
        let mut counts = self.counts.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        counts.0 += (texts.len() - missing.len()) as u64;
        counts.1 += missing.len() as u64;
        Ok(out.into_iter().map(Option::unwrap_or_default).collect())
    }
}

impl Embedder for CachedEmbedder {
    fn pins(&self) -> EmbedderPins {
        self.inner.pins()
    }

    fn calibration(&self) -> super::Calibration {
        self.inner.calibration()
    }

    fn embed_documents(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        self.cached(b'd', texts, |t| self.inner.embed_documents(t))
    }

    fn embed_query(&self, text: &str) -> Result<Vec<f32>> {
        Ok(self.embed_queries(&[text])?.remove(0))
    }

    fn embed_queries(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        self.cached(b'q', texts, |t| self.inner.embed_queries(t))
    }

    fn forget(&self, texts: &[&str]) -> Result<()> {
        let keys: Vec<[u8; 32]> = texts.iter().map(|t| self.key(b'd', t)).collect();
        self.file.remove(&keys)?;
        self.inner.forget(texts)
    }

    fn checkpoint(&self) -> Result<bool> {
        Ok(self.file.checkpoint()? && self.inner.checkpoint()?)
    }
}
