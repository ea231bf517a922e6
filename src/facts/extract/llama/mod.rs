//! [`LlamaExtractor`]: a local GGUF model run through llama.cpp (`llama-cpp-2`), greedy, under the
//! facts grammar.
//!
//! Every call gets a fresh context (no state carries over between calls), with one KV stream per
//! round when several rounds are decoded together; each round's prompt is decoded in fixed-size
//! batches as it would be alone, then generation is greedy, one token of every live round per
//! decode. The prompt's fixed head (system text and worked
//! examples, the same for every round) is decoded once per extractor (and context shape) into a fresh context and its
//! KV state saved; each call restores that snapshot into its own fresh context and decodes only the
//! round. That is the same computation every time, so it is as deterministic as decoding the whole
//! prompt, and it saves the head's share of the prompt cost on every round. For each token the unconstrained argmax is put to the
//! grammar first, and only when the grammar rejects it is the grammar applied to the whole
//! vocabulary. This gives the same tokens as applying it every time, at a fraction of the cost
//! (BUILD-NOTES: 3.6 s → 0.15 s per 256 tokens). Ties go to the lower token id.
//!
//! Each generation step also decodes a draft: the tokens that followed the latest earlier
//! occurrence of the round's last few tokens in its own prompt and output ([`lookup`]; the output
//! quotes the round and repeats the prompt's key names). Greedy choice runs over the step's rows
//! in order, and the drafted tokens stand as long as it picks them; the KV cells past the first
//! disagreement are removed. A drafted row costs much less than a one-token decode, and several
//! tokens come out of a step on real rounds (docs/DECISIONS.md, "drafts from the round itself"). The output
//! is a pure function of the model file, the prompt, the round and [`LlamaConfig`]'s pinned
//! fields.

mod decode;
mod reader;

use std::borrow::Cow;
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, OnceLock};

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::context::session::{LlamaStateSeqFlags, SeqState};
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::{LlamaChatMessage, LlamaModel};
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::token::data::LlamaTokenData;
use llama_cpp_2::token::data_array::LlamaTokenDataArray;
use serde::Serialize;

use super::{Contract, Extraction, Extractor, ExtractorPins, round_text};
use crate::error::{Error, Result};
use crate::model::round::{Role, Turn};
use decode::decode_chunks;
pub use reader::{Generated, LlamaReader, ReaderPins};

/// The runtime: the binding crate and the llama.cpp it vendors. The pin adds the kernel options
/// llama.cpp was compiled with ([`kernels`]).
pub const RUNTIME: &str = "llama-cpp-2 0.1.160 (llama-cpp-sys-2 0.1.161)";

/// The CPU backend's compiled options as llama.cpp reports them (`llama_print_system_info`):
/// instruction sets, and whether llamafile's tinyBLAS and weight repacking are in. They choose
/// the arithmetic kernels, so outputs are comparable only within one set.
pub fn kernels() -> &'static str {
    static KERNELS: OnceLock<String> = OnceLock::new();
    KERNELS.get_or_init(|| {
        // SAFETY: llama.cpp returns a NUL-terminated string it owns (a function-local static),
        // copied here at once; the OnceLock makes this the only call.
        let text = unsafe { std::ffi::CStr::from_ptr(llama_cpp_sys_2::llama_print_system_info()) };
        text.to_string_lossy().trim().trim_end_matches('|').trim().to_owned()
    })
}

/// Whether every row of a matrix product takes the same kernel however many rows a batch holds:
/// llama.cpp built without llamafile's tinyBLAS and without weight repacking (set
/// `GGML_LLAMAFILE=OFF GGML_CPU_REPACK=OFF` in the environment of a clean build). Only then do
/// rounds decoded together give the bytes each gives alone, for every quantization; otherwise
/// [`LlamaExtractor`] decodes one round at a time. The default build keeps both: they make
/// prompts faster than decoding rounds together gains (docs/DECISIONS.md, "decoding several
/// rounds together").
pub fn row_invariant() -> bool {
    !kernels().split('|').any(|f| matches!(f.trim(), "LLAMAFILE = 1" | "REPACK = 1"))
}

