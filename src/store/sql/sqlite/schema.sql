-- The schema of a new store (version 5). `{dim}` is the embedder's vector width, fixed at creation.
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
CREATE TABLE extractors(id INTEGER PRIMARY KEY, pins_hash TEXT NOT NULL UNIQUE, pins TEXT NOT NULL);
CREATE TABLE extract_queue(
  round_id INTEGER PRIMARY KEY REFERENCES rounds(id),
  user_id INTEGER NOT NULL REFERENCES users(id)
);
INSERT INTO round_fts(round_fts, rank) VALUES('secure-delete', 1);

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
);
