//! The facade: [`Memory`], one open store, whose methods each call one path (`write`, `read`,
//! `facts`, `export`) on the store's [`Engine`]. Opening is [`Memory::builder`].

mod builder;
mod read;
mod write;

pub use builder::{Builder, Location};

use std::path::Path;
use std::sync::Arc;

use crate::config::Config;
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::facts::worker::Worker;
use crate::model::scope::Scope;
use crate::store::Store;

/// A memory store: one SQLite file (or a database server's store), one embedder, one
/// configuration, and optionally an extractor.
///
/// `Memory` is `Send + Sync`; calls from several threads run side by side (reads never wait for
/// writes; writes take turns).
///
/// ```
/// use mnemon::{Memory, Message};
/// use mnemon::embed::HashingEmbedder;
/// # let dir = tempfile::tempdir().unwrap();
/// let memory = Memory::builder(dir.path().join("m.db")).embedder(HashingEmbedder::default()).open()?;
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
    background: Option<std::thread::JoinHandle<()>>,
}

/// What the caller's threads and the extraction worker share.
struct Shared {
    engine: Engine,
    /// Calls to [`Memory::remember`] waiting for the write connection (group commit).
    commits: crate::write::Commits,
    /// The extractor and the drain of the extraction queue.
    worker: Worker,
}

impl Shared {
    /// Drains the extraction queue in the calling thread (see [`Worker::drain`]).
    fn drain(&self) -> Result<Vec<(i64, Error)>> {
        self.worker.drain(&self.engine)
    }
}

impl Memory {
    /// The store's engine, for the crate's internal statistics.
    pub(crate) fn engine(&self) -> &Engine {
        &self.shared.engine
    }

    /// After a write queued rounds for extraction: wakes the worker, or (inline) extracts them
    /// here, returning the first failure of `user`'s rounds (of any user's with `None`); the
    /// rounds are committed either way, and a failed one stays queued.
    fn queued(&self, user: Option<i64>) -> Result<()> {
        if self.shared.worker.extractor.is_none() {
            return Ok(());
        }
        if self.background.is_some() {
            self.shared.worker.signal();
            return Ok(());
        }
        match self.shared.drain()?.into_iter().find(|(u, _)| user.is_none_or(|user| *u == user)) {
            Some((_, e)) => Err(e),
            None => Ok(()),
        }
    }

    /// Rounds of the user of `scope` (of every user with `None`) that wait for extraction. The
    /// queue is per user: a scope with an agent is refused.
    pub fn pending(&self, scope: Option<Scope<'_>>) -> Result<usize> {
        crate::facts::worker::pending(&self.shared.engine, scope)
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
        &self.shared.engine.config
    }

    /// The store's pins (key → value), including `pins_hash`.
    pub fn pins(&self) -> Result<std::collections::BTreeMap<String, String>> {
        Ok(self.shared.engine.pins.with_hash())
    }

    /// How this store's embedder turns cosines into the relevance scores of search hits and the
    /// labels of recalled rounds ([`Error::NoEmbedder`](crate::Error::NoEmbedder) without one).
    pub fn calibration(&self) -> Result<crate::embed::Calibration> {
        Ok(self.shared.engine.embedder("calibration")?.calibration())
    }

    /// SQLite, sqlite-vec and FTS5 versions of this build.
    pub fn versions(&self) -> Result<Vec<(String, String)>> {
        self.shared.engine.lock_store().versions()
    }

    /// Checks the store file: SQLite's `quick_check` (or, `full`, the slower `integrity_check`,
    /// which also compares every index with its table). Returns the problems found, none when
    /// the file is sound.
    ///
    /// ```
    /// # use mnemon::Memory;
    /// # use mnemon::embed::HashingEmbedder;
    /// # let dir = tempfile::tempdir().unwrap();
    /// let memory = Memory::builder(dir.path().join("m.db")).embedder(HashingEmbedder::default()).open()?;
    /// assert!(memory.check(true)?.is_empty());
    /// # Ok::<(), mnemon::Error>(())
    /// ```
    pub fn check(&self, full: bool) -> Result<Vec<String>> {
        let engine = &self.shared.engine;
        let reader = Store::reader(&engine.place, &engine.pins, &engine.config)?;
        reader.check(full).map_err(|e| e.in_store(&engine.path))
    }

