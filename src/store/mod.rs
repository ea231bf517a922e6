//! The store: the only code that knows SQL.
//!
//! One SQLite file in WAL mode, or a database server's store through a [`db::Backend`]. Tables: `meta` (pins), `users` (logical now, a write counter),
//! `rounds` (verbatim turns), `facts` (extracted from rounds), `extractors` (the pins of every
//! extractor that produced a fact; each round and fact names its own), `notes` (direct memories,
//! with `note_tags`), a sqlite-vec `vec0` table per record kind (partitioned by user), FTS5 over
//! round and note text, `extract_queue` and `decisions` (the write-path decision log).
//! Every read and write names its user, and every read that can see agent-private records
//! applies the visibility rule ([`View`]); no statement here can touch another user's rows.
//! The store never embeds, ranks or renders.

mod as_of;
mod browse;
mod checkpoint;
pub(crate) mod db;
mod extractors;
mod facts;
mod maintenance;
mod notes;
mod open;
mod pcache;
mod pins;
mod postgres;
mod rounds;
mod rows;
mod schema;
pub(crate) mod side;
mod sqlite;
mod users;

pub(crate) use as_of::AsOf;
pub(crate) use browse::Tally;
pub(crate) use checkpoint::Checkpoints;
pub(crate) use extractors::ExtractorRow;
pub(crate) use facts::{ActiveFact, FactRow};
pub(crate) use maintenance::backup;
pub(crate) use notes::{NoteMeta, NoteRow};
pub(crate) use pins::{
    EXTRACTION, NOTE_PINS, Pins, SCHEMA_VERSION, extractor_hash, extractor_json, split_legacy,
};
pub(crate) use rounds::RoundRow;
pub(crate) use rows::UserVectors;
pub(crate) use users::DecisionRow;

/// The writes used inside a caller's transaction ([`Tx`]).
pub(crate) mod write {
    pub(crate) use super::extractors::write::*;
    pub(crate) use super::facts::write::*;
    pub(crate) use super::notes::write::*;
    pub(crate) use super::rounds::write::*;
    pub(crate) use super::users::write::*;
}

use std::path::PathBuf;
use std::sync::Arc;

use rusqlite::Connection;

use db::Db;

use crate::error::{Error, Result};

/// Whose records a read sees: a user's, and of the agent-private ones only this agent's.
///
/// With `agent: None` the read sees every record of the user (shared and every agent's); with
/// `agent: Some(a)` it sees the user's shared records (written without an agent) and agent
/// `a`'s own. SQL applies it as `(CAST(?a AS TEXT) IS NULL OR agent IS NULL OR agent = ?a)` (the cast: PostgreSQL must know the type).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct View<'a> {
    pub user: i64,
    pub agent: Option<&'a str>,
}

/// The visibility rule as an SQL condition on `column`, with the agent bound as `?param`.
pub(crate) fn visible(column: &str, param: usize) -> String {
    format!("(CAST(?{param} AS TEXT) IS NULL OR {column} IS NULL OR {column} = ?{param})")
}

/// `column` is one of the list bound as `?param` (`Param::Ints` or `Param::Texts`): JSON read by
/// `json_each` in SQLite, an array in PostgreSQL.
pub(crate) fn among(dialect: db::Dialect, column: &str, param: usize) -> String {
    match dialect {
        db::Dialect::Sqlite => format!("{column} IN (SELECT value FROM json_each(?{param}))"),
        db::Dialect::Postgres => format!("{column} = ANY(?{param})"),
    }
}

/// A write transaction on the store (SQLite: `BEGIN IMMEDIATE`; another backend: its
/// [`begin_write`](db::Connection::begin_write), or [`begin_user_write`](db::Connection::begin_user_write)
/// for one user's records): every write of one call happens inside one, and
/// dropping it without [`commit`](Tx::commit) rolls everything back.
pub(crate) enum Tx<'a> {
    File(rusqlite::Transaction<'a>),
    Remote(RemoteTx<'a>),
}

/// A transaction on another backend's connection, rolled back when dropped uncommitted.
pub(crate) struct RemoteTx<'a> {
    conn: &'a dyn db::Connection,
    open: bool,
}

impl Drop for RemoteTx<'_> {
    fn drop(&mut self) {
        if self.open
            && let Err(e) = self.conn.rollback()
        {
            tracing::warn!(error = %e, "rolling back a write transaction failed");
        }
    }
}

impl Tx<'_> {
    fn db(&self) -> &dyn Db {
        match self {
            Tx::File(t) => &**t,
            Tx::Remote(r) => r.conn,
        }
    }

    pub(crate) fn commit(self) -> Result<()> {
        match self {
            Tx::File(t) => Ok(t.commit()?),
            Tx::Remote(mut r) => {
                r.open = false;
                r.conn.commit()
            }
        }
    }

    /// The SQLite transaction, for the statements only a SQLite file runs (schema, migration).
    pub(super) fn file(&self) -> &Connection {
        match self {
            Tx::File(t) => t,
            Tx::Remote(_) => unreachable!("schema statements of a SQLite file run on a SQLite store"),
        }
    }
}

