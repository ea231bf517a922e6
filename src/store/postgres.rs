//! The schema of a store in a PostgreSQL database (with pgvector): the same tables, columns and
//! keys as a SQLite file's, so that every statement in `store/` runs on both. Differences: ids
//! are `BIGSERIAL`; embeddings are pgvector `vector(dim)` columns in plain tables named as
//! sqlite-vec's (`rowid` is the record's id); there is no FTS5 table (the ranking keeps its own
//! word index in memory, on every backend); and every text column sorts bytewise (`COLLATE "C"`,
//! SQLite's `BINARY`), so every `ORDER BY` gives the same order on both.

use super::db::Db;
use super::Pins;
use crate::error::{Error, Result};
use crate::p;

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
    db.batch(&schema(pins.dim()?))?;
    for (k, v) in pins.with_hash() {
        db.execute("INSERT INTO meta(key, value) VALUES (?1, ?2)", p![&k, &v])?;
    }
    Ok(())
}

/// The approximate index over every round vector (pgvector's HNSW, L2): what a backend that is
/// [`approximate`](super::db::Backend::approximate) creates at open. Building it over many vectors
/// takes minutes; it is then kept up to date by every insert.
pub(super) const HNSW_INDEX: &str =
    "CREATE INDEX IF NOT EXISTS round_vectors_hnsw ON round_vectors USING hnsw (embedding vector_l2_ops)";

