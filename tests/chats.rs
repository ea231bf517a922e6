//! Chat histories from other apps (`mnemon::chats`), read from fixtures written by hand in each
//! format, with branches, edits, attachments, tool calls, hidden and empty messages and broken
//! entries: what is kept, what is left out, what is skipped and named; then imported into a real
//! store twice, the second time storing nothing.

use std::path::{Path, PathBuf};

use mnemon::chats::{self, ChatFormat, Conversation, Entry, Skipped, Tally};
use mnemon::rounds::Role;

use crate::common;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/chats").join(name)
}

fn read_all(format: ChatFormat, name: &str) -> (Vec<Conversation>, Vec<Skipped>, Tally) {
    let (mut conversations, mut skipped) = (Vec::new(), Vec::new());
    let file = std::fs::File::open(fixture(name)).unwrap();
    let tally = chats::read(format, file, |entry| {
        match entry {
            Entry::Conversation(c) => conversations.push(c),
            Entry::Skipped(s) => skipped.push(s),
        }
        Ok(())
    })
    .unwrap();
    (conversations, skipped, tally)
}

/// Each message as `role: content @ ts`.
fn lines(c: &Conversation) -> Vec<String> {
    c.messages
        .iter()
        .map(|m| {
            let role = if m.role == Role::User { "user" } else { "assistant" };
            format!("{role}: {} @ {}", m.content, m.ts)
        })
        .collect()
}

#[test]
fn chatgpt_follows_the_branch_shown_and_keeps_only_what_the_user_saw() {
    let (conversations, skipped, tally) = read_all(ChatFormat::ChatGpt, "chatgpt.json");
    assert_eq!(conversations.len(), 2);
    let sourdough = &conversations[0];
    assert_eq!(sourdough.session, "chatgpt:6631a0aa-1111-4c3e-9a52-000000000001");
    assert_eq!(sourdough.title.as_deref(), Some("Sourdough starter"));
    assert_eq!(
        lines(sourdough),
        [
            "user: My sourdough starter smells like nail polish. Is it dead? @ 2024-05-01T08:00:00.500000Z",
            "assistant: No, it is hungry: the acetone smell means it needs feeding more often. @ 2024-05-01T08:00:10Z",
            "user: How often should I feed it? I keep it on the counter. Here is a photo.\n[attached: starter.jpg] @ 2024-05-01T08:02:00Z",
            // The answer split around a browser call and its reasoning, joined.
            "assistant: On the counter, feed it twice a day.\n\nDiscard half before each feeding. @ 2024-05-01T08:02:20Z",
        ]
    );
    assert!(sourdough.messages.iter().all(|m| m.session.as_deref() == Some(sourdough.session.as_str())));
    assert_eq!(sourdough.messages[0].id.as_deref(), Some("u1"));
    let lisbon = &conversations[1];
    assert_eq!(lisbon.messages.len(), 2);
    assert!(lisbon.messages[1].content.contains("pastéis de nata"));
    let named: Vec<(&str, &str)> = skipped.iter().map(|s| (s.entry.as_str(), s.reason.as_str())).collect();
    assert_eq!(
        named,
        [
            (
                "conversation 3 \"Broken: no mapping\" (6631a0aa-3333-4c3e-9a52-000000000003)",
                "has no `mapping` of messages"
            ),
            (
                "conversation 4 \"Trip to Lisbon\" (6631a0aa-4444-4c3e-9a52-000000000004), message lbad",
                "has no `author.role`"
            ),
        ]
    );
    // Left out: the edited-away branch (2), the system prompt, the hidden profile, the browser
    // call, its result and the reasoning (5), and the empty chat's blank message (1).
    assert_eq!(tally, Tally { conversations: 2, messages: 6, skipped: 2, left_out: 8 });
}

