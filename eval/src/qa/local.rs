//! Local reading: a GGUF model on this machine answers each question from several contexts side
//! by side (no memory, mnemon's context at each budget asked for, and the oracle context: what
//! mnemon renders from a store holding only the question's evidence sessions, at the same
//! budget), and each answer is scored without a judge: LoCoMo by its token F1 against the gold
//! answer, LongMemEval by whether the normalised gold answer occurs in it ([`crate::answer`]).
//! A judge (another local model, or a model at the chat endpoint) may grade them too.
//!
//! The reader is greedy and its replies are cached by (model file, prompt, token bound) in the
//! QA cache, so a rerun reads nothing again and a run's answers are a pure function of the
//! model, the prompts and the contexts.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use mnemon::Result;

use super::client::key;
use super::{
    fill, judges, parse_verdict, Cache, Client, Endpoint, Reply, Template, Templates, JUDGE_MAX_TOKENS,
};
use crate::answer;
use crate::data::{Benchmark, Question};
use crate::metrics::{Prediction, Rate};

/// Bound on a local reader's reply: the short-answer prompt wants a few words.
pub const LOCAL_MAX_TOKENS: u32 = 48;

/// A model that answers prompts on this machine.
pub trait Local: Send + Sync {
    /// What its replies depend on (model file hash, runtime, decoding), for the pins and the
    /// cache key.
    fn pins(&self) -> Value;
    /// Its reply to `prompt`, at most `max_tokens` long.
    fn reply(&self, prompt: &str, max_tokens: u32) -> Result<Reply>;
}

impl Local for mnemon::internals::generate::LlamaReader {
    fn pins(&self) -> Value {
        json!(mnemon::internals::generate::LlamaReader::pins(self))
    }

    fn reply(&self, prompt: &str, max_tokens: u32) -> Result<Reply> {
        let g = self.answer(prompt, max_tokens as usize)?;
        Ok(Reply {
            text: g.text,
            prompt_tokens: g.prompt_tokens as u64,
            completion_tokens: g.completion_tokens as u64,
        })
    }
}

/// Who grades local answers, if anyone.
#[derive(Clone)]
pub enum Judge {
    /// A local model.
    Local(Arc<dyn Local>),
    /// A model at the chat endpoint.
    Remote {
        /// Its name.
        model: String,
        /// Where it is.
        endpoint: Endpoint,
    },
}

/// What local reading runs with.
#[derive(Clone)]
pub struct LocalConfig {
    /// The reader.
    pub reader: Arc<dyn Local>,
    /// The judge, if any.
    pub judge: Option<Judge>,
    /// mnemon's and the oracle's contexts are rendered at each of these budgets.
    pub budgets: Vec<usize>,
    /// The reply and verdict cache file.
    pub cache: PathBuf,
    /// The prompt texts (the short reader's and the judges').
    pub templates: Templates,
}

impl LocalConfig {
    /// What enters the run's pins.
    pub fn pins(&self) -> Value {
        json!({
            "reader": self.reader.pins(),
            "judge": match &self.judge {
                None => Value::Null,
                Some(Judge::Local(m)) => m.pins(),
                Some(Judge::Remote { model, endpoint }) => json!({ "model": model, "base_url": endpoint.base_url }),
            },
            "budgets": self.budgets,
            "templates_blake3": self.templates.hash(),
            "reader_max_tokens": LOCAL_MAX_TOKENS,
        })
    }
}

/// One answer from one context.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Read {
    /// The reader's reply.
    pub response: String,
    /// The prompt's tokens (as the reader counts them).
    pub prompt_tokens: u64,
    /// LoCoMo: token F1 against the gold answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub f1: Option<f64>,
    /// LongMemEval: whether the normalised gold answer occurs in the reply (`None`: an answer
    /// [`answer::forms`] leaves out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contains: Option<bool>,
    /// The judge's verdict, when a judge was given and parsed its reply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judged: Option<bool>,
}

/// One job's local reader and judge, with its connection to the cache.
pub struct LocalAsker<'a> {
    cfg: &'a LocalConfig,
    cache: Cache,
    client: Option<Client>,
    reader_id: String,
    judge_id: String,
    /// Replies and verdicts generated (not found in the cache).
    pub generated: usize,
    /// Replies and verdicts taken from the cache.
    pub cached: usize,
}

