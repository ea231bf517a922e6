//! Remembering notes, with group commit: callers that arrive while a batch is being written
//! queue their (validated, embedded) notes and sleep; when that batch is settled, one of them
//! writes every queued call in one transaction. A call's outcome is exactly what it would be
//! alone after the calls before it in the queue; only the commits are shared.

use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use super::note::{free_key, new_row};
use super::types::{MAX_NOTES_PER_CALL, RememberReport, Remembered};
use crate::embed;
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::model::decision::DecisionKind;
use crate::model::note::{NewNote, embed_text, note_key};
use crate::model::scope::Scope;
use crate::model::time::Timestamp;
use crate::store::{NoteMeta, NoteRow, Store, Tx, write};

/// One call's notes, waiting for the write connection.
struct Pending {
    user: String,
    agent: Option<String>,
    /// Each note's row but its key (which only the write connection can choose), and its time:
    /// built before the call queues, so the writer does not count tokens while others wait.
    notes: Vec<(NoteRow, Timestamp)>,
    vectors: Vec<Vec<f32>>,
    /// Set, under the write connection, by whoever wrote the call.
    outcome: Mutex<Option<Result<RememberReport>>>,
}

impl Pending {
    fn settle(&self, outcome: Result<RememberReport>) {
        *self.outcome.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(outcome);
    }

    fn take(&self) -> Option<Result<RememberReport>> {
        self.outcome.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take()
    }
}

/// What one written call leaves for the views once the transaction commits.
struct Growth {
    user: i64,
    version: i64,
    added: Vec<(NoteMeta, usize)>,
    /// Whether the call changed the store (the user's write counter moved on).
    changed: bool,
}

/// Calls to `remember` waiting for the write connection (group commit).
#[derive(Default)]
pub(crate) struct Commits {
    queue: Mutex<Queue>,
    /// Told whenever a batch is settled: its callers return, and one of the calls queued since
    /// writes the next batch.
    settled: Condvar,
}

#[derive(Default)]
struct Queue {
    pending: Vec<Arc<Pending>>,
    /// Whether some call is writing a batch (it takes the write connection after the queue).
    writing: bool,
}

/// A batch being written. Dropped, it lets the next batch begin and wakes every waiting call;
/// dropped by a panic, it first settles every call the writer left unsettled with an error.
struct Writing<'a> {
    commits: &'a Commits,
    batch: Vec<Arc<Pending>>,
}

impl Drop for Writing<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            for pending in &self.batch {
                let mut outcome = pending.outcome.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                if outcome.is_none() {
                    let failed = std::io::Error::other("the write that carried this call failed");
                    *outcome = Some(Err(Error::from(failed)));
                }
            }
        }
        self.commits.lock().writing = false;
        self.commits.settled.notify_all();
    }
}

impl Commits {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Stores `notes` in `scope` in one transaction (shared with the calls queued beside it).
    pub(crate) fn remember(
        &self,
        engine: &Engine,
        notes: &[NewNote],
        scope: Scope<'_>,
    ) -> Result<RememberReport> {
        scope.check()?;
        if notes.len() > MAX_NOTES_PER_CALL {
            return Err(Error::input("memories", format!("at most {MAX_NOTES_PER_CALL} per call")));
        }
        let checked = notes
            .iter()
            .enumerate()
            .map(|(i, n)| n.check(&format!("memories[{i}]"), &engine.config.years))
            .collect::<Result<Vec<_>>>()?;
        if checked.is_empty() {
            return Ok(RememberReport::default());
        }
        let embedder = engine.embedder("remember")?;
        let texts: Vec<String> =
            checked.iter().map(|(c, _)| embed_text(c.title.as_deref(), &c.content)).collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let vectors = embed::documents(embedder.as_ref(), &refs, engine.pins.dim()?)?;

        let mine = Arc::new(Pending {
            user: scope.user.to_owned(),
            agent: scope.agent.map(str::to_owned),
            notes: checked.into_iter().map(|(c, ts)| (new_row("", scope.agent, &c, &ts), ts)).collect(),
            vectors,
            outcome: Mutex::new(None),
        });
        let mut queue = self.lock();
        queue.pending.push(Arc::clone(&mine));
        // Waiting calls sleep on the queue, not on the write connection: a settled batch wakes
        // its callers at once rather than handing the connection from one to the next.
        loop {
            if let Some(outcome) = mine.take() {
                return outcome;
            }
            if !queue.writing {
                queue.writing = true;
                let writing = Writing { commits: self, batch: std::mem::take(&mut queue.pending) };
                drop(queue);
                let mut store = engine.lock_store();
                write_batch(engine, &mut store, &writing.batch);
                store.unlock();
                drop(writing);
                // After the batch's callers are woken and the next batch may begin.
                engine.checkpoint();
                queue = self.lock();
                continue;
            }
            queue = self.settled.wait(queue).unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }
}

/// Writes `batch` in one transaction, settling every call: its report once the transaction
/// commits, else its error (its own, or the commit's).
///
/// The calls are first written one after another with nothing between them; only when one of
/// them fails is the transaction rolled back and the batch written again with each call inside
/// its own savepoint, so that the failed call's statements are undone alone. Both ways give
/// each call the outcome it would have alone; the first spares every batch the savepoints'
/// costs (the statement journal's page copies, FTS5 flushing its pending terms at each one).
fn write_batch(engine: &Engine, store: &mut Store, batch: &[Arc<Pending>]) {
    let users: Vec<&str> = batch.iter().map(|p| p.user.as_str()).collect();
    let written = match write_plain(store, &users, batch) {
        Ok(None) => write_isolated(store, &users, batch),
        Ok(Some(w)) => Ok(w),
        Err(e) => Err(e),
    };
    let (reports, growth) = match written {
        Ok(w) => w,
        Err(e) => return settle_all(batch, &e),
    };
    // Grown while the connection is held: the views follow the writes in order.
    for (pending, g) in growth.into_iter().filter(|(_, g)| g.changed) {
        engine.ledgers.advance(g.user, g.version);
        engine.views.grow(g.user, g.version, pending.agent.as_deref(), |view| {
            for (meta, i) in &g.added {
                view.push_note(meta, &pending.vectors[*i]);
            }
        });
    }
    for (pending, report) in batch.iter().zip(reports) {
        pending.settle(report);
    }
}

/// What a committed batch leaves: each call's report, and what the written calls grew.
type Written<'b> = (Vec<Result<RememberReport>>, Vec<(&'b Arc<Pending>, Growth)>);

