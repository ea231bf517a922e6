//! Reading a store as a person browses it: users with what they hold, a timeline by pages (facts
//! with their supersessions), the decision log by kind, activity per month. The extractor is a
//! scripted test double (its outputs are below): these tests are about the reads, not extraction.

use crate::common;

use std::collections::HashMap;
use std::sync::Arc;

use common::temp_store;
use mnemon::browse::Paging;
use mnemon::config::Config;
use mnemon::decisions::DecisionKind;
use mnemon::embed::HashingEmbedder;
use mnemon::extract::{Extraction, Extractor, ExtractorPins};
use mnemon::notes::NewNote;
use mnemon::rounds::Turn;
use mnemon::{Error, Memory, Message, Scope};

/// Facts as JSON per user turn; `[]` for any other round.
struct Scripted(HashMap<String, String>);

impl Extractor for Scripted {
    fn pins(&self) -> ExtractorPins {
        ExtractorPins {
            name: "scripted".into(),
            model_blake3: "0".repeat(64),
            quant: "none".into(),
            runtime: "test".into(),
            decode: "table".into(),
            prompt: "browse.rs".into(),
        }
    }

    fn extract(&self, turns: &[Turn]) -> mnemon::Result<Extraction> {
        let out = self.0.get(&turns[0].content).cloned().unwrap_or_else(|| "[]".into());
        Ok(Extraction::from_output(out, false, 10, 5))
    }
}

fn triple(content: &str, raw: &str, s: &str, p: &str, o: &str, when: Option<&str>) -> String {
    serde_json::json!({
        "content": content, "raw": raw, "when": when,
        "subject": s, "predicate": p, "object": o, "salience": 1.0
    })
    .to_string()
}

fn open(path: &std::path::Path) -> Memory {
    let mut outputs = HashMap::new();
    outputs.insert(
        "I live in Porto, near the river.".to_string(),
        format!(
            "[{}]",
            triple("The user lives in Porto.", "user: I live in Porto", "user", "lives in", "Porto", None)
        ),
    );
    outputs.insert(
        "Big news: I moved to Lisbon last week!".to_string(),
        format!(
            "[{}]",
            triple(
                "The user moved to Lisbon.",
                "user: I moved to Lisbon last week",
                "user",
                "moved to",
                "Lisbon",
                Some("last week")
            )
        ),
    );
    let x: Arc<dyn Extractor> = Arc::new(Scripted(outputs));
    let config = Config { background_extraction: false, ..Config::default() };
    let builder = match common::postgres() {
        Some(_) => Memory::builder(common::backend_for(path)),
        None => Memory::builder(path),
    };
    builder.embedder(HashingEmbedder::default()).extractor(x).config(config).open().unwrap()
}

/// Maya: a home in January, a move in June (superseding it), chit-chat in between; a note of
/// hers private to an agent; Bob: one round.
fn seeded(m: &Memory) {
    m.add(
        &[
            Message::user("I live in Porto, near the river.", "2024-01-10T10:00:00").in_session("a"),
            Message::assistant("Porto is lovely.", "2024-01-10T10:00:00").in_session("a"),
        ],
        "maya",
    )
    .unwrap();
    for d in 1..=5 {
        m.add(
            &[Message::user(format!("Small talk {d}."), format!("2024-03-0{d}T10:00:00")).in_session("c")],
            "maya",
        )
        .unwrap();
    }
    m.add(
        &[
            Message::user("Big news: I moved to Lisbon last week!", "2024-06-02T09:00:00").in_session("b"),
            Message::assistant("Congratulations on the move!", "2024-06-02T09:00:00").in_session("b"),
        ],
        "maya",
    )
    .unwrap();
    m.remember(&[NewNote::new("Prefers tea.", "2024-06-03T08:00:00")], Scope::user("maya").agent("tutor"))
        .unwrap();
    m.add(&[Message::user("Hello.", "2024-02-01T10:00:00")], "bob").unwrap();
}

