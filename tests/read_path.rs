//! The read path: isolation, determinism, budgets, time windows, export and import.

use crate::common::{self, ts};

use common::{backend_for, conversation, hashing, hashing_dense, on_postgres, open_at, temp_store};
use mnemon::config::Config;
use mnemon::context::Relevance;
use mnemon::embed::{Calibration, HashingEmbedder};
use mnemon::export::ExportFormat;
use mnemon::{Error, Memory, Message, Query};

fn other_user_messages() -> Vec<Message> {
    vec![
        Message::user("My beagle is called Rex and I live in Oslo.", "2023/05/21 (Sun) 10:00")
            .in_session("x"),
        Message::assistant("Rex is a great name.", "2023/05/21 (Sun) 10:00").in_session("x"),
    ]
}

#[test]
fn users_never_see_each_other_on_recall_context_or_export() {
    let t = temp_store();
    let m = hashing(&t.path);
    m.add(&conversation(), "alice").unwrap();
    m.add(&other_user_messages(), "bob").unwrap();
    for r in m.recall(Query::new("beagle named Rex in Oslo").top_k(100), "alice").unwrap().rounds {
        assert!(!r.turns.iter().any(|t| t.content.contains("Rex")), "alice saw bob's round");
    }
    let bob = m.recall(Query::new("Toby nurse cello").top_k(100), "bob").unwrap();
    assert_eq!(bob.rounds.len(), 1);
    assert!(bob.rounds[0].turns[0].content.contains("Rex"));
    let context = m.get_context(Query::new("What is my dog's name?").top_k(100), "alice").unwrap();
    assert!(!context.text.contains("Rex") && context.text.contains("Toby"));
    for format in [ExportFormat::Markdown, ExportFormat::Text, ExportFormat::Jsonl] {
        let alice = m.export(format, "alice").unwrap();
        assert!(!alice.contains("Rex") && !alice.contains("Oslo"), "{format:?}");
    }
    assert!(m.recall("anything", "carol").unwrap().rounds.is_empty());
    assert!(matches!(m.export(ExportFormat::Markdown, "carol"), Err(Error::InvalidInput { .. })));
}

fn build(path: &std::path::Path) -> Memory {
    let m = hashing(path);
    m.add(&conversation(), "alice").unwrap();
    m.add(&other_user_messages(), "bob").unwrap();
    m.add(
        &[Message::user("I switched to the day shift at the hospital.", "2023/08/01 (Tue) 07:00")],
        "alice",
    )
    .unwrap();
    m
}

#[test]
fn two_fresh_stores_from_the_same_input_give_identical_bytes_everywhere() {
    let (a, b) = (temp_store(), temp_store());
    let (ma, mb) = (build(&a.path), build(&b.path));
    for format in [ExportFormat::Markdown, ExportFormat::Text, ExportFormat::Jsonl] {
        assert_eq!(ma.export(format, "alice").unwrap(), mb.export(format, "alice").unwrap(), "{format:?}");
    }
    for q in
        ["Where do I work?", "[Current date: 2023/08/02 (Wed) 09:00]\nWhat did I start last month?", "books"]
    {
        let (ca, cb) = (ma.get_context(q, "alice").unwrap(), mb.get_context(q, "alice").unwrap());
        assert_eq!(ca, cb);
        let (ra, rb) = (ma.recall(q, "alice").unwrap(), mb.recall(q, "alice").unwrap());
        assert_eq!(serde_json::to_string(&ra).unwrap(), serde_json::to_string(&rb).unwrap());
    }
    assert_eq!(ma.pins().unwrap(), mb.pins().unwrap());
}

#[test]
fn a_jsonl_dump_imports_losslessly_and_needs_no_model() {
    let t = temp_store();
    let m = build(&t.path);
    let dump = m.export(ExportFormat::Jsonl, "alice").unwrap();
    let copy = temp_store();
    let report = common::import(&copy.path, &dump).unwrap();
    assert!(report.created);
    assert_eq!(report.users, vec!["alice".to_owned()]);
    assert_eq!(report.rounds, 5);
    let restored = hashing(&copy.path);
    for format in [ExportFormat::Markdown, ExportFormat::Text, ExportFormat::Jsonl] {
        assert_eq!(
            restored.export(format, "alice").unwrap(),
            m.export(format, "alice").unwrap(),
            "{format:?}"
        );
    }
    let q = "Where do I work?";
    assert_eq!(restored.recall(q, "alice").unwrap(), m.recall(q, "alice").unwrap());
    // Importing the same user twice is refused, and nothing is written.
    assert!(matches!(common::import(&copy.path, &dump), Err(Error::Import { .. })));
    // A tampered round is refused before anything is written.
    let tampered = dump.replacen("Toby", "Rex", 1);
    let other = temp_store();
    assert!(matches!(common::import(&other.path, &tampered), Err(Error::Import { .. })));
    // Into a store built with another embedder: a pin mismatch.
    let mismatched = temp_store();
    drop(
        common::open_at(
            &mismatched.path,
            std::sync::Arc::new(HashingEmbedder::new(64).unwrap()),
            Config::default(),
        )
        .unwrap(),
    );
    assert!(matches!(common::import(&mismatched.path, &dump), Err(Error::PinMismatch { .. })));
}

