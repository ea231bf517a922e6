//! `Memory`: the public face of the engine. Write path, read path and export meet here; SQL
//! stays in `store`, scoring in `rank`, formatting in `render`.

mod add;
mod admin;
mod notes;
mod read;
mod remember;
mod transfer;
mod types;
mod upgrade;
mod view;
mod views;
mod worker;

pub use notes::{CondenseReport, TransferReport, MAX_NOTES_PER_CALL};
pub use types::*;
pub(crate) use view::note_id;

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use serde::Serialize;

use crate::config::Config;
use crate::conflict::{conflict, newer, screen, Rule, Statement};
use crate::embed::vector::cosine;
use crate::embed::{Embedder, EmbedderPins};
use crate::error::{Error, Result};
use crate::extract::{Extractor, ExtractorPins};
use crate::lexical::Bm25;
use crate::notes::{Filter, Note, Relevance};
use crate::rank::{self, Index};
use crate::render::{self, RenderRound};
use crate::round::{form_rounds, normalized_key, Message, Turn};
use crate::store::{write, FactRow, OpenMode, Pins, Place, RoundRow, Store, View};
use crate::time::{day_number, query_window, split_date_prefix, DateWindow, Timestamp};
use views::Views;

/// A memory store: one SQLite file, one embedder, one configuration.
///
/// `Memory` is `Send + Sync`; calls from several threads are serialized on the store.
///
/// ```
/// use mnemon::{Config, HashingEmbedder, Memory, Message};
/// # let dir = tempfile::tempdir().unwrap();
/// let memory = Memory::open(dir.path().join("m.db"), HashingEmbedder::default(), Config::default())?;
/// memory.add(&[
///     Message::user("I just adopted a beagle named Toby.", "2026-03-01T10:00:00"),
///     Message::assistant("Congratulations! Beagles love long walks.", "2026-03-01T10:00:05"),
/// ], "alice")?;
/// let context = memory.get_context("What is my dog called?", "alice")?;
/// assert!(context.text.contains("Toby"));
/// assert_eq!(context.rounds.len(), 1);
/// # Ok::<(), mnemon::Error>(())
/// ```
pub struct Memory {
    shared: Arc<Shared>,
    /// The background extraction worker, when there is an extractor and
    /// [`Config::background_extraction`] is on.
    worker: Option<std::thread::JoinHandle<()>>,
}

/// What the caller's threads and the extraction worker share.
struct Shared {
    /// The write connection: writes (and reads that must see a write's own state) take turns.
    store: Mutex<Store>,
    /// Idle read connections: reads run on their own connection and snapshot, never queuing
    /// behind a write.
    readers: Mutex<Vec<Store>>,
    /// The file, and the pins it was opened with (fixed for the life of the handle): readers
    /// open with them, and callers read them without taking the write connection.
    path: std::path::PathBuf,
    /// Where the store is: readers open there.
    place: Place,
    pins: Pins,
    embedder: Option<Arc<dyn Embedder>>,
    /// The extractor, and its id in the store's `extractors` table.
    extractor: Option<(Arc<dyn Extractor>, i64)>,
    config: Config,
    /// Calls to [`Memory::remember`] waiting for the write connection (group commit).
    pending: Mutex<Vec<Arc<remember::Pending>>>,
    /// Views in memory, by user row id and agent, least recently used dropped past
    /// [`Config::view_cache_bytes`].
    index: Mutex<Views>,
    /// Held while the extraction queue is being drained: one drainer at a time. On a database
    /// server it keeps the drainer's claims connection between drains.
    drain: Mutex<Option<Box<dyn crate::backend::Claims>>>,
    /// The worker's wake-up and stop signals.
    signal: Mutex<WorkerSignal>,
    /// Set when the store closes: a decode in progress gives up (its round stays queued).
    cancel: std::sync::atomic::AtomicBool,
    wake: Condvar,
}

/// Most idle read connections kept open: as many as a server runs reads at once, so that a busy
/// server does not open (and parse the schema on) a connection per request. Under a 50-client
/// load, 8 kept 3,747 requests/s and 64 kept 3,940 (docs/DECISIONS.md, 2026-12-01).
const IDLE_READERS: usize = 64;

/// A read connection inside a read transaction; returned to the pool when dropped.
struct Reader<'a> {
    shared: &'a Shared,
    store: Option<Store>,
}

