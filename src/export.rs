//! Export (Markdown, text, lossless JSONL) and import of a JSONL dump.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::config::Config;
use crate::error::{Error, Result};
use crate::memory::{check_scope, check_user, round_key, ExportFormat, Scope};
use crate::notes::{check_content, check_importance, check_metadata, check_tags, check_title, NoteKind};
use crate::render::{self, RenderRound, Style};
use crate::round::{normalized_key, round_text, Turn};
use crate::store::{write, DecisionRow, FactRow, NoteRow, OpenMode, Pins, Place, RoundRow, Store, View};
use crate::time::{day_number, Timestamp};

const DUMP_FORMAT: &str = "mnemon-dump";
/// Version 3 added notes and agents, version 4 the extractors (the header's pins are the store's
/// alone, and each round and fact names its extractor); version 2 and 3 dumps still import.
const DUMP_VERSION: u32 = 4;

/// One line of a JSONL dump.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
enum Line {
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
    Round {
        user: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agent: Option<String>,
        key: String,
        session: String,
        turns: Vec<Turn>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        extractor: Option<String>,
        embedding_f32le: String,
    },
    Note {
        user: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agent: Option<String>,
        key: String,
        note_kind: String,
        title: Option<String>,
        content: String,
        tags: Vec<String>,
        metadata: serde_json::Value,
        importance: f32,
        ts: String,
        updated: String,
        condensed_into: Option<String>,
        condenses: Option<String>,
        embedding_f32le: String,
    },
    Fact {
        user: String,
        key: String,
        round: String,
        content: String,
        raw: String,
        mention: Option<String>,
        valid_time: Option<String>,
        subject: Option<String>,
        predicate: Option<String>,
        object: Option<String>,
        salience: f32,
        initial_salience: f32,
        #[serde(default)]
        pair_key: Option<String>,
        #[serde(default)]
        supersedes: Option<String>,
        #[serde(default)]
        superseded_by: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        extractor: Option<String>,
        embedding_f32le: String,
    },
    Queued {
        user: String,
        round: String,
    },
    Decision {
        user: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agent: Option<String>,
        at: String,
        decision: String,
        record: String,
        other: Option<String>,
        detail: String,
    },
}

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