#[test]
fn forget_user_removes_everything_and_the_user_with_it() {
    let t = temp_store();
    let m = build(&t.path);
    let report = m.forget_user("alice").unwrap();
    // A database server keeps deleted rows in its free space and log until its operator
    // vacuums: never scrubbed from here.
    assert_eq!((report.rounds, report.scrubbed), (5, !common::on_postgres()));
    assert!(m.recall("Toby", "alice").unwrap().rounds.is_empty());
    assert!(m.export(ExportFormat::Text, "alice").is_err());
    assert!(m.decisions("alice").unwrap().is_empty());
    assert_eq!(m.user_names().unwrap(), vec!["bob".to_string()]);
    assert_eq!(m.recall(Query::new("Rex").top_k(10), "bob").unwrap().rounds.len(), 1);
    let count = |sql: &str| common::count(&t.path, sql);
    assert_eq!(count("SELECT count(*) FROM rounds"), 1);
    if !common::on_postgres() {
        assert_eq!(count("SELECT count(*) FROM round_fts WHERE round_fts MATCH 'Toby'"), 0);
        assert_eq!(count("SELECT count(*) FROM round_fts WHERE round_fts MATCH 'Rex'"), 1);
    }
    assert_eq!(count("SELECT count(*) FROM round_vectors"), 1);
    assert_eq!(m.forget_user("nobody").unwrap().rounds, 0);
}

#[test]
fn another_handle_sees_new_rounds_at_its_next_recall() {
    let t = temp_store();
    let reader = hashing(&t.path);
    let writer = hashing(&t.path);
    writer.add(&conversation(), "u").unwrap();
    assert_eq!(reader.recall(Query::new("x").top_k(100), "u").unwrap().rounds.len(), 4);
    writer.add(&[Message::user("A fifth round about kayaks.", "2024-01-01T00:00:00")], "u").unwrap();
    let rounds = reader.recall(Query::new("kayaks").top_k(100), "u").unwrap().rounds;
    assert_eq!(rounds.len(), 5);
    assert!(rounds[0].turns[0].content.contains("kayaks"));
}

#[test]
fn a_round_in_the_question_window_gets_the_time_bonus() {
    let t = temp_store();
    // The dense scorer itself.
    let m = hashing_dense(&t.path);
    m.add(
        &[
            Message::user("I bought new running shoes.", "2023-03-10T10:00:00"),
            Message::user("I bought new running shoes today.", "2023-05-18T10:00:00"),
        ],
        "u",
    )
    .unwrap();
    let plain = m.recall(Query::new("I bought new running shoes."), "u").unwrap();
    assert_eq!(plain.rounds[0].ts, "2023-03-10T10:00:00");
    assert_eq!(plain.window, None, "the question names no time");
    assert_eq!(plain.anchor.as_deref(), Some("2023-05-18"), "anchored on the logical now");
    let dated = m
        .recall(
            Query::new("What running shoes did I buy in the past week?").date(ts("2023-05-20T00:00:00")),
            "u",
        )
        .unwrap();
    assert_eq!(dated.window, Some(["2023-05-13".to_owned(), "2023-05-20".to_owned()]));
    assert_eq!(dated.rounds[0].ts, "2023-05-18T10:00:00");
    assert!(dated.rounds[0].time_match);
    assert!((dated.rounds[0].score - dated.rounds[0].cosine - 0.05).abs() < 1e-6);
    // A question's date that is no time is refused where it is read, naming its field.
    assert!(matches!(
        mnemon::Timestamp::parse_field("someday", "date"),
        Err(Error::InvalidInput { field, .. }) if field == "date"
    ));
}

