//! Condensing: a scope's oldest episodic notes folded into one semantic note of one line each,
//! extractively (no model but the embedder), the originals kept, linked and hidden.

use super::note::{embed_one, free_key, new_row};
use super::types::CondenseReport;
use crate::config::{Condense, Config};
use crate::engine::{Engine, resolve};
use crate::error::Result;
use crate::model::decision::DecisionKind;
use crate::model::note::{Checked, MAX_TAGS, NoteKind, embed_text};
use crate::model::scope::Scope;
use crate::model::time::Timestamp;
use crate::store::{NoteRow, write};

/// Condenses old episodic notes of `scope` into semantic notes (see [`Condense`]).
pub(crate) fn condense(engine: &Engine, scope: Scope<'_>, condense: Condense) -> Result<CondenseReport> {
    scope.check()?;
    Config { condense: Some(condense), ..Config::default() }.validate()?;
    let embedder = engine.embedder("condense")?;
    let mut report = CondenseReport::default();
    let mut store = engine.lock_store();
    let Some((view, _)) = resolve(&store, scope)? else {
        return Ok(report);
    };
    let agents = match scope.agent {
        Some(a) => vec![Some(a.to_owned())],
        None => store.note_agents(view.user)?,
    };
    for agent in &agents {
        loop {
            let episodic = store.episodic_notes(view.user, agent.as_deref())?;
            if episodic.len() <= condense.keep {
                break;
            }
            let n = (episodic.len() - condense.keep).min(condense.batch).max(2);
            let originals = &episodic[..n];
            let summary = summarize(originals);
            let ts = Timestamp::parse(&originals[n - 1].ts)?;
            let vector = embed_one(
                embedder.as_ref(),
                store.pins.dim()?,
                &embed_text(Some(&summary.title), &summary.content),
            )?;
            let tx = store.begin_for(&[scope.user])?;
            let checked = Checked {
                content: summary.content,
                title: Some(summary.title),
                tags: summary.tags,
                metadata: "{}".to_owned(),
                kind: NoteKind::Semantic,
                importance: summary.importance,
            };
            let key = free_key(&tx, view.user, scope.with_agent(agent.as_deref()), &ts, &checked.content)?;
            let row = NoteRow {
                condenses: Some(originals.iter().map(|o| o.key.as_str()).collect::<Vec<_>>().join(" ")),
                ..new_row(&key, agent.as_deref(), &checked, &ts)
            };
            write::insert_note(&tx, view.user, &row, &vector)?;
            let at = ts.sortable();
            let detail = serde_json::json!({ "kind": "semantic", "condenses": n }).to_string();
            write::log(&tx, view.user, agent.as_deref(), &at, DecisionKind::NoteStored, &key, None, &detail)?;
            for o in originals {
                write::condense_note(&tx, o.id, &key)?;
                write::log(
                    &tx,
                    view.user,
                    agent.as_deref(),
                    &at,
                    DecisionKind::NoteCondensed,
                    &o.key,
                    Some(&key),
                    "{}",
                )?;
            }
            write::touch_user(&tx, view.user, None)?;
            tx.commit()?;
            report.condensed += n;
            report.notes.push(key);
        }
    }
    drop(store);
    if !report.notes.is_empty() {
        engine.views.drop_user(view.user);
    }
    Ok(report)
}

/// An extractive summary of episodic notes.
pub(super) struct Summary {
    pub title: String,
    pub content: String,
    pub tags: Vec<String>,
    pub importance: f32,
}

/// One line per original, oldest first (`- <date>: <first sentence>`, repeats dropped), the
/// originals' tags (first spelling, at most 64) and their highest importance.
pub(super) fn summarize(originals: &[NoteRow]) -> Summary {
    let date =
        |n: &NoteRow| Timestamp::parse(&n.ts).map(|t| t.date().to_string()).unwrap_or_else(|_| n.ts.clone());
    let mut lines: Vec<String> = Vec::new();
    for o in originals {
        let line = format!("- {}: {}", date(o), first_sentence(&o.content, 30));
        if !lines.contains(&line) {
            lines.push(line);
        }
    }
    let mut tags: Vec<String> = Vec::new();
    for t in originals.iter().flat_map(|o| &o.tags) {
        if tags.len() < MAX_TAGS && !tags.iter().any(|x| x.to_lowercase() == t.to_lowercase()) {
            tags.push(t.clone());
        }
    }
    let (first, last) = (&originals[0], &originals[originals.len() - 1]);
    Summary {
        title: format!("{} episodic memories, {} to {}", originals.len(), date(first), date(last)),
        content: lines.join("\n"),
        tags,
        importance: originals.iter().map(|o| o.importance).fold(0.0, f32::max),
    }
}

/// The first sentence of `text` (up to the first `.`, `!` or `?` followed by a space or the end,
/// or the first line break), at most `words` words (then an ellipsis).
fn first_sentence(text: &str, words: usize) -> String {
    let text = text.trim();
    let mut end = text.len();
    let bytes = text.as_bytes();
    for (i, c) in text.char_indices() {
        if c == '\n' {
            end = i;
            break;
        }
        if matches!(c, '.' | '!' | '?') && bytes.get(i + 1).is_none_or(|b| b.is_ascii_whitespace()) {
            end = i + 1;
            break;
        }
    }
    let sentence = &text[..end];
    let all: Vec<&str> = sentence.split_whitespace().collect();
    if all.len() <= words { all.join(" ") } else { format!("{} …", all[..words].join(" ")) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_sentences_stop_at_the_first_end_mark_or_line() {
        assert_eq!(first_sentence("Walked 5 km. It rained.", 30), "Walked 5 km.");
        assert_eq!(first_sentence("Version 2.1 shipped today", 30), "Version 2.1 shipped today");
        assert_eq!(first_sentence("line one\nline two", 30), "line one");
        assert_eq!(first_sentence("a b c d e", 3), "a b c …");
    }
}
