//! One way to open a store: [`Memory::builder`] with a [`Location`], the models, the
//! configuration and how to open it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{Memory, Shared};
use crate::config::Config;
use crate::embed::{Embedder, EmbedderPins};
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::export::ImportReport;
use crate::facts::extract::Extractor;
use crate::facts::worker::Worker;
use crate::index::views::MemoryBudget;
use crate::store::db::Backend;
use crate::store::{EXTRACTION, NOTE_PINS, OpenMode, Pins, Place, Store, write};

/// Where a store is: a SQLite file, a `postgres://` URL, or a database server's store through a
/// [`Backend`].
///
/// A string is a URL when it starts with `postgres://` or `postgresql://`, else a file path.
///
/// ```
/// use mnemon::stores::Location;
/// assert!(matches!(Location::from("memory.db"), Location::File(_)));
/// assert!(matches!(Location::from("postgres://mnemon@localhost/memory"), Location::Url(_)));
/// ```
#[derive(Clone)]
pub enum Location {
    /// A SQLite file (created if missing, when the store may be created).
    File(PathBuf),
    /// PostgreSQL with pgvector (`postgres://user:password@host:port/db`, `?schema=name` for a
    /// store in a schema of its own). Needs the `postgres` feature.
    Url(String),
    /// A database server's store through a backend (for example `mnemon_postgres::PgBackend`).
    Backend(Arc<dyn Backend>),
}

impl std::fmt::Debug for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Location::File(p) => f.debug_tuple("File").field(p).finish(),
            // Never the password.
            Location::Url(_) => f.write_str("Url(..)"),
            Location::Backend(b) => f.debug_tuple("Backend").field(&b.location()).finish(),
        }
    }
}

impl Location {
    /// Whether `reference` names a PostgreSQL store rather than a file.
    pub fn is_url(reference: &str) -> bool {
        reference.starts_with("postgres://") || reference.starts_with("postgresql://")
    }

    /// Where the store's statements run.
    fn place(self) -> Result<Place> {
        Ok(match self {
            Location::File(path) => Place::File(path),
            Location::Backend(backend) => Place::Remote(backend),
            Location::Url(url) => Place::Remote(postgres(&url)?),
        })
    }
}

#[cfg(feature = "postgres")]
fn postgres(url: &str) -> Result<Arc<dyn Backend>> {
    Ok(Arc::new(mnemon_postgres::PgBackend::new(url)?))
}

#[cfg(not(feature = "postgres"))]
fn postgres(_url: &str) -> Result<Arc<dyn Backend>> {
    Err(Error::input("location", "a postgres:// store needs mnemon built with its `postgres` feature"))
}

impl From<&str> for Location {
    fn from(reference: &str) -> Location {
        if Location::is_url(reference) {
            Location::Url(reference.to_owned())
        } else {
            Location::File(PathBuf::from(reference))
        }
    }
}

impl From<String> for Location {
    fn from(reference: String) -> Location {
        Location::from(reference.as_str())
    }
}

impl From<&String> for Location {
    fn from(reference: &String) -> Location {
        Location::from(reference.as_str())
    }
}

impl From<&Path> for Location {
    fn from(path: &Path) -> Location {
        match path.to_str() {
            Some(s) if Location::is_url(s) => Location::Url(s.to_owned()),
            _ => Location::File(path.to_owned()),
        }
    }
}

impl From<PathBuf> for Location {
    fn from(path: PathBuf) -> Location {
        Location::from(path.as_path())
    }
}

impl From<&PathBuf> for Location {
    fn from(path: &PathBuf) -> Location {
        Location::from(path.as_path())
    }
}

impl From<Arc<dyn Backend>> for Location {
    fn from(backend: Arc<dyn Backend>) -> Location {
        Location::Backend(backend)
    }
}

impl<B: Backend + 'static> From<Arc<B>> for Location {
    fn from(backend: Arc<B>) -> Location {
        Location::Backend(backend)
    }
}

/// How [`Builder::open`] treats the store and its pins.
enum Mode {
    /// Open it with the embedder, or create it with the embedder's pins: every pin must match.
    Models,
    /// It must exist; take its stored pins as they are, with no models.
    Stored,
    /// As `Stored`, or create it with these pins when there is none.
    Like(Pins),
}

