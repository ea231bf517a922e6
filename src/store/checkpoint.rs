//! Checkpoints beside the write connection rather than inside its commits.
//!
//! SQLite copies a file's write-ahead log back into the file (a checkpoint) inside whichever
//! commit first finds the log 1,000 pages long: that commit holds the write connection while
//! the pages are copied and both files are synced, and every write queued behind it waits. Here
//! a commit only notes the log's length; once it is [`EVERY`] pages past the last copy, the call
//! that lets the write connection go starts a thread that copies it, on a connection of its
//! own, while writers go on appending (and no caller waits for the copy). A copy beside the
//! writer cannot catch up with a log that keeps growing, and only a fully copied log is started
//! again from its beginning; so a commit that finds the log [`LIMIT`] pages long waits for the
//! copy running beside (if any) and copies the rest itself, as SQLite would (little is left by
//! then), and the next write starts the log again. The log stays bounded whoever writes, and
//! however far the copies fall behind.
//!
//! Nothing about durability changes: a commit is in the log before its call returns, whether or
//! not its pages have been copied yet, and SQLite's checkpoint is safe to interrupt anywhere.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use rusqlite::Connection;
use rusqlite::wal::CheckpointMode;

use super::{Conn, Store};

/// Pages appended to the log since the last copy at which the next call to let the write
/// connection go copies it (SQLite's own automatic checkpoint size).
pub(crate) const EVERY: i32 = 1000;

/// The log's length, in pages, at which a commit copies it itself (32 MiB of 4 KiB pages).
pub(crate) const LIMIT: i32 = 8000;

/// The checkpoints of one store file.
pub(crate) struct Checkpoints {
    shared: Arc<Shared>,
    /// The thread making the latest checkpoint (joined before the next one starts, and when the
    /// store is closed).
    thread: Mutex<Option<JoinHandle<()>>>,
}

struct Shared {
    path: PathBuf,
    busy_timeout_ms: u32,
    /// The log's length in pages after the last commit (the write connection's hook sets it).
    log: AtomicI32,
    /// The log's length the next copy is counted from: the pages the last copy made here had
    /// copied, or the log's length when it last could copy no more (a reader still needed the
    /// rest, or it failed), so that a stalled copy is tried again only [`EVERY`] pages later.
    mark: AtomicI32,
    /// Whether a thread is making checkpoints.
    running: AtomicBool,
    /// The connection checkpoints are made on, opened at the first one; held while one runs
    /// (a commit that copies the log at its limit waits for it).
    conn: Mutex<Option<Connection>>,
}

impl Checkpoints {
    /// Hooks `store`'s commits (a file's write connection; none for a database server), which
    /// then note the log's length instead of checkpointing at 1,000 pages. Where the hook
    /// cannot be set, SQLite's own automatic checkpoint stays, and so does `None`.
    pub(crate) fn hook(store: &mut Store, busy_timeout_ms: u32) -> Option<Checkpoints> {
        let Conn::File(writer) = &mut store.conn else {
            return None;
        };
        let shared = Arc::new(Shared {
            path: store.path.clone(),
            busy_timeout_ms,
            log: AtomicI32::new(0),
            mark: AtomicI32::new(0),
            running: AtomicBool::new(false),
            conn: Mutex::new(None),
        });
        let noted = Arc::clone(&shared);
        // SQLite's automatic checkpoint is itself such a hook: this one replaces it.
        let hooked = writer.wal_hook(Some(move |wal: &mut rusqlite::hooks::Wal, pages: std::ffi::c_int| {
            noted.log.store(pages, Ordering::Relaxed);
            if pages >= LIMIT {
                // After the copy running beside (SQLite would not wait for it: a writer that
                // outran it would find it running at every commit, and the log would grow on).
                let _turn = noted.conn.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                // As SQLite's own hook: a checkpoint that fails leaves the log for the next
                // commit; the commit itself has happened.
                let _ = wal.checkpoint_v2(CheckpointMode::PASSIVE);
            }
            Ok(())
        }));
        if let Err(e) = hooked {
            tracing::warn!(error = %e, "commits keep SQLite's own checkpoints: the log hook could not be set");
            return None;
        }
        Some(Checkpoints { shared, thread: Mutex::new(None) })
    }

    /// Starts copying the log into the file on a thread of its own, if that is due and none is
    /// copying it already; returns at once. Called without the write connection.
    pub(crate) fn start_if_due(&self) {
        if !self.shared.due() || self.shared.running.swap(true, Ordering::AcqRel) {
            return;
        }
        let mut slot = self.thread.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        // The previous thread has cleared `running`: it is done, or about to be.
        if let Some(done) = slot.take() {
            let _ = done.join();
        }
        let shared = Arc::clone(&self.shared);
        let spawned = std::thread::Builder::new().name("mnemon-checkpoint".into()).spawn(move || {
            // Until the log is no longer due (writes go on appending meanwhile), or a checkpoint
            // copies nothing more (what is left, a reader still needs).
            let mut before = -1;
            while shared.due() {
                match shared.checkpoint() {
                    Some(copied) if copied != before => before = copied,
                    _ => {
                        shared.mark.store(shared.log.load(Ordering::Relaxed), Ordering::Relaxed);
                        break;
                    }
                }
            }
            shared.running.store(false, Ordering::Release);
        });
        match spawned {
            Ok(thread) => *slot = Some(thread),
            Err(e) => {
                self.shared.running.store(false, Ordering::Release);
                tracing::warn!(error = %e, "no thread for a checkpoint; commits copy the log at its limit");
            }
        }
    }
}