fn hex(v: &[f32]) -> String {
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
fn embedding(hex: &str, dim: usize) -> std::result::Result<Vec<f32>, String> {
    unhex(hex)
        .filter(|v| v.len() == dim)
        .ok_or_else(|| format!("embedding is not {dim} little-endian f32 values"))
}

fn view<'a>(r: &'a RoundRow, facts: &'a [String]) -> RenderRound<'a> {
    RenderRound {
        id: r.id,
        key: &r.key,
        session: &r.session,
        ts: &r.ts,
        ts_unix: r.ts_unix,
        turns: &r.turns,
        facts,
    }
}

fn opt(v: &Option<String>) -> &str {
    v.as_deref().unwrap_or("-")
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
    pub extractors: Vec<crate::store::ExtractorRow>,
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

/// A scope's name in export headings: the user, and the agent when there is one.
fn heading(scope: Scope<'_>) -> String {
    match scope.agent {
        None => format!("`{}`", scope.user),
        Some(a) => format!("`{}` (agent `{a}`)", scope.user),
    }
}

fn note_dates(n: &NoteRow) -> String {
    if n.updated == n.ts {
        format!("**{}**", n.ts)
    } else {
        format!("**{}** (updated **{}**)", n.ts, n.updated)
    }
}

/// Notes oldest first (by `ts`, then key), as people read them.
fn chronological(notes: &[NoteRow]) -> Vec<NoteRow> {
    let mut sorted = notes.to_vec();
    sorted.sort_by(|a, b| a.ts_unix.cmp(&b.ts_unix).then(a.key.cmp(&b.key)));
    sorted
}

/// The notes section of a Markdown export.
fn notes_markdown(out: &mut String, notes: &[NoteRow]) {
    let _ = writeln!(out, "## Notes\n");
    for n in notes {
        let _ = writeln!(out, "### {}\n", n.title.as_deref().unwrap_or(&n.key));
        let mut line =
            format!("`{}` · {} · importance {} · {}", n.key, n.kind.as_str(), n.importance, note_dates(n));
        if let Some(a) = &n.agent {
            line.push_str(&format!(" · agent `{a}`"));
        }
        if !n.tags.is_empty() {
            let tags: Vec<String> = n.tags.iter().map(|t| format!("`{t}`")).collect();
            line.push_str(&format!(" · tags {}", tags.join(", ")));
        }
        let _ = writeln!(out, "{line}\n");
        if let Some(into) = &n.condensed_into {
            let _ = writeln!(out, "*Condensed into `{into}`.*\n");
        }
        for l in n.content.lines() {
            out.push_str(if l.is_empty() { ">\n" } else { "> " });
            if !l.is_empty() {
                out.push_str(l);
                out.push('\n');
            }
        }
        out.push('\n');
        if let Some(keys) = &n.condenses {
            let keys: Vec<String> = keys.split(' ').map(|k| format!("`{k}`")).collect();
            let _ = writeln!(out, "Condenses {}.\n", keys.join(", "));
        }
        if n.metadata != "{}" {
            let _ = writeln!(out, "metadata: `{}`\n", n.metadata);
        }
    }
}

/// The notes section of a text export: every field.
fn notes_text(out: &mut String, notes: &[NoteRow]) {
    let _ = writeln!(out, "\nnotes: {}", notes.len());
    for n in notes {
        let _ = writeln!(
            out,
            "  {} kind {} importance {} ts {} updated {} tokens {} agent {} title {} tags {} condensed_into {} condenses {}\n    metadata: {}\n    {}",
            n.key,
            n.kind.as_str(),
            n.importance,
            n.ts,
            n.updated,
            n.tokens,
            opt(&n.agent),
            opt(&n.title),
            serde_json::to_string(&n.tags).unwrap_or_default(),
            opt(&n.condensed_into),
            opt(&n.condenses),
            n.metadata,
            n.content.replace('\n', "\n    ")
        );
    }
}

pub(crate) fn export(
    pins: &Pins,
    scope: Scope<'_>,
    now: Option<&str>,
    records: &Records,
    format: ExportFormat,
) -> Result<String> {
    let Records { rounds, facts, notes, decisions, extractors, .. } = records;
    // Markdown shows superseded facts struck through with their winner; text shows them in its
    // record list below; contexts never show them.
    let mut lines: BTreeMap<i64, Vec<String>> = BTreeMap::new();
    for f in facts {
        let fact = crate::memory::Fact::from(f.clone());
        let line = fact.line();
        let line = match (format, &f.superseded_by) {
            (ExportFormat::Markdown, Some(winner)) => format!("~~{line}~~ (superseded by `{winner}`)"),
            (_, Some(_)) => continue,
            (ExportFormat::Markdown, None) if !fact.supersedes.is_empty() => {
                let keys: Vec<String> = fact.supersedes.iter().map(|k| format!("`{k}`")).collect();
                format!("{line} → supersedes {}", keys.join(", "))
            }
            _ => line,
        };
        lines.entry(f.round_id).or_default().push(line);
    }
    let none = Vec::new();
    let views: Vec<RenderRound<'_>> =
        rounds.iter().map(|r| view(r, lines.get(&r.id).unwrap_or(&none))).collect();
    let sessions = rounds.iter().map(|r| &r.session).collect::<std::collections::BTreeSet<_>>().len();
    let mut out = String::new();
    match format {
        ExportFormat::Markdown => {
            let _ = writeln!(out, "# Memory of {}\n", heading(scope));
            let _ = writeln!(
                out,
                "{} rounds in {} sessions; latest **{}**.\n",
                rounds.len(),
                sessions,
                now.unwrap_or("none")
            );
            if !notes.is_empty() {
                notes_markdown(&mut out, &chronological(notes));
            }
            out.push_str(&render::render(&views, Style::Markdown));
        }
        ExportFormat::Text => {
            let _ =
                writeln!(out, "mnemon export\nuser: {}\nlogical now: {}", scope.user, now.unwrap_or("none"));
            if let Some(a) = scope.agent {
                let _ = writeln!(out, "agent: {a}");
            }
            let _ =
                writeln!(out, "rounds: {}\nsessions: {sessions}\npins_hash: {}\n", rounds.len(), pins.hash());
            out.push_str(&render::render(&views, Style::Text));
            let _ = writeln!(out, "\nfacts: {}", facts.len());
            for f in facts {
                let _ = writeln!(
                    out,
                    "  {} salience {} (initial {}) valid_time {} mention {} triple ({} | {} | {}) pair_key {} \
                     superseded {} supersedes {}\n    {}\n    excerpt: {}",
                    f.key,
                    f.salience,
                    f.initial_salience,
                    opt(&f.valid_time),
                    opt(&f.mention),
                    opt(&f.subject),
                    opt(&f.predicate),
                    opt(&f.object),
                    opt(&f.pair_key),
                    f.superseded_by.as_deref().map_or("no".to_owned(), |w| format!("by {w}")),
                    opt(&f.supersedes),
                    f.content,
                    f.raw
                );
            }
            if !notes.is_empty() {
                notes_text(&mut out, &chronological(notes));
            }
            let _ = writeln!(out, "\ndecisions:");
            // Numbered per user, so a user's export does not depend on other users' writes.
            for (n, d) in decisions.iter().enumerate() {
                let _ = write!(out, "  #{} at {} {} {}", n + 1, d.at, d.kind, d.record);
                if let Some(o) = &d.other {
                    let _ = write!(out, " of {o}");
                }
                let _ = writeln!(out, " {}", d.detail);
            }
            let used: Vec<_> = extractors.iter().filter(|e| e.rounds + e.facts > 0).collect();
            if !used.is_empty() {
                let _ = writeln!(out, "\nextractors:");
                for e in used {
                    let pins = crate::store::extractor_json(&e.pins);
                    let _ = writeln!(out, "  {} rounds {} facts {}\n    {pins}", e.hash, e.rounds, e.facts);
                }
            }
        }
        ExportFormat::Jsonl => {
            return Err(Error::input("format", "the JSONL dump is written by export_dump"));
        }
    }
    Ok(out)
}

pub(crate) fn export_dump(pins: &Pins, scope: Scope<'_>, records: &Records) -> Result<String> {
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
        push(&Line::Round {
            user: user.into(),
            agent: r.agent.clone(),
            key: r.key.clone(),
            session: r.session.clone(),
            turns: r.turns.clone(),
            extractor: hash(r.extractor),
            embedding_f32le: hex(v),
        })?;
    }
    let keys: BTreeMap<i64, &str> = rounds.iter().map(|r| (r.id, r.key.as_str())).collect();
    for (f, v) in facts.iter().zip(fact_vectors) {
        push(&Line::Fact {
            user: user.into(),
            key: f.key.clone(),
            round: keys.get(&f.round_id).map(|k| (*k).to_owned()).unwrap_or_default(),
            content: f.content.clone(),
            raw: f.raw.clone(),
            mention: f.mention.clone(),
            valid_time: f.valid_time.clone(),
            subject: f.subject.clone(),
            predicate: f.predicate.clone(),
            object: f.object.clone(),
            salience: f.salience,
            initial_salience: f.initial_salience,
            pair_key: f.pair_key.clone(),
            supersedes: f.supersedes.clone(),
            superseded_by: f.superseded_by.clone(),
            extractor: hash(f.extractor),
            embedding_f32le: hex(v),
        })?;
    }
    for (n, v) in notes.iter().zip(note_vectors) {
        push(&Line::Note {
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
        })?;
    }
    for round in queued {
        push(&Line::Queued { user: user.into(), round: round.clone() })?;
    }
    for d in decisions {
        push(&Line::Decision {
            user: user.into(),
            agent: d.agent.clone(),
            at: d.at.clone(),
            decision: d.kind.clone(),
            record: d.record.clone(),
            other: d.other.clone(),
            detail: d.detail.clone(),
        })?;
    }
    Ok(out)
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
            let (pins, extractor) = crate::store::split_legacy(old.0);
            (pins, extractor)
        }
        _ => return Err(bad(n, format!("expected a {DUMP_FORMAT} version {DUMP_VERSION} header"))),
    };
    let dim = pins.dim()?;
    // (user, round key) → index in `parsed.rounds`.
    let mut round_at: BTreeMap<(String, String), usize> = BTreeMap::new();
    let mut parsed = Parsed {
        pins,
        extractors: BTreeMap::new(),
        rounds: Vec::new(),
        facts: Vec::new(),
        notes: Vec::new(),
        queued: Vec::new(),
        decisions: Vec::new(),
    };
    let scope = |user: &str, agent: &Option<String>, n: usize| {
        check_scope(Scope { user, agent: agent.as_deref() }).map_err(|e| bad(n, e.to_string()))
    };
    let legacy_hash = legacy.as_ref().map(crate::store::extractor_hash);
    if let (Some(hash), Some(pins)) = (&legacy_hash, legacy) {
        parsed.extractors.insert(hash.clone(), pins);
    }
    let known = |parsed: &Parsed, hash: Option<String>, n: usize| match (&legacy_hash, hash) {
        (Some(_), Some(_)) => Err(bad(n, "a version 2 or 3 dump names no extractor".into())),
        (_, Some(h)) if !parsed.extractors.contains_key(&h) => {
            Err(bad(n, format!("extractor {h} is not declared before it")))
        }
        (legacy, hash) => Ok(hash.or_else(|| legacy.clone())),
    };
    for (n, text) in lines {
        match serde_json::from_str::<Line>(text).map_err(|e| bad(n, e.to_string()))? {
            Line::Header { .. } => return Err(bad(n, "a second header".into())),
            Line::Extractor { hash, pins } => {
                if legacy_hash.is_some() {
                    return Err(bad(n, "a version 2 or 3 dump has no extractor lines".into()));
                }
                let expected = crate::store::extractor_hash(&pins);
                if expected != hash {
                    return Err(bad(n, format!("extractor {hash}: its pins hash to {expected}")));
                }
                parsed.extractors.insert(hash, pins);
            }
            Line::Round { user, agent, key, session, turns, extractor, embedding_f32le } => {
                scope(&user, &agent, n)?;
                let first = turns.first().ok_or_else(|| bad(n, "a round without turns".into()))?;
                let ts = Timestamp::parse(&first.ts).map_err(|e| bad(n, e.to_string()))?;
                let text = round_text(&turns);
                let expected = round_key(&ts, &session, &text, agent.as_deref());
                if expected != key {
                    return Err(bad(
                        n,
                        format!("round key {key} does not match its content (expected {expected})"),
                    ));
                }
                let vector = embedding(&embedding_f32le, dim).map_err(|e| bad(n, e))?;
                let row = RoundRow {
                    id: 0,
                    key,
                    session,
                    ts: first.ts.clone(),
                    ts_unix: ts.unix_seconds(),
                    day: day_number(ts.date()),
                    norm_key: normalized_key(&text),
                    text: crate::round::index_text(&turns),
                    turns,
                    agent,
                    extractor: None,
                };
                let extractor = known(&parsed, extractor, n)?;
                round_at.insert((user.clone(), row.key.clone()), parsed.rounds.len());
                parsed.rounds.push((user, row, vector, extractor));
            }
            Line::Fact {
                user,
                key,
                round,
                content,
                raw,
                mention,
                valid_time,
                subject,
                predicate,
                object,
                salience,
                initial_salience,
                pair_key,
                supersedes,
                superseded_by,
                extractor,
                embedding_f32le,
            } => {
                check_user(&user).map_err(|e| bad(n, e.to_string()))?;
                let Some(owner) = round_at.get(&(user.clone(), round.clone())).map(|i| &parsed.rounds[*i].1)
                else {
                    return Err(bad(n, format!("fact {key}: no round {round} before it")));
                };
                if !key.starts_with(&format!("{round}/")) {
                    return Err(bad(n, format!("fact key {key} does not name its round {round}")));
                }
                if !(0.0..=1.0).contains(&salience) || !(0.0..=1.0).contains(&initial_salience) {
                    return Err(bad(n, "salience must be in 0..=1".into()));
                }
                let vector = embedding(&embedding_f32le, dim).map_err(|e| bad(n, e))?;
                let day = crate::facts::fact_day(valid_time.as_deref(), owner.day);
                let row = FactRow {
                    id: 0,
                    round_id: 0,
                    key,
                    session: owner.session.clone(),
                    day,
                    norm_key: normalized_key(&content),
                    content,
                    raw,
                    mention,
                    valid_time,
                    subject,
                    predicate,
                    object,
                    salience,
                    initial_salience,
                    pair_key,
                    supersedes,
                    superseded_by,
                    agent: owner.agent.clone(),
                    extractor: None,
                };
                let extractor = known(&parsed, extractor, n)?;
                parsed.facts.push(ParsedFact { user, round, row, vector, extractor });
            }
            Line::Queued { user, round } => {
                check_user(&user).map_err(|e| bad(n, e.to_string()))?;
                let Some(&at) = round_at.get(&(user.clone(), round.clone())) else {
                    return Err(bad(n, format!("queued round {round} is not in the dump before it")));
                };
                // A queued round waits for its (next) extraction.
                if legacy_hash.is_some() {
                    parsed.rounds[at].3 = None;
                }
                parsed.queued.push((user, round));
            }
            Line::Note {
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
            } => {
                scope(&user, &agent, n)?;
                let valid_key = |k: &str| {
                    let hex = k.strip_prefix("n-").unwrap_or_default();
                    let (hash, suffix) = hex.split_once('-').unwrap_or((hex, "2"));
                    hash.len() == 16
                        && hash.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
                        && suffix.parse::<u32>().is_ok_and(|s| s >= 2)
                };
                let linked = condenses.iter().flat_map(|c| c.split(' ')).chain(condensed_into.as_deref());
                if !valid_key(&key) || linked.clone().any(|k| !valid_key(k)) {
                    return Err(bad(n, format!("note {key}: not a note key, or links to one that is not")));
                }
                let field = |e: Error| bad(n, format!("note {key}: {e}"));
                let kind = NoteKind::parse(&note_kind, "note_kind").map_err(field)?;
                check_content(&content, "content").map_err(field)?;
                if let Some(t) = &title {
                    check_title(t, "title").map_err(field)?;
                }
                let checked_tags = check_tags(&tags, "tags").map_err(field)?;
                if checked_tags != tags {
                    return Err(bad(n, format!("note {key}: tags are not trimmed and distinct")));
                }
                let metadata = check_metadata(Some(&metadata), "metadata").map_err(field)?;
                check_importance(Some(importance), "importance").map_err(field)?;
                let created = Timestamp::parse(&ts).map_err(field)?;
                let changed = Timestamp::parse(&updated).map_err(field)?;
                let vector = embedding(&embedding_f32le, dim).map_err(|e| bad(n, e))?;
                let row = NoteRow {
                    id: 0,
                    key,
                    agent,
                    kind,
                    title,
                    tokens: render::count_tokens(&content) as i64,
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
                parsed.notes.push((user, row, vector));
            }
            Line::Decision { user, agent, at, decision, record, other, detail } => {
                scope(&user, &agent, n)?;
                parsed
                    .decisions
                    .push((user, DecisionRow { id: 0, agent, at, kind: decision, record, other, detail }));
            }
        }
    }
    Ok(parsed)
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
    let mut round_ids: BTreeMap<(&str, &str), i64> = BTreeMap::new();
    for (user, row, vector, hash) in &parsed.rounds {
        let id = ids[user.as_str()];
        let stored = RoundRow { extractor: extractor(hash), ..row.clone() };
        let round_id = write::insert_round(&tx, id, &stored, vector).map_err(|e| match e {
            Error::Sqlite(e) => Error::Import { line: 0, reason: format!("round {}: {e}", row.key) },
            other => other,
        })?;
        round_ids.insert((user.as_str(), row.key.as_str()), round_id);
        let entry = latest.entry(id).or_insert_with(|| (row.ts.clone(), row.ts_unix));
        if row.ts_unix > entry.1 {
            *entry = (row.ts.clone(), row.ts_unix);
        }
    }
    for ParsedFact { user, round, row: fact, vector, extractor: hash } in &parsed.facts {
        let row = FactRow {
            round_id: round_ids[&(user.as_str(), round.as_str())],
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
        write::enqueue(&tx, ids[user.as_str()], round_ids[&(user.as_str(), round.as_str())])?;
    }
    for (user, d) in &parsed.decisions {
        let id = ids[user.as_str()];
        write::log(&tx, id, d.agent.as_deref(), &d.at, &d.kind, &d.record, d.other.as_deref(), &d.detail)?;
    }
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
