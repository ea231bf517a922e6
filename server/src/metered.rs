//! An embedder that records its latency in the metrics.

use std::sync::Arc;

use mnemon::{Embedder, EmbedderPins};

/// Wraps an embedder; vectors and pins are unchanged.
pub struct Metered(pub Arc<dyn Embedder>);

impl Embedder for Metered {
    fn pins(&self) -> EmbedderPins {
        self.0.pins()
    }

    fn embed_documents(&self, texts: &[&str]) -> mnemon::Result<Vec<Vec<f32>>> {
        let started = crate::stopwatch();
        let out = self.0.embed_documents(texts);
        metrics::histogram!("mnemon_embed_seconds", "kind" => "documents")
            .record(started.elapsed().as_secs_f64());
        out
    }

    fn embed_query(&self, text: &str) -> mnemon::Result<Vec<f32>> {
        let started = crate::stopwatch();
        let out = self.0.embed_query(text);
        metrics::histogram!("mnemon_embed_seconds", "kind" => "query")
            .record(started.elapsed().as_secs_f64());
        out
    }

    fn forget(&self, texts: &[&str]) -> mnemon::Result<()> {
        self.0.forget(texts)
    }
}