/// How the model is run. All fields but `threads` change the output and are pinned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LlamaConfig {
    /// CPU threads for decoding (not pinned: the output does not depend on it).
    #[serde(skip)]
    pub threads: i32,
    /// Rounds decoded together, each its own sequence in one context, when llama.cpp's kernels
    /// allow it ([`row_invariant`]) and `draft` is 0; otherwise one at a time. Not pinned: a
    /// round gives the same bytes alone or with others (`tests/extract.rs`).
    #[serde(skip)]
    pub batch: usize,
    /// Context size in tokens.
    pub n_ctx: u32,
    /// Prompt tokens decoded per batch.
    pub n_batch: u32,
    /// Most tokens of round text the model reads; the user turn comes first, so a long assistant
    /// reply is what gets cut.
    pub input_cap: usize,
    /// Most tokens generated; a decode that reaches it is flagged truncated.
    pub max_tokens: usize,
    /// Most tokens drafted per generation step by looking up the round's own prompt and output
    /// ([`lookup`]; 0: none). Drafted tokens are decoded with the chosen one and kept as far as
    /// greedy choice agrees with them, so several tokens can come out of one decode. Pinned:
    /// several rows of one round take other attention kernels than one row, so a drafted decode
    /// can give other bits than an undrafted one (it does on some rounds, on every build measured).
    /// Drafted rounds decoded together did not always give their alone bytes with Qwen, so a
    /// drafting extractor decodes one round at a time ([`Extractor::batch_size`] is 1).
    pub draft: usize,
    /// The output contract (pinned through the prompt hash, which covers its grammar).
    #[serde(skip)]
    pub contract: Contract,
}

impl Default for LlamaConfig {
    fn default() -> Self {
        LlamaConfig {
            threads: 2,
            batch: 4,
            n_ctx: 4096,
            n_batch: 512,
            input_cap: 1536,
            max_tokens: 768,
            draft: 8,
            contract: Contract::Slots,
        }
    }
}

/// llama.cpp's `LLAMA_FLASH_ATTN_TYPE_DISABLED`. Flash attention on the CPU splits one
/// sequence's single-token step across threads (partial sums reduced at the end) but not a step
/// of several sequences, so a round's logits would depend on how many rounds decode with it.
/// Without it, every attention row is computed the same way whatever else is in the batch.
const FLASH_ATTENTION_OFF: i32 = 0;

static BACKEND: OnceLock<std::result::Result<LlamaBackend, String>> = OnceLock::new();

fn backend() -> Result<&'static LlamaBackend> {
    BACKEND
        .get_or_init(|| {
            let mut b = LlamaBackend::init().map_err(|e| e.to_string())?;
            b.void_logs();
            Ok(b)
        })
        .as_ref()
        .map_err(|e| Error::Extractor(format!("llama.cpp backend: {e}")))
}

/// A GGUF model that extracts facts. Load once, call [`Extractor::extract`] per round.
pub struct LlamaExtractor {
    model: LlamaModel,
    config: LlamaConfig,
    pins: ExtractorPins,
    /// The contract's grammar (none under `Slots`, whose grammar is made per round) and prompt
    /// text.
    grammar: Option<String>,
    prompt: String,
    /// The prompt's fixed head and its decoded state, made on first use for each number of
    /// sequences per context (a state restores only into a context of the same shape).
    heads: Mutex<Vec<(u32, Option<Arc<Head>>)>>,
}

/// The tokens every prompt starts with, and the KV state after decoding them.
struct Head {
    tokens: Vec<LlamaToken>,
    state: SeqState,
}

const FETCH: &str = "`mnemon fetch-models --extractor` (Qwen2.5-Coder-0.5B, the default; plain: SmolLM2-135M), \
     or scripts/fetch-models.sh [--qwen] in a checkout";

fn unavailable(path: &Path, reason: impl Into<String>) -> Error {
    Error::ModelUnavailable { path: path.to_owned(), reason: reason.into(), fix: FETCH.into() }
}

