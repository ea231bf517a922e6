//! The extraction queue's drain: queued rounds taken a few at a time (as many as the extractor
//! decodes together), sent to the model outside every lock, then stored one per transaction in
//! queue order (see `settle`). On a file one process drains a store at a time (an OS lock on a
//! file beside it); on a database server each process claims the users whose rounds it extracts.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use super::extract::Extractor;
use super::prefilter::skip;
use super::settle::store_round;
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::model::round::Turn;
use crate::model::scope::Scope;
use crate::store::db::Claims;
use crate::store::{Place, View};

/// A file store's claims: its process holds the store's extraction lock, so every user is its.
struct WholeStore {
    _lock: std::fs::File,
}

impl Claims for WholeStore {
    fn try_claim(&mut self, _user: i64) -> Result<bool> {
        Ok(true)
    }

    fn release(&mut self, _user: i64) -> Result<()> {
        Ok(())
    }
}

/// The worker's wake-up and stop signals.
#[derive(Default)]
struct Signal {
    stop: bool,
    wake: bool,
}

/// A store's extractor and the state of the drain of its queue: one drainer at a time, the
/// background worker's signals, and the flag a closing store sets to cancel a decode.
pub(crate) struct Worker {
    /// The extractor, and its id in the store's `extractors` table.
    pub(crate) extractor: Option<(Arc<dyn Extractor>, i64)>,
    /// Held while the extraction queue is being drained: one drainer at a time. On a database
    /// server it keeps the drainer's claims connection between drains.
    drain: Mutex<Option<Box<dyn Claims>>>,
    signal: Mutex<Signal>,
    /// Set when the store closes: a decode in progress gives up (its round stays queued).
    cancel: AtomicBool,
    wake: Condvar,
}

impl Worker {
    /// The drain's state for `extractor` (registered in the store under that id), or for none.
    pub(crate) fn new(extractor: Option<(Arc<dyn Extractor>, i64)>) -> Worker {
        Worker {
            extractor,
            drain: Mutex::new(None),
            signal: Mutex::default(),
            cancel: AtomicBool::new(false),
            wake: Condvar::new(),
        }
    }

    fn lock_signal(&self) -> MutexGuard<'_, Signal> {
        self.signal.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Wakes the background worker.
    pub(crate) fn signal(&self) {
        self.lock_signal().wake = true;
        self.wake.notify_all();
    }

    /// Tells the background worker to stop, and a decode in progress to give up (within a
    /// token; its round stays queued).
    pub(crate) fn stop(&self) {
        self.lock_signal().stop = true;
        self.cancel.store(true, Ordering::Relaxed);
        self.wake.notify_all();
    }

    fn stopping(&self) -> bool {
        self.lock_signal().stop
    }

    /// The worker: waits for a signal, drains the queue, until told to stop. A failure leaves its
    /// round queued and waits for the next signal (the next `add`); `flush` reports it.
    pub(crate) fn work(&self, engine: &Engine) {
        // What the queue held after the last drain (rounds that failed stay): an idle look that
        // finds the same count leaves them to the next signal rather than retry them every poll.
        let mut left: Option<usize> = None;
        loop {
            {
                let mut signal = self.lock_signal();
                while !signal.stop && !signal.wake {
                    match engine.config.queue_poll_ms {
                        None => {
                            signal = self.wake.wait(signal).unwrap_or_else(std::sync::PoisonError::into_inner)
                        }
                        Some(ms) => {
                            let (s, timeout) = self
                                .wake
                                .wait_timeout(signal, std::time::Duration::from_millis(u64::from(ms)))
                                .unwrap_or_else(std::sync::PoisonError::into_inner);
                            signal = s;
                            if timeout.timed_out() && !signal.stop {
                                drop(signal);
                                // Rounds another process queued.
                                let pending = engine.lock_store().pending(None).unwrap_or(0);
                                signal = self.lock_signal();
                                if pending > 0 && Some(pending) != left {
                                    break;
                                }
                            }
                        }
                    }
                }
                if signal.stop {
                    return;
                }
                signal.wake = false;
            }
            match self.drain(engine) {
                Ok(_) => {}
                Err(e) => tracing::warn!(error = %e, "background extraction stopped; the rounds stay queued"),
            }
            left = engine.lock_store().pending(None).ok();
        }
    }

