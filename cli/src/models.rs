//! What the flags name, made real: a store reference resolved, the embedder and the extractor
//! built, a store opened with them.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Result;
use mnemon::config::Config;
use mnemon::embed::{Embedder, HashingEmbedder, OnnxConfig, OnnxEmbedder};
use mnemon::extract::{CachedExtractor, Extractor, LlamaExtractor, ScriptedExtractor};
use mnemon::stores;
use mnemon::{Memory, Scope};

use crate::flags::{EmbedderChoice, ExtractorArgs, ModelArgs, StoreArg, Target};

/// The store a reference names: an existing file as it is (whatever its name), else what
/// [`stores::resolve`] makes of it (a .db file, a project directory's store, `global`, a URL).
pub fn store_path(reference: Option<&str>) -> Result<PathBuf> {
    match reference {
        Some(r) if Path::new(r).is_file() => Ok(PathBuf::from(r)),
        r => Ok(stores::resolve(r)?),
    }
}

impl StoreArg {
    /// The store `--store` names (the global store without one).
    pub fn path(&self) -> Result<PathBuf> {
        store_path(self.store.as_deref())
    }

    /// Opens the store with its own pins and no model.
    pub fn stored(&self) -> Result<Memory> {
        Ok(Memory::builder(self.path()?).stored().open()?)
    }
}

impl Target {
    /// The store file this target names.
    pub fn path(&self) -> Result<PathBuf> {
        self.store.path()
    }

    /// Whose memory.
    pub fn scope(&self) -> Scope<'_> {
        Scope::user(&self.user).with_agent(self.agent.as_deref())
    }

    /// Opens the store with its own pins and no model.
    pub fn stored(&self) -> Result<Memory> {
        self.store.stored()
    }
}

impl ModelArgs {
    pub(crate) fn models_dir(&self) -> PathBuf {
        self.models.clone().unwrap_or_else(mnemon::model_files::default_dir)
    }

    /// The embedder the flags name, behind its cache when one is given.
    pub fn embedder(&self) -> Result<Arc<dyn Embedder>> {
        let embedder: Arc<dyn Embedder> = match self.embedder {
            EmbedderChoice::Hashing => Arc::new(HashingEmbedder::default()),
            EmbedderChoice::Minilm => {
                let config = OnnxConfig {
                    threads: self.embed_threads,
                    spinning: self.spin,
                    batch_size: self.embed_batch.unwrap_or(1),
                    ..OnnxConfig::from_dir(&self.models_dir())
                };
                Arc::new(OnnxEmbedder::new(config)?)
            }
        };
        Ok(match &self.embed_cache {
            Some(path) => Arc::new(mnemon::embed::CachedEmbedder::open(path, embedder)?),
            None => embedder,
        })
    }

    /// The extractor the flags name, if any.
    pub fn extractor(&self) -> Result<Option<Arc<dyn Extractor>>> {
        self.extractor.build(&self.models_dir())
    }

    /// Opens the store `db` with these models; with an extractor, extraction runs inside each
    /// `add` (the CLI's progress bar then shows it).
    pub fn open(&self, db: &Path, config: Config) -> Result<Memory> {
        let config = Config { background_extraction: false, ..config };
        Ok(Memory::builder(db)
            .embedder(self.embedder()?)
            .optional_extractor(self.extractor()?)
            .config(config)
            .open()?)
    }
}

/// The GGUF `--extractor` names: `default` is the pinned default model
/// ([`mnemon::extract::DEFAULT_GGUF`]) in the models folder `models`; anything else is a path.
pub fn extractor_path(given: &Path, models: &Path) -> PathBuf {
    if given == Path::new("default") {
        models.join("gguf").join(mnemon::extract::DEFAULT_GGUF)
    } else {
        given.to_owned()
    }
}

impl ExtractorArgs {
    /// The extractor the flags name (a GGUF model, or a `.json` script), behind its cache when
    /// one is given.
    pub fn build(&self, models: &Path) -> Result<Option<Arc<dyn Extractor>>> {
        let Some(path) = &self.extractor else { return Ok(None) };
        if path.extension().is_some_and(|e| e == "json") {
            return Ok(Some(Arc::new(ScriptedExtractor::load(path)?)));
        }
        let model = LlamaExtractor::load(extractor_path(path, models), self.decoding.llama())?;
        Ok(Some(match &self.extract_cache {
            Some(cache) => Arc::new(CachedExtractor::open(cache, model)?),
            None => Arc::new(model),
        }))
    }
}