impl<'a> LocalAsker<'a> {
    /// Opens the cache.
    pub fn new(cfg: &'a LocalConfig) -> Result<LocalAsker<'a>> {
        let client = match &cfg.judge {
            Some(Judge::Remote { endpoint, .. }) => Some(Client::new(endpoint.clone())),
            _ => None,
        };
        let judge_id = match &cfg.judge {
            None => String::new(),
            Some(Judge::Local(m)) => m.pins().to_string(),
            Some(Judge::Remote { model, .. }) => model.clone(),
        };
        Ok(LocalAsker {
            cfg,
            cache: Cache::open(&cfg.cache)?,
            client,
            reader_id: cfg.reader.pins().to_string(),
            judge_id,
            generated: 0,
            cached: 0,
        })
    }

    /// Counts a reply or verdict, taken from the cache (`hit`) or generated.
    fn count(&mut self, hit: bool) {
        *if hit { &mut self.cached } else { &mut self.generated } += 1;
    }

    /// Whether a judge grades the answers.
    pub fn judged(&self) -> bool {
        self.cfg.judge.is_some()
    }

    /// The budgets mnemon's and the oracle's contexts are rendered at.
    pub fn budgets(&self) -> Vec<usize> {
        self.cfg.budgets.clone()
    }

    /// Answers `q` from each context (`(name, rendered block)`), scored.
    pub fn read(
        &mut self,
        benchmark: Benchmark,
        q: &Question,
        forms: Option<&[Vec<String>]>,
        contexts: &[(String, String)],
    ) -> Result<BTreeMap<String, Read>> {
        let cfg = self.cfg;
        let mut out = BTreeMap::new();
        for (name, history) in contexts {
            let history = if history.is_empty() { "(nothing was recalled)" } else { history.as_str() };
            let prompt = fill(
                cfg.templates.get(Template::ShortReader),
                &[
                    ("history", history),
                    ("date", q.date.as_deref().unwrap_or("not given")),
                    ("question", &q.question),
                ],
            );
            let max = LOCAL_MAX_TOKENS.to_string();
            let reader_key = key(&[&self.reader_id, &max, &prompt]);
            let (reply, hit) = self
                .cache
                .get_or_ask("replies", &reader_key, || cfg.reader.reply(&prompt, LOCAL_MAX_TOKENS))?;
            self.count(hit);
            let text = first_line(&reply.text);
            let judged = match (&cfg.judge, judges(benchmark, q).first()) {
                (Some(judge), Some((_, t))) => {
                    let template = cfg.templates.get(*t);
                    let judge_prompt = fill(
                        template,
                        &[("question", &q.question), ("answer", &q.answer), ("response", text)],
                    );
                    let verdict_key = key(&[&q.id, text, &self.judge_id, template]);
                    let (raw, hit) = self.cache.get_or_ask("verdicts", &verdict_key, || match judge {
                        Judge::Local(m) => m.reply(&judge_prompt, JUDGE_MAX_TOKENS),
                        Judge::Remote { model, .. } => self
                            .client
                            .as_ref()
                            .expect("a remote judge has a client")
                            .chat(model, &judge_prompt, JUDGE_MAX_TOKENS),
                    })?;
                    self.count(hit);
                    parse_verdict(&raw.text)
                }
                _ => None,
            };
            let (f1, contains) = match benchmark {
                Benchmark::LoCoMo => (Some(answer::token_f1(text, &q.answer)), None),
                Benchmark::LongMemEval => (None, forms.map(|f| answer::occurs(f, text))),
            };
            out.insert(
                name.clone(),
                Read { response: text.to_owned(), prompt_tokens: reply.prompt_tokens, f1, contains, judged },
            );
        }
        Ok(out)
    }
}

/// The reply's first non-empty line, trimmed: the short-answer prompt asks for one line, and a
/// small model often goes on after it.
pub fn first_line(reply: &str) -> &str {
    reply.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("")
}

/// A local reader's answers from one context.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ReadRate {
    /// Questions read.
    pub n: usize,
    /// LoCoMo: the mean token F1, if any answer was scored by it.
    pub f1: Option<f64>,
    /// LongMemEval: the gold answer inside the reply, over the answers looked for.
    pub contains: Option<Rate>,
    /// Graded correct by the judge, over the replies it graded.
    pub judged: Option<Rate>,
}

/// The local reads of `predictions`, by context.
pub(crate) fn read_rates(predictions: &[&Prediction]) -> BTreeMap<String, ReadRate> {
    let mut by: BTreeMap<&str, Vec<&Read>> = BTreeMap::new();
    for p in predictions {
        for (name, r) in &p.reads {
            by.entry(name.as_str()).or_default().push(r);
        }
    }
    let rate = |v: Vec<bool>| (!v.is_empty()).then(|| Rate::new(v.iter().filter(|x| **x).count(), v.len()));
    by.into_iter()
        .map(|(name, reads)| {
            let f1: Vec<f64> = reads.iter().filter_map(|r| r.f1).collect();
            let rr = ReadRate {
                n: reads.len(),
                f1: (!f1.is_empty()).then(|| f1.iter().sum::<f64>() / f1.len() as f64),
                contains: rate(reads.iter().filter_map(|r| r.contains).collect()),
                judged: rate(reads.iter().filter_map(|r| r.judged).collect()),
            };
            (name.to_owned(), rr)
        })
        .collect()
}