#[test]
fn with_fusion_the_rounds_in_the_question_window_are_ranked_once_more() {
    let t = temp_store();
    let m = hashing(&t.path);
    m.add(
        &[
            Message::user("I bought new running shoes at the outlet store.", "2023-03-10T10:00:00"),
            Message::user("New shoes arrived today.", "2023-05-18T10:00:00"),
            Message::user("We talked about the weather.", "2023-05-19T10:00:00"),
        ],
        "u",
    )
    .unwrap();
    let q = || Query::new("What running shoes did I buy in the past week?");
    // Without a window (a date before every round), the closer match leads.
    let undated = m.recall(q().date(ts("2022-01-01T00:00:00")), "u").unwrap();
    assert_eq!(undated.window, Some(["2021-12-25".to_owned(), "2022-01-01".to_owned()]));
    assert!(undated.rounds[0].turns[0].content.contains("outlet"));
    // Dense and words give at most 2 / (k + 1); the rounds inside the window earn a third list.
    let two_lists = 2.0 / (Config::default().rrf_k.unwrap() as f32 + 1.0);
    let dated = m.recall(q().date(ts("2023-05-20T00:00:00")), "u").unwrap();
    assert!(dated.rounds[0].turns[0].content.contains("arrived"), "{:?}", dated.rounds[0].turns);
    assert!(dated.rounds[0].time_match);
    assert!(dated.rounds[0].score > two_lists, "{}", dated.rounds[0].score);
    // No round in the window, no third list.
    assert!(undated.rounds.iter().all(|r| r.score <= two_lists + 1e-6));
}

#[test]
fn markdown_export_has_a_heading_per_session_and_quoted_rounds() {
    let t = temp_store();
    let m = hashing(&t.path);
    m.add(&conversation(), "u").unwrap();
    let md = m.export(ExportFormat::Markdown, "u").unwrap();
    assert_eq!(md.matches("\n## Session ").count(), 3);
    assert!(md.contains("> **user:** I adopted a beagle named Toby last month."));
    assert!(md.contains("**2023/05/20 (Sat) 02:21**"));
}

#[test]
fn the_in_memory_index_agrees_with_sqlite_vec_knn() {
    let t = temp_store();
    // The dense scorer itself.
    let m = hashing_dense(&t.path);
    let msgs: Vec<Message> = (0..300)
        .map(|i| {
            Message::user(
                format!("note {i} about {} and {}", i % 17, i % 5),
                format!("2024-01-{:02}T10:00:00", 1 + i % 28),
            )
        })
        .collect();
    m.add(&msgs, "u").unwrap();
    m.add(&other_user_messages(), "v").unwrap();
    for q in ["note about 3 and 4", "about 16", "something else entirely"] {
        let ours = m.recall(Query::new(q).top_k(20), "u").unwrap().rounds;
        let theirs = m.nearest_in_database(q, 20, "u").unwrap();
        assert_eq!(ours.len(), theirs.len());
        for (a, (key, cos)) in ours.iter().zip(&theirs) {
            assert!((a.cosine - cos).abs() < 1e-4, "{q}: {} {} vs {key} {cos}", a.key, a.cosine);
        }
        // Same set up to ties at the cut.
        let kth = ours.last().unwrap().cosine;
        for a in ours.iter().filter(|a| a.cosine > kth + 1e-4) {
            assert!(theirs.iter().any(|(k, _)| k == &a.key), "{q}: {} missing from sqlite-vec", a.key);
        }
    }
}

#[test]
fn a_store_built_through_the_vector_cache_is_identical() {
    let cache = temp_store();
    let cache_file = cache.dir.path().join("vectors.db");
    let build = |path: &std::path::Path, cached: bool| {
        let embedder: std::sync::Arc<dyn mnemon::embed::Embedder> = if cached {
            std::sync::Arc::new(
                mnemon::embed::CachedEmbedder::open(
                    &cache_file,
                    std::sync::Arc::new(HashingEmbedder::default()),
                )
                .unwrap(),
            )
        } else {
            std::sync::Arc::new(HashingEmbedder::default())
        };
        let m = Memory::builder(path).embedder(embedder).open().unwrap();
        m.add(&common::conversation(), "u").unwrap();
        (m.export(ExportFormat::Jsonl, "u").unwrap(), m.get_context("Toby", "u").unwrap())
    };
    let (plain, cold, warm) = (temp_store(), temp_store(), temp_store());
    let expected = build(&plain.path, false);
    assert_eq!(build(&cold.path, true), expected);
    assert_eq!(build(&warm.path, true), expected);
    let conn = rusqlite::Connection::open(&cache_file).unwrap();
    let n: i64 = conn.query_row("SELECT count(*) FROM vectors", [], |r| r.get(0)).unwrap();
    assert_eq!(n, 4 + 1, "4 rounds and 1 query, each computed once");
}

