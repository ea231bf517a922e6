//! Write-time fact extraction: the [`Extractor`] trait, the output contract and its strict parser.
//!
//! An extractor reads one round and returns at most five atomic facts, each a self-contained
//! sentence with a verbatim excerpt, an optional time mention, an optional triple and a salience.
//! The contract is `grammars/facts.schema.json`. [`LlamaExtractor`] decodes under the GBNF grammar
//! generated from that schema (`grammars/facts.gbnf`), so it always emits valid JSON when it
//! finishes. [`parse`] still checks every field: output that is not exactly the contract is an
//! empty extraction flagged `truncated`, and half an array is never salvaged.

mod cache;
#[cfg(feature = "llama")]
mod llama;
mod scripted;
pub mod slots;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::Result;
use crate::model::round::Turn;

pub use cache::{CachedExtractor, round_key};
#[cfg(feature = "llama")]
pub use llama::{
    DEFAULT_GGUF, Generated, LlamaConfig, LlamaExtractor, LlamaReader, RUNTIME, ReaderPins, Speed,
    default_gguf, kernels, row_invariant,
};
pub use scripted::ScriptedExtractor;

/// The output contract, as a JSON schema.
pub const SCHEMA: &str = include_str!("../../../grammars/facts.schema.json");
/// The GBNF grammar generated from [`SCHEMA`] by llama.cpp's converter (a test regenerates it).
pub const GRAMMAR: &str = include_str!("../../../grammars/facts.gbnf");
/// The prompt: the system text, then worked examples as chat turns, each after a `--- user ---`
/// or `--- assistant ---` line.
pub const PROMPT: &str = include_str!("../../../prompts/extract.md");
/// At most this many facts per round.
pub const MAX_FACTS: usize = 5;
/// The salience values a fact may carry: durable user facts, the assistant's recommendations or
/// decisions for the user, anything else.
pub const SALIENCES: [f32; 3] = [1.0, 0.5, 0.25];

/// One fact as the extractor wrote it (before verification, resolution and normalization).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExtractedFact {
    /// One self-contained sentence ("The user …").
    pub content: String,
    /// The verbatim excerpt it comes from, with its role prefix.
    pub raw: String,
    /// A time mention copied from the excerpt.
    pub when: Option<String>,
    /// Triple subject.
    pub subject: Option<String>,
    /// Triple predicate.
    pub predicate: Option<String>,
    /// Triple object.
    pub object: Option<String>,
    /// 1.0, 0.5 or 0.25.
    pub salience: f32,
}

/// What one extraction call produced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Extraction {
    /// The facts (empty when the output broke the contract).
    pub facts: Vec<ExtractedFact>,
    /// The model's output, verbatim (what the cache keeps).
    pub raw_output: String,
    /// The output broke the contract or stopped at the token bound.
    pub truncated: bool,
    /// Prompt tokens decoded.
    pub prompt_tokens: usize,
    /// Tokens generated.
    pub generated_tokens: usize,
}

impl Extraction {
    /// An extraction from the model's raw output, parsed strictly; `stopped` when decoding hit the
    /// token bound before the grammar completed.
    pub fn from_output(
        raw_output: String,
        stopped: bool,
        prompt_tokens: usize,
        generated_tokens: usize,
    ) -> Self {
        Self::from_contract_output(Contract::Open, &[], raw_output, stopped, prompt_tokens, generated_tokens)
    }

    /// [`from_output`](Extraction::from_output) under `contract`, for the round `turns` (the slots
    /// contract reads its records against the round's candidate sentences).
    pub fn from_contract_output(
        contract: Contract,
        turns: &[Turn],
        raw_output: String,
        stopped: bool,
        prompt_tokens: usize,
        generated_tokens: usize,
    ) -> Self {
        let facts = if stopped { None } else { contract.parse(&raw_output, turns) };
        Extraction {
            truncated: facts.is_none(),
            facts: facts.unwrap_or_default(),
            raw_output,
            prompt_tokens,
            generated_tokens,
        }
    }
}

