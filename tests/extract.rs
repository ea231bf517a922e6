//! Extraction with a real GGUF through llama.cpp (SmolLM2-135M, fetched by scripts/fetch-models.sh):
//! the grammar file, bad model files, and byte-identical output.
#![cfg(feature = "llama")]

use std::sync::OnceLock;

use mnemon::Error;
use mnemon::extract::{Contract, Extractor, LlamaConfig, LlamaExtractor, default_gguf};
use mnemon::internals::extract::{GRAMMAR, SCHEMA};
use mnemon::rounds::{Role, Turn};

fn turn(role: Role, content: &str) -> Turn {
    Turn::new(role, content, "2024-03-01T10:00:00")
}

/// One decode at a time: two tests decoding at once on 2 cores make llama.cpp's spinning thread
/// barriers wait on each other, and both slow down many times over.
fn one_decode_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static DECODING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    DECODING.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn smollm() -> &'static LlamaExtractor {
    static MODEL: OnceLock<LlamaExtractor> = OnceLock::new();
    MODEL.get_or_init(|| {
        let config =
            LlamaConfig { threads: 2, max_tokens: 160, contract: Contract::Open, ..LlamaConfig::default() };
        LlamaExtractor::load(default_gguf("SmolLM2-135M-Instruct.Q4_1.gguf"), config).unwrap()
    })
}

/// The same with a tighter token bound, for the tests that decode many rounds to compare their
/// bytes: SmolLM2 repeats its input until the bound, so the bound is what a round costs.
fn smollm_short() -> &'static LlamaExtractor {
    static MODEL: OnceLock<LlamaExtractor> = OnceLock::new();
    MODEL.get_or_init(|| {
        let config =
            LlamaConfig { threads: 2, max_tokens: 48, contract: Contract::Open, ..LlamaConfig::default() };
        LlamaExtractor::load(default_gguf("SmolLM2-135M-Instruct.Q4_1.gguf"), config).unwrap()
    })
}

#[test]
fn the_grammar_file_is_what_llama_cpp_makes_of_the_schema() {
    let generated = llama_cpp_2::json_schema_to_grammar(SCHEMA).unwrap();
    if std::env::var_os("MNEMON_BLESS").is_some() {
        std::fs::write(concat!(env!("CARGO_MANIFEST_DIR"), "/grammars/facts.gbnf"), &generated).unwrap();
        return;
    }
    assert_eq!(GRAMMAR, generated, "regenerate with MNEMON_BLESS=1 cargo test --test extract");
}

#[test]
fn a_missing_truncated_or_foreign_model_file_is_a_typed_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let check = |path: &std::path::Path, why: &str| match LlamaExtractor::load(path, LlamaConfig::default()) {
        Err(Error::ModelUnavailable { path: p, reason, fix }) => {
            assert_eq!(p, path);
            assert!(reason.contains(why), "{reason}");
            assert!(fix.contains("scripts/fetch-models.sh"), "{fix}");
        }
        Err(e) => panic!("{}: {e}", path.display()),
        Ok(_) => panic!("{} loaded", path.display()),
    };
    check(&dir.path().join("absent.gguf"), "No such file");
    let foreign = dir.path().join("model.onnx");
    std::fs::write(&foreign, b"\x08\x07onnx not gguf").unwrap();
    check(&foreign, "not a GGUF");
    let empty = dir.path().join("empty.gguf");
    std::fs::write(&empty, b"").unwrap();
    check(&empty, "shorter");
    let whole = std::fs::read(default_gguf("SmolLM2-135M-Instruct.Q4_1.gguf")).unwrap();
    let cut = dir.path().join("cut.gguf");
    std::fs::write(&cut, &whole[..whole.len() / 3]).unwrap();
    check(&cut, "could not load");
}

