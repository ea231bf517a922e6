//! Part records: the sentences of a user turn that shares a long round with a reply rank for
//! their round; stores without them get them at the next open; deletes remove them.

use crate::common;

use std::sync::Arc;

use common::{embedders, open, temp_store};
use mnemon::embed::{Embedder, HashingEmbedder};
use mnemon::export::ExportFormat;
use mnemon::{Memory, Message, Query};

/// A long reply, so that the round it closes gets parts.
fn long_reply() -> String {
    "Here is a plan for a spring vegetable garden. Start with a sunny bed of good soil, add compost, \
     and choose easy crops such as lettuce, radishes, peas and spinach for the cool weeks. Sow them \
     in rows a foot apart and water them in the morning. When the nights stay warm, plant tomatoes, \
     peppers, zucchini and beans. Mulch around them to keep the soil moist and the weeds down. Feed \
     the tomatoes every two weeks, stake them early, and pick the zucchini small. Keep a notebook of \
     what you planted and when, so next year you can rotate the beds and avoid the same pests."
        .to_owned()
}

fn history() -> Vec<Message> {
    let at = "2023/05/02 (Tue) 10:00";
    vec![
        Message::user(
            "Can you help me plan a vegetable garden for spring? By the way, I caught up with my old \
             friend Emma at the bakery on Saturday.",
            at,
        )
        .in_session("s1"),
        Message::assistant(long_reply(), at).in_session("s1"),
        Message::user("What should I cook for dinner with leftover rice and eggs?", "2023/05/03 (Wed) 18:00")
            .in_session("s2"),
        Message::assistant(
            "Fried rice: eggs, rice, peas, soy sauce, spring onions.",
            "2023/05/03 (Wed) 18:00",
        )
        .in_session("s2"),
        Message::user("I met a new colleague at the office today.", "2023/05/04 (Thu) 09:00")
            .in_session("s3"),
        Message::assistant("Nice! How was the first impression?", "2023/05/04 (Thu) 09:00").in_session("s3"),
    ]
}

const QUESTION: &str = "When did I catch up with my friend Emma at the bakery?";

fn hashing() -> Arc<dyn Embedder> {
    Arc::new(HashingEmbedder::default())
}

/// Two stores answer `q` for `user` with the same rounds, scores and windows, byte for byte.
fn assert_same_recall(a: &Memory, b: &Memory, q: &str, user: &str) {
    let (x, y) = (a.recall(q, user).unwrap(), b.recall(q, user).unwrap());
    assert_eq!(serde_json::to_string(&x).unwrap(), serde_json::to_string(&y).unwrap(), "{q}");
}

fn count(path: &std::path::Path, table: &str) -> i64 {
    common::count(path, &format!("SELECT count(*) FROM {table}"))
}

#[test]
fn a_remark_in_passing_before_a_long_reply_ranks_its_round_through_its_sentence() {
    for (name, embedder) in embedders() {
        let t = temp_store();
        let m = open(&embedder, &t.path);
        m.add(&history(), "ana").unwrap();
        // Only the long round is parted: its user turn has two sentences.
        assert_eq!((count(&t.path, "round_parts"), count(&t.path, "rounds_parted")), (2, 3), "{name}");
        let recall = m.recall(Query::new(QUESTION), "ana").unwrap();
        let top = &recall.rounds[0];
        assert!(top.turns[0].content.contains("Emma"), "{name}: {:?}", top.turns[0].content);
        // It scored as its sentence, not as the whole round (which the reply dilutes).
        let q = embedder.embed_query(QUESTION).unwrap();
        let text = format!("user: {}\nassistant: {}", top.turns[0].content, top.turns[1].content);
        let round = &embedder.embed_documents(&[&text]).unwrap()[0];
        let sentence = &embedder
            .embed_documents(&["By the way, I caught up with my old friend Emma at the bakery on Saturday."])
            .unwrap()[0];
        let cos = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>();
        assert!(cos(&q, sentence) > cos(&q, round) + 0.05, "{name}: the sentence should match better");
        assert!(
            (top.cosine - cos(&q, sentence)).abs() < 1e-4,
            "{name}: {} vs {}",
            top.cosine,
            cos(&q, sentence)
        );
    }
}