/// Writes and commits `batch` in one transaction, the calls one after another with nothing
/// between them. A failing call rolls the whole transaction back and gives `Ok(None)`: the batch
/// is to be written again by [`write_isolated`]. `Err` is a failure of the transaction itself
/// (begin, commit): every call's error.
fn write_plain<'b>(
    store: &mut Store,
    users: &[&str],
    batch: &'b [Arc<Pending>],
) -> Result<Option<Written<'b>>> {
    let tx = store.begin_for(users)?;
    let mut reports = Vec::with_capacity(batch.len());
    let mut growth = Vec::with_capacity(batch.len());
    for pending in batch {
        match write_call(&tx, pending) {
            Ok((report, grown)) => {
                reports.push(Ok(report));
                growth.push((pending, grown));
            }
            // Dropped uncommitted, the transaction rolls back.
            Err(_) => return Ok(None),
        }
    }
    tx.commit()?;
    Ok(Some((reports, growth)))
}

/// Writes and commits `batch` in one transaction, each call inside its own savepoint, so that a
/// failing call's statements are undone alone and it gets its own error. `Err` is a failure of
/// the transaction itself (begin, savepoint, commit): every call's error.
fn write_isolated<'b>(store: &mut Store, users: &[&str], batch: &'b [Arc<Pending>]) -> Result<Written<'b>> {
    let tx = store.begin_for(users)?;
    let mut reports = Vec::with_capacity(batch.len());
    let mut growth = Vec::with_capacity(batch.len());
    for pending in batch {
        // Cached statements: every write runs these, so none is parsed more than once.
        let run = |sql: &str| crate::store::db::Db::execute(&tx, sql, &[]);
        run("SAVEPOINT remember")?;
        let written = write_call(&tx, pending);
        if written.is_err() {
            run("ROLLBACK TO remember")?;
        }
        run("RELEASE remember")?;
        match written {
            Ok((report, grown)) => {
                reports.push(Ok(report));
                growth.push((pending, grown));
            }
            Err(e) => reports.push(Err(e)),
        }
    }
    tx.commit()?;
    Ok((reports, growth))
}

/// Settles every call of a batch that failed as a whole with (a copy of) `e`.
fn settle_all(batch: &[Arc<Pending>], e: &Error) {
    for pending in batch {
        pending.settle(Err(e.clone()));
    }
}

/// Writes one call's notes inside the open transaction.
fn write_call(tx: &Tx<'_>, pending: &Pending) -> Result<(RememberReport, Growth)> {
    let scope = Scope { user: &pending.user, agent: pending.agent.as_deref() };
    let agent = scope.agent;
    let (user, version) = write::user_for_write(tx, scope.user)?;
    let mut report = RememberReport::default();
    let mut added = Vec::new();
    let mut latest: Option<&Timestamp> = None;
    // Whether the call changes the store (a call of replays alone leaves it byte-identical).
    let mut changed = false;
    for (i, (unkeyed, ts)) in pending.notes.iter().enumerate() {
        let at = ts.sortable();
        if let Some(of) = write::duplicate_note(tx, user, agent, &unkeyed.norm_key)? {
            let key = note_key(scope.user, agent, ts, &unkeyed.content, 0);
            // A replay (this very note again: its key is the stored one's) decides nothing new.
            if key != of {
                write::log(
                    tx,
                    user,
                    agent,
                    &at,
                    DecisionKind::NoteDuplicate,
                    &key,
                    Some(&of),
                    r#"{"match":"exact"}"#,
                )?;
                changed = true;
            }
            report.notes.push(Remembered { key: of, stored: false });
            continue;
        }
        let key = free_key(tx, user, scope, ts, &unkeyed.content)?;
        let mut row = NoteRow { key, ..unkeyed.clone() };
        row.id = write::insert_note(tx, user, &row, &pending.vectors[i])?;
        let detail = serde_json::json!({ "kind": row.kind.as_str() }).to_string();
        write::log(tx, user, agent, &at, DecisionKind::NoteStored, &row.key, None, &detail)?;
        added.push((NoteMeta::of(&row), i));
        if latest.is_none_or(|l| ts > l) {
            latest = Some(ts);
        }
        report.notes.push(Remembered { key: row.key, stored: true });
    }
    let changed = changed || !added.is_empty();
    if changed {
        write::touch_user(tx, user, latest.map(|t| (t.raw(), t.unix_seconds())))?;
    }
    Ok((report, Growth { user, version, added, changed }))
}
