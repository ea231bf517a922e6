//! What every path works on: the store's write connection and its pool of read connections, the
//! views in memory, the embedder and the configuration, behind one [`Engine`] per open store.
//!
//! Owns the concurrency between them: writes take turns on the write connection; a read takes a
//! connection of its own and one snapshot, and ranks with a view at that snapshot's version
//! (never queuing behind a write); errors are told which store they happened in. Must not hold
//! a statement (those are in `store`), rank (`index`) or decide what a path does.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use crate::config::Config;
use crate::embed::Embedder;
use crate::error::{Error, Result};
use crate::index::ledger::Ledgers;
use crate::index::rank::Scored;
use crate::index::view::Question;
use crate::index::views::{MemoryBudget, Views};
use crate::model::scope::Scope;
use crate::model::time::Timestamp;
use crate::store::{Checkpoints, Pins, Place, Store, View};

/// One open store and what its paths share.
pub(crate) struct Engine {
    /// The write connection: writes (and reads that must see a write's own state) take turns.
    store: Mutex<Store>,
    /// Read connections: reads run on their own connection and snapshot, never queuing behind
    /// a write; at most `config.max_readers` open at once.
    readers: Mutex<Pool>,
    /// Signalled when a read connection is returned or closed.
    returned: Condvar,
    /// The file (or the database's location), for messages.
    pub(crate) path: PathBuf,
    /// Where the store is: readers open there.
    pub(crate) place: Place,
    /// The pins it was opened with (fixed for the life of the handle): readers open with them,
    /// and callers read them without taking the write connection.
    pub(crate) pins: Pins,
    pub(crate) embedder: Option<Arc<dyn Embedder>>,
    pub(crate) config: Config,
    /// Views in memory, by user row id and agent.
    pub(crate) views: Views,
    /// The active facts new facts are settled against, by user row id and agent.
    pub(crate) ledgers: Ledgers,
    /// A file's checkpoints, made beside the write connection (none for a database server).
    pub(crate) checkpoints: Option<Checkpoints>,
}

/// The write connection, held. Let go, it starts copying the file's log back into the file if
/// that is due (see [`Checkpoints`]).
pub(crate) struct StoreGuard<'a> {
    guard: Option<MutexGuard<'a, Store>>,
    engine: &'a Engine,
}

impl StoreGuard<'_> {
    /// Lets the write connection go without checkpointing: for a caller that has others to
    /// wake first, and then calls [`Engine::checkpoint`].
    pub(crate) fn unlock(mut self) {
        self.guard = None;
    }
}

impl std::ops::Deref for StoreGuard<'_> {
    type Target = Store;
    fn deref(&self) -> &Store {
        self.guard.as_deref().expect("the write connection is held until the guard goes")
    }
}

impl std::ops::DerefMut for StoreGuard<'_> {
    fn deref_mut(&mut self) -> &mut Store {
        self.guard.as_deref_mut().expect("the write connection is held until the guard goes")
    }
}

impl Drop for StoreGuard<'_> {
    fn drop(&mut self) {
        if let Some(guard) = self.guard.take() {
            drop(guard);
            self.engine.checkpoint();
        }
    }
}

/// The read connections of a store: idle ones are reused, so that a busy server does not open
/// (and parse the schema on) a connection per request (docs/DECISIONS.md, 2026-12-01), and no
/// more than `Config::max_readers` are open at once. The one idle longest is taken first, so
/// every open connection stays in use.
#[derive(Default)]
struct Pool {
    idle: VecDeque<Store>,
    /// Open connections, idle or in use.
    open: usize,
}

/// A read connection inside a read transaction; returned to the pool when dropped.
pub(crate) struct Reader<'a> {
    engine: &'a Engine,
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
            let ended = store.end_read().is_ok();
            let mut pool = self.engine.pool();
            if ended {
                pool.idle.push_back(store);
            } else {
                pool.open -= 1;
            }
            drop(pool);
            self.engine.returned.notify_one();
        }
    }
}

/// The scope's view in `store` and the user's write counter, if the user exists.
pub(crate) fn resolve<'s>(store: &Store, scope: Scope<'s>) -> Result<Option<(View<'s>, i64)>> {
    Ok(store.user(scope.user)?.map(|(user, version)| (View { user, agent: scope.agent }, version)))
}

/// The sortable form of the user's logical now, the time a decision not tied to a record's own
/// time is logged at (empty for a user with no timestamp yet).
pub(crate) fn logical_now(store: &Store, user: i64) -> Result<String> {
    Ok(store
        .user_now(user)?
        .map(|(raw, unix)| Timestamp::from_parts(raw.clone(), unix).map_or(raw, |t| t.sortable()))
        .unwrap_or_default())
}

impl Engine {
    /// The engine of an open store.
    pub(crate) fn new(
        mut store: Store,
        embedder: Option<Arc<dyn Embedder>>,
        config: Config,
        budget: Option<MemoryBudget>,
    ) -> Engine {
        let checkpoints = Checkpoints::hook(&mut store, config.busy_timeout_ms);
        Engine {
            checkpoints,
            readers: Mutex::default(),
            returned: Condvar::new(),
            path: store.path.clone(),
            place: store.place.clone(),
            pins: store.pins.clone(),
            store: Mutex::new(store),
            embedder,
            ledgers: Ledgers::new(config.view_cache_bytes / 4, budget.clone()),
            views: Views::new(config.view_cache_bytes, budget),
            config,
        }
    }

