//! Note writes inside one transaction (`conn` is the open transaction).

use super::*;

/// The user's note with this key, in any scope.
pub(crate) fn note_with_key(conn: &dyn Db, user_id: i64, key: &str) -> Result<Option<NoteRow>> {
    let sql = format!("SELECT {NOTE_COLUMNS} FROM notes WHERE user_id = ?1 AND note_key = ?2");
    conn.row(&sql, p![user_id, key], note_from_row)
}

/// Whether the user already has a note with this key (in any scope).
pub(crate) fn note_key_taken(conn: &dyn Db, user_id: i64, key: &str) -> Result<bool> {
    Ok(conn
        .opt::<i64>("SELECT 1 FROM notes WHERE user_id = ?1 AND note_key = ?2", p![user_id, key])?
        .is_some())
}

/// The key of a note on read paths with the same normalized content that is at least as
/// widely visible as a new note of `agent` (shared, or the same agent's), if any.
pub(crate) fn duplicate_note(
    conn: &dyn Db,
    user_id: i64,
    agent: Option<&str>,
    norm_key: &str,
) -> Result<Option<String>> {
    conn.opt(
        "SELECT note_key FROM notes WHERE user_id = ?1 AND norm_key = ?3 AND condensed_into IS NULL \
         AND (agent IS NULL OR agent = ?2) ORDER BY id LIMIT 1",
        p![user_id, agent, norm_key],
    )
}

fn tags_json(tags: &[String]) -> String {
    serde_json::to_string(tags).unwrap_or_default()
}

fn insert_tags(conn: &dyn Db, id: i64, tags: &[String]) -> Result<()> {
    for t in tags {
        conn.execute(
            "INSERT INTO note_tags(note_id, tag) VALUES (?1, ?2) ON CONFLICT DO NOTHING",
            p![id, &t.to_lowercase()],
        )?;
    }
    Ok(())
}

/// Indexes the words of note `id`, whose fields are `n`'s (SQLite's FTS5 table; the ranking
/// keeps its own word index in memory, on every backend).
fn fts_insert(conn: &dyn Db, id: i64, n: &NoteRow) -> Result<()> {
    if conn.dialect() == Dialect::Sqlite {
        conn.execute(
            "INSERT INTO note_fts(rowid, title, content, tags) VALUES (?1, ?2, ?3, ?4)",
            p![id, &n.title, &n.content, &tags_json(&n.tags)],
        )?;
    }
    Ok(())
}

/// Removes note `id`'s words, with the values stored in its row (an external-content FTS5
/// table needs exactly those; a caller's copy could be stale).
fn fts_delete(conn: &dyn Db, id: i64) -> Result<()> {
    if conn.dialect() == Dialect::Sqlite {
        conn.execute(
            "INSERT INTO note_fts(note_fts, rowid, title, content, tags) \
             SELECT 'delete', id, title, content, tags FROM notes WHERE id = ?1",
            p![id],
        )?;
    }
    Ok(())
}

/// The note with this key that a view of `agent` sees (condensed ones included), read inside
/// the caller's transaction.
pub(crate) fn note_by_key(
    conn: &dyn Db,
    user_id: i64,
    agent: Option<&str>,
    key: &str,
) -> Result<Option<NoteRow>> {
    let sql = format!(
        "SELECT {NOTE_COLUMNS} FROM notes WHERE user_id = ?1 AND note_key = ?3 AND {}",
        visible("agent", 2)
    );
    conn.row(&sql, p![user_id, agent, key], note_from_row)
}

/// Stores a note with its tags, vector and words; returns its id.
pub(crate) fn insert_note(conn: &dyn Db, user_id: i64, n: &NoteRow, vector: &[f32]) -> Result<i64> {
    let id = insert_id(
        conn,
        "INSERT INTO notes(user_id, agent, note_key, kind, title, content, tags, metadata, importance, ts, \
         ts_unix, day, updated_ts, updated_unix, tokens, norm_key, condensed_into, condenses) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)",
        p![
            user_id,
            &n.agent,
            &n.key,
            n.kind.as_str(),
            &n.title,
            &n.content,
            &tags_json(&n.tags),
            &n.metadata,
            n.importance,
            &n.ts,
            n.ts_unix,
            n.day,
            &n.updated,
            n.updated_unix,
            n.tokens,
            &n.norm_key,
            &n.condensed_into,
            &n.condenses
        ],
    )?;
    insert_tags(conn, id, &n.tags)?;
    conn.execute(
        "INSERT INTO note_vectors(rowid, user_id, embedding) VALUES (?1, ?2, ?3)",
        p![id, user_id, vector],
    )?;
    fts_insert(conn, id, n)?;
    Ok(id)
}

