//! [`LlamaReader`]: a local GGUF model that answers a prompt in free text, through the same
//! llama.cpp runtime as the extractor, greedy: what `mnemon eval run --reader gguf:…` reads each
//! question's context with.
//!
//! Every call gets a fresh context sized for its prompt and reply, decodes the chat-templated
//! prompt in fixed-size batches, then generates one token per decode, always the highest logit
//! (ties to the lower token id), until an end-of-generation token or `max_tokens`. No state
//! carries over between calls and nothing is sampled, so a reply is a pure function of the model
//! file, the prompt, `max_tokens` and llama.cpp's kernels ([`ReaderPins`]).

use std::num::NonZeroU32;
use std::path::Path;

use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::{LlamaChatMessage, LlamaModel};
use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::token::data::LlamaTokenData;
use serde::Serialize;

use super::decode::{argmax, decode_chunks};
use super::{FLASH_ATTENTION_OFF, Gguf, RUNTIME, backend, file_name, kernels, llama, whole_utf8};
use crate::error::{Error, Result};

/// Prompt tokens decoded per batch.
const N_BATCH: u32 = 512;

/// What a reader's replies depend on: the model file, its quantization, the runtime and its
/// kernels, and how it decodes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReaderPins {
    /// The model file's name.
    pub name: String,
    /// blake3 of the model file.
    pub model_blake3: String,
    /// Its quantization (GGUF `general.file_type`).
    pub quant: String,
    /// llama.cpp's binding and compiled kernels.
    pub runtime: String,
    /// How it decodes.
    pub decode: String,
}

/// One reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Generated {
    /// The reply, its bytes decoded as UTF-8 (a character cut at `max_tokens` dropped).
    pub text: String,
    /// Tokens of the templated prompt.
    pub prompt_tokens: usize,
    /// Tokens generated.
    pub completion_tokens: usize,
    /// Whether generation stopped at `max_tokens`, not at an end token.
    pub truncated: bool,
}

/// A GGUF model that answers prompts. Load once, call [`LlamaReader::answer`] per prompt.
pub struct LlamaReader {
    model: LlamaModel,
    pins: ReaderPins,
    threads: i32,
    /// Most tokens of prompt plus reply.
    max_context: u32,
}

impl LlamaReader {
    /// Loads the GGUF at `path`, to run on `threads` CPU threads with prompts and replies of at
    /// most `max_context` tokens together. A missing, truncated or non-GGUF file is
    /// [`Error::ModelUnavailable`] naming it.
    pub fn load(path: impl AsRef<Path>, threads: i32, max_context: u32) -> Result<LlamaReader> {
        let path = path.as_ref();
        let Gguf { model, model_blake3, quant } = Gguf::load(path)?;
        let pins = ReaderPins {
            name: file_name(path),
            model_blake3,
            quant,
            runtime: format!("{RUNTIME}; {}", kernels()),
            decode: format!(
                "chat template, one user message; greedy, ties to lower id; no flash attention; n_batch {N_BATCH}"
            ),
        };
        Ok(LlamaReader { model, pins, threads: threads.max(1), max_context })
    }

    /// What the replies depend on.
    pub fn pins(&self) -> &ReaderPins {
        &self.pins
    }

    /// The model's reply to `prompt` (one user message under the model's chat template), at most
    /// `max_tokens` long. A prompt that leaves no room for the reply within the reader's context
    /// is refused, naming its length.
    pub fn answer(&self, prompt: &str, max_tokens: usize) -> Result<Generated> {
        let template = self
            .model
            .chat_template(None)
            .map_err(|e| Error::Extractor(format!("{}: no chat template ({e})", self.pins.name)))?;
        let message = LlamaChatMessage::new("user".into(), prompt.into())
            .map_err(|e| Error::Extractor(format!("chat message: {e}")))?;
        let text = self
            .model
            .apply_chat_template(&template, &[message], true)
            .map_err(|e| Error::Extractor(format!("chat template: {e}")))?;
        let vocab = self.model.vocab();
        let tokens = vocab.tokenize(text.as_bytes(), true, true);
        let needed = tokens.len() + max_tokens;
        if tokens.is_empty() || needed > self.max_context as usize {
            return Err(Error::input(
                "prompt",
                format!(
                    "{} tokens and a reply of {max_tokens} exceed the reader's context of {}",
                    tokens.len(),
                    self.max_context
                ),
            ));
        }
        let n_ctx = u32::try_from(needed).unwrap_or(u32::MAX);
        let params = LlamaContextParams::default()
            .with_n_ctx(NonZeroU32::new(n_ctx))
            .with_n_seq_max(1)
            .with_flash_attention_policy(FLASH_ATTENTION_OFF)
            .with_n_batch(N_BATCH)
            .with_n_ubatch(N_BATCH)
            .with_n_threads(self.threads)
            .with_n_threads_batch(self.threads);
        let mut ctx = self.model.new_context(backend()?, params).map_err(|e| llama("context", e))?;
        let mut batch = LlamaBatch::new(N_BATCH as usize, 1);
        decode_chunks(&mut ctx, &mut batch, &tokens, 0, N_BATCH as usize, 0)?;
        let mut out: Vec<LlamaToken> = Vec::new();
        let mut last = batch.n_tokens() - 1;
        let mut truncated = true;
        while out.len() < max_tokens {
            let logits = ctx.get_logits_ith(last);
            let Some(token) = argmax(
                logits.iter().enumerate().map(|(i, l)| LlamaTokenData::new(LlamaToken(i as i32), *l, 0.0)),
            ) else {
                break;
            };
            if vocab.is_eog(token) {
                truncated = false;
                break;
            }
            out.push(token);
            if out.len() == max_tokens {
                break;
            }
            batch.clear();
            batch
                .add(token, (tokens.len() + out.len() - 1) as i32, &[0], true)
                .map_err(|e| llama("batch", e))?;
            ctx.decode(&mut batch).map_err(|e| llama("decode", e))?;
            last = 0;
        }
        let text = whole_utf8(vocab.detokenize(&out, false, false));
        Ok(Generated { text, prompt_tokens: tokens.len(), completion_tokens: out.len(), truncated })
    }
}
