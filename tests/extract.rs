//! Extraction with a real GGUF through llama.cpp (SmolLM2-135M, fetched by scripts/fetch-models.sh):
//! the grammar file, bad model files, and byte-identical output.

use std::sync::OnceLock;

use mnemon::extract::{default_gguf, Extractor, LlamaConfig, LlamaExtractor, GRAMMAR, SCHEMA};
use mnemon::{Error, Role, Turn};

fn turn(role: Role, content: &str) -> Turn {
    Turn { role, content: content.into(), ts: "2024-03-01T10:00:00".into(), id: None, speaker: None }
}

fn smollm() -> &'static LlamaExtractor {
    static MODEL: OnceLock<LlamaExtractor> = OnceLock::new();
    MODEL.get_or_init(|| {
        let config = LlamaConfig { threads: 2, max_tokens: 160, ..LlamaConfig::default() };
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
    let round = [
        turn(Role::User, "I adopted a beagle named Toby last month. I live in Porto."),
        turn(Role::Assistant, "Congratulations on Toby! Porto has lovely riverside walks."),
    ];
    let m = smollm();
    let first = m.extract(&round).unwrap();
    assert!(first.generated_tokens > 0 && first.prompt_tokens > 100, "{first:?}");
    // Valid under the contract, or flagged: never anything in between.
    assert!(first.truncated || mnemon::extract::parse(&first.raw_output).is_some(), "{first:?}");
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
    let config = LlamaConfig { input_cap: 24, max_tokens: 8, ..LlamaConfig::default() };
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
