//! The write path: validation, dedup, transactions, bad input.

use crate::common;

use common::{conversation, hashing, state, temp_store};
use mnemon::embed::{Embedder, HashingEmbedder};
use mnemon::export::ExportFormat;
use mnemon::internals::vector::cosine;
use mnemon::rounds::Role;
use mnemon::{Error, Message, Query};

#[test]
fn exact_duplicates_inside_a_session_are_skipped_and_logged() {
    let t = temp_store();
    let m = hashing(&t.path);
    let ts = "2026-01-05T10:00:00";
    let report = m
        .add(
            &[
                Message::user("I live in Porto.", ts).in_session("s"),
                Message::user("i live in   PORTO!", ts).in_session("s"),
            ],
            "u",
        )
        .unwrap();
    assert_eq!(report.stored.len(), 1);
    assert_eq!(report.duplicates.len(), 1);
    assert_eq!(report.duplicates[0].cosine, None);
    assert_eq!(report.duplicates[0].of, report.stored[0]);
    // A later call in the same session is checked against what is stored.
    let again = m.add(&[Message::user("I live in Porto", ts).in_session("s")], "u").unwrap();
    assert!(again.stored.is_empty());
    let text = m.export(ExportFormat::Text, "u").unwrap();
    assert_eq!(text.matches("round.duplicate").count(), 2, "{text}");
    assert_eq!(text.matches("round.stored").count(), 1);
}

/// The state of an open store: on a file, its bytes and its write-ahead log's.
fn live_state(path: &std::path::Path) -> Vec<u8> {
    if common::on_postgres() {
        return state(path);
    }
    let mut bytes = std::fs::read(path).unwrap();
    bytes.extend(std::fs::read(path.with_extension("db-wal")).unwrap_or_default());
    bytes
}

#[test]
fn a_replayed_call_leaves_the_store_byte_identical() {
    let t = temp_store();
    let m = hashing(&t.path);
    let ts = "2026-01-05T10:00:00";
    let round = [Message::user("I live in Porto.", ts).in_session("s")];
    let note = [mnemon::notes::NewNote::new("Prefers tea to coffee.", ts)];
    let first = m.add(&round, "u").unwrap();
    let kept = m.remember(&note, "u").unwrap();
    let before = live_state(&t.path);
    // A client retrying after a timeout: the same round and the same note, with their times.
    let again = m.add(&round, "u").unwrap();
    assert_eq!((again.stored.len(), again.duplicates[0].of.as_str()), (0, first.stored[0].as_str()));
    let note_again = m.remember(&note, "u").unwrap();
    assert_eq!((note_again.notes[0].stored, &note_again.notes[0].key), (false, &kept.notes[0].key));
    assert_eq!(live_state(&t.path), before, "a replay changed the store");
    // The same words at another time are a decision of their own, and logged.
    m.remember(&[mnemon::notes::NewNote::new("Prefers tea to coffee.", "2026-01-06T10:00:00")], "u").unwrap();
    assert_ne!(live_state(&t.path), before);
    let log = m.decisions("u").unwrap();
    let kinds: Vec<&str> = log.iter().map(|d| d.kind.as_str()).collect();
    assert_eq!(kinds, ["round.stored", "note.stored", "note.duplicate"]);
}

#[test]
fn the_same_text_in_another_session_is_kept() {
    let t = temp_store();
    let m = hashing(&t.path);
    let ts = "2026-01-05T10:00:00";
    let report = m
        .add(
            &[
                Message::user("I live in Porto.", ts).in_session("s1"),
                Message::user("I live in Porto.", ts).in_session("s2"),
            ],
            "u",
        )
        .unwrap();
    assert_eq!(report.stored.len(), 2);
    assert_ne!(report.stored[0], report.stored[1]);
}

fn near_duplicates() -> (String, String) {
    let base = "Last weekend I hiked the Ridge Trail with my sister and we counted eleven waterfalls \
                before lunch then ate sandwiches by the lake and watched herons fishing near the reeds \
                until the rain started and we walked back through the pine forest to the parking lot";
    (base.to_owned(), base.replace("eleven", "twelve"))
}

