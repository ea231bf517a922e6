//! The schema and its migrations. The SQL is in numbered files under `sql/`, read at build time:
//! `sql/sqlite/schema.sql` makes a new store of the current version, and each
//! `sql/sqlite/NNNN_*.sql` brings a store of the version before `NNNN` to it (a file, once
//! released, never changes). `sql/postgres/` holds the same schema in PostgreSQL's dialect: the
//! differences between the two databases are there and in `postgres.rs`, nowhere else.

use std::path::PathBuf;

use rusqlite::{Connection, OptionalExtension};

use super::pins::split_legacy;
use super::{Pins, Store};
use crate::error::{Error, Result};

/// A new store's schema (`{dim}`: the embedder's vector width).
const SCHEMA: &str = include_str!("sql/sqlite/schema.sql");

/// Part records' tables, added in place to schema 5 stores made before them.
const PARTS: &str = include_str!("sql/sqlite/parts.sql");

/// The steps from older schemas, by the version each brings a store to, in order.
const MIGRATIONS: &[(u32, &str)] = &[
    (4, include_str!("sql/sqlite/0004_agents_and_notes.sql")),
    (5, include_str!("sql/sqlite/0005_extractors.sql")),
];

/// `sql` with the store's vector width in place of `{dim}`.
pub(super) fn with_dim(sql: &str, dim: usize) -> String {
    sql.replace("{dim}", &dim.to_string())
}

impl Store {
    pub(super) fn create(&mut self, pins: &Pins) -> Result<()> {
        let tx = self.begin()?;
        // Another process may have created it between our check and our lock.
        let tables: i64 = tx.file().query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))?;
        if tables == 0 {
            tx.file().execute_batch(&with_dim(SCHEMA, pins.dim()?))?;
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
    pub(super) fn migrate(&mut self) -> Result<()> {
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
        for (to, sql) in MIGRATIONS {
            if *to > found {
                tx.file().execute_batch(&with_dim(sql, dim))?;
            }
        }
        // The last step of schema 5: the extractor's pins move out of the store's.
        let mut all = std::collections::BTreeMap::new();
        {
            let mut stmt = tx.file().prepare("SELECT key, value FROM meta WHERE key <> 'pins_hash'")?;
            let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))?;
            for row in rows {
                let (k, v) = row?;
                all.insert(k, v);
            }
        }
        let (pins, extractor) = split_legacy(all);
        if let Some(extractor) = extractor {
            let id = super::extractors::write::register(&tx, &extractor)?;
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

    /// Creates the part tables in a store made before them (`sql/sqlite/parts.sql`), or whichever
    /// of the two is missing (without `round_parts`, no round's recorded rule holds: they are
    /// cleared, so every round is parted again). Writes only then.
    pub(super) fn add_parts_tables(&mut self) -> Result<()> {
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
            tx.file().execute_batch(PARTS)?;
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
}
