//! The embedder as a server uses it: questions and documents that arrive together embedded in
//! one batch ([`Batched`]), and every call's latency in the metrics ([`Metered`]). Vectors and
//! pins are unchanged: a text embeds to the same bits alone or in a batch.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Condvar, Mutex};

use mnemon::embed::{Calibration, Embedder, EmbedderPins};

/// Records each call's latency (queueing included) in `mnemon_embed_seconds`.
pub struct Metered(pub Arc<dyn Embedder>);

impl Embedder for Metered {
    fn pins(&self) -> EmbedderPins {
        self.0.pins()
    }

    fn calibration(&self) -> Calibration {
        self.0.calibration()
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

    fn embed_queries(&self, texts: &[&str]) -> mnemon::Result<Vec<Vec<f32>>> {
        self.0.embed_queries(texts)
    }

    fn forget(&self, texts: &[&str]) -> mnemon::Result<()> {
        self.0.forget(texts)
    }

    fn checkpoint(&self) -> mnemon::Result<bool> {
        self.0.checkpoint()
    }
}

/// Most texts in one batch.
const MAX_BATCH: usize = 64;

/// Batches concurrent calls: a caller that finds nobody embedding becomes the leader and embeds
/// every waiting call of its kind (questions or documents) in one call of the inner embedder, then
/// hands each caller its vectors; the others wait. No timer: a batch is whatever arrived while
/// the previous one ran.
pub struct Batched {
    inner: Arc<dyn Embedder>,
    state: Mutex<State>,
    done: Condvar,
}

#[derive(Default)]
struct State {
    queue: VecDeque<Job>,
    results: HashMap<u64, Result<Vec<Vec<f32>>, String>>,
    leading: bool,
    next: u64,
}

struct Job {
    id: u64,
    query: bool,
    texts: Vec<String>,
}

impl Batched {
    /// Batches calls to `inner`.
    pub fn new(inner: Arc<dyn Embedder>) -> Batched {
        Batched { inner, state: Mutex::default(), done: Condvar::new() }
    }

    fn run(&self, query: bool, texts: &[&str]) -> mnemon::Result<Vec<Vec<f32>>> {
        let lock = || self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut state = lock();
        let id = state.next;
        state.next += 1;
        state.queue.push_back(Job { id, query, texts: texts.iter().map(|t| (*t).to_owned()).collect() });
        loop {
            if let Some(result) = state.results.remove(&id) {
                return result.map_err(mnemon::Error::Embedder);
            }
            if state.leading {
                state = self.done.wait(state).unwrap_or_else(std::sync::PoisonError::into_inner);
                continue;
            }
            // Lead: every waiting job of the first job's kind, up to the batch size.
            state.leading = true;
            let kind = state.queue.front().map_or(query, |j| j.query);
            let (mut batch, mut rest, mut n) = (Vec::new(), VecDeque::new(), 0);
            while let Some(job) = state.queue.pop_front() {
                if job.query == kind && (n == 0 || n + job.texts.len() <= MAX_BATCH) {
                    n += job.texts.len();
                    batch.push(job);
                } else {
                    rest.push_back(job);
                }
            }
            state.queue = rest;
            drop(state);
            let texts: Vec<&str> = batch.iter().flat_map(|j| j.texts.iter().map(String::as_str)).collect();
            metrics::histogram!("mnemon_embed_batch_texts").record(texts.len() as f64);
            // A panic in the embedder fails this batch's callers, not every later one: the
            // leader's seat must be given back.
            let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                if kind {
                    self.inner.embed_queries(&texts)
                } else {
                    self.inner.embed_documents(&texts)
                }
            }))
            .unwrap_or_else(|_| Err(mnemon::Error::Embedder("the embedder panicked".into())));
            state = lock();
            match out {
                Ok(mut vectors) if vectors.len() == texts.len() => {
                    for job in batch.iter().rev() {
                        let tail = vectors.split_off(vectors.len() - job.texts.len());
                        state.results.insert(job.id, Ok(tail));
                    }
                }
                Ok(vectors) => {
                    let e = format!("{} vectors for {} texts", vectors.len(), texts.len());
                    batch.iter().for_each(|j| drop(state.results.insert(j.id, Err(e.clone()))));
                }
                Err(e) => batch.iter().for_each(|j| drop(state.results.insert(j.id, Err(e.to_string())))),
            }
            state.leading = false;
            self.done.notify_all();
        }
    }
}

impl Embedder for Batched {
    fn pins(&self) -> EmbedderPins {
        self.inner.pins()
    }

    fn calibration(&self) -> Calibration {
        self.inner.calibration()
    }

    fn embed_documents(&self, texts: &[&str]) -> mnemon::Result<Vec<Vec<f32>>> {
        self.run(false, texts)
    }

    fn embed_query(&self, text: &str) -> mnemon::Result<Vec<f32>> {
        Ok(self.run(true, &[text])?.pop().unwrap_or_default())
    }