/// Quantization names of GGUF `general.file_type` values (llama.cpp's `llama_ftype`).
fn quant_name(file_type: &str) -> String {
    let name = match file_type {
        "0" => "F32",
        "1" => "F16",
        "2" => "Q4_0",
        "3" => "Q4_1",
        "7" => "Q8_0",
        "8" => "Q5_0",
        "9" => "Q5_1",
        "10" => "Q2_K",
        "11" => "Q3_K_S",
        "12" => "Q3_K_M",
        "13" => "Q3_K_L",
        "14" => "Q4_K_S",
        "15" => "Q4_K_M",
        "16" => "Q5_K_S",
        "17" => "Q5_K_M",
        "18" => "Q6_K",
        other => return format!("file_type {other}"),
    };
    name.to_string()
}

/// A GGUF model loaded through llama.cpp, with what its pins need of the file.
struct Gguf {
    model: LlamaModel,
    model_blake3: String,
    /// Its quantization's name (GGUF `general.file_type`).
    quant: String,
}

impl Gguf {
    /// Loads the GGUF at `path`. A missing, truncated or non-GGUF file is
    /// [`Error::ModelUnavailable`] naming the file and the fetch command.
    fn load(path: &Path) -> Result<Gguf> {
        let head = {
            use std::io::Read;
            let mut head = [0u8; 4];
            let mut f = std::fs::File::open(path).map_err(|e| unavailable(path, e.to_string()))?;
            f.read_exact(&mut head).map_err(|_| unavailable(path, "shorter than a GGUF header"))?;
            head
        };
        if &head != b"GGUF" {
            return Err(unavailable(path, "not a GGUF file (no GGUF magic)"));
        }
        let model_blake3 = crate::model_files::file_blake3(path)?;
        let model = LlamaModel::load_from_file(backend()?, path, &LlamaModelParams::default())
            .map_err(|e| unavailable(path, format!("llama.cpp could not load it ({e}); truncated?")))?;
        let quant = quant_name(&model.meta_val_str("general.file_type").unwrap_or_default());
        Ok(Gguf { model, model_blake3, quant })
    }
}

