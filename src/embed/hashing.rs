//! Feature hashing: a deterministic embedder without a model.

use super::{Embedder, EmbedderPins, vector};
use crate::error::{Error, Result};

/// Signed feature hashing of lowercase word unigrams and bigrams (FNV-1a), L2-normalized.
///
/// Texts that share words get a positive cosine; there is no notion of meaning. Use it as an
/// explicit test double, or where no model may be installed.
///
/// ```
/// use mnemon::embed::{Embedder, HashingEmbedder};
/// let e = HashingEmbedder::new(256).unwrap();
/// let v = e.embed_documents(&["I moved to Lisbon", "moved to Lisbon last year", "pasta recipe"]).unwrap();
/// let cos = mnemon::internals::vector::cosine;
/// assert!(cos(&v[0], &v[1]) > cos(&v[0], &v[2]));
/// ```
#[derive(Debug, Clone)]
pub struct HashingEmbedder {
    dim: usize,
}

impl HashingEmbedder {
    /// Version of the feature scheme; part of the pins.
    pub const NAME: &'static str = "hashing-v1";

    /// An embedder of dimension `dim` (8..=4096).
    pub fn new(dim: usize) -> Result<HashingEmbedder> {
        if !(8..=4096).contains(&dim) {
            return Err(Error::InvalidConfig { field: "hashing.dim", reason: "must be in 8..=4096".into() });
        }
        Ok(HashingEmbedder { dim })
    }

    fn embed_one(&self, text: &str) -> Vec<f32> {
        let mut v = vec![0f32; self.dim];
        let lower = text.to_lowercase();
        let words: Vec<&str> =
            lower.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).collect();
        let mut add = |h: u64, weight: f32| {
            let i = (h % self.dim as u64) as usize;
            v[i] += if h >> 63 == 1 { -weight } else { weight };
        };
        for (i, w) in words.iter().enumerate() {
            add(fnv1a(&[w.as_bytes()]), 1.0);
            if let Some(next) = words.get(i + 1) {
                add(fnv1a(&[w.as_bytes(), b" ", next.as_bytes()]), 0.5);
            }
        }
        vector::normalize(&mut v);
        v
    }
}

impl Default for HashingEmbedder {
    fn default() -> Self {
        HashingEmbedder { dim: 384 }
    }
}

fn fnv1a(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for b in *part {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    // FNV-1a's top bit mixes poorly; fold low bits into it before it is used as the sign.
    h ^ (h << 31)
}

impl Embedder for HashingEmbedder {
    fn pins(&self) -> EmbedderPins {
        EmbedderPins {
            name: Self::NAME.to_owned(),
            revision: "none".to_owned(),
            dim: self.dim,
            template: "unigram+bigram/fnv1a/l2".to_owned(),
        }
    }

    fn embed_documents(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        Ok(texts.iter().map(|t| self.embed_one(t)).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_text_same_bits_and_unit_length() {
        let e = HashingEmbedder::default();
        let a = e.embed_documents(&["The user lives in Lisbon."]).unwrap();
        let b = e.embed_documents(&["The user lives in Lisbon."]).unwrap();
        assert_eq!(a, b);
        let norm: f32 = a[0].iter().map(|x| x * x).sum();
        assert!((norm - 1.0).abs() < 1e-5);
    }

    #[test]
    fn dimension_is_validated() {
        assert!(HashingEmbedder::new(4).is_err());
        assert_eq!(HashingEmbedder::new(64).unwrap().embed_documents(&["x"]).unwrap()[0].len(), 64);
    }
}