#[test]
fn the_same_round_gives_the_same_bytes_every_time() {
    let _decoding = one_decode_at_a_time();
    let round = [
        turn(Role::User, "I adopted a beagle named Toby last month. I live in Porto."),
        turn(Role::Assistant, "Congratulations on Toby! Porto has lovely riverside walks."),
    ];
    let m = smollm();
    let first = m.extract(&round).unwrap();
    assert!(first.generated_tokens > 0 && first.prompt_tokens > 100, "{first:?}");
    // A short round ends well within the bound, and its facts are its parsed output...
    assert!(!first.truncated && first.generated_tokens < 160, "{first:?}");
    assert_eq!(mnemon::internals::extract::parse(&first.raw_output).as_ref(), Some(&first.facts));
    // ...while a decode cut at the bound is flagged, and none of its half-written facts kept.
    let bound = first.generated_tokens - 1;
    let config = LlamaConfig { max_tokens: bound, contract: Contract::Open, ..LlamaConfig::default() };
    let cut = LlamaExtractor::load(default_gguf("SmolLM2-135M-Instruct.Q4_1.gguf"), config).unwrap();
    let cut = cut.extract(&round).unwrap();
    assert!(cut.truncated && cut.facts.is_empty() && cut.generated_tokens == bound, "{cut:?}");
    assert!(first.raw_output.starts_with(&cut.raw_output), "the same decode, cut short");
    for _ in 0..2 {
        assert_eq!(m.extract(&round).unwrap(), first);
    }
    let pins = m.pins();
    assert_eq!(pins.quant, "Q4_1");
    assert_eq!(pins.model_blake3.len(), 64);
    assert!(pins.runtime.starts_with("llama-cpp-2"));
}

/// The prompt's head is decoded once and restored into each round's fresh context: what came
/// before never changes a round's output.
#[test]
fn a_round_gives_the_same_bytes_first_or_after_others() {
    let _decoding = one_decode_at_a_time();
    let round =
        [turn(Role::User, "My sister Ana moved to Lisbon in May."), turn(Role::Assistant, "Lovely city!")];
    let other = [turn(Role::User, "I run 10 km every Sunday with my dog Rex.")];
    let fresh = smollm().extract(&round).unwrap();
    let warm = smollm();
    warm.extract(&other).unwrap();
    warm.extract(&[turn(Role::User, &"a long turn about nothing ".repeat(60))]).unwrap();
    assert_eq!(warm.extract(&round).unwrap(), fresh);
}

#[test]
fn the_input_cap_keeps_the_user_turn_and_cuts_the_reply() {
    let _decoding = one_decode_at_a_time();
    let config =
        LlamaConfig { input_cap: 24, max_tokens: 8, contract: Contract::Open, ..LlamaConfig::default() };
    let m = LlamaExtractor::load(default_gguf("SmolLM2-135M-Instruct.Q4_1.gguf"), config).unwrap();
    let long_reply = "word ".repeat(400);
    let short = m.extract(&[turn(Role::User, "I live in Porto."), turn(Role::Assistant, "Nice.")]).unwrap();
    let long =
        m.extract(&[turn(Role::User, "I live in Porto."), turn(Role::Assistant, &long_reply)]).unwrap();
    // The reply is cut to what fits in 24 tokens beside the user turn.
    assert!(
        long.prompt_tokens <= short.prompt_tokens + 24,
        "{} vs {}",
        long.prompt_tokens,
        short.prompt_tokens
    );
    assert!(long.generated_tokens <= 8 && short.generated_tokens <= 8);
}

/// A scripted extractor: an explicit test double for the cache's bookkeeping.
struct Scripted {
    calls: std::sync::atomic::AtomicUsize,
    prompt: String,
}

impl Extractor for Scripted {
    fn pins(&self) -> mnemon::extract::ExtractorPins {
        mnemon::extract::ExtractorPins {
            name: "scripted".into(),
            model_blake3: "0".repeat(64),
            quant: "none".into(),
            runtime: "test".into(),
            decode: "greedy".into(),
            prompt: self.prompt.clone(),
        }
    }
    fn extract(&self, turns: &[Turn]) -> mnemon::Result<mnemon::extract::Extraction> {
        self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let out = if turns[0].content.contains("cut") {
            r#"[{"content":"The user"#.to_string()
        } else {
            format!(
                r#"[{{"content":"The user said {}.","raw":"user: {}","when":null,"subject":null,"predicate":null,"object":null,"salience":1.0}}]"#,
                turns[0].content, turns[0].content
            )
        };
        Ok(mnemon::extract::Extraction::from_output(out, false, 10, 5))
    }
}

