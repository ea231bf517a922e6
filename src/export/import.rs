//! Importing a JSONL dump: every line parsed and every record and reference checked before the
//! store is touched, then the whole dump written in one transaction (a new store gets the dump's
//! pins; an existing one must have them, and the dump's users no records there yet).

use std::collections::BTreeMap;

use serde::Serialize;

use super::dump::{DUMP_FORMAT, DUMP_VERSION, DecisionLine, FactLine, Line, NoteLine, RoundLine, embedding};
use crate::config::Config;
use crate::error::{Error, Result};
use crate::model::decision::DecisionKind;
use crate::model::fact::{fact_day, fact_from};
use crate::model::note::{
    NoteKind, check_content, check_importance, check_metadata, check_tags, check_title,
};
use crate::model::round::{index_text, normalized_key, round_key, round_text};
use crate::model::scope::{Scope, check_user};
use crate::model::time::{Timestamp, day_number};
use crate::read::render::count_tokens;
use crate::store::{
    DecisionRow, FactRow, NoteRow, OpenMode, Pins, Place, RoundRow, Store, View, extractor_hash,
    split_legacy, write,
};

/// What an import loaded.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ImportReport {
    /// Users the dump held, sorted.
    pub users: Vec<String>,
    /// Rounds written.
    pub rounds: usize,
    /// Facts written.
    pub facts: usize,
    /// Notes written.
    pub notes: usize,
    /// Rounds that wait for extraction.
    pub queued: usize,
    /// Decisions written.
    pub decisions: usize,
    /// Whether the store file was created by this import.
    pub created: bool,
}

/// A fact line: its user, its round's key, the fact, its vector, its extractor's hash.
struct ParsedFact {
    user: String,
    round: String,
    row: FactRow,
    vector: Vec<f32>,
    extractor: Option<String>,
}

struct Parsed {
    pins: Pins,
    /// Extractors by hash.
    extractors: BTreeMap<String, BTreeMap<String, String>>,
    /// (user, round, vector, its extractor's hash)
    rounds: Vec<(String, RoundRow, Vec<f32>, Option<String>)>,
    facts: Vec<ParsedFact>,
    notes: Vec<(String, NoteRow, Vec<f32>)>,
    /// (user, round key)
    queued: Vec<(String, String)>,
    decisions: Vec<(String, DecisionRow)>,
}

fn parse_dump(dump: &str) -> Result<Parsed> {
    let mut lines = dump.lines().enumerate().filter(|(_, l)| !l.trim().is_empty());
    let bad = |line: usize, reason: String| Error::Import { line: line + 1, reason };
    let (n, first) = lines.next().ok_or_else(|| bad(0, "empty dump".into()))?;
    // A version 2 or 3 dump came from a schema 3 or 4 store, whose pins held its extractor's:
    // they are split as a migration splits them, and its rounds and facts name that extractor.
    let (pins, legacy) = match serde_json::from_str::<Line>(first).map_err(|e| bad(n, e.to_string()))? {
        Line::Header { format, version, pins } if format == DUMP_FORMAT && version == DUMP_VERSION => {
            (Pins::from_stored(pins).map_err(|e| bad(n, e))?, None)
        }
        Line::Header { format, version: 2..=3, pins } if format == DUMP_FORMAT => {
            let old = Pins::from_stored(pins).map_err(|e| bad(n, e))?;
            split_legacy(old.0)
        }
        _ => return Err(bad(n, format!("expected a {DUMP_FORMAT} version {DUMP_VERSION} header"))),
    };
    let mut reader = Reader::new(pins, legacy)?;
    for (n, text) in lines {
        let line = serde_json::from_str::<Line>(text).map_err(|e| bad(n, e.to_string()))?;
        reader.read(line).map_err(|reason| bad(n, reason))?;
    }
    Ok(reader.parsed)
}

/// Reads a dump's lines after its header, each checked against those before it.
struct Reader {
    parsed: Parsed,
    dim: usize,
    /// A version 2 or 3 dump's one extractor, by hash (its rounds and facts name none).
    legacy: Option<String>,
    /// (user, round key) → index in `parsed.rounds`.
    round_at: BTreeMap<(String, String), usize>,
}

/// Checks a scope's names, as a reason.
fn scope_of(user: &str, agent: &Option<String>) -> std::result::Result<(), String> {
    Scope { user, agent: agent.as_deref() }.check().map_err(|e| e.to_string())
}

