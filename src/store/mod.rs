//! The store: the only code that knows SQL.
//!
//! One SQLite file in WAL mode. Tables: `meta` (pins), `users` (logical now, a write counter),
//! `rounds` (verbatim turns), `facts` (extracted from rounds), `extractors` (the pins of every
//! extractor that produced a fact; each round and fact names its own), `notes` (direct memories,
//! with `note_tags`), a sqlite-vec `vec0` table per record kind (partitioned by user), FTS5 over
//! round and note text, `extract_queue` and `decisions` (the write-path decision log).
//! Every read and write names its user, and every read that can see agent-private records
//! applies the visibility rule ([`View`]); no statement here can touch another user's rows.
//! The store never embeds, ranks or renders.

pub(crate) mod db;
mod extractors;
mod notes;
mod pins;
mod postgres;
pub(crate) mod rows;

pub(crate) use extractors::ExtractorRow;
pub(crate) use notes::{NoteMeta, NoteRow};
pub(crate) use pins::{
    extractor_hash, extractor_json, split_legacy, Pins, EXTRACTION, NOTE_PINS, SCHEMA_VERSION,
};
pub(crate) use rows::{blob_vector, vector_blob, ActiveFact, DecisionRow, FactRow, RoundRow, UserVectors};

/// The writes used inside a caller's transaction ([`Tx`]).
pub(crate) mod write {
    pub(crate) use super::extractors::write::*;
    pub(crate) use super::notes::write::*;
    pub(crate) use super::rows::write::*;
}

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::Once;

use rusqlite::{Connection, OpenFlags, OptionalExtension};

pub(crate) use db::Db;