fn scripted(prompt: &str) -> Scripted {
    Scripted { calls: Default::default(), prompt: prompt.into() }
}

#[test]
fn the_cache_serves_identical_rounds_once_and_refuses_other_pins() {
    use mnemon::extract::CachedExtractor;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("extract.db");
    let cache = CachedExtractor::open(&path, scripted("p1")).unwrap();
    let a = [turn(Role::User, "kayak")];
    let mut other_ts = a.clone();
    other_ts[0].ts = "1999-01-01T00:00:00".into();
    let first = cache.extract(&a).unwrap();
    assert_eq!(first.facts.len(), 1);
    assert_eq!(cache.extract(&other_ts).unwrap(), first, "the timestamp is not part of the key");
    let cut = cache.extract(&[turn(Role::User, "cut")]).unwrap();
    assert!(cut.truncated && cut.facts.is_empty());
    assert_eq!(
        cache.extract(&[turn(Role::User, "cut")]).unwrap(),
        cut,
        "a truncated output is cached as such"
    );
    assert_eq!(cache.stats(), (2, 2));
    assert_eq!(cache.inner().calls.load(std::sync::atomic::Ordering::SeqCst), 2);
    drop(cache);

    // Another process (here: another handle) reads the same file.
    let again = CachedExtractor::open(&path, scripted("p1")).unwrap();
    assert_eq!(again.extract(&a).unwrap(), first);
    assert_eq!(again.inner().calls.load(std::sync::atomic::Ordering::SeqCst), 0);
    drop(again);

    match CachedExtractor::open(&path, scripted("p2")) {
        Err(Error::PinMismatch { differences }) => {
            assert_eq!(differences.len(), 1);
            assert_eq!(differences[0].key, "extractor.prompt");
            assert_eq!(differences[0].stored.as_deref(), Some("p1"));
        }
        other => panic!("{:?}", other.err()),
    }
}

/// A 32-round conversation over four sessions: facts, asides, updates and small talk.
fn long_conversation() -> Vec<mnemon::Message> {
    let user = [
        "Hi! I'm Maya, I moved to Porto last spring for a job at a design studio.",
        "My sister Ana is visiting me next week, she lives in Berlin.",
        "I have a cat named Pixel who hates the rain.",
        "ok thanks!",
        "I've been learning Portuguese for six months now.",
        "Can you suggest a good bakery near Ribeira?",
        "By the way, I'm allergic to peanuts.",
        "I run 5 km every Tuesday and Thursday morning.",
        "My favourite band is Radiohead, I saw them live in 2017.",
        "What's a good gift for Ana? She loves ceramics.",
        "I bought a used bike for 120 euros yesterday.",
        "I'm thinking of adopting a second cat.",
        "My studio is working on a new logo for a wine brand.",
        "I started therapy in January, it helps a lot.",
        "Lol that's funny.",
        "My partner Joao is a chef at a seafood restaurant.",
        "We are planning a trip to the Azores in August.",
        "I need to renew my passport before the trip.",
        "My mom's birthday is on March 3rd.",
        "I prefer tea over coffee, mostly green tea.",
        "Actually I moved to Lisbon last month, the studio opened a new office there.",
        "Pixel adjusted well to the new flat in Lisbon.",
        "I've switched to running on Saturdays instead.",
        "Joao got a new job at a restaurant in Alfama.",
        "Thanks, that's all for today.",
        "I finished my first Portuguese exam with a B2 grade.",
        "We booked the Azores flights for August 12th.",
        "I'm reading a novel by Saramago in Portuguese.",
        "My bike got stolen last week, so annoying.",
        "I'm now saving up for an electric bike, about 1500 euros.",
        "Ana is moving to Lisbon too, in October.",
        "Remind me what I told you about my allergies?",
    ];
    let sessions =
        ["2024-03-01T10:00:00", "2024-03-15T18:30:00", "2024-04-20T09:15:00", "2024-05-02T20:00:00"];
    let mut out = Vec::new();
    for (i, text) in user.iter().enumerate() {
        let ts = sessions[i / 8];
        let session = format!("s{}", i / 8);
        out.push(mnemon::Message::user(*text, ts).in_session(&session));
        // Small talk gets no reply, so its round is the user turn alone, which the pre-filter skips.
        if !["ok thanks!", "Lol that's funny.", "Thanks, that's all for today."].contains(text) {
            out.push(mnemon::Message::assistant("Noted, thanks for telling me.", ts).in_session(&session));
        }
    }
    out
}

