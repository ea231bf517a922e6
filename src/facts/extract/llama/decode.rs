//! Decoding: rounds' prompts decoded from the restored head, then one generation step of every
//! live round per decode, each round's token chosen greedily under its grammar (the unconstrained
//! argmax first, the whole vocabulary only when the grammar refuses it) with the drafts looked up
//! in its own prompt and output kept as far as greedy choice agrees.

use std::sync::atomic::{AtomicBool, Ordering};

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::token::data::LlamaTokenData;
use llama_cpp_2::token::data_array::LlamaTokenDataArray;

use super::{LlamaExtractor, Speed, llama};
use crate::error::{Error, Result};
use crate::facts::extract::{Contract, Extraction};
use crate::model::round::Turn;

/// Decodes `tokens[start..]` of sequence `seq` at their positions in batches of `n_batch`; logits
/// for the last only.
pub(super) fn decode_chunks(
    ctx: &mut LlamaContext<'_>,
    batch: &mut LlamaBatch,
    tokens: &[LlamaToken],
    start: usize,
    n_batch: usize,
    seq: i32,
) -> Result<()> {
    let positions: Vec<usize> = (start..tokens.len()).collect();
    for chunk in positions.chunks(n_batch) {
        batch.clear();
        for &pos in chunk {
            batch
                .add(tokens[pos], pos as i32, &[seq], pos + 1 == tokens.len())
                .map_err(|e| llama("batch", e))?;
        }
        ctx.decode(batch).map_err(|e| llama("decode", e))?;
    }
    Ok(())
}

/// The best token by logit among `candidates` (ties to the lower id), if any is finite.
pub(super) fn argmax(candidates: impl Iterator<Item = LlamaTokenData>) -> Option<LlamaToken> {
    let mut best: Option<(f32, i32)> = None;
    for c in candidates {
        let (logit, id) = (c.logit(), c.id().0);
        if !logit.is_finite() {
            continue;
        }
        if best.is_none_or(|(l, i)| logit > l || (logit == l && id < i)) {
            best = Some((logit, id));
        }
    }
    best.map(|(_, id)| LlamaToken(id))
}

impl LlamaExtractor {
    /// [`Extractor::extract`], with llama.cpp's timing of the call.
    pub fn extract_measured(&self, turns: &[Turn]) -> Result<(Extraction, Speed)> {
        self.run(turns, &AtomicBool::new(false))
    }

    pub(super) fn run(&self, turns: &[Turn], cancel: &AtomicBool) -> Result<(Extraction, Speed)> {
        let (mut done, speed) = self.extract_batch_measured(&[turns], cancel)?;
        done.pop().expect("one outcome per round").map(|e| (e, speed))
    }

