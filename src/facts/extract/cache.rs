//! [`CachedExtractor`]: model outputs kept in a SQLite file, so that a round is sent to the model
//! once, whichever store, process or run meets it.

use std::path::Path;
use std::sync::Mutex;

use super::{Extraction, Extractor, ExtractorPins};
use crate::error::Result;
use crate::model::round::Turn;
use crate::store::Pins;
use crate::store::side::OutputFile;

/// An extractor in front of a cache file stamped with its pins.
///
/// The key is blake3 over the canonical turns (role and content in order; timestamps are not
/// part of it), so identical rounds anywhere share one model call. A hit re-parses the stored
/// raw output through the current parser. A file filled under other pins is refused with
/// [`Error::PinMismatch`] naming every differing pin. Several processes may share the file (WAL,
/// a busy timeout, insert-or-ignore; the extractor is deterministic, so a race stores the same
/// bytes twice at most).
pub struct CachedExtractor<E: Extractor> {
    inner: E,
    file: OutputFile,
    counts: Mutex<(u64, u64)>,
}

fn pin_map(p: &ExtractorPins) -> Vec<(&'static str, String)> {
    vec![
        ("extractor.name", p.name.clone()),
        ("extractor.model_blake3", p.model_blake3.clone()),
        ("extractor.quant", p.quant.clone()),
        ("extractor.runtime", p.runtime.clone()),
        ("extractor.decode", p.decode.clone()),
        ("extractor.prompt", p.prompt.clone()),
    ]
}

/// The cache key of a round.
pub fn round_key(turns: &[Turn]) -> String {
    let canonical: Vec<[&str; 2]> = turns.iter().map(|t| [t.role.as_str(), t.content.as_str()]).collect();
    blake3::hash(serde_json::to_string(&canonical).unwrap_or_default().as_bytes()).to_hex().to_string()
}

impl<E: Extractor> CachedExtractor<E> {
    /// Opens (creating and stamping if new) the cache at `path` in front of `inner`.
    pub fn open(path: impl AsRef<Path>, inner: E) -> Result<CachedExtractor<E>> {
        let expected = Pins(pin_map(&inner.pins()).into_iter().map(|(k, v)| (k.to_string(), v)).collect());
        let file = OutputFile::open(path.as_ref(), &expected)?;
        Ok(CachedExtractor { inner, file, counts: Mutex::new((0, 0)) })
    }

    /// `(hits, misses)` since opening.
    pub fn stats(&self) -> (u64, u64) {
        *self.counts.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The extractor behind the cache.
    pub fn inner(&self) -> &E {
        &self.inner
    }

    /// The stored output for `key`, re-parsed through the current parser (counted as a hit).
    fn lookup(&self, key: &str, turns: &[Turn]) -> Result<Option<Extraction>> {
        let hit = self.file.get(key)?;
        let mut counts = self.counts.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        Ok(match hit {
            Some(o) => {
                counts.0 += 1;
                Some(Extraction::from_contract_output(
                    self.inner.contract(),
                    turns,
                    o.raw,
                    o.stopped,
                    o.prompt_tokens as usize,
                    o.generated_tokens as usize,
                ))
            }
            None => None,
        })
    }

    /// Stores a fresh output under `key` (counted as a miss).
    fn keep(&self, key: &str, turns: &[Turn], fresh: &Extraction) -> Result<()> {
        self.counts.lock().unwrap_or_else(std::sync::PoisonError::into_inner).1 += 1;
        // A decode that stopped at the bound is flagged truncated whatever its text; keep that.
        let stopped = fresh.truncated && self.inner.contract().parse(&fresh.raw_output, turns).is_some();
        self.file.put(
            key,
            &fresh.raw_output,
            stopped,
            (fresh.prompt_tokens as i64, fresh.generated_tokens as i64),
        )
    }
}

impl<E: Extractor> Extractor for CachedExtractor<E> {
    fn pins(&self) -> ExtractorPins {
        self.inner.pins()
    }

    fn extract(&self, turns: &[Turn]) -> Result<Extraction> {
        self.extract_cancellable(turns, &std::sync::atomic::AtomicBool::new(false))
    }

    fn extract_cancellable(
        &self,
        turns: &[Turn],
        cancel: &std::sync::atomic::AtomicBool,
    ) -> Result<Extraction> {
        let key = round_key(turns);
        if let Some(hit) = self.lookup(&key, turns)? {
            return Ok(hit);
        }
        let fresh = self.inner.extract_cancellable(turns, cancel)?;
        self.keep(&key, turns, &fresh)?;
        Ok(fresh)
    }

    /// The rounds the cache holds come from it; the others go to the model together.
    fn extract_batch(
        &self,
        rounds: &[&[Turn]],
        cancel: &std::sync::atomic::AtomicBool,
    ) -> Result<Vec<Result<Extraction>>> {
        let keys: Vec<String> = rounds.iter().map(|t| round_key(t)).collect();
        let mut out: Vec<Option<Result<Extraction>>> = Vec::with_capacity(rounds.len());
        let mut missing = Vec::new();
        for (i, key) in keys.iter().enumerate() {
            let hit = self.lookup(key, rounds[i])?;
            if hit.is_none() {
                missing.push(i);
            }
            out.push(hit.map(Ok));
        }
        if !missing.is_empty() {
            let turns: Vec<&[Turn]> = missing.iter().map(|&i| rounds[i]).collect();
            let fresh = self.inner.extract_batch(&turns, cancel)?;
            for (&i, outcome) in missing.iter().zip(fresh) {
                if let Ok(extraction) = &outcome {
                    self.keep(&keys[i], rounds[i], extraction)?;
                }
                out[i] = Some(outcome);
            }
        }
        Ok(out.into_iter().map(|o| o.expect("every round answered")).collect())
    }

    fn contract(&self) -> super::Contract {
        self.inner.contract()
    }

    fn batch_size(&self) -> usize {
        self.inner.batch_size()
    }

    fn forget(&self, turns: &[Turn]) -> Result<()> {
        self.file.remove(&round_key(turns))?;
        self.inner.forget(turns)
    }

    fn checkpoint(&self) -> Result<bool> {
        Ok(self.file.checkpoint()? && self.inner.checkpoint()?)
    }
}