#[test]
fn an_imported_dump_gets_its_parts_when_opened_with_an_embedder() {
    let embedder = hashing();
    let (a, b) = (temp_store(), temp_store());
    let m = open(&embedder, &a.path);
    m.add(&history(), "ana").unwrap();
    let dump = m.export(ExportFormat::Jsonl, "ana").unwrap();
    assert!(!dump.contains("round_parts"), "dumps carry no parts");
    common::import(&b.path, &dump).unwrap();
    assert_eq!(count(&b.path, "round_parts"), 0);
    let restored = open(&embedder, &b.path);
    assert_eq!(count(&b.path, "round_parts"), 2);
    assert_same_recall(&m, &restored, QUESTION, "ana");
    assert_eq!(restored.export(ExportFormat::Jsonl, "ana").unwrap(), dump);
}

#[test]
fn deleting_a_round_or_forgetting_its_user_removes_its_parts() {
    let embedder = hashing();
    let t = temp_store();
    let m = open(&embedder, &t.path);
    m.add(&history(), "ana").unwrap();
    m.add(&history(), "bo").unwrap();
    assert_eq!(count(&t.path, "round_parts"), 4);
    let key = m.recall(QUESTION, "ana").unwrap().rounds[0].key.clone();
    m.delete(&key, "ana").unwrap();
    assert_eq!((count(&t.path, "round_parts"), count(&t.path, "rounds_parted")), (2, 5));
    // The view follows: the deleted round is gone from recall.
    assert!(m.recall(QUESTION, "ana").unwrap().rounds.iter().all(|r| r.key != key));
    m.forget_user("bo").unwrap();
    assert_eq!((count(&t.path, "round_parts"), count(&t.path, "rounds_parted")), (0, 2));
}

fn two_friends() -> Vec<Message> {
    let at = "2023/05/08 (Mon) 13:56";
    let said = |speaker: &str, role: fn(String, &str) -> Message, text: &str| Message {
        speaker: Some(speaker.to_owned()),
        ..role(text.to_owned(), at).in_session("s1")
    };
    let user = |c: String, at: &str| Message::user(c, at);
    let assistant = |c: String, at: &str| Message::assistant(c, at);
    vec![
        said("Caroline", user, "I went to a support group yesterday and it was so powerful."),
        said("Melanie", assistant, "Wow, that's cool! I painted a sunrise over the lake last week."),
        said("Caroline", user, "I have been reading a book about adoption agencies."),
        said("Melanie", assistant, "That sounds like a big step, good luck with it."),
    ]
}

#[test]
fn rounds_are_embedded_and_indexed_with_their_speakers_names_and_keyed_by_role() {
    let embedder = hashing();
    let t = temp_store();
    let m = open(&embedder, &t.path);
    m.add(&two_friends(), "conv").unwrap();
    let text = common::text(&t.path, "SELECT text FROM rounds ORDER BY id LIMIT 1");
    assert!(text.starts_with("Caroline: I went") && text.contains("\nMelanie: Wow"), "{text}");
    // The name is a word of the round: a word search for it finds it (SQLite's FTS5 table).
    if !common::on_postgres() {
        assert_eq!(count(&t.path, "round_fts WHERE round_fts MATCH 'melanie'"), 2);
    }
    // The key is taken over the role text, as before names: re-adding is an exact duplicate.
    let again = m.add(&two_friends(), "conv").unwrap();
    assert_eq!((again.stored.len(), again.duplicates.len()), (0, 2));
    let top = &m.recall(Query::new("When did Melanie paint a sunrise?"), "conv").unwrap().rounds[0];
    assert!(top.turns[1].content.contains("sunrise"));
}

/// Stores written by builds from before schema 5's part and name records: SQLite files only, as
/// no such store can exist on PostgreSQL (the PostgreSQL pass of `scripts/test.sh` skips them).
mod older_files {
    use super::*;

    fn files_only() {
        assert!(!common::on_postgres(), "stores of older builds are SQLite files: run these on files");
    }

