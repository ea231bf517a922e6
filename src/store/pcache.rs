//! SQLite's own page cache, with one truncation it need not make skipped.
//!
//! At the end of every write transaction SQLite tells the page cache to drop the pages past the
//! end of the file. Its cache keeps the largest page number it has held since the last such
//! truncation and, when that number lies more than the hash table's size past the end, scans
//! every bucket of the table. A B-tree split that reorders its new pages (`balance_nonroot`)
//! parks one of them under the page number of the lock byte (page 262,145 of a 4 KiB-page file)
//! for a moment, so in a file under 1 GiB the commit after such a split scans the whole cache,
//! though nothing past the end is there, inside the one writer's commit (what it cost:
//! docs/DECISIONS.md, 2026-12-07).
//!
//! [`install`] puts a thin layer in front of SQLite's cache (the same cache does all the work)
//! that knows a bound on the keys each cache holds: every key it handed out is at most
//! `bound`, except pages moved above it, which it keeps by name until they move back. A
//! truncation none of whose pages can exist is then skipped; any other goes through. The
//! layer changes which pages are in memory never, only whether an empty scan runs, so the
//! file's bytes are the same either way.
//!
//! SQLite takes a page cache only before its first use in the process; when another part of
//! the process got there first, [`install`] leaves SQLite's cache alone (slower commits, the
//! same results).

use std::ffi::{c_int, c_uint};
use std::ptr;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use rusqlite::ffi::{
    SQLITE_CONFIG_GETPCACHE2, SQLITE_CONFIG_PCACHE2, SQLITE_OK, sqlite3_config, sqlite3_pcache,
    sqlite3_pcache_methods2, sqlite3_pcache_page,
};

/// SQLite's own cache methods, read before ours replaced them.
struct Base(sqlite3_pcache_methods2);

// SAFETY: a table of function pointers and SQLite's `pArg`, only ever read after it is set.
unsafe impl Send for Base {}
unsafe impl Sync for Base {}

static BASE: OnceLock<Base> = OnceLock::new();

/// Whether the layer is in place (decided once per process).
static INSTALLED: OnceLock<bool> = OnceLock::new();

/// Pages parked above a cache's bound, truncations skipped and passed on: counted in tests only.
static PARKED: AtomicU64 = AtomicU64::new(0);
static SKIPPED: AtomicU64 = AtomicU64::new(0);
static PASSED: AtomicU64 = AtomicU64::new(0);

/// Most parked pages remembered by name; past it they are folded into the bound (a split
/// parks one at a time, so this is never reached in practice).
const MAX_PARKED: usize = 8;

/// One cache: SQLite's, and what is known of the keys it holds.
struct Cache {
    base: *mut sqlite3_pcache,
    keys: Keys,
}

/// What is known of the keys a cache holds: every page in it is keyed at most `bound`, or is in
/// `parked` under its key. Pages leave a cache unseen (SQLite's cache reuses the least recently
/// used), which only makes the bound looser.
#[derive(Debug, Default)]
struct Keys {
    bound: c_uint,
    /// Pages a rekey moved above `bound`, each with its key (`page` is SQLite's handle).
    parked: Vec<(usize, c_uint)>,
}

impl Keys {
    /// A page was found or made under `key`.
    fn fetched(&mut self, key: c_uint) {
        self.bound = self.bound.max(key);
    }

    /// `page` was dropped from the cache.
    fn discarded(&mut self, page: usize) {
        if !self.parked.is_empty() {
            self.parked.retain(|&(parked, _)| parked != page);
        }
    }

    /// `page` moved from key `old` to `new`; whether it is parked there.
    fn rekeyed(&mut self, page: usize, old: c_uint, new: c_uint) -> bool {
        if let Some(at) = self.parked.iter().position(|&p| p == (page, old)) {
            self.parked.swap_remove(at);
        }
        if new > self.bound {
            if self.parked.len() == MAX_PARKED {
                self.bound = self.parked.drain(..).map(|(_, key)| key).fold(self.bound, c_uint::max);
            }
            self.parked.push((page, new));
            return true;
        }
        false
    }

