//! The side files beside a store: the embedder's vector cache and the extractor's output cache.
//! Each is a SQLite file of its own, shared safely between processes (WAL, a busy timeout,
//! insert-or-ignore); what they cache and how they key it is `embed::cache`'s and
//! `facts::extract::cache`'s.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Mutex, MutexGuard};

use rusqlite::{Connection, OptionalExtension, params};

use super::Pins;
use super::rows::{blob_vector, vector_blob};
use super::sqlite::{open_side_db, truncate_wal};
use crate::error::{Error, Result};

fn lock(conn: &Mutex<Connection>) -> MutexGuard<'_, Connection> {
    conn.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A file of vectors by 32-byte key.
pub(crate) struct VectorFile {
    conn: Mutex<Connection>,
}

impl VectorFile {
    /// Opens (creating if needed) the file at `path`.
    pub(crate) fn open(path: &Path) -> Result<VectorFile> {
        let conn = open_side_db(
            path,
            "CREATE TABLE IF NOT EXISTS vectors(key BLOB PRIMARY KEY, vector BLOB NOT NULL) WITHOUT ROWID;",
        )?;
        Ok(VectorFile { conn: Mutex::new(conn) })
    }

    /// The vector stored under each key, if any.
    pub(crate) fn get(&self, keys: &[[u8; 32]]) -> Result<Vec<Option<Vec<f32>>>> {
        let conn = lock(&self.conn);
        let mut stmt = conn.prepare_cached("SELECT vector FROM vectors WHERE key = ?1")?;
        let mut out = Vec::with_capacity(keys.len());
        for key in keys {
            let blob: Option<Vec<u8>> = stmt.query_row([&key[..]], |r| r.get(0)).optional()?;
            out.push(blob.map(|b| blob_vector(&b)));
        }
        Ok(out)
    }

    /// Stores each vector under its key (a key already there keeps its vector), in one
    /// transaction.
    pub(crate) fn put(&self, entries: &[(&[u8; 32], &[f32])]) -> Result<()> {
        let mut conn = lock(&self.conn);
        let tx = conn.transaction()?;
        {
            let mut insert =
                tx.prepare_cached("INSERT OR IGNORE INTO vectors(key, vector) VALUES (?1, ?2)")?;
            for (key, vector) in entries {
                insert.execute(params![&key[..], vector_blob(vector)])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// Removes the vectors under `keys`.
    pub(crate) fn remove(&self, keys: &[[u8; 32]]) -> Result<()> {
        let conn = lock(&self.conn);
        let mut delete = conn.prepare_cached("DELETE FROM vectors WHERE key = ?1")?;
        for key in keys {
            delete.execute([&key[..]])?;
        }
        Ok(())
    }

    /// Empties the file's log (see [`truncate_wal`]): false when another connection's read kept it.
    pub(crate) fn checkpoint(&self) -> Result<bool> {
        truncate_wal(&lock(&self.conn))
    }
}

/// A model's raw output as the output file keeps it.
pub(crate) struct StoredOutput {
    pub raw: String,
    /// Whether the decode stopped at its token bound.
    pub stopped: bool,
    pub prompt_tokens: i64,
    pub generated_tokens: i64,
}

/// A file of model outputs by key, stamped with the pins of the model that made them.
pub(crate) struct OutputFile {
    conn: Mutex<Connection>,
}

impl OutputFile {
    /// Opens (creating and stamping with `pins` if new) the file at `path`; a file stamped with
    /// other pins is [`Error::PinMismatch`] naming every differing pin.
    pub(crate) fn open(path: &Path, pins: &Pins) -> Result<OutputFile> {
        let conn = open_side_db(
            path,
            "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
             CREATE TABLE IF NOT EXISTS extractions(
               key TEXT PRIMARY KEY, raw TEXT NOT NULL, stopped INTEGER NOT NULL,
               prompt_tokens INTEGER NOT NULL, generated_tokens INTEGER NOT NULL) WITHOUT ROWID;",
        )?;
        {
            let tx = conn.unchecked_transaction()?;
            for (k, v) in &pins.0 {
                tx.execute("INSERT OR IGNORE INTO meta(key, value) VALUES (?1, ?2)", params![k, v])?;
            }
            tx.commit()?;
        }
        let stored: BTreeMap<String, String> = conn
            .prepare("SELECT key, value FROM meta")?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<rusqlite::Result<_>>()?;
        let differences = Pins(stored).differences(pins);
        if !differences.is_empty() {
            return Err(Error::PinMismatch { differences });
        }
        Ok(OutputFile { conn: Mutex::new(conn) })
    }

    /// The output stored under `key`, if any.
    pub(crate) fn get(&self, key: &str) -> Result<Option<StoredOutput>> {
        Ok(lock(&self.conn)
            .query_row(
                "SELECT raw, stopped, prompt_tokens, generated_tokens FROM extractions WHERE key = ?1",
                [key],
                |r| {
                    Ok(StoredOutput {
                        raw: r.get(0)?,
                        stopped: r.get(1)?,
                        prompt_tokens: r.get(2)?,
                        generated_tokens: r.get(3)?,
                    })
                },
            )
            .optional()?)
    }

    /// Stores a raw output under `key` with whether it `stopped` at its bound and its token counts
    /// (a key already there keeps its output).
    pub(crate) fn put(&self, key: &str, raw: &str, stopped: bool, tokens: (i64, i64)) -> Result<()> {
        lock(&self.conn).execute(
            "INSERT OR IGNORE INTO extractions(key, raw, stopped, prompt_tokens, generated_tokens)
             VALUES (?1, ?2, ?3, ?4, ?5)",
            params![key, raw, stopped, tokens.0, tokens.1],
        )?;
        Ok(())
    }

    /// Removes the output under `key`.
    pub(crate) fn remove(&self, key: &str) -> Result<()> {
        lock(&self.conn).execute("DELETE FROM extractions WHERE key = ?1", [key])?;
        Ok(())
    }

    /// Empties the file's log (see [`truncate_wal`]).
    pub(crate) fn checkpoint(&self) -> Result<bool> {
        truncate_wal(&lock(&self.conn))
    }
}
