//! The cache of views: a scope's records in memory for ranking, one per user and agent, each
//! behind its own lock; grown by writes in commit order, loaded once per user at a time, used by a
//! read only at its snapshot's version, and dropped least recently used past
//! [`Config::view_cache_bytes`].

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use super::view::{self, CachedView};
use super::Shared;
use crate::error::Result;
use crate::rank;
use crate::store::{Store, View};

/// A view's key: the user's row id and the agent.
pub(super) type ViewKey = (i64, Option<String>);

/// The cached views: each behind its own lock, so ranking in one scope never waits for another,
/// and many reads rank in the same scope at once.
#[derive(Default)]
pub(super) struct Views {
    pub(super) slots: HashMap<ViewKey, Arc<Slot>>,
    /// Per user: held while one of the user's views loads, and while a write grows them, so a
    /// write never misses a view that is loading (and loads of one view are not repeated).
    pub(super) gates: HashMap<i64, Arc<Mutex<()>>>,
    /// A counter (not a clock) that orders uses, for eviction.
    pub(super) tick: AtomicU64,
}

pub(super) struct Slot {
    pub(super) view: RwLock<CachedView>,
    /// Bytes when it was loaded (growth after a write is not counted).
    bytes: usize,
    used: AtomicU64,
}

impl Shared {
    /// After one write of `user`'s records (the user's write counter was `version`): each view
    /// of the user that was current moves to the next version, and those that see records of
    /// `agent` get them from `push`; any other view of the user is dropped.
    pub(super) fn grow(&self, user: i64, version: i64, agent: Option<&str>, push: impl Fn(&mut CachedView)) {
        let gate = self.gate(user);
        let _loaded = gate.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        // The user's slots, out of the index's lock before waiting on each view's own lock (no
        // view of the user can be installed meanwhile: loads take the gate).
        let slots: Vec<(ViewKey, Arc<Slot>)> = self
            .lock_index()
            .slots
            .iter()
            .filter(|((u, _), _)| *u == user)
            .map(|(k, slot)| (k.clone(), Arc::clone(slot)))
            .collect();
        let mut stale = Vec::new();
        for (key, slot) in slots {
            let mut cached = slot.view.write().unwrap_or_else(std::sync::PoisonError::into_inner);
            if cached.version > version {
                // Loaded after this write committed: it holds the write's records already.
                continue;
            }
            if cached.version != version {
                stale.push(key);
                continue;
            }
            cached.version = version + 1;
            if view::sees(key.1.as_deref(), agent) {
                push(&mut cached);
            }
        }
        if !stale.is_empty() {
            let mut views = self.lock_index();
            for key in stale {
                views.slots.remove(&key);
            }
        }
    }

    /// The gate of `user`'s views.
    fn gate(&self, user: i64) -> Arc<Mutex<()>> {
        Arc::clone(self.lock_index().gates.entry(user).or_default())
    }

    /// Drops every view of `user` (after a write that removes or changes records).
    pub(super) fn drop_views(&self, user: i64) {
        self.lock_index().slots.retain(|(u, _), _| *u != user);
    }

    /// Ranks what `view` sees for a question (see [`CachedView::rank`]), loading the view first
    /// if it is not in memory or is stale.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn rank(
        &self,
        store: &Store,
        view: View<'_>,
        version: i64,
        bare: &str,
        vector: &[f32],
        shape: &rank::Shape,
        among: view::Among<'_>,
        depth: usize,
        last_try: bool,
    ) -> Result<Option<Vec<rank::Scored>>> {
        let key = (view.user, view.agent.map(str::to_owned));
        // The scope's slot, taken out of the index's lock before anything waits on the slot's
        // own lock: ranking never holds the index (reads in other scopes go on meanwhile).
        let current = || -> Option<Arc<Slot>> {
            let views = self.lock_index();
            let slot = views.slots.get(&key)?;
            slot.used.store(views.tick.fetch_add(1, Ordering::Relaxed), Ordering::Relaxed);
            Some(Arc::clone(slot))
        };
        // The view's ranking if it is at this snapshot, else whether it is past it.
        let rank_in = |slot: &Slot| -> std::result::Result<Vec<rank::Scored>, bool> {
            let cached = slot.view.read().unwrap_or_else(std::sync::PoisonError::into_inner);
            if cached.version == version {
                Ok(cached.rank(bare, vector, shape, among, depth, self.config.rrf_k))
            } else {
                Err(cached.version > version)
            }
        };
        let mut outcome = current().map(|s| rank_in(&s));
        if let Some(Err(false)) = outcome {
            // Behind the snapshot: a write has committed and is growing the views under the
            // write connection. Wait for it rather than load the whole view again.
            drop(self.lock_store());
            outcome = current().map(|s| rank_in(&s));
        }
        match outcome {
            Some(Ok(ranked)) => return Ok(Some(ranked)),
            // A write committed after this snapshot began: a newer snapshot can use the view.
            Some(Err(true)) if !last_try => return Ok(None),
            _ => {}
        }
        // One load per view at a time: a read that waited here finds the view loaded.
        let gate = self.gate(view.user);
        let _loading = gate.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let outcome = current().map(|s| rank_in(&s));
        match outcome {
            Some(Ok(ranked)) => return Ok(Some(ranked)),
            Some(Err(true)) if !last_try => return Ok(None),
            _ => {}
        }
        tracing::debug!(user = view.user, agent = view.agent, version, "loading the scope's records");
        let fresh = CachedView::load(store, view, version, store.pins.dim()?, self.config.rrf_k.is_some())?;
        let ranked = fresh.rank(bare, vector, shape, among, depth, self.config.rrf_k);
        self.install(key, fresh);
        Ok(Some(ranked))
    }

    /// Keeps a freshly loaded view, unless a newer one is there already; then drops the least
    /// recently used views while the views hold more than the configured bytes.
    fn install(&self, key: ViewKey, fresh: CachedView) {
        let mut views = self.lock_index();
        let newer = views.slots.get(&key).is_some_and(|s| {
            s.view.read().unwrap_or_else(std::sync::PoisonError::into_inner).version >= fresh.version
        });
        if newer {
            return;
        }
        let tick = views.tick.fetch_add(1, Ordering::Relaxed);
        let bytes = fresh.approx_bytes();
        views.slots.insert(
            key.clone(),
            Arc::new(Slot { view: RwLock::new(fresh), bytes, used: AtomicU64::new(tick) }),
        );
        let mut total: usize = views.slots.values().map(|s| s.bytes).sum();
        while total > self.config.view_cache_bytes {
            let Some((oldest, bytes)) = views
                .slots
                .iter()
                .filter(|(k, _)| **k != key)
                .min_by_key(|(_, s)| s.used.load(Ordering::Relaxed))
                .map(|(k, s)| (k.clone(), s.bytes))
            else {
                break;
            };
            views.slots.remove(&oldest);
            total -= bytes;
        }
    }
}