/// What an extractor's output depends on; enters the store's and the cache's pins.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExtractorPins {
    /// Model file name.
    pub name: String,
    /// blake3 of the model file.
    pub model_blake3: String,
    /// Quantization (from the GGUF's `general.file_type`).
    pub quant: String,
    /// The inference runtime and its version.
    pub runtime: String,
    /// blake3 of the decode settings (greedy, context, batch, input cap, token bound).
    pub decode: String,
    /// blake3 of the prompt, the schema and the grammar.
    pub prompt: String,
}

/// Reads one round and returns its facts. Implementations must be deterministic: the same turns
/// give the same bytes of output on every call, in every process (same build, same CPU type).
pub trait Extractor: Send + Sync {
    /// What the output depends on.
    fn pins(&self) -> ExtractorPins;
    /// Extracts the facts of one round (its turns in order).
    fn extract(&self, turns: &[Turn]) -> Result<Extraction>;

    /// [`extract`](Extractor::extract), giving up with [`Error::Cancelled`](crate::Error::Cancelled)
    /// soon after `cancel` is set (a model checks it between tokens). The default does not look.
    fn extract_cancellable(
        &self,
        turns: &[Turn],
        cancel: &std::sync::atomic::AtomicBool,
    ) -> Result<Extraction> {
        let _ = cancel;
        self.extract(turns)
    }

    /// Extracts several rounds, each exactly as [`extract_cancellable`](Extractor::extract_cancellable)
    /// would alone: an outcome per round, in order, or an error that stops them all
    /// ([`Error::Cancelled`](crate::Error::Cancelled)). The default extracts them one at a time;
    /// a model that decodes rounds together overrides it.
    fn extract_batch(
        &self,
        rounds: &[&[Turn]],
        cancel: &std::sync::atomic::AtomicBool,
    ) -> Result<Vec<Result<Extraction>>> {
        let mut out = Vec::with_capacity(rounds.len());
        for turns in rounds {
            match self.extract_cancellable(turns, cancel) {
                Err(crate::Error::Cancelled) => return Err(crate::Error::Cancelled),
                outcome => out.push(outcome),
            }
        }
        Ok(out)
    }

    /// The output contract its raw output is read under (a cache re-parses stored outputs with
    /// it). The default is the open contract.
    fn contract(&self) -> Contract {
        Contract::Open
    }

    /// How many rounds [`extract_batch`](Extractor::extract_batch) is best given at once. The
    /// default, 1, says more at once gain nothing.
    fn batch_size(&self) -> usize {
        1
    }

    /// Drops anything kept about this round (a cache's entry), after it was deleted. The
    /// default keeps nothing, so does nothing.
    fn forget(&self, turns: &[Turn]) -> Result<()> {
        let _ = turns;
        Ok(())
    }

    /// After [`forget`](Extractor::forget): leaves no forgotten byte in a log (a cache empties
    /// its write-ahead log). True when nothing is left; false when another connection's read
    /// kept the log. The default keeps nothing, so is done.
    fn checkpoint(&self) -> Result<bool> {
        Ok(true)
    }
}

/// A shared extractor is an extractor.
impl<X: Extractor + ?Sized> Extractor for std::sync::Arc<X> {
    fn pins(&self) -> ExtractorPins {
        (**self).pins()
    }
    fn extract(&self, turns: &[Turn]) -> Result<Extraction> {
        (**self).extract(turns)
    }
    fn extract_cancellable(
        &self,
        turns: &[Turn],
        cancel: &std::sync::atomic::AtomicBool,
    ) -> Result<Extraction> {
        (**self).extract_cancellable(turns, cancel)
    }
    fn extract_batch(
        &self,
        rounds: &[&[Turn]],
        cancel: &std::sync::atomic::AtomicBool,
    ) -> Result<Vec<Result<Extraction>>> {
        (**self).extract_batch(rounds, cancel)
    }
    fn contract(&self) -> Contract {
        (**self).contract()
    }
    fn batch_size(&self) -> usize {
        (**self).batch_size()
    }
    fn forget(&self, turns: &[Turn]) -> Result<()> {
        (**self).forget(turns)
    }
    fn checkpoint(&self) -> Result<bool> {
        (**self).checkpoint()
    }
}