    /// Extracts several rounds in one context, each its own sequence: every round's prompt is
    /// decoded as it would be alone (its own batches, from the restored head), then generation
    /// decodes one token of every live round per call, so the weights are read once for all of
    /// them. An outcome per round, in order; the `Speed` covers the whole call.
    pub fn extract_batch_measured(
        &self,
        rounds: &[&[Turn]],
        cancel: &AtomicBool,
    ) -> Result<(Vec<Result<Extraction>>, Speed)> {
        let cancelled = || cancel.load(Ordering::Relaxed);
        let vocab = self.model.vocab();
        let c = &self.config;
        let mut outcomes: Vec<Option<Result<Extraction>>> = Vec::with_capacity(rounds.len());
        let mut live: Vec<Sequence> = Vec::new();
        for (i, turns) in rounds.iter().enumerate() {
            let tokens = match self.prompt(turns) {
                Ok(Some((prompt, grammar))) => Ok((vocab.tokenize(prompt.as_bytes(), true, true), grammar)),
                Ok(None) => {
                    // Nothing to read: the empty extraction, without the model.
                    let empty = Extraction::from_contract_output(c.contract, turns, "[]".into(), false, 0, 0);
                    outcomes.push(Some(Ok(empty)));
                    continue;
                }
                Err(e) => Err(e),
            };
            match tokens {
                Ok((t, _)) if t.len() + c.max_tokens > c.n_ctx as usize => {
                    outcomes.push(Some(Err(Error::Extractor(format!(
                        "prompt of {} tokens + {} generated exceeds the context of {}",
                        t.len(),
                        c.max_tokens,
                        c.n_ctx
                    )))))
                }
                Ok((tokens, grammar)) => {
                    outcomes.push(None);
                    let grammar = self.sampler(&grammar)?;
                    live.push(Sequence::new(i, live.len() as i32, tokens, grammar));
                }
                Err(e) => outcomes.push(Some(Err(e))),
            }
        }
        if live.is_empty() {
            return Ok((outcomes.into_iter().map(|o| o.expect("settled")).collect(), Speed::default()));
        }
        let mut ctx = self.context(live.len() as u32)?;
        let n_batch = c.n_batch as usize;
        let mut batch = LlamaBatch::new(n_batch.max(live.len() * (1 + c.draft)), live.len() as i32);
        let head = self.head(live.len() as u32)?;
        // Prompts, one sequence at a time, exactly as alone; each round's first token is chosen
        // from its own last logits before the next prompt overwrites them.
        for seq in &mut live {
            let start = match &head {
                Some(head)
                    if seq.tokens.len() > head.tokens.len() && seq.tokens.starts_with(&head.tokens) =>
                {
                    ctx.state_seq_set(&head.state, seq.id).map_err(|e| llama("state", e))?;
                    head.tokens.len()
                }
                _ => 0,
            };
            if cancelled() {
                return Err(Error::Cancelled);
            }
            decode_chunks(&mut ctx, &mut batch, &seq.tokens, start, n_batch, seq.id)?;
            seq.choose(self, ctx.get_logits_ith(batch.n_tokens() - 1));
        }
        let prompted = ctx.timings();
        // Generation: each step decodes the chosen token of every live sequence, followed by its
        // draft; a sequence keeps the drafted tokens greedy choice agrees with.
        loop {
            if cancelled() {
                return Err(Error::Cancelled);
            }
            let mut steps: Vec<(i32, Vec<LlamaToken>)> = Vec::new();
            for seq in live.iter_mut().filter(|s| s.next.is_some()) {
                let token = seq.next.take().expect("filtered");
                // Room for the drafted tokens: the generation bound and the context.
                let room = (c.max_tokens - seq.generated).min(c.n_ctx as usize - seq.pos - 1);
                let draft = lookup(&seq.tokens, token, c.draft.min(room));
                steps.push((seq.id, std::iter::once(token).chain(draft).collect()));
            }
            if steps.is_empty() {
                break;
            }
            // Only sequences with as many rows decode together: llama.cpp splits a batch of
            // several KV streams into micro-batches of equal shares, so a round with more rows
            // than the others would be cut where they end, a cut that depends on them.
            steps.sort_by_key(|(id, rows)| (rows.len(), *id));
            for same in steps.chunk_by(|a, b| a.1.len() == b.1.len()) {
                batch.clear();
                for (id, rows) in same {
                    // A sequence's id is its place in `live`.
                    let pos = live[*id as usize].pos;
                    for (i, &t) in rows.iter().enumerate() {
                        batch.add(t, (pos + i) as i32, &[*id], true).map_err(|e| llama("batch", e))?;
                    }
                }
                ctx.decode(&mut batch).map_err(|e| llama("decode", e))?;
                let mut row = 0;
                for (id, rows) in same {
                    let seq = &mut live[*id as usize];
                    seq.steps += 1;
                    // Row k's logits choose the token after rows[k]; rows[k + 1] is already
                    // decoded at that position, so it stands if greedy choice agrees.
                    let mut k = 0;
                    loop {
                        seq.tokens.push(rows[k]);
                        seq.pos += 1;
                        seq.choose(self, ctx.get_logits_ith((row + k) as i32));
                        if k + 1 == rows.len() || seq.next != Some(rows[k + 1]) {
                            break;
                        }
                        seq.next = None;
                        k += 1;
                    }
                    if k + 1 < rows.len() {
                        // Rows decoded past a token greedy choice did not take.
                        ctx.kv_cache_seq_rm(seq.id, Some(seq.pos as u32), None)
                            .map_err(|e| llama("kv", e))?;
                    }
                    row += rows.len();
                }
            }
        }
        // llama.cpp counts a decode of several tokens as prompt, so generation is what came
        // after the prompts.
        let t = ctx.timings();
        let ms = |t: &llama_cpp_2::timing::LlamaTimings| t.t_p_eval_ms() + t.t_eval_ms();
        let speed = Speed {
            prompt_ms: ms(&prompted),
            prompt_tokens: usize::try_from(prompted.n_p_eval()).unwrap_or(0),
            generation_ms: ms(&t) - ms(&prompted),
            generated_tokens: live.iter().map(|s| s.generated).sum(),
            generation_steps: live.iter().map(|s| s.steps).sum(),
        };
        for seq in live {
            let round = seq.round;
            outcomes[round] = Some(Ok(seq.finish(c.contract, rounds[round])));
        }

        Ok((outcomes.into_iter().map(|o| o.expect("settled")).collect(), speed))
    }
}

/// One round being decoded: its sequence in the context, the grammar's state, the output so far
/// and the token to decode next (none once it has ended).
struct Sequence {
    round: usize,
    id: i32,
    /// The prompt, then every generated token decoded so far.
    tokens: Vec<LlamaToken>,
    prompt_len: usize,
    grammar: LlamaSampler,
    out: Vec<u8>,
    pos: usize,
    generated: usize,
    /// Generation decodes this round took part in.
    steps: usize,
    stopped: bool,
    guard: crate::facts::extract::RepeatGuard,
    next: Option<LlamaToken>,
}

impl Sequence {
    fn new(round: usize, id: i32, tokens: Vec<LlamaToken>, grammar: LlamaSampler) -> Sequence {
        let pos = tokens.len();
        Sequence {
            round,
            id,
            prompt_len: tokens.len(),
            tokens,
            grammar,
            out: Vec::new(),
            pos,
            generated: 0,
            steps: 0,
            stopped: true,
            guard: crate::facts::extract::RepeatGuard::default(),
            next: None,
        }
    }