    fn embed_queries(&self, texts: &[&str]) -> mnemon::Result<Vec<Vec<f32>>> {
        self.run(true, texts)
    }

    fn forget(&self, texts: &[&str]) -> mnemon::Result<()> {
        self.inner.forget(texts)
    }

    fn checkpoint(&self) -> mnemon::Result<bool> {
        self.inner.checkpoint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mnemon::embed::HashingEmbedder;
    use std::sync::Mutex;

    /// Records every call that has a default a wrapper could silently fall back to.
    #[derive(Default)]
    struct Probe {
        calls: Mutex<Vec<&'static str>>,
    }

    impl Embedder for Probe {
        fn pins(&self) -> EmbedderPins {
            HashingEmbedder::default().pins()
        }
        fn embed_documents(&self, texts: &[&str]) -> mnemon::Result<Vec<Vec<f32>>> {
            self.calls.lock().unwrap().push("embed_documents");
            HashingEmbedder::default().embed_documents(texts)
        }
        fn embed_query(&self, text: &str) -> mnemon::Result<Vec<f32>> {
            self.calls.lock().unwrap().push("embed_query");
            HashingEmbedder::default().embed_query(text)
        }
        fn embed_queries(&self, texts: &[&str]) -> mnemon::Result<Vec<Vec<f32>>> {
            self.calls.lock().unwrap().push("embed_queries");
            HashingEmbedder::default().embed_queries(texts)
        }
        fn forget(&self, _: &[&str]) -> mnemon::Result<()> {
            self.calls.lock().unwrap().push("forget");
            Ok(())
        }
        fn checkpoint(&self) -> mnemon::Result<bool> {
            self.calls.lock().unwrap().push("checkpoint");
            Ok(false)
        }
        fn calibration(&self) -> Calibration {
            Calibration { anchors: [0.2, 0.3, 0.4] }
        }
    }

    #[test]
    fn the_wrappers_pass_every_call_through() {
        let probe = Arc::new(Probe::default());
        let wrapped = Metered(Arc::new(Batched::new(probe.clone())));
        wrapped.forget(&["a"]).unwrap();
        assert!(!wrapped.checkpoint().unwrap(), "a checkpoint that could not finish says so");
        wrapped.embed_documents(&["a"]).unwrap();
        wrapped.embed_queries(&["a", "b"]).unwrap();
        let calls = probe.calls.lock().unwrap().clone();
        for call in ["forget", "checkpoint", "embed_documents"] {
            assert!(calls.contains(&call), "{call} did not reach the inner embedder: {calls:?}");
        }
        assert!(calls.iter().any(|c| c.starts_with("embed_quer")), "{calls:?}");
        assert_eq!(wrapped.calibration(), probe.calibration(), "the inner embedder's own calibration");
    }

    /// Panics on any text containing "boom".
    struct Bomb;

    impl Embedder for Bomb {
        fn pins(&self) -> EmbedderPins {
            HashingEmbedder::default().pins()
        }
        fn embed_documents(&self, texts: &[&str]) -> mnemon::Result<Vec<Vec<f32>>> {
            assert!(!texts.iter().any(|t| t.contains("boom")), "boom");
            HashingEmbedder::default().embed_documents(texts)
        }
    }

    #[test]
    fn a_panic_in_the_embedder_fails_its_batch_and_nothing_after() {
        let batched = Arc::new(Batched::new(Arc::new(Bomb)));
        let e = batched.embed_documents(&["boom"]).unwrap_err();
        assert!(e.to_string().contains("panicked"), "{e}");
        // Later calls, from other threads, are served (they would wait forever on a seat
        // the panicking leader never gave back).
        let b = Arc::clone(&batched);
        let later = std::thread::spawn(move || b.embed_documents(&["fine"]).map(|v| v.len()));
        assert_eq!(later.join().unwrap().unwrap(), 1);
        assert!(batched.embed_query("fine").is_ok());
    }

    #[test]
    fn batched_calls_give_each_caller_its_own_vectors() {
        let inner: Arc<dyn Embedder> = Arc::new(HashingEmbedder::default());
        let batched = Arc::new(Batched::new(Arc::clone(&inner)));
        let handles: Vec<_> = (0..16)
            .map(|i| {
                let (b, inner) = (Arc::clone(&batched), Arc::clone(&inner));
                std::thread::spawn(move || {
                    for j in 0..50 {
                        let q = format!("question {i} {j}");
                        assert_eq!(b.embed_query(&q).unwrap(), inner.embed_query(&q).unwrap());
                        let docs = [format!("doc {i} {j}"), format!("another {j} {i}")];
                        let refs: Vec<&str> = docs.iter().map(String::as_str).collect();
                        assert_eq!(b.embed_documents(&refs).unwrap(), inner.embed_documents(&refs).unwrap());
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
    }
}
