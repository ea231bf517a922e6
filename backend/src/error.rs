//! The one error type of mnemon.
//!
//! Every variant is something a caller can act on: fix the named input field, open the store with
//! the configuration it was built with, fetch a model, retry when the store is busy. Errors clone
//! without loss (the sources they wrap are shared, as tantivy's are), so one failure can be
//! handed to every caller it failed, and no public variant holds another crate's error type.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

/// Result alias used throughout mnemon.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A pinned setting whose stored value differs from the value this process expects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PinDifference {
    /// The pin's key in the store's `meta` table, e.g. `embedder.name`.
    pub key: String,
    /// The value the store was built with (`None`: the store lacks the key).
    pub stored: Option<String>,
    /// The value this process would have written (`None`: this process has no such pin).
    pub expected: Option<String>,
}

impl fmt::Display for PinDifference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let show = |v: &Option<String>| v.clone().unwrap_or_else(|| "(absent)".to_owned());
        write!(f, "{}: stored {}, expected {}", self.key, show(&self.stored), show(&self.expected))
    }
}

/// Everything that can go wrong in mnemon.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A caller-supplied value is unusable; `field` names it (e.g. `messages[3].ts`).
    #[error("invalid input: {field}: {reason}")]
    InvalidInput {
        /// Path of the offending field.
        field: String,
        /// What is wrong with it.
        reason: String,
    },

    /// A memory's content is empty or whitespace; `field` names it (e.g. `memories[0].content`).
    #[error("empty memory: {field} is empty or whitespace")]
    EmptyMemory {
        /// Path of the content field.
        field: String,
    },

    /// No record with this key is visible in the scope (it does not exist, belongs to another
    /// user, or is private to another agent).
    #[error("not found: no record {key:?} in this scope")]
    NotFound {
        /// The key that was looked up.
        key: String,
    },

    /// A `Config` value is out of range.
    #[error("invalid config: {field}: {reason}")]
    InvalidConfig {
        /// The config field.
        field: &'static str,
        /// What is wrong with it.
        reason: String,
    },

    /// The store was built under another configuration; every differing pin is listed.
    #[error("store was built under another configuration: {}", join(differences))]
    PinMismatch {
        /// One entry per differing key.
        differences: Vec<PinDifference>,
    },

    /// The store's schema version is one this build cannot read.
    #[error("store schema version {found} is not supported (this build reads version {supported})")]
    UnsupportedSchema {
        /// The version found in the store.
        found: String,
        /// The version this build reads and writes.
        supported: u32,
    },

    /// The file is not a mnemon store (not SQLite, or SQLite without mnemon's tables).
    #[error("{path} is not a mnemon store: {reason}")]
    NotAStore {
        /// The file that was opened.
        path: PathBuf,
        /// Why it was refused.
        reason: String,
    },

    /// Another process holds the write lock longer than the busy timeout.
    #[error("store is busy: another writer held the lock past the busy timeout; retry")]
    Busy,

    /// A model or runtime file is missing or fails its hash check.
    #[error("model file {path} is unusable: {reason}; fix: {fix}")]
    ModelUnavailable {
        /// The file that was looked for.
        path: PathBuf,
        /// Why it cannot be used.
        reason: String,
        /// The command that fixes it.
        fix: String,
    },

    /// The embedder failed while running.
    #[error("embedder failed: {0}")]
    Embedder(String),

    /// The extractor failed while running (not a bad model output, which is a truncated
    /// extraction, never an error).
    #[error("extractor failed: {0}")]
    Extractor(String),

    /// The operation needs an embedder, but the store was opened with its stored pins and no
    /// models (a builder's `stored()`).
    #[error("{operation} needs an embedder, but this store was opened without models")]
    NoEmbedder {
        /// What was attempted.
        operation: &'static str,
    },

    /// The work was given up, because the store is closing or the caller set a read's cancel
    /// flag; nothing was written, and a round being extracted stays queued.
    #[error("cancelled: the work was given up (the store is closing, or the caller stopped waiting)")]
    Cancelled,

    /// Rounds wait for extraction, but this store was opened without an extractor.
    #[error(
        "{operation}: {pending} rounds wait for extraction, but this store was opened without an extractor"
    )]
    NoExtractor {
        /// What was attempted.
        operation: &'static str,
        /// Rounds waiting.
        pending: usize,
    },

    /// The store's contents violate an invariant (a corrupted or hand-edited file).
    #[error("store {path} is corrupted: {reason}")]
    Corrupt {
        /// The store file.
        path: PathBuf,
        /// What was found.
        reason: String,
    },

    /// The store reached its size limit (`Config::max_store_bytes`)
    /// or the disk is full: the write failed and changed nothing; what was committed stays.
    #[error("store {path} is full: {reason}")]
    StoreFull {
        /// The store file.
        path: PathBuf,
        /// What SQLite said.
        reason: String,
    },

    /// An import file could not be applied; nothing was written.
    #[error("import failed at line {line}: {reason}")]
    Import {
        /// 1-based line of the dump.
        line: usize,
        /// What is wrong.
        reason: String,
    },

    /// SQLite reported an error not covered above.
    #[error("sqlite: {0}")]
    Sqlite(SqliteError),

    /// A database error that is not SQLite's (PostgreSQL's, say), or a stored value of another
    /// type than the store wrote.
    #[error("database: {0}")]
    Database(String),

    /// Reading or writing a file failed.
    #[error("io: {0}")]
    Io(Arc<std::io::Error>),
}