/// Opens (or creates) a store: [`Memory::builder`] names where it is; the models, the
/// configuration and how to open it are set here, then [`open`](Builder::open) (or
/// [`import`](Builder::import) a dump into it).
///
/// ```
/// use mnemon::{Memory, Message};
/// use mnemon::config::Config;
/// use mnemon::embed::HashingEmbedder;
/// # let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("m.db");
/// let memory = Memory::builder(&path).embedder(HashingEmbedder::default()).config(Config::default()).open()?;
/// memory.add(&[Message::user("I live in Porto.", "2026-01-02T09:00:00")], "eve")?;
/// drop(memory);
/// // Without models: export, forget and inspection work; add and recall need an embedder.
/// let stored = Memory::builder(&path).stored().open()?;
/// assert_eq!(stored.rounds("eve")?.len(), 1);
/// # Ok::<(), mnemon::Error>(())
/// ```
#[must_use = "a builder does nothing until `open` or `import`"]
pub struct Builder {
    location: Location,
    embedder: Option<Arc<dyn Embedder>>,
    extractor: Option<Arc<dyn Extractor>>,
    config: Config,
    mode: Mode,
    budget: Option<MemoryBudget>,
}

impl Memory {
    /// A store at `location` (a path, a `postgres://` URL or a [`Backend`]) to open: see [`Builder`].
    pub fn builder(location: impl Into<Location>) -> Builder {
        Builder {
            location: location.into(),
            embedder: None,
            extractor: None,
            config: Config::default(),
            mode: Mode::Models,
            budget: None,
        }
    }
}

impl Builder {
    /// The embedder every record is embedded with (required unless the store opens
    /// [`stored`](Builder::stored) or [`like`](Builder::like) another). A store built under
    /// another embedder is refused with [`Error::PinMismatch`] naming every differing pin. An
    /// `Arc<dyn Embedder>` shares one embedder between stores.
    pub fn embedder(mut self, embedder: impl Embedder + 'static) -> Builder {
        self.embedder = Some(Arc::new(embedder));
        self
    }

    /// The extractor that extracts facts from every stored round. A store created without one
    /// is refused ([`Error::PinMismatch`] on `extraction`); a store that extracts opens with any
    /// extractor, and with none (it then reads, and queues new rounds for a handle that has
    /// one). The extractor's pins (the model, its prompt and decoding, the pre-filter, the
    /// verification and conflict rules, the lexicons) are recorded in the store, and every fact
    /// names the extractor that produced it: after a change, [`Memory::reextract`] brings older
    /// rounds up to date. With [`Config::background_extraction`] (the default) a worker thread
    /// drains the extraction queue; rounds a previous process left queued are resumed at once.
    pub fn extractor(mut self, extractor: impl Extractor + 'static) -> Builder {
        self.extractor = Some(Arc::new(extractor));
        self
    }

    /// [`extractor`](Builder::extractor) when there is one: for callers whose extractor is
    /// optional (a flag, a setting).
    pub fn optional_extractor(mut self, extractor: Option<Arc<dyn Extractor>>) -> Builder {
        self.extractor = extractor;
        self
    }

    /// The configuration (validated at [`open`](Builder::open); default: [`Config::default`]).
    pub fn config(mut self, config: Config) -> Builder {
        self.config = config;
        self
    }

    /// A memory budget this store's views share with other stores opened on it (see
    /// [`MemoryBudget`]), besides its own [`Config::view_cache_bytes`].
    pub fn memory_budget(mut self, budget: MemoryBudget) -> Builder {
        self.budget = Some(budget);
        self
    }

    /// Opens an existing store with the pins it was built with and no models: export, import,
    /// forget and inspection work; [`add`](Memory::add) and [`recall`](Memory::recall) return
    /// [`Error::NoEmbedder`]. A missing store is [`Error::NotAStore`].
    pub fn stored(mut self) -> Builder {
        self.mode = Mode::Stored;
        self
    }

    /// As [`stored`](Builder::stored); if there is no store there yet, creates one with `like`'s
    /// pins (say, to [copy](Memory::copy_to) notes into a new store).
    pub fn like(mut self, like: &Memory) -> Builder {
        self.mode = Mode::Like(like.shared.engine.pins.clone());
        self
    }

