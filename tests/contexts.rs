//! The context block: a hard budget that keeps the top round, why each record is in it (or was
//! cut), long replies trimmed, oldest first with session headers, the best round's short
//! neighbours packed after it.

use crate::common::{self, ts};

use common::{conversation, hashing, temp_store};
use mnemon::config::Config;
use mnemon::export::ExportFormat;
use mnemon::{Error, Message, Query};

#[test]
fn a_context_respects_its_budget_and_keeps_the_top_round() {
    let t = temp_store();
    let m = hashing(&t.path);
    m.add(&conversation(), "u").unwrap();
    let full = m.get_context("Toby the beagle", "u").unwrap();
    assert_eq!(full.rounds.len(), 4);
    assert!(!full.truncated);
    assert_eq!(full.tokens, mnemon::context::count_tokens(&full.text));
    assert!(mnemon::context::context_body(&full.text).is_some());

    let tight = m.get_context(Query::new("Toby the beagle").budget(mnemon::config::MIN_BUDGET), "u").unwrap();
    assert_eq!(tight.rounds[0], full.rounds[0]);
    assert!(tight.truncated && tight.tokens <= mnemon::config::MIN_BUDGET);
    assert_eq!(tight.rounds.len() + tight.omitted.len(), 4);
    assert!(tight.text.contains("Toby"), "{}", tight.text);

    let mid = m.get_context(Query::new("Toby the beagle").budget(full.tokens - 5), "u").unwrap();
    assert!(mid.tokens <= full.tokens - 5);
    assert!(mid.truncated);
    for small in [0, 1, mnemon::config::MIN_BUDGET - 1] {
        assert!(matches!(
            m.get_context(Query::new("x").budget(small), "u"),
            Err(Error::InvalidInput { field, .. }) if field == "budget"
        ));
    }
}

