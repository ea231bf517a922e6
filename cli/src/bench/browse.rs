//! `mnemon bench --browse`: the web page's reads (users, a timeline page, the decision log by
//! kind, activity) on one user's store.

use super::*;

/// The servers' operations on the store at `path`, with the bench's embedder.
pub(super) fn service_on(
    path: &std::path::Path,
    args: &Args,
) -> Result<std::sync::Arc<mnemon_server::Service>> {
    crate::service_from_flags(["mnemon", "--store"].into_iter().map(str::to_owned).chain([
        path.to_string_lossy().into_owned(),
        "--embedder".into(),
        match args.models.embedder {
            crate::flags::EmbedderChoice::Hashing => "hashing".into(),
            crate::flags::EmbedderChoice::Minilm => "minilm".into(),
        },
    ]))
}

/// The web page's reads on one user of `size` rounds, one every hour from 2024-01-01 in sessions
/// of `--session-rounds`: each round says one thing the scripted extractor turns into a fact, and
/// every tenth says the user moved (superseding the home before). Pages of 50, as the page asks.
pub(super) fn run_browse(args: &Args) -> Result<()> {
    let embedder = args.models.embedder()?;
    println!(
        "embedder: {} ({} dims), the web page's reads on one user",
        embedder.pins().name,
        embedder.pins().dim
    );
    println!("| rounds | facts (superseded) | build (s) | build per round (ms) | timeline page p50 / p95 (ms) | timeline page through the service, as JSON, p50 / p95 (ms) | users (ms) | decisions of one kind, page p50 (ms) | activity (ms) |");
    println!("|---|---|---|---|---|---|---|---|---|");
    for &size in &args.sizes {
        let mut words = Words(size as u64 + 11);
        let start =
            chrono::NaiveDate::from_ymd_opt(2024, 1, 1).unwrap_or_default().and_time(chrono::NaiveTime::MIN);
        let mut script = serde_json::Map::new();
        let mut rounds = Vec::with_capacity(size);
        for i in 0..size {
            let ts = (start + chrono::Duration::hours(i as i64)).format("%Y-%m-%dT%H:%M:%S").to_string();
            let (turn, fact) = if i % 10 == 0 {
                let town = format!("Town{i}");
                let turn = format!("I live in {town} now, {}.", words.sentence(8));
                let fact = serde_json::json!({"content": format!("The user lives in {town}."),
                    "raw": format!("user: I live in {town}"), "when": null, "subject": "user",
                    "predicate": "lives in", "object": town, "salience": 1.0});
                (turn, fact)
            } else {
                let thing = format!("{}{i}", words.word());
                let turn = format!("I bought a {thing} today, {}.", words.sentence(8));
                let fact = serde_json::json!({"content": format!("The user bought a {thing}."),
                    "raw": format!("user: I bought a {thing}"), "when": "today", "subject": "user",
                    "predicate": "bought", "object": thing, "salience": 1.0});
                (turn, fact)
            };
            script.insert(turn.clone(), serde_json::Value::Array(vec![fact]));
            let session = format!("s{}", i / args.session_rounds.max(1));
            rounds.push([
                Message::user(turn, ts.clone()).in_session(session.clone()),
                Message::assistant(words.sentence(args.reply_words), ts).in_session(session),
            ]);
        }
        let script = serde_json::Value::Object(script).to_string();
        let extractor = mnemon::extract::ScriptedExtractor::from_json("bench", &script)?;
        let dir = tempfile::tempdir().context("temp dir")?;
        let path = dir.path().join("bench.db");
        let memory = Memory::builder(&path)
            .embedder(embedder.clone())
            .extractor(extractor)
            .config(Config { background_extraction: false, ..Config::default() })
            .open()?;
        let t = Instant::now();
        for chunk in rounds.chunks(args.session_rounds.max(1)) {
            let messages: Vec<Message> = chunk.iter().flatten().cloned().collect();
            memory.add(&messages, "bench")?;
        }
        let build_s = t.elapsed().as_secs_f64();
        let users = memory.users()?;
        let holds = users.first().map(|u| u.holds).unwrap_or_default();
        // Every page's cursor, then pages drawn across the whole timeline.
        let mut cursors = vec![None];
        loop {
            let cursor = cursors.last().cloned().flatten();
            match memory.timeline(&Paging { limit: 50, cursor }, "bench")?.next {
                Some(next) => cursors.push(Some(next)),
                None => break,
            }
        }
        let picks: Vec<String> =
            (0..args.queries.max(1)).map(|i| (i * 7919 % cursors.len()).to_string()).collect();
        let page = |i: &str| -> Result<mnemon::browse::TimelinePage> {
            let cursor = cursors[i.parse::<usize>()?].clone();
            Ok(memory.timeline(&Paging { limit: 50, cursor }, "bench")?)
        };
        let direct = timed(&picks, page)?;
        let service = service_on(&path, args)?;
        let served = timed(&picks, |i| -> Result<Vec<u8>> {
            let request = mnemon_server::api::ReadTimeline {
                limit: Some(50),
                cursor: cursors[i.parse::<usize>()?].clone(),
                user_id: Some("bench".into()),
                agent_id: None,
                store: None,
            };
            let page = service.timeline(&request).map_err(|e| anyhow!("{}", e.message))?;
            Ok(serde_json::to_vec(&page)?)
        })?;
        let t = Instant::now();
        memory.users()?;
        let users_ms = t.elapsed().as_secs_f64() * 1e3;
        let kinds = [DecisionKind::FactSuperseded];
        let decisions = timed(&picks[..picks.len().min(50)], |_| {
            memory.decision_page(&kinds, &Paging { limit: 50, cursor: None }, "bench")
        })?;
        let t = Instant::now();
        memory.activity("bench")?;
        let activity_ms = t.elapsed().as_secs_f64() * 1e3;
        println!(
            "| {size} | {} ({}) | {build_s:.1} | {:.2} | {:.2} / {:.2} | {:.2} / {:.2} | {users_ms:.1} | {:.2} | {activity_ms:.1} |",
            holds.facts + holds.superseded,
            holds.superseded,
            build_s * 1e3 / size as f64,
            direct.0,
            direct.1,
            served.0,
            served.1,
            decisions.0,
        );
    }
    Ok(())
}