    /// Opens the store. Rounds whose derived records (named text, part records) were made under
    /// another rule, by an older build or in a dump, are brought up to date here, before the
    /// handle is returned (with an embedder).
    pub fn open(self) -> Result<Memory> {
        let Builder { location, embedder, extractor, config, mode, budget } = self;
        config.validate()?;
        let place = location.place()?;
        let pins = match mode {
            Mode::Models => {
                let embedder = embedder.ok_or_else(|| {
                    Error::input("embedder", "is needed to open a store with models (or open it stored)")
                })?;
                return open_with_models(&place, embedder, extractor, config, budget);
            }
            Mode::Stored => None,
            Mode::Like(pins) => Some(pins),
        };
        if embedder.is_some() || extractor.is_some() {
            return Err(Error::input("embedder", "a store opened with its stored pins takes no models"));
        }
        let store = match (&place, &pins) {
            (_, None) => Store::open_at(&place, &config, OpenMode::Stored)?,
            (Place::File(path), Some(pins)) => {
                let mode = if path.exists() { OpenMode::Stored } else { OpenMode::Expect(pins) };
                Store::open(path, &config, mode)?
            }
            (Place::Remote(_), Some(pins)) => match Store::open_at(&place, &config, OpenMode::Stored) {
                Err(Error::NotAStore { .. }) => Store::open_at(&place, &config, OpenMode::Expect(pins))?,
                other => other?,
            },
        };
        Memory::start(Engine::new(store, None, config, budget), None)
    }

    /// Loads a JSONL dump made by [`Memory::export`] with
    /// [`ExportFormat::Jsonl`](crate::export::ExportFormat::Jsonl) into the store, creating it with the
    /// dump's pins if there is none. An existing store must have the same pins, and the dump's
    /// users must have no records there yet. Everything is checked before anything is written;
    /// no model is needed.
    pub fn import(self, dump: &str) -> Result<ImportReport> {
        self.config.validate()?;
        crate::export::import(&self.location.place()?, dump, &self.config)
    }
}

/// Opens (or creates) the store at `place` with an embedder and maybe an extractor, registering
/// the extractor's pins in the store.
fn open_with_models(
    place: &Place,
    embedder: Arc<dyn Embedder>,
    extractor: Option<Arc<dyn Extractor>>,
    config: Config,
    budget: Option<MemoryBudget>,
) -> Result<Memory> {
    let pins = expected_pins(&embedder.pins(), extractor.is_some(), &config);
    let mode = if extractor.is_some() { OpenMode::Expect(&pins) } else { OpenMode::ExpectReading(&pins) };
    let mut store = Store::open_at(place, &config, mode)?;
    crate::write::fill_derived(&mut store, embedder.as_ref()).map_err(|e| e.in_store(&place.path()))?;
    let extractor = match extractor {
        Some(x) => {
            let pins = crate::facts::extractor_pins(&x.pins(), &config);
            let id = match store.extractor_id(&crate::store::extractor_hash(&pins))? {
                Some(id) => id,
                None => {
                    let tx = store.begin()?;
                    let id = write::register(&tx, &pins)?;
                    tx.commit()?;
                    id
                }
            };
            Some((x, id))
        }
        None => None,
    };
    Memory::start(Engine::new(store, Some(embedder), config, budget), extractor)
}

/// The store's pins: what every record depends on, checked at every open. Whether the store
/// extracts is one of them; which extractor is not (see `facts::extractor_pins`).
fn expected_pins(e: &EmbedderPins, extracts: bool, config: &Config) -> Pins {
    let mut pins = vec![
        ("embedder.name", e.name.clone()),
        ("embedder.revision", e.revision.clone()),
        ("embedder.dim", e.dim.to_string()),
        ("embedder.template", e.template.clone()),
        (EXTRACTION, if extracts { "on" } else { "off" }.to_owned()),
        ("rounds.dedup_cosine", config.dedup_cosine.to_string()),
        ("rounds.normalizer", "v1".to_owned()),
    ];
    pins.extend(NOTE_PINS.iter().map(|(k, v)| (*k, (*v).to_owned())));
    Pins::new(pins)
}

impl Shared {
    fn new(engine: Engine, extractor: Option<(Arc<dyn Extractor>, i64)>) -> Shared {
        Shared { engine, commits: crate::write::Commits::default(), worker: Worker::new(extractor) }
    }
}

impl Memory {
    /// A handle on `engine`, with the background worker started when there is an extractor and
    /// [`Config::background_extraction`] is on.
    fn start(engine: Engine, extractor: Option<(Arc<dyn Extractor>, i64)>) -> Result<Memory> {
        engine.open_readers()?;
        let background = extractor.is_some() && engine.config.background_extraction;
        let shared = Arc::new(Shared::new(engine, extractor));
        let background = if background {
            let s = Arc::clone(&shared);
            let handle = std::thread::Builder::new()
                .name("mnemon-extract".into())
                .spawn(move || s.worker.work(&s.engine))
                .map_err(Error::from)?;
            shared.worker.signal();
            Some(handle)
        } else {
            None
        };
        Ok(Memory { shared, background })
    }
}
