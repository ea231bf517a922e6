//! Opening a store: a SQLite file (created, migrated, its pins checked) or a database server's
//! store, and read connections beside the write connection. A file that is not a store, is
//! truncated or corrupt, or was built under another configuration is refused by name.

use std::path::Path;
use std::sync::Arc;

use rusqlite::{Connection, OpenFlags};

use super::db::{self, Db};
use super::sqlite::set_up_sqlite;
use super::{Conn, OpenMode, Pins, Place, SCHEMA_VERSION, Store, pins, postgres};
use crate::config::Config;
use crate::error::{Error, Result};

impl Store {
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
    /// Its page cache is a hundredth of the write connection's: a handle keeps many readers, and
    /// the views in memory, not the page cache, serve the ranking.
    pub(crate) fn open_reader(path: &Path, pins: &Pins, config: &Config) -> Result<Store> {
        let conn = connect(path, config.busy_timeout_ms)?;
        let cache_kib = (config.cache_kib / 100).max(1);
        conn.execute_batch(&format!("PRAGMA query_only=ON; PRAGMA cache_size=-{cache_kib};"))?;
        // Plans that do not depend on the bound values: otherwise SQLite prepares a statement
        // again each time some of its values change (the read path's per-round fact statement
        // was prepared anew on every call, about half a recall's instructions at 10^4 rounds).
        conn.set_db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)?;
        Ok(Store {
            conn: Conn::File(conn),
            place: Place::File(path.to_owned()),
            path: path.to_owned(),
            pins: pins.clone(),
        })
    }

    /// Opens (or, in [`OpenMode::Expect`], creates) the store at `path`. A corrupt file is
    /// [`Error::Corrupt`] naming it, whichever step found it.
    pub(crate) fn open(path: &Path, config: &Config, mode: OpenMode<'_>) -> Result<Store> {
        Store::open_unnamed(path, config, mode).map_err(|e| e.in_store(path))
    }

    fn open_unnamed(path: &Path, config: &Config, mode: OpenMode<'_>) -> Result<Store> {
        set_up_sqlite();
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
        match (tables, mode) {
            // Nothing in it to lose: a new store is made there.
            (0, OpenMode::Expect(_) | OpenMode::ExpectReading(_)) => {}
            (0, OpenMode::Stored) => return Err(not_a_store("empty SQLite file".into())),
            // Another application's database is refused before anything about it changes.
            _ => recognize(&conn, path)?,
        }
        // secure_delete: a deleted record's bytes are overwritten, not left in free pages.
        // temp_store=MEMORY: a savepoint's or statement's copies of the pages it changes stay
        // in memory; by default they spill to a temporary file past 64 KiB.
        conn.execute_batch(&format!(
            "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON; \
             PRAGMA secure_delete=ON; PRAGMA temp_store=MEMORY; PRAGMA cache_size=-{};",
            config.cache_kib
        ))?;
        // As on read connections: a cached statement is reused as is, never prepared again
        // because its bound values changed (every write re-prepared its duplicate lookup).
        conn.set_db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)?;
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
        if let (0, OpenMode::Expect(pins) | OpenMode::ExpectReading(pins)) = (tables, mode) {
            store.create(pins)?;
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
        if has_table(&tx, "meta")? {
            recognize(&tx, &path)?;
        } else {
            match mode {
                OpenMode::Expect(pins) | OpenMode::ExpectReading(pins) => postgres::create(&tx, pins)?,
                OpenMode::Stored => {
                    return Err(Error::NotAStore {
                        path,
                        reason: "a database without mnemon's tables".into(),
                    });
                }
            }
        }
        if backend.approximate() {
            tx.batch(postgres::HNSW)?;
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
}

/// Refuses a database with tables that is not a mnemon store: one without mnemon's `meta` table
/// (`key`, `value`) holding a numeric `schema_version`. Reads only, before any pragma, schema
/// change or write, so that another application's database is left exactly as it was.
fn recognize(db: &dyn Db, path: &Path) -> Result<()> {
    let not_a_store = |reason: &str| Error::NotAStore { path: path.to_owned(), reason: reason.into() };
    let columns = match db.dialect() {
        db::Dialect::Sqlite => "SELECT name FROM pragma_table_info('meta') ORDER BY name",
        db::Dialect::Postgres => {
            "SELECT column_name::text FROM information_schema.columns \
             WHERE table_schema = current_schema() AND table_name = 'meta' ORDER BY 1"
        }
    };
    let columns: Vec<String> = db.rows(columns, &[], |r| r.get(0))?;
    if !(columns.iter().any(|c| c == "key") && columns.iter().any(|c| c == "value")) {
        return Err(not_a_store("a database without mnemon's tables"));
    }
    let version = db
        .rows("SELECT CAST(value AS TEXT) FROM meta WHERE CAST(key AS TEXT) = 'schema_version'", &[], |r| {
            r.get::<Option<String>>(0)
        })
        .map_err(|_| not_a_store("a database without mnemon's tables"))?;
    match version.first() {
        Some(Some(v)) if v.trim().parse::<u32>().is_ok() => Ok(()),
        _ => Err(not_a_store("a database whose meta table is not mnemon's (no schema_version)")),
    }
}

/// A connection to the SQLite file at `path` (read-write, no mutex: each connection stays with
/// one thread at a time) that waits up to `busy_timeout_ms` for a lock.
pub(super) fn connect(path: &Path, busy_timeout_ms: u32) -> rusqlite::Result<Connection> {
    set_up_sqlite();
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags)?;
    conn.busy_timeout(std::time::Duration::from_millis(u64::from(busy_timeout_ms)))?;
    Ok(conn)
}

/// Whether the database has table `name`.
pub(super) fn has_table(db: &dyn Db, name: &str) -> Result<bool> {
    let sql = match db.dialect() {
        db::Dialect::Sqlite => "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1",
        db::Dialect::Postgres => {
            "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema() AND tablename = ?1"
        }
    };
    Ok(db.one::<i64>(sql, mnemon_backend::p![name])? > 0)
}

/// Refuses a store file shorter than its header says (a truncated copy): SQLite itself would
/// only notice at the first read of a missing page, maybe deep inside a later call. Only a file
/// without a write-ahead log is checked: while a log holds frames (another connection is open,
/// or a crash interrupted a checkpoint, which the log then completes) the file may legitimately
/// be shorter than its first page says. The log is looked for beside the file a link leads to,
/// where SQLite keeps it: a checkpoint may be copying it into the file right now (one runs beside
/// the writes of any handle open on it).
fn check_length(path: &Path) -> Result<()> {
    use std::io::Read;
    let real = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned());
    let mut wal = real.as_os_str().to_owned();
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

#[cfg(test)]
impl Store {
    /// How many times the cached statement `sql` was prepared again while it ran once with each
    /// of `runs`' parameters.
    pub(crate) fn reprepares(&self, sql: &str, runs: &[Vec<mnemon_backend::Param<'_>>]) -> u64 {
        let conn = self.file("test").expect("a file store");
        let mut stmt = conn.prepare_cached(sql).expect("prepare");
        for params in runs {
            let mut rows = stmt.query(rusqlite::params_from_iter(params)).expect("query");
            while rows.next().expect("step").is_some() {}
        }
        stmt.get_status(rusqlite::StatementStatus::RePrepare) as u64
    }

    /// The value of `PRAGMA name` on this connection.
    pub(crate) fn pragma_i64(&self, name: &str) -> i64 {
        let conn = self.file("test").expect("a file store");
        conn.query_row(&format!("PRAGMA {name}"), [], |r| r.get(0)).expect("pragma")
    }
}