#[test]
fn reciprocal_rank_fusion_ranks_by_both_lists() {
    let t = temp_store();
    let config = Config { rrf_k: Some(60), ..Config::default() };
    let m = Memory::builder(&t.path).embedder(HashingEmbedder::default()).config(config).open().unwrap();
    let mut msgs: Vec<Message> = (0..150)
        .map(|i| Message::user(format!("weekly note {i} about groceries and errands"), "2024-02-01T09:00:00"))
        .collect();
    msgs.push(Message::user("Booked the ferry to Zanzibar for March.", "2024-02-02T09:00:00"));
    m.add(&msgs, "u").unwrap();
    let r = m.recall("When is my Zanzibar ferry?", "u").unwrap();
    assert_eq!(r.rounds.len(), 10);
    assert!(r.rounds[0].turns[0].content.contains("Zanzibar"));
    // First in both lists: 1/61 + 1/61.
    assert!((r.rounds[0].score - 2.0 / 61.0).abs() < 1e-6, "{}", r.rounds[0].score);
    assert!(r.rounds.iter().all(|x| x.score <= 2.0 / 61.0 + 1e-6));
    // A question with no word falls back to the dense list alone.
    assert_eq!(m.recall("???", "u").unwrap().rounds.len(), 10);
    // Isolation holds on the lexical path too.
    m.add(&[Message::user("Zanzibar Zanzibar Zanzibar", "2024-02-03T09:00:00")], "v").unwrap();
    let again = m.recall(Query::new("Zanzibar").top_k(151), "u").unwrap();
    assert!(again.rounds.iter().all(|x| x.turns[0].content != "Zanzibar Zanzibar Zanzibar"));
}

#[test]
fn a_second_step_finds_a_round_that_shares_words_with_the_answers_not_with_the_question() {
    // Two rounds answer "where does my sister live?" and both name Lucia; a third names Lucia
    // and no word of the question. The feedback step adds "lucia" (held by two of the first
    // ranking's best rounds, rare) to the question, and the third round follows them. Filler
    // rounds share no word but "entry": none is ever added.
    let nouns = [
        "anchor",
        "biscuit",
        "candle",
        "dahlia",
        "easel",
        "fennel",
        "gazebo",
        "harbor",
        "igloo",
        "jigsaw",
        "kettle",
        "lantern",
        "mortar",
        "nutmeg",
        "oboe",
        "parsnip",
        "quiver",
        "radish",
        "saddle",
        "tundra",
        "umbrella",
        "velvet",
        "walrus",
        "xylophone",
        "yarrow",
        "zither",
        "almond",
        "bramble",
        "cobalt",
        "dune",
    ];
    let config = Config { rrf_k: Some(60), ..Config::default() };
    let build = |path: &std::path::Path| {
        let m =
            Memory::builder(path).embedder(HashingEmbedder::default()).config(config.clone()).open().unwrap();
        let mut msgs: Vec<Message> = nouns
            .iter()
            .enumerate()
            .map(|(i, w)| Message::user(format!("entry {i} {w}"), "2024-02-01T09:00:00"))
            .collect();
        msgs.push(Message::user("My sister Lucia moved to Porto.", "2024-02-02T09:00:00"));
        msgs.push(Message::user("My sister Lucia loves ceramics.", "2024-02-03T09:00:00"));
        msgs.push(Message::user("Lucia called about the flat.", "2024-02-04T09:00:00"));
        m.add(&msgs, "u").unwrap();
        m
    };
    let t = temp_store();
    let m = build(&t.path);
    let q = || Query::new("Where does my sister live?").top_k(5);
    let r = m.recall(q(), "u").unwrap();
    let firsts: Vec<&str> = r.rounds.iter().take(3).map(|x| x.turns[0].content.as_str()).collect();
    assert_eq!(firsts[2], "Lucia called about the flat.", "{firsts:?}");
    assert!(firsts[..2].iter().all(|c| c.starts_with("My sister Lucia")), "{firsts:?}");
    // Explained: the third round is in no word ranking of the question, third in the expanded one.
    let explained = m.get_context(q().explain(), "u").unwrap();
    let third = explained.records.iter().find(|x| x.key == r.rounds[2].key).unwrap();
    assert_eq!((third.words, third.feedback), (None, Some(3)), "{third:?}");
    assert!(explained.records.iter().filter(|x| x.feedback.is_some()).count() == 3);
    // Deterministic: the same ranking, scores included, in a store built apart.
    let other = temp_store();
    assert_eq!(build(&other.path).recall(q(), "u").unwrap(), r);
    assert_eq!(m.recall(q(), "u").unwrap(), r);
}

