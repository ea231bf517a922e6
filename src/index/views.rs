//! The cache of views: a scope's records in memory for ranking, one per user and agent, each
//! behind its own lock; grown by writes in commit order, loaded once per user at a time, used by a
//! read only at its snapshot's version, and dropped least recently used past
//! [`Config::view_cache_bytes`](crate::config::Config::view_cache_bytes).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use super::rank::Scored;
use super::view::{self, CachedView, Question};
use crate::error::Result;
use crate::store::{Store, View};

/// A view's key: the user's row id and the agent.
type ViewKey = (i64, Option<String>);

/// Bytes that the views of several stores share (and their fact ledgers, the active facts that
/// extraction settles new facts against): a server holding many stores open sets one for the
/// whole process. Past it, the store whose views grow or load drops its least recently used views
/// (never the one in use), and one whose ledgers grow its least recently used ledgers, as it does
/// past its own
/// [`Config::view_cache_bytes`](crate::config::Config::view_cache_bytes).
///
/// ```
/// let budget = mnemon::config::MemoryBudget::new(512 << 20);
/// assert_eq!((budget.limit(), budget.used()), (512 << 20, 0));
/// ```
#[derive(Clone, Debug)]
pub struct MemoryBudget(Arc<Shared>);

#[derive(Debug)]
struct Shared {
    limit: usize,
    used: AtomicUsize,
}

impl MemoryBudget {
    /// A budget of `bytes`.
    pub fn new(bytes: usize) -> MemoryBudget {
        MemoryBudget(Arc::new(Shared { limit: bytes, used: AtomicUsize::new(0) }))
    }

    /// The bytes the views and ledgers of every store on this budget hold now.
    pub fn used(&self) -> usize {
        self.0.used.load(Ordering::Relaxed)
    }

    /// The budget.
    pub fn limit(&self) -> usize {
        self.0.limit
    }

    /// Counts `bytes` more held (`before` fewer): the ledgers' bytes count here as the views' do.
    pub(crate) fn recount(&self, before: usize, now: usize) {
        self.0.used.fetch_add(now, Ordering::Relaxed);
        self.0.used.fetch_sub(before, Ordering::Relaxed);
    }
}

/// The cached views: each behind its own lock, so ranking in one scope never waits for another,
/// and many reads rank in the same scope at once.
pub(crate) struct Views {
    slots: Mutex<Slots>,
    /// Bytes the views may hold before the least recently used are dropped.
    budget: usize,
    /// The budget shared with other stores, if any, and the bytes this store counts in it.
    shared: Option<MemoryBudget>,
    counted: AtomicUsize,
}

impl Drop for Views {
    fn drop(&mut self) {
        if let Some(shared) = &self.shared {
            shared.0.used.fetch_sub(self.counted.load(Ordering::Relaxed), Ordering::Relaxed);
        }
    }
}

#[derive(Default)]
struct Slots {
    slots: HashMap<ViewKey, Arc<Slot>>,
    /// Per user: held while one of the user's views loads, and while a write grows them, so a
    /// write never misses a view that is loading (and loads of one view are not repeated).
    gates: HashMap<i64, Arc<Mutex<()>>>,
    /// A counter (not a clock) that orders uses, for eviction.
    tick: AtomicU64,
}

struct Slot {
    view: RwLock<CachedView>,
    /// Bytes it holds: counted at load and again after each write grows it.
    bytes: AtomicUsize,
    used: AtomicU64,
}

impl Views {
    /// No view yet; at most `budget` bytes of them ([`Config::view_cache_bytes`](crate::config::Config::view_cache_bytes)).
    pub(crate) fn new(budget: usize, shared: Option<MemoryBudget>) -> Views {
        Views { slots: Mutex::default(), budget, shared, counted: AtomicUsize::new(0) }
    }

    /// The bytes the views hold, after a change: counted in the shared budget too.
    fn account(&self, views: &Slots) -> usize {
        let total: usize = views.slots.values().map(|s| s.bytes.load(Ordering::Relaxed)).sum();
        let before = self.counted.swap(total, Ordering::Relaxed);
        if let Some(shared) = &self.shared {
            shared.0.used.fetch_add(total, Ordering::Relaxed);
            shared.0.used.fetch_sub(before, Ordering::Relaxed);
        }
        total
    }

    /// Whether the views hold more than their store's budget, or the shared one.
    fn over(&self, total: usize) -> bool {
        total > self.budget || self.shared.as_ref().is_some_and(|s| s.used() > s.limit())
    }

    // A panic inside a call cannot leave a view half-grown under a version it does not hold (the
    // version moves with the records), so a poisoned lock is safe to take over.
    fn lock(&self) -> std::sync::MutexGuard<'_, Slots> {
        self.slots.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The version of the scope's view in memory, if there is one.
    pub(crate) fn version(&self, user: i64, agent: Option<&str>) -> Option<i64> {
        let slot = self.lock().slots.get(&(user, agent.map(str::to_owned))).cloned()?;
        let version = slot.view.read().unwrap_or_else(std::sync::PoisonError::into_inner).version;
        Some(version)
    }

