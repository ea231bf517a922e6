//! Stores opened on demand: a client's reference confined to the data directory and the roots,
//! at most a number of stores open at once, and the names clients know them by.

use super::*;

impl Service {
    /// Checks the settings (the data directory is created) and opens the default store, so a
    /// misconfigured server fails at start.
    pub fn new(settings: Settings) -> Result<Service, ApiError> {
        std::fs::create_dir_all(&settings.data).map_err(ApiError::internal)?;
        let data = settings.data.canonicalize().map_err(ApiError::internal)?;
        let mut roots = Vec::new();
        for r in &settings.roots {
            roots.push(
                r.canonicalize().map_err(|e| ApiError::input("roots", format!("{}: {e}", r.display())))?,
            );
        }
        let default = match &settings.store {
            Some(p) => p.clone(),
            None => mnemon::stores::global_store(&data),
        };
        let service = Service {
            data,
            roots,
            default,
            embedder: settings.embedder,
            extractor: settings.extractor,
            config: settings.config,
            memory_budget: settings.memory_budget,
            create_stores: settings.create_stores,
            max_stores: settings.max_stores,
            open: Mutex::default(),
            keys: crate::idempotency::Keys::default(),
        };
        // The one store the server makes without a request: its default.
        service.memory_at(service.default.clone())?;
        Ok(service)
    }

    /// The memory budget the stores share, if the server has one.
    pub fn memory_budget(&self) -> Option<&mnemon::config::MemoryBudget> {
        self.memory_budget.as_ref()
    }

    /// The default store's file.
    pub fn default_store(&self) -> &Path {
        &self.default
    }

    /// Where a client's store reference leads, refused unless it stays inside the data directory
    /// or a root.
    pub fn path_of(&self, reference: Option<&str>) -> Result<PathBuf, ApiError> {
        let r = match reference.map(str::trim) {
            None => return Ok(self.default.clone()),
            Some("global") => return Ok(mnemon::stores::resolve_in(Some("global"), &self.data)?),
            Some("") => return Err(ApiError::input("store", "is empty")),
            Some(r) => r,
        };
        let raw = Path::new(r);
        if raw.components().any(|c| matches!(c, Component::ParentDir)) {
            return Err(forbidden("must not contain `..`"));
        }
        // Relative references are inside the data directory.
        let named = if raw.is_absolute() { raw.to_path_buf() } else { self.data.join(raw) };
        let inside =
            |p: &Path| p.starts_with(&self.data) || self.roots.iter().any(|root| p.starts_with(root));
        if named.is_dir() {
            let dir = named.canonicalize().map_err(ApiError::internal)?;
            if !self.roots.iter().any(|root| dir.starts_with(root)) {
                return Err(forbidden("names a project directory outside the server's roots"));
            }
        } else {
            let parent = named.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
            let parent = parent
                .canonicalize()
                .map_err(|_| ApiError::input("store", format!("{r:?}: its directory does not exist")))?;
            if !inside(&parent) {
                return Err(forbidden("names a file outside the server's data directory and roots"));
            }
            // A link must not lead out either (a dangling one would create its target).
            if named.symlink_metadata().is_ok_and(|m| m.file_type().is_symlink())
                && !named.canonicalize().is_ok_and(|target| inside(&target))
            {
                return Err(forbidden("names a link that leads outside the server's roots or nowhere"));
            }
        }
        Ok(mnemon::stores::resolve_in(Some(&named.to_string_lossy()), &self.data)?)
    }

    /// The store a reference names, opened on first use, for a read: a store that does not
    /// exist is `not_found` (a read never creates one).
    pub fn memory(&self, reference: Option<&str>) -> Result<Arc<Memory>, ApiError> {
        let path = self.path_of(reference)?;
        if !self.is_open(&path) && !exists(&path) {
            return Err(ApiError {
                field: Some("store".into()),
                ..ApiError::new(
                    Code::NotFound,
                    "no such store (a write creates one where the server allows it)",
                )
            });
        }
        self.memory_at(path)
    }

    /// The store a reference names, for a write: one that does not exist yet is created only
    /// if the server creates stores (`--create-stores`) and the data directory holds fewer than
    /// `--max-stores`.
    pub fn memory_to_write(&self, reference: Option<&str>) -> Result<Arc<Memory>, ApiError> {
        let path = self.path_of(reference)?;
        if !self.is_open(&path) && !exists(&path) {
            if !self.create_stores {
                return Err(forbidden(
                    "does not exist, and this server creates no store for a request (start it with --create-stores)",
                ));
            }
            if let Some(max) = self.max_stores {
                let held = self.store_files().len();
                if held >= max {
                    return Err(ApiError {
                        field: Some("store".into()),
                        ..ApiError::new(
                            Code::StoreFull,
                            format!("the data directory holds {held} stores, the most this server allows (--max-stores)"),
                        )
                    });
                }
            }
        }
        self.memory_at(path)
    }

