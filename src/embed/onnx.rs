//! all-MiniLM-L6-v2 (int8 ONNX) through ONNX Runtime, loaded at run time.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use ort::session::Session;
use ort::session::builder::GraphOptimizationLevel;
use ort::value::Tensor;
use tokenizers::Tokenizer;

use super::{Embedder, EmbedderPins, vector};
use crate::error::{Error, Result};
use crate::model_files;

/// Settings of an [`OnnxEmbedder`].
#[derive(Debug, Clone, PartialEq)]
pub struct OnnxConfig {
    /// Name pinned in stores (default `all-MiniLM-L6-v2-int8`).
    pub name: String,
    /// The ONNX model (inputs `input_ids`, `attention_mask`, `token_type_ids`; output
    /// `last_hidden_state`).
    pub model: PathBuf,
    /// The Hugging Face `tokenizer.json` matching the model.
    pub tokenizer: PathBuf,
    /// The ONNX Runtime shared library (`libonnxruntime.so.1.32.0`).
    pub runtime: PathBuf,
    /// Intra-op threads (default 2).
    pub threads: usize,
    /// Let ONNX Runtime's threads spin while waiting for work (default false: on a busy 2-core
    /// machine spinning threads fight each other).
    pub spinning: bool,
    /// Texts per model call (default 1: on real rounds, which often reach the token cap,
    /// batching gained nothing; see docs/DECISIONS.md). Texts are grouped by length first, so
    /// little is padded. With the pinned MiniLM and runtime a text's vector does not depend on its
    /// batch-mates (tested), so the batch size is not pinned.
    pub batch_size: usize,
    /// Word pieces kept per text, special tokens included (default 256, the model's training
    /// length).
    pub max_tokens: usize,
}

/// The default files in the default models folder ([`model_files::default_dir`]).
impl Default for OnnxConfig {
    fn default() -> OnnxConfig {
        OnnxConfig::from_dir(&model_files::default_dir())
    }
}

impl OnnxConfig {
    /// The default files under `dir` (see [`model_files::default_dir`]).
    pub fn from_dir(dir: &Path) -> OnnxConfig {
        OnnxConfig {
            name: "all-MiniLM-L6-v2-int8".to_owned(),
            model: dir.join(model_files::MINILM_MODEL),
            tokenizer: dir.join(model_files::MINILM_TOKENIZER),
            runtime: dir.join(model_files::ORT_LIBRARY),
            threads: 2,
            spinning: false,
            batch_size: 1,
            max_tokens: 256,
        }
    }
}

/// Sentence embeddings from a BERT-style ONNX model: mean pooling over the attention mask, then
/// L2 normalization.
///
/// ```no_run
/// use mnemon::embed::{Embedder, OnnxConfig, OnnxEmbedder};
/// let e = OnnxEmbedder::new(OnnxConfig::from_dir(&mnemon::model_files::default_dir())).unwrap();
/// let v = e.embed_query("Where do I live?").unwrap();
/// assert_eq!(v.len(), 384);
/// ```
pub struct OnnxEmbedder {
    config: OnnxConfig,
    tokenizer: Tokenizer,
    session: Mutex<Session>,
    pins: EmbedderPins,
}

impl std::fmt::Debug for OnnxEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OnnxEmbedder").field("config", &self.config).field("pins", &self.pins).finish()
    }
}

static RUNTIME: OnceLock<std::result::Result<(PathBuf, ort::environment::Environment), String>> =
    OnceLock::new();

/// Loads ONNX Runtime from `path` once per process.
pub(crate) fn runtime(path: &Path) -> Result<ort::environment::Environment> {
    let loaded = RUNTIME.get_or_init(|| {
        let env = ort::init_from(path)
            .map_err(|e| e.to_string())?
            .with_name("mnemon")
            .build()
            .map_err(|e| e.to_string())?;
        Ok((path.to_owned(), env))
    });
    match loaded {
        Ok((loaded_path, env)) if loaded_path == path => Ok(env.clone()),
        Ok((loaded_path, _)) => Err(Error::Embedder(format!(
            "ONNX Runtime is already loaded from {} in this process; cannot load {}",
            loaded_path.display(),
            path.display()
        ))),
        Err(e) => Err(Error::ModelUnavailable {
            path: path.to_owned(),
            reason: format!("ONNX Runtime failed to load: {e}"),
            fix: model_files::FETCH_HINT.to_owned(),
        }),
    }
}