    /// After one write of `user`'s records (the user's write counter was `version`): each view
    /// of the user that was current moves to the next version, and those that see records of
    /// `agent` get them from `push`; any other view of the user is dropped.
    pub(crate) fn grow(&self, user: i64, version: i64, agent: Option<&str>, push: impl Fn(&mut CachedView)) {
        let gate = self.gate(user);
        let _loaded = gate.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        // The user's slots, out of the index's lock before waiting on each view's own lock (no
        // view of the user can be installed meanwhile: loads take the gate).
        let slots: Vec<(ViewKey, Arc<Slot>)> = self
            .lock()
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
                slot.bytes.store(cached.approx_bytes(), Ordering::Relaxed);
            }
        }
        let mut views = self.lock();
        for key in stale {
            views.slots.remove(&key);
        }
        // Growth counts against the budget as loads do.
        self.trim(&mut views, None);
    }

    /// The gate of `user`'s views.
    fn gate(&self, user: i64) -> Arc<Mutex<()>> {
        Arc::clone(self.lock().gates.entry(user).or_default())
    }

    /// Drops every view of `user` (after a write that removes or changes records).
    pub(crate) fn drop_user(&self, user: i64) {
        let mut views = self.lock();
        views.slots.retain(|(u, _), _| *u != user);
        self.account(&views);
    }

    /// Ranks what `view` sees for `question` (see [`CachedView::rank`]), loading the view first
    /// if it is not in memory or is stale. A view behind the snapshot's `version` is being grown
    /// by a write that holds `writer`: waited for, not loaded again. `None`: the view is past the
    /// snapshot and this is not the `last_try` (a newer snapshot can use it).
    pub(crate) fn rank(
        &self,
        writer: &Mutex<Store>,
        store: &Store,
        view: View<'_>,
        version: i64,
        question: &Question<'_>,
        last_try: bool,
    ) -> Result<Option<Vec<Scored>>> {
        let key = (view.user, view.agent.map(str::to_owned));
        // The scope's slot, taken out of the index's lock before anything waits on the slot's
        // own lock: ranking never holds the index (reads in other scopes go on meanwhile).
        let current = || -> Option<Arc<Slot>> {
            let views = self.lock();
            let slot = views.slots.get(&key)?;
            slot.used.store(views.tick.fetch_add(1, Ordering::Relaxed), Ordering::Relaxed);
            Some(Arc::clone(slot))
        };
        // The view's ranking if it is at this snapshot, else whether it is past it.
        let rank_in = |slot: &Slot| -> std::result::Result<Vec<Scored>, bool> {
            let cached = slot.view.read().unwrap_or_else(std::sync::PoisonError::into_inner);
            if cached.version == version { Ok(cached.rank(question)) } else { Err(cached.version > version) }
        };
        let mut outcome = current().map(|s| rank_in(&s));
        if let Some(Err(false)) = outcome {
            // Behind the snapshot: a write has committed and is growing the views under the
            // write connection. Wait for it rather than load the whole view again.
            drop(writer.lock().unwrap_or_else(std::sync::PoisonError::into_inner));
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
        let fresh = CachedView::load(store, view, version, store.pins.dim()?, question.rrf.is_some(), None)?;
        let ranked = fresh.rank(question);
        self.install(key, fresh);
        Ok(Some(ranked))
    }

    /// Keeps a freshly loaded view, unless a newer one is there already; then drops the least
    /// recently used views while the views hold more than the configured bytes.
    fn install(&self, key: ViewKey, fresh: CachedView) {
        let mut views = self.lock();
        let newer = views.slots.get(&key).is_some_and(|s| {
            s.view.read().unwrap_or_else(std::sync::PoisonError::into_inner).version >= fresh.version
        });
        if newer {
            return;
        }
        let tick = views.tick.fetch_add(1, Ordering::Relaxed);
        let bytes = AtomicUsize::new(fresh.approx_bytes());
        views.slots.insert(
            key.clone(),
            Arc::new(Slot { view: RwLock::new(fresh), bytes, used: AtomicU64::new(tick) }),
        );
        self.trim(&mut views, Some(&key));
    }

    /// Drops the least recently used views (never `keep`) while the views hold more than the
    /// store's budget or the shared one.
    fn trim(&self, views: &mut Slots, keep: Option<&ViewKey>) {
        let mut total = self.account(views);
        while self.over(total) {
            let Some(oldest) = views
                .slots
                .iter()
                .filter(|(k, _)| Some(*k) != keep)
                .min_by_key(|(_, s)| s.used.load(Ordering::Relaxed))
                .map(|(k, _)| k.clone())
            else {
                break;
            };
            views.slots.remove(&oldest);
            total = self.account(views);
        }
    }

    /// Bytes the views in memory hold now, and how many there are.
    pub(crate) fn held(&self) -> (usize, usize) {
        let views = self.lock();
        (views.slots.values().map(|s| s.bytes.load(Ordering::Relaxed)).sum(), views.slots.len())
    }
}