    /// Picks the next token from `logits` (greedy under the grammar), or ends the sequence: at
    /// the token bound, an end-of-generation token, a grammar dead end or a repeated item.
    fn choose(&mut self, x: &LlamaExtractor, logits: &[f32]) {
        if self.generated >= x.config.max_tokens {
            return;
        }
        let vocab = x.model.vocab();
        let all =
            || logits.iter().enumerate().map(|(i, l)| LlamaTokenData::new(LlamaToken(i as i32), *l, 0.0));
        let Some(free) = argmax(all()) else { return };
        let mut one =
            LlamaTokenDataArray::new(vec![LlamaTokenData::new(free, logits[free.0 as usize], 0.0)], false);
        self.grammar.apply(&mut one);
        let token = if one.data[0].logit().is_finite() {
            free
        } else {
            let mut every = LlamaTokenDataArray::new(all().collect(), false);
            self.grammar.apply(&mut every);
            match argmax(every.data.into_iter()) {
                Some(t) => t,
                None => return, // the grammar allows nothing: a dead end
            }
        };
        if vocab.is_eog(token) {
            self.stopped = false;
            return;
        }
        self.grammar.accept(token);
        self.out.extend(vocab.token_to_piece(token, false, None));
        self.generated += 1;
        if let Some(keep) = self.guard.feed(&self.out) {
            self.out.truncate(keep);
            self.out.push(b']');
            self.stopped = false;
            return;
        }
        if self.generated < x.config.max_tokens {
            self.next = Some(token);
        }
    }

    fn finish(self, contract: Contract, turns: &[Turn]) -> Extraction {
        let text = String::from_utf8(self.out)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
        Extraction::from_contract_output(contract, turns, text, self.stopped, self.prompt_len, self.generated)
    }
}

/// The shortest and longest run of last tokens [`lookup`] matches.
const LOOKUP_NGRAM: (usize, usize) = (2, 4);

/// A draft of at most `max` tokens to follow `history` + `last`: where the last n tokens
/// (the longest n in [`LOOKUP_NGRAM`] that occurs) last occurred before, what followed them.
/// The output quotes the round and repeats the prompt's key names, so what followed a match
/// there is often what the model writes next. A pure function of the tokens.
fn lookup(history: &[LlamaToken], last: LlamaToken, max: usize) -> Vec<LlamaToken> {
    if max == 0 {
        return Vec::new();
    }
    let at = |i: usize| if i == history.len() { last } else { history[i] };
    let len = history.len() + 1;
    for n in (LOOKUP_NGRAM.0..=LOOKUP_NGRAM.1).rev() {
        if n >= len {
            continue;
        }
        // Latest start `i` of an earlier occurrence with at least one token after it.
        let found = (0..len - n).rev().find(|&i| (0..n).all(|k| at(i + k) == at(len - n + k)));
        if let Some(i) = found {
            let max = max.min(1 << (n - 1));
            return (i + n..(i + n + max).min(len)).map(at).collect();
        }
    }
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(ids: &[i32]) -> Vec<LlamaToken> {
        ids.iter().map(|&i| LlamaToken(i)).collect()
    }

    #[test]
    fn lookup_drafts_what_followed_the_latest_longest_match() {
        // "7 8" occurs twice before; the latest is followed by 9 1.
        let history = t(&[7, 8, 5, 6, 7, 8, 9, 1, 2, 7]);
        assert_eq!(lookup(&history, LlamaToken(8), 2), t(&[9, 1]));
        // A longer match wins over a later shorter one: "1 2 3" at 0 beats "2 3" at 5.
        let history = t(&[1, 2, 3, 4, 4, 2, 3, 5, 1, 2]);
        assert_eq!(lookup(&history, LlamaToken(3), 3), t(&[4, 4, 2]));
        // The draft stops at the end of what is known...
        let history = t(&[1, 2, 3, 4, 6, 1, 2, 3]);
        assert_eq!(lookup(&history, LlamaToken(4), 8), t(&[6, 1, 2, 3, 4]));
        // ...and is as long as the match earns: 2 tokens after 2, 4 after 3, 8 after 4.
        let history = t(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 1, 2, 3]);
        assert_eq!(lookup(&history, LlamaToken(4), 16), t(&[5, 6, 7, 8, 9, 10, 11, 12]));
        let history = t(&[9, 2, 3, 5, 6, 7, 8, 9, 1, 2]);
        assert_eq!(lookup(&history, LlamaToken(3), 16), t(&[5, 6]));
    }

    #[test]
    fn lookup_drafts_nothing_without_a_match_or_room() {
        assert!(lookup(&t(&[1, 2, 3, 4]), LlamaToken(5), 4).is_empty());
        assert!(lookup(&t(&[1, 2, 1]), LlamaToken(2), 0).is_empty());
        // A single repeated token is not a match: the shortest run is two tokens.
        assert!(lookup(&t(&[9, 1, 2]), LlamaToken(9), 4).is_empty());
        assert!(lookup(&[], LlamaToken(1), 4).is_empty());
    }
}
