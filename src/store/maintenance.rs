//! Looking after a store: checks, online backup, log checkpoints, size and versions.

use std::path::Path;

use rusqlite::Connection;

use super::sqlite::truncate_wal;
use super::{Conn, Pins, Place, Store, as_db};
use crate::config::Config;
use crate::error::{Error, Result};

/// Copies the store at `place` (its file is `path`) into a new file at `out`, which must not
/// exist, with SQLite's online backup: one consistent snapshot, taken while writers go on. The
/// copy is checked (`quick_check`) before this returns; on any failure the partial file is
/// removed. Returns the bytes written.
pub(crate) fn backup(place: &Place, pins: &Pins, config: &Config, path: &Path, out: &Path) -> Result<u64> {
    if out.exists() {
        return Err(Error::input(
            "out",
            format!("{} exists; a backup never overwrites a file", out.display()),
        ));
    }
    let copied = (|| {
        let reader = Store::reader(place, pins, config)?;
        reader.backup_to(out).map_err(|e| e.in_store(path))?;
        let copy = Store::open_reader(out, pins, config)?;
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

impl Store {
    /// Copies the write-ahead log into the file and empties it (`wal_checkpoint(TRUNCATE)`), so
    /// that bytes deleted with `secure_delete` are gone from both; false when another
    /// connection's open read kept the log.
    pub(crate) fn checkpoint(&self) -> Result<bool> {
        match &self.conn {
            Conn::File(c) => truncate_wal(c),
            // Deleted rows stay in the tables' free space and the server's log until its
            // operator runs `VACUUM FULL` and the log is recycled: never scrubbed from here.
            Conn::Remote(_) => Ok(false),
        }
    }

    /// The size of the database in bytes (pages in use × page size, the log included).
    pub(crate) fn file_bytes(&self) -> Result<u64> {
        let conn = match &self.conn {
            Conn::File(c) => c,
            Conn::Remote(c) => {
                return Ok(as_db(&**c)
                    .one::<i64>("SELECT pg_database_size(current_database())", &[])?
                    .unsigned_abs());
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