    /// Extracts queued rounds in round order until the queue is empty (or the store is closing).
    /// A round that fails stays queued, and so do its user's later rounds (a user's rounds are
    /// settled in order), but every other user's rounds go on; each failure is returned with its
    /// user (logged here), an error only for what stops every user (the store, no extractor).
    ///
    /// No round goes through the model twice. On a file, one process at a time drains the store:
    /// the others wait for its extraction lock file. On a database server, each process claims
    /// the users whose rounds it extracts ([`Claims`]), so several processes extract different
    /// users' rounds in parallel, and each user's in order; rounds of users another process
    /// holds are waited for.
    ///
    /// [`Claims`]: crate::store::db::Claims
    pub(crate) fn drain(&self, engine: &Engine) -> Result<Vec<(i64, Error)>> {
        let mut turn = self.drain.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut failed: Vec<(i64, Error)> = Vec::new();
        let Some((extractor, _)) = self.extractor.as_ref() else {
            return match engine.lock_store().pending(None)? {
                0 => Ok(failed),
                pending => Err(Error::NoExtractor { operation: "extraction", pending }),
            };
        };
        let mut whole: Box<dyn Claims>;
        let claims: &mut Box<dyn Claims> = match &engine.place {
            Place::File(path) => match self.file_lock(path)? {
                Some(lock) => {
                    whole = Box::new(WholeStore { _lock: lock });
                    &mut whole
                }
                None => return Ok(failed),
            },
            Place::Remote(backend) => match &mut *turn {
                Some(claims) => claims,
                empty => empty.insert(backend.extraction_claims()?),
            },
        };
        let drained = self.drain_claimed(engine, extractor.as_ref(), claims.as_mut(), &mut failed);
        if drained.is_err() {
            // Claims in an unknown state: the connection goes, and with it every claim.
            *turn = None;
        }
        drained.map(|()| failed)
    }

    /// [`drain`](Shared::drain)'s loop, with the claims it takes users with.
    fn drain_claimed(
        &self,
        engine: &Engine,
        extractor: &dyn Extractor,
        claims: &mut dyn Claims,
        failed: &mut Vec<(i64, Error)>,
    ) -> Result<()> {
        let batch = extractor.batch_size();
        // Users whose rounds another process is extracting, left alone until the next look.
        let mut busy: Vec<i64> = Vec::new();
        loop {
            if self.stopping() {
                return Ok(());
            }
            let skip: Vec<i64> = failed.iter().map(|(u, _)| *u).chain(busy.iter().copied()).collect();
            let next = engine.lock_store().next_queued(&skip, batch)?;
            if next.is_empty() {
                if busy.is_empty() || !self.pause(std::time::Duration::from_millis(100)) {
                    return Ok(());
                }
                busy.clear();
                continue;
            }
            let mut mine: Vec<i64> = Vec::new();
            for &(_, user) in &next {
                if mine.contains(&user) || busy.contains(&user) {
                    continue;
                }
                if claims.try_claim(user)? {
                    mine.push(user);
                } else {
                    busy.push(user);
                }
            }
            if mine.is_empty() {
                continue;
            }
            // Read again under the claims: rounds another process stored before letting go of a
            // user have left the queue since.
            let queued = engine.lock_store().queued_of(&mine, batch);
            let cancelled = queued.map(|queued| {
                let before = failed.len();
                let cancelled = self.extract_rounds(engine, extractor, &queued, failed);
                for (user, e) in &failed[before..] {
                    tracing::warn!(user, error = %e, "extraction failed; the user's rounds stay queued");
                }
                cancelled
            });
            for user in mine {
                claims.release(user)?;
            }
            if cancelled? {
                return Ok(());
            }
        }
    }

