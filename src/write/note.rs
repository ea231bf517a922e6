//! A new note's parts, for every write that makes one (`remember`, `condense`, the rebuilt summary
//! of a delete): its free key, its row and its vector.

use crate::embed::{self, Embedder};
use crate::error::Result;
use crate::model::note::{Checked, note_key};
use crate::model::round::normalized_key;
use crate::model::scope::Scope;
use crate::model::time::{Timestamp, day_number};
use crate::read::render::count_tokens;
use crate::store::{NoteRow, Tx, write};

/// The key of a new note: derived from its scope, time and content, with `-2`, `-3`… when a note
/// whose content changed since holds the plain one.
pub(super) fn free_key(
    tx: &Tx<'_>,
    user: i64,
    scope: Scope<'_>,
    ts: &Timestamp,
    content: &str,
) -> Result<String> {
    let mut attempt = 0;
    loop {
        let key = note_key(scope.user, scope.agent, ts, content, attempt);
        if !write::note_key_taken(tx, user, &key)? {
            return Ok(key);
        }
        attempt += 1;
    }
}

/// A new note's row from its checked fields, stated at `ts`.
pub(super) fn new_row(key: &str, agent: Option<&str>, c: &Checked, ts: &Timestamp) -> NoteRow {
    NoteRow {
        id: 0,
        key: key.to_owned(),
        agent: agent.map(str::to_owned),
        kind: c.kind,
        title: c.title.clone(),
        content: c.content.clone(),
        tags: c.tags.clone(),
        metadata: c.metadata.clone(),
        importance: c.importance,
        ts: ts.raw().to_owned(),
        ts_unix: ts.unix_seconds(),
        day: day_number(ts.date()),
        updated: ts.raw().to_owned(),
        updated_unix: ts.unix_seconds(),
        tokens: count_tokens(&c.content) as i64,
        norm_key: normalized_key(&c.content),
        condensed_into: None,
        condenses: None,
    }
}

/// Embeds one text as a document, checking its dimension.
pub(super) fn embed_one(embedder: &dyn Embedder, dim: usize, text: &str) -> Result<Vec<f32>> {
    Ok(embed::documents(embedder, &[text], dim)?.pop().unwrap_or_default())
}
