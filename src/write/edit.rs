//! Changing and removing single records: `update` (a note's given fields, re-embedded when its
//! text changes) and `delete` (a note, a round with its facts, or a fact, with everything that
//! holds its content). Each is one transaction and a decision in the log.

use super::condense::summarize;
use super::note::embed_one;
use super::types::Deleted;
use crate::embed::Embedder;
use crate::engine::{Engine, logical_now, resolve};
use crate::error::{Error, Result};
use crate::model::decision::DecisionKind;
use crate::model::fact::fact_text;
use crate::model::note::{
    Note, NoteUpdate, check_content, check_importance, check_metadata, check_tags, check_title, embed_text,
};
use crate::model::parts::parts;
use crate::model::round::{Turn, normalized_key};
use crate::model::scope::Scope;
use crate::model::time::Timestamp;
use crate::read::render::count_tokens;
use crate::store::{NoteRow, Tx, write};

/// Changes the given fields of the note `key` that `scope` sees, stamped `ts`; the note as stored.
pub(crate) fn update(
    engine: &Engine,
    key: &str,
    change: &NoteUpdate,
    ts: &Timestamp,
    scope: Scope<'_>,
) -> Result<Note> {
    scope.check()?;
    ts.check_years(&engine.config.years, "ts")?;
    if change.is_empty() {
        return Err(Error::input("update", "changes no field"));
    }
    if let Some(c) = &change.content {
        check_content(c, "content")?;
    }
    if let Some(Some(t)) = &change.title {
        check_title(t, "title")?;
    }
    let tags = change.tags.as_deref().map(|t| check_tags(t, "tags")).transpose()?;
    let metadata = change.metadata.as_ref().map(|m| check_metadata(Some(m), "metadata")).transpose()?;
    let importance = change.importance.map(|i| check_importance(Some(i), "importance")).transpose()?;
    let reembed = change.content.is_some() || change.title.is_some();
    let embedder = if reembed { Some(engine.embedder("update")?) } else { None };

    let mut store = engine.lock_store();
    let not_found = || Error::NotFound { key: key.to_owned() };
    let (view, _) = resolve(&store, scope)?.ok_or_else(not_found)?;
    let dim = store.pins.dim()?;
    // Read, embed and write under the write lock: the row cannot change in between.
    let tx = store.begin_for(&[scope.user])?;
    let old = write::note_by_key(&tx, view.user, view.agent, key)?.ok_or_else(not_found)?;
    if ts.unix_seconds() < old.ts_unix {
        return Err(Error::input("ts", format!("is before the note's own ts {}", old.ts)));
    }
    let mut new = old.clone();
    if let Some(c) = &change.content {
        new.content = c.clone();
        new.tokens = count_tokens(c) as i64;
        new.norm_key = normalized_key(c);
    }
    if let Some(t) = &change.title {
        new.title = t.clone().filter(|t| !t.trim().is_empty());
    }
    new.tags = tags.unwrap_or(new.tags);
    new.metadata = metadata.unwrap_or(new.metadata);
    new.kind = change.kind.unwrap_or(new.kind);
    new.importance = importance.unwrap_or(new.importance);
    new.updated = ts.raw().to_owned();
    new.updated_unix = ts.unix_seconds();
    let vector = match embedder {
        Some(e) => Some(embed_one(e.as_ref(), dim, &embed_text(new.title.as_deref(), &new.content))?),
        None => None,
    };
    write::update_note(&tx, view.user, &old, &new, vector.as_deref())?;
    let detail = serde_json::json!({ "fields": change.fields() }).to_string();
    write::log(
        &tx,
        view.user,
        old.agent.as_deref(),
        &ts.sortable(),
        DecisionKind::NoteUpdated,
        key,
        None,
        &detail,
    )?;
    write::touch_user(&tx, view.user, Some((ts.raw(), ts.unix_seconds())))?;
    tx.commit()?;
    drop(store);
    engine.views.drop_user(view.user);
    Ok(new.into())
}

