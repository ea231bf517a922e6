//! Direct memories (notes): every operation, filter and visibility rule, determinism, deletion
//! without a trace, bad input that writes nothing, condensing, copy and move, migration.

use crate::common::{self, ts};

use std::sync::Arc;

use common::{conversation, embedders, hashing, open, poison, state, temp_store};
use mnemon::config::{Condense, Config};
use mnemon::context::{Ranking, Recency, Relevance};
use mnemon::decisions::DecisionKind;
use mnemon::embed::{CachedEmbedder, Embedder, HashingEmbedder};
use mnemon::export::ExportFormat;
use mnemon::extract::ScriptedExtractor;
use mnemon::notes::{Filter, ListNotes, NewNote, NoteKind, NoteUpdate, Search};
use mnemon::records::Record;
use mnemon::stores::Stores;
use mnemon::{Error, Memory, Message, Query, Scope};

const T1: &str = "2026-03-01T10:00:00";
const T2: &str = "2026-03-02T10:00:00";
const T3: &str = "2026-03-03T10:00:00";

fn keys(report: &mnemon::notes::RememberReport) -> Vec<String> {
    report.notes.iter().map(|n| n.key.clone()).collect()
}

/// A small, varied set of notes for alice (shared) and two of her agents.
fn seed(m: &Memory) -> Vec<String> {
    let mut out = keys(
        &m.remember(
            &[
                NewNote::new("The user is vegetarian and avoids fish.", T1)
                    .title("Diet")
                    .tags(["food", "Health"]),
                NewNote::new("The user's sister Ana lives in Oslo.", T2).tags(["family"]).importance(0.8),
                NewNote::new("Deploy with make release, then tag the commit.", T3)
                    .kind(NoteKind::Procedural)
                    .tags(["work", "deploy"])
                    .metadata(serde_json::json!({"source": "runbook", "v": 2})),
            ],
            "alice",
        )
        .unwrap(),
    );
    out.extend(keys(
        &m.remember(
            &[NewNote::new("Ran 10 km along the river; knee felt fine.", T2)
                .kind(NoteKind::Episodic)
                .tags(["run"])],
            Scope::user("alice").agent("coach"),
        )
        .unwrap(),
    ));
    out.extend(keys(
        &m.remember(
            &[NewNote::new("The user's build uses cargo nextest.", T3).tags(["work"])],
            Scope::user("alice").agent("coder"),
        )
        .unwrap(),
    ));
    m.add(&[Message::user("My bike was stolen downtown.", T1)], Scope::user("alice").agent("coach")).unwrap();
    m.add(&conversation(), "alice").unwrap();
    m.remember(&[NewNote::new("Bob keeps bees in his garden.", T1)], "bob").unwrap();
    out
}

#[test]
fn keys_are_deterministic_and_two_fresh_stores_export_the_same_bytes() {
    for (name, e) in embedders() {
        eprintln!("embedder {name}");
        let (a, b) = (temp_store(), temp_store());
        let (ma, mb) = (open(&e, &a.path), open(&e, &b.path));
        let (ka, kb) = (seed(&ma), seed(&mb));
        assert_eq!(ka, kb);
        assert!(ka.iter().all(|k| k.starts_with("n-") && k.len() == 18), "{ka:?}");
        for m in [&ma, &mb] {
            let change =
                NoteUpdate { importance: Some(0.2), tags: Some(vec!["x".into()]), ..NoteUpdate::default() };
            m.update(&ka[1], &change, &ts(T3), "alice").unwrap();
            m.delete(&ka[0], "alice").unwrap();
        }
        for scope in [Scope::user("alice"), Scope::user("alice").agent("coach"), Scope::user("bob")] {
            for format in [ExportFormat::Markdown, ExportFormat::Text, ExportFormat::Jsonl] {
                assert_eq!(
                    ma.export(format, scope).unwrap(),
                    mb.export(format, scope).unwrap(),
                    "{scope:?} {format:?}"
                );
            }
        }
        let q = Query::new("where does the sister live?").angles(&["running"]);
        assert_eq!(ma.get_context(q.clone(), "alice").unwrap(), mb.get_context(q.clone(), "alice").unwrap());
        let s = Search::new("work deploy");
        assert_eq!(ma.search(&s, "alice").unwrap(), mb.search(&s, "alice").unwrap());
    }
}

#[test]
fn remember_skips_repeats_that_are_at_least_as_widely_visible() {
    for (name, e) in embedders() {
        eprintln!("embedder {name}");
        let t = temp_store();
        let m = open(&e, &t.path);
        let shared =
            m.remember(&[NewNote::new("Likes jazz.", T1), NewNote::new("likes JAZZ!", T2)], "u").unwrap();
        assert!(shared.notes[0].stored && !shared.notes[1].stored);
        assert_eq!(shared.notes[1].key, shared.notes[0].key);
        // An agent's repeat of a shared note is covered by it ...
        let agent = m.remember(&[NewNote::new("Likes jazz", T3)], Scope::user("u").agent("a")).unwrap();
        assert_eq!(
            (agent.notes[0].key.as_str(), agent.notes[0].stored),
            (shared.notes[0].key.as_str(), false)
        );
        // ... but a shared note is not covered by an agent's private one: other agents could not see it.
        let private = m.remember(&[NewNote::new("Owns a cat.", T1)], Scope::user("u").agent("a")).unwrap();
        let public = m.remember(&[NewNote::new("Owns a cat.", T1)], "u").unwrap();
        assert!(public.notes[0].stored);
        assert_ne!(public.notes[0].key, private.notes[0].key);
        let log = m.decisions("u").unwrap();
        assert_eq!(log.iter().filter(|d| d.kind == DecisionKind::NoteDuplicate).count(), 2);
        assert_eq!(log.iter().filter(|d| d.kind == DecisionKind::NoteStored).count(), 3);
    }
}

#[test]
fn get_returns_notes_rounds_and_facts_by_key() {
    for (name, e) in embedders() {
        eprintln!("embedder {name}");
        let t = temp_store();
        let m = open(&e, &t.path);
        let k = seed(&m);
        match m.get(&k[2], "alice").unwrap() {
            Record::Note(n) => {
                assert_eq!(n.kind, NoteKind::Procedural);
                assert_eq!(n.metadata, serde_json::json!({"v": 2, "source": "runbook"}));
                assert_eq!(n.tags, ["work", "deploy"]);
                assert_eq!((n.ts.as_str(), n.updated.as_str()), (T3, T3));
                assert!(n.tokens >= 8);
            }
            other => panic!("{other:?}"),
        }
        let round = m.rounds("alice").unwrap()[0].key.clone();
        assert!(matches!(m.get(&round, "alice").unwrap(), Record::Round(r) if r.key == round));
        assert!(
            matches!(m.get("n-0000000000000000", "alice"), Err(Error::NotFound { key }) if key == "n-0000000000000000")
        );
        assert!(matches!(m.get("nonsense", "alice"), Err(Error::NotFound { .. })));
        assert!(matches!(m.get(&k[0], "nobody"), Err(Error::NotFound { .. })));
    }
}