/// Extraction is order-independent: the store after the background queue drains equals, byte for byte in every
/// export, the store extracted inline, with a real model on a 16-round conversation added one
/// exchange at a time. Each run has its own extraction cache, so each runs the model on every
/// round: inline one round per call, the worker as many as it finds queued, decoded together.
#[test]
fn background_extraction_ends_where_inline_extraction_does_with_smollm2() {
    let _decoding = one_decode_at_a_time();
    use std::sync::Arc;

    use mnemon::Memory;
    use mnemon::config::Config;
    use mnemon::embed::HashingEmbedder;
    use mnemon::export::ExportFormat;
    use mnemon::extract::CachedExtractor;

    let dir = tempfile::tempdir().unwrap();
    let config =
        LlamaConfig { threads: 2, max_tokens: 128, contract: Contract::Open, ..LlamaConfig::default() };
    // Each store its own cache: both runs go through the model (the worker several rounds at a
    // time, as it finds them queued; the inline path one round per call).
    let cached = |name: &str| {
        let model =
            LlamaExtractor::load(default_gguf("SmolLM2-135M-Instruct.Q4_1.gguf"), config.clone()).unwrap();
        Arc::new(CachedExtractor::open(dir.path().join(name), model).unwrap())
    };
    let (inline_cache, background_cache) = (cached("inline-cache.db"), cached("background-cache.db"));
    let open = |name: &str, extractor: Arc<dyn Extractor>, background: bool| {
        let config = Config { background_extraction: background, ..Config::default() };
        Memory::builder(dir.path().join(name))
            .embedder(HashingEmbedder::default())
            .extractor(extractor)
            .config(config)
            .open()
            .unwrap()
    };
    let inline = open("inline.db", inline_cache.clone(), false);
    let background = open("background.db", background_cache.clone(), true);
    // The first session (with small talk the pre-filter skips) and the last (an exam, a stolen
    // bike, a move: SmolLM2 finds facts there, as it does not in the two between).
    let conversation = sessions(["s0", "s3"]);
    // A chat loop: one call per exchange (a user turn and its reply, if any).
    let exchanges: Vec<&[mnemon::Message]> =
        conversation.chunk_by(|_, b| b.role == mnemon::rounds::Role::Assistant).collect();
    for exchange in &exchanges {
        inline.add(exchange, "maya").unwrap();
    }
    for exchange in &exchanges {
        background.add(exchange, "maya").unwrap();
    }
    background.flush().unwrap();
    assert_eq!(background.pending(None).unwrap(), 0);
    let sent = inline_cache.stats().1;
    assert!(sent > 10, "the inline run sent {sent} rounds to the model");
    assert_eq!(background_cache.stats(), (0, sent), "the background run decoded every round itself");
    assert_eq!(inline.rounds("maya").unwrap().len(), 16);
    let facts = inline.active_facts("maya").unwrap();
    assert!(!facts.is_empty(), "SmolLM2 extracted nothing from 16 rounds");
    for format in [ExportFormat::Markdown, ExportFormat::Text, ExportFormat::Jsonl] {
        assert_eq!(inline.export(format, "maya").unwrap(), background.export(format, "maya").unwrap());
    }
    let text = inline.export(ExportFormat::Text, "maya").unwrap();
    assert!(text.contains(" round.prefiltered "), "the small talk skips the model: {text}");
}