    /// Whether a page keyed `limit` or more may be in the cache.
    fn may_hold_from(&self, limit: c_uint) -> bool {
        self.bound >= limit || self.parked.iter().any(|&(_, key)| key >= limit)
    }

    /// Every page keyed `limit` or more was dropped.
    fn truncated(&mut self, limit: c_uint) {
        self.bound = self.bound.min(limit.saturating_sub(1));
        self.parked.retain(|&(_, key)| key < limit);
    }
}

/// Puts the layer in front of SQLite's page cache, unless SQLite is already in use in this
/// process. Returns whether the layer is in place; called again, returns the first answer.
pub(super) fn install() -> bool {
    *INSTALLED.get_or_init(|| {
        let mut base = empty_methods();
        // SAFETY: GETPCACHE2 writes the current methods into the struct it is given, PCACHE2
        // copies the struct it is given; SQLite refuses both (SQLITE_MISUSE) once it is
        // initialized, changing nothing.
        unsafe {
            if sqlite3_config(SQLITE_CONFIG_GETPCACHE2, &raw mut base) != SQLITE_OK {
                return false;
            }
            let ours = sqlite3_pcache_methods2 {
                iVersion: base.iVersion,
                pArg: base.pArg,
                xInit: base.xInit,
                xShutdown: base.xShutdown,
                xCreate: Some(create),
                xCachesize: Some(cachesize),
                xPagecount: Some(pagecount),
                xFetch: Some(fetch),
                xUnpin: Some(unpin),
                xRekey: Some(rekey),
                xTruncate: Some(truncate),
                xDestroy: Some(destroy),
                xShrink: base.xShrink.map(|_| shrink as unsafe extern "C" fn(*mut sqlite3_pcache)),
            };
            if BASE.set(Base(base)).is_err() {
                return false;
            }
            // SQLite copies the struct.
            sqlite3_config(SQLITE_CONFIG_PCACHE2, &raw const ours) == SQLITE_OK
        }
    })
}

/// (pages parked, truncations skipped, truncations passed on) since the process started.
#[cfg(test)]
fn counts() -> (u64, u64, u64) {
    let read = |c: &AtomicU64| c.load(Ordering::Relaxed);
    (read(&PARKED), read(&SKIPPED), read(&PASSED))
}