#[test]
fn update_changes_only_the_given_fields_and_new_content_is_embedded_again() {
    for (name, e) in embedders() {
        eprintln!("embedder {name}");
        let t = temp_store();
        let m = open(&e, &t.path);
        let k = seed(&m);
        let before = match m.get(&k[1], "alice").unwrap() {
            Record::Note(n) => n,
            other => panic!("{other:?}"),
        };
        let change = NoteUpdate {
            content: Some("The user's sister Ana moved to Bergen last spring.".into()),
            ..NoteUpdate::default()
        };
        let after = m.update(&k[1], &change, &ts("2026-04-01T08:00:00"), "alice").unwrap();
        assert_eq!(after.key, before.key);
        assert_eq!(
            (after.tags.clone(), after.importance, after.kind, after.ts.clone()),
            (before.tags, before.importance, before.kind, before.ts)
        );
        assert_eq!(after.updated, "2026-04-01T08:00:00");
        assert!(after.tokens > before.tokens);
        // The new words and vector are what search sees; the old ones are gone.
        let hits = m.search(&Search::new("Bergen"), "alice").unwrap().hits;
        assert_eq!(hits[0].note.key, k[1]);
        let oslo = m
            .search(
                &Search::new("Oslo").filter(Filter { tags_any: vec!["family".into()], ..Filter::default() }),
                "alice",
            )
            .unwrap();
        assert!(oslo.hits.iter().all(|h| !h.note.content.contains("Oslo")));
        // Clearing the title, replacing tags and metadata.
        let change = NoteUpdate {
            title: Some(None),
            tags: Some(vec![]),
            metadata: Some(serde_json::json!({"checked": true})),
            ..NoteUpdate::default()
        };
        let n = m.update(&k[0], &change, &ts(T3), "alice").unwrap();
        assert_eq!((n.title, n.tags.len(), n.metadata), (None, 0, serde_json::json!({"checked": true})));
        let log = m.decisions("alice").unwrap();
        let updated: Vec<_> = log.iter().filter(|d| d.kind == DecisionKind::NoteUpdated).collect();
        assert_eq!(updated.len(), 2);
        assert_eq!(updated.iter().find(|d| d.record == k[1]).unwrap().detail, r#"{"fields":["content"]}"#);
        // The logical now moved to the update's time.
        assert!(m.export(ExportFormat::Text, "alice").unwrap().contains("logical now: 2026-04-01T08:00:00"));
    }
}

#[test]
fn list_filters_and_pages_with_a_stable_cursor() {
    for (name, e) in embedders() {
        eprintln!("embedder {name}");
        let t = temp_store();
        let m = open(&e, &t.path);
        let notes: Vec<NewNote> = (1..=9)
            .map(|d| {
                let kind = if d % 3 == 0 { NoteKind::Episodic } else { NoteKind::Semantic };
                let tags: Vec<&str> = if d % 2 == 0 { vec!["even", "Num"] } else { vec!["odd", "num"] };
                NewNote::new(format!("note {d} {}", "word ".repeat(d)), format!("2026-01-0{d}T12:00:00"))
                    .kind(kind)
                    .tags(tags)
            })
            .collect();
        m.remember(&notes, "u").unwrap();
        let contents = |f: Filter| -> Vec<String> {
            m.list(&ListNotes { filter: f, ..ListNotes::default() }, "u")
                .unwrap()
                .notes
                .iter()
                .map(|n| n.content[..6].to_owned())
                .collect()
        };
        assert_eq!(contents(Filter::default()).len(), 9);
        assert_eq!(contents(Filter::default())[0], "note 9");
        assert_eq!(
            contents(Filter { tags_any: vec!["EVEN".into()], ..Filter::default() }),
            ["note 8", "note 6", "note 4", "note 2"]
        );
        assert_eq!(
            contents(Filter { tags_all: vec!["num".into(), "odd".into()], ..Filter::default() }).len(),
            5
        );
        assert!(
            contents(Filter { tags_all: vec!["num".into(), "missing".into()], ..Filter::default() })
                .is_empty()
        );
        assert_eq!(
            contents(Filter { kinds: vec![NoteKind::Episodic], ..Filter::default() }),
            ["note 9", "note 6", "note 3"]
        );
        let window = Filter {
            after: Some("2026-01-03T12:00:00".into()),
            before: Some("2026-01-06T12:00:00".into()),
            ..Filter::default()
        };
        assert_eq!(contents(window), ["note 5", "note 4"], "after and before are strict");
        let sizes = Filter { min_tokens: Some(5), max_tokens: Some(7), ..Filter::default() };
        let kept = m.list(&ListNotes { filter: sizes, ..ListNotes::default() }, "u").unwrap().notes;
        assert!(!kept.is_empty() && kept.iter().all(|n| (5..=7).contains(&n.tokens)), "{kept:?}");

        // Pages of 4; a note stored mid-way with an older ts than the cursor still shows up, once.
        let first = m.list(&ListNotes { limit: 4, ..ListNotes::default() }, "u").unwrap();
        assert_eq!(first.notes.len(), 4);
        m.remember(&[NewNote::new("late arrival", "2026-01-01T06:00:00")], "u").unwrap();
        let mut seen: Vec<String> = first.notes.iter().map(|n| n.key.clone()).collect();
        let mut cursor = first.next;
        while let Some(c) = cursor {
            let page = m.list(&ListNotes { limit: 4, cursor: Some(c), ..ListNotes::default() }, "u").unwrap();
            seen.extend(page.notes.iter().map(|n| n.key.clone()));
            cursor = page.next;
        }
        assert_eq!(seen.len(), 10);
        seen.sort();
        seen.dedup();
        assert_eq!(seen.len(), 10, "no note twice");
        assert!(
            matches!(m.list(&ListNotes { cursor: Some("bogus".into()), ..ListNotes::default() }, "u"), Err(Error::InvalidInput { field, .. }) if field == "cursor")
        );
    }
}

#[test]
fn search_and_list_keep_the_same_notes_for_every_filter() {
    for (name, e) in embedders() {
        eprintln!("embedder {name}");
        let t = temp_store();
        let m = open(&e, &t.path);
        let tags = ["a", "b", "c", "d"];
        let notes: Vec<NewNote> = (0..60)
            .map(|i| {
                NewNote::new(
                    format!("note {i} about {}", ["rivers", "hills", "cities"][i % 3]),
                    format!("2026-02-{:02}T0{}:00:00", 1 + i % 28, i % 10),
                )
                .kind(NoteKind::ALL[i % 3])
                .tags(tags.iter().enumerate().filter(|(j, _)| (i >> j) & 1 == 1).map(|(_, t)| *t))
                .metadata(if i % 7 == 6 {
                    serde_json::json!({})
                } else {
                    let place = ["Rivers", "hills", "cities"][i % 3];
                    serde_json::json!({"i": i, "place": place, "odd": i % 2 == 1, "l": [i % 4]})
                })
            })
            .collect();
        m.remember(&notes, "u").unwrap();
        let meta = |v: serde_json::Value| Some(mnemon::notes::MetadataFilter::parse(&v, "metadata").unwrap());
        let filters = [
            Filter::default(),
            Filter { tags_any: vec!["a".into(), "D".into()], ..Filter::default() },
            Filter { tags_all: vec!["b".into(), "c".into()], ..Filter::default() },
            Filter { tags_any: vec!["zzz".into()], ..Filter::default() },
            Filter { kinds: vec![NoteKind::Procedural, NoteKind::Episodic], ..Filter::default() },
            Filter {
                after: Some("2026-02-10".into()),
                before: Some("2026-02-20".into()),
                ..Filter::default()
            },
            Filter { min_tokens: Some(6), ..Filter::default() },
            Filter {
                tags_any: vec!["c".into()],
                kinds: vec![NoteKind::Semantic],
                max_tokens: Some(6),
                ..Filter::default()
            },
            Filter { metadata: meta(serde_json::json!({"odd": true})), ..Filter::default() },
            Filter { metadata: meta(serde_json::json!({"i": {"gte": 10, "lt": 20}})), ..Filter::default() },
            Filter {
                metadata: meta(serde_json::json!({"place": {"icontains": "RIVER"}})),
                ..Filter::default()
            },
            Filter {
                metadata: meta(serde_json::json!({"NOT": [{"l": {"contains": 0}}]})),
                ..Filter::default()
            },
            Filter {
                tags_any: vec!["a".into()],
                metadata: meta(
                    serde_json::json!({"OR": [{"i": {"in": [1, 3, 5]}}, {"place": {"nin": ["hills", "cities"]}}]}),
                ),
                ..Filter::default()
            },
        ];
        // A metadata filter keeps exactly the notes whose metadata passes, and pages the same
        // way as one long page.
        let odd =
            Filter { metadata: meta(serde_json::json!({"odd": true, "i": {"ne": 1}})), ..Filter::default() };
        let all = m.list(&ListNotes { filter: odd.clone(), limit: 1000, cursor: None }, "u").unwrap().notes;
        let expected = (0..60).filter(|i| i % 7 != 6 && i % 2 == 1 && *i != 1).count();
        assert_eq!(all.len(), expected);
        let (mut paged, mut cursor) = (Vec::new(), None);
        loop {
            let page = m.list(&ListNotes { filter: odd.clone(), limit: 4, cursor }, "u").unwrap();
            paged.extend(page.notes.into_iter().map(|n| n.key));
            match page.next {
                Some(c) => cursor = Some(c),
                None => break,
            }
        }
        assert_eq!(paged, all.iter().map(|n| n.key.clone()).collect::<Vec<_>>());
        for f in filters {
            let mut listed: Vec<String> = m
                .list(&ListNotes { filter: f.clone(), limit: 1000, cursor: None }, "u")
                .unwrap()
                .notes
                .into_iter()
                .map(|n| n.key)
                .collect();
            let mut found: Vec<String> = m
                .search(&Search::new("rivers").filter(f.clone()).limit(1000), "u")
                .unwrap()
                .hits
                .into_iter()
                .map(|h| h.note.key)
                .collect();
            listed.sort();
            found.sort();
            assert_eq!(listed, found, "{f:?}");
        }
    }
}

#[test]
fn a_listing_gives_the_same_pages_whether_it_starts_from_the_tags_or_from_the_newest_note() {
    // "common" is on more notes than a tag-driven scan takes, "rare" on few: both plans run.
    let t = temp_store();
    let m = hashing(&t.path);
    let notes: Vec<NewNote> = (0..6_000)
        .map(|i| {
            let mut tags = vec!["common".to_owned()];
            if i % 97 == 0 {
                tags.push("rare".into());
            }
            tags.push(format!("k{}", i % 5));
            NewNote::new(
                format!("note {i}"),
                format!("2026-01-{:02}T{:02}:{:02}:00", 1 + i % 28, i / 60 % 24, i % 60),
            )
            .tags(tags)
        })
        .collect();
    for chunk in notes.chunks(1000) {
        m.remember(chunk, "u").unwrap();
    }
    let filters = [
        Filter { tags_any: vec!["common".into()], ..Filter::default() },
        Filter { tags_any: vec!["rare".into()], ..Filter::default() },
        Filter { tags_all: vec!["common".into(), "k3".into()], ..Filter::default() },
        Filter { tags_all: vec!["rare".into(), "common".into()], ..Filter::default() },
        Filter {
            tags_any: vec!["rare".into(), "k1".into()],
            after: Some("2026-01-10".into()),
            ..Filter::default()
        },
    ];
    for f in filters {
        let mut paged: Vec<String> = Vec::new();
        let mut cursor = None;
        loop {
            let page = m.list(&ListNotes { filter: f.clone(), limit: 700, cursor }, "u").unwrap();
            paged.extend(page.notes.into_iter().map(|n| n.key));
            cursor = page.next;
            if cursor.is_none() {
                break;
            }
        }
        let all = m.list(&ListNotes { filter: Filter::default(), limit: 1000, cursor: None }, "u").unwrap();
        assert_eq!(all.notes.len(), 1000);
        let mut expected: Vec<String> = m
            .search(&Search::new("note").filter(f.clone()).limit(1000), "u")
            .unwrap()
            .hits
            .into_iter()
            .map(|h| h.note.key)
            .collect();
        let mut got = paged.clone();
        got.sort();
        got.dedup();
        assert_eq!(got.len(), paged.len(), "no note twice: {f:?}");
        if expected.len() < 1000 {
            expected.sort();
            assert_eq!(got, expected, "{f:?}");
        } else {
            assert!(got.len() >= 1000, "{f:?}");
        }
    }
}

#[test]
fn search_scores_lie_in_0_1_with_labels_min_score_and_ranking_options() {
    let t = temp_store();
    let m = hashing(&t.path);
    m.remember(
        &[
            NewNote::new("The user's favourite tea is oolong.", "2025-01-01T00:00:00").importance(0.1),
            NewNote::new("The user drinks green tea every morning.", "2026-03-01T00:00:00").importance(0.9),
            NewNote::new("The garage door code changed.", "2026-03-01T00:00:00"),
        ],
        "u",
    )
    .unwrap();
    // A score is the cosine through the embedder's calibration, whatever the rank.
    let calibration = HashingEmbedder::default().calibration();
    let found = m.search(&Search::new("tea oolong favourite"), "u").unwrap();
    assert_eq!(found.hits.len(), 3);
    assert!(found.hits.iter().all(|h| h.score == calibration.score(h.cosine)
        && (0.0..=1.0).contains(&h.score)
        && h.relevance == Relevance::of(h.score)));
    assert!(
        found.hits[0].note.content.contains("oolong")
            && matches!(found.hits[0].relevance, Relevance::High | Relevance::Medium)
    );
    assert_eq!(found.hits[2].relevance, Relevance::None, "{:?}", found.hits[2]);
    let strict = m.search(&Search::new("tea oolong favourite").min_score(0.5), "u").unwrap();
    assert!(!strict.hits.is_empty() && strict.hits.iter().all(|h| h.score >= 0.5));
    assert!(strict.hits.len() < found.hits.len());
    // A query unrelated to every note still ranks them, each labelled `none`; the `low` floor
    // drops them all.
    let unrelated = m.search(&Search::new("xyzzy"), "u").unwrap();
    assert!(!unrelated.hits.is_empty() && unrelated.hits.iter().all(|h| h.relevance == Relevance::None));
    assert!(m.search(&Search::new("xyzzy").min_score(0.5), "u").unwrap().hits.is_empty());
    // Recency and importance reshape the dense score (shown here without fusion, where it is
    // the ranking): off, the oolong note leads; either option puts the recent, important note first.
    let dense = temp_store();
    let d = Memory::builder(&dense.path)
        .embedder(HashingEmbedder::default())
        .config(Config { rrf_k: None, ..Config::default() })
        .open()
        .unwrap();
    d.remember(
        &[
            NewNote::new("The user's favourite tea is oolong.", "2025-01-01T00:00:00").importance(0.1),
            NewNote::new("The user drinks green tea every single morning.", "2026-03-01T00:00:00")
                .importance(0.9),
        ],
        "u",
    )
    .unwrap();
    let tea = |r: Ranking| {
        d.search(&Search::new("favourite tea").ranking(r).date(ts("2026-03-02")), "u").unwrap().hits
    };
    assert!(tea(Ranking::default())[0].note.content.contains("oolong"));
    let recent =
        tea(Ranking { recency: Some(Recency { alpha: 0.3, half_life_days: 7.0 }), ..Ranking::default() });
    let important = tea(Ranking { importance: Some(1.0), ..Ranking::default() });
    assert!(recent[0].note.content.contains("green") && important[0].note.content.contains("green"));
    assert!(recent.iter().chain(&important).all(|h| (0.0..=1.0).contains(&h.score)));
    assert!(
        matches!(m.search(&Search::new("tea").min_score(2.0), "u"), Err(Error::InvalidInput { field, .. }) if field == "min_score")
    );
    let bad = Ranking { recency: Some(Recency { alpha: 0.5, half_life_days: 0.0 }), ..Ranking::default() };
    assert!(
        matches!(m.search(&Search::new("tea").ranking(bad), "u"), Err(Error::InvalidInput { field, .. }) if field == "ranking.recency.half_life_days")
    );
}

#[test]
fn recall_returns_the_same_rounds_with_or_without_notes() {
    let (a, b) = (temp_store(), temp_store());
    let (plain, with_notes) = (hashing(&a.path), hashing(&b.path));
    for m in [&plain, &with_notes] {
        m.add(&conversation(), "u").unwrap();
    }
    with_notes
        .remember(
            &[
                NewNote::new("The user's dog Toby is a beagle; Toby loves the beach.", T1),
                NewNote::new("Works nights.", T2),
            ],
            "u",
        )
        .unwrap();
    // Notes raise the logical now; with the question's date given, everything is the same.
    for q in ["What is my dog's name?", "Where do I work?", "cello lessons", "what did I start last week?"] {
        let q = Query::new(q).date(ts("2023-07-20"));
        assert_eq!(
            plain.recall(q.clone(), "u").unwrap(),
            with_notes.recall(q.clone(), "u").unwrap(),
            "{q:?}"
        );
    }
}

#[test]
fn a_context_merges_query_angles_rounds_and_notes_into_one_budget() {
    for (name, e) in embedders() {
        eprintln!("embedder {name}");
        let t = temp_store();
        let m = open(&e, &t.path);
        m.add(&conversation(), "u").unwrap();
        m.remember(&[NewNote::new("The user is allergic to penicillin.", T1).tags(["health"])], "u").unwrap();
        let one = m.get_context(Query::new("What is my dog's name?"), "u").unwrap();
        let angles = ["allergies and medicine", "What is my dog's name?"];
        let both = m.get_context(Query::new("What is my dog's name?").angles(&angles), "u").unwrap();
        assert!(both.text.contains("penicillin") && both.text.contains("Toby"));
        assert!(both.text.contains("relevance: "));
        let mut rounds = both.rounds.clone();
        rounds.sort();
        rounds.dedup();
        assert_eq!(rounds.len(), both.rounds.len(), "each round once");
        assert_eq!(both.notes.len(), 1);
        assert_eq!(both.text.matches("[Memory ").count(), 1);
        // A budget cuts from the bottom and is reported; the block stays within it.
        let tight =
            m.get_context(Query::new("What is my dog's name?").angles(&angles).budget(200), "u").unwrap();
        assert!(tight.truncated && tight.tokens <= 200, "{} tokens", tight.tokens);
        assert_eq!(
            tight.rounds.len() + tight.notes.len() + tight.omitted.len(),
            both.rounds.len() + both.notes.len()
        );
        assert!(one.notes.len() <= 1);
        let too_many: Vec<&str> = vec!["x"; 17];
        assert!(
            matches!(m.get_context(Query::new("q").angles(&too_many), "u"), Err(Error::InvalidInput { field, .. }) if field == "angles")
        );
        assert!(
            matches!(m.get_context(Query::new("q").angles(&[" "]), "u"), Err(Error::InvalidInput { field, .. }) if field == "angles[0]")
        );
    }
}

#[test]
fn an_agent_sees_its_own_records_and_the_shared_ones_on_every_read_path() {
    for (name, e) in embedders() {
        eprintln!("embedder {name}");
        let t = temp_store();
        let m = open(&e, &t.path);
        let k = seed(&m);
        let coach = Scope::user("alice").agent("coach");
        let coder = Scope::user("alice").agent("coder");
        let (coach_note, coder_note) = (&k[3], &k[4]);
        // get
        assert!(m.get(coach_note, coach).is_ok() && m.get(coach_note, "alice").is_ok());
        assert!(matches!(m.get(coach_note, coder), Err(Error::NotFound { .. })));
        assert!(m.get(&k[0], coder).is_ok(), "shared notes are seen by every agent");
        // list and count
        let listed = |s: Scope<'_>| -> Vec<String> {
            m.list(&ListNotes::default(), s).unwrap().notes.into_iter().map(|n| n.key).collect()
        };
        assert!(listed(coach).contains(coach_note) && !listed(coach).contains(coder_note));
        assert!(
            listed(Scope::user("alice")).contains(coach_note)
                && listed(Scope::user("alice")).contains(coder_note)
        );
        assert_eq!(m.count(coach).unwrap().notes, 4);
        assert_eq!(m.count(coder).unwrap().notes, 4);
        assert_eq!(m.count("alice").unwrap().notes, 5);
        assert_eq!(m.count(coach).unwrap().rounds, m.count(coder).unwrap().rounds + 1);
        // search
        let found = |s: Scope<'_>, q: &str| -> Vec<String> {
            m.search(&Search::new(q).limit(100), s)
                .unwrap()
                .hits
                .into_iter()
                .map(|h| h.note.content)
                .collect()
        };
        assert!(found(coder, "ran km river knee").iter().all(|c| !c.contains("Ran 10 km")));
        assert!(found(coach, "ran km river knee")[0].contains("Ran 10 km"));
        assert!(found(Scope::user("bob"), "vegetarian deploy sister").iter().all(|c| c.contains("bees")));
        // recall and context (an agent's round)
        let bike = |s: Scope<'_>| {
            m.recall(Query::new("bike stolen").top_k(100), s)
                .unwrap()
                .rounds
                .iter()
                .any(|r| r.turns[0].content.contains("bike"))
        };
        assert!(bike(coach) && bike(Scope::user("alice")) && !bike(coder));
        let context = m.get_context(Query::new("bike stolen running knee").top_k(100), coder).unwrap();
        assert!(
            !context.text.contains("bike")
                && !context.text.contains("Ran 10 km")
                && !context.text.contains("bees")
        );
        assert!(
            m.get_context(Query::new("bike stolen running knee").top_k(100), coach)
                .unwrap()
                .text
                .contains("bike")
        );
        // rounds, facts, decisions and every export
        assert!(m.rounds(coder).unwrap().iter().all(|r| !r.turns[0].content.contains("bike")));
        assert!(m.decisions(coder).unwrap().iter().all(|d| d.record != *coach_note));
        assert!(m.decisions(coach).unwrap().iter().any(|d| d.record == *coach_note));
        for format in [ExportFormat::Markdown, ExportFormat::Text, ExportFormat::Jsonl] {
            let text = m.export(format, coder).unwrap();
            assert!(
                !text.contains("bike") && !text.contains("Ran 10 km") && !text.contains("bees"),
                "{format:?}"
            );
            assert!(text.contains("nextest") && text.contains("vegetarian"), "{format:?}");
        }
        // Writes through an agent act only on what it sees.
        assert!(matches!(m.delete(coach_note, coder), Err(Error::NotFound { .. })));
        let change = NoteUpdate { importance: Some(1.0), ..NoteUpdate::default() };
        assert!(matches!(m.update(coach_note, &change, &ts(T3), coder), Err(Error::NotFound { .. })));
    }
}