#[test]
fn the_lexical_ranking_is_the_users_own() {
    // BM25 statistics are per user: another user's rounds, sharing every word, move nothing.
    let t = temp_store();
    let m = Memory::builder(&t.path).embedder(HashingEmbedder::default()).open().unwrap();
    let msgs: Vec<Message> = (0..40)
        .map(|i| {
            let topic = ["groceries", "ferry", "violin", "garden"][i % 4];
            Message::user(format!("note {i}: {topic} plans for the week"), "2024-02-01T09:00:00")
        })
        .collect();
    m.add(&msgs, "u").unwrap();
    let q = Query::new("violin plans this week").top_k(40);
    let before = m.recall(q.clone(), "u").unwrap();
    let noise: Vec<Message> =
        (0..200).map(|i| Message::user(format!("violin violin {i}"), "2024-02-01T09:00:00")).collect();
    m.add(&noise, "v").unwrap();
    assert_eq!(m.recall(q.clone(), "u").unwrap(), before);
    drop(m);
    let reopened = Memory::builder(&t.path).embedder(HashingEmbedder::default()).open().unwrap();
    assert_eq!(reopened.recall(q.clone(), "u").unwrap(), before);
}

#[test]
fn the_word_index_grown_by_add_equals_one_built_from_the_file() {
    let t = temp_store();
    let m = Memory::builder(&t.path).embedder(HashingEmbedder::default()).open().unwrap();
    let day = |d: usize| format!("2024-03-{:02}T10:00:00", d + 1);
    let first: Vec<Message> =
        (0..20).map(|i| Message::user(format!("first batch {i} kayak lake"), day(i % 5))).collect();
    m.add(&first, "u").unwrap();
    let q = Query::new("kayak on the lake, second batch").top_k(30);
    m.recall(q.clone(), "u").unwrap(); // the index is now cached and grows with each add
    let second: Vec<Message> =
        (0..20).map(|i| Message::user(format!("second batch {i} lake swim"), day(5 + i % 5))).collect();
    m.add(&second, "u").unwrap();
    let warm = m.recall(q.clone(), "u").unwrap();
    drop(m);
    let cold = Memory::builder(&t.path).embedder(HashingEmbedder::default()).open().unwrap();
    assert_eq!(cold.recall(q.clone(), "u").unwrap(), warm);
    let dense = Memory::builder(&t.path)
        .embedder(HashingEmbedder::default())
        .config(Config { rrf_k: None, ..Config::default() })
        .open()
        .unwrap()
        .recall(q.clone(), "u")
        .unwrap();
    assert_ne!(dense, warm, "fusion is on by default and changes the ranking");
}

#[test]
fn a_cancelled_read_gives_up_and_an_unset_flag_changes_nothing() {
    use std::sync::atomic::AtomicBool;
    let t = temp_store();
    let m = hashing(&t.path);
    m.add(&conversation(), "alice").unwrap();
    let (set, unset) = (AtomicBool::new(true), AtomicBool::new(false));
    let q = Query::new("What is my dog's name?");
    assert!(matches!(m.recall(q.clone().cancel(&set), "alice"), Err(Error::Cancelled)));
    assert!(matches!(m.get_context(q.clone().cancel(&set), "alice"), Err(Error::Cancelled)));
    let s = mnemon::notes::Search::new("dog");
    assert!(matches!(m.search(&s.clone().cancel(&set), "alice"), Err(Error::Cancelled)));
    assert_eq!(
        m.get_context(q.clone().cancel(&unset), "alice").unwrap().text,
        m.get_context(q.clone(), "alice").unwrap().text
    );
    assert_eq!(
        m.recall(q.clone().cancel(&unset), "alice").unwrap().rounds,
        m.recall(q.clone(), "alice").unwrap().rounds
    );
}