#[test]
fn an_explained_context_says_why_each_record_is_in_it_or_was_cut_and_changes_nothing_else() {
    let t = temp_store();
    let m = hashing(&t.path);
    m.add(&conversation(), "u").unwrap();
    m.add(&[Message::user("New shoes arrived today.", "2023-05-18T10:00:00")], "u").unwrap();
    m.remember(
        &[mnemon::notes::NewNote::new("The user's beagle is named Toby.", "2023-05-01T10:00:00")],
        "u",
    )
    .unwrap();
    let angles = ["what shoes did I buy in the past week?"];
    let q = || {
        Query::new("Toby the beagle")
            .angles(&angles)
            .date(ts("2023-05-20T00:00:00"))
            .budget(mnemon::config::MIN_BUDGET + 100)
    };
    let plain = m.get_context(q(), "u").unwrap();
    let explained = m.get_context(q().explain(), "u").unwrap();
    assert!(plain.records.is_empty());
    let records = explained.records.clone();
    assert_eq!(
        mnemon::Context { records: Vec::new(), ..explained.clone() },
        plain,
        "explaining changed the context"
    );
    // Every ranked record once, best first: the kept ones are the block's, the rest were cut.
    let kept: Vec<&str> = records.iter().filter(|r| r.kept).map(|r| r.key.as_str()).collect();
    let cut: Vec<&str> = records.iter().filter(|r| !r.kept).map(|r| r.key.as_str()).collect();
    let mut block: Vec<&str> = plain.rounds.iter().chain(&plain.notes).map(String::as_str).collect();
    let mut kept_sorted = kept.clone();
    block.sort_unstable();
    kept_sorted.sort_unstable();
    assert_eq!(kept_sorted, block);
    assert_eq!(cut, plain.omitted.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(!cut.is_empty(), "the budget cut nothing: {records:?}");
    assert!(records.windows(2).all(|w| w[0].score >= w[1].score));
    assert!(records.iter().all(|r| r.dense.is_some() || r.words.is_some() || r.window.is_some()));
    let note = records.iter().find(|r| r.kind == "note").expect("the note ranks");
    assert_eq!((note.angle, note.window), (0, None));
    assert!(note.words.is_some(), "its words match the question: {note:?}");
    // The shoes come from the angle, which names a window their date is in.
    let shoes = records.iter().find(|r| r.key.starts_with("2023-05-18")).expect("the shoes round ranks");
    assert_eq!(shoes.angle, 1);
    assert!(shoes.time_match && shoes.window == Some(1), "{shoes:?}");
    let json = serde_json::to_value(&explained).unwrap();
    assert_eq!(json["records"][0]["kept"], true);
    assert!(serde_json::to_value(&plain).unwrap().get("records").is_none());
}

#[test]
fn a_turn_of_the_largest_size_allowed_is_cut_to_the_default_budget_with_a_marker() {
    let t = temp_store();
    let m = hashing(&t.path);
    let line = "The lighthouse keeper wrote another line in the log. ";
    let huge = line.repeat(mnemon::rounds::MAX_CONTENT_BYTES / line.len());
    assert!(huge.len() > mnemon::rounds::MAX_CONTENT_BYTES - line.len());
    m.add(&[Message::user(huge, "2026-01-01T10:00:00")], "u").unwrap();
    m.add(&[Message::user("The lighthouse keeper retired in May.", "2026-02-01T10:00:00")], "u").unwrap();
    let budget = Config::default().context_budget.unwrap();
    let c = m.get_context("lighthouse keeper log", "u").unwrap();
    assert!(c.tokens <= budget && c.tokens > budget - 20, "{}", c.tokens);
    assert_eq!(c.tokens, mnemon::context::count_tokens(&c.text));
    assert!(c.cut && c.truncated && c.rounds.len() == 1 && c.omitted.len() == 1);
    let body = mnemon::context::context_body(&c.text).unwrap();
    assert!(body.ends_with("[… cut here to fit the token budget]\n"), "{}", &body[body.len() - 200..]);
}

#[test]
fn a_long_reply_is_trimmed_in_a_context_and_whole_everywhere_else() {
    let t = temp_store();
    let m = hashing(&t.path);
    let advice = "Here are some general ideas that many people find useful when they plan a trip. \
        First, think carefully about your budget and the season before you book anything at all. \
        Second, read the reviews of several places and compare them with each other for a while. \
        Your kayak is red, as you told me last week, so it will be easy to spot on the lake. \
        Third, pack light and bring layers, because mountain weather changes quickly in the afternoon. \
        Finally, enjoy yourself and take plenty of photos so you remember the trip for years.";
    let at = "2026-01-01T10:00:00";
    m.add(&[Message::user("Any tips for my trip to the lake?", at), Message::assistant(advice, at)], "u")
        .unwrap();
    let question = "What colour is my kayak?";
    let trimmed = m.get_context(question, "u").unwrap();
    let mark = mnemon::context::TRIM_MARK;
    assert!(trimmed.text.contains("Your kayak is red") && trimmed.text.contains(mark), "{}", trimmed.text);
    assert!(trimmed.text.contains("user: Any tips for my trip to the lake?"), "the user's turn is whole");
    assert!(!trimmed.text.contains("Second, read the reviews"), "{}", trimmed.text);
    let whole = m.get_context(Query::new(question).whole_rounds(), "u").unwrap();
    assert!(whole.text.contains("Second, read the reviews") && !whole.text.contains(mark));
    assert!(trimmed.tokens < whole.tokens);
    assert_eq!(trimmed.rounds, whole.rounds, "the round is named by its key either way");
    // Stored, listed and exported whole.
    assert_eq!(m.rounds("u").unwrap()[0].turns[1].content, advice);
    assert!(m.export(ExportFormat::Markdown, "u").unwrap().contains("Second, read the reviews"));
    for budget in [mnemon::config::MIN_BUDGET, 250, 300] {
        let c = m.get_context(Query::new(question).budget(budget), "u").unwrap();
        assert!(c.tokens <= budget, "{budget}: {}", c.tokens);
    }
}

#[test]
fn the_context_is_chronological_with_session_headers() {
    let t = temp_store();
    let m = hashing(&t.path);
    m.add(&conversation(), "u").unwrap();
    let c = m.get_context("Toby", "u").unwrap();
    let headers: Vec<&str> = c.text.lines().filter(|l| l.starts_with("[Session date:")).collect();
    assert_eq!(
        headers,
        vec![
            "[Session date: 2023/05/20 (Sat) 02:21]",
            "[Session date: 2023/06/02 (Fri) 18:40]",
            "[Session date: 2023/07/15 (Sat) 09:05]"
        ]
    );
    let dog = c.text.find("Toby").unwrap();
    let cello = c.text.find("cello").unwrap();
    assert!(dog < cello);
}

#[test]
fn the_best_rounds_short_session_neighbours_come_right_after_it_in_a_context() {
    let t = temp_store();
    let m = hashing(&t.path);
    let mut msgs: Vec<Message> = (0..30)
        .map(|i| {
            Message::user(format!("filler note {i} about errands"), "2024-02-01T09:00:00").in_session("other")
        })
        .collect();
    let long = "A very long account of the drive, the weather and the roads. ".repeat(20);
    msgs.push(Message::user("Packed the car this morning.", "2024-03-01T09:00:00").in_session("trip"));
    msgs.push(
        Message::user("My sister Lucia moved to Porto last spring.", "2024-03-01T09:01:00")
            .in_session("trip"),
    );
    msgs.push(Message::user(long.clone(), "2024-03-01T09:02:00").in_session("trip"));
    m.add(&msgs, "u").unwrap();
    let q = || Query::new("Where does my sister Lucia live?").top_k(40);
    let ranked: Vec<String> = m.recall(q(), "u").unwrap().rounds.iter().map(|r| r.key.clone()).collect();
    let keys = m.rounds("u").unwrap();
    let key_of = |text: &str| keys.iter().find(|r| r.turns[0].content == text).unwrap().key.clone();
    let (hit, before) =
        (key_of("My sister Lucia moved to Porto last spring."), key_of("Packed the car this morning."));
    assert_eq!(ranked[0], hit);
    assert!(
        ranked.iter().position(|k| *k == before).unwrap() > 1,
        "the neighbour must rank lower on its own"
    );
    // In the context, the short neighbour comes right after the hit; the long one (over 150
    // tokens) stays where it ranked, as does everything else.
    let mut expected = ranked.clone();
    expected.retain(|k| *k != before);
    expected.insert(1, before.clone());
    let explained = m.get_context(q().explain(), "u").unwrap();
    let order: Vec<String> = explained.records.iter().map(|r| r.key.clone()).collect();
    assert_eq!(order, expected);
    assert_ne!(order[2], key_of(&long));
}