/// Whether `needle` occurs in the store's file (after a checkpoint and VACUUM).
fn in_file(path: &std::path::Path, needle: &str) -> bool {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE); VACUUM; PRAGMA wal_checkpoint(TRUNCATE);").unwrap();
    drop(conn);
    let bytes = std::fs::read(path).unwrap();
    let wal = std::fs::read(path.with_extension("db-wal")).unwrap_or_default();
    let found = |b: &[u8]| b.windows(needle.len()).any(|w| w.eq_ignore_ascii_case(needle.as_bytes()));
    found(&bytes) || found(&wal)
}

#[test]
fn delete_leaves_no_trace_in_any_table_the_word_index_or_a_cache() {
    for (name, e) in embedders() {
        eprintln!("embedder {name}");
        let t = temp_store();
        let cache_path = t.dir.path().join("vectors.db");
        let embedder: Arc<dyn Embedder> = Arc::new(CachedEmbedder::open(&cache_path, e.clone()).unwrap());
        let script = r#"{"My locker code is zqxwvmarker.": [{"content": "The user's locker code is zqxwvfact.",
            "raw": "user: My locker code is zqxwvmarker", "when": null, "subject": "user", "predicate": "locker code is",
            "object": "zqxwvfact", "salience": 1.0}]}"#;
        let x = Arc::new(ScriptedExtractor::from_json("t", script).unwrap());
        let config = Config { background_extraction: false, ..Config::default() };
        let key;
        let round;
        {
            let m = Memory::builder(&t.path)
                .embedder(embedder.clone())
                .extractor(x.clone())
                .config(config.clone())
                .open()
                .unwrap();
            key = m
                .remember(
                    &[NewNote::new("The vault phrase is zqxwvnote.", T1)
                        .title("zqxwvtitle")
                        .tags(["zqxwvtag"])],
                    "u",
                )
                .unwrap()
                .notes[0]
                .key
                .clone();
            m.remember(&[NewNote::new("An unrelated note stays.", T1)], "u").unwrap();
            round =
                m.add(&[Message::user("My locker code is zqxwvmarker.", T2)], "u").unwrap().stored[0].clone();
            assert_eq!(m.active_facts("u").unwrap().len(), 1);
            // Search once so that the vectors are in memory too.
            assert!(!m.search(&Search::new("vault phrase"), "u").unwrap().hits.is_empty());
        }
        assert!(
            in_file(&t.path, "zqxwvnote") && in_file(&t.path, "zqxwvmarker") && in_file(&t.path, "zqxwvfact")
        );
        let cached = |text: &str| {
            let conn = rusqlite::Connection::open(&cache_path).unwrap();
            let n: i64 = conn.query_row("SELECT count(*) FROM vectors", [], |r| r.get(0)).unwrap();
            let probe = CachedEmbedder::open(&cache_path, e.clone()).unwrap();
            probe.embed_documents(&[text]).unwrap();
            let after: i64 = conn.query_row("SELECT count(*) FROM vectors", [], |r| r.get(0)).unwrap();
            after == n // the probe hit: the text was cached
        };
        assert!(cached("zqxwvtitle\nThe vault phrase is zqxwvnote."));
        assert!(cached("user: My locker code is zqxwvmarker."));
        {
            let m = Memory::builder(&t.path)
                .embedder(embedder.clone())
                .extractor(x.clone())
                .config(config)
                .open()
                .unwrap();
            assert_eq!(m.delete(&key, "u").unwrap().record, "note");
            let deleted = m.delete(&round, "u").unwrap();
            assert_eq!((deleted.record, deleted.facts.len()), ("round", 1));
            assert!(
                m.search(&Search::new("vault phrase zqxwvnote"), "u")
                    .unwrap()
                    .hits
                    .iter()
                    .all(|h| !h.note.content.contains("zqxwv"))
            );
            let log = m.decisions("u").unwrap();
            assert!(log.iter().any(|d| d.kind == DecisionKind::NoteDeleted && d.record == key));
            assert!(log.iter().any(|d| d.kind == DecisionKind::RoundDeleted && d.record == round));
            assert_eq!(m.count("u").unwrap().notes, 1);
        }
        for marker in ["zqxwvnote", "zqxwvtitle", "zqxwvtag", "zqxwvmarker", "zqxwvfact"] {
            assert!(!in_file(&t.path, marker), "{marker} is still in the store file");
        }
        assert!(
            !cached("zqxwvtitle\nThe vault phrase is zqxwvnote."),
            "the embedding cache still holds the note"
        );
        assert!(!cached("user: My locker code is zqxwvmarker."), "the embedding cache still holds the round");
    }
}