/// The output contract an extractor decodes under.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Contract {
    /// [`SCHEMA`] and [`GRAMMAR`] as they are: `predicate` is free text.
    Open,
    /// `predicate` from a closed vocabulary ([`crate::facts::normalize::closed_predicates`], the relations
    /// the conflict rules act on, or `other`), and a fact about the assistant only from the
    /// assistant's turn (its `raw` must begin `assistant: `; a fact about the user, `user: `).
    /// The prompt names the vocabulary, and its examples follow it.
    Closed,
    /// The model reads only the round's candidate sentences and fills one record per fact
    /// (`n`, `entity`, `relation` from a closed vocabulary, `value`); the fact's text and
    /// excerpt are the sentence itself ([`slots`]). A round without a candidate skips the model.
    /// The default: it beats the open contract on every measured figure (docs/DECISIONS.md,
    /// "Slots facts v5: descriptions").
    #[default]
    Slots,
}

impl Contract {
    /// The GBNF grammar for the round `turns`: [`GRAMMAR`]; for `Closed` [`GRAMMAR`] with its
    /// predicate and its content / raw pair replaced; for `Slots` one made from the round's
    /// candidates, whose values are spans of their sentences ([`slots::grammar`]).
    pub fn grammar(self, turns: &[Turn]) -> String {
        match self {
            Contract::Open => GRAMMAR.to_owned(),
            Contract::Closed => closed_grammar(),
            Contract::Slots => slots::grammar(&slots::candidates(turns)),
        }
    }