impl std::ops::Deref for Reader<'_> {
    type Target = Store;
    fn deref(&self) -> &Store {
        self.store.as_ref().expect("a reader holds its store until dropped")
    }
}

impl Reader<'_> {
    /// Ends the snapshot and starts a newer one.
    fn refresh(&self) -> Result<()> {
        self.end_read()?;
        self.begin_read()
    }
}

impl Drop for Reader<'_> {
    fn drop(&mut self) {
        if let Some(store) = self.store.take() {
            if store.end_read().is_ok() {
                let mut idle = self.shared.readers.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                if idle.len() < IDLE_READERS {
                    idle.push(store);
                }
            }
        }
    }
}

#[derive(Default)]
struct WorkerSignal {
    stop: bool,
    wake: bool,
}

pub(crate) fn check_user(user_id: &str) -> Result<()> {
    check_name(user_id, "user_id")
}

/// A user or agent name: 1 to 256 bytes, not blank, no control character.
fn check_name(name: &str, field: &str) -> Result<()> {
    if name.trim().is_empty() {
        return Err(Error::input(field, "is empty"));
    }
    if name.len() > 256 {
        return Err(Error::input(field, "is longer than 256 bytes"));
    }
    if name.chars().any(char::is_control) {
        return Err(Error::input(field, "contains a control character"));
    }
    Ok(())
}

pub(crate) fn check_scope(scope: Scope<'_>) -> Result<()> {
    check_user(scope.user)?;
    scope.agent.map_or(Ok(()), |a| check_name(a, "agent"))
}

/// Key of a round: sortable ts, then 12 hex digits of blake3 over session and text (and the
/// agent, for an agent's round; shared rounds keep the keys they always had).
pub(crate) fn round_key(ts: &Timestamp, session: &str, text: &str, agent: Option<&str>) -> String {
    let mut h = blake3::Hasher::new();
    h.update(session.as_bytes());
    h.update(&[0]);
    h.update(text.as_bytes());
    if let Some(a) = agent {
        // 0xff never occurs in UTF-8: no text can end the way an agent's suffix begins.
        h.update(&[0xff]);
        h.update(a.as_bytes());
    }
    format!("{}#{}", ts.sortable(), &h.finalize().to_hex()[..12])
}

/// The scope's view in `store` and the user's write counter, if the user exists.
fn resolve<'s>(store: &Store, scope: Scope<'s>) -> Result<Option<(View<'s>, i64)>> {
    Ok(store.user(scope.user)?.map(|(user, version)| (View { user, agent: scope.agent }, version)))
}

/// The sortable form of the user's logical now, the time a decision not tied to a record's own
/// time is logged at (empty for a user with no timestamp yet).
fn logical_now(store: &Store, user: i64) -> Result<String> {
    Ok(store
        .user_now(user)?
        .map(|(raw, unix)| Timestamp::from_parts(raw.clone(), unix).map_or(raw, |t| t.sortable()))
        .unwrap_or_default())
}

/// The store's pins: what every record depends on, checked at every open. Whether the store
/// extracts is one of them; which extractor is not (see [`extractor_pins`]).
fn expected_pins(e: &EmbedderPins, extracts: bool, config: &Config) -> Pins {
    let mut pins = vec![
        ("embedder.name", e.name.clone()),
        ("embedder.revision", e.revision.clone()),
        ("embedder.dim", e.dim.to_string()),
        ("embedder.template", e.template.clone()),
        (crate::store::EXTRACTION, if extracts { "on" } else { "off" }.to_owned()),
        ("rounds.dedup_cosine", config.dedup_cosine.to_string()),
        ("rounds.normalizer", "v1".to_owned()),
    ];
    pins.extend(crate::store::NOTE_PINS.iter().map(|(k, v)| (*k, (*v).to_owned())));
    Pins::new(pins)
}

