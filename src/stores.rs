//! Where stores live and how a store reference resolves (after memo's per-call `db_path`), and
//! reads across a project's store and the global one, merged.
//!
//! A reference is one of:
//! - a file path ending `.db`, `.sqlite` or `.sqlite3`: that file;
//! - an existing directory (a project): a stable file in [`data_dir`]`/projects/`, named after
//!   the directory and a hash of its canonical path, so every tool that names the same project
//!   reaches the same store;
//! - `global` (or no reference): [`data_dir`]`/global.db`;
//! - a `postgres://` (or `postgresql://`) URL: that database, returned as it is, for
//!   `mnemon-postgres` to open.
//!
//! [`Reach`] then says which of a project's store and the global store a read covers.

use std::path::{Path, PathBuf};

pub use crate::memory::Location;
pub use mnemon_backend::Backend;

use crate::error::{Error, Result};
use crate::model::note::Note;
use crate::read::{ListNotes, NoteHit, NotePage, Search, SearchResults};
use crate::{Memory, Scope};

/// The folder of project and global stores: `$MNEMON_DATA`, else `$XDG_DATA_HOME/mnemon`, else
/// `$HOME/.local/share/mnemon`, else `./.mnemon-data`.
pub fn data_dir() -> PathBuf {
    crate::model_files::dir_from_env(
        "MNEMON_DATA",
        ("XDG_DATA_HOME", "mnemon"),
        ".local/share/mnemon",
        ".mnemon-data",
    )
}

/// `text` with every password it holds replaced by `***`: the password of each
/// `postgres://` / `postgresql://` URL (`user:secret@host`) and each `password=` value (a URL's
/// query or a libpq connection string). For printing a store reference or a command line.
///
/// ```
/// use mnemon::stores::redact;
/// assert_eq!(redact("postgres://ann:s3cret@db/m?schema=a"), "postgres://ann:***@db/m?schema=a");
/// assert_eq!(redact("--store host=db password=s3cret dbname=m"), "--store host=db password=*** dbname=m");
/// assert_eq!(redact("notes.db"), "notes.db");
/// ```
pub fn redact(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) =
        ["postgres://", "postgresql://"].iter().filter_map(|s| rest.find(s).map(|i| (i, s.len()))).min()
    {
        let (start, scheme) = at;
        out.push_str(&rest[..start + scheme]);
        rest = &rest[start + scheme..];
        // The authority ends at the first `/`, `?`, `#` or whitespace; its userinfo at its last `@`.
        let end =
            rest.find(|c: char| matches!(c, '/' | '?' | '#') || c.is_whitespace()).unwrap_or(rest.len());
        let authority = &rest[..end];
        match authority.rfind('@').and_then(|a| authority[..a].find(':').map(|c| (c, a))) {
            Some((colon, a)) => {
                out.push_str(&authority[..=colon]);
                out.push_str("***");
                out.push_str(&authority[a..]);
            }
            None => out.push_str(authority),
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    // `password=value` up to the next `&`, whitespace or quote.
    let mut redacted = String::with_capacity(out.len());
    let mut rest = out.as_str();
    while let Some(i) = rest.to_ascii_lowercase().find("password=") {
        let value = i + "password=".len();
        redacted.push_str(&rest[..value]);
        let tail = &rest[value..];
        let end =
            tail.find(|c: char| c == '&' || c == '\'' || c == '"' || c.is_whitespace()).unwrap_or(tail.len());
        if end > 0 {
            redacted.push_str("***");
        }
        rest = &tail[end..];
    }
    redacted.push_str(rest);
    redacted
}

/// The global store's file in `data`.
pub fn global_store(data: &Path) -> PathBuf {
    data.join("global.db")
}

/// The file a store reference names, creating [`data_dir`]'s folders when it names a project or
/// the global store. See the module docs for the rules.
///
/// ```standalone_crate
/// # let dir = tempfile::tempdir().unwrap();
/// # // Its own process: the variable must not reach the other examples.
/// # unsafe { std::env::set_var("MNEMON_DATA", dir.path().join("data")) };
/// use mnemon::stores::resolve;
/// let file = resolve(Some("notes.db"))?;
/// assert_eq!(file, std::path::PathBuf::from("notes.db"));
/// let project = dir.path().join("my-app");
/// std::fs::create_dir(&project)?;
/// let a = resolve(Some(project.to_str().unwrap()))?;
/// assert_eq!(a, resolve(Some(&format!("{}/.", project.display())))?, "the same project, however named");
/// assert!(a.file_name().unwrap().to_str().unwrap().starts_with("my-app-"));
/// assert!(resolve(Some("global"))?.ends_with("global.db"));
/// assert!(resolve(Some("no/such/place")).is_err());
/// # Ok::<(), mnemon::Error>(())
/// ```
pub fn resolve(reference: Option<&str>) -> Result<PathBuf> {
    resolve_in(reference, &data_dir())
}

/// [`resolve`] with an explicit data folder.
pub fn resolve_in(reference: Option<&str>, data: &Path) -> Result<PathBuf> {
    let bad = |reason: &str| Error::input("store", reason.to_owned());
    let r = match reference.map(str::trim) {
        None | Some("global") => {
            std::fs::create_dir_all(data)?;
            return Ok(global_store(data));
        }
        Some("") => return Err(bad("is empty")),
        // A database server's store: opened through its backend crate (`mnemon-postgres`).
        Some(r) if r.starts_with("postgres://") || r.starts_with("postgresql://") => {
            return Ok(PathBuf::from(r));
        }
        Some(r) => r,
    };
    let path = Path::new(r);
    if path.is_dir() {
        let canonical = path.canonicalize()?;
        let name: String = canonical
            .file_name()
            .map(|n| {
                n.to_string_lossy()
                    .chars()
                    .map(|c| if c.is_alphanumeric() || c == '-' || c == '_' { c } else { '_' })
                    .collect()
            })
            .filter(|n: &String| !n.is_empty())
            .unwrap_or_else(|| "root".to_owned());
        let hash = blake3::hash(canonical.to_string_lossy().as_bytes()).to_hex();
        let projects = data.join("projects");
        std::fs::create_dir_all(&projects)?;
        return Ok(projects.join(format!("{name}-{}.db", &hash[..12])));
    }
    let is_store_file =
        path.extension().and_then(|e| e.to_str()).is_some_and(|e| matches!(e, "db" | "sqlite" | "sqlite3"));
    if is_store_file {
        return Ok(path.to_owned());
    }
    Err(bad("is neither a .db, .sqlite or .sqlite3 file nor an existing directory (a project), nor `global`"))
}

/// Which stores a read covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Reach {
    /// The project's store only (the default).
    #[default]
    Local,
    /// The global store only.
    Global,
    /// Both, merged: each note once (by key, then by content), the project's copy first.
    All,
}