/// An error SQLite reported: its message and (extended) result code. SQLite's own error value
/// is its [`source`](std::error::Error::source).
#[derive(Debug, Clone)]
pub struct SqliteError(Arc<rusqlite::Error>);

impl SqliteError {
    /// SQLite's extended result code, when SQLite itself failed (not a conversion of a value).
    pub fn code(&self) -> Option<i32> {
        match &*self.0 {
            rusqlite::Error::SqliteFailure(e, _) => Some(e.extended_code),
            _ => None,
        }
    }
}

impl fmt::Display for SqliteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for SqliteError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&*self.0)
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::Io(Arc::new(e))
    }
}

fn join(differences: &[PinDifference]) -> String {
    differences.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")
}

impl From<rusqlite::Error> for Error {
    fn from(e: rusqlite::Error) -> Self {
        match e.sqlite_error_code() {
            Some(rusqlite::ErrorCode::DatabaseBusy) | Some(rusqlite::ErrorCode::DatabaseLocked) => {
                Error::Busy
            }
            _ => Error::Sqlite(SqliteError(Arc::new(e))),
        }
    }
}

impl Error {
    /// This error, told which store it happened in: SQLite's "corrupt", "not a database" and
    /// "full" become [`Error::Corrupt`] and [`Error::StoreFull`] naming the file.
    pub fn in_store(self, path: &std::path::Path) -> Error {
        let Error::Sqlite(SqliteError(e)) = &self else { return self };
        let reason = e.to_string();
        match e.sqlite_error_code() {
            Some(rusqlite::ErrorCode::DatabaseCorrupt | rusqlite::ErrorCode::NotADatabase) => {
                Error::Corrupt { path: path.to_owned(), reason }
            }
            Some(rusqlite::ErrorCode::DiskFull) => Error::StoreFull { path: path.to_owned(), reason },
            _ => self,
        }
    }

    /// What SQLite said, if this is an error SQLite reported.
    pub fn sqlite_message(&self) -> Option<String> {
        match self {
            Error::Sqlite(e) => Some(e.to_string()),
            _ => None,
        }
    }

    /// Shorthand for [`Error::InvalidInput`].
    pub fn input(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Error::InvalidInput { field: field.into(), reason: reason.into() }
    }
}
