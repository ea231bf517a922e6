//! Copying and moving notes between two stores, reusing their stored vectors.

use super::notes::TransferReport;
use super::*;
use crate::store::NoteRow;

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

impl Memory {
    /// Copies the notes `keys` that `scope` sees into `target` (another store), under the same
    /// user, agent and key, with their stored vectors: nothing is embedded again, so both stores
    /// must have been built with the same embedder (and note rules), else
    /// [`Error::PinMismatch`] names each differing pin and nothing is written. A note the target
    /// already holds is reported `present` and left alone. Links made by condensing are not
    /// copied: a copied summary is a plain semantic note, a copied original a visible one. One
    /// transaction in the target; a `note.copied` decision for each note written.
    ///
    /// ```
    /// use mnemon::{Config, HashingEmbedder, Memory, NewNote, Record};
    /// # let dir = tempfile::tempdir().unwrap();
    /// let project = Memory::open(dir.path().join("project.db"), HashingEmbedder::default(), Config::default())?;
    /// let global = Memory::open(dir.path().join("global.db"), HashingEmbedder::default(), Config::default())?;
    /// let key = project.remember(&[NewNote::new("Prefers tabs.", "2026-01-01")], "ana")?.notes[0].key.clone();
    /// let report = project.move_to(&[&key], "ana", &global)?;
    /// assert_eq!((report.copied.len(), report.removed.len()), (1, 1));
    /// assert!(matches!(global.get(&key, "ana")?, Record::Note(_)));
    /// assert!(project.get(&key, "ana").is_err());
    /// # Ok::<(), mnemon::Error>(())
    /// ```
    pub fn copy_to<'s>(
        &self,
        keys: &[&str],
        scope: impl Into<Scope<'s>>,
        target: &Memory,
    ) -> Result<TransferReport> {
        self.transfer(keys, scope.into(), target, false)
    }

    /// [`copy_to`](Memory::copy_to), then removes the notes from this store (as
    /// [`delete`](Memory::delete) would, logged `note.moved`), once the target has committed:
    /// a crash in between leaves the note in both stores, never in neither.
    pub fn move_to<'s>(
        &self,
        keys: &[&str],
        scope: impl Into<Scope<'s>>,
        target: &Memory,
    ) -> Result<TransferReport> {
        self.transfer(keys, scope.into(), target, true)
    }

    fn transfer(
        &self,
        keys: &[&str],
        scope: Scope<'_>,
        target: &Memory,
        remove: bool,
    ) -> Result<TransferReport> {
        check_scope(scope)?;
        if Arc::ptr_eq(&self.shared, &target.shared) {
            return Err(Error::input("target", "is this store"));
        }
        for (i, k) in keys.iter().enumerate() {
            if !k.starts_with("n-") {
                return Err(Error::input(
                    format!("keys[{i}]"),
                    "only notes move between stores (a user's rounds move with export and import)",
                ));
            }
        }
        let differences = transfer_pins(&self.shared.pins).differences(&transfer_pins(&target.shared.pins));
        if !differences.is_empty() {
            return Err(Error::PinMismatch { differences });
        }
        // Read here, then write there: the two stores are never locked together.
        let mut notes: Vec<(NoteRow, Vec<f32>)> = Vec::new();
        {
            let store = self.shared.lock_store();
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
                if !notes.iter().any(|(n, _)| n.key == row.key) {
                    notes.push((row, vector));
                }
            }
        }
        let mut report = TransferReport::default();
        {
            let mut store = target.shared.lock_store();
            let tx = store.begin_for(&[scope.user])?;
            let user = write::ensure_user(&tx, scope.user)?;
            let mut latest: Option<(&str, i64)> = None;
            for (row, vector) in &notes {
                if write::note_key_taken(&tx, user, &row.key)? {
                    report.present.push(row.key.clone());
                    continue;
                }
                let copy = NoteRow { condensed_into: None, condenses: None, ..row.clone() };
                write::insert_note(&tx, user, &copy, vector)?;
                let at = Timestamp::from_parts(row.updated.clone(), row.updated_unix)
                    .map_or_else(|| row.updated.clone(), |t| t.sortable());
                let detail = serde_json::json!({ "kind": row.kind.as_str() }).to_string();
                write::log(&tx, user, row.agent.as_deref(), &at, "note.copied", &row.key, None, &detail)?;
                if latest.is_none_or(|l| row.updated_unix > l.1) {
                    latest = Some((&row.updated, row.updated_unix));
                }
                report.copied.push(row.key.clone());
            }
            write::touch_user(&tx, user, latest)?;
            tx.commit()?;
            drop(store);
            target.shared.drop_views(user);
        }
        if remove {
            let mut store = self.shared.lock_store();
            let Some((view, _)) = resolve(&store, scope)? else {
                return Ok(report);
            };
            let at = logical_now(&store, view.user)?;
            let tx = store.begin_for(&[scope.user])?;
            for (row, _) in &notes {
                super::notes::remove_note(&tx, view.user, &at, row, "note.moved")?;
                report.removed.push(row.key.clone());
            }
            write::touch_user(&tx, view.user, None)?;
            tx.commit()?;
            drop(store);
            self.shared.drop_views(view.user);
        }
        Ok(report)
    }
}
