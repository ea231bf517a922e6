//! Exports and imports: Markdown for people, plain text with every field and the decision log,
//! and a lossless JSONL dump that `import` loads into another store (no model needed for either).
//!
//! Owns the formats and their versions; renders through the read path's one renderer. Must not
//! rank, and never writes except through `import`.

mod dump;
mod import;
mod text;

pub use import::ImportReport;
pub(crate) use import::{check_dump, import};

use crate::engine::{Engine, resolve};
use crate::error::{Error, Result};
use crate::model::scope::Scope;
use crate::model::time::Timestamp;
use crate::store::{AsOf, DecisionRow, ExtractorRow, FactRow, NoteRow, RoundRow, Store, View};

/// Export formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    /// Readable Markdown: a heading per session, rounds as quoted blocks.
    Markdown,
    /// Plain text with every field and the decision log.
    Text,
    /// Lossless JSON Lines dump (pins, rounds with vectors, decisions), for [`Builder::import`](crate::Builder::import).
    Jsonl,
}

/// Everything an export shows of one scope, read in one go (vectors only for a dump).
pub(crate) struct Records {
    pub rounds: Vec<RoundRow>,
    pub vectors: Vec<Vec<f32>>,
    pub facts: Vec<FactRow>,
    pub fact_vectors: Vec<Vec<f32>>,
    pub notes: Vec<NoteRow>,
    pub note_vectors: Vec<Vec<f32>>,
    /// Keys of the rounds waiting for extraction.
    pub queued: Vec<String>,
    pub decisions: Vec<DecisionRow>,
    /// Every extractor the store knows, with what it produced in the view.
    pub extractors: Vec<ExtractorRow>,
}

impl Records {
    pub(crate) fn read(store: &Store, view: View<'_>, vectors: bool) -> Result<Records> {
        let mut records = Records {
            rounds: store.all_rounds(view)?,
            vectors: Vec::new(),
            facts: store.all_facts(view)?,
            fact_vectors: Vec::new(),
            notes: store.all_notes(view)?,
            note_vectors: Vec::new(),
            queued: Vec::new(),
            decisions: store.decisions(view)?,
            extractors: store.extractors(Some(view))?,
        };
        if !vectors {
            return Ok(records);
        }
        let dim = store.pins.dim()?;
        let corrupt = |what: &str| Error::Corrupt {
            path: store.path.clone(),
            reason: format!("{what} without a vector"),
        };
        let all = store.user_vectors(view)?;
        let by_id: std::collections::HashMap<i64, &[f32]> =
            all.ids.iter().copied().zip(all.data.chunks_exact(dim)).collect();
        records.vectors = records
            .rounds
            .iter()
            .map(|r| by_id.get(&r.id).map(|v| v.to_vec()))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| corrupt("a round"))?;
        records.fact_vectors =
            store.all_fact_vectors(view)?.data.chunks_exact(dim).map(<[f32]>::to_vec).collect();
        if records.fact_vectors.len() != records.facts.len() {
            return Err(corrupt("a fact"));
        }
        records.note_vectors =
            records.notes.iter().map(|n| store.note_vector(n.id)).collect::<Result<_>>()?;
        records.queued = store.queued_rounds(view)?;
        Ok(records)
    }
}

/// Everything `scope` sees, in `format`: deterministic bytes. With `as_of`, what it saw at that
/// time (see [`AsOf`]): Markdown and text only, since a dump is the whole store.
pub(crate) fn export(
    engine: &Engine,
    scope: Scope<'_>,
    format: ExportFormat,
    as_of: Option<&Timestamp>,
) -> Result<String> {
    scope.check()?;
    let time = as_of.cloned();
    if time.is_some() && format == ExportFormat::Jsonl {
        return Err(Error::input(
            "as_of",
            "a dump holds the whole store; export Markdown or text as of a time",
        ));
    }
    let store = engine.lock_store();
    let (view, _) =
        resolve(&store, scope)?.ok_or_else(|| Error::input("user_id", "no such user in this store"))?;
    let mut records = Records::read(&store, view, format == ExportFormat::Jsonl)?;
    match format {
        ExportFormat::Jsonl => dump::export_dump(&store.pins, scope, &records),
        _ => {
            let now = match time {
                Some(t) => {
                    let then = AsOf::read(&store, view, t)?;
                    let r = &mut records;
                    then.records(&mut r.rounds, &mut r.facts, &mut r.notes, &mut r.decisions);
                    Some(then.at.raw().to_owned())
                }
                None => store.user_now(view.user)?.map(|(raw, _)| raw),
            };
            text::render(&store.pins, scope, now.as_deref(), &records, format)
        }
    }
}