#[test]
fn users_are_listed_with_what_they_and_their_agents_hold() {
    let t = temp_store();
    let m = open(&t.path);
    seeded(&m);
    let users = m.users().unwrap();
    let names: Vec<&str> = users.iter().map(|u| u.user.as_str()).collect();
    assert_eq!(names, ["bob", "maya"]);
    let maya = &users[1];
    assert_eq!(
        (maya.holds.rounds, maya.holds.notes, maya.holds.facts, maya.holds.superseded),
        (7, 1, 1, 1),
        "{maya:?}"
    );
    assert_eq!(maya.latest.as_deref(), Some("2024-06-03T08:00:00"));
    assert_eq!(maya.agents.len(), 1);
    assert_eq!(
        (maya.agents[0].agent.as_str(), maya.agents[0].holds.notes, maya.agents[0].holds.rounds),
        ("tutor", 1, 0)
    );
    assert_eq!((users[0].holds.rounds, users[0].agents.len()), (1, 0));
    // A forgotten user is gone from the list.
    m.forget_user("bob").unwrap();
    let names: Vec<String> = m.users().unwrap().into_iter().map(|u| u.user).collect();
    assert_eq!(names, ["maya"]);
}

#[test]
fn a_timeline_pages_through_rounds_oldest_first_with_every_fact_and_its_supersession() {
    let t = temp_store();
    let m = open(&t.path);
    seeded(&m);
    let mut pages = Vec::new();
    let mut cursor = None;
    loop {
        let page = m.timeline(&Paging { limit: 3, cursor }, "maya").unwrap();
        assert_eq!(page.total, 7);
        assert_eq!(
            page.offset,
            pages.iter().map(|p: &mnemon::browse::TimelinePage| p.rounds.len()).sum::<usize>()
        );
        cursor = page.next.clone();
        pages.push(page);
        if cursor.is_none() {
            break;
        }
    }
    assert_eq!(pages.iter().map(|p| p.rounds.len()).collect::<Vec<_>>(), [3, 3, 1]);
    let rounds: Vec<&mnemon::browse::TimelineRound> = pages.iter().flat_map(|p| &p.rounds).collect();
    let all = m.rounds("maya").unwrap();
    assert_eq!(rounds.iter().map(|r| &r.round).collect::<Vec<_>>(), all.iter().collect::<Vec<_>>());

    let porto = &rounds[0].facts;
    assert_eq!(porto.len(), 1);
    let lisbon = &rounds[6].facts[0];
    assert_eq!(porto[0].superseded_by.as_deref(), Some(lisbon.fact.key.as_str()));
    assert_eq!(porto[0].fact.salience, 0.0);
    let why = porto[0].supersession.as_ref().expect("the decision that superseded it");
    assert_eq!((why.old.as_deref(), why.new.as_deref()), (Some("Porto"), Some("Lisbon")));
    assert!(!why.rule.is_empty() && why.rule != "unrecorded", "{why:?}");
    let logged =
        m.decisions("maya").unwrap().into_iter().find(|d| d.kind == DecisionKind::FactSuperseded).unwrap();
    assert_eq!(why.at, logged.at);
    assert!(lisbon.superseded_by.is_none() && lisbon.supersession.is_none());
    assert_eq!(lisbon.fact.supersedes, [porto[0].fact.key.clone()]);
    // The relative mention, resolved against the round's date.
    assert_eq!(lisbon.fact.mention.as_deref(), Some("last week"));
    assert!(lisbon.fact.valid_time.as_deref().is_some_and(|v| v.starts_with("2024-05")), "{:?}", lisbon.fact);
    // The JSON shape a page reads: a round's fields, then its facts with theirs.
    let json = serde_json::to_value(&pages[0]).unwrap();
    assert_eq!(json["rounds"][0]["session"], "a");
    assert_eq!(json["rounds"][0]["facts"][0]["supersession"]["new"], "Lisbon");
    assert_eq!(json["rounds"][0]["facts"][0]["superseded_by"], lisbon.fact.key.as_str());
}

