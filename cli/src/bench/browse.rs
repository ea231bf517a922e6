//! `mnemon bench --browse`: the web page's reads (users, a timeline page, the decision log by
//! kind, activity) on one user's store.

use super::*;
use mnemon::extract::{Contract, Extraction, Extractor, ExtractorPins, ScriptedExtractor};
use mnemon::rounds::{Role, Turn};

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

/// Rounds a user might say, each sent to the real extractor when `--extractor` is given: the last
/// rounds of every size, the same texts at every size, so that the model's work is the same and
/// only the history it settles against grows.
const MODEL_ROUNDS: [(&str, &str); 30] = [
    ("I just moved to Lisbon for a new job.", "Congratulations on the move! Lisbon is a lovely city."),
    ("My sister Emma is visiting next week.", "That sounds fun. Do you have plans together?"),
    ("I sold my old Honda Civic yesterday.", "Good luck finding the next car."),
    ("I'm currently reading a book on Roman history, I'm on page 220.", "How are you finding it?"),
    ("I adopted a cat named Luna last month.", "Cats are wonderful company."),
    ("I quit my job at Globex on Friday.", "That is a big step. What comes next?"),
    ("We went hiking in the Alps over the weekend.", "The Alps are beautiful this time of year."),
    ("I've been learning Spanish for about six months.", "Keep going, six months is a good start."),
    ("My favourite coffee shop closed down.", "Sorry to hear that. Have you found another?"),
    ("I run 5 kilometres every morning now.", "That is a great habit."),
    ("I don't eat meat anymore, I'm vegetarian now.", "Many people find that change rewarding."),
    ("My daughter started school in September.", "A big milestone for both of you."),
    ("I need 120 stars to reach the Gold tier.", "You are getting close."),
    ("I bought a new bike, a blue Trek.", "Enjoy the rides!"),
    ("I cancelled my gym membership.", "There are many ways to stay active at home."),
    ("I work as a nurse at the city hospital.", "Nursing is demanding and important work."),
    ("My brother lives in Toronto.", "Do you visit him often?"),
    ("I have 25 titles on my to-watch list.", "That is quite a backlog."),
    ("I gave up on the piano lessons.", "Sometimes it is right to let something go."),
    ("I'm planning a trip to Japan in April.", "April is cherry blossom season."),
    ("My car is a red Toyota Corolla.", "A reliable choice."),
    ("I started a pottery class on Tuesdays.", "Pottery can be very relaxing."),
    ("I lost my phone at the gym yesterday.", "I hope someone hands it in."),
    ("My rent went up from 1200 to 1350 a month.", "That is a noticeable increase."),
    ("I'm allergic to peanuts.", "Good to know, I will keep that in mind."),
    ("I finished my 5th painting since starting classes.", "Five paintings is real progress."),
    ("My partner and I broke up last month.", "I'm sorry. How are you holding up?"),
    ("I volunteer at the animal shelter on weekends.", "That is a generous use of your time."),
    ("I switched from tea to coffee in the mornings.", "Coffee does help some people wake up."),
    ("My grandmother turned 90 this year.", "What a milestone! Did you celebrate?"),
];

/// Sends the rounds of [`MODEL_ROUNDS`] to the real extractor and every other round to the script.
struct Windowed {
    script: ScriptedExtractor,
    model: Arc<dyn Extractor>,
}

impl Windowed {
    fn modelled(turns: &[Turn]) -> bool {
        turns.iter().any(|t| t.role == Role::User && MODEL_ROUNDS.iter().any(|(user, _)| t.content == *user))
    }
}

impl Extractor for Windowed {
    fn pins(&self) -> ExtractorPins {
        let mut pins = self.model.pins();
        pins.decode =
            format!("{}; other rounds by table lookup ({})", pins.decode, self.script.pins().model_blake3);
        pins
    }

    fn extract(&self, turns: &[Turn]) -> mnemon::Result<Extraction> {
        if Self::modelled(turns) {
            self.model.extract(turns)
        } else {
            self.script.extract(turns)
        }
    }

    fn contract(&self) -> Contract {
        self.model.contract()
    }
}

/// The web page's reads on one user of `size` rounds, one every hour from 2024-01-01 in sessions
/// of `--session-rounds`: each round says one thing the scripted extractor turns into a fact, and
/// every tenth says the user moved (superseding the home before). Pages of 50, as the page asks.
///
/// With `--extractor`, the last 30 rounds of each size are [`MODEL_ROUNDS`], each added alone
/// and extracted by the model, and a second table gives their seconds per round: what ingest with
/// the extractor costs once the user's history holds the rest (after one untimed pass over them).
pub(super) fn run_browse(args: &Args) -> Result<()> {
    let embedder = args.models.embedder()?;
    let model = args.models.extractor()?;
    println!(
        "embedder: {} ({} dims), the web page's reads on one user",
        embedder.pins().name,
        embedder.pins().dim
    );
    let mut modelled = Vec::new();
    if let Some(model) = &model {
        // One untimed pass first: the model's weights paged in and its buffers grown, so that the
        // first size does not pay for them.
        for (user, reply) in MODEL_ROUNDS {
            model.extract(&[
                Turn::new(Role::User, user, "2024-01-01"),
                Turn::new(Role::Assistant, reply, "2024-01-01"),
            ])?;
        }
    }
    println!("| rounds | facts (superseded) | build (s) | build per round (ms) | timeline page p50 / p95 (ms) | timeline page through the service, as JSON, p50 / p95 (ms) | users (ms) | decisions of one kind, page p50 (ms) | activity (ms) |");
    println!("|---|---|---|---|---|---|---|---|---|");
    for &size in &args.sizes {
        let mut words = Words(size as u64 + 11);
        let start =
            chrono::NaiveDate::from_ymd_opt(2024, 1, 1).unwrap_or_default().and_time(chrono::NaiveTime::MIN);
        // The i-th round's time: one an hour.
        let at =
            |i: usize| (start + chrono::Duration::hours(i as i64)).format("%Y-%m-%dT%H:%M:%S").to_string();
        let mut script = serde_json::Map::new();
        let mut rounds = Vec::with_capacity(size);
        let history = match model {
            Some(_) => size.saturating_sub(MODEL_ROUNDS.len()),
            None => size,
        };
        for i in 0..history {
            let ts = at(i);
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
        let script = ScriptedExtractor::from_json("bench", &script)?;
        let extractor: Arc<dyn Extractor> = match &model {
            Some(model) => Arc::new(Windowed { script, model: model.clone() }),
            None => Arc::new(script),
        };
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
        if model.is_some() {
            let t = Instant::now();
            for (k, (user, reply)) in MODEL_ROUNDS.iter().take(size).enumerate() {
                let ts = at(history + k);
                let session = format!("m{k}");
                memory.add(
                    &[
                        Message::user(*user, ts.clone()).in_session(session.clone()),
                        Message::assistant(*reply, ts).in_session(session),
                    ],
                    "bench",
                )?;
            }
            modelled.push((size, t.elapsed().as_secs_f64() / MODEL_ROUNDS.len().min(size).max(1) as f64));
        }
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
            build_s * 1e3 / history.max(1) as f64,
            direct.0,
            direct.1,
            served.0,
            served.1,
            decisions.0,
        );
    }
    if let Some(&(_, first)) = modelled.first() {
        println!();
        println!(
            "| rounds | the last {} rounds with the extractor: s per round | ÷ the first size |",
            MODEL_ROUNDS.len()
        );
        println!("|---|---|---|");
        for (size, per_round) in modelled {
            println!("| {size} | {per_round:.3} | {:.3} |", per_round / first);
        }
    }
    Ok(())
}
