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
use crate::store::{Store, View, write};

/// Forgets `user_id`: what was removed. `forget_turns` drops the extractor's cached outputs for
/// the turns of every round the user had (whether its log was emptied); `scrubbed` covers it,
/// the embedder's cache and the store's log.
///
/// The caches forget first, under the store's write lock: if that fails, the store is untouched
/// and a retry does everything again (after the commit the user's name is gone, so a retry
/// could no longer find what to forget). The store's rows then go in one transaction.
pub(crate) fn forget_user(
    engine: &Engine,
    user_id: &str,
    forget_turns: impl FnOnce(&[Vec<Turn>]) -> Result<bool>,
) -> Result<ForgetReport> {
    check_user(user_id)?;
    let mut store = engine.lock_store();
    let Some((user, _)) = store.user(user_id)? else {
        return Ok(ForgetReport { rounds: 0, notes: 0, scrubbed: true });
    };
    let (turns, texts) = cached_inputs(&store, View { user, agent: None })?;
    let mut scrubbed = forget_turns(&turns)?;
    if let Some(e) = &engine.embedder {
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        e.forget(&refs)?;
        scrubbed &= e.checkpoint()?;
    }
    let tx = store.begin_for(&[user_id])?;
    let notes = write::forget_notes(&tx, user)?;
    let rounds = write::forget_user(&tx, user)?;
    write::touch_user(&tx, user, None)?;
    tx.commit()?;
    scrubbed &= store.checkpoint()?;
    drop(store);
    engine.views.drop_user(user);
    Ok(ForgetReport { rounds, notes, scrubbed })
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