/// Closing a store cancels a decode in progress: the flag is seen before the prompt and between
/// tokens, and a cancelled decode leaves nothing behind (the round then gives its usual bytes).
#[test]
fn a_decode_gives_up_when_cancelled_and_leaves_no_trace() {
    let _decoding = one_decode_at_a_time();
    use std::sync::atomic::{AtomicBool, Ordering};
    let round = [
        turn(Role::User, "I work as a nurse at the city hospital, night shifts mostly."),
        turn(Role::Assistant, "Night shifts are demanding; remember to rest."),
    ];
    let m = smollm();
    let before = m.extract(&round).unwrap();
    let set = AtomicBool::new(true);
    assert!(matches!(m.extract_cancellable(&round, &set), Err(Error::Cancelled)));
    let cancel = AtomicBool::new(false);
    let cancelled = std::thread::scope(|s| {
        s.spawn(|| {
            // Well inside the prompt's decode (hundreds of milliseconds) or the first tokens.
            std::thread::sleep(std::time::Duration::from_millis(200));
            cancel.store(true, Ordering::SeqCst);
        });
        m.extract_cancellable(&round, &cancel)
    });
    assert!(matches!(cancelled, Err(Error::Cancelled)), "{cancelled:?}");
    assert_eq!(m.extract_cancellable(&round, &AtomicBool::new(false)).unwrap(), before);
}

/// Two of `long_conversation`'s four sessions: 16 rounds at half the decoding time of all 32.
fn sessions(which: [&str; 2]) -> Vec<mnemon::Message> {
    long_conversation().into_iter().filter(|m| which.contains(&m.session.as_deref().unwrap())).collect()
}

/// The rounds of the first two sessions as turns (a user turn and its reply, if any): facts and
/// small talk, enough to fill groups of every size the tests try.
fn conversation_rounds() -> Vec<Vec<Turn>> {
    let mut rounds: Vec<Vec<Turn>> = Vec::new();
    for m in sessions(["s0", "s1"]) {
        let role = m.role;
        let t = turn(role, &m.content);
        match (role, rounds.last_mut()) {
            (Role::Assistant, Some(last)) => last.push(t),
            _ => rounds.push(vec![t]),
        }
    }
    rounds
}

/// The conversation's rounds decoded one at a time by the short, drafting extractor, with what
/// each decode cost: the reference both byte tests below compare against, decoded once for both.
fn decoded_alone() -> &'static [(mnemon::extract::Extraction, mnemon::extract::Speed)] {
    static ALONE: OnceLock<Vec<(mnemon::extract::Extraction, mnemon::extract::Speed)>> = OnceLock::new();
    ALONE.get_or_init(|| {
        conversation_rounds().iter().map(|r| smollm_short().extract_measured(r).unwrap()).collect()
    })
}

/// Rounds decoded together (one sequence each in one context) give the bytes each gives alone,
/// in any grouping and order. The extractor drafts (prompt lookup, 8 tokens), so this is also
/// where a drafted round is shown to keep its bytes in a group.
#[test]
fn a_round_gives_the_same_bytes_alone_or_decoded_with_others() {
    let _decoding = one_decode_at_a_time();
    let m = smollm_short();
    assert_eq!(m.config().draft, 8, "the groups below are drafted");
    let rounds = conversation_rounds();
    let alone = decoded_alone();
    let no = std::sync::atomic::AtomicBool::new(false);
    for size in [3, 8] {
        let mut order: Vec<usize> = (0..rounds.len()).collect();
        if size == 3 {
            order.reverse();
        }
        for group in order.chunks(size) {
            let refs: Vec<&[Turn]> = group.iter().map(|&i| rounds[i].as_slice()).collect();
            let (outcomes, _) = m.extract_batch_measured(&refs, &no).unwrap();
            for (&i, outcome) in group.iter().zip(outcomes) {
                assert_eq!(outcome.unwrap(), alone[i].0, "round {i} in a group of {size}");
            }
        }
    }
}