/// Replaces note `old`'s fields with `new`'s (same id and key; the summary links too), and its
/// vector when given.
pub(crate) fn update_note(
    conn: &dyn Db,
    user_id: i64,
    old: &NoteRow,
    new: &NoteRow,
    vector: Option<&[f32]>,
) -> Result<()> {
    fts_delete(conn, old.id)?;
    conn.execute(
        "UPDATE notes SET kind = ?2, title = ?3, content = ?4, tags = ?5, metadata = ?6, importance = ?7, \
         updated_ts = ?8, updated_unix = ?9, tokens = ?10, norm_key = ?11, condenses = ?12 WHERE id = ?1",
        p![
            old.id,
            new.kind.as_str(),
            &new.title,
            &new.content,
            &tags_json(&new.tags),
            &new.metadata,
            new.importance,
            &new.updated,
            new.updated_unix,
            new.tokens,
            &new.norm_key,
            &new.condenses
        ],
    )?;
    conn.execute("DELETE FROM note_tags WHERE note_id = ?1", p![old.id])?;
    insert_tags(conn, old.id, &new.tags)?;
    if let Some(v) = vector {
        conn.execute("DELETE FROM note_vectors WHERE rowid = ?1", p![old.id])?;
        conn.execute(
            "INSERT INTO note_vectors(rowid, user_id, embedding) VALUES (?1, ?2, ?3)",
            p![old.id, user_id, v],
        )?;
    }
    fts_insert(conn, old.id, new)?;
    Ok(())
}

/// Removes a note, its tags, vector and words.
pub(crate) fn delete_note(conn: &dyn Db, n: &NoteRow) -> Result<()> {
    fts_delete(conn, n.id)?;
    conn.execute("DELETE FROM note_tags WHERE note_id = ?1", p![n.id])?;
    conn.execute("DELETE FROM note_vectors WHERE rowid = ?1", p![n.id])?;
    conn.execute("DELETE FROM notes WHERE id = ?1", p![n.id])?;
    Ok(())
}

/// Hides note `id` behind the note `into` that condenses it.
pub(crate) fn condense_note(conn: &dyn Db, id: i64, into: &str) -> Result<()> {
    conn.execute("UPDATE notes SET condensed_into = ?2 WHERE id = ?1", p![id, into])?;
    Ok(())
}

/// Brings back the notes a deleted summary condensed; returns their keys.
pub(crate) fn uncondense(conn: &dyn Db, user_id: i64, summary: &str) -> Result<Vec<String>> {
    let keys = conn.rows(
        "SELECT note_key FROM notes WHERE user_id = ?1 AND condensed_into = ?2 ORDER BY id",
        p![user_id, summary],
        |r| r.get(0),
    )?;
    conn.execute(
        "UPDATE notes SET condensed_into = NULL WHERE user_id = ?1 AND condensed_into = ?2",
        p![user_id, summary],
    )?;
    Ok(keys)
}

/// Removes every note of the user with its tags, vectors and words.
pub(crate) fn forget_notes(conn: &dyn Db, user_id: i64) -> Result<usize> {
    if conn.dialect() == Dialect::Sqlite {
        conn.execute(
            "INSERT INTO note_fts(note_fts, rowid, title, content, tags) \
             SELECT 'delete', id, title, content, tags FROM notes WHERE user_id = ?1",
            p![user_id],
        )?;
    }
    conn.execute(
        "DELETE FROM note_tags WHERE note_id IN (SELECT id FROM notes WHERE user_id = ?1)",
        p![user_id],
    )?;
    conn.execute(
        "DELETE FROM note_vectors WHERE rowid IN (SELECT id FROM notes WHERE user_id = ?1)",
        p![user_id],
    )?;
    Ok(conn.execute("DELETE FROM notes WHERE user_id = ?1", p![user_id])? as usize)
}