#[test]
fn deleting_a_fact_drops_the_values_decisions_quote() {
    let t = temp_store();
    let script = r#"{"I live in Porto.": [{"content": "The user lives in Porto.", "raw": "user: I live in Porto",
        "when": null, "subject": "user", "predicate": "lives in", "object": "Porto", "salience": 1.0}],
      "I moved to Lisbon.": [{"content": "The user lives in Lisbon.", "raw": "user: I moved to Lisbon",
        "when": null, "subject": "user", "predicate": "lives in", "object": "Lisbon", "salience": 1.0}]}"#;
    let x = Arc::new(ScriptedExtractor::from_json("t", script).unwrap());
    let config = Config { background_extraction: false, ..Config::default() };
    let m = Memory::builder(&t.path)
        .embedder(HashingEmbedder::default())
        .extractor(x)
        .config(config)
        .open()
        .unwrap();
    m.add(&[Message::user("I live in Porto.", T1)], "u").unwrap();
    m.add(&[Message::user("I moved to Lisbon.", T2)], "u").unwrap();
    let superseded =
        m.decisions("u").unwrap().into_iter().find(|d| d.kind == DecisionKind::FactSuperseded).unwrap();
    assert!(superseded.detail.contains("Porto") && superseded.detail.contains("Lisbon"));
    let lisbon = m.active_facts("u").unwrap()[0].key.clone();
    assert!(matches!(m.get(&superseded.record, "u").unwrap(), Record::Fact(f) if f.salience == 0.0));
    assert_eq!(m.delete(&lisbon, "u").unwrap().record, "fact");
    let after =
        m.decisions("u").unwrap().into_iter().find(|d| d.kind == DecisionKind::FactSuperseded).unwrap();
    assert!(!after.detail.contains("Lisbon") && !after.detail.contains("Porto"), "{}", after.detail);
    assert!(after.detail.contains("rule"));
    assert!(m.active_facts("u").unwrap().is_empty(), "what the deleted fact superseded stays superseded");
}