/// Drafted tokens (prompt lookup) are kept only where greedy choice agrees, so a drafted round
/// takes fewer decodes than tokens (and keeps its bytes in any group: the test above decodes its
/// groups with this extractor). Not the undrafted bytes in general: a step of several rows of one
/// round takes other kernels for its attention (tinyBLAS on the F16 cache in the default build),
/// so a drafted decode is its own deterministic arithmetic, pinned by the draft length.
#[test]
fn drafted_tokens_keep_a_round_s_bytes_in_any_group_in_fewer_decodes() {
    let _decoding = one_decode_at_a_time();
    let drafted = smollm_short();
    assert_eq!(drafted.config().draft, 8, "drafts are on by default");
    assert_eq!(drafted.batch_size(), 1, "a drafting extractor decodes one round at a time");
    let config = LlamaConfig {
        threads: 2,
        max_tokens: 48,
        draft: 0,
        contract: Contract::Open,
        ..LlamaConfig::default()
    };
    let plain = LlamaExtractor::load(default_gguf("SmolLM2-135M-Instruct.Q4_1.gguf"), config).unwrap();
    assert_ne!(plain.pins().decode, drafted.pins().decode, "the draft length is pinned");
    let rounds = conversation_rounds();
    let no = std::sync::atomic::AtomicBool::new(false);
    // Undrafted, a decode per token (the last one chosen is decoded only if generation goes on).
    let (_, speed) = plain.extract_batch_measured(&[rounds[0].as_slice()], &no).unwrap();
    assert!(speed.generation_steps + 1 >= speed.generated_tokens, "{speed:?}");
    // Drafted, fewer decodes than tokens; and a round alone gives the same bytes through the
    // batch path as through `extract`.
    let (mut tokens, mut steps) = (0, 0);
    for (extraction, speed) in decoded_alone() {
        tokens += speed.generated_tokens;
        steps += speed.generation_steps;
        assert_eq!(extraction.generated_tokens, speed.generated_tokens);
    }
    assert!(steps > 0 && steps < tokens * 3 / 4, "{tokens} tokens in {steps} decodes");
    let (mut one, _) = drafted.extract_batch_measured(&[rounds[3].as_slice()], &no).unwrap();
    assert_eq!(one.pop().unwrap().unwrap(), decoded_alone()[3].0, "one round through the batch path");
}

#[test]
fn the_closed_contract_keeps_predicates_in_its_vocabulary_and_facts_with_their_turn() {
    let _decoding = one_decode_at_a_time();
    let config = LlamaConfig {
        threads: 2,
        max_tokens: 240,
        contract: mnemon::extract::Contract::Closed,
        ..LlamaConfig::default()
    };
    let m = LlamaExtractor::load(default_gguf("SmolLM2-135M-Instruct.Q4_1.gguf"), config).unwrap();
    // Another contract is another prompt, as the pins say; the open one's pin is unchanged.
    assert_ne!(m.pins().prompt, smollm().pins().prompt);
    assert_eq!(smollm().pins().prompt, mnemon::internals::extract::prompt_blake3());
    let vocabulary = mnemon::internals::normalize::closed_predicates();
    assert!(vocabulary.iter().any(|p| p == "lives in") && vocabulary.iter().any(|p| p == "dislike"));

    // What decoding enforces, on outputs SmolLM2 would not write on its own (it answers `[]` to
    // such rounds under either contract).
    // The fields in the contract's order (the grammar fixes it).
    let item = |content: &str, predicate: &str| {
        format!(
            r#"[{{"content":"{content}","raw":"user: now I only drive the Subaru Outback","when":null,"subject":"user","predicate":"{predicate}","object":"the Subaru Outback","salience":1.0}}]"#
        )
    };
    let drive = "The user now drives only the Subaru Outback.";
    let keeps = item(drive, "drives");
    let free_predicate = item(drive, "is driving");
    let misattributed = item("The assistant drives the Subaru Outback.", "other");
    let open = smollm();
    for (output, under_closed) in [(&keeps, true), (&free_predicate, false), (&misattributed, false)] {
        assert!(open.grammar_allows(&[], output).unwrap(), "open: {output}");
        assert_eq!(m.grammar_allows(&[], output).unwrap(), under_closed, "closed: {output}");
    }
    assert!(m.grammar_allows(&[], "[]").unwrap());
    assert!(!m.grammar_allows(&[], &keeps[..keeps.len() - 1]).unwrap(), "a cut array does not end");

    // And the model decodes under it: whatever it writes keeps to it.
    let round = [
        turn(
            Role::User,
            "We finally sold the old Honda last weekend, so now I only drive the Subaru Outback.",
        ),
        turn(Role::Assistant, "Nice! The Outback is great in snow. I recommend winter tires."),
    ];
    let out = m.extract(&round).unwrap();
    assert!(!out.truncated && m.grammar_allows(&round, &out.raw_output).unwrap(), "{out:?}");
    for f in &out.facts {
        if let Some(p) = &f.predicate {
            assert!(p == "other" || vocabulary.contains(p), "predicate {p:?} is outside the vocabulary");
        }
        let by = if f.content.starts_with("The assistant ") { "assistant: " } else { "user: " };
        assert!(f.raw.starts_with(by), "{f:?}");
    }
}