/// Counts an event of the layer, in tests.
fn count(counter: &AtomicU64) {
    if cfg!(test) {
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

fn empty_methods() -> sqlite3_pcache_methods2 {
    sqlite3_pcache_methods2 {
        iVersion: 0,
        pArg: ptr::null_mut(),
        xInit: None,
        xShutdown: None,
        xCreate: None,
        xCachesize: None,
        xPagecount: None,
        xFetch: None,
        xUnpin: None,
        xRekey: None,
        xTruncate: None,
        xDestroy: None,
        xShrink: None,
    }
}

fn base() -> &'static sqlite3_pcache_methods2 {
    // Set before SQLite can call any method below.
    &BASE.get().expect("the page cache layer is installed").0
}

/// SAFETY (for every method below): SQLite passes back a pointer that [`create`] returned and
/// [`destroy`] has not yet freed, and calls one cache's methods from one thread at a time (its
/// connection's), so the `Cache` behind it may be borrowed mutably for the call.
unsafe fn cache<'a>(p: *mut sqlite3_pcache) -> &'a mut Cache {
    unsafe { &mut *p.cast::<Cache>() }
}

unsafe extern "C" fn create(page: c_int, extra: c_int, purgeable: c_int) -> *mut sqlite3_pcache {
    let made = unsafe { base().xCreate.expect("SQLite's cache creates")(page, extra, purgeable) };
    if made.is_null() {
        return made;
    }
    let ours = Box::new(Cache { base: made, keys: Keys::default() });
    Box::into_raw(ours).cast()
}

unsafe extern "C" fn cachesize(p: *mut sqlite3_pcache, pages: c_int) {
    unsafe { base().xCachesize.expect("SQLite's cache sizes")(cache(p).base, pages) }
}

unsafe extern "C" fn pagecount(p: *mut sqlite3_pcache) -> c_int {
    unsafe { base().xPagecount.expect("SQLite's cache counts")(cache(p).base) }
}

unsafe extern "C" fn fetch(p: *mut sqlite3_pcache, key: c_uint, create: c_int) -> *mut sqlite3_pcache_page {
    let c = unsafe { cache(p) };
    let page = unsafe { base().xFetch.expect("SQLite's cache fetches")(c.base, key, create) };
    if !page.is_null() {
        c.keys.fetched(key);
    }
    page
}

unsafe extern "C" fn unpin(p: *mut sqlite3_pcache, page: *mut sqlite3_pcache_page, discard: c_int) {
    let c = unsafe { cache(p) };
    if discard != 0 {
        c.keys.discarded(page as usize);
    }
    unsafe { base().xUnpin.expect("SQLite's cache unpins")(c.base, page, discard) }
}

unsafe extern "C" fn rekey(p: *mut sqlite3_pcache, page: *mut sqlite3_pcache_page, old: c_uint, new: c_uint) {
    let c = unsafe { cache(p) };
    if c.keys.rekeyed(page as usize, old, new) {
        count(&PARKED);
    }
    unsafe { base().xRekey.expect("SQLite's cache rekeys")(c.base, page, old, new) }
}

unsafe extern "C" fn truncate(p: *mut sqlite3_pcache, limit: c_uint) {
    let c = unsafe { cache(p) };
    // Only pages keyed `limit` or more are dropped: when none can be there, nothing is to do.
    if !c.keys.may_hold_from(limit) {
        count(&SKIPPED);
        return;
    }
    count(&PASSED);
    unsafe { base().xTruncate.expect("SQLite's cache truncates")(c.base, limit) };
    c.keys.truncated(limit);
}

unsafe extern "C" fn destroy(p: *mut sqlite3_pcache) {
    // SAFETY: made by `create` with Box::into_raw; SQLite calls no method of it after this.
    let c = unsafe { Box::from_raw(p.cast::<Cache>()) };
    unsafe { base().xDestroy.expect("SQLite's cache is destroyed")(c.base) }
}

unsafe extern "C" fn shrink(p: *mut sqlite3_pcache) {
    if let Some(shrink) = base().xShrink {
        unsafe { shrink(cache(p).base) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_parked_during_a_swap_does_not_outlive_the_swap() {
        // balance_nonroot swaps pages A (key 7) and B (key 5) through the lock page's key.
        let (a, b, lock) = (0xa0, 0xb0, 262_145);
        let mut keys = Keys::default();
        for key in 1..=9 {
            keys.fetched(key);
        }
        assert!(keys.rekeyed(a, 7, lock), "parked");
        assert!(keys.may_hold_from(10), "while A is parked a truncation at 10 must run");
        assert!(!keys.rekeyed(b, 5, 7));
        keys.rekeyed(a, lock, 5);
        assert!(!keys.may_hold_from(10), "{keys:?}");
        assert!(keys.may_hold_from(9));
    }

    #[test]
    fn a_truncation_past_a_grown_and_rolled_back_file_runs() {
        let mut keys = Keys::default();
        (1..=100).for_each(|k| keys.fetched(k));
        // The transaction that grew the file to 100 pages rolls back to 60.
        assert!(keys.may_hold_from(61));
        keys.truncated(61);
        assert!(!keys.may_hold_from(61));
        assert!(keys.may_hold_from(60));
        // Cleared (SQLite truncates at 1).
        keys.truncated(1);
        assert!(!keys.may_hold_from(1));
    }

    #[test]
    fn pages_parked_and_never_moved_back_are_kept_or_folded_into_the_bound() {
        let mut keys = Keys::default();
        keys.fetched(10);
        for page in 0..(MAX_PARKED + 3) {
            keys.rekeyed(page, 1, 1_000 + page as c_uint);
        }
        assert!(keys.may_hold_from(1_000 + MAX_PARKED as c_uint + 2));
        assert!(!keys.may_hold_from(1_000 + MAX_PARKED as c_uint + 3));
        // A parked page dropped from the cache is forgotten; another moved onto its key is not.
        let mut keys = Keys::default();
        keys.fetched(10);
        keys.rekeyed(1, 3, 500);
        keys.discarded(1);
        assert!(!keys.may_hold_from(11));
        keys.rekeyed(2, 4, 500);
        keys.rekeyed(1, 500, 6);
        assert!(keys.may_hold_from(500), "page 2 is still parked at 500");
    }

    const CHILD: &str = "MNEMON_PCACHE_CHILD";

    /// The layer in a process of its own, where SQLite has not been used before it.
    #[test]
    fn commits_after_page_swaps_skip_the_empty_scan_and_every_byte_stays() {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["store::pcache::tests::in_a_process_of_its_own", "--exact", "--ignored", "--nocapture"])
            .args(["--test-threads=1"])
            .env(CHILD, "1")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
        assert!(stdout.contains("layer: whole"), "{stdout}");
    }

    #[test]
    #[ignore = "run by the test above, alone in a process"]
    fn in_a_process_of_its_own() {
        if std::env::var_os(CHILD).is_none() {
            return;
        }
        assert!(install(), "nothing else in this process used SQLite before");
        super::super::sqlite::set_up_sqlite();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let open = || {
            let conn = rusqlite::Connection::open(&path).unwrap();
            conn.execute_batch("PRAGMA journal_mode=WAL; PRAGMA cache_size=-50000;").unwrap();
            conn
        };
        let conn = open();
        // Keys in an order unlike their own (an index's splits then reorder their new pages),
        // rows deleted (free pages reused out of order), a transaction that grows the file
        // rolled back.
        conn.execute_batch("CREATE TABLE t(k BLOB PRIMARY KEY, v BLOB) WITHOUT ROWID").unwrap();
        let key = |i: u64| blake3::hash(&i.to_le_bytes()).as_bytes().to_vec();
        let value = |i: u64| vec![(i % 251) as u8; 300 + (i % 7) as usize * 50];
        let mut expected = std::collections::BTreeMap::new();
        for batch in 0..200u64 {
            let tx = conn.unchecked_transaction().unwrap();
            for i in batch * 20..batch * 20 + 20 {
                tx.execute("INSERT INTO t VALUES (?1, ?2)", (key(i), value(i))).unwrap();
                expected.insert(key(i), value(i));
            }
            if batch % 5 == 4 {
                for i in (batch * 20 - 60..batch * 20).step_by(3) {
                    tx.execute("DELETE FROM t WHERE k = ?1", [key(i)]).unwrap();
                    expected.remove(&key(i));
                }
            }
            tx.commit().unwrap();
            if batch % 50 == 25 {
                let tx = conn.unchecked_transaction().unwrap();
                for i in 1_000_000..1_000_400u64 {
                    tx.execute("INSERT INTO t VALUES (?1, ?2)", (key(i), vec![7u8; 3_000])).unwrap();
                }
                tx.rollback().unwrap();
            }
        }
        let (parked, skipped, passed) = counts();
        let read = |conn: &rusqlite::Connection| {
            let mut stmt = conn.prepare("SELECT k, v FROM t ORDER BY k").unwrap();
            stmt.query_map([], |r| Ok((r.get::<_, Vec<u8>>(0)?, r.get::<_, Vec<u8>>(1)?)))
                .unwrap()
                .collect::<rusqlite::Result<std::collections::BTreeMap<_, _>>>()
                .unwrap()
        };
        assert!(read(&conn) == expected, "the writing connection reads what was written");
        assert!(read(&open()) == expected, "a new connection reads what was written");
        let check: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
        assert_eq!(check, "ok");
        // Splits parked pages (without the layer, each commit after one scans the whole cache),
        // and every commit skipped its truncation; the rollbacks' went through.
        let counted = format!("parked {parked}, skipped {skipped}, passed {passed}");
        assert!(parked >= 50, "{counted}");
        assert!(skipped >= 200, "{counted}");
        assert!((4..=8).contains(&passed), "{counted}");
        println!("layer: whole ({counted})");
    }
}
