//! What the model reads and may write: the numbered candidates, the grammar made per round from
//! their words (a value is a span of its sentence), and the parse of its records.

use super::*;

/// What the model reads: the candidates numbered from 1, each with the sentence before it in
/// brackets when it points back.
pub fn input(candidates: &[Candidate]) -> String {
    candidates
        .iter()
        .enumerate()
        .map(|(i, c)| match &c.context {
            Some(before) => format!("{}. {} [before it: {}]", i + 1, c.text, before),
            None => format!("{}. {}", i + 1, c.text),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Version of the grammar's rules ([`grammar`]): hashed into the extractor's prompt pin, since
/// the grammar is made per round from its candidates.
pub const GRAMMAR_VERSION: &str = "slots-grammar-v2 copied spans";

/// A sentence's words as a span may use them: split at white space, punctuation cut off either
/// end (a currency sign kept before, a per cent sign after). `None` for a word that holds a quote,
/// a backslash or a control character: no span crosses it, so a span is always a plain JSON
/// string and a plain GBNF literal.
pub(super) fn span_words(text: &str) -> Vec<Option<&str>> {
    text.split_whitespace()
        .map(|w| {
            let w = w.trim_start_matches(|c: char| !c.is_alphanumeric() && !matches!(c, '$' | '£' | '€'));
            let w = w.trim_end_matches(|c: char| !c.is_alphanumeric() && c != '%');
            let plain = !w.is_empty() && !w.chars().any(|c| c == '"' || c == '\\' || c.is_control());
            plain.then_some(w)
        })
        .collect()
}

/// GBNF rules for every span of `text`'s words: `name` is any run of consecutive words, joined
/// by single spaces. Linear in the words: `name-i` is word `i` followed, optionally, by a span
/// starting at word `i + 1`. `None` when the text has no word.
pub(super) fn span_rules(name: &str, text: &str, rules: &mut Vec<String>) -> Option<()> {
    let words = span_words(text);
    let mut starts = Vec::new();
    for (i, w) in words.iter().enumerate() {
        let Some(w) = w else { continue };
        let next = words.get(i + 1).copied().flatten().map(|_| format!(r#" (" " {name}-{})?"#, i + 1));
        rules.push(format!(r#"{name}-{i} ::= "{w}"{}"#, next.unwrap_or_default()));
        starts.push(format!("{name}-{i}"));
    }
    (!starts.is_empty()).then(|| rules.push(format!("{name} ::= {}", starts.join(" | "))))
}

/// The GBNF grammar for a round's candidates: a compact JSON array of at most [`MAX_FACTS`]
/// records, each naming a candidate by its number, with a value that is a span of that
/// candidate's words and an entity that is a span of them, of the sentence before it, or "I".
/// The model cannot write a value its sentence does not hold ("Lisboa" for "Lisbon"): the
/// record is copied, or it is not written.
pub fn grammar(candidates: &[Candidate]) -> String {
    let relations: Vec<String> = RELATIONS.iter().map(|(r, _)| format!(r#""\"{r}\"""#)).collect();
    let mut rules = vec![
        format!(r#"root ::= "[" (item ("," item){{0,{}}})? "]""#, MAX_FACTS - 1),
        format!("relation ::= {}", relations.join(" | ")),
    ];
    let mut items = Vec::new();
    for (i, c) in candidates.iter().enumerate().take(MAX_CANDIDATES) {
        let n = i + 1;
        if span_rules(&format!("v{n}"), &c.text, &mut rules).is_none() {
            continue;
        }
        let mut entity = vec![format!("v{n}"), r#""I""#.to_owned()];
        if c.context
            .as_deref()
            .is_some_and(|before| span_rules(&format!("x{n}"), before, &mut rules).is_some())
        {
            entity.push(format!("x{n}"));
        }
        rules.push(format!("e{n} ::= {}", entity.join(" | ")));
        rules.push(format!(
            r#"c{n} ::= "{{\"n\":{n},\"entity\":\"" e{n} "\",\"relation\":" relation ",\"value\":\"" v{n} "\"}}""#
        ));
        items.push(format!("c{n}"));
    }
    // With no candidate (the model is not called then) the grammar allows only `[]`.
    if items.is_empty() {
        rules[0] = r#"root ::= "[]""#.to_owned();
    } else {
        rules.push(format!("item ::= {}", items.join(" | ")));
    }
    rules.join("\n") + "\n"
}

pub(super) const FIELDS: [&str; 4] = ["n", "entity", "relation", "value"];

pub(super) fn record(item: &Value) -> Option<Record> {
    let object = item.as_object()?;
    if object.len() != FIELDS.len() || !FIELDS.iter().all(|f| object.contains_key(*f)) {
        return None;
    }
    let text = |k: &str| object[k].as_str().map(|s| s.trim().to_owned()).filter(|s| !s.is_empty());
    let relation = text("relation")?;
    if !RELATIONS.iter().any(|(r, _)| *r == relation) {
        return None;
    }
    Some(Record {
        n: usize::try_from(object["n"].as_u64()?).ok()?,
        entity: text("entity")?,
        relation,
        value: text("value")?,
    })
}

/// Parses the model's output for `turns`: a JSON array of at most [`MAX_FACTS`] records with
/// exactly the four fields, else `None` (the whole output is off contract). Records are then
/// checked against the candidates and made facts ([`facts`]).
pub fn parse(output: &str, turns: &[Turn]) -> Option<Vec<ExtractedFact>> {
    let value: Value = serde_json::from_str(output.trim()).ok()?;
    let items = value.as_array()?;
    if items.len() > MAX_FACTS {
        return None;
    }
    let records: Vec<Record> = items.iter().map(record).collect::<Option<_>>()?;
    Some(facts(&records, turns))
}