impl Reader {
    fn new(pins: Pins, legacy: Option<BTreeMap<String, String>>) -> Result<Reader> {
        let dim = pins.dim()?;
        let mut parsed = Parsed {
            pins,
            extractors: BTreeMap::new(),
            rounds: Vec::new(),
            facts: Vec::new(),
            notes: Vec::new(),
            queued: Vec::new(),
            decisions: Vec::new(),
        };
        let hash = legacy.as_ref().map(extractor_hash);
        if let (Some(hash), Some(pins)) = (&hash, legacy) {
            parsed.extractors.insert(hash.clone(), pins);
        }
        Ok(Reader { parsed, dim, legacy: hash, round_at: BTreeMap::new() })
    }

    fn read(&mut self, line: Line) -> std::result::Result<(), String> {
        match line {
            Line::Header { .. } => Err("a second header".into()),
            Line::Extractor { hash, pins } => self.extractor(hash, pins),
            Line::Round(line) => self.round(line),
            Line::Fact(line) => self.fact(line),
            Line::Queued { user, round } => self.queued(user, round),
            Line::Note(line) => self.note(line),
            Line::Decision(line) => self.decision(line),
        }
    }

    /// The extractor a round or fact names by hash, declared before it (a version 2 or 3 dump
    /// names none: its one extractor).
    fn known(&self, hash: Option<String>) -> std::result::Result<Option<String>, String> {
        match (&self.legacy, hash) {
            (Some(_), Some(_)) => Err("a version 2 or 3 dump names no extractor".into()),
            (_, Some(h)) if !self.parsed.extractors.contains_key(&h) => {
                Err(format!("extractor {h} is not declared before it"))
            }
            (legacy, hash) => Ok(hash.or_else(|| legacy.clone())),
        }
    }

    fn extractor(&mut self, hash: String, pins: BTreeMap<String, String>) -> std::result::Result<(), String> {
        if self.legacy.is_some() {
            return Err("a version 2 or 3 dump has no extractor lines".into());
        }
        let expected = extractor_hash(&pins);
        if expected != hash {
            return Err(format!("extractor {hash}: its pins hash to {expected}"));
        }
        self.parsed.extractors.insert(hash, pins);
        Ok(())
    }

    fn round(&mut self, line: RoundLine) -> std::result::Result<(), String> {
        let RoundLine { user, agent, key, session, turns, extractor, embedding_f32le } = line;
        scope_of(&user, &agent)?;
        let first = turns.first().ok_or("a round without turns")?;
        let ts = Timestamp::parse(&first.ts).map_err(|e| e.to_string())?;
        let text = round_text(&turns);
        let expected = round_key(&ts, &session, &text, agent.as_deref());
        if expected != key {
            return Err(format!("round key {key} does not match its content (expected {expected})"));
        }
        let vector = embedding(&embedding_f32le, self.dim)?;
        let row = RoundRow {
            id: 0,
            key,
            session,
            ts: first.ts.clone(),
            ts_unix: ts.unix_seconds(),
            day: day_number(ts.date()),
            norm_key: normalized_key(&text),
            text: index_text(&turns),
            turns,
            agent,
            extractor: None,
        };
        let extractor = self.known(extractor)?;
        self.round_at.insert((user.clone(), row.key.clone()), self.parsed.rounds.len());
        self.parsed.rounds.push((user, row, vector, extractor));
        Ok(())
    }

    fn fact(&mut self, mut line: FactLine) -> std::result::Result<(), String> {
        let (user, round) = (std::mem::take(&mut line.user), std::mem::take(&mut line.round));
        check_user(&user).map_err(|e| e.to_string())?;
        let key = &line.key;
        let Some(&at) = self.round_at.get(&(user.clone(), round.clone())) else {
            return Err(format!("fact {key}: no round {round} before it"));
        };
        if !key.starts_with(&format!("{round}/")) {
            return Err(format!("fact key {key} does not name its round {round}"));
        }
        if !(0.0..=1.0).contains(&line.salience) || !(0.0..=1.0).contains(&line.initial_salience) {
            return Err("salience must be in 0..=1".into());
        }
        let vector = embedding(&line.embedding_f32le, self.dim)?;
        let owner = &self.parsed.rounds[at].1;
        let day = fact_day(line.valid_time.as_deref(), owner.day);
        let (session, agent) = (owner.session.clone(), owner.agent.clone());
        let norm_key = normalized_key(&line.content);
        let extractor = self.known(line.extractor.take())?;
        let row = fact_from!(line => FactRow {
            id: 0,
            round_id: 0,
            key: line.key,
            session,
            day,
            norm_key,
            salience: line.salience,
            initial_salience: line.initial_salience,
            pair_key: line.pair_key,
            supersedes: line.supersedes,
            superseded_by: line.superseded_by,
            agent,
            extractor: None,
        });
        self.parsed.facts.push(ParsedFact { user, round, row, vector, extractor });
        Ok(())
    }