/// A model file's name as pinned (its path is not kept).
fn file_name(path: &Path) -> String {
    path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

/// `bytes` as UTF-8, cut before a character that a token bound split (whole characters only).
fn whole_utf8(bytes: Vec<u8>) -> String {
    match String::from_utf8(bytes) {
        Ok(s) => s,
        Err(e) => {
            let valid = e.utf8_error().valid_up_to();
            String::from_utf8_lossy(&e.as_bytes()[..valid]).into_owned()
        }
    }
}

impl LlamaExtractor {
    /// Loads the GGUF at `path`. A missing, truncated or non-GGUF file is
    /// [`Error::ModelUnavailable`] naming the file and the fetch command.
    pub fn load(path: impl AsRef<Path>, config: LlamaConfig) -> Result<LlamaExtractor> {
        let path = path.as_ref();
        let Gguf { model, model_blake3, quant } = Gguf::load(path)?;
        let decode = blake3::hash(
            serde_json::json!({
                "sampling": "greedy, fast grammar path, ties to lower id",
                "prompt head": "decoded once, state restored per round",
                "attention": "no flash attention; one KV stream per round",
                "config": config,
            })
            .to_string()
            .as_bytes(),
        )
        .to_hex()
        .to_string();
        let pins = ExtractorPins {
            name: file_name(path),
            model_blake3,
            quant,
            runtime: format!("{RUNTIME}; {}", kernels()),
            decode,
            prompt: config.contract.prompt_blake3(),
        };
        let grammar = (config.contract != Contract::Slots).then(|| config.contract.grammar(&[]));
        let prompt = config.contract.prompt();
        Ok(LlamaExtractor { model, config, pins, grammar, prompt, heads: Mutex::default() })
    }

    /// The model file's path is not kept; this is its name as pinned.
    pub fn name(&self) -> &str {
        &self.pins.name
    }

    /// The run settings.
    pub fn config(&self) -> &LlamaConfig {
        &self.config
    }

    /// Whether this extractor's grammar (its contract's) lets the model write `output`, token by
    /// token as the model's tokenizer splits it, and then end. A check of the contract as decoding
    /// enforces it, for outputs a small model would not write on its own.
    pub fn grammar_allows(&self, turns: &[Turn], output: &str) -> Result<bool> {
        let vocab = self.model.vocab();
        let grammar = match &self.grammar {
            Some(fixed) => Cow::Borrowed(fixed.as_str()),
            None => Cow::Owned(self.config.contract.grammar(turns)),
        };
        let mut grammar = self.sampler(&grammar)?;
        let allowed = |grammar: &mut LlamaSampler, token: LlamaToken| {
            let mut one = LlamaTokenDataArray::new(vec![LlamaTokenData::new(token, 0.0, 0.0)], false);
            grammar.apply(&mut one);
            one.data[0].logit().is_finite()
        };
        for token in vocab.tokenize(output.as_bytes(), false, false) {
            if !allowed(&mut grammar, token) {
                return Ok(false);
            }
            grammar.accept(token);
        }
        Ok(allowed(&mut grammar, vocab.eos()))
    }

    /// A grammar sampler for the GBNF text `grammar`.
    pub(super) fn sampler(&self, grammar: &str) -> Result<LlamaSampler> {
        LlamaSampler::grammar(&self.model, grammar, "root")
            .map_err(|e| Error::Extractor(format!("grammar: {e}")))
    }

    /// The round text within the input cap: the user turn first, then what fits of the rest.
    fn capped_round(&self, turns: &[Turn]) -> Result<String> {
        let vocab = self.model.vocab();
        let tokens: Vec<Vec<LlamaToken>> =
            turns.iter().map(|t| vocab.tokenize(t.content.as_bytes(), false, false)).collect();
        // Budget per turn: user turns are served first, then the rest in order.
        let mut left = self.config.input_cap;
        let mut budget = vec![0; turns.len()];
        let order = (0..turns.len()).filter(|i| turns[*i].role == Role::User);
        for i in order.chain((0..turns.len()).filter(|i| turns[*i].role != Role::User)) {
            budget[i] = tokens[i].len().min(left);
            left -= budget[i];
        }
        let mut kept = Vec::with_capacity(turns.len());
        for (i, t) in turns.iter().enumerate() {
            let content = if budget[i] == tokens[i].len() {
                t.content.clone()
            } else if budget[i] == 0 {
                continue;
            } else {
                // A cut can split a character: keep only whole UTF-8.
                whole_utf8(vocab.detokenize(&tokens[i][..budget[i]], false, false))
            };
            kept.push(Turn { content, ..t.clone() });
        }
        Ok(round_text(&kept))
    }

    /// The prompt for one round and the grammar it decodes under: its text within the input cap
    /// and the contract's grammar, or under the slots contract its numbered candidate sentences
    /// and the grammar made from them (none when it has none: nothing for the model to read).
    fn prompt(&self, turns: &[Turn]) -> Result<Option<(String, Cow<'_, str>)>> {
        match &self.grammar {
            None => {
                let candidates = super::slots::candidates(turns);
                if candidates.is_empty() {
                    return Ok(None);
                }
                let grammar = Cow::Owned(super::slots::grammar(&candidates));
                Ok(Some((self.render(super::slots::input(&candidates))?, grammar)))
            }
            Some(grammar) => {
                Ok(Some((self.render(self.capped_round(turns)?)?, Cow::Borrowed(grammar.as_str()))))
            }
        }
    }

    /// The chat-templated prompt for one round's text.
    fn render(&self, round: String) -> Result<String> {
        let template = self
            .model
            .chat_template(None)
            .map_err(|e| Error::Extractor(format!("{}: no chat template ({e})", self.pins.name)))?;
        let mut messages = super::prompt_messages_of(&self.prompt);
        messages.push(("user", round));
        let chat = messages
            .into_iter()
            .map(|(role, text)| LlamaChatMessage::new(role.into(), text))
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| Error::Extractor(format!("chat message: {e}")))?;
        self.model
            .apply_chat_template(&template, &chat, true)
            .map_err(|e| Error::Extractor(format!("chat template: {e}")))
    }

    /// A context for `sequences` rounds at once, each with its own `n_ctx` cells (KV streams
    /// kept apart, so a round attends to its own cells only, as alone).
    fn context(&self, sequences: u32) -> Result<LlamaContext<'_>> {
        let c = &self.config;
        let params = LlamaContextParams::default()
            .with_n_ctx(NonZeroU32::new(c.n_ctx * sequences))
            .with_n_seq_max(sequences)
            .with_kv_unified(false)
            .with_flash_attention_policy(FLASH_ATTENTION_OFF)
            .with_n_batch(c.n_batch)
            .with_n_ubatch(c.n_batch)
            .with_n_threads(c.threads)
            .with_n_threads_batch(c.threads)
            // llama.cpp's performance counters feed `Speed`; they never touch the output.
            .with_no_perf(false);
        self.model.new_context(backend()?, params).map_err(|e| llama("context", e))
    }

    /// The prompt's fixed head: the tokens two different rounds' prompts share, decoded once per
    /// context shape (`sequences`) into sequence 0.
    fn head(&self, sequences: u32) -> Result<Option<Arc<Head>>> {
        let mut heads = self.heads.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((_, head)) = heads.iter().find(|(n, _)| *n == sequences) {
            return Ok(head.clone());
        }
        let vocab = self.model.vocab();
        let a = vocab.tokenize(self.render("a".into())?.as_bytes(), true, true);
        let b = vocab.tokenize(self.render("b".into())?.as_bytes(), true, true);
        let shared = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
        let head = if shared == 0 {
            None
        } else {
            let tokens = a[..shared].to_vec();
            let mut ctx = self.context(sequences)?;
            let mut batch = LlamaBatch::new(self.config.n_batch as usize, 1);
            decode_chunks(&mut ctx, &mut batch, &tokens, 0, self.config.n_batch as usize, 0)?;
            let state = ctx.state_seq_get(0, LlamaStateSeqFlags::empty()).map_err(|e| llama("state", e))?;
            Some(Arc::new(Head { tokens, state }))
        };
        heads.push((sequences, head.clone()));
        Ok(head)
    }
}