#[test]
fn claude_keeps_text_blocks_attachments_by_name_and_the_current_branch() {
    let (conversations, skipped, tally) = read_all(ChatFormat::Claude, "claude.json");
    assert_eq!(conversations.len(), 2);
    assert_eq!(
        lines(&conversations[0]),
        [
            "user: My left knee hurts after long runs. I run 40 km a week.\n\n[attached: training-log.csv] @ 2025-02-10T18:02:12.000000Z",
            "assistant: That sounds like runner's knee. Cut the long run by a third for two weeks.\n\nStrengthen your hips, too. @ 2025-02-10T18:02:30.000000Z",
            "user: [attached: knee.png]\n\nIt looks swollen. @ 2025-02-10T18:05:00.000000Z",
        ]
    );
    let letter: Vec<&str> = conversations[1].messages.iter().map(|m| m.content.as_str()).collect();
    assert_eq!(
        letter,
        [
            "Help me with a cover letter for a data analyst job at Maersk.",
            "Sure. What is your background?",
            "I did five years of logistics at DSV.",
            "Lead with the DSV logistics years: they fit Maersk well.",
        ],
        "the retried answer is left out"
    );
    let named: Vec<&str> = skipped.iter().map(|s| s.entry.as_str()).collect();
    assert_eq!(
        named,
        [
            "conversation 1 \"Knee pain after running\" (1b7e0c1e-aaaa-4f7b-8d5e-000000000001), message k5",
            "conversation 3 \"Broken: no messages\" (1b7e0c1e-cccc-4f7b-8d5e-000000000003)",
            "conversation 4",
        ]
    );
    assert!(skipped[0].reason.contains("not a timestamp"), "{}", skipped[0].reason);
    assert_eq!(tally, Tally { conversations: 2, messages: 7, skipped: 3, left_out: 1 });
}

#[test]
fn jsonl_groups_sessions_and_skips_unreadable_lines_by_number() {
    let (conversations, skipped, tally) = read_all(ChatFormat::Jsonl, "chats.jsonl");
    let sessions: Vec<(&str, usize)> =
        conversations.iter().map(|c| (c.session.as_str(), c.messages.len())).collect();
    assert_eq!(sessions, [("cello", 2), ("cello-2", 2)]);
    let lines: Vec<&str> = skipped.iter().map(|s| s.entry.as_str()).collect();
    assert_eq!(lines, ["line 3", "line 4", "line 5"]);
    assert_eq!(tally, Tally { conversations: 2, messages: 4, skipped: 3, left_out: 0 });
}

#[test]
fn a_file_that_is_not_json_is_refused_naming_the_file_and_an_error_from_the_caller_stops_the_reading() {
    for (format, text) in
        [(ChatFormat::ChatGpt, "{\"not\": \"an array\"}"), (ChatFormat::Claude, "[{\"uuid\": ")]
    {
        let e = chats::read(format, text.as_bytes(), |_| Ok(())).unwrap_err();
        assert!(matches!(&e, mnemon::Error::InvalidInput { field, .. } if field == "file"), "{e}");
    }
    let file = std::fs::File::open(fixture("claude.json")).unwrap();
    let mut seen = 0;
    let e = chats::read(ChatFormat::Claude, file, |_| {
        seen += 1;
        Err(mnemon::Error::input("stop", "here"))
    })
    .unwrap_err();
    assert_eq!(seen, 1);
    assert!(matches!(&e, mnemon::Error::InvalidInput { field, .. } if field == "stop"), "{e}");
}

#[test]
fn an_import_stores_each_conversation_as_a_session_and_a_second_import_stores_nothing() {
    for (format, name, rounds) in [
        (ChatFormat::ChatGpt, "chatgpt.json", 3),
        (ChatFormat::Claude, "claude.json", 4),
        (ChatFormat::Jsonl, "chats.jsonl", 2),
    ] {
        let store = common::temp_store();
        let memory = common::hashing(&store.path);
        let open = || std::fs::File::open(fixture(name)).unwrap();
        let mut sessions = Vec::new();
        let first =
            chats::import(&memory, format, open(), "ana", |c, _| sessions.push(c.session.clone())).unwrap();
        assert_eq!(first.rounds_stored, rounds, "{name}");
        assert_eq!(first.rounds_duplicate, 0, "{name}");
        assert_eq!(first.skipped.len(), first.tally.skipped, "{name}");
        drop(memory);
        let before = common::state(&store.path);
        let memory = common::hashing(&store.path);
        let again = chats::import(&memory, format, open(), "ana", |_, _| {}).unwrap();
        assert_eq!(
            (again.rounds_stored, again.rounds_duplicate),
            (0, rounds),
            "{name}: a second import stores nothing"
        );
        let export = memory.export(mnemon::export::ExportFormat::Markdown, "ana").unwrap();
        drop(memory);
        assert_eq!(common::state(&store.path), before, "{name}: the store is byte-identical");
        for s in sessions {
            assert!(export.contains(&format!("Session `{s}`")), "{name}: {s}");
        }
    }
}