use crate::config::Config;
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
        if self.open {
            if let Err(e) = self.conn.rollback() {
                tracing::warn!(error = %e, "rolling back a write transaction failed");
            }
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
    fn file(&self) -> &Connection {
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

static REGISTER_VEC: Once = Once::new();

fn register_sqlite_vec() {
    REGISTER_VEC.call_once(|| {
        // SAFETY: sqlite3_vec_init has the signature SQLite expects of an extension entry point;
        // registering it as an auto extension makes every later connection load it.
        unsafe {
            #[allow(clippy::missing_transmute_annotations)]
            rusqlite::ffi::sqlite3_auto_extension(Some(std::mem::transmute(
                sqlite_vec::sqlite3_vec_init as *const (),
            )));
        }
    });
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
    fn file(&self, operation: &str) -> Result<&Connection> {
        match &self.conn {
            Conn::File(c) => Ok(c),
            Conn::Remote(_) => Err(Error::Database(format!(
                "{operation} works on a SQLite store only; use the database server's own tools"
            ))),
        }
    }

    /// A new read connection to the same store (see [`open_reader`](Store::open_reader)).
    pub(crate) fn reader(place: &Place, pins: &Pins, config: &Config) -> Result<Store> {
        match place {
            Place::File(path) => Store::open_reader(path, pins, config),
            Place::Remote(backend) => Ok(Store {
                conn: Conn::Remote(backend.connect()?),
                path: place.path(),
                place: place.clone(),
                pins: pins.clone(),
            }),
        }
    }

    /// Another connection to an open store's file, for reads only (`query_only`), with the pins
    /// the store was opened with. Reads on it run inside [`begin_read`](Store::begin_read) /
    /// [`end_read`](Store::end_read): one snapshot, unaffected by writes that commit meanwhile.
    /// Its page cache is an eighth of the write connection's: a handle keeps many readers, and
    /// the views in memory, not the page cache, serve the ranking.
    pub(crate) fn open_reader(path: &Path, pins: &Pins, config: &Config) -> Result<Store> {
        register_sqlite_vec();
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(path, flags)?;
        conn.busy_timeout(std::time::Duration::from_millis(u64::from(config.busy_timeout_ms)))?;
        let cache_kib = (config.cache_kib / 8).max(1);
        conn.execute_batch(&format!("PRAGMA query_only=ON; PRAGMA cache_size=-{cache_kib};"))?;
        Ok(Store {
            conn: Conn::File(conn),
            place: Place::File(path.to_owned()),
            path: path.to_owned(),
            pins: pins.clone(),
        })
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

    /// Opens (or, in [`OpenMode::Expect`], creates) the store at `path`. A corrupt file is
    /// [`Error::Corrupt`] naming it, whichever step found it.
    pub(crate) fn open(path: &Path, config: &Config, mode: OpenMode<'_>) -> Result<Store> {
        Store::open_unnamed(path, config, mode).map_err(|e| e.in_store(path))
    }

    fn open_unnamed(path: &Path, config: &Config, mode: OpenMode<'_>) -> Result<Store> {
        register_sqlite_vec();
        let not_a_store = |reason: String| Error::NotAStore { path: path.to_owned(), reason };
        let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        match mode {
            OpenMode::Expect(_) | OpenMode::ExpectReading(_) => flags |= OpenFlags::SQLITE_OPEN_CREATE,
            OpenMode::Stored if !path.exists() => {
                return Err(not_a_store("no such file".into()));
            }
            OpenMode::Stored => {}
        }
        let conn = Connection::open_with_flags(path, flags).map_err(|e| not_a_store(e.to_string()))?;
        conn.busy_timeout(std::time::Duration::from_millis(u64::from(config.busy_timeout_ms)))?;
        check_length(path)?;
        // The first read tells a SQLite file from anything else.
        let tables: i64 =
            conn.query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0)).map_err(|e| {
                match e.sqlite_error_code() {
                    Some(rusqlite::ErrorCode::NotADatabase) => not_a_store("not a SQLite database".into()),
                    _ => Error::from(e),
                }
            })?;
        // secure_delete: a deleted record's bytes are overwritten, not left in free pages.
        conn.execute_batch(&format!(
            "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON; \
             PRAGMA secure_delete=ON; PRAGMA cache_size=-{};",
            config.cache_kib
        ))?;
        if let Some(bytes) = config.max_store_bytes {
            let page: i64 = conn.query_row("PRAGMA page_size", [], |r| r.get(0))?;
            let pages = bytes / page.max(512).unsigned_abs();
            conn.query_row(&format!("PRAGMA max_page_count = {pages}"), [], |_| Ok(()))?;
        }
        let mut store = Store {
            conn: Conn::File(conn),
            place: Place::File(path.to_owned()),
            path: path.to_owned(),
            pins: Pins::default(),
        };
        if tables == 0 {
            match mode {
                OpenMode::Expect(pins) | OpenMode::ExpectReading(pins) => store.create(pins)?,
                OpenMode::Stored => return Err(not_a_store("empty SQLite file".into())),
            }
        }
        store.migrate()?;
        store.add_parts_tables()?;
        store.settle_pins(mode)?;
        Ok(store)
    }

    /// Opens (or, in [`OpenMode::Expect`], creates) the store at `place`.
    pub(crate) fn open_at(place: &Place, config: &Config, mode: OpenMode<'_>) -> Result<Store> {
        match place {
            Place::File(path) => Store::open(path, config, mode),
            Place::Remote(backend) => Store::open_remote(backend.clone(), mode),
        }
    }

    /// Opens (or, in [`OpenMode::Expect`], creates) the store in `backend`'s database. Its
    /// schema is created under the write lock, so two processes opening a new database at once
    /// create it once.
    pub(crate) fn open_remote(backend: Arc<dyn db::Backend>, mode: OpenMode<'_>) -> Result<Store> {
        let place = Place::Remote(backend.clone());
        let mut store = Store {
            conn: Conn::Remote(backend.connect()?),
            path: place.path(),
            place,
            pins: Pins::default(),
        };
        let path = store.path.clone();
        let tx = store.begin()?;
        if !has_table(&tx, "meta")? {
            match mode {
                OpenMode::Expect(pins) | OpenMode::ExpectReading(pins) => postgres::create(&tx, pins)?,
                OpenMode::Stored => {
                    return Err(Error::NotAStore {
                        path,
                        reason: "a database without mnemon's tables".into(),
                    })
                }
            }
        }
        if backend.approximate() {
            tx.batch(postgres::HNSW_INDEX)?;
        }
        tx.commit()?;
        store.settle_pins(mode)?;
        Ok(store)
    }

    /// Reads the stored pins and, unless `mode` takes them as they are, refuses a store whose
    /// pins differ from the expected ones.
    fn settle_pins(&mut self, mode: OpenMode<'_>) -> Result<()> {
        let stored = self.read_pins()?;
        let expected = match mode {
            OpenMode::Expect(expected) => Some(expected.clone()),
            OpenMode::ExpectReading(expected) => {
                let mut expected = expected.clone();
                if let Some(on) = stored.0.get(pins::EXTRACTION) {
                    expected.0.insert(pins::EXTRACTION.into(), on.clone());
                }
                Some(expected)
            }
            OpenMode::Stored => None,
        };
        if let Some(expected) = expected {
            let differences = stored.differences(&expected);
            if !differences.is_empty() {
                return Err(Error::PinMismatch { differences });
            }
        }
        self.pins = stored;
        Ok(())
    }

    /// Copies the write-ahead log into the file and empties it (`wal_checkpoint(TRUNCATE)`), so
    /// that bytes deleted with `secure_delete` are gone from both; false when another
    /// connection's open read kept the log.
    pub(crate) fn checkpoint(&self) -> Result<bool> {
        match &self.conn {
            Conn::File(c) => truncate_wal(c),
            // The server's own log and vacuum are its operator's to run.
            Conn::Remote(_) => Ok(true),
        }
    }

    /// The size of the database in bytes (pages in use × page size, the log included).
    pub(crate) fn file_bytes(&self) -> Result<u64> {
        let conn = match &self.conn {
            Conn::File(c) => c,
            Conn::Remote(c) => {
                return Ok(as_db(&**c)
                    .one::<i64>("SELECT pg_database_size(current_database())", &[])?
                    .unsigned_abs())
            }
        };
        let pages: i64 = conn.query_row("PRAGMA page_count", [], |r| r.get(0))?;
        let size: i64 = conn.query_row("PRAGMA page_size", [], |r| r.get(0))?;
        Ok((pages * size).unsigned_abs())
    }

    /// SQLite's `quick_check` (or, `full`, `integrity_check`) of the file: the problems it
    /// lists, none when the file is sound.
    pub(crate) fn check(&self, full: bool) -> Result<Vec<String>> {
        let pragma = if full { "integrity_check" } else { "quick_check" };
        if let Conn::Remote(_) = &self.conn {
            return self.check_records();
        }
        let mut stmt = self.file("check")?.prepare(&format!("PRAGMA {pragma}"))?;
        let rows: Vec<String> = stmt.query_map([], |r| r.get(0))?.collect::<rusqlite::Result<_>>()?;
        Ok(if rows == ["ok"] { Vec::new() } else { rows })
    }

    /// On a database server (whose pages are its own to check): every round, fact and note has
    /// its vector (the foreign keys guarantee the other direction).
    fn check_records(&self) -> Result<Vec<String>> {
        let mut problems = Vec::new();
        for (table, vectors) in
            [("rounds", "round_vectors"), ("facts", "fact_vectors"), ("notes", "note_vectors")]
        {
            let missing: i64 = self.db().one(
                &format!("SELECT count(*) FROM {table} r WHERE NOT EXISTS (SELECT 1 FROM {vectors} v WHERE v.rowid = r.id)"),
                &[],
            )?;
            if missing > 0 {
                problems.push(format!("{missing} {table} without a vector"));
            }
        }
        Ok(problems)
    }

    /// Copies the whole file into a new file at `out` with SQLite's online backup, in one step:
    /// one read transaction, so the copy is one consistent snapshot while writers go on.
    /// Returns the pages copied.
    pub(crate) fn backup_to(&self, out: &Path) -> Result<u64> {
        let mut dst = Connection::open(out)?;
        let backup = rusqlite::backup::Backup::new(self.file("backup")?, &mut dst)?;
        match backup.step(-1)? {
            rusqlite::backup::StepResult::Done => {}
            _ => return Err(Error::Busy),
        }
        let pages = u64::try_from(backup.progress().pagecount).unwrap_or(0);
        drop(backup);
        dst.close().map_err(|(_, e)| Error::from(e))?;
        Ok(pages)
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

    fn create(&mut self, pins: &Pins) -> Result<()> {
        let tx = self.begin()?;
        // Another process may have created it between our check and our lock.
        let tables: i64 = tx.file().query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))?;
        if tables == 0 {
            tx.file().execute_batch(&schema(pins.dim()?))?;
            let mut insert = tx.file().prepare("INSERT INTO meta(key, value) VALUES (?1, ?2)")?;
            for (k, v) in pins.with_hash() {
                insert.execute((k, v))?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// Brings a store of an older schema (3 or 4) to this one, in place and in one transaction,
    /// after copying the file to `<file>.schema-<N>.bak` beside it (a consistent copy, made with
    /// `VACUUM INTO`). Version 3 gains agent columns and the note tables (its pins gain the note
    /// pins); version 4 gains the `extractors` table, and its extractor's pins move from the
    /// store's pins into it, named by every round and fact it produced.
    fn migrate(&mut self) -> Result<()> {
        let version = |conn: &Connection| -> Result<Option<u32>> {
            let has_meta: i64 = conn.query_row(
                "SELECT count(*) FROM sqlite_master WHERE type='table' AND name='meta'",
                [],
                |r| r.get(0),
            )?;
            if has_meta == 0 {
                return Ok(None);
            }
            let v: Option<String> = conn
                .query_row("SELECT value FROM meta WHERE key = 'schema_version'", [], |r| r.get(0))
                .optional()?;
            Ok(v.and_then(|v| v.parse().ok()))
        };
        let found = match version(self.file("migrate")?)? {
            Some(v @ 3..=4) => v,
            _ => return Ok(()),
        };
        self.backup(found)?;
        let path = self.path.clone();
        let tx = self.begin()?;
        // Another process may have migrated it between our check and our lock.
        let Some(found @ 3..=4) = version(tx.file())? else { return tx.commit() };
        let dim: usize = tx
            .file()
            .query_row("SELECT value FROM meta WHERE key = 'embedder.dim'", [], |r| r.get::<_, String>(0))?
            .parse()
            .map_err(|_| Error::Corrupt { path, reason: "embedder.dim".into() })?;
        if found == 3 {
            tx.file().execute_batch(&format!(
                "ALTER TABLE rounds ADD COLUMN agent TEXT; ALTER TABLE facts ADD COLUMN agent TEXT; \
                 ALTER TABLE decisions ADD COLUMN agent TEXT; \
                 INSERT INTO round_fts(round_fts, rank) VALUES('secure-delete', 1); {}",
                notes_schema(dim)
            ))?;
        }
        tx.file().execute_batch(&format!(
            "{EXTRACTORS_SCHEMA} \
             ALTER TABLE rounds ADD COLUMN extractor INTEGER REFERENCES extractors(id); \
             ALTER TABLE facts ADD COLUMN extractor INTEGER REFERENCES extractors(id);"
        ))?;
        let mut all = std::collections::BTreeMap::new();
        {
            let mut stmt = tx.file().prepare("SELECT key, value FROM meta WHERE key <> 'pins_hash'")?;
            let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))?;
            for row in rows {
                let (k, v) = row?;
                all.insert(k, v);
            }
        }
        let (pins, extractor) = pins::split_legacy(all);
        if let Some(extractor) = extractor {
            let id = extractors::write::register(&tx, &extractor)?;
            // Every fact came from it, and every round it got to (the queued ones wait).
            tx.file().execute("UPDATE facts SET extractor = ?1", [id])?;
            tx.file().execute(
                "UPDATE rounds SET extractor = ?1 WHERE id NOT IN (SELECT round_id FROM extract_queue)",
                [id],
            )?;
        }
        tx.file().execute("DELETE FROM meta", [])?;
        let mut insert = tx.file().prepare("INSERT INTO meta(key, value) VALUES (?1, ?2)")?;
        for (k, v) in pins.with_hash() {
            insert.execute((k, v))?;
        }
        drop(insert);
        tx.commit()
    }

    /// Creates the part tables in a store made before them (see [`PARTS_SCHEMA`]), or whichever
    /// of the two is missing (without `round_parts`, no round's recorded rule holds: they are
    /// cleared, so every round is parted again). Writes only then.
    fn add_parts_tables(&mut self) -> Result<()> {
        let exists = |name: &str| -> Result<bool> {
            let n: i64 = self.file("migrate")?.query_row(
                "SELECT count(*) FROM sqlite_master WHERE type='table' AND name = ?1",
                [name],
                |r| r.get(0),
            )?;
            Ok(n > 0)
        };
        let (meta, parts, rules) = (exists("meta")?, exists("round_parts")?, exists("rounds_parted")?);
        if meta && !(parts && rules) {
            let tx = self.begin()?;
            tx.file().execute_batch(PARTS_SCHEMA)?;
            if !parts {
                tx.file().execute("DELETE FROM rounds_parted", [])?;
            }
            tx.commit()?;
        }
        Ok(())
    }

    /// Copies the store, as it is, to `<file>.schema-<version>.bak` (replacing an older copy: a
    /// migration that failed left the store as it was).
    fn backup(&self, version: u32) -> Result<()> {
        let mut name = self.path.clone().into_os_string();
        name.push(format!(".schema-{version}.bak"));
        let target = PathBuf::from(name);
        let mut partial = target.clone().into_os_string();
        partial.push(format!(".{}", std::process::id()));
        let partial = PathBuf::from(partial);
        let _ = std::fs::remove_file(&partial);
        self.file("backup")?.execute("VACUUM INTO ?1", [partial.to_string_lossy()])?;
        std::fs::rename(&partial, &target)?;
        tracing::info!(backup = %target.display(), "store of schema {version} copied before migrating");
        Ok(())
    }

    fn read_pins(&self) -> Result<Pins> {
        if !has_table(self.db(), "meta")? {
            return Err(Error::NotAStore {
                path: self.path.clone(),
                reason: "a database without mnemon's tables".into(),
            });
        }
        let all: std::collections::BTreeMap<String, String> = self
            .db()
            .rows("SELECT key, value FROM meta ORDER BY key", &[], |r| Ok((r.get(0)?, r.get(1)?)))?
            .into_iter()
            .collect();
        let version = all.get("schema_version").cloned().unwrap_or_default();
        if version != SCHEMA_VERSION.to_string() {
            return Err(Error::UnsupportedSchema { found: version, supported: SCHEMA_VERSION });
        }
        Pins::from_stored(all).map_err(|reason| Error::Corrupt { path: self.path.clone(), reason })
    }

    /// SQLite, sqlite-vec and FTS5 versions, for `doctor`.
    pub(crate) fn versions(&self) -> Result<Vec<(String, String)>> {
        let conn = match &self.conn {
            Conn::File(c) => c,
            Conn::Remote(c) => {
                let db = as_db(&**c);
                return Ok(vec![
                    ("postgresql".into(), db.one("SELECT current_setting('server_version')", &[])?),
                    (
                        "pgvector".into(),
                        db.opt("SELECT extversion::text FROM pg_extension WHERE extname = 'vector'", &[])?
                            .unwrap_or_else(|| "missing".into()),
                    ),
                ]);
            }
        };
        let sqlite: String = conn.query_row("SELECT sqlite_version()", [], |r| r.get(0))?;
        let vec: String = conn.query_row("SELECT vec_version()", [], |r| r.get(0))?;
        let fts5: i64 =
            conn.query_row("SELECT sqlite_compileoption_used('ENABLE_FTS5')", [], |r| r.get(0))?;
        Ok(vec![
            ("sqlite".into(), sqlite),
            ("sqlite-vec".into(), vec),
            ("fts5".into(), if fts5 == 1 { "enabled".into() } else { "missing".into() }),
        ])
    }
}

fn as_db(c: &dyn db::Connection) -> &dyn Db {
    c
}

/// Whether the database has table `name`.
fn has_table(db: &dyn Db, name: &str) -> Result<bool> {
    let sql = match db.dialect() {
        db::Dialect::Sqlite => "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1",
        db::Dialect::Postgres => {
            "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema() AND tablename = ?1"
        }
    };
    Ok(db.one::<i64>(sql, crate::p![name])? > 0)
}

/// The whole schema. `dim` is the embedder's vector width, fixed at creation.
fn schema(dim: usize) -> String {
    format!(
        "
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE users(
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  now_unix INTEGER,
  now_ts TEXT,
  version INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE rounds(
  id INTEGER PRIMARY KEY,
  user_id INTEGER NOT NULL REFERENCES users(id),
  round_key TEXT NOT NULL,
  session TEXT NOT NULL,
  ts TEXT NOT NULL,
  ts_unix INTEGER NOT NULL,
  day INTEGER NOT NULL,
  norm_key TEXT NOT NULL,
  turns TEXT NOT NULL,
  text TEXT NOT NULL,
  agent TEXT,
  extractor INTEGER REFERENCES extractors(id),
  UNIQUE(user_id, round_key)
);
CREATE INDEX rounds_by_session ON rounds(user_id, session, norm_key);
CREATE INDEX rounds_by_time ON rounds(user_id, ts_unix, id);
CREATE VIRTUAL TABLE round_vectors USING vec0(user_id integer partition key, embedding float[{dim}]);
CREATE VIRTUAL TABLE round_fts USING fts5(
  text, content='rounds', content_rowid='id', tokenize='porter unicode61 remove_diacritics 2'
);
CREATE TABLE decisions(
  id INTEGER PRIMARY KEY,
  user_id INTEGER NOT NULL REFERENCES users(id),
  at TEXT NOT NULL,
  kind TEXT NOT NULL,
  record TEXT NOT NULL,
  other TEXT,
  detail TEXT NOT NULL,
  agent TEXT
);
CREATE INDEX decisions_by_user ON decisions(user_id, id);
CREATE TABLE facts(
  id INTEGER PRIMARY KEY,
  user_id INTEGER NOT NULL REFERENCES users(id),
  round_id INTEGER NOT NULL REFERENCES rounds(id),
  fact_key TEXT NOT NULL,
  session TEXT NOT NULL,
  day INTEGER NOT NULL,
  norm_key TEXT NOT NULL,
  content TEXT NOT NULL,
  raw TEXT NOT NULL,
  mention TEXT,
  valid_time TEXT,
  subject TEXT,
  predicate TEXT,
  object TEXT,
  salience REAL NOT NULL,
  initial_salience REAL NOT NULL,
  pair_key TEXT,
  supersedes TEXT,
  superseded_by TEXT,
  agent TEXT,
  extractor INTEGER REFERENCES extractors(id),
  UNIQUE(user_id, fact_key)
);
CREATE INDEX facts_by_round ON facts(round_id, id);
CREATE INDEX facts_by_session ON facts(user_id, session, norm_key);
CREATE VIRTUAL TABLE fact_vectors USING vec0(user_id integer partition key, embedding float[{dim}]);
{extractors}
CREATE TABLE extract_queue(
  round_id INTEGER PRIMARY KEY REFERENCES rounds(id),
  user_id INTEGER NOT NULL REFERENCES users(id)
);
INSERT INTO round_fts(round_fts, rank) VALUES('secure-delete', 1);
{notes}
{parts}",
        notes = notes_schema(dim),
        extractors = EXTRACTORS_SCHEMA,
        parts = PARTS_SCHEMA,
    )
}

/// Part records (`crate::parts`): derived from a round and the embedder, never exported, and
/// made again for any round without a `rounds_parted` row under the current rule. Added to
/// schema 5 stores in place at open (a build without parts ignores these tables; what it
/// writes is parted at the next open by a build with them).
const PARTS_SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS round_parts(
  id INTEGER PRIMARY KEY,
  round_id INTEGER NOT NULL REFERENCES rounds(id),
  user_id INTEGER NOT NULL REFERENCES users(id),
  embedding BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS round_parts_by_round ON round_parts(round_id, id);
CREATE INDEX IF NOT EXISTS round_parts_by_user ON round_parts(user_id);
CREATE TABLE IF NOT EXISTS rounds_parted(
  round_id INTEGER PRIMARY KEY REFERENCES rounds(id),
  rule TEXT NOT NULL
);";

/// Every extractor that produced a round's extraction (schema version 5): its pins as canonical
/// JSON and their blake3, which exports name it by.
const EXTRACTORS_SCHEMA: &str =
    "CREATE TABLE extractors(id INTEGER PRIMARY KEY, pins_hash TEXT NOT NULL UNIQUE, pins TEXT NOT NULL);";

/// The note tables (schema version 4). FTS5's secure-delete removes a deleted note's terms from
/// the index itself, not only from its results.
fn notes_schema(dim: usize) -> String {
    format!(
        "
CREATE TABLE notes(
  id INTEGER PRIMARY KEY,
  user_id INTEGER NOT NULL REFERENCES users(id),
  agent TEXT,
  note_key TEXT NOT NULL,
  kind TEXT NOT NULL,
  title TEXT,
  content TEXT NOT NULL,
  tags TEXT NOT NULL,
  metadata TEXT NOT NULL,
  importance REAL NOT NULL,
  ts TEXT NOT NULL,
  ts_unix INTEGER NOT NULL,
  day INTEGER NOT NULL,
  updated_ts TEXT NOT NULL,
  updated_unix INTEGER NOT NULL,
  tokens INTEGER NOT NULL,
  norm_key TEXT NOT NULL,
  condensed_into TEXT,
  condenses TEXT,
  UNIQUE(user_id, note_key)
);
CREATE INDEX notes_by_time ON notes(user_id, ts_unix, note_key);
CREATE INDEX notes_by_norm ON notes(user_id, norm_key);
CREATE TABLE note_tags(
  note_id INTEGER NOT NULL REFERENCES notes(id),
  tag TEXT NOT NULL,
  PRIMARY KEY(note_id, tag)
) WITHOUT ROWID;
CREATE INDEX note_tags_by_tag ON note_tags(tag, note_id);
CREATE VIRTUAL TABLE note_vectors USING vec0(user_id integer partition key, embedding float[{dim}]);
CREATE VIRTUAL TABLE note_fts USING fts5(
  title, content, tags, content='notes', content_rowid='id', tokenize='porter unicode61 remove_diacritics 2'
);
INSERT INTO note_fts(note_fts, rank) VALUES('secure-delete', 1);
"
    )
}

/// Opens (creating) a side file that is not a store, such as a cache: WAL, a busy timeout, then
/// `schema` (idempotent statements). A file that is not SQLite is [`Error::NotAStore`].
pub(crate) fn open_side_db(path: &Path, schema: &str) -> Result<Connection> {
    let conn = Connection::open(path)
        .map_err(|e| Error::NotAStore { path: path.to_owned(), reason: e.to_string() })?;
    conn.busy_timeout(std::time::Duration::from_secs(10))?;
    // secure_delete: a cache entry dropped by a forget leaves no bytes in free pages.
    conn.execute_batch(&format!(
        "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA secure_delete=ON; {schema}"
    ))
    .map_err(|e| match e.sqlite_error_code() {
        Some(rusqlite::ErrorCode::NotADatabase) => {
            Error::NotAStore { path: path.to_owned(), reason: "not a SQLite database".into() }
        }
        _ => Error::from(e),
    })?;
    Ok(conn)
}

/// `PRAGMA wal_checkpoint(TRUNCATE)` on `conn`: true when the whole log was copied and emptied.
pub(crate) fn truncate_wal(conn: &Connection) -> Result<bool> {
    let busy: i64 = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get(0))?;
    Ok(busy == 0)
}

/// Refuses a store file shorter than its header says (a truncated copy): SQLite itself would
/// only notice at the first read of a missing page, maybe deep inside a later call. Only a file
/// without a write-ahead log is checked: while a log holds frames (another connection is open,
/// or a crash interrupted a checkpoint, which the log then completes) the file may legitimately
/// be shorter than its first page says.
fn check_length(path: &Path) -> Result<()> {
    use std::io::Read;
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    if std::fs::metadata(&wal).is_ok_and(|m| m.len() > 0) {
        return Ok(());
    }
    let mut header = [0u8; 100];
    let Ok(meta) = std::fs::metadata(path) else { return Ok(()) };
    let len = meta.len();
    let read = std::fs::File::open(path).and_then(|mut f| f.read_exact(&mut header));
    // Not a SQLite file (or an empty new one): the first read will say so.
    if read.is_err() || !header.starts_with(b"SQLite format 3\0") {
        return Ok(());
    }
    let page = match u16::from_be_bytes([header[16], header[17]]) {
        1 => 65_536,
        p => u64::from(p),
    };
    let pages = u64::from(u32::from_be_bytes([header[28], header[29], header[30], header[31]]));
    // The in-header size is valid only when the change counter matches "version valid for".
    let valid = header[24..28] == header[92..96];
    if valid && pages * page > len {
        return Err(Error::Corrupt {
            path: path.to_owned(),
            reason: format!(
                "truncated: its header says {pages} pages of {page} bytes, the file holds {len} bytes"
            ),
        });
    }
    Ok(())
}