fn llama(what: &str, e: impl std::fmt::Display) -> Error {
    Error::Extractor(format!("llama.cpp {what}: {e}"))
}

/// llama.cpp's own measurement of one call (its performance counters; never part of an
/// [`Extraction`], which must stay byte-identical across runs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct Speed {
    /// Milliseconds decoding the prompt.
    pub prompt_ms: f64,
    /// Prompt tokens decoded.
    pub prompt_tokens: usize,
    /// Milliseconds generating.
    pub generation_ms: f64,
    /// Tokens generated.
    pub generated_tokens: usize,
    /// Decodes that generated them, counted per round (a decode of several rounds is one step
    /// of each); fewer than the tokens when drafts were kept.
    #[serde(default)]
    pub generation_steps: usize,
}

impl Extractor for LlamaExtractor {
    fn pins(&self) -> ExtractorPins {
        self.pins.clone()
    }

    fn extract(&self, turns: &[Turn]) -> Result<Extraction> {
        self.extract_measured(turns).map(|(e, _)| e)
    }

    fn extract_cancellable(&self, turns: &[Turn], cancel: &AtomicBool) -> Result<Extraction> {
        self.run(turns, cancel).map(|(e, _)| e)
    }

    fn extract_batch(&self, rounds: &[&[Turn]], cancel: &AtomicBool) -> Result<Vec<Result<Extraction>>> {
        // At most `batch_size` rounds per context.
        let mut out = Vec::with_capacity(rounds.len());
        for group in rounds.chunks(self.batch_size()) {
            out.extend(self.extract_batch_measured(group, cancel)?.0);
        }
        Ok(out)
    }

    fn contract(&self) -> Contract {
        self.config.contract
    }

    fn batch_size(&self) -> usize {
        // Drafted rounds decoded together gave other bytes than alone on Qwen2.5-Coder-0.5B
        // (docs/DECISIONS.md, "drafts from the round itself"), so a drafting extractor decodes
        // one round at a time.
        if row_invariant() && self.config.draft == 0 { self.config.batch.max(1) } else { 1 }
    }
}

/// The default extractor's file name (Qwen2.5-Coder-0.5B-Instruct, Q4_K_M), in the models
/// folder's `gguf/` (`scripts/fetch-models.sh --qwen` fetches it); `--extractor default` names it.
pub const DEFAULT_GGUF: &str = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf";

/// Where the test and dev models land (see `scripts/fetch-models.sh`).
pub fn default_gguf(name: &str) -> PathBuf {
    crate::model_files::default_dir().join("gguf").join(name)
}
