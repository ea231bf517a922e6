//! The schema of a store in a PostgreSQL database (with pgvector): the same tables, columns and
//! keys as a SQLite file's, so that every statement in `store/` runs on both. Differences: ids
//! are `BIGSERIAL`; embeddings are pgvector `vector(dim)` columns in plain tables named as
//! sqlite-vec's (`rowid` is the record's id); there is no FTS5 table (the ranking keeps its own
//! word index in memory, on every backend); and every text column sorts bytewise (`COLLATE "C"`,
//! SQLite's `BINARY`), so every `ORDER BY` gives the same order on both.

use super::Pins;
use super::db::Db;
use crate::error::{Error, Result};
use mnemon_backend::p;

/// Creates the schema in the caller's write transaction, and stores `pins`. The `vector`
/// extension must exist, or be creatable by this role.
pub(super) fn create(db: &dyn Db, pins: &Pins) -> Result<()> {
    let installed: i64 = db.one("SELECT count(*) FROM pg_extension WHERE extname = 'vector'", &[])?;
    if installed == 0 {
        let available: i64 =
            db.one("SELECT count(*) FROM pg_available_extensions WHERE name = 'vector'", &[])?;
        if available == 0 {
            return Err(Error::Database(
                "the database server has no pgvector extension (`vector`); install pgvector 0.5 or later on it"
                    .into(),
            ));
        }
        // In `public` where there is one: every store of the database, whichever schema it is
        // in, finds the type there.
        let public: i64 = db.one("SELECT count(*) FROM pg_namespace WHERE nspname = 'public'", &[])?;
        let sql = match public {
            0 => "CREATE EXTENSION IF NOT EXISTS vector",
            _ => "CREATE EXTENSION IF NOT EXISTS vector SCHEMA public",
        };
        db.batch(sql).map_err(|e| {
            Error::Database(format!(
                "the database has no `vector` extension and this role cannot create it ({e}); \
                 run `CREATE EXTENSION vector` as the database's owner"
            ))
        })?;
    }
    let found: i64 = db.one("SELECT count(*) FROM pg_type WHERE oid = to_regtype('vector')", &[])?;
    if found == 0 {
        let home: String = db.one(
            "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace \
             WHERE e.extname = 'vector'",
            &[],
        )?;
        return Err(Error::Database(format!(
            "the `vector` extension is in the schema {home}, which is not on this connection's \
             search path; add it (`options=-c search_path=…,{home}` in the URL)"
        )));
    }
    db.batch(&super::schema::with_dim(SCHEMA, pins.dim()?))?;
    for (k, v) in pins.with_hash() {
        db.execute("INSERT INTO meta(key, value) VALUES (?1, ?2)", p![&k, &v])?;
    }
    Ok(())
}

/// The approximate index over every round vector (pgvector's HNSW, L2): what a backend that is
/// [`approximate`](super::db::Backend::approximate) creates at open. Building it over many vectors
/// takes minutes; it is then kept up to date by every insert.
pub(super) const HNSW: &str = include_str!("sql/postgres/hnsw.sql");

/// The whole schema (schema version 5, as a SQLite file's; `{dim}`: the embedder's width).
const SCHEMA: &str = include_str!("sql/postgres/schema.sql");
