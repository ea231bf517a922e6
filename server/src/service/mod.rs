//! The operations behind every tool and endpoint, over stores opened on demand. Blocking: the
//! transports call them on tokio's blocking pool.

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use mnemon::browse::Paging;
use mnemon::config::Config;
use mnemon::context::{Ranking, Recency};
use mnemon::decisions::DecisionKind;
use mnemon::embed::Embedder;
use mnemon::export::ExportFormat;
use mnemon::extract::Extractor;
use mnemon::notes::{ListNotes, NewNote, NotePage, NoteUpdate, Search, SearchResults};
use mnemon::records::Record;
use mnemon::rounds::Role;
use mnemon::stores::Stores;
use mnemon::{Memory, Message, Query, Scope, Timestamp};

use crate::api::*;
use crate::error::{ApiError, Code};

mod stores;

/// The user a request without `user_id` reaches.
pub const DEFAULT_USER: &str = "default";

/// Most stores held open at once; the least recently used is closed past it.
const MAX_OPEN_STORES: usize = 64;

/// Where the server keeps and may open stores, and with what.
#[derive(Clone)]
pub struct Settings {
    /// The data directory: the global store, project stores, and relative store files live here.
    pub data: PathBuf,
    /// Directories (projects and store files) clients may also name.
    pub roots: Vec<PathBuf>,
    /// The store a request without `store` reaches (default: the global store).
    pub store: Option<PathBuf>,
    /// The embedder every store is opened with.
    pub embedder: Arc<dyn Embedder>,
    /// The extractor, if facts are extracted from conversation rounds.
    pub extractor: Option<Arc<dyn Extractor>>,
    /// The engine's configuration.
    pub config: Config,
    /// Memory the in-memory views of every store the server opens share (none: each store's
    /// own `view_cache_bytes` only).
    pub memory_budget: Option<mnemon::config::MemoryBudget>,
    /// Whether a write may create a store that does not exist yet (`--create-stores`). Reads
    /// never create one; without this, neither do writes: only the default store is made, at
    /// start.
    pub create_stores: bool,
    /// The most store files the data directory (with its `projects/`) may hold before a write
    /// that would create another is refused (`--max-stores`; none: no bound).
    pub max_stores: Option<usize>,
}

/// The operations, over the stores they reach.
pub struct Service {
    data: PathBuf,
    roots: Vec<PathBuf>,
    default: PathBuf,
    embedder: Arc<dyn Embedder>,
    extractor: Option<Arc<dyn Extractor>>,
    config: Config,
    memory_budget: Option<mnemon::config::MemoryBudget>,
    create_stores: bool,
    max_stores: Option<usize>,
    open: Mutex<OpenStores>,
    /// Idempotency keys of recent writes.
    keys: crate::idempotency::Keys,
}

/// Open stores by file, with the tick each was last used at, and the files being opened.
#[derive(Default)]
struct OpenStores {
    tick: u64,
    stores: HashMap<PathBuf, (u64, Arc<Memory>)>,
    opening: HashMap<PathBuf, Arc<Mutex<()>>>,
}

pub(crate) fn now() -> String {
    // The server, unlike the library, may read the clock: it stands in for a caller that gave no
    // timestamp.
    #[allow(clippy::disallowed_methods)]
    let now = chrono::Utc::now();
    now.format("%Y-%m-%dT%H:%M:%S").to_string()
}

