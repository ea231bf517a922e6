//! An on-disk cache of vectors, in front of any embedder.

use std::path::Path;
use std::sync::{Arc, Mutex};

use rusqlite::{params, Connection, OptionalExtension};

use super::{Embedder, EmbedderPins};
use crate::error::Result;

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
/// use mnemon::{CachedEmbedder, Embedder, HashingEmbedder};
/// # let dir = tempfile::tempdir().unwrap();
/// let cached = CachedEmbedder::open(dir.path().join("vectors.db"), Arc::new(HashingEmbedder::default()))?;
/// let a = cached.embed_documents(&["I live in Porto."])?;
/// assert_eq!(cached.embed_documents(&["I live in Porto."])?, a);
/// assert_eq!(cached.stats(), (1, 1));
/// # Ok::<(), mnemon::Error>(())
/// ```
pub struct CachedEmbedder {
    inner: Arc<dyn Embedder>,
    conn: Mutex<Connection>,
    prefix: [u8; 32],
    counts: Mutex<(u64, u64)>,
}

impl CachedEmbedder {
    /// Opens (creating if needed) the cache file at `path` in front of `inner`.
    pub fn open(path: impl AsRef<Path>, inner: Arc<dyn Embedder>) -> Result<CachedEmbedder> {
        let path = path.as_ref();
        let conn = crate::store::open_side_db(
            path,
            "CREATE TABLE IF NOT EXISTS vectors(key BLOB PRIMARY KEY, vector BLOB NOT NULL) WITHOUT ROWID;",
        )?;
        let p = inner.pins();
        let pins = serde_json::json!([p.name, p.revision, p.dim, p.template]).to_string();
        Ok(CachedEmbedder {
            prefix: *blake3::hash(pins.as_bytes()).as_bytes(),
            inner,
            conn: Mutex::new(conn),
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
        let mut out: Vec<Option<Vec<f32>>> = Vec::with_capacity(texts.len());
        {
            let conn = self.conn.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let mut stmt = conn.prepare_cached("SELECT vector FROM vectors WHERE key = ?1")?;
            for key in &keys {
                let blob: Option<Vec<u8>> = stmt.query_row([&key[..]], |r| r.get(0)).optional()?;
                out.push(blob.map(|b| crate::store::blob_vector(&b)));
            }
        }
        let missing: Vec<usize> = (0..texts.len()).filter(|i| out[*i].is_none()).collect();
        if !missing.is_empty() {
            let todo: Vec<&str> = missing.iter().map(|i| texts[*i]).collect();
            let fresh = compute(&todo)?;
            let mut conn = self.conn.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let tx = conn.transaction()?;
            {
                let mut insert =
                    tx.prepare_cached("INSERT OR IGNORE INTO vectors(key, vector) VALUES (?1, ?2)")?;
                for (i, v) in missing.iter().zip(fresh) {
                    insert.execute(params![&keys[*i][..], crate::store::vector_blob(&v)])?;
                    out[*i] = Some(v);
                }
            }
            tx.commit()?;
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
        let conn = self.conn.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut delete = conn.prepare_cached("DELETE FROM vectors WHERE key = ?1")?;
        for t in texts {
            delete.execute([&self.key(b'd', t)[..]])?;
        }
        self.inner.forget(texts)
    }

    fn checkpoint(&self) -> Result<bool> {
        let conn = self.conn.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let done = crate::store::truncate_wal(&conn)?;
        drop(conn);
        Ok(done && self.inner.checkpoint()?)
    }
}
