//! The same calls give the same store on SQLite and on PostgreSQL: exports in every format,
//! contexts, recalls, searches and decision logs, byte for byte.

use crate::common;

use std::path::Path;
use std::sync::Arc;

use mnemon::embed::{Embedder, HashingEmbedder};
use mnemon::export::ExportFormat;
use mnemon::extract::{Extraction, Extractor, ExtractorPins};
use mnemon::notes::{NewNote, NoteKind, NoteUpdate, Search};
use mnemon::rounds::{Role, Turn};
use mnemon::{Memory, Message, Scope, Timestamp};
use mnemon_postgres::PgBackend;

/// The first LoCoMo dev conversation's user, as the harness names it.
const USER: &str = "conv-26";

/// The first LoCoMo dev conversation, as the harness loads it, one `add` per session.
fn sessions() -> (String, Vec<Vec<Message>>) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data/locomo.dev.json");
    let data = mnemon_eval::data::load(&path, mnemon_eval::data::Benchmark::LoCoMo).unwrap();
    let h = &data.haystacks[0];
    (h.user.clone(), h.messages.chunk_by(|a, b| a.session == b.session).map(<[Message]>::to_vec).collect())
}

/// States what the user's turn begins with (facts that pass verification, meet duplicates and
/// go through the queue like a model's), instantly.
struct Quoting;

impl Extractor for Quoting {
    fn pins(&self) -> ExtractorPins {
        ExtractorPins {
            name: "identity-test quoting".into(),
            model_blake3: "0".repeat(64),
            quant: "none".into(),
            runtime: "test".into(),
            decode: "first words of the user turn".into(),
            prompt: "none".into(),
        }
    }

    fn extract(&self, turns: &[Turn]) -> mnemon::Result<Extraction> {
        let facts = match turns.iter().find(|t| t.role == Role::User) {
            Some(user) => {
                let quote = user.content.split_whitespace().take(8).collect::<Vec<_>>().join(" ");
                serde_json::json!([{
                    "content": format!("The user said {quote}"), "raw": format!("user: {quote}"),
                    "when": null, "subject": null, "predicate": null, "object": null, "salience": 1.0
                }])
            }
            None => serde_json::json!([]),
        };
        Ok(Extraction::from_output(facts.to_string(), false, 10, 5))
    }
}

/// Every call of the script, on `m`; returns what the reads answered, as text.
fn script(m: &Memory) -> Vec<String> {
    let (user, sessions) = sessions();
    assert_eq!(user, USER);
    for session in sessions {
        m.add(&session, USER).unwrap();
    }
    m.flush().unwrap();
    let coach = Scope::user(USER).agent("coach");
    let notes = m
        .remember(
            &[
                NewNote::new("Caroline is researching adoption agencies.", "2023-05-09T10:00:00")
                    .title("Adoption")
                    .tags(["family", "plans"]),
                NewNote::new("Caroline ran a charity race for mental health.", "2023-05-20T10:00:00")
                    .kind(NoteKind::Episodic)
                    .tags(["running"])
                    .importance(0.9),
                NewNote::new("Ask about the pottery class before suggesting hobbies.", "2023-06-01T10:00:00")
                    .kind(NoteKind::Procedural)
                    .metadata(serde_json::json!({"source": "coach", "v": 1})),
            ],
            USER,
        )
        .unwrap();
    m.remember(
        &[NewNote::new("Private to the coach: Caroline prefers morning runs.", "2023-06-02T07:00:00")],
        coach,
    )
    .unwrap();
    let keys: Vec<String> = notes.notes.iter().map(|n| n.key.clone()).collect();
    let change = NoteUpdate {
        content: Some("Caroline is comparing three adoption agencies.".into()),
        tags: Some(vec!["family".into()]),
        ..NoteUpdate::default()
    };
    m.update(&keys[0], &change, &Timestamp::parse("2023-06-03T10:00:00").unwrap(), USER).unwrap();
    m.delete(&keys[2], USER).unwrap();
    let first_round = m.rounds(USER).unwrap()[3].key.clone();
    m.delete(&first_round, USER).unwrap();
    m.add(&[Message::user("Melanie likes painting lakes.", "2023-07-01T10:00:00")], "melanie").unwrap();
    m.add(&[Message::user("Forget me: my code is 7781.", "2023-07-01T10:00:00")], "gone").unwrap();
    assert_eq!(m.forget_user("gone").unwrap().rounds, 1);
    m.flush().unwrap();

    let mut out = Vec::new();
    for user in m.user_names().unwrap() {
        for format in [ExportFormat::Jsonl, ExportFormat::Markdown, ExportFormat::Text] {
            out.push(m.export(format, user.as_str()).unwrap());
        }
        out.push(format!("{:?}", m.decisions(user.as_str()).unwrap()));
    }
    out.push(m.export(ExportFormat::Jsonl, coach).unwrap());
    for q in
        ["What did Caroline research?", "When did Caroline go to the support group?", "pottery", "adoption"]
    {
        out.push(m.get_context(q, USER).unwrap().text);
        out.push(format!("{:?}", m.recall(q, USER).unwrap()));
        out.push(format!("{:?}", m.search(&Search::new(q), coach).unwrap()));
    }
    out.push(format!("{:?}", m.count(USER).unwrap()));
    out.push(format!("{:?}", m.user_names().unwrap()));
    out
}

fn embedder() -> Arc<dyn Embedder> {
    Arc::new(HashingEmbedder::default())
}

#[test]
fn the_same_calls_give_byte_identical_exports_contexts_and_logs_on_sqlite_and_postgres() {
    let dir = tempfile::tempdir().unwrap();
    let file = Memory::builder(dir.path().join("m.db"))
        .embedder(embedder())
        .extractor(Arc::new(Quoting))
        .open()
        .unwrap();
    let on_file = script(&file);
    drop(file);

    let url = common::fresh_db("identity");
    let backend = Arc::new(PgBackend::new(&url).unwrap());
    let pg =
        Memory::builder(backend.clone()).embedder(embedder()).extractor(Arc::new(Quoting)).open().unwrap();
    let on_pg = script(&pg);
    drop(pg);

    assert_eq!(on_file.len(), on_pg.len());
    for (i, (a, b)) in on_file.iter().zip(&on_pg).enumerate() {
        assert!(
            a == b,
            "output {i} differs:\n--- sqlite\n{}\n--- postgres\n{}",
            &a[..a.len().min(3000)],
            &b[..b.len().min(3000)]
        );
    }
    // Not trivially equal: the script stored and read a real conversation.
    assert!(on_pg[0].lines().count() > 200, "{}", on_pg[0].lines().count());

    // Reopened from the database alone (no models), the store reads the same.
    let stored = Memory::builder(backend).stored().open().unwrap();
    assert_eq!(stored.export(ExportFormat::Jsonl, USER).unwrap(), on_file[0]);
    // A file's forget empties its log; PostgreSQL keeps deleted rows in the tables' free space
    // and its log until its operator runs VACUUM FULL, so a forget there never says scrubbed.
    let forgot = stored.forget_user(USER).unwrap();
    assert!(forgot.rounds > 0 && !forgot.scrubbed, "{forgot:?}");
    drop(stored);
    common::drop_db(&url);
}
