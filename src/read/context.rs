//! `get_context`: everything the scope sees (rounds with their facts, and notes) ranked for the
//! question and each of its angles, merged at each record's best score, and rendered best first
//! within one token budget.

use std::collections::HashMap;

use super::ask::{At, ask, known_then, rank_asked, top_k};
use super::render::{self, Item, RenderNote, RenderRound};
use super::trim;
use super::types::{Context, ContextRecord, Fact, Query, RecalledRound};
use crate::embed::Calibration;
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::index::rank::Scored;
use crate::index::view::{Among, note_id};
use crate::model::filter::Relevance;
use crate::model::note::Note;
use crate::model::round::Turn;
use crate::model::scope::Scope;
use crate::model::time::Timestamp;
use crate::store::{AsOf, FactRow, Store, View};

/// Most query angles one context may merge.
const MAX_ANGLES: usize = 16;

/// The context for `query` in `scope`, within the query's budget (else the configured one).
pub(crate) fn get_context(engine: &Engine, query: &Query<'_>, scope: Scope<'_>) -> Result<Context> {
    scope.check()?;
    query.ranking.validate()?;
    let budget = query.budget.or(engine.config.context_budget);
    if budget.is_some_and(|b| b < render::MIN_BUDGET) {
        return Err(Error::input("budget", "must be at least 200 tokens (the frame alone takes about 60)"));
    }
    if let Some(p) = query.profile
        && (p == 0 || budget.is_some_and(|b| p > b / 2))
    {
        return Err(Error::input("profile", "must be at least 1 token and at most half the budget"));
    }
    if query.angles.len() > MAX_ANGLES {
        return Err(Error::input("angles", format!("at most {MAX_ANGLES} angles")));
    }
    let k = top_k(&engine.config, query.top_k)?;
    let time = query.as_of.clone();
    query.cancel.check()?;
    let mut asked = vec![ask(engine, query.text, query.date.as_ref(), time.as_ref(), "query")?];
    for (i, angle) in query.angles.iter().enumerate() {
        query.cancel.check()?;
        asked.push(ask(engine, angle, query.date.as_ref(), time.as_ref(), &format!("angles[{i}]"))?);
    }
    let calibration = asked[0].calibration;
    let (scored, rounds, notes, head, marks) = engine.read_view(scope, |store, found, last_try| {
        let Some((view, version)) = found else {
            return Ok(Some((Vec::new(), HashMap::new(), HashMap::new(), String::new(), HashMap::new())));
        };
        let as_of = known_then(store, view, time.as_ref())?;
        let head = match query.profile {
            Some(tokens) => super::profile::at(store, view, as_of.as_ref())?.section(tokens),
            None => String::new(),
        };
        let at = At::new(store, (view, version), last_try, as_of.as_ref());
        // Each record once, at its best score (ties: the earlier angle, then its rank there).
        let mut best: HashMap<i64, (usize, usize, Scored)> = HashMap::new();
        for (a, q) in asked.iter().enumerate() {
            query.cancel.check()?;
            let Some(ranked) = rank_asked(engine, &at, q, &query.ranking, Among::All, k)? else {
                return Ok(None);
            };
            for (rank, s) in ranked.scored.into_iter().enumerate() {
                match best.get(&s.id) {
                    Some((.., kept)) if kept.score >= s.score => {}
                    _ => {
                        best.insert(s.id, (a, rank, s));
                    }
                }
            }
        }
        let mut order: Vec<(usize, usize, Scored)> = best.into_values().collect();
        order.sort_by(|x, y| {
            y.2.score.total_cmp(&x.2.score).then(x.0.cmp(&y.0)).then(x.1.cmp(&y.1)).then(x.2.id.cmp(&y.2.id))
        });
        let scored: Vec<(usize, Scored)> = order.into_iter().map(|o| (o.0, o.2)).collect();
        let of_rounds: Vec<Scored> = scored.iter().map(|s| s.1).filter(|s| note_id(s.id).is_none()).collect();
        let note_ids: Vec<i64> = scored.iter().filter_map(|s| note_id(s.1.id)).collect();
        let rounds: HashMap<i64, RecalledRound> =
            recalled(store, view, &of_rounds, as_of.as_ref(), calibration)?
                .into_iter()
                .map(|r| (r.id, r))
                .collect();
        let notes: HashMap<i64, Note> =
            store.notes_by_id(view, &note_ids)?.into_iter().map(|n| (n.id, Note::from(n))).collect();
        let round_ids: Vec<i64> = of_rounds.iter().map(|s| s.id).collect();
        let marks = marks(store, view, &round_ids, as_of.as_ref())?;
        Ok(Some((scored, rounds, notes, head, marks)))
    })?;
    let (ranked, why): (Vec<Ranked<'_>>, Vec<&(usize, Scored)>) = scored
        .iter()
        .filter_map(|a_s| {
            let s = &a_s.1;
            let r = match note_id(s.id) {
                Some(id) => {
                    notes.get(&id).map(|n| Ranked::Note(n, Relevance::of(calibration.score(s.cosine))))
                }
                None => rounds.get(&s.id).map(Ranked::Round),
            };
            r.map(|r| (r, a_s))
        })
        .unzip();
    let (ranked, why) = neighbours_first(ranked, why);
    let question = (!query.whole_rounds).then_some(query.text);
    let mut context = render_ranked(&ranked, budget, &head, &marks, question);
    if query.explain {
        context.records = explain(&ranked, &why, &context.omitted, calibration);
    }
    Ok(context)
}

/// Most tokens (of its turns' text) a neighbour of the best round may hold to be packed after it.
const NEIGHBOUR_TOKENS: usize = 150;

/// The ranking with the best round's session neighbours (the rounds of its session whose row ids
/// are next to its own), when they are ranked at all and short (at most [`NEIGHBOUR_TOKENS`]),
/// moved to right after it: what a conversation says next to its answer often belongs to it
/// (LoCoMo's evidence sits in adjacent rounds), and a short neighbour costs a budget little
/// (docs/DECISIONS.md #105). `why` follows the same order.
fn neighbours_first<'a, 'b>(
    ranked: Vec<Ranked<'a>>,
    why: Vec<&'b (usize, Scored)>,
) -> (Vec<Ranked<'a>>, Vec<&'b (usize, Scored)>) {
    let Some((best, hit)) = ranked.iter().enumerate().find_map(|(i, r)| match r {
        Ranked::Round(hit) => Some((i, *hit)),
        Ranked::Note(..) => None,
    }) else {
        return (ranked, why);
    };
    let short = |r: &RecalledRound| {
        r.turns.iter().map(|t| render::count_tokens(&t.content)).sum::<usize>() <= NEIGHBOUR_TOKENS
    };
    let neighbours: Vec<usize> = [hit.id - 1, hit.id + 1]
        .iter()
        .filter_map(|id| {
            ranked.iter().position(
                |r| matches!(r, Ranked::Round(n) if n.id == *id && n.session == hit.session && short(n)),
            )
        })
        .collect();
    if neighbours.is_empty() {
        return (ranked, why);
    }
    let mut order: Vec<usize> = (0..=best).collect();
    order.extend(&neighbours);
    order.extend((best + 1..ranked.len()).filter(|i| !neighbours.contains(i)));
    let mut slots: Vec<Option<Ranked<'a>>> = ranked.into_iter().map(Some).collect();
    let ranked = order.iter().filter_map(|&i| slots[i].take()).collect();
    let why = order.iter().map(|&i| why[i]).collect();
    (ranked, why)
}

/// Why each ranked record is where it is, best first.
fn explain(
    ranked: &[Ranked<'_>],
    why: &[&(usize, Scored)],
    omitted: &[String],
    calibration: Calibration,
) -> Vec<ContextRecord> {
    let place = |p: u16| (p > 0).then_some(usize::from(p));
    ranked
        .iter()
        .zip(why)
        .map(|(r, (angle, s))| {
            let (key, kind) = match r {
                Ranked::Round(r) => (r.key.clone(), "round"),
                Ranked::Note(n, _) => (n.key.clone(), "note"),
            };
            ContextRecord {
                kept: !omitted.contains(&key),
                key,
                kind: kind.to_owned(),
                score: s.score,
                cosine: s.cosine,
                relevance: Relevance::of(calibration.score(s.cosine)),
                time_match: s.time_match,
                angle: *angle,
                dense: place(s.why.dense),
                words: place(s.why.words),
                window: place(s.why.window),
                feedback: place(s.why.feedback),
            }
        })
        .collect()
}

/// A record in a context's ranking.
enum Ranked<'a> {
    Round(&'a RecalledRound),
    Note(&'a Note, Relevance),
}

/// Fits ranked records into the budget, after `head` (the profile section, or empty), and renders
/// them; with `question`, long replies trimmed for it ([`trim`]).
fn render_ranked(
    ranked: &[Ranked<'_>],
    budget: Option<usize>,
    head: &str,
    marks: &HashMap<i64, Vec<String>>,
    question: Option<&str>,
) -> Context {
    let trimmer = question.map(trim::Trimmer::new);
    let trimmed: Vec<Option<Vec<Turn>>> = ranked
        .iter()
        .map(|r| match (r, &trimmer) {
            (Ranked::Round(r), Some(t)) => t.trim(&r.turns),
            _ => None,
        })
        .collect();
    let lines: Vec<Vec<String>> = ranked
        .iter()
        .map(|r| match r {
            Ranked::Round(r) => r.facts.iter().filter(|f| f.in_context()).map(Fact::line).collect(),
            Ranked::Note(..) => Vec::new(),
        })
        .collect();
    let items: Vec<Item<'_>> = ranked
        .iter()
        .zip(&lines)
        .zip(&trimmed)
        .map(|((r, l), t)| match r {
            Ranked::Round(r) => Item::Round(RenderRound {
                turns: t.as_deref().unwrap_or(&r.turns),
                ..recalled_view(r, l, marks.get(&r.id).map_or(&[][..], Vec::as_slice))
            }),
            Ranked::Note(n, label) => Item::Note(note_view(n, Some(*label))),
        })
        .collect();
    let render::Fitted { kept, text, cut } = match budget {
        Some(b) => render::fit_budget(&items, b, head),
        None => render::Fitted {
            kept: (0..items.len()).collect(),
            text: render::render_context(&items, head),
            cut: false,
        },
    };
    let key = |r: &Ranked<'_>| match r {
        Ranked::Round(r) => r.key.clone(),
        Ranked::Note(n, _) => n.key.clone(),
    };
    let omitted: Vec<String> =
        (0..ranked.len()).filter(|i| !kept.contains(i)).map(|i| key(&ranked[i])).collect();
    Context {
        tokens: render::count_tokens(&text),
        rounds: kept
            .iter()
            .filter(|i| matches!(ranked[**i], Ranked::Round(_)))
            .map(|i| key(&ranked[*i]))
            .collect(),
        notes: kept
            .iter()
            .filter(|i| matches!(ranked[**i], Ranked::Note(..)))
            .map(|i| key(&ranked[*i]))
            .collect(),
        truncated: !omitted.is_empty() || cut,
        cut,
        omitted,
        text,
        records: Vec::new(),
    }
}

/// The rounds of `scored`, in its order, with their active facts (with `as_of`, those current
/// then), each labelled through `calibration`.
pub(super) fn recalled(
    store: &Store,
    view: View<'_>,
    scored: &[Scored],
    as_of: Option<&AsOf>,
    calibration: Calibration,
) -> Result<Vec<RecalledRound>> {
    let ids: Vec<i64> = scored.iter().map(|s| s.id).collect();
    let rows = store.rounds_by_id(view, &ids)?;
    let mut facts = store.current_facts_of(view, &ids, as_of)?;
    Ok(rows
        .into_iter()
        .zip(scored)
        .map(|(row, s)| RecalledRound {
            facts: facts.remove(&row.id).unwrap_or_default().into_iter().map(Fact::from).collect(),
            key: row.key,
            session: row.session,
            ts: row.ts,
            turns: row.turns,
            score: s.score,
            cosine: s.cosine,
            relevance: Relevance::of(calibration.score(s.cosine)),
            time_match: s.time_match,
            id: row.id,
            ts_unix: row.ts_unix,
        })
        .collect())
}

fn recalled_view<'a>(r: &'a RecalledRound, facts: &'a [String], marks: &'a [String]) -> RenderRound<'a> {
    RenderRound {
        id: r.id,
        key: &r.key,
        session: &r.session,
        ts: &r.ts,
        ts_unix: r.ts_unix,
        turns: &r.turns,
        facts,
        marks,
    }
}

/// Words a value may have to stand in a mark; a longer one is named by its fact's sentence.
const MARK_VALUE_WORDS: usize = 6;

/// What became of the superseded facts of `rounds` (as they stood at `as_of`, if any), per round:
/// "(superseded DATE: now VALUE)", the fact that holds now at the end of the chain of facts that
/// replaced it, and the day it holds since. One mark per fact that holds now, in fact order.
fn marks(
    store: &Store,
    view: View<'_>,
    rounds: &[i64],
    as_of: Option<&AsOf>,
) -> Result<HashMap<i64, Vec<String>>> {
    let then = |f: FactRow| match as_of {
        Some(a) => a.fact(f),
        None => Some(f),
    };
    let mut out: HashMap<i64, Vec<String>> = HashMap::new();
    for fact in store.facts_of_rounds(view, rounds)?.into_iter().filter_map(then) {
        let Some(mut next) = fact.superseded_by.clone() else { continue };
        // Follow the chain to the fact that holds (at most as many steps as facts seen).
        let mut seen = std::collections::HashSet::new();
        let mut winner = None;
        while seen.insert(next.clone()) {
            let Some(w) = store.fact_by_key(view, &next)?.and_then(then) else { break };
            match w.superseded_by.clone() {
                Some(after) => next = after,
                None => {
                    winner = Some(w);
                    break;
                }
            }
        }
        let Some(w) = winner else { continue };
        let since = crate::model::time::day_date(w.day);
        let now = match w.object.as_deref().filter(|o| o.split_whitespace().count() <= MARK_VALUE_WORDS) {
            Some(value) => value.to_owned(),
            None => w.content.clone(),
        };
        let mark = format!("(superseded {since}: now {now})");
        let list = out.entry(fact.round_id).or_default();
        if !list.contains(&mark) {
            list.push(mark);
        }
    }
    Ok(out)
}

/// A note as the renderer sees it.
pub(crate) fn note_view(n: &Note, relevance: Option<Relevance>) -> RenderNote<'_> {
    RenderNote {
        key: &n.key,
        kind: n.kind.as_str(),
        ts: &n.ts,
        // Stored notes' timestamps parsed when they were stored.
        ts_unix: Timestamp::parse(&n.ts).map_or(0, |t| t.unix_seconds()),
        title: n.title.as_deref(),
        tags: &n.tags,
        content: &n.content,
        relevance,
    }
}
