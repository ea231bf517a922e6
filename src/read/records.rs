//! Reading records as they are stored: one by key, a page of notes, counts, and every round, fact
//! or decision a scope sees.

use super::types::{Counts, Decision, Fact, ListNotes, NotePage, Record, StoredRound};
use crate::engine::{Engine, resolve};
use crate::error::{Error, Result};
use crate::model::note::{Note, NoteKind};
use crate::model::scope::Scope;

/// The record with this key that `scope` sees: a note (`n-…`), a round or a fact.
pub(crate) fn get(engine: &Engine, key: &str, scope: Scope<'_>) -> Result<Record> {
    scope.check()?;
    let store = engine.read()?;
    let not_found = || Error::NotFound { key: key.to_owned() };
    let (view, _) = resolve(&store, scope)?.ok_or_else(not_found)?;
    let record = if key.starts_with("n-") {
        store.note_by_key(view, key)?.map(|n| Record::Note(n.into()))
    } else if key.contains('/') {
        store.fact_by_key(view, key)?.map(|f| Record::Fact(f.into()))
    } else {
        store.round_by_key(view, key)?.map(|r| Record::Round(r.into()))
    };
    record.ok_or_else(not_found)
}

/// A listing cursor: the `ts_unix` and key of the last note of a page.
fn parse_cursor(cursor: &str) -> Result<(i64, &str)> {
    cursor
        .split_once(':')
        .and_then(|(t, k)| Some((t.parse().ok()?, k)).filter(|(_, k): &(i64, &str)| k.starts_with("n-")))
        .ok_or_else(|| Error::input("cursor", "is not a cursor from a previous page"))
}

/// A page of the notes `scope` sees that pass the filter, newest first.
pub(crate) fn list(engine: &Engine, list: &ListNotes, scope: Scope<'_>) -> Result<NotePage> {
    scope.check()?;
    if !(1..=1000).contains(&list.limit) {
        return Err(Error::input("limit", "must be in 1..=1000"));
    }
    let filter = list.filter.resolve("filter")?;
    let cursor = list.cursor.as_deref().map(parse_cursor).transpose()?;
    engine.reading(scope, |store, view| {
        let mut rows = store.notes_page(view, &filter, cursor, list.limit + 1)?;
        let next = if rows.len() > list.limit {
            rows.truncate(list.limit);
            rows.last().map(|n| format!("{}:{}", n.ts_unix, n.key))
        } else {
            None
        };
        Ok(NotePage { notes: rows.into_iter().map(Note::from).collect(), next })
    })
}

/// How many records `scope` sees: notes per kind, condensed notes, rounds and active facts.
pub(crate) fn count(engine: &Engine, scope: Scope<'_>) -> Result<Counts> {
    scope.check()?;
    let store = engine.read()?;
    let mut counts = Counts {
        kinds: NoteKind::ALL.iter().map(|k| (k.as_str().to_owned(), 0)).collect(),
        ..Counts::default()
    };
    let Some((view, _)) = resolve(&store, scope)? else {
        return Ok(counts);
    };
    let (kinds, condensed) = store.note_counts(view)?;
    for (kind, n) in kinds {
        counts.kinds.insert(kind.as_str().to_owned(), n);
        counts.notes += n;
    }
    counts.condensed = condensed;
    (counts.rounds, counts.facts) = store.record_counts(view)?;
    Ok(counts)
}

/// Every round `scope` sees, oldest first.
pub(crate) fn rounds(engine: &Engine, scope: Scope<'_>) -> Result<Vec<StoredRound>> {
    engine.reading(scope, |store, view| {
        Ok(store.all_rounds(view)?.into_iter().map(StoredRound::from).collect())
    })
}

/// The active facts `scope` sees, in the order they were stored.
pub(crate) fn facts(engine: &Engine, scope: Scope<'_>) -> Result<Vec<Fact>> {
    engine.reading(scope, |store, view| Ok(store.active_facts(view)?.into_iter().map(Fact::from).collect()))
}

/// Every fact `scope` sees, superseded ones included, in the order they were stored.
pub(crate) fn every_fact(engine: &Engine, scope: Scope<'_>) -> Result<Vec<Fact>> {
    engine.reading(scope, |store, view| Ok(store.all_facts(view)?.into_iter().map(Fact::from).collect()))
}

/// The decisions `scope` sees, in logical order.
pub(crate) fn decisions(engine: &Engine, scope: Scope<'_>) -> Result<Vec<Decision>> {
    engine.reading(scope, |store, view| {
        Ok(store
            .decisions(view)?
            .into_iter()
            .map(|d| Decision { at: d.at, kind: d.kind, record: d.record, other: d.other, detail: d.detail })
            .collect())
    })
}