/// The whole schema (schema version 5, as a SQLite file's). `dim` is the embedder's width.
fn schema(dim: usize) -> String {
    format!(
        r#"
CREATE TABLE meta(key TEXT COLLATE "C" PRIMARY KEY, value TEXT COLLATE "C" NOT NULL);
CREATE TABLE users(
  id BIGSERIAL PRIMARY KEY,
  name TEXT COLLATE "C" NOT NULL UNIQUE,
  now_unix BIGINT,
  now_ts TEXT COLLATE "C",
  version BIGINT NOT NULL DEFAULT 0
);
CREATE TABLE extractors(id BIGSERIAL PRIMARY KEY, pins_hash TEXT COLLATE "C" NOT NULL UNIQUE, pins TEXT COLLATE "C" NOT NULL);
CREATE TABLE rounds(
  id BIGSERIAL PRIMARY KEY,
  user_id BIGINT NOT NULL REFERENCES users(id),
  round_key TEXT COLLATE "C" NOT NULL,
  session TEXT COLLATE "C" NOT NULL,
  ts TEXT COLLATE "C" NOT NULL,
  ts_unix BIGINT NOT NULL,
  day INTEGER NOT NULL,
  norm_key TEXT COLLATE "C" NOT NULL,
  turns TEXT COLLATE "C" NOT NULL,
  text TEXT COLLATE "C" NOT NULL,
  agent TEXT COLLATE "C",
  extractor BIGINT REFERENCES extractors(id),
  UNIQUE(user_id, round_key)
);
CREATE INDEX rounds_by_session ON rounds(user_id, session, norm_key);
CREATE INDEX rounds_by_time ON rounds(user_id, ts_unix, id);
CREATE TABLE round_vectors(rowid BIGINT PRIMARY KEY REFERENCES rounds(id), user_id BIGINT NOT NULL, embedding vector({dim}) NOT NULL);
CREATE INDEX round_vectors_by_user ON round_vectors(user_id, rowid);
CREATE TABLE decisions(
  id BIGSERIAL PRIMARY KEY,
  user_id BIGINT NOT NULL REFERENCES users(id),
  at TEXT COLLATE "C" NOT NULL,
  kind TEXT COLLATE "C" NOT NULL,
  record TEXT COLLATE "C" NOT NULL,
  other TEXT COLLATE "C",
  detail TEXT COLLATE "C" NOT NULL,
  agent TEXT COLLATE "C"
);
CREATE INDEX decisions_by_user ON decisions(user_id, id);
CREATE TABLE facts(
  id BIGSERIAL PRIMARY KEY,
  user_id BIGINT NOT NULL REFERENCES users(id),
  round_id BIGINT NOT NULL REFERENCES rounds(id),
  fact_key TEXT COLLATE "C" NOT NULL,
  session TEXT COLLATE "C" NOT NULL,
  day INTEGER NOT NULL,
  norm_key TEXT COLLATE "C" NOT NULL,
  content TEXT COLLATE "C" NOT NULL,
  raw TEXT COLLATE "C" NOT NULL,
  mention TEXT COLLATE "C",
  valid_time TEXT COLLATE "C",
  subject TEXT COLLATE "C",
  predicate TEXT COLLATE "C",
  object TEXT COLLATE "C",
  salience DOUBLE PRECISION NOT NULL,
  initial_salience DOUBLE PRECISION NOT NULL,
  pair_key TEXT COLLATE "C",
  supersedes TEXT COLLATE "C",
  superseded_by TEXT COLLATE "C",
  agent TEXT COLLATE "C",
  extractor BIGINT REFERENCES extractors(id),
  UNIQUE(user_id, fact_key)
);
CREATE INDEX facts_by_round ON facts(round_id, id);
CREATE INDEX facts_by_session ON facts(user_id, session, norm_key);
CREATE TABLE fact_vectors(rowid BIGINT PRIMARY KEY REFERENCES facts(id), user_id BIGINT NOT NULL, embedding vector({dim}) NOT NULL);
CREATE INDEX fact_vectors_by_user ON fact_vectors(user_id, rowid);
CREATE TABLE extract_queue(
  round_id BIGINT PRIMARY KEY REFERENCES rounds(id),
  user_id BIGINT NOT NULL REFERENCES users(id)
);
CREATE TABLE notes(
  id BIGSERIAL PRIMARY KEY,
  user_id BIGINT NOT NULL REFERENCES users(id),
  agent TEXT COLLATE "C",
  note_key TEXT COLLATE "C" NOT NULL,
  kind TEXT COLLATE "C" NOT NULL,
  title TEXT COLLATE "C",
  content TEXT COLLATE "C" NOT NULL,
  tags TEXT COLLATE "C" NOT NULL,
  metadata TEXT COLLATE "C" NOT NULL,
  importance DOUBLE PRECISION NOT NULL,
  ts TEXT COLLATE "C" NOT NULL,
  ts_unix BIGINT NOT NULL,
  day INTEGER NOT NULL,
  updated_ts TEXT COLLATE "C" NOT NULL,
  updated_unix BIGINT NOT NULL,
  tokens BIGINT NOT NULL,
  norm_key TEXT COLLATE "C" NOT NULL,
  condensed_into TEXT COLLATE "C",
  condenses TEXT COLLATE "C",
  UNIQUE(user_id, note_key)
);
CREATE INDEX notes_by_time ON notes(user_id, ts_unix, note_key);
CREATE INDEX notes_by_norm ON notes(user_id, norm_key);
CREATE TABLE note_tags(
  note_id BIGINT NOT NULL REFERENCES notes(id),
  tag TEXT COLLATE "C" NOT NULL,
  PRIMARY KEY(note_id, tag)
);
CREATE INDEX note_tags_by_tag ON note_tags(tag, note_id);
CREATE TABLE note_vectors(rowid BIGINT PRIMARY KEY REFERENCES notes(id), user_id BIGINT NOT NULL, embedding vector({dim}) NOT NULL);
CREATE INDEX note_vectors_by_user ON note_vectors(user_id, rowid);
CREATE TABLE round_parts(
  id BIGSERIAL PRIMARY KEY,
  round_id BIGINT NOT NULL REFERENCES rounds(id),
  user_id BIGINT NOT NULL REFERENCES users(id),
  embedding vector({dim}) NOT NULL
);
CREATE INDEX round_parts_by_round ON round_parts(round_id, id);
CREATE INDEX round_parts_by_user ON round_parts(user_id);
CREATE TABLE rounds_parted(
  round_id BIGINT PRIMARY KEY REFERENCES rounds(id),
  rule TEXT COLLATE "C" NOT NULL
);
"#
    )
}