    /// Opens the `Config::min_readers` read connections of a store file (a PostgreSQL store
    /// opens its connections as reads need them).
    pub(crate) fn open_readers(&self) -> Result<()> {
        if !matches!(self.place, Place::File(_)) {
            return Ok(());
        }
        let mut pool = self.pool();
        while pool.open < self.config.min_readers {
            let store = Store::reader(&self.place, &self.pins, &self.config).map_err(|e| self.located(e))?;
            pool.idle.push_back(store);
            pool.open += 1;
        }
        Ok(())
    }

    // A panic inside a call cannot leave the store half-written (every write is a transaction
    // that rolls back on drop), and the views are checked against the store's write counter, so
    // a poisoned lock is safe to take over.
    /// The write connection.
    pub(crate) fn lock_store(&self) -> StoreGuard<'_> {
        let guard = self.store.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        StoreGuard { guard: Some(guard), engine: self }
    }

    /// Starts copying the file's log back into the file, on a thread of its own, if that is
    /// due and no copy is running (see [`Checkpoints`]). Called without the write connection.
    pub(crate) fn checkpoint(&self) {
        if let Some(c) = &self.checkpoints {
            c.start_if_due();
        }
    }

    /// `e`, told which store it happened in ([`Error::in_store`]).
    pub(crate) fn located(&self, e: Error) -> Error {
        e.in_store(&self.path)
    }

    /// As [`located`](Engine::located), for a write: one that failed while the file has less
    /// room below [`Config::max_store_bytes`] than one sqlite-vec chunk (1,024 vectors) and
    /// 64 KiB is [`Error::StoreFull`] whatever SQLite said (sqlite-vec reports a full file as
    /// "could not insert a new vector chunk").
    pub(crate) fn located_write(&self, e: Error) -> Error {
        let e = e.in_store(&self.path);
        let (Some(cause), Some(limit)) = (e.sqlite_message(), self.config.max_store_bytes) else { return e };
        let used = self.lock_store().file_bytes().unwrap_or(0);
        let chunk = 1024 * 4 * self.pins.dim().unwrap_or(0) as u64;
        if used + chunk + (64 << 10) >= limit {
            return Error::StoreFull { path: self.path.clone(), reason: cause };
        }
        e
    }

    /// The embedder, or [`Error::NoEmbedder`] naming the `operation` that needs it.
    pub(crate) fn embedder(&self, operation: &'static str) -> Result<&Arc<dyn Embedder>> {
        self.embedder.as_ref().ok_or(Error::NoEmbedder { operation })
    }

    fn pool(&self) -> MutexGuard<'_, Pool> {
        self.readers.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A read connection (an idle one, else a new one while fewer than `max_readers` are open,
    /// else the first one returned within the busy timeout) inside a read transaction.
    pub(crate) fn read(&self) -> Result<Reader<'_>> {
        let wait = Duration::from_millis(u64::from(self.config.busy_timeout_ms));
        let mut pool = self.pool();
        let store = loop {
            if let Some(store) = pool.idle.pop_front() {
                break store;
            }
            if pool.open < self.config.max_readers {
                pool.open += 1;
                drop(pool);
                match Store::reader(&self.place, &self.pins, &self.config) {
                    Ok(store) => break store,
                    Err(e) => {
                        self.pool().open -= 1;
                        self.returned.notify_one();
                        return Err(e);
                    }
                }
            }
            // Every connection is in use: wait for one (no clock is read; a wait that times out
            // with still none free is `Busy`).
            let (guard, waited) =
                self.returned.wait_timeout(pool, wait).unwrap_or_else(std::sync::PoisonError::into_inner);
            pool = guard;
            if waited.timed_out() && pool.idle.is_empty() && pool.open >= self.config.max_readers {
                return Err(Error::Busy);
            }
        };
        // Returned to the pool (or closed) when the reader drops, even if the snapshot fails.
        let reader = Reader { engine: self, store: Some(store) };
        reader.begin_read()?;
        Ok(reader)
    }

    /// A read in `scope` (checked): `f` with the store and the scope's view, or the empty answer
    /// for a user with no record.
    pub(crate) fn reading<T: Default>(
        &self,
        scope: Scope<'_>,
        f: impl FnOnce(&Store, View<'_>) -> Result<T>,
    ) -> Result<T> {
        scope.check()?;
        let read = || {
            let store = self.read()?;
            match resolve(&store, scope)? {
                Some((view, _)) => f(&store, view),
                None => Ok(T::default()),
            }
        };
        read().map_err(|e| self.located(e))
    }

    /// A read of `scope` at a snapshot no older than the scope's view in memory (so the view
    /// can serve it): the reader, the scope's view and the user's write counter, or `None` for a
    /// user with no record.
    fn read_scope<'s>(&self, scope: Scope<'s>) -> Result<(Reader<'_>, Option<(View<'s>, i64)>)> {
        let reader = self.read()?;
        for _ in 0..3 {
            let Some((view, version)) = resolve(&reader, scope)? else { return Ok((reader, None)) };
            // A write committed after this snapshot began, and its records are in the view.
            if self.views.version(view.user, view.agent).is_some_and(|c| c > version) {
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
    pub(crate) fn read_view<'s, T>(
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

    /// Ranks `question` in `view` at the snapshot's `version` (see [`Views::rank`]).
    pub(crate) fn rank(
        &self,
        store: &Store,
        view: View<'_>,
        version: i64,
        question: &Question<'_>,
        last_try: bool,
    ) -> Result<Option<Vec<Scored>>> {
        self.views.rank(&self.store, store, view, version, question, last_try)
    }
}