/// What an extractor's facts depend on: the model and its decoding, the pre-filter, and the
/// rules that verify, resolve, deduplicate and settle facts. Recorded in the store's
/// `extractors` table, and named by every round and fact it produced, so that one store holds
/// facts of several extractor versions and [`Memory::reextract`] knows which rounds are stale.
pub(crate) fn extractor_pins(
    x: &ExtractorPins,
    config: &Config,
) -> std::collections::BTreeMap<String, String> {
    [
        ("extractor", x.name.clone()),
        ("extractor.model_blake3", x.model_blake3.clone()),
        ("extractor.quant", x.quant.clone()),
        ("extractor.runtime", x.runtime.clone()),
        ("extractor.decode", x.decode.clone()),
        ("extractor.prompt", x.prompt.clone()),
        ("extractor.prefilter", crate::prefilter::prefilter_blake3()),
        ("facts.verify", crate::facts::VERIFY_VERSION.to_owned()),
        ("facts.resolver", crate::resolve::RESOLVER_VERSION.to_owned()),
        ("facts.dedup_cosine", config.fact_dedup_cosine.to_string()),
        ("facts.conflict", crate::conflict::CONFLICT_VERSION.to_owned()),
        ("facts.lexicons", crate::normalize::normalize_blake3()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect()
}

impl Memory {
    /// Opens the store at `path`, creating it if needed. A store built under another embedder or
    /// write configuration is refused with [`Error::PinMismatch`] naming every differing pin.
    pub fn open(path: impl AsRef<Path>, embedder: impl Embedder + 'static, config: Config) -> Result<Memory> {
        Memory::open_shared(path, Arc::new(embedder), config)
    }

    /// [`Memory::open`] with an embedder shared with other stores.
    pub fn open_shared(
        path: impl AsRef<Path>,
        embedder: Arc<dyn Embedder>,
        config: Config,
    ) -> Result<Memory> {
        Memory::open_with(path, embedder, None, config)
    }

    /// Opens a store that extracts facts from every round with `extractor` (ENGINE §3.5–3.6).
    /// A store created without an extractor is refused ([`Error::PinMismatch`] on `extraction`);
    /// a store that extracts opens with any extractor, and with none (it then reads, and queues
    /// new rounds for a handle that has one). The extractor's pins (the model, its prompt and
    /// decoding, the pre-filter, the verification and conflict rules, the lexicons) are recorded
    /// in the store, and every fact names the extractor that produced it: after a change,
    /// [`reextract`](Memory::reextract) brings older rounds up to date. With
    /// [`Config::background_extraction`] (the default) a worker thread drains the extraction queue;
    /// rounds a previous process left queued are resumed at once. Rounds whose derived records
    /// (named text, part records) were made under another rule, by an older build or in a dump,
    /// are brought up to date here, before the handle is returned.
    pub fn open_with(
        path: impl AsRef<Path>,
        embedder: Arc<dyn Embedder>,
        extractor: Option<Arc<dyn Extractor>>,
        config: Config,
    ) -> Result<Memory> {
        Memory::open_place(&Place::File(path.as_ref().to_owned()), embedder, extractor, config)
    }

    /// [`Memory::open_with`] on a store in a database server's database (PostgreSQL with
    /// pgvector, through `mnemon-postgres`), created there if it has no store yet. The same
    /// statements, ranking and rendering run as on a file: the same calls give the same
    /// records, contexts and exports. Several processes may open one database: writes are
    /// serialized across them, and one process at a time extracts.
    pub fn open_on(
        backend: Arc<dyn crate::backend::Backend>,
        embedder: Arc<dyn Embedder>,
        extractor: Option<Arc<dyn Extractor>>,
        config: Config,
    ) -> Result<Memory> {
        Memory::open_place(&Place::Remote(backend), embedder, extractor, config)
    }

    /// [`Memory::open_stored`] on a store in a database server's database.
    pub fn open_stored_on(backend: Arc<dyn crate::backend::Backend>, config: Config) -> Result<Memory> {
        config.validate()?;
        let store = Store::open_at(&Place::Remote(backend), &config, OpenMode::Stored)?;
        Ok(Memory { shared: Arc::new(Shared::new(store, None, None, config)), worker: None })
    }

    fn open_place(
        place: &Place,
        embedder: Arc<dyn Embedder>,
        extractor: Option<Arc<dyn Extractor>>,
        config: Config,
    ) -> Result<Memory> {
        config.validate()?;
        let pins = expected_pins(&embedder.pins(), extractor.is_some(), &config);
        let mode = if extractor.is_some() { OpenMode::Expect(&pins) } else { OpenMode::ExpectReading(&pins) };
        let mut store = Store::open_at(place, &config, mode)?;
        add::fill_derived(&mut store, embedder.as_ref()).map_err(|e| e.in_store(&place.path()))?;
        let extractor = match extractor {
            Some(x) => {
                let pins = extractor_pins(&x.pins(), &config);
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
        let background = extractor.is_some() && config.background_extraction;
        let shared = Arc::new(Shared::new(store, Some(embedder), extractor, config));
        let worker = if background {
            let s = Arc::clone(&shared);
            let handle = std::thread::Builder::new()
                .name("mnemon-extract".into())
                .spawn(move || s.work())
                .map_err(Error::Io)?;
            shared.signal();
            Some(handle)
        } else {
            None
        };
        Ok(Memory { shared, worker })
    }

    /// Opens an existing store with the pins it was built with and no models: export, import,
    /// forget and inspection work; [`add`](Memory::add) and [`recall`](Memory::recall) return
    /// [`Error::NoEmbedder`].
    pub fn open_stored(path: impl AsRef<Path>, config: Config) -> Result<Memory> {
        config.validate()?;
        let store = Store::open(path.as_ref(), &config, OpenMode::Stored)?;
        Ok(Memory { shared: Arc::new(Shared::new(store, None, None, config)), worker: None })
    }

    /// Opens the store at `path` with its own pins and no models, as
    /// [`open_stored`](Memory::open_stored) does; if there is no store there yet, creates one
    /// with `like`'s pins (say, to [copy](Memory::copy_to) notes into a new store).
    pub fn open_like(path: impl AsRef<Path>, like: &Memory, config: Config) -> Result<Memory> {
        config.validate()?;
        let path = path.as_ref();
        let pins = like.shared.pins.clone();
        let mode = if path.exists() { OpenMode::Stored } else { OpenMode::Expect(&pins) };
        let store = Store::open(path, &config, mode)?;
        Ok(Memory { shared: Arc::new(Shared::new(store, None, None, config)), worker: None })
    }

    /// [`Memory::open_like`] on a store in a database server's database: its own pins if it
    /// holds a store, else a new store there with `like`'s pins.
    pub fn open_like_on(
        backend: Arc<dyn crate::backend::Backend>,
        like: &Memory,
        config: Config,
    ) -> Result<Memory> {
        config.validate()?;
        let place = Place::Remote(backend);
        let store = match Store::open_at(&place, &config, OpenMode::Stored) {
            Err(Error::NotAStore { .. }) => {
                Store::open_at(&place, &config, OpenMode::Expect(&like.shared.pins))?
            }
            other => other?,
        };
        Ok(Memory { shared: Arc::new(Shared::new(store, None, None, config)), worker: None })
    }

    /// A read in `scope` (checked): `f` with the store and the scope's view, or the empty answer
    /// for a user with no record.
    fn reading<T: Default>(
        &self,
        scope: Scope<'_>,
        f: impl FnOnce(&Store, View<'_>) -> Result<T>,
    ) -> Result<T> {
        check_scope(scope)?;
        let read = || {
            let store = self.shared.read()?;
            match resolve(&store, scope)? {
                Some((view, _)) => f(&store, view),
                None => Ok(T::default()),
            }
        };
        read().map_err(|e| self.shared.located(e))
    }

    /// Rounds of `user_id` (or of every user, with `None`) that wait for extraction.
    pub fn pending(&self, user_id: Option<&str>) -> Result<usize> {
        let store = self.shared.lock_store();
        match user_id {
            None => store.pending(None),
            Some(name) => {
                check_user(name)?;
                match store.user(name)? {
                    Some((user, _)) => store.pending(Some(user)),
                    None => Ok(0),
                }
            }
        }
    }

    /// Extracts every queued round, in round order, in the calling thread (taking turns with the
    /// worker), and returns when the queue is empty. Without an extractor it is an error if any
    /// round waits ([`Error::NoExtractor`]), else a no-op. The first failure is returned and its
    /// round stays queued.
    pub fn flush(&self) -> Result<()> {
        self.shared.drain()?.into_iter().next().map_or(Ok(()), |(_, e)| Err(e))
    }

    /// The configuration in force.
    pub fn config(&self) -> &Config {
        &self.shared.config
    }

    /// The store's pins (key → value), including `pins_hash`.
    pub fn pins(&self) -> Result<std::collections::BTreeMap<String, String>> {
        Ok(self.shared.pins.with_hash())
    }

    /// SQLite, sqlite-vec and FTS5 versions of this build.
    pub fn versions(&self) -> Result<Vec<(String, String)>> {
        self.shared.lock_store().versions()
    }

    /// Checks the store file: SQLite's `quick_check` (or, `full`, the slower `integrity_check`,
    /// which also compares every index with its table). Returns the problems found, none when
    /// the file is sound.
    ///
    /// ```
    /// # use mnemon::{Config, HashingEmbedder, Memory};
    /// # let dir = tempfile::tempdir().unwrap();
    /// let memory = Memory::open(dir.path().join("m.db"), HashingEmbedder::default(), Config::default())?;
    /// assert!(memory.check(true)?.is_empty());
    /// # Ok::<(), mnemon::Error>(())
    /// ```
    pub fn check(&self, full: bool) -> Result<Vec<String>> {
        let reader = Store::reader(&self.shared.place, &self.shared.pins, &self.shared.config)?;
        reader.check(full).map_err(|e| e.in_store(&self.shared.path))
    }

    /// Copies the store into a new file at `out` (which must not exist) with SQLite's online
    /// backup: one consistent snapshot, taken while writers in this or other processes go on
    /// (they never wait for it). The copy is checked (`quick_check`) before this returns; on
    /// any failure the partial file is removed. Returns the bytes written.
    ///
    /// ```
    /// # use mnemon::{Config, HashingEmbedder, Memory, Message};
    /// # let dir = tempfile::tempdir().unwrap();
    /// let memory = Memory::open(dir.path().join("m.db"), HashingEmbedder::default(), Config::default())?;
    /// memory.add(&[Message::user("I live in Porto.", "2026-01-02T09:00:00")], "eve")?;
    /// let copy = dir.path().join("copy.db");
    /// memory.backup(&copy)?;
    /// assert_eq!(Memory::open_stored(&copy, Config::default())?.rounds("eve")?.len(), 1);
    /// # Ok::<(), mnemon::Error>(())
    /// ```
    pub fn backup(&self, out: impl AsRef<Path>) -> Result<u64> {
        let out = out.as_ref();
        if out.exists() {
            return Err(Error::input(
                "out",
                format!("{} exists; a backup never overwrites a file", out.display()),
            ));
        }
        let copied = (|| {
            let reader = Store::reader(&self.shared.place, &self.shared.pins, &self.shared.config)?;
            reader.backup_to(out).map_err(|e| e.in_store(&self.shared.path))?;
            let copy = Store::open_reader(out, &self.shared.pins, &self.shared.config)?;
            let problems = copy.check(false)?;
            if !problems.is_empty() {
                return Err(Error::Corrupt { path: out.to_owned(), reason: problems.join("; ") });
            }
            Ok(std::fs::metadata(out)?.len())
        })();
        if copied.is_err() {
            for suffix in ["", "-wal", "-shm", "-journal"] {
                let mut p = out.as_os_str().to_owned();
                p.push(suffix);
                let _ = std::fs::remove_file(p);
            }
        }
        copied
    }

    /// Every user with a record in the store, sorted.
    pub fn users(&self) -> Result<Vec<String>> {
        self.shared.lock_store().user_names()
    }
}

impl Drop for Memory {
    fn drop(&mut self) {
        if let Some(worker) = self.worker.take() {
            {
                let mut signal = self.shared.signal.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                signal.stop = true;
            }
            self.shared.cancel.store(true, Ordering::Relaxed);
            self.shared.wake.notify_all();
            // The worker gives up the round it is extracting (within a token); queued rounds,
            // that one included, stay queued.
            let _ = worker.join();
        }
    }
}

impl Shared {
    fn new(
        store: Store,
        embedder: Option<Arc<dyn Embedder>>,
        extractor: Option<(Arc<dyn Extractor>, i64)>,
        config: Config,
    ) -> Shared {
        Shared {
            readers: Mutex::default(),
            pending: Mutex::default(),
            path: store.path.clone(),
            place: store.place.clone(),
            pins: store.pins.clone(),
            store: Mutex::new(store),
            embedder,
            extractor,
            config,
            index: Mutex::default(),
            drain: Mutex::new(None),
            signal: Mutex::default(),
            cancel: std::sync::atomic::AtomicBool::new(false),
            wake: Condvar::new(),
        }
    }

    // A panic inside a call cannot leave the store half-written (every write is a transaction
    // that rolls back on drop), and the index is checked against the store's write counter, so a
    // poisoned lock is safe to take over.
    fn lock_store(&self) -> MutexGuard<'_, Store> {
        self.store.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn lock_pending(&self) -> MutexGuard<'_, Vec<Arc<remember::Pending>>> {
        self.pending.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn lock_index(&self) -> MutexGuard<'_, Views> {
        self.index.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// `e`, told which store it happened in ([`Error::in_store`]).
    fn located(&self, e: Error) -> Error {
        e.in_store(&self.path)
    }

    /// As [`located`](Shared::located), for a write: one that failed while the
    /// file has less room below [`Config::max_store_bytes`] than one sqlite-vec chunk (1,024
    /// vectors) and 64 KiB is [`Error::StoreFull`] whatever SQLite said (sqlite-vec reports a
    /// full file as "could not insert a new vector chunk").
    fn located_write(&self, e: Error) -> Error {
        let e = e.in_store(&self.path);
        let (Error::Sqlite(cause), Some(limit)) = (&e, self.config.max_store_bytes) else { return e };
        let used = self.lock_store().file_bytes().unwrap_or(0);
        let chunk = 1024 * 4 * self.pins.dim().unwrap_or(0) as u64;
        if used + chunk + (64 << 10) >= limit {
            return Error::StoreFull { path: self.path.clone(), reason: cause.to_string() };
        }
        e
    }

    /// A read connection (from the pool, else a new one) inside a read transaction.
    fn read(&self) -> Result<Reader<'_>> {
        let idle = self.readers.lock().unwrap_or_else(std::sync::PoisonError::into_inner).pop();
        let store = match idle {
            Some(store) => store,
            None => Store::reader(&self.place, &self.pins, &self.config)?,
        };
        store.begin_read()?;
        Ok(Reader { shared: self, store: Some(store) })
    }

    /// A read of `scope` at a snapshot no older than the scope's view in memory (so the view
    /// can serve it): the reader, the scope's view and the user's write counter, or `None` for a
    /// user with no record.
    fn read_scope<'s>(&self, scope: Scope<'s>) -> Result<(Reader<'_>, Option<(View<'s>, i64)>)> {
        let reader = self.read()?;
        for _ in 0..3 {
            let Some((view, version)) = resolve(&reader, scope)? else { return Ok((reader, None)) };
            let slot = self.lock_index().slots.get(&(view.user, view.agent.map(str::to_owned))).cloned();
            let cached =
                slot.map(|s| s.view.read().unwrap_or_else(std::sync::PoisonError::into_inner).version);
            // A write committed after this snapshot began, and its records are in the view.
            if cached.is_some_and(|c| c > version) {
                reader.refresh()?;
                continue;
            }
            return Ok((reader, Some((view, version))));
        }
        let found = resolve(&reader, scope)?;
        Ok((reader, found))
    }

    /// Runs `read` on a snapshot of `scope` (with `None` for a user with no record), and again
    /// on a newer snapshot when it answers `None` because a write moved the view past its
    /// snapshot (three tries; on the last, `read` is told to load a private view if it must).
    fn read_view<'s, T>(
        &self,
        scope: Scope<'s>,
        mut read: impl FnMut(&Store, Option<(View<'s>, i64)>, bool) -> Result<Option<T>>,
    ) -> Result<T> {
        for attempt in 0..3 {
            let (store, found) = self.read_scope(scope).map_err(|e| self.located(e))?;
            if let Some(out) = read(&store, found, attempt == 2).map_err(|e| self.located(e))? {
                return Ok(out);
            }
        }
        Err(Error::Corrupt { path: self.path.clone(), reason: "a read's last try gave no answer".into() })
    }

    fn embedder(&self, operation: &'static str) -> Result<&Arc<dyn Embedder>> {
        self.embedder.as_ref().ok_or(Error::NoEmbedder { operation })
    }

    /// Wakes the worker.
    fn signal(&self) {
        self.signal.lock().unwrap_or_else(std::sync::PoisonError::into_inner).wake = true;
        self.wake.notify_all();
    }

    fn stopping(&self) -> bool {
        self.signal.lock().unwrap_or_else(std::sync::PoisonError::into_inner).stop
    }
}

/// The member closest to `vector` by cosine, and that cosine (ties to the earlier member).
fn nearest<'a, K>(vector: &[f32], members: impl Iterator<Item = (K, &'a [f32])>) -> Option<(f32, K)> {
    members.map(|(k, v)| (cosine(vector, v), k)).fold(None, |acc, (c, k)| match acc {
        Some((bc, _)) if bc >= c => acc,
        _ => Some((c, k)),
    })
}