impl Db for Tx<'_> {
    fn dialect(&self) -> db::Dialect {
        self.db().dialect()
    }
    fn query(
        &self,
        sql: &str,
        params: &[db::Param<'_>],
        each: &mut dyn FnMut(&dyn db::Row) -> Result<()>,
    ) -> Result<()> {
        self.db().query(sql, params, each)
    }
    fn execute(&self, sql: &str, params: &[db::Param<'_>]) -> Result<u64> {
        self.db().execute(sql, params)
    }
    fn batch(&self, sql: &str) -> Result<()> {
        self.db().batch(sql)
    }
}

/// Where a store lives: a SQLite file, or another backend's database.
#[derive(Clone)]
pub(crate) enum Place {
    File(PathBuf),
    Remote(Arc<dyn db::Backend>),
}

impl Place {
    /// What messages call it: the file's path, or the backend's location (no password).
    pub(crate) fn path(&self) -> PathBuf {
        match self {
            Place::File(p) => p.clone(),
            Place::Remote(b) => PathBuf::from(b.location()),
        }
    }

    /// Whether two places are one store: the same file under any path (its device and inode),
    /// or the same database and schema as the backends tell. Nothing is written to find out.
    pub(crate) fn same_store(&self, other: &Place) -> Result<bool> {
        match (self, other) {
            (Place::File(a), Place::File(b)) => Ok(file_identity(a)? == file_identity(b)?),
            (Place::Remote(a), Place::Remote(b)) => match (a.identity()?, b.identity()?) {
                (Some(x), Some(y)) => Ok(x == y),
                _ => Ok(a.location() == b.location()),
            },
            _ => Ok(false),
        }
    }
}

/// What names a file whatever the path: its device and inode (its canonical path elsewhere).
fn file_identity(path: &std::path::Path) -> Result<String> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(path)?;
        Ok(format!("{}:{}", m.dev(), m.ino()))
    }
    #[cfg(not(unix))]
    {
        let p = std::fs::canonicalize(path)?;
        Ok(p.display().to_string())
    }
}

/// A store's connection.
pub(crate) enum Conn {
    File(Connection),
    Remote(Box<dyn db::Connection>),
}

/// An open store.
pub(crate) struct Store {
    conn: Conn,
    pub(crate) place: Place,
    /// The file, or the backend's location, for messages.
    pub(crate) path: PathBuf,
    pub(crate) pins: Pins,
}

/// How [`Store::open`] treats a missing or empty file and the stored pins.
#[derive(Clone, Copy)]
pub(crate) enum OpenMode<'a> {
    /// Create the store with these pins if it is new; otherwise every pin must match.
    Expect(&'a Pins),
    /// As `Expect`, for a handle without an extractor: a store that extracts opens too (its
    /// rounds are then queued for whichever handle has one), so reading never needs the model.
    ExpectReading(&'a Pins),
    /// The store must exist; take its stored pins as they are.
    Stored,
}

impl Store {
    /// The connection, for the statements in `store/`.
    pub(crate) fn db(&self) -> &dyn Db {
        match &self.conn {
            Conn::File(c) => c,
            Conn::Remote(c) => as_db(&**c),
        }
    }

    /// Whether the database's KNN may use an approximate index ([`db::Backend::approximate`]).
    pub(crate) fn approximate(&self) -> bool {
        matches!(&self.place, Place::Remote(b) if b.approximate())
    }

    /// The SQLite connection, or what the operation needs on another backend.
    pub(super) fn file(&self, operation: &str) -> Result<&Connection> {
        match &self.conn {
            Conn::File(c) => Ok(c),
            Conn::Remote(_) => Err(Error::Database(format!(
                "{operation} works on a SQLite store only; use the database server's own tools"
            ))),
        }
    }

    /// Starts a read transaction: every read until [`end_read`](Store::end_read) sees one
    /// snapshot of the file.
    pub(crate) fn begin_read(&self) -> Result<()> {
        match &self.conn {
            Conn::File(c) => Ok(c.execute_batch("BEGIN DEFERRED")?),
            Conn::Remote(c) => c.begin_read(),
        }
    }

    /// Ends the read transaction.
    pub(crate) fn end_read(&self) -> Result<()> {
        match &self.conn {
            Conn::File(c) if !c.is_autocommit() => c.execute_batch("COMMIT")?,
            Conn::File(_) => {}
            Conn::Remote(c) => c.commit()?,
        }
        Ok(())
    }

    /// Starts a write transaction for the records of `users` (names) alone: on a file, the
    /// whole-store [`begin`](Store::begin); on a database server, one that writers for other
    /// users run beside ([`begin_user_write`](db::Connection::begin_user_write)). Every statement
    /// in it touches only these users' rows (and rows no other user shares).
    pub(crate) fn begin_for(&mut self, users: &[&str]) -> Result<Tx<'_>> {
        if matches!(self.conn, Conn::File(_)) {
            return self.begin();
        }
        match &self.conn {
            Conn::Remote(c) => {
                c.begin_user_write(users)?;
                Ok(Tx::Remote(RemoteTx { conn: &**c, open: true }))
            }
            Conn::File(_) => unreachable!("a file's transaction began above"),
        }
    }

    /// Starts a write transaction on the whole store: no other write runs beside it.
    pub(crate) fn begin(&mut self) -> Result<Tx<'_>> {
        match &mut self.conn {
            Conn::File(c) => {
                Ok(Tx::File(c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?))
            }
            Conn::Remote(c) => {
                c.begin_write()?;
                Ok(Tx::Remote(RemoteTx { conn: &**c, open: true }))
            }
        }
    }
}

pub(super) fn as_db(c: &dyn db::Connection) -> &dyn Db {
    c
}
