//! Notes (direct memories): row reads under the visibility rule, filtered and paged lists,
//! counts, and the writes used inside a caller's transaction.

use super::db::{Db, Dialect, Param, Row, insert_id};
use super::{Store, View, visible};
use crate::error::{Error, Result};
use crate::model::filter::NoteFilter;
use crate::model::note::{Note, NoteKind, word_text};
use mnemon_backend::p;

/// A stored note.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct NoteRow {
    pub id: i64,
    pub key: String,
    pub agent: Option<String>,
    pub kind: NoteKind,
    pub title: Option<String>,
    pub content: String,
    /// As given (trimmed, first of repeats).
    pub tags: Vec<String>,
    /// Canonical JSON text of an object.
    pub metadata: String,
    pub importance: f32,
    pub ts: String,
    pub ts_unix: i64,
    pub day: i32,
    pub updated: String,
    pub updated_unix: i64,
    pub tokens: i64,
    pub norm_key: String,
    pub condensed_into: Option<String>,
    /// Space-separated keys, oldest first.
    pub condenses: Option<String>,
}

impl NoteRow {
    /// Whether `other` says the same: scope, kind, title, content, tags, metadata and importance
    /// (not where it is condensed, nor its row id or timestamps).
    pub(crate) fn same_as(&self, other: &NoteRow) -> bool {
        self.key == other.key
            && self.agent == other.agent
            && self.kind == other.kind
            && self.title == other.title
            && self.content == other.content
            && self.tags == other.tags
            && self.metadata == other.metadata
            && self.importance.to_bits() == other.importance.to_bits()
    }
}

/// What the in-memory index needs of a note besides its vector: enough to apply a filter.
#[derive(Debug, Clone)]
pub(crate) struct NoteMeta {
    pub id: i64,
    pub day: i32,
    pub importance: f32,
    pub kind: NoteKind,
    /// Lowercase.
    pub tags: Vec<String>,
    pub ts_unix: i64,
    pub tokens: i64,
    /// The text it is word-indexed as ([`word_text`](crate::model::note::word_text)).
    pub words: String,
}

const NOTE_COLUMNS: &str = "id, note_key, agent, kind, title, content, tags, metadata, importance, ts, ts_unix, day, \
     updated_ts, updated_unix, tokens, norm_key, condensed_into, condenses";

/// Above this many tagged notes (of every user) for a filter's tags, a listing walks the notes
/// newest first and checks each one's tags; at or below it, it starts from those tagged notes and
/// sorts them. The walk stops after a page of hits, so it wins when the tags are common and loses
/// (scanning every note) when they are rare. Both give the same page.
const TAG_DRIVEN_MAX: i64 = 5_000;

/// A value bound to a built statement, owned while the statement is built.
enum Arg {
    Int(i64),
    Text(String),
    Null,
}

/// An SQL condition list with its bound values, built in order.
#[derive(Default)]
struct Conditions {
    sql: Vec<String>,
    args: Vec<Arg>,
}

impl Conditions {
    /// `?N` for a new bound value.
    fn arg(&mut self, v: Arg) -> String {
        self.args.push(v);
        format!("?{}", self.args.len())
    }

    /// `?N, ?M, …` for a list of strings.
    fn list(&mut self, items: &[&str]) -> String {
        items.iter().map(|i| self.arg(Arg::Text((*i).to_owned()))).collect::<Vec<_>>().join(", ")
    }

    fn params(&self) -> Vec<Param<'_>> {
        self.args
            .iter()
            .map(|a| match a {
                Arg::Int(i) => Param::Int(*i),
                Arg::Text(t) => Param::Text(t),
                Arg::Null => Param::Null,
            })
            .collect()
    }
}

/// A stored value the store wrote itself but cannot read back (a hand-edited file).
fn unreadable(column: usize, what: String) -> Error {
    Error::Database(format!("column {column}: {what}"))
}

fn parse_kind(kind: &str, column: usize) -> Result<NoteKind> {
    NoteKind::parse(kind, "kind").map_err(|e| unreadable(column, e.to_string()))
}

fn parse_tags(tags: &str, column: usize) -> Result<Vec<String>> {
    serde_json::from_str(tags).map_err(|e| unreadable(column, format!("note tags: {e}")))
}

fn note_from_row(r: &dyn Row) -> Result<NoteRow> {
    Ok(NoteRow {
        id: r.get(0)?,
        key: r.get(1)?,
        agent: r.get(2)?,
        kind: parse_kind(&r.get::<String>(3)?, 3)?,
        title: r.get(4)?,
        content: r.get(5)?,
        tags: parse_tags(&r.get::<String>(6)?, 6)?,
        metadata: r.get(7)?,
        importance: r.get(8)?,
        ts: r.get(9)?,
        ts_unix: r.get(10)?,
        day: r.get(11)?,
        updated: r.get(12)?,
        updated_unix: r.get(13)?,
        tokens: r.get(14)?,
        norm_key: r.get(15)?,
        condensed_into: r.get(16)?,
        condenses: r.get(17)?,
    })
}

