//! Embedders: text in, unit-length vectors out.
//!
//! Two implementations: [`HashingEmbedder`] (deterministic feature hashing, no model; a test
//! double and a zero-dependency mode) and [`OnnxEmbedder`] (all-MiniLM-L6-v2 int8 through ONNX
//! Runtime). [`CachedEmbedder`] keeps computed vectors in a file in front of either. An
//! embedder's identity ([`EmbedderPins`]) is pinned in every store it writes; its
//! [`Calibration`] turns the cosines it gives into relevance scores.

mod cache;
mod calibration;
mod hashing;
#[cfg(feature = "onnx")]
mod onnx;
pub(crate) mod vector;

pub use cache::CachedEmbedder;
pub use calibration::Calibration;
pub use hashing::HashingEmbedder;
#[cfg(feature = "onnx")]
pub use onnx::{OnnxConfig, OnnxEmbedder};

use std::sync::Arc;

use crate::error::{Error, Result};

/// What a store must agree with to accept an embedder's vectors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbedderPins {
    /// Model name, e.g. `all-MiniLM-L6-v2-int8` or `hashing-v1`.
    pub name: String,
    /// Content hash of the model files (`none` for the hashing embedder).
    pub revision: String,
    /// Vector dimension.
    pub dim: usize,
    /// Hash of everything else that changes vectors: tokenizer, truncation, pooling, batching.
    pub template: String,
}

/// Turns texts into unit-length vectors of a fixed dimension.
///
/// Implementations must be deterministic: the same text gives the same bytes on every call
/// (within one build on one CPU type).
pub trait Embedder: Send + Sync {
    /// The identity that is pinned in stores this embedder writes.
    fn pins(&self) -> EmbedderPins;

    /// How this embedder's cosines map to relevance scores. The default is the measured
    /// calibration of the model the pins name ([`Calibration::of`]), the identity for any other.
    fn calibration(&self) -> Calibration {
        Calibration::of(&self.pins())
    }

    /// Embeds stored texts (rounds); one vector per text, in order.
    fn embed_documents(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>>;

    /// Embeds a question. The default embeds it as a document.
    fn embed_query(&self, text: &str) -> Result<Vec<f32>> {
        Ok(self.embed_documents(&[text])?.pop().unwrap_or_default())
    }

    /// Embeds several questions, one vector per text, in order: each exactly as
    /// [`embed_query`](Embedder::embed_query) would. The default embeds them one by one; an
    /// embedder that can batch them (with the same bits) does.
    fn embed_queries(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        texts.iter().map(|t| self.embed_query(t)).collect()
    }

    /// Drops anything kept about these document texts (a cache's entries), after the records
    /// they belonged to were deleted. The default keeps nothing, so does nothing.
    fn forget(&self, texts: &[&str]) -> Result<()> {
        let _ = texts;
        Ok(())
    }

    /// After [`forget`](Embedder::forget): leaves no forgotten byte in a log (a cache empties its
    /// write-ahead log). True when nothing is left; false when another connection's read kept
    /// the log. The default keeps nothing, so is done.
    fn checkpoint(&self) -> Result<bool> {
        Ok(true)
    }
}

/// A shared embedder is an embedder (so one can serve several stores).
impl<E: Embedder + ?Sized> Embedder for Arc<E> {
    fn pins(&self) -> EmbedderPins {
        (**self).pins()
    }
    fn calibration(&self) -> Calibration {
        (**self).calibration()
    }
    fn embed_documents(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        (**self).embed_documents(texts)
    }
    fn embed_query(&self, text: &str) -> Result<Vec<f32>> {
        (**self).embed_query(text)
    }
    fn embed_queries(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        (**self).embed_queries(texts)
    }
    fn forget(&self, texts: &[&str]) -> Result<()> {
        (**self).forget(texts)
    }
    fn checkpoint(&self) -> Result<bool> {
        (**self).checkpoint()
    }
}

/// Embeds `texts` as documents, checking that there is one vector per text, each of the store's
/// dimension `dim` (no call for no text).
pub(crate) fn documents(embedder: &dyn Embedder, texts: &[&str], dim: usize) -> Result<Vec<Vec<f32>>> {
    let vectors = if texts.is_empty() { Vec::new() } else { embedder.embed_documents(texts)? };
    if vectors.len() != texts.len() || vectors.iter().any(|v| v.len() != dim) {
        return Err(Error::Embedder(format!("expected {} vectors of dimension {dim}", texts.len())));
    }
    if vectors.iter().flatten().any(|x| !x.is_finite()) {
        return Err(non_finite());
    }
    Ok(vectors)
}

/// A question's vector from `embedder`, refused when it holds a NaN or an infinity (which would
/// rank one record above every other, or none).
pub(crate) fn query(embedder: &dyn Embedder, text: &str) -> Result<Vec<f32>> {
    let v = embedder.embed_query(text)?;
    if v.iter().any(|x| !x.is_finite()) {
        return Err(non_finite());
    }
    Ok(v)
}

fn non_finite() -> Error {
    Error::Embedder("the embedder returned a vector holding a value that is not a finite number".into())
}
