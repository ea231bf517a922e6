//! Forgetting a user: every record and decision of the user removed, the user's name replaced by
//! a tombstone no caller can give, and every trace the embedder's cache holds dropped.

use super::types::ForgetReport;
use crate::engine::Engine;
use crate::error::Result;
use crate::model::fact::fact_text;
use crate::model::note::embed_text;
use crate::model::parts::parts;
use crate::model::round::Turn;
use crate::model::scope::check_user;
use crate::store::{write, Store, View};

/// Forgets `user_id`: what was removed, and the turns of every round it had, for the
/// extractor's cache to forget. `scrubbed` covers the store's log and the embedder's cache.
pub(crate) fn forget_user(engine: &Engine, user_id: &str) -> Result<(ForgetReport, Vec<Vec<Turn>>)> {
    check_user(user_id)?;
    let mut store = engine.lock_store();
    let Some((user, _)) = store.user(user_id)? else {
        return Ok((ForgetReport { rounds: 0, notes: 0, scrubbed: true }, Vec::new()));
    };
    let (turns, texts) = cached_inputs(&store, View { user, agent: None })?;
    let tx = store.begin_for(&[user_id])?;
    let notes = write::forget_notes(&tx, user)?;
    let rounds = write::forget_user(&tx, user)?;
    write::touch_user(&tx, user, None)?;
    tx.commit()?;
    let mut scrubbed = store.checkpoint()?;
    drop(store);
    engine.views.drop_user(user);
    if let Some(e) = &engine.embedder {
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        e.forget(&refs)?;
        scrubbed &= e.checkpoint()?;
    }
    Ok((ForgetReport { rounds, notes, scrubbed }, turns))
}

/// Everything a cache may hold of `view`'s records: each round's turns (the extraction cache's
/// key) and every text embedded for a round, a part, a fact or a note.
fn cached_inputs(store: &Store, view: View<'_>) -> Result<(Vec<Vec<Turn>>, Vec<String>)> {
    let rounds = store.all_rounds(view)?;
    let mut texts = Vec::new();
    for r in &rounds {
        texts.push(r.text.clone());
        texts.extend(parts(&r.turns));
    }
    texts.extend(store.all_facts(view)?.iter().map(|f| fact_text(&f.raw, &f.content)));
    texts.extend(store.all_notes(view)?.iter().map(|n| embed_text(n.title.as_deref(), &n.content)));
    Ok((rounds.into_iter().map(|r| r.turns).collect(), texts))
}
