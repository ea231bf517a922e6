//! SQLite's side of the store (its [`Db`](super::db::Db) is `mnemon-backend`'s): SQLite set up
//! once per process (the page cache layer, sqlite-vec), and the side files (caches) opened the
//! way a store is.

use std::path::Path;
use std::sync::Once;

use rusqlite::Connection;

use crate::error::{Error, Result};

static SET_UP: Once = Once::new();

/// Sets SQLite up for this process, once, before any connection of the library opens: the page
/// cache layer ([`super::pcache`]), which SQLite takes only before its first use, then sqlite-vec
/// for every connection.
pub(super) fn set_up_sqlite() {
    SET_UP.call_once(|| {
        super::pcache::install();
        // SAFETY: sqlite3_vec_init has the signature SQLite expects of an extension entry point;
        // registering it as an auto extension makes every later connection load it.
        unsafe {
            #[allow(clippy::missing_transmute_annotations)]
            rusqlite::ffi::sqlite3_auto_extension(Some(std::mem::transmute(
                sqlite_vec::sqlite3_vec_init as *const (),
            )));
        }
    });
}

/// Opens (creating) a side file that is not a store, such as a cache: WAL, a busy timeout, then
/// `schema` (idempotent statements). A file that is not SQLite is [`Error::NotAStore`].
pub(super) fn open_side_db(path: &Path, schema: &str) -> Result<Connection> {
    set_up_sqlite();
    let conn = Connection::open(path)
        .map_err(|e| Error::NotAStore { path: path.to_owned(), reason: e.to_string() })?;
    conn.busy_timeout(std::time::Duration::from_secs(10))?;
    // secure_delete: a cache entry dropped by a forget leaves no bytes in free pages.
    conn.execute_batch(&format!(
        "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA secure_delete=ON; {schema}"
    ))
    .map_err(|e| match e.sqlite_error_code() {
        Some(rusqlite::ErrorCode::NotADatabase) => {
            Error::NotAStore { path: path.to_owned(), reason: "not a SQLite database".into() }
        }
        _ => Error::from(e),
    })?;
    Ok(conn)
}

/// `PRAGMA wal_checkpoint(TRUNCATE)` on `conn`: true when the whole log was copied and emptied.
pub(super) fn truncate_wal(conn: &Connection) -> Result<bool> {
    let busy: i64 = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get(0))?;
    Ok(busy == 0)
}