    #[test]
    fn a_store_without_parts_gets_them_at_the_next_open_and_ranks_as_a_fresh_one() {
        files_only();
        let embedder = hashing();
        let (fresh, old) = (temp_store(), temp_store());
        let m = open(&embedder, &fresh.path);
        m.add(&history(), "ana").unwrap();
        {
            let o = open(&embedder, &old.path);
            o.add(&history(), "ana").unwrap();
        }
        // As a build from before parts left it: no part tables at all.
        let conn = rusqlite::Connection::open(&old.path).unwrap();
        conn.execute_batch("DROP TABLE round_parts; DROP TABLE rounds_parted;").unwrap();
        drop(conn);
        assert_eq!(count(&old.path, "sqlite_master WHERE name = 'round_parts'"), 0);
        // Opened without an embedder, it gains the (empty) tables and stays readable.
        {
            let stored = Memory::builder(&old.path).stored().open().unwrap();
            assert!(stored.export(ExportFormat::Markdown, "ana").unwrap().contains("Emma"));
        }
        assert_eq!(count(&old.path, "round_parts"), 0);
        let o = open(&embedder, &old.path);
        assert_eq!(count(&old.path, "round_parts"), count(&fresh.path, "round_parts"));
        assert_eq!(count(&old.path, "rounds_parted"), 3);
        for q in [QUESTION, "dinner with rice", "colleague at the office"] {
            assert_same_recall(&m, &o, q, "ana");
        }
    }

    #[test]
    fn a_store_from_before_names_is_brought_up_to_date_at_open() {
        files_only();
        let embedder = hashing();
        let (fresh, old) = (temp_store(), temp_store());
        let m = open(&embedder, &fresh.path);
        m.add(&two_friends(), "conv").unwrap();
        m.add(&history(), "ana").unwrap();
        {
            let o = open(&embedder, &old.path);
            o.add(&two_friends(), "conv").unwrap();
            o.add(&history(), "ana").unwrap();
        }
        // As the build before names left it: role texts, their vectors and words, the parts rule.
        let conn = rusqlite::Connection::open(&old.path).unwrap();
        let rows: Vec<(i64, String)> = conn
            .prepare("SELECT id, text FROM rounds")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        for (id, named) in rows {
            let role = named.replace("Caroline:", "user:").replace("Melanie:", "assistant:");
            let v = embedder.embed_documents(&[&role]).unwrap().remove(0);
            let blob: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
            conn.execute(
                "INSERT INTO round_fts(round_fts, rowid, text) VALUES ('delete', ?1, ?2)",
                (id, &named),
            )
            .unwrap();
            conn.execute("UPDATE rounds SET text = ?2 WHERE id = ?1", (id, &role)).unwrap();
            conn.execute("INSERT INTO round_fts(rowid, text) VALUES (?1, ?2)", (id, &role)).unwrap();
            conn.execute("UPDATE round_vectors SET embedding = ?2 WHERE rowid = ?1", (id, blob)).unwrap();
        }
        conn.execute("UPDATE rounds_parted SET rule = 'user-sentences-v1'", []).unwrap();
        let part_vectors = |conn: &rusqlite::Connection| -> Vec<Vec<u8>> {
            let mut stmt = conn.prepare("SELECT embedding FROM round_parts ORDER BY id").unwrap();
            stmt.query_map([], |r| r.get(0)).unwrap().map(Result::unwrap).collect()
        };
        let parts_before = part_vectors(&conn);
        drop(conn);
        let o = open(&embedder, &old.path);
        let conn = rusqlite::Connection::open(&old.path).unwrap();
        assert_eq!(part_vectors(&conn), parts_before, "parts made under the same parts rule are kept");
        let stale: i64 = conn
            .query_row(
                "SELECT count(*) FROM rounds_parted WHERE rule <> 'names-v1+user-sentences-v1'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(stale, 0);
        drop(conn);
        for (q, user) in
            [("When did Melanie paint a sunrise?", "conv"), ("Caroline adoption", "conv"), (QUESTION, "ana")]
        {
            assert_same_recall(&m, &o, q, user);
        }
        for user in ["conv", "ana"] {
            assert_eq!(
                m.export(ExportFormat::Jsonl, user).unwrap(),
                o.export(ExportFormat::Jsonl, user).unwrap()
            );
        }
    }

    #[test]
    fn a_store_missing_only_its_part_vectors_is_parted_again() {
        files_only();
        let embedder = hashing();
        let (fresh, old) = (temp_store(), temp_store());
        let m = open(&embedder, &fresh.path);
        m.add(&history(), "ana").unwrap();
        open(&embedder, &old.path).add(&history(), "ana").unwrap();
        // The rules say "parted", but the vectors are gone: the rules cannot be trusted.
        let conn = rusqlite::Connection::open(&old.path).unwrap();
        conn.execute_batch("DROP TABLE round_parts;").unwrap();
        drop(conn);
        let o = open(&embedder, &old.path);
        assert_eq!(count(&old.path, "round_parts"), 2);
        assert_same_recall(&m, &o, QUESTION, "ana");
    }
}