#[test]
fn cosine_duplicates_inside_a_session_are_skipped_but_not_across_sessions() {
    let (a, b) = near_duplicates();
    let e = HashingEmbedder::default();
    let v = e.embed_documents(&[&format!("user: {a}"), &format!("user: {b}")]).unwrap();
    let cos = cosine(&v[0], &v[1]);
    assert!((0.95..1.0).contains(&cos), "fixture must be a near duplicate, cosine {cos}");

    let t = temp_store();
    let m = hashing(&t.path);
    let ts = "2026-02-01T08:00:00";
    let report = m.add(&[Message::user(&a, ts), Message::user(&b, ts)], "u").unwrap();
    assert_eq!(report.stored.len(), 1);
    assert_eq!(report.duplicates.len(), 1);
    assert!(report.duplicates[0].cosine.unwrap() >= 0.95);

    let other = m.add(&[Message::user(&b, "2026-02-02T08:00:00")], "u").unwrap();
    assert_eq!(other.stored.len(), 1, "another session keeps it");
}

#[test]
fn dedup_probes_every_round_of_the_session_not_only_the_nearest() {
    // The duplicate's twin is not the session's first or last round.
    let (a, b) = near_duplicates();
    let t = temp_store();
    let m = hashing(&t.path);
    let ts = "2026-02-01T08:00:00";
    m.add(
        &[
            Message::user("Unrelated: my cat sleeps all day.", ts),
            Message::user(&a, ts),
            Message::user("Another: I like tea.", ts),
        ],
        "u",
    )
    .unwrap();
    let report = m.add(&[Message::user(&b, ts)], "u").unwrap();
    assert_eq!(report.duplicates.len(), 1);
}

#[test]
fn a_bad_timestamp_fails_the_call_naming_the_message_and_changes_nothing() {
    let t = temp_store();
    {
        let m = hashing(&t.path);
        m.add(&conversation(), "u").unwrap();
    }
    let before = state(&t.path);
    {
        let m = hashing(&t.path);
        let mut msgs = conversation();
        msgs.push(Message::user("new", "2023/13/45 (Mon) 99:99"));
        match m.add(&msgs, "u") {
            Err(Error::InvalidInput { field, .. }) => assert_eq!(field, "messages[8].ts"),
            other => panic!("{other:?}"),
        }
        let mut missing = conversation();
        missing[3].ts = String::new();
        assert!(
            matches!(m.add(&missing, "u"), Err(Error::InvalidInput { field, .. }) if field == "messages[3].ts")
        );
    }
    assert_eq!(state(&t.path), before);
}

#[test]
fn a_failure_inside_the_transaction_rolls_everything_back() {
    let t = temp_store();
    {
        let m = hashing(&t.path);
        m.add(&conversation(), "u").unwrap();
    }
    // A trigger that aborts on one round simulates a failure after other rows were written.
    common::poison(&t.path, "rounds", "text");
    let before = state(&t.path);
    {
        let m = hashing(&t.path);
        let ts = "2024-01-01T00:00:00";
        let msgs =
            [Message::user("fine one", ts), Message::user("fine two", ts), Message::user("POISON", ts)];
        assert!(m.add(&msgs, "u").is_err());
        assert!(m.add(&msgs, "someone-new").is_err());
        // The in-memory index was not advanced either.
        let recall = m.recall("fine one", "u").unwrap();
        assert!(recall.rounds.iter().all(|r| !r.turns[0].content.starts_with("fine")));
    }
    assert_eq!(state(&t.path), before);
}

#[test]
fn empty_turns_are_dropped_and_an_all_empty_call_writes_nothing() {
    let t = temp_store();
    let m = hashing(&t.path);
    let ts = "2026-01-01T00:00:00";
    let report = m.add(&[Message::user("   ", ts), Message::assistant("", ts)], "u").unwrap();
    assert_eq!(report.empty_turns_dropped, 2);
    assert!(report.stored.is_empty());
    assert!(m.user_names().unwrap().is_empty(), "no user row for a call that stored nothing");
}