    /// Copies the store into a new file at `out` (which must not exist) with SQLite's online
    /// backup: one consistent snapshot, taken while writers in this or other processes go on
    /// (they never wait for it). The copy is checked (`quick_check`) before this returns; on
    /// any failure the partial file is removed. Returns the bytes written.
    ///
    /// ```
    /// # use mnemon::{Memory, Message};
    /// # use mnemon::embed::HashingEmbedder;
    /// # let dir = tempfile::tempdir().unwrap();
    /// let memory = Memory::builder(dir.path().join("m.db")).embedder(HashingEmbedder::default()).open()?;
    /// memory.add(&[Message::user("I live in Porto.", "2026-01-02T09:00:00")], "eve")?;
    /// let copy = dir.path().join("copy.db");
    /// memory.backup(&copy)?;
    /// assert_eq!(Memory::builder(&copy).stored().open()?.rounds("eve")?.len(), 1);
    /// # Ok::<(), mnemon::Error>(())
    /// ```
    pub fn backup(&self, out: impl AsRef<Path>) -> Result<u64> {
        let engine = &self.shared.engine;
        crate::store::backup(&engine.place, &engine.pins, &engine.config, &engine.path, out.as_ref())
    }

    /// The bytes this store's in-memory views hold now (growth after writes included), and how
    /// many views there are: what [`Config::view_cache_bytes`](crate::config::Config::view_cache_bytes)
    /// and a [`MemoryBudget`](crate::config::MemoryBudget) bound.
    pub fn view_cache(&self) -> (usize, usize) {
        self.shared.engine.views.held()
    }

    /// The name of every user with a record in the store, sorted: one read of one table (see
    /// [`users`](Memory::users) for what each holds).
    pub fn user_names(&self) -> Result<Vec<String>> {
        self.shared.engine.read()?.user_names()
    }
}