/// Removes the record `key` that `scope` sees with everything that holds its content (its
/// vectors in the embedder's cache included). Returns what was deleted, and a deleted round's
/// turns, for the extractor's cache to forget.
pub(crate) fn delete(engine: &Engine, key: &str, scope: Scope<'_>) -> Result<(Deleted, Option<Vec<Turn>>)> {
    scope.check()?;
    let not_found = || Error::NotFound { key: key.to_owned() };
    let mut store = engine.lock_store();
    let (view, _) = resolve(&store, scope)?.ok_or_else(not_found)?;
    let at = logical_now(&store, view.user)?;
    let mut evict: Vec<String> = Vec::new();
    let mut evict_turns: Option<Vec<Turn>> = None;
    let deleted;
    if key.starts_with("n-") {
        let dim = store.pins.dim()?;
        let tx = store.begin_for(&[scope.user])?;
        let note = write::note_by_key(&tx, view.user, view.agent, key)?.ok_or_else(not_found)?;
        // A summary losing one of its originals is rebuilt from the rest.
        if let Some(summary) = &note.condensed_into {
            let rebuilt = rebuild_summary(engine, &tx, dim, view.user, summary, key)?;
            // The summary's old text quoted the note: its cached vector goes too.
            evict.push(embed_text(rebuilt.old.title.as_deref(), &rebuilt.old.content));
            apply_rebuilt(&tx, view.user, &at, rebuilt)?;
        }
        remove_note(&tx, view.user, &at, &note, DecisionKind::NoteDeleted)?;
        write::touch_user(&tx, view.user, None)?;
        tx.commit()?;
        evict.push(embed_text(note.title.as_deref(), &note.content));
        deleted = Deleted { key: key.to_owned(), record: "note", facts: Vec::new() };
    } else if key.contains('/') {
        let fact = store.fact_by_key(view, key)?.ok_or_else(not_found)?;
        let tx = store.begin_for(&[scope.user])?;
        write::delete_fact(&tx, fact.id)?;
        write::redact_decisions(&tx, view.user, key)?;
        write::log(&tx, view.user, fact.agent.as_deref(), &at, DecisionKind::FactDeleted, key, None, "{}")?;
        write::touch_user(&tx, view.user, None)?;
        tx.commit()?;
        evict.push(fact_text(&fact.raw, &fact.content));
        deleted = Deleted { key: key.to_owned(), record: "fact", facts: Vec::new() };
    } else {
        let round = store.round_by_key(view, key)?.ok_or_else(not_found)?;
        let tx = store.begin_for(&[scope.user])?;
        let removed = write::delete_round(&tx, &round)?;
        write::redact_round_decisions(&tx, view.user, &round.key)?;
        let detail = serde_json::json!({ "facts": removed.len() }).to_string();
        write::log(
            &tx,
            view.user,
            round.agent.as_deref(),
            &at,
            DecisionKind::RoundDeleted,
            key,
            None,
            &detail,
        )?;
        write::touch_user(&tx, view.user, None)?;
        tx.commit()?;
        evict.push(round.text.clone());
        evict.extend(parts(&round.turns));
        evict.extend(removed.iter().map(|f| fact_text(&f.raw, &f.content)));
        let removed: Vec<String> = removed.into_iter().map(|f| f.key).collect();
        evict_turns = Some(round.turns.clone());
        deleted = Deleted { key: key.to_owned(), record: "round", facts: removed };
    }
    drop(store);
    engine.views.drop_user(view.user);
    if let Some(e) = &engine.embedder {
        let refs: Vec<&str> = evict.iter().map(String::as_str).collect();
        e.forget(&refs)?;
    }
    Ok((deleted, evict_turns))
}

/// The summary `summary` rebuilt from its originals but `without`, with its new vector
/// (`new: None`: no original is left and the summary goes).
fn rebuild_summary(
    engine: &Engine,
    tx: &Tx<'_>,
    dim: usize,
    user: i64,
    summary: &str,
    without: &str,
) -> Result<Rebuilt> {
    let row = write::note_by_key(tx, user, None, summary)?
        .ok_or_else(|| Error::NotFound { key: summary.to_owned() })?;
    let keys: Vec<&str> =
        row.condenses.as_deref().unwrap_or_default().split(' ').filter(|k| *k != without).collect();
    let mut originals = Vec::new();
    for k in &keys {
        if let Some(o) = write::note_by_key(tx, user, None, k)? {
            originals.push(o);
        }
    }
    if originals.is_empty() {
        return Ok(Rebuilt { old: row, new: None });
    }
    let s = summarize(&originals);
    let vector =
        embed_one(engine.embedder("delete")?.as_ref(), dim, &embed_text(Some(&s.title), &s.content))?;
    let mut new = row.clone();
    new.tokens = count_tokens(&s.content) as i64;
    new.norm_key = normalized_key(&s.content);
    new.title = Some(s.title);
    new.content = s.content;
    new.tags = s.tags;
    new.importance = s.importance;
    new.condenses = Some(keys.join(" "));
    Ok(Rebuilt { old: row, new: Some((new, vector)) })
}

/// Removes a note and logs it as `kind` at `at`; the notes it condensed come back, each logged
/// `note.restored`.
pub(super) fn remove_note(
    tx: &Tx<'_>,
    user: i64,
    at: &str,
    note: &NoteRow,
    kind: DecisionKind,
) -> Result<()> {
    let agent = note.agent.as_deref();
    write::delete_note(tx, note)?;
    write::log(tx, user, agent, at, kind, &note.key, None, "{}")?;
    for original in write::uncondense(tx, user, &note.key)? {
        write::log(tx, user, agent, at, DecisionKind::NoteRestored, &original, Some(&note.key), "{}")?;
    }
    Ok(())
}

/// A summary note rebuilt after one of its originals was deleted.
struct Rebuilt {
    old: NoteRow,
    new: Option<(NoteRow, Vec<f32>)>,
}

fn apply_rebuilt(tx: &Tx<'_>, user: i64, at: &str, r: Rebuilt) -> Result<()> {
    let agent = r.old.agent.as_deref();
    match r.new {
        Some((new, vector)) => {
            write::update_note(tx, user, &r.old, &new, Some(&vector))?;
            write::log(
                tx,
                user,
                agent,
                at,
                DecisionKind::NoteUpdated,
                &r.old.key,
                None,
                r#"{"fields":["condenses"]}"#,
            )
        }
        None => {
            write::delete_note(tx, &r.old)?;
            write::log(
                tx,
                user,
                agent,
                at,
                DecisionKind::NoteDeleted,
                &r.old.key,
                None,
                r#"{"why":"no original left"}"#,
            )
        }
    }
}