#[test]
fn the_slots_contract_reads_candidates_only_and_keeps_facts_to_their_sentences() {
    use mnemon::extract::slots;
    let _decoding = one_decode_at_a_time();
    let config = LlamaConfig {
        threads: 2,
        max_tokens: 160,
        contract: mnemon::extract::Contract::Slots,
        ..LlamaConfig::default()
    };
    let m = LlamaExtractor::load(default_gguf("SmolLM2-135M-Instruct.Q4_1.gguf"), config).unwrap();
    assert_ne!(m.pins().prompt, smollm().pins().prompt, "another contract is another prompt pin");

    // What decoding enforces: records with a candidate's number, a relation from the list, and
    // a value (and an entity) copied from that candidate's words.
    let round = [
        turn(
            Role::User,
            "Can you suggest a frame? By the way, I've added 25 new postcards to my collection since March.",
        ),
        turn(Role::Assistant, "A floating frame works well for postcards."),
    ];
    let record = |n: &str, entity: &str, relation: &str, value: &str| {
        format!(r#"[{{"n":{n},"entity":"{entity}","relation":"{relation}","value":"{value}"}}]"#)
    };
    let allows = |output: &str| m.grammar_allows(&round, output).unwrap();
    assert!(allows(&record("1", "postcards", "count", "25")));
    assert!(allows(&record("1", "new postcards", "count", "25 new postcards")));
    assert!(allows(&record("1", "I", "did", "added 25 new postcards")));
    assert!(allows("[]"));
    assert!(!allows(&record("1", "postcards", "number", "25")), "a relation outside the list");
    assert!(!allows(&record("2", "postcards", "count", "25")), "past the last candidate number");
    assert!(!allows(&record("1", "postcards", "count", "26")), "a value the sentence does not hold");
    assert!(!allows(&record("1", "postcards", "count", "25 postcards")), "words not together");
    assert!(!allows(&record("1", "stamps", "count", "25")), "an entity the sentence does not hold");
    assert!(!allows(&record("1", "postcards", "count", "March.")), "punctuation is not copied");
    assert!(
        !smollm().grammar_allows(&round, &record("1", "postcards", "count", "25")).unwrap(),
        "not the open contract"
    );

    // A round without a candidate sentence does not reach the model.
    let idle = [turn(Role::User, "What's the capital of Australia?"), turn(Role::Assistant, "Canberra.")];
    let out = m.extract(&idle).unwrap();
    assert_eq!((out.raw_output.as_str(), out.prompt_tokens, out.generated_tokens), ("[]", 0, 0));

    // A round with one: whatever the model writes keeps to the grammar, and every fact it keeps
    // is a candidate sentence, in the third person, with the same bytes on a second call.
    let candidates = slots::candidates(&round);
    assert_eq!(candidates.len(), 1);
    let out = m.extract(&round).unwrap();
    assert!(out.prompt_tokens > 0 && m.grammar_allows(&round, &out.raw_output).unwrap(), "{out:?}");
    for f in &out.facts {
        assert_eq!(f.raw, format!("user: {}", candidates[0].text));
        assert!(f.content.starts_with("The user has added 25 new postcards"), "{f:?}");
    }
    assert_eq!(m.extract(&round).unwrap(), out, "byte-identical");
}
