//! `recall` (rounds) and `search` (notes): a question ranked in the scope's view, and the records
//! it found read back at the same snapshot.

use super::ask::{Asked, At, ask, known_then, rank_asked, top_k, window_strings};
use super::context::recalled;
use super::types::{Fact, FactHit, NoteHit, Query, Recall, Search, SearchResults};
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::index::rank::Scored;
use crate::index::view::{Among, note_id};
use crate::model::filter::{NoteFilter, Relevance};
use crate::model::note::Note;
use crate::model::scope::{Scope, check_user};
use crate::store::View;

/// The `top_k` rounds `scope` sees that best answer `query`, best first.
pub(crate) fn recall(engine: &Engine, query: &Query<'_>, scope: Scope<'_>) -> Result<Recall> {
    scope.check()?;
    query.ranking.validate()?;
    let k = top_k(&engine.config, query.top_k)?;
    let time = query.as_of.clone();
    query.cancel.check()?;
    let asked = ask(engine, query.text, query.date.as_ref(), time.as_ref(), "query")?;
    engine.read_view(scope, |store, found, last_try| {
        query.cancel.check()?;
        let Some((view, version)) = found else {
            return Ok(Some(Recall { rounds: Vec::new(), anchor: None, window: None }));
        };
        let as_of = known_then(store, view, time.as_ref())?;
        let at = At::new(store, (view, version), last_try, as_of.as_ref());
        let Some(ranked) = rank_asked(engine, &at, &asked, &query.ranking, Among::Rounds, k)? else {
            return Ok(None);
        };
        Ok(Some(Recall {
            rounds: recalled(store, view, &ranked.scored, as_of.as_ref(), asked.calibration)?,
            anchor: ranked.anchor.map(|a| a.to_string()),
            window: window_strings(ranked.window),
        }))
    })
}

/// The notes `scope` sees that best match `search.text` among those its filter keeps, best
/// first (the ranking's order), each with its relevance score (its cosine through the embedder's
/// calibration); hits below `search.min_score` dropped.
pub(crate) fn search(engine: &Engine, search: &Search<'_>, scope: Scope<'_>) -> Result<SearchResults> {
    scope.check()?;
    search.ranking.validate()?;
    if !(1..=1000).contains(&search.limit) {
        return Err(Error::input("limit", "must be in 1..=1000"));
    }
    if let Some(m) = search.min_score
        && (!m.is_finite() || !(0.0..=1.0).contains(&m))
    {
        return Err(Error::input("min_score", "must be a number in 0..=1"));
    }
    let filter: NoteFilter = search.filter.resolve("filter")?;
    search.cancel.check()?;
    let asked = ask(engine, search.text, search.date.as_ref(), None, "query")?;
    engine.read_view(scope, |store, found, last_try| {
        search.cancel.check()?;
        let Some((view, version)) = found else {
            return Ok(Some(SearchResults {
                hits: Vec::new(),
                facts: Vec::new(),
                anchor: None,
                window: None,
            }));
        };
        let at = At::new(store, (view, version), last_try, None);
        let filter = NoteFilter { passing: store.notes_passing_metadata(view, &filter)?, ..filter.clone() };
        let among = Among::Notes(&filter);
        let Some(ranked) = rank_asked(engine, &at, &asked, &search.ranking, among, search.limit)? else {
            return Ok(None);
        };
        let kept: Vec<(&Scored, f32)> = ranked
            .scored
            .iter()
            .map(|s| (s, asked.calibration.score(s.cosine)))
            .filter(|(_, r)| search.min_score.is_none_or(|m| *r >= m))
            .collect();
        let ids: Vec<i64> = kept.iter().filter_map(|(s, _)| note_id(s.id)).collect();
        let hits = store
            .notes_by_id(view, &ids)?
            .into_iter()
            .zip(kept)
            .map(|(row, (s, score))| NoteHit {
                note: Note::from(row),
                score,
                relevance: Relevance::of(score),
                cosine: s.cosine,
            })
            .collect();
        let facts = if search.facts && filter_is_open(&search.filter) {
            fact_hits(store, view, &asked, search)?
        } else {
            Vec::new()
        };
        Ok(Some(SearchResults {
            hits,
            facts,
            anchor: ranked.anchor.map(|a| a.to_string()),
            window: window_strings(ranked.window),
        }))
    })
}

/// Whether a filter holds no condition (so facts, which carry none of a note's fields, pass).
fn filter_is_open(filter: &crate::model::filter::Filter) -> bool {
    let crate::model::filter::Filter {
        tags_any,
        tags_all,
        kinds,
        after,
        before,
        min_tokens,
        max_tokens,
        include_condensed: _,
        metadata,
    } = filter;
    tags_any.is_empty()
        && tags_all.is_empty()
        && kinds.is_empty()
        && after.is_none()
        && before.is_none()
        && min_tokens.is_none()
        && max_tokens.is_none()
        && metadata.is_none()
}

/// The active facts of the view nearest the query by exact cosine, best first (ties to the
/// older fact), at most `search.limit`, those whose relevance score is below `search.min_score`
/// dropped.
fn fact_hits(
    store: &crate::store::Store,
    view: View<'_>,
    asked: &Asked<'_>,
    search: &Search<'_>,
) -> Result<Vec<FactHit>> {
    let query = &asked.vector;
    let vectors = store.user_fact_vectors(view)?;
    let facts = store.active_facts(view)?;
    let dim = query.len();
    if dim == 0 || vectors.data.len() != facts.len() * dim {
        return Err(Error::Corrupt {
            path: store.path.clone(),
            reason: format!(
                "{} active facts but {} fact vectors",
                facts.len(),
                vectors.data.len() / dim.max(1)
            ),
        });
    }
    let mut scored: Vec<(f32, usize)> = vectors
        .data
        .chunks_exact(dim)
        .enumerate()
        .map(|(i, v)| (crate::embed::vector::cosine(query, v), i))
        .filter(|(c, _)| search.min_score.is_none_or(|m| asked.calibration.score(*c) >= m))
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    scored.truncate(search.limit);
    let mut facts: Vec<Option<_>> = facts.into_iter().map(Some).collect();
    Ok(scored
        .into_iter()
        .filter_map(|(cosine, i)| {
            let score = asked.calibration.score(cosine);
            facts[i].take().map(|row| FactHit {
                fact: Fact::from(row),
                score,
                relevance: Relevance::of(score),
                cosine,
            })
        })
        .collect())
}

/// The `k` nearest rounds by the database's own KNN over the stored vectors, as `(key, cosine)`,
/// nearest first (no time bonus): a cross-check of the index in memory and a benchmark baseline.
pub(crate) fn nearest_in_database(
    engine: &Engine,
    question: &str,
    user_id: &str,
    k: usize,
) -> Result<Vec<(String, f32)>> {
    check_user(user_id)?;
    let query = crate::embed::query(engine.embedder("recall")?.as_ref(), question)?;
    let store = engine.lock_store();
    let Some((user, _)) = store.user(user_id)? else {
        return Ok(Vec::new());
    };
    let hits = store.knn(user, &query, k)?;
    let ids: Vec<i64> = hits.iter().map(|h| h.0).collect();
    let rows = store.rounds_by_id(View { user, agent: None }, &ids)?;
    Ok(rows
        .into_iter()
        .zip(hits)
        .map(|(r, (_, d))| (r.key, crate::embed::vector::cosine_from_l2(d)))
        .collect())
}