#[test]
fn a_conversation_the_store_refuses_is_skipped_and_named_and_the_rest_are_stored() {
    let store = common::temp_store();
    let memory = common::hashing(&store.path);
    // The second conversation's year is outside the configured years (1900-2200).
    let text = concat!(
        r#"[{"uuid": "ok", "name": "Fine", "chat_messages": [{"uuid": "m", "sender": "human", "text": "I like figs.", "created_at": "2025-01-01T10:00:00Z"}]},"#,
        r#" {"uuid": "far", "name": "Far", "chat_messages": [{"uuid": "n", "sender": "human", "text": "I like dates.", "created_at": "2500-01-01T10:00:00Z"}]}]"#
    );
    let done = chats::import(&memory, ChatFormat::Claude, text.as_bytes(), "ana", |_, _| {}).unwrap();
    assert_eq!(done.rounds_stored, 1);
    assert_eq!(done.skipped.len(), 1);
    assert_eq!(done.skipped[0].entry, "conversation \"Far\" (claude:far)");
    assert_eq!((done.tally.conversations, done.tally.skipped), (1, 1));
}

/// The hashing embedder, counting the documents it embeds.
struct Counting(mnemon::embed::HashingEmbedder, std::sync::atomic::AtomicUsize);

impl mnemon::embed::Embedder for Counting {
    fn pins(&self) -> mnemon::embed::EmbedderPins {
        self.0.pins()
    }
    fn embed_documents(&self, texts: &[&str]) -> mnemon::Result<Vec<Vec<f32>>> {
        self.1.fetch_add(texts.len(), std::sync::atomic::Ordering::Relaxed);
        self.0.embed_documents(texts)
    }
}

/// A second import embeds nothing (a replayed round is found by its key before its vector is
/// made), and a call that mixes replays with new rounds embeds the new ones only; the store ends
/// as it would had every round been embedded.
#[test]
fn a_replay_is_not_embedded_again() {
    use std::sync::atomic::Ordering;
    let store = common::temp_store();
    let embedder =
        std::sync::Arc::new(Counting(mnemon::embed::HashingEmbedder::default(), Default::default()));
    let memory =
        mnemon::Memory::builder(&store.path).embedder(std::sync::Arc::clone(&embedder)).open().unwrap();
    let open = || std::fs::File::open(fixture("claude.json")).unwrap();
    chats::import(&memory, ChatFormat::Claude, open(), "ana", |_, _| {}).unwrap();
    let first = embedder.1.load(Ordering::Relaxed);
    assert!(first >= 4, "{first}");
    let again = chats::import(&memory, ChatFormat::Claude, open(), "ana", |_, _| {}).unwrap();
    assert_eq!(again.rounds_duplicate, 4);
    assert_eq!(embedder.1.load(Ordering::Relaxed), first, "a replay embeds nothing");

    // Old and new rounds in one call: only the new one is embedded, and the store is the one
    // an embedder-for-everything run makes.
    let (mut conversations, _, _) = read_all(ChatFormat::Jsonl, "chats.jsonl");
    let mut messages = conversations.remove(0).messages;
    memory.add(&messages, "bo").unwrap();
    let before = embedder.1.load(Ordering::Relaxed);
    messages.push(mnemon::Message::user("I bought a new bow.", "2025-10-02T20:00:00").in_session("cello"));
    let report = memory.add(&messages, "bo").unwrap();
    assert_eq!((report.stored.len(), report.duplicates.len()), (1, 1));
    let embedded = embedder.1.load(Ordering::Relaxed) - before;
    drop(memory);
    let other = common::temp_store();
    let plain = common::hashing(&other.path);
    plain.add(&messages[..2], "bo").unwrap();
    let alone = {
        let t = common::temp_store();
        let counting =
            std::sync::Arc::new(Counting(mnemon::embed::HashingEmbedder::default(), Default::default()));
        let m = mnemon::Memory::builder(&t.path).embedder(std::sync::Arc::clone(&counting)).open().unwrap();
        m.add(&messages[2..], "bo").unwrap();
        counting.1.load(Ordering::Relaxed)
    };
    assert_eq!(embedded, alone, "only the new round (and its parts) is embedded");
    plain.add(&messages, "bo").unwrap();
    let ours = mnemon::Memory::builder(&store.path)
        .embedder(mnemon::embed::HashingEmbedder::default())
        .open()
        .unwrap();
    assert_eq!(
        ours.export(mnemon::export::ExportFormat::Jsonl, "bo").unwrap(),
        plain.export(mnemon::export::ExportFormat::Jsonl, "bo").unwrap()
    );
}
