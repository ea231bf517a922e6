//! QA mode: a reader model answers each question from the context mnemon recalled, and a judge
//! model grades the answer against the gold one, both through any OpenAI-compatible
//! `/chat/completions` endpoint.
//!
//! - One reader prompt for every question type: chain-of-note (a note per retrieved excerpt,
//!   then reasoning, then the answer) with one sentence allowing abstention. Temperature 0.
//! - LongMemEval: one judge per question, its template chosen by type (standard; temporal, which
//!   forgives off-by-one counts of days, weeks or months; knowledge-update, which accepts the
//!   updated answer beside older ones; preference, graded against the rubric; abstention, which
//!   wants the question recognised as unanswerable). LoCoMo categories 1–4: a strict and a lenient
//!   judge side by side; category 5 (adversarial) is not read.
//! - The templates are this project's own statement of each judging criterion, not copies of the
//!   benchmarks' files. A JSON file can replace any of them (`Templates::from_file`), so a run can
//!   use the official wording verbatim; the text of every template enters the run's pins.
//! - A cache (one SQLite file, shared by runs) keeps reader replies by (model, prompt, token
//!   bound) and verdicts by (question id, response, judge model, template text): a rerun whose
//!   reader says the same thing costs no judge call.
//!
//! The endpoint comes from the environment: `MNEMON_EVAL_BASE_URL` (else `OPENAI_BASE_URL`, else
//! `https://api.openai.com/v1`) and `MNEMON_EVAL_API_KEY` (else `OPENAI_API_KEY`; none is sent
//! when both are unset, for local servers).
// Back-off between retries sleeps; the engine never reads a clock, the harness may.
#![allow(clippy::disallowed_methods)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use mnemon::{Error, Result};

use crate::data::{Benchmark, Question};
use crate::metrics::{QaRecord, Verdict};

mod client;
mod local;

use client::key;
pub use client::{Cache, Client, Endpoint, Reply};
pub(crate) use local::read_rates;
pub use local::{first_line, Judge, Local, LocalAsker, LocalConfig, Read, ReadRate, LOCAL_MAX_TOKENS};

/// A prompt template: which text is filled for the reader or for one judging criterion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Template {
    /// The reader (every question type).
    Reader,
    /// The local reader: a short answer, for token F1 and containment.
    ShortReader,
    /// LongMemEval single-session-user, single-session-assistant, multi-session.
    Standard,
    /// LongMemEval temporal-reasoning: off-by-one counts are accepted.
    Temporal,
    /// LongMemEval knowledge-update: the updated answer is what counts.
    KnowledgeUpdate,
    /// LongMemEval single-session-preference: graded against a rubric.
    Preference,
    /// LongMemEval `_abs` questions: the answer must decline.
    Abstention,
    /// LoCoMo categories 1–4, strict.
    LocomoStrict,
    /// LoCoMo categories 1–4, lenient (as peers grade).
    LocomoLenient,
}

impl Template {
    /// Every template, in a fixed order.
    pub const ALL: [Template; 9] = [
        Template::Reader,
        Template::ShortReader,
        Template::Standard,
        Template::Temporal,
        Template::KnowledgeUpdate,
        Template::Preference,
        Template::Abstention,
        Template::LocomoStrict,
        Template::LocomoLenient,
    ];

    /// The kebab-case name used in files and artifacts.
    pub fn name(self) -> &'static str {
        match self {
            Template::Reader => "reader",
            Template::ShortReader => "short-reader",
            Template::Standard => "standard",
            Template::Temporal => "temporal",
            Template::KnowledgeUpdate => "knowledge-update",
            Template::Preference => "preference",
            Template::Abstention => "abstention",
            Template::LocomoStrict => "locomo-strict",
            Template::LocomoLenient => "locomo-lenient",
        }
    }

    /// The placeholders the template must hold.
    pub fn fields(self) -> &'static [&'static str] {
        match self {
            Template::Reader | Template::ShortReader => &["history", "date", "question"],
            _ => &["question", "answer", "response"],
        }
    }

    fn builtin(self) -> &'static str {
        match self {
            Template::Reader => READER,
            Template::ShortReader => SHORT_READER,
            Template::Standard => STANDARD,
            Template::Temporal => TEMPORAL,
            Template::KnowledgeUpdate => KNOWLEDGE_UPDATE,
            Template::Preference => PREFERENCE,
            Template::Abstention => ABSTENTION,
            Template::LocomoStrict => LOCOMO_STRICT,
            Template::LocomoLenient => LOCOMO_LENIENT,
        }
    }
}