impl Drop for Memory {
    fn drop(&mut self) {
        if let Some(worker) = self.background.take() {
            // The worker gives up the round it is extracting (within a token); queued rounds,
            // that one included, stay queued.
            self.shared.worker.stop();
            let _ = worker.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::config::Config;
    use crate::embed::HashingEmbedder;
    use crate::{Error, Memory};

    #[test]
    fn a_read_statement_is_not_prepared_again_when_its_values_change() {
        use mnemon_backend::Param;
        let dir = tempfile::tempdir().unwrap();
        let m = Memory::builder(dir.path().join("s.db")).embedder(HashingEmbedder::default()).open().unwrap();
        let rounds: Vec<crate::Message> =
            (1..=3).map(|d| crate::Message::user(format!("Day {d}."), format!("2026-01-0{d}"))).collect();
        m.add(&rounds, "ana").unwrap();
        let store = m.shared.engine.read().unwrap();
        // The read path's statement for one round's facts, run for several rounds and agents.
        let sql = format!(
            "SELECT id FROM facts WHERE round_id = ?3 AND user_id = ?1 AND salience > 0 AND {} ORDER BY id",
            crate::store::visible("agent", 2)
        );
        let runs: Vec<Vec<Param<'_>>> = [(None, 1), (None, 2), (Some("a"), 2), (None, 3)]
            .into_iter()
            .map(|(agent, round)| vec![Param::Int(1), Param::from(agent), Param::Int(round)])
            .collect();
        assert_eq!(store.reprepares(&sql, &runs), 0);
    }

    #[test]
    fn a_write_statement_is_not_prepared_again_when_its_values_change() {
        use mnemon_backend::Param;
        let dir = tempfile::tempdir().unwrap();
        let m = Memory::builder(dir.path().join("s.db")).embedder(HashingEmbedder::default()).open().unwrap();
        m.remember(&[crate::model::note::NewNote::new("Ana likes tea.", "2026-01-02")], "ana").unwrap();
        let store = m.shared.engine.lock_store();
        // The lookup every new note runs (is it a duplicate?), for several agents and texts.
        let sql = "SELECT note_key FROM notes WHERE user_id = ?1 AND norm_key = ?3 AND condensed_into IS NULL \
                   AND (agent IS NULL OR agent = ?2) ORDER BY id LIMIT 1";
        let runs: Vec<Vec<Param<'_>>> =
            [(None, "ana likes tea"), (Some("a"), "x"), (None, "y"), (Some("b"), "z")]
                .into_iter()
                .map(|(agent, norm)| vec![Param::Int(1), Param::from(agent), Param::from(norm)])
                .collect();
        assert_eq!(store.reprepares(sql, &runs), 0);
        // And a write's savepoint keeps its pages in memory (2: MEMORY), not in a spilled file.
        assert_eq!(store.pragma_i64("temp_store"), 2);
    }

    #[test]
    fn vectors_read_chunk_by_chunk_equal_those_read_one_by_one() {
        let dir = tempfile::tempdir().unwrap();
        let m = Memory::builder(dir.path().join("s.db")).embedder(HashingEmbedder::default()).open().unwrap();
        // Users interleaved; "ana" past one sqlite-vec chunk (1,024 vectors), half of it private
        // to an agent; "bo" forgotten in the middle, so that chunks have holes.
        let mut n = 0u64;
        for s in 0..60 {
            for (user, agent) in [("ana", None), ("bo", None), ("ana", Some("helper")), ("cy", None)] {
                let messages: Vec<crate::Message> = (0..10)
                    .map(|r| {
                        n += 1;
                        let text = format!("w{} x{} y{} z{}", n * 7 % 1000, n * 13 % 997, n * 31 % 991, n);
                        crate::Message::user(text, format!("2026-01-{:02}T10:{r:02}:00", s % 28 + 1))
                            .in_session(format!("s{s}"))
                    })
                    .collect();
                m.add(&messages, crate::Scope::user(user).with_agent(agent)).unwrap();
            }
            if s == 30 {
                m.forget_user("bo").unwrap();
            }
        }
        let store = m.shared.engine.read().unwrap();
        for (user, agent) in
            [("ana", None), ("ana", Some("helper")), ("ana", Some("other")), ("cy", None), ("bo", None)]
        {
            let (id, _) = store.user(user).unwrap().unwrap();
            let view = crate::store::View { user: id, agent };
            let (got, want) =
                (store.user_vectors(view).unwrap(), store.user_vectors_one_by_one(view).unwrap());
            assert!(!want.ids.is_empty());
            if (user, agent) == ("ana", Some("helper")) {
                assert!(want.ids.len() > 1024, "{} vectors: not past one chunk", want.ids.len());
            }
            assert_eq!(
                (got.ids, got.days, got.saliences),
                (want.ids, want.days, want.saliences),
                "{user} {agent:?}"
            );
            assert!(
                got.data.iter().zip(&want.data).all(|(a, b)| a.to_bits() == b.to_bits()),
                "{user} {agent:?}"
            );
            assert_eq!(got.data.len(), want.data.len());
        }
    }

    #[test]
    fn read_connections_are_capped_and_a_read_past_the_cap_waits_then_is_busy() {
        let dir = tempfile::tempdir().unwrap();
        let config = Config { max_readers: 2, busy_timeout_ms: 50, ..Config::default() };
        let m = Memory::builder(dir.path().join("s.db"))
            .embedder(HashingEmbedder::default())
            .config(config)
            .open()
            .unwrap();
        let engine = &m.shared.engine;
        let (a, b) = (engine.read().unwrap(), engine.read().unwrap());
        assert!(matches!(engine.read(), Err(Error::Busy)), "a third connection was opened");
        assert!(matches!(m.user_names(), Err(Error::Busy)));
        drop(a);
        // A returned connection is reused, and a waiting read gets one as soon as it is back.
        let c = engine.read().unwrap();
        std::thread::scope(|s| {
            let waiting = s.spawn(|| engine.read().map(drop));
            std::thread::sleep(std::time::Duration::from_millis(10));
            drop(c);
            waiting.join().unwrap().unwrap();
        });
        drop(b);
        assert_eq!(m.user_names().unwrap(), Vec::<String>::new());
    }
}