impl OnnxEmbedder {
    /// Loads the tokenizer, the runtime and the model; the error names a missing file and how to
    /// fetch it.
    pub fn new(config: OnnxConfig) -> Result<OnnxEmbedder> {
        if config.threads == 0 || config.threads > 64 {
            return Err(Error::InvalidConfig { field: "onnx.threads", reason: "must be in 1..=64".into() });
        }
        if config.batch_size == 0 || config.batch_size > 1024 {
            return Err(Error::InvalidConfig {
                field: "onnx.batch_size",
                reason: "must be in 1..=1024".into(),
            });
        }
        if !(8..=512).contains(&config.max_tokens) {
            return Err(Error::InvalidConfig {
                field: "onnx.max_tokens",
                reason: "must be in 8..=512".into(),
            });
        }
        for path in [&config.model, &config.tokenizer, &config.runtime] {
            model_files::require_file(path)?;
        }
        let mut tokenizer = Tokenizer::from_file(&config.tokenizer).map_err(|e| Error::ModelUnavailable {
            path: config.tokenizer.clone(),
            reason: format!("not a tokenizer.json: {e}"),
            fix: model_files::FETCH_HINT.to_owned(),
        })?;
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(tokenizers::TruncationParams {
                max_length: config.max_tokens,
                ..Default::default()
            }))
            .map_err(|e| Error::Embedder(format!("tokenizer truncation: {e}")))?;

        let env = runtime(&config.runtime)?;
        let session = Session::builder(&env)
            .and_then(|b| b.with_intra_threads(config.threads).map_err(Into::into))
            .and_then(|b| b.with_inter_threads(1).map_err(Into::into))
            .and_then(|b| b.with_intra_op_spinning(config.spinning).map_err(Into::into))
            .and_then(|b| b.with_optimization_level(GraphOptimizationLevel::All).map_err(Into::into))
            .and_then(|mut b| b.commit_from_file(&config.model))
            .map_err(|e| Error::ModelUnavailable {
                path: config.model.clone(),
                reason: format!("ONNX Runtime cannot load it: {e}"),
                fix: model_files::FETCH_HINT.to_owned(),
            })?;