const READER: &str = "Below are excerpts of earlier conversations between you and the user, retrieved from \
memory, each under the date it took place. Use them to answer the question.

First go through the excerpts one by one and write a short note on what each says that bears on the \
question, or that it says nothing relevant. Then reason over your notes step by step, paying attention \
to dates and to later information replacing earlier information, and give the answer. If the excerpts \
do not contain the information needed, say that you cannot answer from the conversation history.

Conversation history:

{history}

Current date: {date}
Question: {question}
Notes, reasoning and answer:";

const SHORT_READER: &str = "Below are excerpts of earlier conversations, retrieved from memory, each \
under the date it took place.

{history}

Current date: {date}
Answer the question from the excerpts in as few words as possible, on one line, with no explanation. \
If the excerpts do not say, answer: unknown.
Question: {question}
Answer:";

const STANDARD: &str = "You are grading a response to a question about the user's past conversations. \
Reply yes if the response gives the correct answer: it states the gold answer or something equivalent \
to it; reasoning or extra detail around it does not matter. Reply no if it gives a different answer, \
only part of the gold answer, or no answer.

Question: {question}
Gold answer: {answer}
Response: {response}

Is the response correct? Reply with yes or no only.";

const TEMPORAL: &str = "You are grading a response to a question about the user's past conversations. \
Reply yes if the response gives the correct answer: it states the gold answer or something equivalent \
to it; reasoning or extra detail around it does not matter. A count of days, weeks or months that is \
off by one from the gold answer (for example 18 days where the gold answer says 19) is correct. Reply \
no if it gives a different answer, only part of the gold answer, or no answer.

Question: {question}
Gold answer: {answer}
Response: {response}

Is the response correct? Reply with yes or no only.";

const KNOWLEDGE_UPDATE: &str = "You are grading a response to a question about the user's past \
conversations, where the relevant information changed over time and the gold answer is the latest \
value. Reply yes if the response gives the updated answer as its answer, even if it also mentions \
earlier values. Reply no if its answer is an earlier value, a different answer, or no answer.

Question: {question}
Gold answer: {answer}
Response: {response}

Is the response correct? Reply with yes or no only.";

const PREFERENCE: &str = "You are grading a personalised response to a request from the user. A rubric \
describes what a good response does with what the user said earlier about themselves. Reply yes if the \
response follows the rubric, recalling and using the user's own information and preferences; it need \
not cover every point of the rubric. Reply no if it ignores or contradicts what the user said.

Request: {question}
Rubric: {answer}
Response: {response}

Does the response follow the rubric? Reply with yes or no only.";

const ABSTENTION: &str = "You are grading a response to a question about the user's past conversations. \
The question cannot be answered from those conversations: the explanation below says why. Reply yes if \
the response recognises this, saying that the information is not available or that the question's \
premise is wrong. Reply no if it answers as though the information were known.

Question: {question}
Explanation: {answer}
Response: {response}

Does the response correctly decline to answer? Reply with yes or no only.";

const LOCOMO_STRICT: &str = "You are grading a response to a question about a long conversation between \
two people. Reply yes if the response gives the gold answer or something equivalent to it (dates may \
be written in any format but must name the same day, month or year at the precision of the gold \
answer; lists must name every item). Reply no if it gives a different answer, only part of the gold \
answer, a vaguer one, or no answer.

Question: {question}
Gold answer: {answer}
Response: {response}

Is the response correct? Reply with yes or no only.";

const LOCOMO_LENIENT: &str = "You are grading a response to a question about a long conversation between \
two people. Be generous: reply yes if the response addresses the same subject as the gold answer and \
agrees with it, even if it is longer, phrased differently or less specific; for questions about time, \
a response naming the same date or period in another form (for example \"May 7th\" for \"7 May 2023\", \
or \"the week before\" an event dated so) is correct. Reply no only if it contradicts the gold answer, \
is about something else, or gives no answer.

Question: {question}
Gold answer: {answer}
Response: {response}

Is the response correct? Reply with yes or no only.";

/// The prompt texts of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Templates(BTreeMap<Template, String>);