    fn queued(&mut self, user: String, round: String) -> std::result::Result<(), String> {
        check_user(&user).map_err(|e| e.to_string())?;
        let Some(&at) = self.round_at.get(&(user.clone(), round.clone())) else {
            return Err(format!("queued round {round} is not in the dump before it"));
        };
        // A queued round waits for its (next) extraction.
        if self.legacy.is_some() {
            self.parsed.rounds[at].3 = None;
        }
        self.parsed.queued.push((user, round));
        Ok(())
    }

    fn note(&mut self, line: NoteLine) -> std::result::Result<(), String> {
        let NoteLine {
            user,
            agent,
            key,
            note_kind,
            title,
            content,
            tags,
            metadata,
            importance,
            ts,
            updated,
            condensed_into,
            condenses,
            embedding_f32le,
        } = line;
        scope_of(&user, &agent)?;
        let valid_key = |k: &str| {
            let hex = k.strip_prefix("n-").unwrap_or_default();
            let (hash, suffix) = hex.split_once('-').unwrap_or((hex, "2"));
            hash.len() == 16
                && hash.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
                && suffix.parse::<u32>().is_ok_and(|s| s >= 2)
        };
        let linked = condenses.iter().flat_map(|c| c.split(' ')).chain(condensed_into.as_deref());
        if !valid_key(&key) || linked.clone().any(|k| !valid_key(k)) {
            return Err(format!("note {key}: not a note key, or links to one that is not"));
        }
        let field = |e: Error| format!("note {key}: {e}");
        let kind = NoteKind::parse(&note_kind, "note_kind").map_err(field)?;
        check_content(&content, "content").map_err(field)?;
        if let Some(t) = &title {
            check_title(t, "title").map_err(field)?;
        }
        let checked_tags = check_tags(&tags, "tags").map_err(field)?;
        if checked_tags != tags {
            return Err(format!("note {key}: tags are not trimmed and distinct"));
        }
        let metadata = check_metadata(Some(&metadata), "metadata").map_err(field)?;
        check_importance(Some(importance), "importance").map_err(field)?;
        let created = Timestamp::parse(&ts).map_err(field)?;
        let changed = Timestamp::parse(&updated).map_err(field)?;
        let vector = embedding(&embedding_f32le, self.dim)?;
        let row = NoteRow {
            id: 0,
            key,
            agent,
            kind,
            title,
            tokens: count_tokens(&content) as i64,
            norm_key: normalized_key(&content),
            content,
            tags,
            metadata,
            importance,
            ts,
            ts_unix: created.unix_seconds(),
            day: day_number(created.date()),
            updated,
            updated_unix: changed.unix_seconds(),
            condensed_into,
            condenses,
        };
        self.parsed.notes.push((user, row, vector));
        Ok(())
    }

    fn decision(&mut self, line: DecisionLine) -> std::result::Result<(), String> {
        let DecisionLine { user, agent, at, decision, record, other, detail } = line;
        scope_of(&user, &agent)?;
        let kind = DecisionKind::parse(&decision)
            .ok_or_else(|| format!("{decision:?} is not a kind of decision"))?;
        self.parsed.decisions.push((user, DecisionRow { id: 0, agent, at, kind, record, other, detail }));
        Ok(())
    }
}

/// Everything [`import`] checks before it touches a file.
pub(crate) fn check_dump(dump: &str) -> Result<()> {
    parse_dump(dump).map(|_| ())
}