        let model_hash = model_files::file_blake3(&config.model)?;
        let tokenizer_hash = model_files::file_blake3(&config.tokenizer)?;
        let runtime_hash = model_files::file_blake3(&config.runtime)?;
        let template = serde_json::json!({
            "max_tokens": config.max_tokens,
            "normalize": "l2",
            "pooling": "mean",
            "runtime": runtime_hash,
            "tokenizer": tokenizer_hash,
        });
        let pins = EmbedderPins {
            name: config.name.clone(),
            revision: model_hash,
            dim: 384,
            template: blake3::hash(template.to_string().as_bytes()).to_hex().to_string(),
        };
        let embedder = OnnxEmbedder { config, tokenizer, session: Mutex::new(session), pins };
        // Learn the real output width once, from the model itself.
        let probe = embedder.run_batch(&["dimension probe"])?;
        let dim = probe.first().map_or(0, Vec::len);
        if dim == 0 {
            return Err(Error::Embedder("model returned an empty vector".into()));
        }
        Ok(OnnxEmbedder { pins: EmbedderPins { dim, ..embedder.pins.clone() }, ..embedder })
    }

    /// The settings this embedder runs with.
    pub fn config(&self) -> &OnnxConfig {
        &self.config
    }

    /// Number of word pieces (special tokens included, before truncation) in `text`.
    pub fn count_tokens(&self, text: &str) -> Result<usize> {
        let mut tokenizer = self.tokenizer.clone();
        tokenizer.with_truncation(None).map_err(|e| Error::Embedder(e.to_string()))?;
        Ok(tokenizer.encode(text, true).map_err(|e| Error::Embedder(e.to_string()))?.len())
    }

    fn encode(&self, texts: &[&str]) -> Result<Vec<tokenizers::Encoding>> {
        texts
            .iter()
            .map(|t| self.tokenizer.encode(*t, true))
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| Error::Embedder(format!("tokenizer: {e}")))
    }

    fn run_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let encodings = self.encode(texts)?;
        self.run_encoded(&encodings.iter().collect::<Vec<_>>())
    }

    fn run_encoded(&self, encodings: &[&tokenizers::Encoding]) -> Result<Vec<Vec<f32>>> {
        let batch = encodings.len();
        let len = encodings.iter().map(|e| e.len()).max().unwrap_or(0).max(1);
        let mut ids = vec![0i64; batch * len];
        let mut mask = vec![0i64; batch * len];
        let mut types = vec![0i64; batch * len];
        for (b, enc) in encodings.iter().enumerate() {
            for (i, ((id, m), t)) in
                enc.get_ids().iter().zip(enc.get_attention_mask()).zip(enc.get_type_ids()).enumerate()
            {
                ids[b * len + i] = i64::from(*id);
                mask[b * len + i] = i64::from(*m);
                types[b * len + i] = i64::from(*t);
            }
        }
        let shape = [batch as i64, len as i64];
        let tensor =
            |data: Vec<i64>| Tensor::from_array((shape, data)).map_err(|e| Error::Embedder(e.to_string()));
        let inputs = ort::inputs![
            "input_ids" => tensor(ids)?,
            "attention_mask" => tensor(mask.clone())?,
            "token_type_ids" => tensor(types)?,
        ];
        let mut session = self.session.lock().map_err(|_| Error::Embedder("session lock poisoned".into()))?;
        let outputs = session.run(inputs).map_err(|e| Error::Embedder(e.to_string()))?;
        let (out_shape, hidden) = outputs["last_hidden_state"]
            .try_extract_tensor::<f32>()
            .map_err(|e| Error::Embedder(e.to_string()))?;
        let dim = match **out_shape {
            [b, l, d] if b as usize == batch && l as usize == len && d > 0 => d as usize,
            ref other => return Err(Error::Embedder(format!("unexpected output shape {other:?}"))),
        };
        let mut vectors = Vec::with_capacity(batch);
        for b in 0..batch {
            let mut pooled = vec![0f64; dim];
            let mut count = 0f64;
            for i in 0..len {
                if mask[b * len + i] == 0 {
                    continue;
                }
                count += 1.0;
                let row = &hidden[(b * len + i) * dim..(b * len + i + 1) * dim];
                for (p, x) in pooled.iter_mut().zip(row) {
                    *p += f64::from(*x);
                }
            }
            let mut v: Vec<f32> = pooled.iter().map(|p| (p / count.max(1.0)) as f32).collect();
            vector::normalize(&mut v);
            vectors.push(v);
        }
        Ok(vectors)
    }
}

impl Embedder for OnnxEmbedder {
    fn pins(&self) -> EmbedderPins {
        self.pins.clone()
    }

    fn embed_documents(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        self.embed_sorted(texts, self.config.batch_size)
    }

    /// A question embeds as a document does; questions are short, so they always batch (a text
    /// gives the same bits alone or in any batch: `tests/onnx.rs`).
    fn embed_queries(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        self.embed_sorted(texts, QUERY_BATCH)
    }
}

/// Questions per ONNX call in [`Embedder::embed_queries`].
const QUERY_BATCH: usize = 64;

impl OnnxEmbedder {
    /// Embeds texts in batches of up to `batch` of similar length; results in input order.
    fn embed_sorted(&self, texts: &[&str], batch: usize) -> Result<Vec<Vec<f32>>> {
        let encodings = self.encode(texts)?;
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| (encodings[i].len(), i));
        let mut out = vec![Vec::new(); texts.len()];
        for chunk in order.chunks(batch.max(1)) {
            let batch: Vec<&tokenizers::Encoding> = chunk.iter().map(|&i| &encodings[i]).collect();
            for (&i, v) in chunk.iter().zip(self.run_encoded(&batch)?) {
                out[i] = v;
            }
        }
        Ok(out)
    }
}
