-- Schema 4 to 5: the `extractors` table, named by every round and fact it produced. (The
-- extractor's pins then move out of `meta` into it: that step is in Rust, `store/schema.rs`.)
CREATE TABLE extractors(id INTEGER PRIMARY KEY, pins_hash TEXT NOT NULL UNIQUE, pins TEXT NOT NULL);
ALTER TABLE rounds ADD COLUMN extractor INTEGER REFERENCES extractors(id);
ALTER TABLE facts ADD COLUMN extractor INTEGER REFERENCES extractors(id);
