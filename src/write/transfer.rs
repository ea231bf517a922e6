//! Copying and moving notes between two stores, reusing their stored vectors.

use super::edit::remove_note;
use super::types::TransferReport;
use crate::engine::{Engine, logical_now, resolve};
use crate::error::{Error, Result};
use crate::model::decision::DecisionKind;
use crate::model::scope::Scope;
use crate::model::time::Timestamp;
use crate::store::{NoteRow, Pins, write};

/// The most keys one copy or move takes.
pub const MAX_TRANSFER_KEYS: usize = 1000;

/// The pins two stores must share for a note's vector and key to mean the same in both.
fn transfer_pins(pins: &Pins) -> Pins {
    Pins(
        pins.0
            .iter()
            .filter(|(k, _)| k.starts_with("embedder.") || k.starts_with("notes."))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    )
}

/// Copies the notes `keys` that `scope` sees from `from` into `to` with their stored vectors,
/// then, with `remove`, removes them from `from` once `to` has committed.
pub(crate) fn transfer(
    from: &Engine,
    to: &Engine,
    keys: &[&str],
    scope: Scope<'_>,
    remove: bool,
) -> Result<TransferReport> {
    scope.check()?;
    if std::ptr::eq(from, to) || from.place.same_store(&to.place)? {
        return Err(Error::input("target", "is this store (perhaps under another path)"));
    }
    if keys.is_empty() {
        return Err(Error::input("keys", "is empty"));
    }
    if keys.len() > MAX_TRANSFER_KEYS {
        return Err(Error::input("keys", format!("has {} keys; at most {MAX_TRANSFER_KEYS}", keys.len())));
    }
    for (i, k) in keys.iter().enumerate() {
        if !k.starts_with("n-") {
            return Err(Error::input(
                format!("keys[{i}]"),
                "only notes move between stores (a user's rounds move with export and import)",
            ));
        }
    }
    let differences = transfer_pins(&from.pins).differences(&transfer_pins(&to.pins));
    if !differences.is_empty() {
        return Err(Error::PinMismatch { differences });
    }
    // Read here, then write there: the two stores are never locked together.
    // Each note once, with the index it was first given at (errors name it).
    let mut notes: Vec<(usize, NoteRow, Vec<f32>)> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    {
        let store = from.lock_store();
        let not_found = |k: &str| Error::NotFound { key: k.to_owned() };
        let Some((view, _)) = resolve(&store, scope)? else {
            return Err(keys.first().map_or_else(|| Error::input("keys", "is empty"), |k| not_found(k)));
        };
        for (i, k) in keys.iter().enumerate() {
            let row = store.note_by_key(view, k)?.ok_or_else(|| not_found(k))?;
            if let (true, Some(summary)) = (remove, &row.condensed_into) {
                return Err(Error::input(
                    format!("keys[{i}]"),
                    format!("is condensed into {summary}; move the summary, or delete the note"),
                ));
            }
            let vector = store.note_vector(row.id)?;
            if seen.insert(row.key.clone()) {
                notes.push((i, row, vector));
            }
        }
    }
    let mut report = TransferReport::default();
    {
        let mut store = to.lock_store();
        let tx = store.begin_for(&[scope.user])?;
        let user = write::ensure_user(&tx, scope.user)?;
        let mut latest: Option<(&str, i64)> = None;
        for (i, row, vector) in &notes {
            if let Some(there) = write::note_with_key(&tx, user, &row.key)? {
                if !there.same_as(row) {
                    // Dropping the transaction rolls back what was copied: both stores stay as
                    // they were.
                    return Err(Error::input(
                        format!("keys[{i}]"),
                        format!(
                            "{}: the target store holds another version (updated {} there, {} here); \
                             update or delete one of them first",
                            row.key, there.updated, row.updated
                        ),
                    ));
                }
                report.present.push(row.key.clone());
                continue;
            }
            let copy = NoteRow { condensed_into: None, condenses: None, ..row.clone() };
            write::insert_note(&tx, user, &copy, vector)?;
            let at = Timestamp::from_parts(row.updated.clone(), row.updated_unix)
                .map_or_else(|| row.updated.clone(), |t| t.sortable());
            let detail = serde_json::json!({ "kind": row.kind.as_str() }).to_string();
            write::log(
                &tx,
                user,
                row.agent.as_deref(),
                &at,
                DecisionKind::NoteCopied,
                &row.key,
                None,
                &detail,
            )?;
            if latest.is_none_or(|l| row.updated_unix > l.1) {
                latest = Some((&row.updated, row.updated_unix));
            }
            report.copied.push(row.key.clone());
        }
        write::touch_user(&tx, user, latest)?;
        tx.commit()?;
        drop(store);
        to.views.drop_user(user);
    }
    if remove {
        let mut store = from.lock_store();
        let Some((view, _)) = resolve(&store, scope)? else {
            return Ok(report);
        };
        let at = logical_now(&store, view.user)?;
        let tx = store.begin_for(&[scope.user])?;
        for (_, row, _) in &notes {
            // Removed only as the target holds it: an edit made here since it was read stays.
            match write::note_with_key(&tx, view.user, &row.key)? {
                Some(now) if now.same_as(row) => {
                    remove_note(&tx, view.user, &at, &now, DecisionKind::NoteMoved)?;
                    report.removed.push(row.key.clone());
                }
                Some(_) => report.changed.push(row.key.clone()),
                None => {}
            }
        }
        write::touch_user(&tx, view.user, None)?;
        tx.commit()?;
        drop(store);
        from.views.drop_user(view.user);
    }
    Ok(report)
}