impl Reach {
    /// Parses `local`, `global` or `all`.
    pub fn parse(s: &str) -> Result<Reach> {
        match s {
            "local" => Ok(Reach::Local),
            "global" => Ok(Reach::Global),
            "all" => Ok(Reach::All),
            other => Err(Error::input("scope", format!("{other:?} is not local, global or all"))),
        }
    }
}

/// A project's store and the global store, read together.
pub struct Stores<'m> {
    /// The project's store.
    pub local: &'m Memory,
    /// The global store.
    pub global: &'m Memory,
}

impl Stores<'_> {
    /// [`Memory::search`] in both stores, merged: hits by score (ties: the project's first, then
    /// the older note), each note once (a note with the same key, or the same normalized content,
    /// as a better hit is dropped), at most `search.limit`.
    ///
    /// ```
    /// use mnemon::Memory;
    /// use mnemon::embed::HashingEmbedder;
    /// use mnemon::notes::{NewNote, Search};
    /// use mnemon::stores::Stores;
    /// # let dir = tempfile::tempdir().unwrap();
    /// let open = |f: &str| Memory::builder(dir.path().join(f)).embedder(HashingEmbedder::default()).open();
    /// let (local, global) = (open("p.db")?, open("g.db")?);
    /// let note = NewNote::new("Deploys go through staging first.", "2026-01-01");
    /// local.remember(&[note.clone()], "ana")?;
    /// global.remember(&[note, NewNote::new("Staging is at staging.example.", "2026-01-02")], "ana")?;
    /// let found = Stores { local: &local, global: &global }.search(&Search::new("how do deploys work?"), "ana")?;
    /// assert_eq!(found.hits.len(), 2, "the shared note once");
    /// # Ok::<(), mnemon::Error>(())
    /// ```
    pub fn search<'s>(&self, search: &Search<'_>, scope: impl Into<Scope<'s>>) -> Result<SearchResults> {
        let scope = scope.into();
        let local = self.local.search(search, scope)?;
        let global = self.global.search(search, scope)?;
        let mut all: Vec<(usize, NoteHit)> =
            local.hits.into_iter().map(|h| (0, h)).chain(global.hits.into_iter().map(|h| (1, h))).collect();
        all.sort_by(|(sa, a), (sb, b)| {
            b.score
                .total_cmp(&a.score)
                .then(sa.cmp(sb))
                .then(a.note.ts.cmp(&b.note.ts))
                .then(a.note.key.cmp(&b.note.key))
        });
        let mut seen: Vec<(String, String)> = Vec::new();
        let mut hits = Vec::new();
        for (_, h) in all {
            let norm = crate::model::round::normalized_key(&h.note.content);
            if seen.iter().any(|(k, n)| *k == h.note.key || *n == norm) {
                continue;
            }
            seen.push((h.note.key.clone(), norm));
            hits.push(h);
        }
        hits.truncate(search.limit);
        // Facts: the project's, then the global store's, best first (a fact has no note to merge).
        let mut facts: Vec<_> = local.facts.into_iter().chain(global.facts).collect();
        facts.sort_by(|a, b| b.score.total_cmp(&a.score));
        facts.truncate(search.limit);
        Ok(SearchResults {
            hits,
            facts,
            anchor: local.anchor.or(global.anchor),
            window: local.window.or(global.window),
        })
    }

    /// [`Memory::list`] over both stores, merged newest first (by `ts`, then key), each note once;
    /// the cursor works across both.
    ///
    /// ```
    /// use mnemon::Memory;
    /// use mnemon::embed::HashingEmbedder;
    /// use mnemon::notes::{ListNotes, NewNote};
    /// use mnemon::stores::Stores;
    /// # let dir = tempfile::tempdir().unwrap();
    /// let open = |f: &str| Memory::builder(dir.path().join(f)).embedder(HashingEmbedder::default()).open();
    /// let (local, global) = (open("p.db")?, open("g.db")?);
    /// local.remember(&[NewNote::new("A", "2026-01-01"), NewNote::new("C", "2026-01-03")], "ana")?;
    /// global.remember(&[NewNote::new("B", "2026-01-02"), NewNote::new("A", "2026-01-01")], "ana")?;
    /// let both = Stores { local: &local, global: &global };
    /// let page = both.list(&ListNotes { limit: 2, ..ListNotes::default() }, "ana")?;
    /// assert_eq!(page.notes.iter().map(|n| n.content.as_str()).collect::<Vec<_>>(), ["C", "B"]);
    /// let rest = both.list(&ListNotes { limit: 2, cursor: page.next, ..ListNotes::default() }, "ana")?;
    /// assert_eq!(rest.notes.iter().map(|n| n.content.as_str()).collect::<Vec<_>>(), ["A"]);
    /// assert!(rest.next.is_none());
    /// # Ok::<(), mnemon::Error>(())
    /// ```
    pub fn list<'s>(&self, list: &ListNotes, scope: impl Into<Scope<'s>>) -> Result<NotePage> {
        let scope = scope.into();
        // A page of each store holds every note of the merged page.
        let local = self.local.list(list, scope)?;
        let global = self.global.list(list, scope)?;
        let unfinished = local.next.is_some() || global.next.is_some();
        let unix = |n: &Note| crate::model::time::Timestamp::parse(&n.ts).map_or(0, |t| t.unix_seconds());
        let mut all: Vec<(i64, Note)> =
            local.notes.into_iter().chain(global.notes).map(|n| (unix(&n), n)).collect();
        // Newest first; the project's copy of a note sorts first (a stable sort keeps it there).
        all.sort_by(|(ta, a), (tb, b)| tb.cmp(ta).then(b.key.cmp(&a.key)));
        all.dedup_by(|b, a| a.1.key == b.1.key);
        let more = all.len() > list.limit || unfinished;
        all.truncate(list.limit);
        let next = if more { all.last().map(|(t, n)| format!("{t}:{}", n.key)) } else { None };
        Ok(NotePage { notes: all.into_iter().map(|(_, n)| n).collect(), next })
    }
}