fn rounds(user: &str, n: usize) -> Vec<Message> {
    (0..n)
        .map(|i| {
            Message::user(
                format!("{user} note {i}: the garden needs water and the fence paint"),
                format!("2024-01-{:02}T10:00:00", i % 28 + 1),
            )
            .in_session(format!("s{i}"))
        })
        .collect()
}

#[test]
fn views_count_their_growth_and_stay_within_their_budget() {
    let t = temp_store();
    let m = hashing(&t.path);
    m.add(&rounds("alice", 1), "alice").unwrap();
    m.recall("garden", "alice").unwrap();
    let (loaded, views) = m.view_cache();
    assert_eq!(views, 1);
    m.add(&rounds("alice", 40)[1..], "alice").unwrap();
    let (grown, _) = m.view_cache();
    assert!(grown > loaded * 10, "growth not counted: {loaded} → {grown}");
    drop(m);

    // A budget the view outgrows by writes alone: it is dropped, and loaded again when read.
    let t = temp_store();
    let budget = loaded * 4;
    let m = open_at(
        &t.path,
        std::sync::Arc::new(HashingEmbedder::default()),
        Config { view_cache_bytes: budget, ..Config::default() },
    )
    .unwrap();
    m.add(&rounds("alice", 1), "alice").unwrap();
    m.recall("garden", "alice").unwrap();
    assert_eq!(m.view_cache().1, 1);
    for chunk in rounds("alice", 40)[1..].chunks(5) {
        m.add(chunk, "alice").unwrap();
        assert!(m.view_cache().0 <= budget, "{} > {budget}", m.view_cache().0);
    }
    assert_eq!(m.recall("garden", "alice").unwrap().rounds.len(), 10, "reads load it again");
}

#[test]
fn stores_on_one_memory_budget_share_it() {
    let dir = tempfile::tempdir().unwrap();
    let open = |name: &str, budget: &mnemon::config::MemoryBudget| {
        Memory::builder(dir.path().join(name))
            .embedder(HashingEmbedder::default())
            .memory_budget(budget.clone())
            .open()
            .unwrap()
    };
    let probe = mnemon::config::MemoryBudget::new(usize::MAX);
    let one = open("one.db", &probe);
    for user in ["a", "b"] {
        one.add(&rounds(user, 20), user).unwrap();
    }
    one.recall("garden", "a").unwrap();
    let size = one.view_cache().0;
    assert_eq!(probe.used(), size);
    drop(one);
    assert_eq!(probe.used(), 0, "a closed store gives its bytes back");

    // Room for about two views across both stores.
    let budget = mnemon::config::MemoryBudget::new(size * 5 / 2);
    let (one, two) = (open("one.db", &budget), open("two.db", &budget));
    two.add(&rounds("c", 20), "c").unwrap();
    one.recall("garden", "a").unwrap();
    two.recall("garden", "c").unwrap();
    assert_eq!((one.view_cache().1, two.view_cache().1), (1, 1));
    // A third view puts the process over: the store that loads it drops its least recent one.
    one.recall("garden", "b").unwrap();
    assert_eq!((one.view_cache().1, two.view_cache().1), (1, 1));
    assert_eq!(budget.used(), one.view_cache().0 + two.view_cache().0);
    assert!(budget.used() <= budget.limit(), "{} > {}", budget.used(), budget.limit());
    drop(two);
    assert_eq!(budget.used(), one.view_cache().0);
}

#[test]
fn a_recalled_round_is_labelled_by_its_calibrated_cosine_and_an_unrelated_question_by_none() {
    let t = temp_store();
    let m = hashing(&t.path);
    m.add(&other_user_messages(), "u").unwrap();
    let calibration = m.calibration().unwrap();
    assert_eq!(calibration, Calibration::HASHING);
    let near = m.recall(Query::new("My beagle is called Rex and I live in Oslo."), "u").unwrap();
    let far = m.recall(Query::new("quarterly tax forms"), "u").unwrap();
    for r in near.rounds.iter().chain(&far.rounds) {
        assert_eq!(r.relevance, Relevance::of(calibration.score(r.cosine)), "{r:?}");
    }
    assert_eq!(near.rounds[0].relevance, Relevance::High);
    assert_eq!(far.rounds[0].relevance, Relevance::None);
    let stored = if on_postgres() { Memory::builder(backend_for(&t.path)) } else { Memory::builder(&t.path) };
    let stored = stored.stored().open().unwrap();
    assert!(matches!(stored.calibration(), Err(Error::NoEmbedder { .. })));
}