#[test]
fn a_timeline_sees_what_the_scope_sees_and_refuses_bad_paging() {
    let t = temp_store();
    let m = open(&t.path);
    seeded(&m);
    m.add(
        &[Message::user("Secret to the tutor.", "2024-07-01T10:00:00")],
        Scope::user("maya").agent("tutor"),
    )
    .unwrap();
    let total = |s: Scope<'_>| m.timeline(&Paging::default(), s).unwrap().total;
    assert_eq!(total(Scope::user("maya")), 8);
    assert_eq!(total(Scope::user("maya").agent("tutor")), 8);
    assert_eq!(total(Scope::user("maya").agent("coach")), 7);
    assert_eq!(total(Scope::user("nobody")), 0);
    for (paging, field) in [
        (Paging { limit: 0, cursor: None }, "limit"),
        (Paging { limit: mnemon::browse::MAX_PAGE + 1, cursor: None }, "limit"),
        (Paging { limit: 5, cursor: Some("n-1".into()) }, "cursor"),
    ] {
        match m.timeline(&paging, "maya") {
            Err(Error::InvalidInput { field: f, .. }) => assert_eq!(f, field),
            other => panic!("{paging:?}: {other:?}"),
        }
    }
}

#[test]
fn the_decision_log_pages_in_logical_order_and_filters_by_kind() {
    let t = temp_store();
    let m = open(&t.path);
    seeded(&m);
    let all = m.decisions("maya").unwrap();
    let mut paged = Vec::new();
    let mut cursor = None;
    loop {
        let page = m.decision_page(&[], &Paging { limit: 4, cursor }, "maya").unwrap();
        assert_eq!(page.kinds.values().sum::<usize>(), all.len());
        paged.extend(page.decisions);
        cursor = page.next;
        if cursor.is_none() {
            break;
        }
    }
    assert_eq!(paged, all);
    let kinds = [DecisionKind::FactSuperseded, DecisionKind::NoteStored];
    let page = m.decision_page(&kinds, &Paging::default(), "maya").unwrap();
    let expected: Vec<_> = all.iter().filter(|d| kinds.contains(&d.kind)).cloned().collect();
    assert_eq!(page.decisions, expected);
    assert_eq!(page.decisions.len(), 2);
    assert_eq!(page.kinds[&DecisionKind::RoundStored], 7);
    assert!(matches!(
        m.decision_page(&[], &Paging { limit: 5, cursor: Some("x".into()) }, "maya"),
        Err(Error::InvalidInput { field, .. }) if field == "cursor"
    ));
}

#[test]
fn activity_counts_each_month_from_the_first_to_the_last() {
    let t = temp_store();
    let m = open(&t.path);
    seeded(&m);
    let months = m.activity("maya").unwrap().months;
    let got: Vec<(&str, usize, usize, usize, usize)> =
        months.iter().map(|x| (x.month.as_str(), x.rounds, x.notes, x.facts, x.supersessions)).collect();
    assert_eq!(
        got,
        [
            ("2024-01", 1, 0, 1, 0),
            ("2024-02", 0, 0, 0, 0),
            ("2024-03", 5, 0, 0, 0),
            ("2024-04", 0, 0, 0, 0),
            ("2024-05", 0, 0, 0, 0),
            ("2024-06", 1, 1, 1, 1),
        ]
    );
    assert!(m.activity("nobody").unwrap().months.is_empty());
    // The same bytes from a second handle (and process-independent: no clock, no hash order).
    let again = open(&t.path);
    assert_eq!(
        serde_json::to_string(&again.activity("maya").unwrap()).unwrap(),
        serde_json::to_string(&m.activity("maya").unwrap()).unwrap()
    );
}
