-- Schema 3 to 4: agent-private records (an `agent` column on rounds, facts and decisions) and the
-- note tables; FTS5's secure-delete on the round index. `{dim}` is the store's vector width.
ALTER TABLE rounds ADD COLUMN agent TEXT;
ALTER TABLE facts ADD COLUMN agent TEXT;
ALTER TABLE decisions ADD COLUMN agent TEXT;
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