    /// The prompt text: [`PROMPT`], or for `Closed` [`PROMPT`] with the vocabulary named in the
    /// instructions and the examples' free predicates written as `other`.
    pub fn prompt(self) -> String {
        match self {
            Contract::Open => PROMPT.to_owned(),
            Contract::Slots => slots::PROMPT.to_owned(),
            Contract::Closed => {
                let list: Vec<String> =
                    super::normalize::closed_predicates().iter().map(|p| format!("\"{p}\"")).collect();
                let rule = format!(
                    "\n\"predicate\" is one of {}, or \"other\" when none fits. A fact beginning \"The assistant\" \
                     quotes the assistant's turn; a fact beginning \"The user\" quotes the user's turn.\n--- user ---",
                    list.join(", ")
                );
                PROMPT
                    .replacen("\n--- user ---", &rule, 1)
                    .replace(r#""predicate":"starts at""#, r#""predicate":"other""#)
                    .replace(r#""predicate":"recommended""#, r#""predicate":"other""#)
            }
        }
    }

    /// blake3 of the prompt, schema and grammar texts, in a fixed framing (the open contract's
    /// is [`prompt_blake3`]).
    pub fn prompt_blake3(self) -> String {
        let framed = match self {
            Contract::Slots => serde_json::json!({
                "prompt": self.prompt(),
                "grammar": slots::GRAMMAR_VERSION,
                "relations": slots::RELATIONS,
                "candidates": slots::rules_blake3(),
            }),
            _ => {
                serde_json::json!({ "prompt": self.prompt(), "schema": SCHEMA, "grammar": self.grammar(&[]) })
            }
        };
        blake3::hash(framed.to_string().as_bytes()).to_hex().to_string()
    }

    /// Parses a model's output for the round `turns` under this contract: the facts, or `None`
    /// when the output is off contract.
    pub fn parse(self, output: &str, turns: &[Turn]) -> Option<Vec<ExtractedFact>> {
        match self {
            Contract::Open | Contract::Closed => parse(output),
            Contract::Slots => slots::parse(output, turns),
        }
    }
}

/// [`GRAMMAR`] under the closed contract.
fn closed_grammar() -> String {
    let predicates: Vec<String> = super::normalize::closed_predicates()
        .iter()
        .chain(std::iter::once(&"other".to_owned()))
        .map(|p| format!("\"{p}\""))
        .collect();
    let open_predicate = r#"item-predicate-0 ::= "\"" char{0,60} "\"""#;
    let open_pair = r#"item-content-kv "," space item-raw-kv"#;
    assert!(GRAMMAR.contains(open_predicate) && GRAMMAR.contains(open_pair), "grammars/facts.gbnf changed");
    let mut g = GRAMMAR
        .replace(open_predicate, &format!(r#"item-predicate-0 ::= "\"" ({}) "\"""#, predicates.join(" | ")))
        .replace(open_pair, "(item-by-user | item-by-assistant)");
    g.push_str(concat!(
        r#"item-by-user ::= "\"content\"" space ":" space "\"The user " item-content-1{4,186} "\"" "," space "\"raw\"" space ":" space "\"user: " char{1,154} "\"""#,
        "\n",
        r#"item-by-assistant ::= "\"content\"" space ":" space "\"The assistant " item-content-1{4,181} "\"" "," space "\"raw\"" space ":" space "\"assistant: " char{1,149} "\"""#,
        "\n",
    ));
    g
}

/// [`PROMPT`] as chat messages: `("system", text)`, then the examples' `("user" | "assistant",
/// text)` in order.
pub fn prompt_messages() -> Vec<(&'static str, String)> {
    prompt_messages_of(PROMPT)
}

/// A prompt text of [`PROMPT`]'s form as chat messages.
pub fn prompt_messages_of(prompt: &str) -> Vec<(&'static str, String)> {
    let mut out = vec![("system", String::new())];
    for line in prompt.lines() {
        match line.trim() {
            "--- user ---" => out.push(("user", String::new())),
            "--- assistant ---" => out.push(("assistant", String::new())),
            _ => {
                let text = &mut out.last_mut().map(|m| &mut m.1).expect("starts with the system message");
                if !text.is_empty() {
                    text.push('\n');
                }
                text.push_str(line);
            }
        }
    }
    for m in &mut out {
        m.1 = m.1.trim().to_string();
    }
    out
}

/// blake3 of the prompt, schema and grammar texts, in a fixed framing.
pub fn prompt_blake3() -> String {
    let framed = serde_json::json!({ "prompt": PROMPT, "schema": SCHEMA, "grammar": GRAMMAR });
    blake3::hash(framed.to_string().as_bytes()).to_hex().to_string()
}

const FIELDS: [&str; 7] = ["content", "raw", "when", "subject", "predicate", "object", "salience"];

/// Parses output against the contract: a JSON array of at most [`MAX_FACTS`] objects with exactly
/// the seven fields; `content` and `raw` non-empty strings; `when` and the triple strings or null
/// (blank strings become null); `salience` one of [`SALIENCES`]. Anything else is `None`.
pub fn parse(output: &str) -> Option<Vec<ExtractedFact>> {
    let value: Value = serde_json::from_str(output.trim()).ok()?;
    let items = value.as_array()?;
    if items.len() > MAX_FACTS {
        return None;
    }
    items.iter().map(parse_fact).collect()
}

fn parse_fact(item: &Value) -> Option<ExtractedFact> {
    let object = item.as_object()?;
    if object.len() != FIELDS.len() || !FIELDS.iter().all(|f| object.contains_key(*f)) {
        return None;
    }
    let required = |k: &str| -> Option<String> {
        let s = object[k].as_str()?.trim();
        (!s.is_empty()).then(|| s.to_string())
    };
    let optional = |k: &str| -> Option<Option<String>> {
        match &object[k] {
            Value::Null => Some(None),
            Value::String(s) => Some(Some(s.trim().to_string()).filter(|s| !s.is_empty())),
            _ => None,
        }
    };
    let salience = object["salience"].as_f64()? as f32;
    if !SALIENCES.contains(&salience) {
        return None;
    }
    Some(ExtractedFact {
        content: required("content")?,
        raw: required("raw")?,
        when: optional("when")?,
        subject: optional("subject")?,
        predicate: optional("predicate")?,
        object: optional("object")?,
        salience,
    })
}

/// Watches a JSON array as it is generated and reports the first item whose `content` repeats an
/// earlier item's (case and surrounding space ignored). Small models loop on one fact until the
/// token bound; ending the array after the last new item keeps what they said once and spares the
/// rest of the decode. The cut is a function of the bytes alone, so it is as deterministic as
/// the decode.
#[derive(Default)]
#[cfg_attr(not(feature = "llama"), allow(dead_code))]
pub(crate) struct RepeatGuard {
    scanned: usize,
    in_string: bool,
    escape: bool,
    depth: u32,
    item_start: usize,
    kept_until: usize,
    seen: Vec<String>,
}

#[cfg_attr(not(feature = "llama"), allow(dead_code))]
impl RepeatGuard {
    /// Scans what `out` gained since the last call; `Some(n)` when an item repeats: `out[..n]` ends
    /// after the last new item, and closing it with `]` gives the array to keep.
    pub(crate) fn feed(&mut self, out: &[u8]) -> Option<usize> {
        while self.scanned < out.len() {
            let (i, b) = (self.scanned, out[self.scanned]);
            self.scanned += 1;
            if self.in_string {
                match (self.escape, b) {
                    (true, _) => self.escape = false,
                    (false, b'\\') => self.escape = true,
                    (false, b'"') => self.in_string = false,
                    _ => {}
                }
                continue;
            }
            match b {
                b'"' => self.in_string = true,
                b'[' | b'{' => {
                    self.depth += 1;
                    if self.depth == 2 {
                        self.item_start = i;
                    }
                }
                b']' | b'}' => {
                    if self.depth == 2 {
                        let item: Option<Value> = serde_json::from_slice(&out[self.item_start..=i]).ok();
                        // An item's content (the slots contract's items have none: the whole item).
                        let content = item
                            .as_ref()
                            .and_then(|v| v["content"].as_str())
                            .map(|c| c.trim().to_lowercase())
                            .unwrap_or_else(|| {
                                String::from_utf8_lossy(&out[self.item_start..=i]).into_owned()
                            });
                        if self.seen.contains(&content) {
                            return Some(self.kept_until);
                        }
                        self.seen.push(content);
                        self.kept_until = i + 1;
                    }
                    self.depth = self.depth.saturating_sub(1);
                }
                _ => {}
            }
        }
        None
    }
}

/// The round as the model reads it: `user: …` / `assistant: …` lines in turn order.
pub fn round_text(turns: &[Turn]) -> String {
    turns.iter().map(|t| format!("{}: {}", t.role.as_str(), t.content)).collect::<Vec<_>>().join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_open_contract_is_the_files_and_the_closed_one_names_every_predicate() {
        assert_eq!(Contract::Open.grammar(&[]), GRAMMAR);
        assert_eq!(Contract::Open.prompt_blake3(), prompt_blake3());
        let grammar = Contract::Closed.grammar(&[]);
        let prompt = Contract::Closed.prompt();
        for p in crate::facts::normalize::closed_predicates() {
            assert!(grammar.contains(&format!("\"{p}\"")), "{p}");
            assert!(prompt.contains(&format!("\"{p}\"")), "{p}");
        }
        assert!(grammar.contains(r#""\"user: ""#) && grammar.contains(r#""\"assistant: ""#));
        assert!(
            !prompt.contains(r#""predicate":"starts at""#)
                && !prompt.contains(r#""predicate":"recommended""#)
        );
        // The examples still parse under the contract, and the prompt keeps its shape.
        assert_eq!(prompt_messages_of(&prompt).len(), prompt_messages().len());
        for (role, text) in prompt_messages_of(&prompt) {
            if role == "assistant" {
                let facts = parse(&text).expect("an example meets the contract");
                assert!(facts.iter().all(|f| f.predicate.as_deref() == Some("other")), "{text}");
            }
        }
        assert_ne!(Contract::Closed.prompt_blake3(), prompt_blake3());
    }

    const ONE: &str = r#"[{"content":"The user adopted a beagle.","raw":"user: I adopted a beagle","when":" ","subject":"user","predicate":"adopted","object":"a beagle","salience":1.0}]"#;

    #[test]
    fn the_contract_parses_and_blank_slots_become_null() {
        let facts = parse(ONE).unwrap();
        assert_eq!(facts.len(), 1);
        assert_eq!(facts[0].when, None);
        assert_eq!(facts[0].object.as_deref(), Some("a beagle"));
        assert_eq!(parse("[]").unwrap(), Vec::new());
        assert_eq!(parse(" [] \n").unwrap(), Vec::new());
    }

    #[test]
    fn anything_off_contract_is_refused_whole() {
        let bad = [
            "",
            "[",
            "{}",
            r#"[{"content":"x"}]"#,
            &ONE.replace("1.0}", "0.7}"),
            &ONE.replace("1.0}", "\"high\"}"),
            &ONE.replace(r#""content":"The user adopted a beagle.""#, r#""content":"  ""#),
            &ONE.replace(r#""subject":"user""#, r#""subject":3"#),
            &ONE.replace("}]", r#","extra":1}]"#),
            &format!("[{}]", [&ONE[1..ONE.len() - 1]; 6].join(",")),
            &format!("{ONE} trailing"),
        ];
        for b in bad {
            assert_eq!(parse(b), None, "{b}");
        }
        // Five is the bound, not an error.
        assert_eq!(parse(&format!("[{}]", [&ONE[1..ONE.len() - 1]; 5].join(","))).unwrap().len(), 5);
        let e = Extraction::from_output("[".into(), false, 10, 1);
        assert!(e.truncated && e.facts.is_empty());
        let e = Extraction::from_output(ONE.into(), true, 10, 1);
        assert!(e.truncated && e.facts.is_empty(), "a stopped decode is never salvaged");
    }

    #[test]
    fn a_repeated_fact_ends_the_array_after_the_last_new_one() {
        let item = |c: &str| ONE[1..ONE.len() - 1].replace("The user adopted a beagle.", c);
        let text = format!(
            "[{}, {},\n {}",
            item("A \\\"quoted\\\" fact]}."),
            item("Another."),
            item("  a \\\"QUOTED\\\" fact]}. ")
        );
        let mut guard = RepeatGuard::default();
        // Fed in pieces, as tokens arrive.
        let mut cut = None;
        for end in (1..=text.len()).filter(|e| text.is_char_boundary(*e)) {
            cut = cut.or(guard.feed(&text.as_bytes()[..end]));
        }
        let cut = cut.expect("the third item repeats the first");
        let kept = format!("{}]", &text[..cut]);
        let facts = parse(&kept).unwrap();
        assert_eq!(facts.len(), 2);
        assert_eq!(facts[1].content, "Another.");
        let mut fresh = RepeatGuard::default();
        assert_eq!(fresh.feed(ONE.as_bytes()), None, "one item never repeats");
    }

    #[test]
    fn the_prompt_splits_into_a_system_text_and_example_turns() {
        let m = prompt_messages();
        assert_eq!(m[0].0, "system");
        assert!(m.len() >= 3 && m.len() % 2 == 1, "examples come in pairs");
        for pair in m[1..].chunks(2) {
            assert_eq!((pair[0].0, pair[1].0), ("user", "assistant"));
            assert!(parse(&pair[1].1).is_some(), "every example answer meets the contract: {}", pair[1].1);
        }
        assert!(m.iter().all(|(_, t)| !t.is_empty() && !t.contains("--- ")));
    }

    #[test]
    fn the_schema_is_valid_json_and_matches_the_parser() {
        let schema: Value = serde_json::from_str(SCHEMA).unwrap();
        assert_eq!(schema["maxItems"], MAX_FACTS);
        let required: Vec<&str> =
            schema["items"]["required"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
        assert_eq!(required, FIELDS);
        let enumerated: Vec<f32> = schema["items"]["properties"]["salience"]["enum"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap() as f32)
            .collect();
        assert_eq!(enumerated, SALIENCES);
    }
}
