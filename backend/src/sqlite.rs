//! SQLite's implementation of [`Db`]: statements prepared once per connection and cached,
//! values bound as SQLite's own types, lists of integers as JSON (read with `json_each`).

use std::borrow::Cow;

use crate::db::{Db, Dialect, Param, Row, Value};
use crate::error::{Error, Result};

impl rusqlite::ToSql for Param<'_> {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        use rusqlite::types::{ToSqlOutput, Value as V, ValueRef};
        Ok(match *self {
            Param::Null => ToSqlOutput::Borrowed(ValueRef::Null),
            Param::Int(i) => ToSqlOutput::Borrowed(ValueRef::Integer(i)),
            Param::Real(r) => ToSqlOutput::Borrowed(ValueRef::Real(r)),
            Param::Text(t) => ToSqlOutput::Borrowed(ValueRef::Text(t.as_bytes())),
            Param::Blob(b) => ToSqlOutput::Borrowed(ValueRef::Blob(b)),
            Param::Vector(v) => ToSqlOutput::Owned(V::Blob(v.iter().flat_map(|x| x.to_le_bytes()).collect())),
            Param::Ints(list) => ToSqlOutput::Owned(V::Text(
                serde_json::to_string(list).map_err(|e| rusqlite::Error::ToSqlConversionFailure(e.into()))?,
            )),
            Param::Texts(list) => ToSqlOutput::Owned(V::Text(
                serde_json::to_string(list).map_err(|e| rusqlite::Error::ToSqlConversionFailure(e.into()))?,
            )),
            Param::Vectors(_) => {
                return Err(rusqlite::Error::ToSqlConversionFailure(
                    "a list of vectors has no SQLite form: bind one vector a row".into(),
                ))
            }
        })
    }
}

impl Row for rusqlite::Row<'_> {
    fn value(&self, i: usize) -> Result<Value<'_>> {
        use rusqlite::types::ValueRef;
        Ok(match self.get_ref(i)? {
            ValueRef::Null => Value::Null,
            ValueRef::Integer(i) => Value::Int(i),
            ValueRef::Real(r) => Value::Real(r),
            ValueRef::Text(t) => Value::Text(
                std::str::from_utf8(t).map_err(|e| Error::Database(format!("column {i}: {e}")))?.into(),
            ),
            ValueRef::Blob(b) => Value::Blob(Cow::Borrowed(b)),
        })
    }
}

impl Db for rusqlite::Connection {
    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }

    fn query(
        &self,
        sql: &str,
        params: &[Param<'_>],
        each: &mut dyn FnMut(&dyn Row) -> Result<()>,
    ) -> Result<()> {
        let mut stmt = self.prepare_cached(sql)?;
        let mut rows = stmt.query(rusqlite::params_from_iter(params))?;
        while let Some(r) = rows.next()? {
            each(r)?;
        }
        Ok(())
    }

    fn execute(&self, sql: &str, params: &[Param<'_>]) -> Result<u64> {
        let n = self.prepare_cached(sql)?.execute(rusqlite::params_from_iter(params))?;
        Ok(n as u64)
    }

    fn batch(&self, sql: &str) -> Result<()> {
        Ok(self.execute_batch(sql)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::p;

    #[test]
    fn sqlite_reads_every_type_and_says_what_it_found() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        let db: &dyn Db = &conn;
        db.batch("CREATE TABLE t(i INTEGER, r REAL, s TEXT, b BLOB)").unwrap();
        let v = [1.5f32, -2.0];
        db.execute("INSERT INTO t VALUES (?1, ?2, ?3, ?4)", p![7i64, 0.25f64, "x", &v[..]]).unwrap();
        db.execute(
            "INSERT INTO t VALUES (?1, ?2, ?3, ?4)",
            p![Option::<i64>::None, None::<f64>, None::<&str>, None::<&[f32]>],
        )
        .unwrap();
        let rows = db
            .rows("SELECT i, r, s, b FROM t ORDER BY rowid", &[], |r| {
                Ok((
                    r.get::<Option<i64>>(0)?,
                    r.get::<Option<f64>>(1)?,
                    r.get::<Option<String>>(2)?,
                    r.get::<Option<Vec<f32>>>(3)?,
                ))
            })
            .unwrap();
        assert_eq!(rows[0], (Some(7), Some(0.25), Some("x".to_owned()), Some(v.to_vec())));
        assert_eq!(rows[1], (None, None, None, None));
        let err = db.one::<i64>("SELECT s FROM t WHERE s IS NOT NULL", &[]).unwrap_err();
        assert_eq!(err.to_string(), "database: column 0: expected an integer, found text");
        let list = [3i64, 5];
        let n: i64 = db
            .one("SELECT count(*) FROM (SELECT 3 AS x UNION SELECT 4 UNION SELECT 5) WHERE x IN (SELECT value FROM json_each(?1))", &[Param::Ints(&list)])
            .unwrap();
        assert_eq!(n, 2);
        let texts = [Some("a"), None, Some("c\"d")];
        let found: Vec<Option<String>> = db
            .rows("SELECT value FROM json_each(?1) ORDER BY key", &[Param::Texts(&texts)], |r| r.get(0))
            .unwrap();
        assert_eq!(found, vec![Some("a".to_owned()), None, Some("c\"d".to_owned())]);
        let v: &[f32] = &[1.0];
        let err = db.one::<i64>("SELECT ?1", &[Param::Vectors(&[v])]).unwrap_err();
        assert!(err.to_string().contains("no SQLite form"), "{err}");
    }
}