#[test]
fn bad_input_is_a_typed_error_naming_the_field_and_writes_nothing() {
    for (name, e) in embedders() {
        eprintln!("embedder {name}");
        let t = temp_store();
        let key = {
            let m = open(&e, &t.path);
            m.add(&conversation(), "u").unwrap();
            m.remember(&[NewNote::new("Kept.", T1)], "u").unwrap().notes[0].key.clone()
        };
        let before = state(&t.path);
        {
            let m = open(&e, &t.path);
            let ok = NewNote::new("Fine.", T2);
            let field = |r: mnemon::Result<mnemon::notes::RememberReport>| match r {
                Err(Error::InvalidInput { field, .. }) | Err(Error::EmptyMemory { field }) => field,
                other => panic!("{other:?}"),
            };
            assert!(
                matches!(m.remember(&[ok.clone(), NewNote::new("  \n ", T1)], "u"), Err(Error::EmptyMemory { field }) if field == "memories[1].content")
            );
            let big = "x".repeat(mnemon::notes::MAX_NOTE_BYTES + 1);
            assert_eq!(field(m.remember(&[ok.clone(), NewNote::new(big, T1)], "u")), "memories[1].content");
            assert_eq!(
                field(m.remember(&[NewNote::new("a", T1).metadata(serde_json::json!([1, 2]))], "u")),
                "memories[0].metadata"
            );
            assert_eq!(
                field(m.remember(&[NewNote::new("a", T1).importance(1.5)], "u")),
                "memories[0].importance"
            );
            assert_eq!(
                field(m.remember(&[NewNote::new("a", T1).importance(f32::NAN)], "u")),
                "memories[0].importance"
            );
            assert_eq!(field(m.remember(&[NewNote::new("a", "yesterday")], "u")), "memories[0].ts");
            assert_eq!(
                field(m.remember(&[NewNote::new("a", T1).tags(["ok", " "])], "u")),
                "memories[0].tags[1]"
            );
            assert_eq!(field(m.remember(std::slice::from_ref(&ok), Scope::user("u").agent(""))), "agent");
            let json = |v: serde_json::Value| NewNote::from_json(&v, "memories[0]").unwrap_err();
            assert!(
                matches!(json(serde_json::json!({"content": "a", "ts": T1, "tags": ["x", 3]})), Error::InvalidInput { field, .. } if field == "memories[0].tags[1]")
            );
            assert!(
                matches!(json(serde_json::json!({"content": "a", "ts": T1, "kind": "dream"})), Error::InvalidInput { field, .. } if field == "memories[0].kind")
            );
            assert!(
                matches!(json(serde_json::json!({"content": "a", "ts": T1, "metadata": "x"})), Error::InvalidInput { field, .. } if field == "memories[0].metadata")
            );
            assert!(
                matches!(json(serde_json::json!({"content": "a", "ts": T1, "colour": "red"})), Error::InvalidInput { field, .. } if field == "memories[0].colour")
            );
            assert!(
                matches!(json(serde_json::json!({"ts": T1})), Error::InvalidInput { field, .. } if field == "memories[0].content")
            );
            let none = NoteUpdate::default();
            assert!(
                matches!(m.update(&key, &none, &ts(T2), "u"), Err(Error::InvalidInput { field, .. }) if field == "update")
            );
            let empty = NoteUpdate { content: Some(" ".into()), ..NoteUpdate::default() };
            assert!(
                matches!(m.update(&key, &empty, &ts(T2), "u"), Err(Error::EmptyMemory { field }) if field == "content")
            );
            let imp = NoteUpdate { importance: Some(-0.1), ..NoteUpdate::default() };
            assert!(
                matches!(m.update(&key, &imp, &ts(T2), "u"), Err(Error::InvalidInput { field, .. }) if field == "importance")
            );
            let fine = NoteUpdate { importance: Some(0.1), ..NoteUpdate::default() };
            assert!(
                matches!(m.update(&key, &fine, &ts("2020-01-01"), "u"), Err(Error::InvalidInput { field, .. }) if field == "ts")
            );
            assert!(matches!(
                m.update("n-00000000000000aa", &fine, &ts(T2), "u"),
                Err(Error::NotFound { .. })
            ));
            assert!(matches!(m.delete("n-00000000000000aa", "u"), Err(Error::NotFound { .. })));
            assert!(matches!(m.delete("2023-05-20T02:21:00#000000000000", "u"), Err(Error::NotFound { .. })));
            let bad_filter = Filter { tags_any: vec![String::new()], ..Filter::default() };
            assert!(
                matches!(m.list(&ListNotes { filter: bad_filter, ..ListNotes::default() }, "u"), Err(Error::InvalidInput { field, .. }) if field == "filter.tags_any[0]")
            );
            assert!(
                matches!(m.list(&ListNotes { limit: 0, ..ListNotes::default() }, "u"), Err(Error::InvalidInput { field, .. }) if field == "limit")
            );
        }
        assert_eq!(state(&t.path), before);
    }
}