impl Service {
    /// The scope a request reaches: its user (`default` when it names none) and agent.
    pub fn scope<'a>(target: &Target<'a>) -> Scope<'a> {
        Scope::user(target.user.unwrap_or(DEFAULT_USER)).with_agent(target.agent)
    }

    /// The idempotency keys of recent writes.
    pub(crate) fn keys(&self) -> &crate::idempotency::Keys {
        &self.keys
    }

    /// The default timestamp of a write: now, or the first attempt's for a retry with its key.
    fn stamp(
        &self,
        operation: &str,
        key: Option<&str>,
        req: &impl std::fmt::Debug,
    ) -> Result<String, ApiError> {
        match key {
            // The fingerprint (the whole request, formatted and hashed) only matters for a key.
            None => Ok(now()),
            Some(_) => self.keys.stamp(key, crate::idempotency::fingerprint(operation, req), now()),
        }
    }

    /// `save_memories`.
    pub fn save(&self, req: &SaveMemories) -> Result<Saved, ApiError> {
        let ts = self.stamp("save_memories", req.idempotency_key.as_deref(), req)?;
        let notes: Vec<NewNote> = req
            .memories
            .iter()
            .map(|m| match m {
                MemoryIn::Text(content) => NewNote::new(content.clone(), ts.clone()),
                MemoryIn::Full(m) => NewNote {
                    content: m.content.clone(),
                    ts: m.ts.clone().unwrap_or_else(|| ts.clone()),
                    title: m.title.clone(),
                    tags: m.tags.clone(),
                    metadata: m.metadata.clone(),
                    kind: m.kind.map(Into::into),
                    importance: m.importance,
                },
            })
            .collect();
        let memory = self.memory_to_write(req.store.as_deref())?;
        let report = memory.remember(&notes, Self::scope(&req.target()))?;
        Ok(Saved { memories: report.notes })
    }

    /// `recall_memories`: the framed context.
    pub fn recall(&self, req: &RecallMemories) -> Result<Recalled, ApiError> {
        let angles: Vec<&str> = req.angles.iter().map(String::as_str).collect();
        let cancel = cancel_flag();
        let (date, as_of) = times(req.date.as_deref(), req.as_of.as_deref())?;
        let query = Query {
            cancel: mnemon::context::Cancel(Some(&cancel)),
            date,
            as_of,
            top_k: req.top_k,
            budget: req.budget,
            angles: &angles,
            explain: req.explain,
            profile: req.profile,
            whole_rounds: req.whole_rounds,
            ..Query::new(&req.query)
        };
        let memory = self.memory(req.store.as_deref())?;
        let c = memory.get_context(query, Self::scope(&req.target()))?;
        Ok(Recalled {
            context: c.text,
            memories: c.notes,
            rounds: c.rounds,
            tokens: c.tokens,
            truncated: c.truncated,
            cut: c.cut,
            records: c.records,
            budget: if req.explain { req.budget.or(self.config.context_budget) } else { None },
        })
    }

    /// The rounds that best answer a question, ranked, with their facts.
    pub fn recall_rounds(&self, req: &RecallRounds) -> Result<mnemon::rounds::Recall, ApiError> {
        let (date, as_of) = times(req.date.as_deref(), req.as_of.as_deref())?;
        let cancel = cancel_flag();
        let query = Query {
            cancel: mnemon::context::Cancel(Some(&cancel)),
            date,
            as_of,
            top_k: req.top_k,
            ..Query::new(&req.query)
        };
        Ok(self.memory(req.store.as_deref())?.recall(query, Self::scope(&req.target()))?)
    }

    /// `add_messages`.
    pub fn add(&self, req: &AddMessages) -> Result<Added, ApiError> {
        let ts = self.stamp("add_messages", req.idempotency_key.as_deref(), req)?;
        let mut messages = Vec::with_capacity(req.messages.len());
        for (i, m) in req.messages.iter().enumerate() {
            let role = Role::parse(&m.role).ok_or_else(|| {
                ApiError::input(
                    format!("messages[{i}].role"),
                    format!("{:?} is not `user` or `assistant`", m.role),
                )
            })?;
            messages.push(Message {
                session: m.session.clone(),
                id: m.id.clone(),
                speaker: m.speaker.clone(),
                metadata: m.metadata.clone(),
                ..Message::new(role, m.content.clone(), m.ts.clone().unwrap_or_else(|| ts.clone()))
            });
        }
        let memory = self.memory_to_write(req.store.as_deref())?;
        let scope = Self::scope(&req.target());
        let report = memory.add(&messages, scope)?;
        Ok(Added {
            stored: report.stored,
            duplicates: report.duplicates,
            pending_extraction: memory.pending(Some(scope.user.into()))?,
        })
    }

    /// `import_chats`: the history read from `input`, one conversation per transaction.
    pub fn import_chats(
        &self,
        req: &ImportChats,
        input: impl std::io::Read,
    ) -> Result<mnemon::chats::Imported, ApiError> {
        let memory = self.memory_to_write(req.store.as_deref())?;
        let scope = Self::scope(&req.target());
        Ok(mnemon::chats::import(&memory, req.format.into(), input, scope, |_, _| {})?)
    }

    /// The project's store and the global one, as `reach` asks.
    fn reach(
        &self,
        store: Option<&str>,
        reach: ReachIn,
    ) -> Result<(Arc<Memory>, Option<Arc<Memory>>), ApiError> {
        let global = || self.memory(Some("global"));
        Ok(match reach {
            ReachIn::Local => (self.memory(store)?, None),
            ReachIn::Global => (global()?, None),
            // A global store nobody wrote to yet holds nothing to add; any other failure is one.
            ReachIn::All => {
                let global = match global() {
                    Ok(g) => Some(g),
                    Err(e) if e.code == Code::NotFound => None,
                    Err(e) => return Err(e),
                };
                (self.memory(store)?, global)
            }
        })
    }

    /// `search_memories`.
    pub fn search(&self, req: &SearchMemories) -> Result<SearchResults, ApiError> {
        let cancel = cancel_flag();
        let mut search = Search::new(&req.query).filter(req.filter.filter(false)?).cancel(&cancel);
        if let Some(l) = req.limit {
            search = search.limit(l);
        }
        search.min_score = req.min_score;
        search.facts = req.facts;
        search.date = times(req.date.as_deref(), None)?.0;
        search.ranking = Ranking {
            recency: req.recency.map(|r| Recency { alpha: r.alpha, half_life_days: r.half_life_days }),
            importance: req.importance_weight,
        };
        let scope = Self::scope(&req.target());
        let (local, global) = self.reach(req.store.as_deref(), req.reach)?;
        Ok(match global {
            Some(g) if !Arc::ptr_eq(&local, &g) => {
                Stores { local: &local, global: &g }.search(&search, scope)?
            }
            _ => local.search(&search, scope)?,
        })
    }

    /// `list_memories`.
    pub fn list(&self, req: &ListMemories) -> Result<NotePage, ApiError> {
        let list = ListNotes {
            filter: req.filter.filter(req.include_condensed)?,
            limit: req.limit.unwrap_or(ListNotes::default().limit),
            cursor: req.cursor.clone(),
        };
        let scope = Self::scope(&req.target());
        let (local, global) = self.reach(req.store.as_deref(), req.reach)?;
        Ok(match global {
            Some(g) if !Arc::ptr_eq(&local, &g) => Stores { local: &local, global: &g }.list(&list, scope)?,
            _ => local.list(&list, scope)?,
        })
    }

    /// `get_memory`.
    pub fn get(&self, req: &GetMemory) -> Result<Record, ApiError> {
        Ok(self.memory(req.store.as_deref())?.get(&req.key, Self::scope(&req.target()))?)
    }

    /// `update_memory`: the note as it is after the change.
    pub fn update(&self, req: &UpdateMemory) -> Result<mnemon::notes::Note, ApiError> {
        let update = NoteUpdate {
            content: req.content.clone(),
            title: req.title.clone(),
            tags: req.tags.clone(),
            metadata: req.metadata.clone(),
            kind: req.kind.map(Into::into),
            importance: req.importance,
        };
        let memory = self.memory(req.store.as_deref())?;
        let ts = match &req.ts {
            Some(ts) => ts.clone(),
            None => self.stamp("update_memory", req.idempotency_key.as_deref(), req)?,
        };
        let ts = Timestamp::parse(&ts)?;
        Ok(memory.update(&req.key, &update, &ts, Self::scope(&req.target()))?)
    }

    /// `delete_memory`.
    pub fn delete(&self, req: &DeleteMemory) -> Result<mnemon::records::Deleted, ApiError> {
        Ok(self.memory(req.store.as_deref())?.delete(&req.key, Self::scope(&req.target()))?)
    }

    /// `count_memories`.
    pub fn count(&self, req: &CountMemories) -> Result<mnemon::records::Counts, ApiError> {
        Ok(self.memory(req.store.as_deref())?.count(Self::scope(&req.target()))?)
    }

    /// `copy_memories` / `move_memories`.
    pub fn transfer(
        &self,
        req: &TransferMemories,
        remove: bool,
    ) -> Result<mnemon::notes::TransferReport, ApiError> {
        let from = self.memory(req.store.as_deref())?;
        let keys: Vec<&str> = req.keys.iter().map(String::as_str).collect();
        let scope = Self::scope(&req.target());
        // A copy that would fail makes no target: every key must be there first.
        for key in &keys {
            from.get(key, scope)?;
        }
        let to =
            self.memory_to_write(Some(&req.to)).map_err(|e| ApiError { field: Some("to".into()), ..e })?;
        Ok(if remove { from.move_to(&keys, &to, scope)? } else { from.copy_to(&keys, &to, scope)? })
    }

    /// `export_memories`.
    pub fn export(&self, req: &ExportMemories) -> Result<Exported, ApiError> {
        let format = match req.format {
            FormatIn::Markdown => ExportFormat::Markdown,
            FormatIn::Text => ExportFormat::Text,
            FormatIn::Jsonl => ExportFormat::Jsonl,
        };
        let memory = self.memory(req.store.as_deref())?;
        let scope = Self::scope(&req.target());
        let text = match times(None, req.as_of.as_deref())? {
            (_, Some(t)) => memory.export_as_of(format, &t, scope)?,
            (_, None) => memory.export(format, scope)?,
        };
        Ok(Exported { text })
    }

    /// The stores the server knows, by name.
    pub fn stores(&self) -> Result<StoreList, ApiError> {
        Ok(StoreList {
            default: self.name_of(&self.default),
            stores: self.known_stores()?.iter().map(|p| self.name_of(p)).collect(),
        })
    }

    /// Every user of a store with what they hold.
    pub fn users(&self, req: &ListUsers) -> Result<Vec<mnemon::browse::UserSummary>, ApiError> {
        Ok(self.memory(req.store.as_deref())?.users()?)
    }

    /// A page of a scope's timeline.
    pub fn timeline(&self, req: &ReadTimeline) -> Result<mnemon::browse::TimelinePage, ApiError> {
        let paging =
            Paging { limit: req.limit.unwrap_or(Paging::default().limit), cursor: req.cursor.clone() };
        Ok(self.memory(req.store.as_deref())?.timeline(&paging, Self::scope(&req.target()))?)
    }

    /// A page of a scope's decision log.
    pub fn decisions(&self, req: &ReadDecisions) -> Result<mnemon::decisions::DecisionPage, ApiError> {
        let paging =
            Paging { limit: req.limit.unwrap_or(Paging::default().limit), cursor: req.cursor.clone() };
        let kinds = req
            .kinds
            .iter()
            .enumerate()
            .map(|(i, k)| {
                DecisionKind::parse(k).ok_or_else(|| {
                    ApiError::input(format!("kinds[{i}]"), format!("{k:?} is not a kind of decision"))
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(self.memory(req.store.as_deref())?.decision_page(&kinds, &paging, Self::scope(&req.target()))?)
    }

    /// What a scope stored per month.
    pub fn activity(&self, req: &ReadActivity) -> Result<mnemon::browse::Activity, ApiError> {
        Ok(self.memory(req.store.as_deref())?.activity(Self::scope(&req.target()))?)
    }

    /// The scope's current profile.
    pub fn profile(&self, req: &ReadProfile) -> Result<mnemon::facts::Profile, ApiError> {
        Ok(self.memory(req.store.as_deref())?.profile(Self::scope(&req.target()))?)
    }

    /// `forget_user`: in one store, or in every store the server knows.
    pub fn forget(&self, req: &ForgetUser) -> Result<Forgotten, ApiError> {
        let mut stores = Vec::new();
        if !req.everywhere {
            let r = self.memory(req.store.as_deref())?.forget_user(&req.user_id)?;
            let name = self.name_of(&self.path_of(req.store.as_deref())?);
            stores.push(ForgottenIn {
                store: name,
                rounds: r.rounds,
                notes: r.notes,
                scrubbed: r.scrubbed,
                error: None,
            });
        } else {
            if req.store.is_some() {
                return Err(ApiError::input("store", "give either `store` or `everywhere`, not both"));
            }
            for path in self.known_stores()? {
                let store = self.name_of(&path);
                let opened = match self.memory_at(path) {
                    // A file in the data directory that is not a store is none of ours.
                    Err(e) if e.field.as_deref() == Some("store") => continue,
                    other => other,
                };
                stores.push(match opened.and_then(|m| Ok(m.forget_user(&req.user_id)?)) {
                    Ok(r) => ForgottenIn {
                        store,
                        rounds: r.rounds,
                        notes: r.notes,
                        scrubbed: r.scrubbed,
                        error: None,
                    },
                    Err(e) => ForgottenIn { store, rounds: 0, notes: 0, scrubbed: false, error: Some(e) },
                });
            }
        }
        Ok(Forgotten {
            rounds: stores.iter().map(|s| s.rounds).sum(),
            notes: stores.iter().map(|s| s.notes).sum(),
            scrubbed: stores.iter().all(|s| s.scrubbed),
            complete: stores.iter().all(|s| s.error.is_none()),
            stores,
        })
    }
}

thread_local! {
    /// The cancel flag of the request this blocking thread runs, for the reads that watch one.
    static CANCEL: std::cell::RefCell<Option<Arc<AtomicBool>>> = const { std::cell::RefCell::new(None) };
}

/// The running request's cancel flag: set once its caller stopped waiting (the request timed out
/// or the client went away). A flag that is never set outside a request.
fn cancel_flag() -> Arc<AtomicBool> {
    CANCEL.with(|c| c.borrow().clone()).unwrap_or_default()
}

/// Sets the flag when the future awaiting the work is dropped: a timeout, or a client gone.
struct CancelOnDrop(Arc<AtomicBool>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Runs a blocking operation on tokio's blocking pool; a panic inside it is an `internal` error.
/// Work whose caller stopped waiting before it began is not begun; a read that has begun stops
/// at its next check (see [`mnemon::context::Cancel`]); a write that has begun completes.
pub async fn blocking<R: Send + 'static>(
    op: impl FnOnce() -> Result<R, ApiError> + Send + 'static,
) -> Result<R, ApiError> {
    let flag = Arc::new(AtomicBool::new(false));
    let _on_drop = CancelOnDrop(Arc::clone(&flag));
    tokio::task::spawn_blocking(move || {
        if flag.load(Ordering::Relaxed) {
            metrics::counter!("mnemon_abandoned_total", "stage" => "queued").increment(1);
            return Err(ApiError::new(Code::Timeout, "the caller stopped waiting before the work began"));
        }
        CANCEL.with(|c| *c.borrow_mut() = Some(flag));
        let result = op();
        CANCEL.with(|c| c.borrow_mut().take());
        result
    })
    .await
    .unwrap_or_else(|e| Err(ApiError::internal(format!("the call panicked: {e}"))))
}