#[test]
fn bad_user_ids_and_oversized_turns_are_refused_by_field() {
    let t = temp_store();
    let m = hashing(&t.path);
    let ts = "2026-01-01T00:00:00";
    // Blank, a control character, look-alikes of "ana" (zero-width space, word joiner, a bidi
    // override, a byte-order mark) and "café" decomposed (not NFC).
    for user in ["", "  ", "a\nb", "an\u{200b}a", "an\u{2060}a", "\u{202e}ana", "\u{feff}ana", "cafe\u{301}"]
    {
        assert!(
            matches!(m.add(&[Message::user("x", ts)], user), Err(Error::InvalidInput { field, .. }) if field == "user_id"),
            "{user:?}"
        );
        assert!(
            matches!(m.get_context(Query::new("x"), user), Err(Error::InvalidInput { field, .. }) if field == "user_id"),
            "{user:?}"
        );
    }
    assert!(m.user_names().unwrap().is_empty(), "nothing stored for a refused name");
    // The composed form, and other scripts, are ordinary names.
    for user in ["caf\u{e9}", "\u{30a2}\u{30ca}", "\u{0622}\u{0646}\u{0627}"] {
        m.add(&[Message::user("x", ts)], user).unwrap();
    }
    let huge = "x".repeat(mnemon::rounds::MAX_CONTENT_BYTES + 1);
    assert!(matches!(
        m.add(&[Message::user(huge, ts)], "u"),
        Err(Error::InvalidInput { field, .. }) if field == "messages[0].content"
    ));
    assert!(matches!(
        m.add(&[Message::user("a\0b", ts)], "u"),
        Err(Error::InvalidInput { field, .. }) if field == "messages[0].content"
    ));
}

#[test]
fn a_one_megabyte_turn_is_stored_verbatim_and_recalled() {
    let t = temp_store();
    let m = hashing(&t.path);
    let big: String = (0..200_000).map(|i| format!("w{} ", i % 5000)).collect::<String>();
    let big = format!("{}zebra", &big[..1_000_000 - 5]);
    assert_eq!(big.len(), 1_000_000);
    m.add(&[Message::user(big.clone(), "2026-01-01T00:00:00")], "u").unwrap();
    let recall = m.recall("zebra w1 w2", "u").unwrap();
    assert_eq!(recall.rounds[0].turns[0].content, big);
}

#[test]
fn ten_thousand_messages_in_one_call_land_in_one_transaction() {
    let t = temp_store();
    let m = hashing(&t.path);
    let msgs: Vec<Message> = (0..10_000)
        .map(|i| {
            let ts = format!("2025-01-{:02}T{:02}:00:00", 1 + i / 2000, (i / 100) % 20);
            let role = if i % 2 == 0 { Role::User } else { Role::Assistant };
            Message::new(role, format!("message number {i} about topic {}", i % 37), ts)
        })
        .collect();
    let report = m.add(&msgs, "u").unwrap();
    assert_eq!(report.stored.len() + report.duplicates.len(), 5_000);
    assert_eq!(report.stored.len(), 5_000);
    let text = m.export(ExportFormat::Text, "u").unwrap();
    assert_eq!(text.matches("\n  round ").count(), 5_000);
}

