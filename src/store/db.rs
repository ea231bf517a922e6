//! The interface between the store's statements and a database (`mnemon-backend`'s), as the
//! store's modules name it.

pub(crate) use mnemon_backend::{Backend, Claims, Connection, Db, Dialect, Param, Row};

use crate::error::Result;

/// Runs `insert` (an `INSERT` of one row into a table with an `id` key) and returns the new
/// row's id. On SQLite the id is read back with `last_insert_rowid()` rather than `RETURNING`:
/// SQLite runs a `RETURNING` statement inside a statement savepoint, and a savepoint makes FTS5
/// write out its pending words — one index segment per row instead of one per transaction
/// (docs/DECISIONS.md, 2026-12-07).
pub(crate) fn insert_id(conn: &dyn Db, insert: &str, params: &[Param<'_>]) -> Result<i64> {
    match conn.dialect() {
        Dialect::Sqlite => {
            conn.execute(insert, params)?;
            Ok(conn.one("SELECT last_insert_rowid()", &[])?)
        }
        Dialect::Postgres => Ok(conn.one(&format!("{insert} RETURNING id"), params)?),
    }
}
