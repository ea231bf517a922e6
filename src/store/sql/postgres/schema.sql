-- The schema of a new store in PostgreSQL (version 5): a SQLite file's tables, columns and keys (see
-- `store/postgres.rs` for the differences). `{dim}` is the embedder's vector width.
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