#[test]
fn json_input_errors_name_the_field() {
    let bad = [
        (r#"{"role":"user","content":"","ts":"2026-01-01"}"#, None),
        (r#"{"role":"robot","content":"x","ts":"2026-01-01"}"#, Some("m.role")),
        (r#"{"role":"user","content":["x"],"ts":"2026-01-01"}"#, Some("m.content")),
        (r#"{"role":"user","content":"x","ts":12}"#, Some("m.ts")),
    ];
    for (json, field) in bad {
        let v: serde_json::Value = serde_json::from_str(json).unwrap();
        match (Message::from_json(&v, "m"), field) {
            (Ok(_), None) => {}
            (Err(Error::InvalidInput { field: got, .. }), Some(want)) => assert_eq!(got, want),
            (other, _) => panic!("{json}: {other:?}"),
        }
    }
}

#[test]
fn concurrent_writers_on_one_file_never_see_database_is_locked() {
    let t = temp_store();
    drop(hashing(&t.path));
    let threads: Vec<_> = (0..3)
        .map(|w| {
            let path = t.path.clone();
            std::thread::spawn(move || {
                let m = hashing(&path);
                for i in 0..40 {
                    let ts = format!("2026-01-01T{:02}:{:02}:00", w, i);
                    m.add(&[Message::user(format!("writer {w} note {i}"), ts)], "shared").unwrap();
                    m.recall("note", "shared").unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let m = hashing(&t.path);
    let text = m.export(ExportFormat::Text, "shared").unwrap();
    assert_eq!(text.matches("\n  round ").count(), 120);
}

/// The hashing embedder, except that a text holding "poison" embeds with a NaN in its vector.
struct Poisoned(HashingEmbedder);

impl Embedder for Poisoned {
    fn pins(&self) -> mnemon::embed::EmbedderPins {
        self.0.pins()
    }
    fn embed_documents(&self, texts: &[&str]) -> mnemon::Result<Vec<Vec<f32>>> {
        let mut out = self.0.embed_documents(texts)?;
        for (v, t) in out.iter_mut().zip(texts) {
            if t.contains("poison") {
                v[0] = f32::NAN;
            }
        }
        Ok(out)
    }
}

#[test]
fn a_vector_that_is_not_finite_is_refused_from_an_embedder_and_from_a_dump() {
    let t = temp_store();
    let open =
        || mnemon::Memory::builder(&t.path).embedder(Poisoned(HashingEmbedder::default())).open().unwrap();
    open().add(&conversation(), "u").unwrap();
    let before = state(&t.path);
    {
        let m = open();
        let bad = [Message::user("a poison apple", "2026-05-01T10:00:00")];
        assert!(matches!(m.add(&bad, "u"), Err(Error::Embedder(_))), "a NaN document vector is stored");
        assert!(matches!(m.recall("poison", "u"), Err(Error::Embedder(_))), "a NaN query vector ranks");
    }
    assert_eq!(state(&t.path), before);
    // A dump whose vector was edited to hold a NaN is refused, naming its line.
    let dump = open().export(ExportFormat::Jsonl, "u").unwrap();
    let nan = hex_f32(f32::NAN);
    let tampered: String = dump
        .lines()
        .map(|l| match l.find("\"embedding_f32le\":\"") {
            Some(i) if l.contains("\"kind\":\"round\"") => {
                let at = i + "\"embedding_f32le\":\"".len();
                format!("{}{nan}{}\n", &l[..at], &l[at + nan.len()..])
            }
            _ => format!("{l}\n"),
        })
        .collect();
    assert_ne!(tampered, dump);
    let other = temp_store();
    match common::import(&other.path, &tampered) {
        Err(Error::Import { reason, .. }) => assert!(reason.contains("finite"), "{reason}"),
        other => panic!("{other:?}"),
    }
}

fn hex_f32(x: f32) -> String {
    x.to_le_bytes().iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn a_messages_metadata_stays_with_its_turn_outside_the_key_and_through_a_dump() {
    let t = temp_store();
    let m = hashing(&t.path);
    let ts = "2026-01-05T10:00:00";
    let meta = serde_json::json!({"category": "home", "v": 2});
    let with = m
        .add(
            &[
                Message::user("I moved to Lisbon.", ts).in_session("s").with_metadata(meta.clone()),
                Message::assistant("Lovely city.", ts).in_session("s"),
            ],
            "u",
        )
        .unwrap();
    let plain = temp_store();
    let without = hashing(&plain.path)
        .add(
            &[
                Message::user("I moved to Lisbon.", ts).in_session("s"),
                Message::assistant("Lovely city.", ts).in_session("s"),
            ],
            "u",
        )
        .unwrap();
    assert_eq!(with.stored, without.stored, "metadata is not part of the round's key");
    let round = &m.rounds("u").unwrap()[0];
    assert_eq!(round.turns[0].metadata.as_ref(), Some(&meta));
    assert_eq!(round.turns[1].metadata, None);
    let text = m.export(ExportFormat::Text, "u").unwrap();
    assert!(text.contains(r#"    user [metadata {"category":"home","v":2}]: I moved to Lisbon."#), "{text}");
    let md = m.export(ExportFormat::Markdown, "u").unwrap();
    assert!(md.contains(r#"metadata (user): `{"category":"home","v":2}`"#), "{md}");
    // Not in the prompt's context: metadata is for filters and tools, not for the model.
    let context = m.get_context(mnemon::Query::new("Where do I live?"), "u").unwrap();
    assert!(!context.text.contains("category"), "{}", context.text);
    // Through a dump, unchanged.
    let dump = m.export(ExportFormat::Jsonl, "u").unwrap();
    let copy = t.dir.path().join("copy.db");
    mnemon::Memory::builder(&copy).import(&dump).unwrap();
    let again = mnemon::Memory::builder(&copy).embedder(HashingEmbedder::default()).open().unwrap();
    assert_eq!(again.rounds("u").unwrap(), m.rounds("u").unwrap());
    // Not an object, or too large: refused, naming the field, nothing stored.
    let before = m.export(ExportFormat::Jsonl, "u").unwrap();
    for bad in
        [serde_json::json!([1]), serde_json::json!({"x": "y".repeat(mnemon::notes::MAX_METADATA_BYTES)})]
    {
        let err = m
            .add(&[Message::user("Another round.", ts).in_session("s").with_metadata(bad)], "u")
            .unwrap_err();
        assert!(
            matches!(&err, Error::InvalidInput { field, .. } if field == "messages[0].metadata"),
            "{err:?}"
        );
    }
    assert_eq!(m.export(ExportFormat::Jsonl, "u").unwrap(), before);
}

/// One call of many rounds: stored rounds with part records, exact duplicates of stored rounds
/// and of the call's own, a cosine duplicate, a replay, and the same text in another session.
fn mixed_rounds() -> Vec<Message> {
    let (a, b) = near_duplicates();
    let ts = "2026-03-01T09:00:00";
    let long: String = (0..12)
        .map(|i| {
            format!(
                "On day {i} of the trip we walked along the coast and stopped at a small cafe by the harbour."
            )
        })
        .collect::<Vec<_>>()
        .join(" ");
    vec![
        Message::user("I live in Porto.", ts).in_session("s1"),
        Message::user("i live in PORTO!", ts).in_session("s1"),
        Message::user(&long, ts).in_session("s1"),
        Message::assistant("That sounds like a lovely trip along the coast.", ts).in_session("s1"),
        Message::user(&a, ts).in_session("s1"),
        Message::user(&b, ts).in_session("s1"),
        Message::user("My sister lives in Braga.", ts).in_session("s1"),
        Message::user("I live in Porto.", ts).in_session("s2"),
        Message::user("Stored before this call.", "2026-02-28T09:00:00").in_session("s1"),
        Message::user("stored before this call", ts).in_session("s1"),
    ]
}

#[test]
fn one_call_of_many_rounds_writes_what_a_call_a_round_writes_on_either_store() {
    let messages = mixed_rounds();
    let earlier = [Message::user("Stored before this call.", "2026-02-28T09:00:00").in_session("s1")];
    let dump_of = |m: &mnemon::Memory| {
        let dump = m.export(ExportFormat::Jsonl, "u").unwrap();
        let decisions: Vec<(String, String, Option<String>, String)> = m
            .decisions("u")
            .unwrap()
            .into_iter()
            .map(|d| (d.kind.as_str().to_owned(), d.record, d.other, d.detail))
            .collect();
        (dump, decisions)
    };

    let whole = temp_store();
    let m = hashing(&whole.path);
    m.add(&earlier, "u").unwrap();
    let report = m.add(&messages, "u").unwrap();
    assert_eq!(report.stored.len(), 5, "{report:?}");
    assert_eq!(report.duplicates.len(), 4, "{report:?}");
    assert_eq!(report.duplicates.iter().filter(|d| d.cosine.is_some()).count(), 1);
    let one_call = dump_of(&m);
    let count = |kind: &str| one_call.1.iter().filter(|d| d.0 == kind).count();
    // The replay of the earlier round is not logged; the other three duplicates are.
    assert_eq!((count("round.stored"), count("round.duplicate")), (6, 3), "{:?}", one_call.1);
    // Two calls counted, the logical now at the latest round.
    let now = common::text(&whole.path, "SELECT now_ts || ' ' || version FROM users WHERE name = 'u'");
    assert_eq!(now, "2026-03-01T09:00:00 2");
    let parts: i64 = common::count(&whole.path, "SELECT count(*) FROM round_parts");
    assert!(parts >= 12, "the long round has a part a sentence: {parts}");

    // The same rounds, a call each (a round is a user turn and the reply after it).
    let single = temp_store();
    let n = hashing(&single.path);
    n.add(&earlier, "u").unwrap();
    let mut i = 0;
    while i < messages.len() {
        let end = if messages.get(i + 1).is_some_and(|m| m.role == Role::Assistant) { i + 2 } else { i + 1 };
        n.add(&messages[i..end], "u").unwrap();
        i = end;
    }
    assert_eq!(dump_of(&n), one_call);

    // On PostgreSQL (a statement a table), the same as in a file (a statement a row).
    if common::on_postgres() {
        let dir = tempfile::tempdir().unwrap();
        let file = mnemon::Memory::builder(dir.path().join("file.db"))
            .embedder(HashingEmbedder::default())
            .open()
            .unwrap();
        file.add(&earlier, "u").unwrap();
        file.add(&messages, "u").unwrap();
        assert_eq!(dump_of(&file), one_call);
        // The part records too: a question about one sentence of the long round ranks the same.
        let q = mnemon::Query::new("the small cafe by the harbour on day 7").top_k(3);
        assert_eq!(m.get_context(q.clone(), "u").unwrap(), file.get_context(q.clone(), "u").unwrap());
        let (pg, f) = (m.recall(q.clone(), "u").unwrap(), file.recall(q.clone(), "u").unwrap());
        assert_eq!(serde_json::to_string(&pg).unwrap(), serde_json::to_string(&f).unwrap());
    }
}

/// Timestamps name a year in `Config::years` (1900–2200 by default) and at most nanoseconds: a
/// note dated 9999 would move the user's logical now (and "last week") to that year. Every
/// refusal names its field and leaves the store as it was; a wider range is a setting.
#[test]
fn timestamps_outside_the_configured_years_are_refused_by_field() {
    let t = temp_store();
    hashing(&t.path).add(&[Message::user("I live in Porto.", "2026-01-01T00:00:00")], "u").unwrap();
    let before = state(&t.path);
    let m = hashing(&t.path);
    let refused = |r: mnemon::Result<()>, name: &str| {
        assert!(matches!(&r, Err(Error::InvalidInput { field, .. }) if field == name), "{name}: {r:?}");
    };
    for ts in [
        "9999-12-31T23:59:59",
        "0001-01-01T00:00:00",
        "1899-12-31",
        "2026-01-01T00:00:00.123456789123Z",
        "-5000-01-01",
    ] {
        refused(
            m.add(&[Message::user("x", "2026-01-01"), Message::user("x", ts)], "u").map(drop),
            "messages[1].ts",
        );
        refused(m.remember(&[mnemon::notes::NewNote::new("x", ts)], "u").map(drop), "memories[0].ts");
    }
    let far = mnemon::Timestamp::parse("9999-01-01").unwrap();
    refused(m.get_context(Query::new("where?").date(far.clone()), "u").map(drop), "date");
    refused(m.recall(Query::new("where?").as_of(far), "u").map(drop), "as_of");
    refused(m.recall(Query::new("[Current date: 9999-01-01] where?"), "u").map(drop), "query");
    drop(m);
    assert_eq!(state(&t.path), before, "nothing refused changed the store");
    // Nanoseconds are fine, and so is an archive's year once the range says so.
    let config = mnemon::config::Config { years: 1800..=2200, ..Default::default() };
    let wide = common::open_at(&t.path, std::sync::Arc::new(HashingEmbedder::default()), config).unwrap();
    wide.add(&[Message::user("x", "2026-01-01T00:00:00.123456789Z")], "u").unwrap();
    wide.add(&[Message::user("A letter from 1850.", "1850-06-01T00:00:00")], "u").unwrap();
    let note =
        wide.remember(&[mnemon::notes::NewNote::new("Tea, not coffee.", "2026-01-02")], "u").unwrap().notes
            [0]
        .key
        .clone();
    let change = mnemon::notes::NoteUpdate { content: Some("Coffee now.".into()), ..Default::default() };
    refused(
        wide.update(&note, &change, &mnemon::Timestamp::parse("9999-01-01").unwrap(), "u").map(drop),
        "ts",
    );
    let bad = mnemon::config::Config { years: 0..=2200, ..Default::default() };
    assert!(matches!(bad.validate(), Err(Error::InvalidConfig { field: "years", .. })));
}