impl Default for Templates {
    fn default() -> Templates {
        Templates(Template::ALL.iter().map(|t| (*t, t.builtin().to_string())).collect())
    }
}

impl Templates {
    /// The built-in templates with those in `path` (a JSON object from template name to text)
    /// put in their place. Unknown names and templates missing a placeholder are refused.
    pub fn from_file(path: &Path) -> Result<Templates> {
        let field = |name: &str| format!("{}: {name}", path.display());
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::from(std::io::Error::other(format!("{}: {e}", path.display()))))?;
        let given: BTreeMap<String, String> =
            serde_json::from_str(&text).map_err(|e| Error::InvalidInput {
                field: path.display().to_string(),
                reason: format!("not a JSON object of template name to text: {e}"),
            })?;
        let mut out = Templates::default();
        for (name, text) in given {
            let Some(t) = Template::ALL.iter().find(|t| t.name() == name) else {
                return Err(Error::InvalidInput {
                    field: field(&name),
                    reason: format!(
                        "unknown template; known: {}",
                        Template::ALL.map(Template::name).join(", ")
                    ),
                });
            };
            if let Some(missing) = t.fields().iter().find(|f| !text.contains(&format!("{{{f}}}"))) {
                return Err(Error::InvalidInput {
                    field: field(&name),
                    reason: format!("lacks the placeholder {{{missing}}}"),
                });
            }
            out.0.insert(*t, text);
        }
        Ok(out)
    }

    /// The text of one template.
    pub fn get(&self, t: Template) -> &str {
        &self.0[&t]
    }

    /// blake3 over the canonical JSON of every template, for the pins.
    pub fn hash(&self) -> String {
        let map: BTreeMap<&str, &str> = self.0.iter().map(|(t, s)| (t.name(), s.as_str())).collect();
        blake3::hash(serde_json::to_string(&map).unwrap_or_default().as_bytes()).to_hex().to_string()
    }
}