#[test]
fn a_failure_inside_remember_rolls_everything_back() {
    for (name, e) in embedders() {
        eprintln!("embedder {name}");
        let t = temp_store();
        {
            open(&e, &t.path).remember(&[NewNote::new("Kept.", T1)], "u").unwrap();
        }
        poison(&t.path, "notes", "content");
        let before = state(&t.path);
        {
            let m = open(&e, &t.path);
            let notes =
                [NewNote::new("fine one", T2), NewNote::new("fine two", T2), NewNote::new("POISON", T2)];
            assert!(m.remember(&notes, "u").is_err());
            assert!(
                m.search(&Search::new("fine one"), "u")
                    .unwrap()
                    .hits
                    .iter()
                    .all(|h| !h.note.content.starts_with("fine"))
            );
        }
        assert_eq!(state(&t.path), before);
    }
}

#[test]
fn notes_export_in_all_three_formats_and_a_dump_imports_losslessly() {
    for (name, e) in embedders() {
        eprintln!("embedder {name}");
        let t = temp_store();
        let m = open(&e, &t.path);
        let k = seed(&m);
        let md = m.export(ExportFormat::Markdown, "alice").unwrap();
        assert!(md.contains("## Notes") && md.contains("### Diet") && md.contains("`food`, `Health`"));
        assert!(md.contains(r#"metadata: `{"source":"runbook","v":2}`"#));
        let text = m.export(ExportFormat::Text, "alice").unwrap();
        assert!(text.contains(&format!("  {} kind procedural importance 0.5", k[2])));
        let dump = m.export(ExportFormat::Jsonl, "alice").unwrap();
        assert_eq!(dump.matches(r#""kind":"note""#).count(), 5);
        let copy = temp_store();
        let report = common::import(&copy.path, &dump).unwrap();
        assert_eq!(report.notes, 5);
        let restored = open(&e, &copy.path);
        for format in [ExportFormat::Markdown, ExportFormat::Text, ExportFormat::Jsonl] {
            assert_eq!(
                restored.export(format, "alice").unwrap(),
                m.export(format, "alice").unwrap(),
                "{format:?}"
            );
        }
        let s = Search::new("sister Oslo");
        assert_eq!(restored.search(&s, "alice").unwrap(), m.search(&s, "alice").unwrap());
        let tampered = dump.replacen(&k[0], "n-XYZ", 1);
        assert!(matches!(Memory::builder(&temp_store().path).import(&tampered), Err(Error::Import { .. })));
    }
}

#[test]
fn condensing_hides_the_oldest_episodic_notes_behind_one_semantic_note() {
    for (name, e) in embedders() {
        eprintln!("embedder {name}");
        let t = temp_store();
        let m = open(&e, &t.path);
        let days: Vec<NewNote> = (1..=7)
            .map(|d| {
                NewNote::new(
                    format!("Day {d}: walked {d} km. Rained later."),
                    format!("2026-01-0{d}T20:00:00"),
                )
                .kind(NoteKind::Episodic)
                .tags([format!("walk{}", d % 2)])
            })
            .collect();
        let keys = keys(&m.remember(&days, "u").unwrap());
        m.remember(&[NewNote::new("A standing fact.", T1)], "u").unwrap();
        let report = m.condense(Condense { keep: 2, batch: 3 }, "u").unwrap();
        assert_eq!(report.condensed, 5);
        assert_eq!(report.notes.len(), 2, "batches of 3 then 2");
        let again = m.condense(Condense { keep: 2, batch: 3 }, "u").unwrap();
        assert_eq!(again.condensed, 0, "twice = once");
        let counts = m.count("u").unwrap();
        assert_eq!((counts.notes, counts.condensed, counts.kinds["episodic"]), (5, 5, 2));
        let summary = match m.get(&report.notes[0], "u").unwrap() {
            Record::Note(n) => n,
            other => panic!("{other:?}"),
        };
        assert_eq!(summary.kind, NoteKind::Semantic);
        assert_eq!(summary.condenses, keys[..3]);
        assert_eq!(
            summary.content,
            "- 2026-01-01: Day 1: walked 1 km.\n- 2026-01-02: Day 2: walked 2 km.\n- 2026-01-03: Day 3: walked 3 km."
        );
        assert_eq!(summary.ts, "2026-01-03T20:00:00");
        assert_eq!(summary.tags, ["walk1", "walk0"]);
        assert!(
            matches!(m.get(&keys[0], "u").unwrap(), Record::Note(n) if n.condensed_into.as_deref() == Some(report.notes[0].as_str()))
        );
        assert!(
            m.search(&Search::new("walked km").limit(100), "u")
                .unwrap()
                .hits
                .iter()
                .all(|h| h.note.condensed_into.is_none())
        );
        let hidden = Filter { include_condensed: true, ..Filter::default() };
        assert_eq!(
            m.list(&ListNotes { filter: hidden, ..ListNotes::default() }, "u").unwrap().notes.len(),
            10
        );
        let log = m.decisions("u").unwrap();
        assert_eq!(log.iter().filter(|d| d.kind == DecisionKind::NoteCondensed).count(), 5);
        // Deleting an original rewrites its summary without it; deleting a summary restores the rest.
        m.delete(&keys[1], "u").unwrap();
        let rebuilt = match m.get(&report.notes[0], "u").unwrap() {
            Record::Note(n) => n,
            other => panic!("{other:?}"),
        };
        assert!(!rebuilt.content.contains("Day 2") && rebuilt.content.contains("Day 3"));
        assert_eq!(rebuilt.condenses, [keys[0].clone(), keys[2].clone()]);
        m.delete(&report.notes[0], "u").unwrap();
        assert!(matches!(m.get(&keys[0], "u").unwrap(), Record::Note(n) if n.condensed_into.is_none()));
        assert_eq!(m.count("u").unwrap().kinds["episodic"], 4);
        // Through consolidate, with Config::condense.
        let with = common::open_at(
            &t.path,
            e.clone(),
            Config { condense: Some(Condense { keep: 1, batch: 10 }), ..Config::default() },
        )
        .unwrap();
        drop(m);
        assert_eq!(with.consolidate("u").unwrap().condensed, 3);
    }
}

#[test]
fn copy_and_move_reuse_vectors_and_refuse_stores_of_other_pins() {
    for (name, e) in embedders() {
        eprintln!("embedder {name}");
        let (a, b, c) = (temp_store(), temp_store(), temp_store());
        let (project, global) = (open(&e, &a.path), open(&e, &b.path));
        let k = seed(&project);
        let copied = project.copy_to(&[&k[0], &k[3]], &global, "alice").unwrap();
        assert_eq!(copied.copied, [k[0].clone(), k[3].clone()]);
        let again = project.copy_to(&[&k[0]], &global, "alice").unwrap();
        assert_eq!((again.copied.len(), again.present.len()), (0, 1));
        // The same bytes: the vector was reused, the agent kept.
        assert_eq!(common::note_vector(&a.path, &k[3]), common::note_vector(&b.path, &k[3]));
        assert!(matches!(
            global.get(&k[3], Scope::user("alice").agent("coder")),
            Err(Error::NotFound { .. })
        ));
        let moved = project.move_to(&[&k[1]], &global, "alice").unwrap();
        assert_eq!(moved.removed, [k[1].clone()]);
        assert!(matches!(project.get(&k[1], "alice"), Err(Error::NotFound { .. })));
        assert!(
            project
                .decisions("alice")
                .unwrap()
                .iter()
                .any(|d| d.kind == DecisionKind::NoteMoved && d.record == k[1])
        );
        assert!(
            global
                .decisions("alice")
                .unwrap()
                .iter()
                .any(|d| d.kind == DecisionKind::NoteCopied && d.record == k[1])
        );
        // Merged reads across both stores: each note once.
        let both = Stores { local: &project, global: &global };
        let page = both.list(&ListNotes { limit: 100, ..ListNotes::default() }, "alice").unwrap();
        let mut keys: Vec<&str> = page.notes.iter().map(|n| n.key.as_str()).collect();
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), page.notes.len());
        assert_eq!(page.notes.len(), 5);
        // Another embedder: refused, naming the pins, and nothing is written.
        let other = Memory::builder(&c.path).embedder(HashingEmbedder::new(64).unwrap()).open().unwrap();
        drop(other);
        let other = Memory::builder(&c.path).stored().open().unwrap();
        let before = other.export(ExportFormat::Text, "alice").is_err();
        match project.copy_to(&[&k[0]], &other, "alice") {
            Err(Error::PinMismatch { differences }) => {
                assert!(differences.iter().any(|d| d.key == "embedder.dim"))
            }
            other => panic!("{other:?}"),
        }
        assert!(before && other.export(ExportFormat::Text, "alice").is_err(), "no user was created");
        assert!(
            matches!(project.copy_to(&["2023-05-20T02:21:00#abc"], &global, "alice"), Err(Error::InvalidInput { field, .. }) if field == "keys[0]")
        );
    }
}

#[test]
fn filter_and_key_lists_are_capped_naming_the_field() {
    let (a, b) = (temp_store(), temp_store());
    let (m, other) = (hashing(&a.path), hashing(&b.path));
    let k = seed(&m);
    let many: Vec<String> = (0..=mnemon::notes::MAX_TAGS).map(|i| format!("t{i}")).collect();
    for filter in [
        Filter { tags_any: many.clone(), ..Filter::default() },
        Filter { tags_all: many.clone(), ..Filter::default() },
    ] {
        match m.list(&ListNotes { filter, ..ListNotes::default() }, "alice") {
            Err(Error::InvalidInput { field, reason }) => {
                assert!(field.ends_with("tags_any") || field.ends_with("tags_all"), "{field}");
                assert!(reason.contains("at most 64"), "{reason}");
            }
            other => panic!("{other:?}"),
        }
    }
    // Repeats within the cap fold to one, whatever their case.
    let repeated =
        Filter { tags_any: vec!["FOOD".into(), "food".into(), "Food".into()], ..Filter::default() };
    assert_eq!(
        m.list(&ListNotes { filter: repeated, ..ListNotes::default() }, "alice").unwrap().notes.len(),
        1
    );
    let keys: Vec<String> = (0..=mnemon::notes::MAX_TRANSFER_KEYS).map(|_| k[0].clone()).collect();
    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
    for (given, want) in [(&keys[..], "at most 1000"), (&keys[..0], "is empty")] {
        match m.copy_to(given, &other, "alice") {
            Err(Error::InvalidInput { field, reason }) => {
                assert_eq!(field, "keys");
                assert!(reason.contains(want), "{reason}");
            }
            other => panic!("{other:?}"),
        }
    }
    // A key given many times within the cap is copied once.
    assert_eq!(m.copy_to(&keys[..1000], &other, "alice").unwrap().copied, [k[0].clone()]);
}

#[test]
fn a_move_never_loses_an_edit_and_a_store_is_never_its_own_target() {
    let (a, b) = (temp_store(), temp_store());
    let (project, global) = (hashing(&a.path), hashing(&b.path));
    let k = seed(&project);
    // Copied, then edited here: the target holds the old text.
    project.copy_to(&[&k[0], &k[1]], &global, "alice").unwrap();
    let edit = NoteUpdate { content: Some("The user is vegan now.".into()), ..NoteUpdate::default() };
    project.update(&k[1], &edit, &ts(T3), "alice").unwrap();
    let snapshot =
        |m: &Memory| (m.export(ExportFormat::Text, "alice").unwrap(), m.decisions("alice").unwrap());
    let before = (snapshot(&project), snapshot(&global));
    match project.move_to(&[&k[0], &k[1]], &global, "alice") {
        Err(Error::InvalidInput { field, reason }) => {
            assert_eq!(field, "keys[1]");
            assert!(reason.contains(&k[1]) && reason.contains("another version"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!((snapshot(&project), snapshot(&global)), before, "a refused move changed a store");
    assert!(
        matches!(project.get(&k[1], "alice").unwrap(), Record::Note(n) if n.content == "The user is vegan now.")
    );
    // Once the target has the edit too, the move goes through, and nothing was lost.
    global.update(&k[1], &edit, &ts(T3), "alice").unwrap();
    let moved = project.move_to(&[&k[0], &k[1]], &global, "alice").unwrap();
    assert_eq!(moved.present, [k[0].clone(), k[1].clone()]);
    assert_eq!(moved.removed, [k[0].clone(), k[1].clone()]);
    assert!(
        matches!(global.get(&k[1], "alice").unwrap(), Record::Note(n) if n.content == "The user is vegan now.")
    );

    // The same store under another path (a link; on PostgreSQL a second handle on the schema)
    // is this store: a move into it would delete the note it "copied".
    let same = if common::on_postgres() {
        Memory::builder(common::backend_for(&a.path)).embedder(HashingEmbedder::default()).open().unwrap()
    } else {
        let link = a.path.with_extension("link.db");
        std::os::unix::fs::symlink(&a.path, &link).unwrap();
        Memory::builder(&link).embedder(HashingEmbedder::default()).open().unwrap()
    };
    match project.move_to(&[&k[2]], &same, "alice") {
        Err(Error::InvalidInput { field, .. }) => assert_eq!(field, "target"),
        other => panic!("{other:?}"),
    }
    assert!(project.get(&k[2], "alice").is_ok());
}

#[test]
fn a_schema_3_store_migrates_in_place_and_exports_what_it_held() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v3.db");
    let gz = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/store-v3.db.gz")).unwrap();
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&gz[..]), &mut bytes).unwrap();
    std::fs::write(&path, bytes).unwrap();
    let fixture = |ext: &str| {
        std::fs::read_to_string(format!("{}/tests/fixtures/store-v3.ana.{ext}", env!("CARGO_MANIFEST_DIR")))
            .unwrap()
    };
    let x = Arc::new(
        ScriptedExtractor::load(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/demo.facts.json"))
            .unwrap(),
    );
    let m = Memory::builder(&path).embedder(HashingEmbedder::default()).extractor(x).open().unwrap();
    assert_eq!(m.pins().unwrap()["schema_version"], "5");
    assert_eq!(m.export(ExportFormat::Markdown, "ana").unwrap(), fixture("md"));
    // The text export and the dump's records less what schema 5 added (the header moved on).
    let text = m.export(ExportFormat::Text, "ana").unwrap();
    assert_eq!(common::text_before_schema_5(&text), common::text_before_schema_5(&fixture("text")));
    let dump = m.export(ExportFormat::Jsonl, "ana").unwrap();
    assert_eq!(common::dump_before_schema_5(&dump), common::dump_before_schema_5(&fixture("jsonl")));
    // A version 2 dump (the fixture's) imports into a new store.
    let copy = dir.path().join("copy.db");
    assert_eq!(Memory::builder(&copy).import(&fixture("jsonl")).unwrap().rounds, 6);
    // And the migrated store takes notes.
    m.remember(&[NewNote::new("Migrated stores take notes.", "2026-07-01")], "ana").unwrap();
    assert_eq!(m.count("ana").unwrap().notes, 1);
}

#[test]
fn forgetting_a_user_removes_their_notes_with_vectors_words_and_tags() {
    for (_, e) in embedders() {
        let t = temp_store();
        let m = open(&e, &t.path);
        seed(&m);
        let report = m.forget_user("alice").unwrap();
        assert_eq!(report.notes, 5);
        assert_eq!(
            m.count("alice").unwrap(),
            mnemon::records::Counts { kinds: m.count("nobody").unwrap().kinds, ..Default::default() }
        );
        assert!(m.search(&Search::new("vegetarian deploy sister"), "alice").unwrap().hits.is_empty());
        assert_eq!(m.count("bob").unwrap().notes, 1, "another user's notes stay");
        drop(m);
        let count = |sql: &str| common::count(&t.path, sql);
        assert_eq!(count("SELECT count(*) FROM notes"), 1);
        assert_eq!(count("SELECT count(*) FROM note_vectors"), 1);
        assert_eq!(count("SELECT count(*) FROM note_tags"), 0, "bob's note has no tags");
        if !common::on_postgres() {
            // SQLite's FTS5 table (a PostgreSQL store has none: words are indexed in memory).
            assert_eq!(
                count(
                    "SELECT count(*) FROM note_fts WHERE note_fts MATCH 'vegetarian OR runbook OR nextest'"
                ),
                0
            );
            assert_eq!(count("SELECT count(*) FROM note_fts WHERE note_fts MATCH 'bees'"), 1);
        }
    }
}
