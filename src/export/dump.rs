//! The lossless JSONL dump: a header with the store's pins, the extractors, then every round,
//! note, fact, queue entry and decision of a scope, each a line (vectors as little-endian hex),
//! so that `import` rebuilds the store without a model.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::Records;
use crate::error::{Error, Result};
use crate::model::fact::{fact_from, fact_struct};
use crate::model::round::Turn;
use crate::model::scope::Scope;
use crate::store::Pins;

pub(super) const DUMP_FORMAT: &str = "mnemon-dump";

/// Version 3 added notes and agents, version 4 the extractors (the header's pins are the store's
/// alone, and each round and fact names its extractor); version 2 and 3 dumps still import.
pub(super) const DUMP_VERSION: u32 = 4;

/// One line of a JSONL dump.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub(super) enum Line {
    Header {
        format: String,
        version: u32,
        pins: BTreeMap<String, String>,
    },
    /// An extractor that rounds and facts below name by `hash`.
    Extractor {
        hash: String,
        pins: BTreeMap<String, String>,
    },
    Round(RoundLine),
    Note(NoteLine),
    Fact(FactLine),
    Queued {
        user: String,
        round: String,
    },
    Decision(DecisionLine),
}

/// A dump's round: its user by name, its extractor by hash.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RoundLine {
    pub user: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    pub key: String,
    pub session: String,
    pub turns: Vec<Turn>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extractor: Option<String>,
    pub embedding_f32le: String,
}

/// A dump's note.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct NoteLine {
    pub user: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    pub key: String,
    pub note_kind: String,
    pub title: Option<String>,
    pub content: String,
    pub tags: Vec<String>,
    pub metadata: serde_json::Value,
    pub importance: f32,
    pub ts: String,
    pub updated: String,
    pub condensed_into: Option<String>,
    pub condenses: Option<String>,
    pub embedding_f32le: String,
}

/// A dump's decision.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct DecisionLine {
    pub user: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    pub at: String,
    pub decision: String,
    pub record: String,
    pub other: Option<String>,
    pub detail: String,
}

fact_struct! {
    /// A dump's fact: its round by key, its user by name, its extractor by hash.
    #[derive(Debug, Serialize, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub(super) struct FactLine {
        pub user: String,
        pub key: String,
        pub round: String,
        @statement,
        pub salience: f32,
        pub initial_salience: f32,
        #[serde(default)]
        pub pair_key: Option<String>,
        #[serde(default)]
        pub supersedes: Option<String>,
        #[serde(default)]
        pub superseded_by: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub extractor: Option<String>,
        pub embedding_f32le: String,
    }
}

pub(super) fn hex(v: &[f32]) -> String {
    let mut s = String::with_capacity(v.len() * 8);
    for x in v {
        for b in x.to_le_bytes() {
            let _ = write!(s, "{b:02x}");
        }
    }
    s
}

fn unhex(s: &str) -> Option<Vec<f32>> {
    if !s.len().is_multiple_of(8) || !s.is_ascii() {
        return None;
    }
    let bytes: Option<Vec<u8>> =
        (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).ok()).collect();
    Some(bytes?.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
}

/// A dump line's embedding: `dim` little-endian `f32` values in hex.
pub(super) fn embedding(hex: &str, dim: usize) -> std::result::Result<Vec<f32>, String> {
    let v = unhex(hex)
        .filter(|v| v.len() == dim)
        .ok_or_else(|| format!("embedding is not {dim} little-endian f32 values"))?;
    // A NaN would rank above everything; an infinity would swamp every other score.
    if v.iter().any(|x| !x.is_finite()) {
        return Err("embedding holds a value that is not a finite number".into());
    }
    Ok(v)
}

pub(super) fn export_dump(pins: &Pins, scope: Scope<'_>, records: &Records) -> Result<String> {
    let Records { rounds, vectors, facts, fact_vectors, notes, note_vectors, queued, decisions, extractors } =
        records;
    let user = scope.user;
    let mut out = String::new();
    let mut push = |line: &Line| -> Result<()> {
        out.push_str(&serde_json::to_string(line).map_err(|e| Error::input("dump", e.to_string()))?);
        out.push('\n');
        Ok(())
    };
    push(&Line::Header { format: DUMP_FORMAT.into(), version: DUMP_VERSION, pins: pins.with_hash() })?;
    let mut hashes: BTreeMap<i64, &str> = BTreeMap::new();
    for e in extractors.iter().filter(|e| e.rounds + e.facts > 0) {
        push(&Line::Extractor { hash: e.hash.clone(), pins: e.pins.clone() })?;
        hashes.insert(e.id, &e.hash);
    }
    let hash = |id: Option<i64>| id.and_then(|id| hashes.get(&id)).map(|h| (*h).to_owned());
    for (r, v) in rounds.iter().zip(vectors) {
        push(&Line::Round(RoundLine {
            user: user.into(),
            agent: r.agent.clone(),
            key: r.key.clone(),
            session: r.session.clone(),
            turns: r.turns.clone(),
            extractor: hash(r.extractor),
            embedding_f32le: hex(v),
        }))?;
    }
    let keys: BTreeMap<i64, &str> = rounds.iter().map(|r| (r.id, r.key.as_str())).collect();
    for (f, v) in facts.iter().zip(fact_vectors) {
        let f = f.clone();
        push(&Line::Fact(fact_from!(f => FactLine {
            user: user.into(),
            key: f.key,
            round: keys.get(&f.round_id).map(|k| (*k).to_owned()).unwrap_or_default(),
            salience: f.salience,
            initial_salience: f.initial_salience,
            pair_key: f.pair_key,
            supersedes: f.supersedes,
            superseded_by: f.superseded_by,
            extractor: hash(f.extractor),
            embedding_f32le: hex(v),
        })))?;
    }
    for (n, v) in notes.iter().zip(note_vectors) {
        push(&Line::Note(NoteLine {
            user: user.into(),
            agent: n.agent.clone(),
            key: n.key.clone(),
            note_kind: n.kind.as_str().to_owned(),
            title: n.title.clone(),
            content: n.content.clone(),
            tags: n.tags.clone(),
            metadata: serde_json::from_str(&n.metadata).unwrap_or_else(|_| serde_json::json!({})),
            importance: n.importance,
            ts: n.ts.clone(),
            updated: n.updated.clone(),
            condensed_into: n.condensed_into.clone(),
            condenses: n.condenses.clone(),
            embedding_f32le: hex(v),
        }))?;
    }
    for round in queued {
        push(&Line::Queued { user: user.into(), round: round.clone() })?;
    }
    for d in decisions {
        push(&Line::Decision(DecisionLine {
            user: user.into(),
            agent: d.agent.clone(),
            at: d.at.clone(),
            decision: d.kind.as_str().to_owned(),
            record: d.record.clone(),
            other: d.other.clone(),
            detail: d.detail.clone(),
        }))?;
    }
    Ok(out)
}