    fn is_open(&self, path: &Path) -> bool {
        self.open.lock().unwrap_or_else(std::sync::PoisonError::into_inner).stores.contains_key(path)
    }

    /// The store files in the data directory and its `projects/` folder.
    fn store_files(&self) -> Vec<PathBuf> {
        let mut all = Vec::new();
        for dir in [self.data.clone(), self.data.join("projects")] {
            let Ok(entries) = std::fs::read_dir(&dir) else { continue };
            for entry in entries.flatten() {
                let path = entry.path();
                let store_file = path
                    .extension()
                    .and_then(|e| e.to_str())
                    .is_some_and(|e| matches!(e, "db" | "sqlite" | "sqlite3"));
                if store_file && path.is_file() {
                    all.push(path);
                }
            }
        }
        all
    }

    /// The store at a checked path, opened on first use.
    pub(super) fn memory_at(&self, path: PathBuf) -> Result<Arc<Memory>, ApiError> {
        let lock = || self.open.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let opening = {
            let mut open = lock();
            open.tick += 1;
            let tick = open.tick;
            if let Some((used, memory)) = open.stores.get_mut(&path) {
                *used = tick;
                return Ok(Arc::clone(memory));
            }
            Arc::clone(open.opening.entry(path.clone()).or_default())
        };
        // Opening checks pins and may create or migrate the file: one opener per file, and
        // requests for other stores do not wait for it.
        let _turn = opening.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((_, memory)) = lock().stores.get(&path) {
            return Ok(Arc::clone(memory));
        }
        let mut builder = Memory::builder(&path)
            .embedder(Arc::clone(&self.embedder))
            .optional_extractor(self.extractor.clone())
            .config(self.config.clone());
        if let Some(budget) = &self.memory_budget {
            builder = builder.memory_budget(budget.clone());
        }
        let opened = builder.open();
        let mut open = lock();
        open.opening.remove(&path);
        let memory = Arc::new(opened?);
        if open.stores.len() >= MAX_OPEN_STORES {
            if let Some(oldest) =
                open.stores.iter().min_by_key(|(_, (used, _))| *used).map(|(p, _)| p.clone())
            {
                open.stores.remove(&oldest);
            }
        }
        let tick = open.tick;
        open.stores.insert(path, (tick, Arc::clone(&memory)));
        Ok(memory)
    }

    /// The stores open now, with their files.
    pub fn open_stores(&self) -> Vec<(PathBuf, Arc<Memory>)> {
        let open = self.open.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut all: Vec<_> = open.stores.iter().map(|(p, (_, m))| (p.clone(), Arc::clone(m))).collect();
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all
    }

    /// A read of the default store, for health checks.
    pub fn check(&self) -> Result<(), ApiError> {
        // A read on a read connection: never waits for the write lock.
        self.memory(None)?.user_names()?;
        Ok(())
    }

    /// Every store the server knows, in name order: its default and global stores, the store
    /// files in its data directory and its `projects/` folder, and every store open now.
    pub(super) fn known_stores(&self) -> Result<Vec<PathBuf>, ApiError> {
        let mut all = vec![self.default.clone()];
        all.extend(self.store_files());
        all.extend(self.open_stores().into_iter().map(|(p, _)| p));
        all.retain(|p| exists(p));
        let mut seen = std::collections::HashSet::new();
        all.retain(|p| seen.insert(p.canonicalize().unwrap_or_else(|_| p.clone())));
        all.sort_by_key(|p| self.name_of(p));
        Ok(all)
    }

    /// A store's name for clients: its path inside the data directory, else as it is (a
    /// database URL without its password).
    pub(super) fn name_of(&self, path: &Path) -> String {
        match path.strip_prefix(&self.data) {
            Ok(inside) => inside.to_string_lossy().into_owned(),
            Err(_) => mnemon::stores::redact(&path.to_string_lossy()),
        }
    }
}

/// Whether a store is there to open: a file on disk (a database URL always is).
fn exists(path: &Path) -> bool {
    let s = path.to_string_lossy();
    s.starts_with("postgres://") || s.starts_with("postgresql://") || path.is_file()
}

fn forbidden(reason: &str) -> ApiError {
    ApiError { field: Some("store".into()), ..ApiError::new(Code::Forbidden, format!("store {reason}")) }
}