impl Store {
    fn notes_where(&self, sql: &str, args: &[Param<'_>]) -> Result<Vec<NoteRow>> {
        self.db().rows(sql, args, note_from_row)
    }

    /// The note with this key, if the view sees it (condensed notes included).
    pub(crate) fn note_by_key(&self, view: View<'_>, key: &str) -> Result<Option<NoteRow>> {
        write::note_by_key(self.db(), view.user, view.agent, key)
    }

    /// Notes with these ids that the view sees, in the order of `ids`.
    pub(crate) fn notes_by_id(&self, view: View<'_>, ids: &[i64]) -> Result<Vec<NoteRow>> {
        let sql = format!(
            "SELECT {NOTE_COLUMNS} FROM notes WHERE user_id = ?1 AND id = ?3 AND {}",
            visible("agent", 2)
        );
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            match self.notes_where(&sql, p![view.user, view.agent, id])?.pop() {
                Some(n) => out.push(n),
                None => {
                    return Err(Error::Corrupt {
                        path: self.path.clone(),
                        reason: format!("note id {id} is indexed but missing"),
                    });
                }
            }
        }
        Ok(out)
    }

    /// The ids of the notes the view sees (condensed ones too) whose metadata passes the
    /// filter's metadata condition; `None` when it has none.
    pub(crate) fn notes_passing_metadata(
        &self,
        view: View<'_>,
        filter: &NoteFilter,
    ) -> Result<Option<std::collections::HashSet<i64>>> {
        let Some(condition) = &filter.metadata else {
            return Ok(None);
        };
        let sql = format!("SELECT id, metadata FROM notes WHERE user_id = ?1 AND {}", visible("agent", 2));
        let rows: Vec<(i64, String)> =
            self.db().rows(&sql, p![view.user, view.agent], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(Some(rows.into_iter().filter(|(_, m)| condition.holds_text(m)).map(|(id, _)| id).collect()))
    }

    /// One page of the notes the view sees that pass `filter`, newest first (by `ts`, then key
    /// descending), starting after `cursor` (the `(ts_unix, key)` of the last note of the
    /// previous page). A metadata condition is tested on the rows the SQL returns, reading on in
    /// batches until the page is full or the notes run out.
    pub(crate) fn notes_page(
        &self,
        view: View<'_>,
        filter: &NoteFilter,
        cursor: Option<(i64, &str)>,
        limit: usize,
    ) -> Result<Vec<NoteRow>> {
        if filter.metadata.is_none() {
            return self.notes_page_sql(view, filter, cursor, limit);
        }
        let batch = limit.saturating_mul(4).max(32);
        let mut after = cursor.map(|(t, k)| (t, k.to_owned()));
        let mut out = Vec::with_capacity(limit);
        loop {
            let rows =
                self.notes_page_sql(view, filter, after.as_ref().map(|(t, k)| (*t, k.as_str())), batch)?;
            let exhausted = rows.len() < batch;
            after = rows.last().map(|n| (n.ts_unix, n.key.clone()));
            out.extend(rows.into_iter().filter(|n| filter.metadata_holds(&n.metadata)));
            if out.len() >= limit || exhausted {
                out.truncate(limit);
                return Ok(out);
            }
        }
    }

    /// [`notes_page`](Store::notes_page) without the metadata condition: only the filter's
    /// conditions in the SQL, so time bounds are index ranges; see [`TAG_DRIVEN_MAX`] for where
    /// the scan starts.
    fn notes_page_sql(
        &self,
        view: View<'_>,
        filter: &NoteFilter,
        cursor: Option<(i64, &str)>,
        limit: usize,
    ) -> Result<Vec<NoteRow>> {
        let mut c = Conditions::default();
        let user = c.arg(Arg::Int(view.user));
        let agent = c.arg(view.agent.map_or(Arg::Null, |a| Arg::Text(a.to_owned())));
        c.sql.push(format!("n.user_id = {user}"));
        c.sql.push(format!("(CAST({agent} AS TEXT) IS NULL OR n.agent IS NULL OR n.agent = {agent})"));
        if !filter.include_condensed {
            c.sql.push("n.condensed_into IS NULL".into());
        }
        if let Some(t) = filter.after {
            let t = c.arg(Arg::Int(t));
            c.sql.push(format!("n.ts_unix > {t}"));
        }
        if let Some(t) = filter.before {
            let t = c.arg(Arg::Int(t));
            c.sql.push(format!("n.ts_unix < {t}"));
        }
        if let Some(m) = filter.min_tokens {
            let m = c.arg(Arg::Int(m));
            c.sql.push(format!("n.tokens >= {m}"));
        }
        if let Some(m) = filter.max_tokens {
            let m = c.arg(Arg::Int(m));
            c.sql.push(format!("n.tokens <= {m}"));
        }
        if !filter.kinds.is_empty() {
            let kinds: Vec<&str> = filter.kinds.iter().map(|k| k.as_str()).collect();
            let list = c.list(&kinds);
            c.sql.push(format!("n.kind IN ({list})"));
        }
        let any: Vec<&str> = filter.tags_any.iter().map(String::as_str).collect();
        if !any.is_empty() {
            let list = c.list(&any);
            c.sql.push(format!("n.id IN (SELECT note_id FROM note_tags WHERE tag IN ({list}))"));
        }
        for tag in &filter.tags_all {
            let t = c.arg(Arg::Text(tag.clone()));
            c.sql.push(format!("n.id IN (SELECT note_id FROM note_tags WHERE tag = {t})"));
        }
        if let Some((ts, key)) = cursor {
            let (t, k) = (c.arg(Arg::Int(ts)), c.arg(Arg::Text(key.to_owned())));
            c.sql.push(format!("(n.ts_unix < {t} OR (n.ts_unix = {t} AND n.note_key < {k}))"));
        }
        let page = c.arg(Arg::Int(i64::try_from(limit).unwrap_or(i64::MAX)));
        // The tags that could start the scan: the any-list, else the first all-tag.
        let drive: Vec<&str> =
            if any.is_empty() { filter.tags_all.iter().take(1).map(String::as_str).collect() } else { any };
        let from = if !drive.is_empty() && self.tagged(&drive)? <= TAG_DRIVEN_MAX {
            let list = c.list(&drive);
            // SQLite: CROSS JOIN keeps the tag index as the outer loop (PostgreSQL plans it itself).
            let join = match self.db().dialect() {
                Dialect::Sqlite => "CROSS JOIN",
                Dialect::Postgres => "JOIN",
            };
            format!(
                "(SELECT DISTINCT note_id FROM note_tags WHERE tag IN ({list})) d {join} notes n ON n.id = d.note_id"
            )
        } else {
            "notes n".to_owned()
        };
        let sql = format!(
            "SELECT {} FROM {from} WHERE {} ORDER BY n.ts_unix DESC, n.note_key DESC LIMIT {page}",
            NOTE_COLUMNS.split(", ").map(|c| format!("n.{c}")).collect::<Vec<_>>().join(", "),
            c.sql.join(" AND ")
        );
        self.notes_where(&sql, &c.params())
    }

    /// Notes (of every user) carrying any of `tags`: what a tag-driven scan would read.
    fn tagged(&self, tags: &[&str]) -> Result<i64> {
        let mut c = Conditions::default();
        let list = c.list(tags);
        let sql = format!("SELECT count(*) FROM note_tags WHERE tag IN ({list})");
        self.db().one(&sql, &c.params())
    }

    /// Every note the view sees, condensed ones included, in the order they were stored (a dump
    /// in this order imports to the same relative order, so ties rank the same).
    pub(crate) fn all_notes(&self, view: View<'_>) -> Result<Vec<NoteRow>> {
        let sql = format!(
            "SELECT {NOTE_COLUMNS} FROM notes WHERE user_id = ?1 AND {} ORDER BY id",
            visible("agent", 2)
        );
        self.notes_where(&sql, p![view.user, view.agent])
    }

    /// The visible notes on read paths (not condensed) per kind, and the condensed ones.
    pub(crate) fn note_counts(&self, view: View<'_>) -> Result<(Vec<(NoteKind, usize)>, usize)> {
        let sql = format!(
            "SELECT kind, condensed_into IS NOT NULL, count(*) FROM notes WHERE user_id = ?1 AND {} \
             GROUP BY kind, condensed_into IS NOT NULL ORDER BY kind",
            visible("agent", 2)
        );
        let rows: Vec<(String, bool, i64)> =
            self.db().rows(&sql, p![view.user, view.agent], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
        let (mut kinds, mut condensed) = (Vec::new(), 0);
        for (kind, hidden, n) in rows {
            if hidden {
                condensed += n as usize;
            } else {
                kinds.push((parse_kind(&kind, 0)?, n as usize));
            }
        }
        Ok((kinds, condensed))
    }

    /// The visible, not condensed notes' index entries: what a filter needs, the word text and
    /// each vector, in id order.
    pub(crate) fn note_vectors(&self, view: View<'_>) -> Result<(Vec<NoteMeta>, Vec<f32>)> {
        // The notes first, in id order, then each one's vector. In a SQLite file each note's
        // place in sqlite-vec's chunks is read, and the chunks after, each once
        // (`Store::chunk_vectors`); elsewhere the vector itself.
        let sqlite = self.db().dialect() == Dialect::Sqlite;
        let (vector, join) = if sqlite {
            ("v.chunk_id, v.chunk_offset", "note_vectors_rowids")
        } else {
            ("v.embedding", "note_vectors")
        };
        let sql = format!(
            "WITH n AS MATERIALIZED (SELECT id, day, importance, kind, tags, ts_unix, tokens, title, content \
             FROM notes WHERE user_id = ?1 AND {} AND condensed_into IS NULL ORDER BY id) \
             SELECT n.id, n.day, n.importance, n.kind, n.tags, n.ts_unix, n.tokens, n.title, n.content, {vector} \
             FROM n JOIN {join} v ON v.rowid = n.id ORDER BY n.id",
            visible("agent", 2)
        );
        let (mut metas, mut data, mut places) = (Vec::new(), Vec::new(), Vec::new());
        self.db().query(&sql, p![view.user, view.agent], &mut |r| {
            let tags = parse_tags(&r.get::<String>(4)?, 4)?;
            let (title, content): (Option<String>, String) = (r.get(7)?, r.get(8)?);
            metas.push(NoteMeta {
                id: r.get(0)?,
                day: r.get(1)?,
                importance: r.get(2)?,
                kind: parse_kind(&r.get::<String>(3)?, 3)?,
                words: word_text(title.as_deref(), &content, &tags),
                tags: tags.iter().map(|t| t.to_lowercase()).collect(),
                ts_unix: r.get(5)?,
                tokens: r.get(6)?,
            });
            if sqlite {
                places.push((r.get::<i64>(9)?, r.get::<i64>(10)?));
                Ok(())
            } else {
                r.extend_vector(9, &mut data)
            }
        })?;
        if sqlite {
            data = self.chunk_vectors("note_vectors", &places)?;
        }
        Ok((metas, data))
    }

    /// The agents (and `None`, shared) the user's notes belong to, shared first.
    pub(crate) fn note_agents(&self, user_id: i64) -> Result<Vec<Option<String>>> {
        self.db().rows(
            "SELECT DISTINCT agent, agent IS NOT NULL FROM notes WHERE user_id = ?1 ORDER BY agent IS NOT NULL, agent",
            p![user_id],
            |r| r.get(0),
        )
    }

    /// The episodic notes on read paths written in exactly this agent's scope (`None`: the
    /// shared ones), oldest first (by `ts`, then key).
    pub(crate) fn episodic_notes(&self, user_id: i64, agent: Option<&str>) -> Result<Vec<NoteRow>> {
        let sql = format!(
            "SELECT {NOTE_COLUMNS} FROM notes WHERE user_id = ?1 AND agent IS NOT DISTINCT FROM ?2 AND kind = 'episodic' \
             AND condensed_into IS NULL ORDER BY ts_unix, note_key"
        );
        self.notes_where(&sql, p![user_id, agent])
    }

    /// The stored vector of note `id`.
    pub(crate) fn note_vector(&self, id: i64) -> Result<Vec<f32>> {
        self.db().opt("SELECT embedding FROM note_vectors WHERE rowid = ?1", p![id])?.ok_or_else(|| {
            Error::Corrupt { path: self.path.clone(), reason: format!("note id {id} has no vector") }
        })
    }
}

pub(crate) mod write;
impl From<NoteRow> for Note {
    fn from(n: NoteRow) -> Note {
        Note {
            key: n.key,
            agent: n.agent,
            kind: n.kind,
            title: n.title,
            content: n.content,
            tags: n.tags,
            // The store only ever writes a canonical object here.
            metadata: serde_json::from_str(&n.metadata).unwrap_or_else(|_| serde_json::json!({})),
            importance: n.importance,
            ts: n.ts,
            updated: n.updated,
            tokens: usize::try_from(n.tokens).unwrap_or(0),
            condensed_into: n.condensed_into,
            condenses: n.condenses.map(|c| c.split(' ').map(str::to_owned).collect()).unwrap_or_default(),
        }
    }
}

impl NoteMeta {
    /// What the views keep of a stored note.
    pub(crate) fn of(n: &NoteRow) -> NoteMeta {
        NoteMeta {
            id: n.id,
            day: n.day,
            importance: n.importance,
            kind: n.kind,
            tags: n.tags.iter().map(|t| t.to_lowercase()).collect(),
            ts_unix: n.ts_unix,
            tokens: n.tokens,
            words: word_text(n.title.as_deref(), &n.content, &n.tags),
        }
    }
}