impl Drop for Checkpoints {
    fn drop(&mut self) {
        let slot = self.thread.get_mut().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(thread) = slot.take() {
            let _ = thread.join();
        }
    }
}

impl Shared {
    /// Whether the log is [`EVERY`] pages past its mark.
    fn due(&self) -> bool {
        let log = self.log.load(Ordering::Relaxed);
        let mark = self.mark.load(Ordering::Relaxed);
        // A log shorter than its mark has been started again since.
        let mark = if log >= mark { mark } else { 0 };
        log - mark >= EVERY
    }

    /// A passive checkpoint: it never waits for a lock, and copies what no reader still needs.
    /// The log's pages copied by now; `None` (logged) where it could not run.
    fn checkpoint(&self) -> Option<i32> {
        let mut conn = self.conn.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if conn.is_none() {
            match open(&self.path, self.busy_timeout_ms) {
                Ok(c) => *conn = Some(c),
                Err(e) => {
                    tracing::warn!(error = %e, "a checkpoint's connection could not be opened");
                    return None;
                }
            }
        }
        let c = conn.as_ref()?;
        match c.wal_checkpoint_v2(None::<&str>, CheckpointMode::PASSIVE) {
            // -1: the connection has not opened the log (see `open`).
            Ok((_, copied)) if copied >= 0 => {
                self.mark.store(copied, Ordering::Relaxed);
                Some(copied)
            }
            Ok(_) => {
                tracing::warn!("a checkpoint found no log to copy");
                None
            }
            Err(e) => {
                tracing::warn!(error = %e, "a checkpoint failed; it is tried again 1,000 pages later");
                None
            }
        }
    }
}

fn open(path: &Path, busy_timeout_ms: u32) -> rusqlite::Result<Connection> {
    let conn = super::open::connect(path, busy_timeout_ms)?;
    // A connection opens the file's log at its first read; until then a checkpoint on it
    // copies nothing and reports -1 pages.
    conn.query_row("SELECT count(*) FROM sqlite_schema", [], |_| Ok(()))?;
    Ok(conn)
}

#[cfg(test)]
impl Checkpoints {
    /// Once the copy running (if any) is done: the log's length and its mark.
    pub(crate) fn settled(&self) -> (i32, i32) {
        if let Some(thread) = self.thread.lock().unwrap().take() {
            thread.join().unwrap();
        }
        (self.shared.log.load(Ordering::Relaxed), self.shared.mark.load(Ordering::Relaxed))
    }
}

#[cfg(test)]
mod tests {
    use super::{EVERY, LIMIT};
    use crate::Memory;
    use crate::embed::HashingEmbedder;

    /// A row of 64 KiB: 16 new pages a commit.
    const ROW: &str = "INSERT INTO scratch VALUES (zeroblob(65536))";

    fn store(dir: &std::path::Path) -> Memory {
        let m = Memory::builder(dir.join("s.db")).embedder(HashingEmbedder::default()).open().unwrap();
        m.engine().lock_store().file("test").unwrap().execute_batch("CREATE TABLE scratch (x BLOB)").unwrap();
        m
    }

    fn log_bytes(dir: &std::path::Path) -> u64 {
        std::fs::metadata(dir.join("s.db-wal")).map(|m| m.len()).unwrap_or(0)
    }

    #[test]
    fn the_log_is_copied_beside_the_writer_once_it_is_due() {
        let dir = tempfile::tempdir().unwrap();
        let m = store(dir.path());
        let engine = m.engine();
        // Each commit lets the write connection go, as every write does.
        for _ in 0..(2 * EVERY / 16) {
            engine.lock_store().file("test").unwrap().execute_batch(ROW).unwrap();
        }
        let (log, mark) = engine.checkpoints.as_ref().unwrap().settled();
        assert!(log >= 2 * EVERY, "the commits were noted: {log}");
        // Copied on the checkpoint's own connection (which must have opened the log first).
        assert!(mark > 0 && log - mark < EVERY, "log {log}, copied to {mark}");
    }

    #[test]
    fn a_commit_copies_and_the_next_restarts_the_log_at_its_limit() {
        let dir = tempfile::tempdir().unwrap();
        let m = store(dir.path());
        // One holder of the write connection throughout: nothing is copied beside it, and the
        // log grows until a commit finds it at its limit.
        let store = m.engine().lock_store();
        let conn = store.file("test").unwrap();
        let mut longest = 0;
        for _ in 0..(3 * LIMIT / 16) {
            conn.execute_batch(ROW).unwrap();
            longest = longest.max(log_bytes(dir.path()));
        }
        let frame = 4096 + 24;
        assert!(longest > u64::from(LIMIT.unsigned_abs()) * frame / 2, "the log grew: {longest} bytes");
        // Started again from its beginning each time: never past the limit and one commit.
        assert!(longest <= u64::from((LIMIT + 20).unsigned_abs()) * frame + 32, "{longest} bytes");
        let rows: i64 = conn.query_row("SELECT count(*) FROM scratch", [], |r| r.get(0)).unwrap();
        assert_eq!(rows, i64::from(3 * LIMIT / 16));
    }
}
