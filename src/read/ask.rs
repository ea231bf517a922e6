//! A question made ready to rank: its date prefix split off, its text checked and embedded, its
//! anchor and time window found, and the shape of its ranking.

use std::cell::OnceCell;

use chrono::NaiveDate;

use super::types::Ranking;
use crate::config::Config;
use crate::embed::Calibration;
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::index::rank::{Scored, Shape};
use crate::index::view::Question;
use crate::index::view::{Among, CachedView};
use crate::model::time::{DateWindow, Timestamp, day_number, query_window, split_date_prefix};
use crate::store::{AsOf, Store, View};

/// A question made ready to rank: its text without a date prefix, its vector, its date, and how
/// its embedder's cosines read as relevance.
pub(super) struct Asked<'q> {
    pub bare: &'q str,
    pub vector: Vec<f32>,
    pub date: Option<Timestamp>,
    pub calibration: Calibration,
}

/// A question ranked in a view: its anchor, its window, and the records best first.
pub(super) struct AskedRanking {
    pub anchor: Option<NaiveDate>,
    pub window: Option<DateWindow>,
    pub scored: Vec<Scored>,
}

/// Splits the date prefix, checks the text, embeds it. `field` names the text in errors. A
/// question with no date of its own is dated `as_of` when it has one.
pub(super) fn ask<'q>(
    engine: &Engine,
    text: &'q str,
    date: Option<&Timestamp>,
    as_of: Option<&Timestamp>,
    field: &str,
) -> Result<Asked<'q>> {
    let embedder = engine.embedder("recall")?;
    if let Some(d) = date {
        d.check_years(&engine.config.years, "date")?;
    }
    if let Some(t) = as_of {
        t.check_years(&engine.config.years, "as_of")?;
    }
    let (prefix_date, bare) = split_date_prefix(text);
    if let Some(d) = &prefix_date {
        d.check_years(&engine.config.years, field)?;
    }
    if bare.is_empty() {
        return Err(Error::input(field, "is empty"));
    }
    let date = date.cloned().or(prefix_date).or_else(|| as_of.cloned());
    Ok(Asked {
        bare,
        vector: crate::embed::query(embedder, bare)?,
        date,
        calibration: embedder.calibration(),
    })
}

/// The records to rank: the call's `top_k`, else the configured one, in `1..=1000`.
pub(super) fn top_k(config: &Config, asked: Option<usize>) -> Result<usize> {
    let k = asked.unwrap_or(config.top_k);
    if !(1..=1000).contains(&k) {
        return Err(Error::input("top_k", "must be in 1..=1000"));
    }
    Ok(k)
}

/// Where a ranking happens: a snapshot of a view, at the user's write counter `version`, on the
/// read's `last_try` or not; for an as-of read, what was known then, in a view of its own
/// (loaded at the first ranking, kept for the read's other angles).
pub(super) struct At<'a, 's> {
    pub store: &'a Store,
    pub view: View<'s>,
    pub version: i64,
    pub last_try: bool,
    pub as_of: Option<&'a AsOf>,
    then: OnceCell<CachedView>,
}

impl<'a, 's> At<'a, 's> {
    pub(super) fn new(
        store: &'a Store,
        (view, version): (View<'s>, i64),
        last_try: bool,
        as_of: Option<&'a AsOf>,
    ) -> At<'a, 's> {
        At { store, view, version, last_try, as_of, then: OnceCell::new() }
    }
}

/// What was known at `time` in `view`, if the read is as of a time.
pub(super) fn known_then(store: &Store, view: View<'_>, time: Option<&Timestamp>) -> Result<Option<AsOf>> {
    time.map(|t| AsOf::read(store, view, t.clone())).transpose()
}

/// Ranks `asked` at `at` (see [`Engine::rank`]; `None`: try again on a newer snapshot).
pub(super) fn rank_asked(
    engine: &Engine,
    at: &At<'_, '_>,
    asked: &Asked<'_>,
    ranking: &Ranking,
    among: Among<'_>,
    depth: usize,
) -> Result<Option<AskedRanking>> {
    let (anchor, window, shape) = asked.shape(at.store, at.view.user, &engine.config, ranking)?;
    let question = Question {
        bare: asked.bare,
        vector: &asked.vector,
        shape: &shape,
        among,
        depth,
        rrf: engine.config.rrf_k,
    };
    let ranked = match at.as_of {
        None => engine.rank(at.store, at.view, at.version, &question, at.last_try)?,
        Some(as_of) => {
            let then = match at.then.get() {
                Some(then) => then,
                None => {
                    let dim = at.store.pins.dim()?;
                    let loaded = CachedView::load(
                        at.store,
                        at.view,
                        at.version,
                        dim,
                        question.rrf.is_some(),
                        Some(as_of),
                    )?;
                    at.then.get_or_init(|| loaded)
                }
            };
            Some(then.rank(&question))
        }
    };
    Ok(ranked.map(|scored| AskedRanking { anchor, window, scored }))
}

impl Asked<'_> {
    /// The question's anchor (its date, else the user's logical now), its window and how it
    /// shapes the ranking.
    fn shape(
        &self,
        store: &Store,
        user: i64,
        config: &Config,
        ranking: &Ranking,
    ) -> Result<(Option<NaiveDate>, Option<DateWindow>, Shape)> {
        let dim = store.pins.dim()?;
        if self.vector.len() != dim {
            return Err(Error::Embedder(format!(
                "query vector has dimension {}, store has {dim}",
                self.vector.len()
            )));
        }
        let anchor = match self.date.as_ref() {
            Some(ts) => Some(ts.date()),
            None => store
                .user_now(user)?
                .and_then(|(raw, unix)| Timestamp::from_parts(raw, unix))
                .map(|t| t.date()),
        };
        let window = anchor.and_then(|a| query_window(self.bare, a));
        let mut shape = Shape::plain(window, config.time_weight);
        shape.importance = ranking.importance;
        if let (Some(r), Some(a)) = (ranking.recency, anchor) {
            shape.recency =
                Some((r.alpha, std::f64::consts::LN_2 / f64::from(r.half_life_days), day_number(a)));
        }
        Ok((anchor, window, shape))
    }
}

/// A window as its first and last day, `YYYY-MM-DD`.
pub(super) fn window_strings(window: Option<DateWindow>) -> Option<[String; 2]> {
    window.map(|w| [w.start.to_string(), w.end.to_string()])
}