pub(crate) fn import(place: &Place, dump: &str, config: &Config) -> Result<ImportReport> {
    let parsed = parse_dump(dump)?;
    let new_file = match place {
        Place::File(path) => !path.exists() || std::fs::metadata(path)?.len() == 0,
        Place::Remote(_) => false,
    };
    let mut store = Store::open_at(place, config, OpenMode::Expect(&parsed.pins))?;
    let created = match place {
        Place::File(_) => new_file,
        // A database store with no user yet is as new as a new file.
        Place::Remote(_) => store.user_names()?.is_empty(),
    };
    let users: std::collections::BTreeSet<&String> = parsed
        .rounds
        .iter()
        .map(|r| &r.0)
        .chain(parsed.notes.iter().map(|n| &n.0))
        .chain(parsed.decisions.iter().map(|d| &d.0))
        .collect();
    for user in &users {
        if let Some((id, _)) = store.user(user)? {
            let view = View { user: id, agent: None };
            if !store.all_rounds(view)?.is_empty() || !store.all_notes(view)?.is_empty() {
                return Err(Error::Import {
                    line: 0,
                    reason: format!("user {user:?} already has records in this store"),
                });
            }
        }
    }
    let tx = store.begin()?;
    let mut extractor_ids: BTreeMap<&str, i64> = BTreeMap::new();
    for (hash, pins) in &parsed.extractors {
        extractor_ids.insert(hash, write::register(&tx, pins)?);
    }
    let extractor = |hash: &Option<String>| hash.as_deref().map(|h| extractor_ids[h]);
    let mut ids = BTreeMap::new();
    for user in &users {
        ids.insert(user.as_str(), write::ensure_user(&tx, user)?);
    }
    let mut latest: BTreeMap<i64, (String, i64)> = BTreeMap::new();
    let mut round_ids_by_key: BTreeMap<(&str, &str), i64> = BTreeMap::new();
    // Each run of one user's rounds in one call (PostgreSQL writes them a thousand a statement).
    for run in parsed.rounds.chunk_by(|a, b| a.0 == b.0) {
        let user = run[0].0.as_str();
        let id = ids[user];
        let stored: Vec<RoundRow> = run
            .iter()
            .map(|(_, row, _, hash)| RoundRow { extractor: extractor(hash), ..row.clone() })
            .collect();
        let rows: Vec<(&RoundRow, &[f32])> =
            stored.iter().zip(run).map(|(row, r)| (row, r.2.as_slice())).collect();
        let round_ids = write::insert_rounds(&tx, id, &rows).map_err(|e| match e {
            Error::Sqlite(e) => Error::Import { line: 0, reason: format!("rounds of {user:?}: {e}") },
            other => other,
        })?;
        for ((_, row, _, _), round_id) in run.iter().zip(round_ids) {
            round_ids_by_key.insert((user, row.key.as_str()), round_id);
            let entry = latest.entry(id).or_insert_with(|| (row.ts.clone(), row.ts_unix));
            if row.ts_unix > entry.1 {
                *entry = (row.ts.clone(), row.ts_unix);
            }
        }
    }
    for ParsedFact { user, round, row: fact, vector, extractor: hash } in &parsed.facts {
        let row = FactRow {
            round_id: round_ids_by_key[&(user.as_str(), round.as_str())],
            extractor: extractor(hash),
            ..fact.clone()
        };
        write::insert_fact(&tx, ids[user.as_str()], &row, vector).map_err(|e| match e {
            Error::Sqlite(e) => Error::Import { line: 0, reason: format!("fact {}: {e}", row.key) },
            other => other,
        })?;
    }
    for (user, note, vector) in &parsed.notes {
        let id = ids[user.as_str()];
        write::insert_note(&tx, id, note, vector).map_err(|e| match e {
            Error::Sqlite(e) => Error::Import { line: 0, reason: format!("note {}: {e}", note.key) },
            other => other,
        })?;
        let entry = latest.entry(id).or_insert_with(|| (note.updated.clone(), note.updated_unix));
        if note.updated_unix > entry.1 {
            *entry = (note.updated.clone(), note.updated_unix);
        }
    }
    for (user, round) in &parsed.queued {
        write::enqueue(&tx, ids[user.as_str()], round_ids_by_key[&(user.as_str(), round.as_str())])?;
    }
    let entries: Vec<write::Entry<'_>> = parsed
        .decisions
        .iter()
        .map(|(user, d)| write::Entry {
            user_id: ids[user.as_str()],
            agent: d.agent.as_deref(),
            at: &d.at,
            kind: d.kind,
            record: &d.record,
            other: d.other.as_deref(),
            detail: &d.detail,
        })
        .collect();
    write::log_many(&tx, &entries)?;
    for id in ids.values() {
        write::touch_user(&tx, *id, latest.get(id).map(|(ts, unix)| (ts.as_str(), *unix)))?;
    }
    tx.commit()?;
    Ok(ImportReport {
        users: users.into_iter().cloned().collect(),
        rounds: parsed.rounds.len(),
        facts: parsed.facts.len(),
        notes: parsed.notes.len(),
        queued: parsed.queued.len(),
        decisions: parsed.decisions.len(),
        created,
    })
}