    /// Waits `pause` or until the store begins closing: whether it is still open.
    fn pause(&self, pause: std::time::Duration) -> bool {
        let signal = self.lock_signal();
        if signal.stop {
            return false;
        }
        let (signal, _) =
            self.wake.wait_timeout(signal, pause).unwrap_or_else(std::sync::PoisonError::into_inner);
        !signal.stop
    }

    /// The store's extraction lock (a file beside it, locked with the OS's advisory lock, which
    /// a crashed process releases), waited for; `None` if the store began closing meanwhile.
    fn file_lock(&self, path: &std::path::Path) -> Result<Option<std::fs::File>> {
        let mut name = path.to_owned().into_os_string();
        name.push("-extract.lock");
        let file = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(&name)?;
        loop {
            match file.try_lock() {
                Ok(()) => return Ok(Some(file)),
                Err(std::fs::TryLockError::WouldBlock) => {}
                Err(std::fs::TryLockError::Error(e)) => return Err(Error::from(e)),
            }
            // Another process extracts; look again shortly, or stop when the store closes.
            if !self.pause(std::time::Duration::from_millis(100)) {
                return Ok(None);
            }
        }
    }

    /// Extracts `queued` rounds (`(round id, user id, user name)`, in queue order) in one call
    /// of the extractor, then stores each in order. A round that fails stays queued, with its user's
    /// later rounds; its user and error join `failed`. Returns whether the store began closing
    /// (the rounds not stored stay queued).
    fn extract_rounds(
        &self,
        engine: &Engine,
        extractor: &dyn Extractor,
        queued: &[(i64, i64, String)],
        failed: &mut Vec<(i64, Error)>,
    ) -> bool {
        let mut rounds = Vec::with_capacity(queued.len());
        for (round_id, user, name) in queued {
            let (round_id, user) = (*round_id, *user);
            match engine.lock_store().rounds_by_id(View { user, agent: None }, &[round_id]) {
                Ok(mut found) if !found.is_empty() => {
                    let round = found.remove(0);
                    let skipped = skip(&round.turns);
                    rounds.push((round_id, (user, name.as_str()), round, skipped));
                }
                Ok(_) => {} // forgotten since it was read from the queue
                Err(e) => failed.push((user, e)),
            }
        }
        // The model runs outside every lock, on the rounds the pre-filter lets through.
        let sent: Vec<&[Turn]> =
            rounds.iter().filter(|r| r.3.is_none()).map(|(_, _, round, _)| round.turns.as_slice()).collect();
        let mut outcomes = match extractor.extract_batch(&sent, &self.cancel) {
            Ok(outcomes) => outcomes.into_iter(),
            Err(Error::Cancelled) => return true,
            Err(e) => {
                for (_, (user, _), _, _) in &rounds {
                    if !failed.iter().any(|(u, _)| u == user) {
                        failed.push((*user, e.clone()));
                    }
                }
                return false;
            }
        };
        for (round_id, (user, name), round, skipped) in rounds {
            let extraction = match skipped {
                Some(_) => None,
                None => Some(outcomes.next().unwrap_or_else(|| Err(Error::Extractor("no outcome".into())))),
            };
            if failed.iter().any(|(u, _)| *u == user) {
                continue; // an earlier round of this user failed: it and its later rounds wait
            }
            let stored = match extraction.transpose() {
                Ok(extraction) => {
                    let extractor = self.extractor.as_ref().map(|(_, id)| *id);
                    store_round(engine, extractor, round_id, (user, name), &round, skipped, extraction)
                }
                Err(e) => Err(e),
            };
            match stored {
                Ok(()) => {}
                Err(Error::Cancelled) => return true,
                Err(e) => failed.push((user, e)),
            }
        }
        false
    }
}

/// Rounds of the user of `scope` (of every user with `None`) that wait for extraction; a scope
/// with an agent is refused (the queue is per user).
pub(crate) fn pending(engine: &Engine, scope: Option<Scope<'_>>) -> Result<usize> {
    let store = engine.lock_store();
    match scope {
        None => store.pending(None),
        Some(scope) => match store.user(scope.whole_user("pending")?)? {
            Some((user, _)) => store.pending(Some(user)),
            None => Ok(0),
        },
    }
}