/// Fills `{name}` placeholders in one pass, so that text filled in is never itself expanded.
pub fn fill(template: &str, fields: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(template.len() + fields.iter().map(|(_, v)| v.len()).sum::<usize>());
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        match after.find('}').and_then(|close| {
            fields.iter().find(|(name, _)| *name == &after[..close]).map(|(_, value)| (close, *value))
        }) {
            Some((close, value)) => {
                out.push_str(value);
                rest = &after[close + 1..];
            }
            None => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The judges of one question, each `(name, template)`: `official` for LongMemEval (by type and
/// abstention); `strict` and `lenient` for LoCoMo categories 1–4; none for LoCoMo category 5,
/// which is then not read either.
pub fn judges(benchmark: Benchmark, q: &Question) -> Vec<(&'static str, Template)> {
    match benchmark {
        Benchmark::LongMemEval => {
            let t = if q.abstention {
                Template::Abstention
            } else {
                match q.kind.as_str() {
                    "temporal-reasoning" => Template::Temporal,
                    "knowledge-update" => Template::KnowledgeUpdate,
                    "single-session-preference" => Template::Preference,
                    _ => Template::Standard,
                }
            };
            vec![("official", t)]
        }
        Benchmark::LoCoMo if q.abstention => Vec::new(),
        Benchmark::LoCoMo => vec![("strict", Template::LocomoStrict), ("lenient", Template::LocomoLenient)],
    }
}

/// A verdict from the judge's reply: its first word, `yes` or `no` (case and punctuation
/// ignored); `None` for anything else.
pub fn parse_verdict(reply: &str) -> Option<bool> {
    let word: String = reply
        .trim_start_matches(|c: char| !c.is_alphanumeric())
        .chars()
        .take_while(|c| c.is_alphanumeric())
        .collect::<String>()
        .to_lowercase();
    match word.as_str() {
        "yes" | "correct" => Some(true),
        "no" | "incorrect" | "wrong" => Some(false),
        _ => None,
    }
}

/// What QA mode runs with.
#[derive(Debug, Clone)]
pub struct QaConfig {
    /// The reader's model name.
    pub reader: String,
    /// The judge's model name.
    pub judge: String,
    /// The chat endpoint.
    pub endpoint: Endpoint,
    /// The reply and verdict cache file.
    pub cache: PathBuf,
    /// The prompt texts.
    pub templates: Templates,
    /// Bound on the reader's reply.
    pub reader_max_tokens: u32,
    /// Attempts per request and the first back-off.
    pub retries: (u32, Duration),
}

impl QaConfig {
    /// What enters the run's pins (the key never does).
    pub fn pins(&self) -> Value {
        json!({
            "reader": self.reader,
            "judge": self.judge,
            "base_url": self.endpoint.base_url,
            "templates_blake3": self.templates.hash(),
            "reader_max_tokens": self.reader_max_tokens,
            "judge_max_tokens": JUDGE_MAX_TOKENS,
        })
    }
}

/// Bound on a judge's reply: a word is wanted.
pub const JUDGE_MAX_TOKENS: u32 = 16;

/// Counts of one job's calls, for the run's report.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Calls {
    /// Reader requests sent.
    pub reader: usize,
    /// Reader replies taken from the cache.
    pub reader_cached: usize,
    /// Judge requests sent.
    pub judge: usize,
    /// Verdicts taken from the cache.
    pub judge_cached: usize,
}

/// One job's reader and judge (each job opens its own connection to the cache).
pub struct Asker<'a> {
    cfg: &'a QaConfig,
    client: Client,
    cache: Cache,
    /// Calls so far.
    pub calls: Calls,
}

impl<'a> Asker<'a> {
    /// Opens the cache and builds the client.
    pub fn new(cfg: &'a QaConfig) -> Result<Asker<'a>> {
        Ok(Asker {
            cfg,
            client: Client::new(cfg.endpoint.clone()).with_retries(cfg.retries.0, cfg.retries.1),
            cache: Cache::open(&cfg.cache)?,
            calls: Calls::default(),
        })
    }

    /// The reply cached under `key` in `table`, else a fresh one (then cached); and whether it
    /// came from the cache.
    fn cached(
        &self,
        table: &str,
        key: &str,
        model: &str,
        prompt: &str,
        max_tokens: u32,
    ) -> Result<(Reply, bool)> {
        self.cache.get_or_ask(table, key, || self.client.chat(model, prompt, max_tokens))
    }

    /// Reads `history` (the rendered context) for `q` and has every judge of its kind grade the
    /// response; `None` when the question has no judge (LoCoMo category 5).
    pub fn answer(&mut self, benchmark: Benchmark, q: &Question, history: &str) -> Result<Option<QaRecord>> {
        let judges = judges(benchmark, q);
        if judges.is_empty() {
            return Ok(None);
        }
        let cfg = self.cfg;
        let history = if history.is_empty() { "(nothing was recalled)" } else { history };
        let prompt = fill(
            cfg.templates.get(Template::Reader),
            &[
                ("history", history),
                ("date", q.date.as_deref().unwrap_or("not given")),
                ("question", &q.question),
            ],
        );
        let max = cfg.reader_max_tokens.to_string();
        let reader_key = key(&[&cfg.reader, &max, &prompt]);
        let (reply, hit) =
            self.cached("replies", &reader_key, &cfg.reader, &prompt, cfg.reader_max_tokens)?;
        *if hit { &mut self.calls.reader_cached } else { &mut self.calls.reader } += 1;
        let mut verdicts = BTreeMap::new();
        for (name, t) in judges {
            let text = cfg.templates.get(t);
            let judge_prompt =
                fill(text, &[("question", &q.question), ("answer", &q.answer), ("response", &reply.text)]);
            let verdict_key = key(&[&q.id, &reply.text, &cfg.judge, text]);
            let (raw, hit) =
                self.cached("verdicts", &verdict_key, &cfg.judge, &judge_prompt, JUDGE_MAX_TOKENS)?;
            *if hit { &mut self.calls.judge_cached } else { &mut self.calls.judge } += 1;
            let parsed = parse_verdict(&raw.text);
            verdicts.insert(
                name.to_string(),
                Verdict {
                    template: t.name().to_string(),
                    correct: parsed == Some(true),
                    parsed: parsed.is_some(),
                    raw: raw.text,
                },
            );
        }
        Ok(Some(QaRecord {
            response: reply.text,
            verdicts,
            prompt_tokens: reply.prompt_tokens,
            completion_tokens: reply.completion_tokens,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(kind: &str, abstention: bool) -> Question {
        Question {
            id: "q".into(),
            user: "u".into(),
            kind: kind.into(),
            question: "?".into(),
            answer: "a".into(),
            date: None,
            abstention,
            evidence_turns: Vec::new(),
            evidence_sessions: Vec::new(),
        }
    }

    #[test]
    fn the_judge_template_follows_the_question_type() {
        let lme = |kind: &str, abs: bool| judges(Benchmark::LongMemEval, &q(kind, abs));
        assert_eq!(lme("single-session-user", false), vec![("official", Template::Standard)]);
        assert_eq!(lme("single-session-assistant", false), vec![("official", Template::Standard)]);
        assert_eq!(lme("multi-session", false), vec![("official", Template::Standard)]);
        assert_eq!(lme("temporal-reasoning", false), vec![("official", Template::Temporal)]);
        assert_eq!(lme("knowledge-update", false), vec![("official", Template::KnowledgeUpdate)]);
        assert_eq!(lme("single-session-preference", false), vec![("official", Template::Preference)]);
        // Abstention wins over the type.
        assert_eq!(lme("temporal-reasoning", true), vec![("official", Template::Abstention)]);
        assert_eq!(lme("multi-session", true), vec![("official", Template::Abstention)]);
        for c in 1..=4 {
            assert_eq!(
                judges(Benchmark::LoCoMo, &q(&format!("category-{c}"), false)),
                vec![("strict", Template::LocomoStrict), ("lenient", Template::LocomoLenient)]
            );
        }
        assert!(judges(Benchmark::LoCoMo, &q("category-5", true)).is_empty());
    }

    #[test]
    fn every_builtin_template_holds_its_placeholders_and_they_differ() {
        let t = Templates::default();
        for k in Template::ALL {
            for f in k.fields() {
                assert!(t.get(k).contains(&format!("{{{f}}}")), "{} lacks {f}", k.name());
            }
        }
        let texts: std::collections::BTreeSet<&str> = Template::ALL.iter().map(|k| t.get(*k)).collect();
        assert_eq!(texts.len(), Template::ALL.len());
        assert!(t.get(Template::Temporal).contains("off by one"));
        assert!(t.get(Template::KnowledgeUpdate).contains("updated answer"));
        assert!(t.get(Template::Reader).contains("cannot answer"));
    }

    #[test]
    fn fill_expands_each_placeholder_once_and_never_what_it_inserted() {
        let s = fill("a {x} b {y} {z} {x}", &[("x", "{y}"), ("y", "2")]);
        assert_eq!(s, "a {y} b 2 {z} {y}");
        assert_eq!(fill("{unclosed", &[("unclosed", "v")]), "{unclosed");
        assert_eq!(fill("}{}{", &[]), "}{}{");
    }

    #[test]
    fn verdicts_are_read_from_the_first_word() {
        assert_eq!(parse_verdict("yes"), Some(true));
        assert_eq!(parse_verdict("Yes."), Some(true));
        assert_eq!(parse_verdict("  **YES**, because"), Some(true));
        assert_eq!(parse_verdict("No"), Some(false));
        assert_eq!(parse_verdict("no."), Some(false));
        assert_eq!(parse_verdict("Nope"), None);
        assert_eq!(parse_verdict("The answer is yes"), None);
        assert_eq!(parse_verdict(""), None);
        assert_eq!(parse_verdict("yesterday"), None);
    }

    #[test]
    fn template_files_replace_builtins_and_bad_ones_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.json");
        std::fs::write(&path, r#"{"temporal": "Q {question} A {answer} R {response}"}"#).unwrap();
        let t = Templates::from_file(&path).unwrap();
        assert_eq!(t.get(Template::Temporal), "Q {question} A {answer} R {response}");
        assert_eq!(t.get(Template::Standard), Templates::default().get(Template::Standard));
        assert_ne!(t.hash(), Templates::default().hash());
        std::fs::write(&path, r#"{"temporal": "Q {question} A {answer}"}"#).unwrap();
        let e = Templates::from_file(&path).unwrap_err().to_string();
        assert!(e.contains("temporal") && e.contains("{response}"), "{e}");
        std::fs::write(&path, r#"{"tempral": "x"}"#).unwrap();
        let e = Templates::from_file(&path).unwrap_err().to_string();
        assert!(e.contains("tempral") && e.contains("unknown"), "{e}");
    }
}
