-- Part records: derived from a round and the embedder, never exported, and made again for any
-- round without a `rounds_parted` row under the current rule. Added to schema 5 stores made before
-- them, in place at open (idempotent).
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
