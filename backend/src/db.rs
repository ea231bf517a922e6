//! The one interface between the store's statements and a database: run a statement with bound
//! values, read the rows it returns, open and end transactions.
//!
//! Every statement the engine runs is written once, in `store/`, in the SQL that SQLite and
//! PostgreSQL share (`?N` placeholders, `ON CONFLICT`, `RETURNING`, `IS NOT DISTINCT FROM`); the
//! few places where the two differ branch on [`Dialect`]. A backend implements [`Db`] for its
//! connection: SQLite's is in this crate, PostgreSQL's in `mnemon-postgres` (its client runs an
//! async runtime, which the engine must not). So both stores run the same statements,
//! read the same rows and hand the same values to the one ranking: the same input gives the same
//! records, contexts and exports on either.

use std::borrow::Cow;

use crate::error::{Error, Result};

/// Which SQL a [`Db`] speaks where the two differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// SQLite 3.35 or later, with sqlite-vec and FTS5.
    Sqlite,
    /// PostgreSQL 13 or later, with pgvector.
    Postgres,
}

/// A value bound to a statement's `?N`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Param<'a> {
    /// SQL NULL.
    Null,
    /// A 64-bit integer.
    Int(i64),
    /// A double.
    Real(f64),
    /// UTF-8 text.
    Text(&'a str),
    /// Bytes.
    Blob(&'a [u8]),
    /// An embedding: a little-endian `f32` blob in SQLite, a pgvector `vector` in PostgreSQL.
    Vector(&'a [f32]),
    /// A list of integers (for `= ANY(?N)` in PostgreSQL; SQLite statements take lists as JSON text).
    Ints(&'a [i64]),
    /// A list of texts, any of them NULL (PostgreSQL: `?N::text[]`; SQLite: JSON text).
    Texts(&'a [Option<&'a str>]),
    /// A list of embeddings (PostgreSQL only: `?N::vector[]`, for a statement that writes many
    /// rows at once through `unnest`; SQLite refuses it: it writes a vector a row).
    Vectors(&'a [&'a [f32]]),
}

/// A value read from a row.
#[derive(Debug, Clone, PartialEq)]
pub enum Value<'a> {
    /// SQL NULL.
    Null,
    /// An integer of any width.
    Int(i64),
    /// A real of any width.
    Real(f64),
    /// A boolean (PostgreSQL; SQLite has integers).
    Bool(bool),
    /// Text.
    Text(Cow<'a, str>),
    /// Bytes (in SQLite, also an embedding).
    Blob(Cow<'a, [u8]>),
    /// A pgvector `vector`.
    Vector(Cow<'a, [f32]>),
}

/// One row of a result, read by column index.
pub trait Row {
    /// Column `i`'s value.
    fn value(&self, i: usize) -> Result<Value<'_>>;
}

/// A connection to a store's database. Statements use `?1`, `?2`, … placeholders; a backend whose
/// database numbers them otherwise rewrites them (outside string literals).
pub trait Db {
    /// The SQL this connection speaks.
    fn dialect(&self) -> Dialect;
    /// Runs `sql` with `params`, calling `each` on every row it returns, in order.
    fn query(
        &self,
        sql: &str,
        params: &[Param<'_>],
        each: &mut dyn FnMut(&dyn Row) -> Result<()>,
    ) -> Result<()>;
    /// Runs `sql` with `params`; returns the rows it changed.
    fn execute(&self, sql: &str, params: &[Param<'_>]) -> Result<u64>;
    /// Runs statements without parameters, separated by semicolons.
    fn batch(&self, sql: &str) -> Result<()>;
}

/// A connection of a backend other than SQLite files (PostgreSQL's, in `mnemon-postgres`), with
/// its transactions. A handle keeps one for writes and a pool of them for reads.
pub trait Connection: Db + Send {
    /// Starts a write transaction that no other writer of the same database runs beside (in
    /// any process): the writes of one store are serialized, as SQLite's `BEGIN IMMEDIATE` does.
    fn begin_write(&self) -> Result<()>;
    /// Starts a write transaction for the records of `users` (names) alone: no other
    /// transaction for any of them, and no [`begin_write`](Connection::begin_write) transaction,
    /// runs beside it, in any process; writes for other users go on in parallel. The locks are
    /// taken in one order, so two such transactions never wait for each other in a cycle.
    fn begin_user_write(&self, users: &[&str]) -> Result<()>;
    /// Starts a read-only transaction on one snapshot of the database.
    fn begin_read(&self) -> Result<()>;
    /// Commits the open transaction (a no-op without one).
    fn commit(&self) -> Result<()>;
    /// Rolls the open transaction back (a no-op without one).
    fn rollback(&self) -> Result<()>;
}

/// A store's database on a server: makes connections, and holds the claims a store needs across
/// processes besides the writers' locks (extraction's: so no round is extracted twice).
pub trait Backend: Send + Sync {
    /// A new connection.
    fn connect(&self) -> Result<Box<dyn Connection>>;
    /// Where the database is, for messages: no password.
    fn location(&self) -> String;
    /// A new holder of extraction claims on the store's users (its own connection).
    fn extraction_claims(&self) -> Result<Box<dyn Claims>>;
    /// Whether the database's own nearest-neighbour search may use an approximate index
    /// (pgvector's HNSW), created at open if missing. Off by default: the index gives up
    /// exactness. The engine's ranking never depends on it (it scans the view's exact
    /// vectors); only `Memory::nearest_in_database` does.
    fn approximate(&self) -> bool {
        false
    }
    /// What names this store whatever the URL it was reached by (for PostgreSQL: the server's
    /// start time, the database and the schema), to refuse moving notes from a store into itself;
    /// `None` when the backend cannot tell, and then the locations are compared.
    fn identity(&self) -> Result<Option<String>> {
        Ok(None)
    }
}

/// One process's claims on users' queued rounds. A user's rounds are extracted by one claim
/// holder at a time, in order (a user's facts settle in round order); different users' rounds by
/// several holders, in several processes, in parallel. A claim lasts until it is released or its
/// holder's connection ends (its process stopped or crashed): it never outlives its holder.
pub trait Claims: Send {
    /// Claims `user` (the user's row id), unless another holder has: `false` then.
    fn try_claim(&mut self, user: i64) -> Result<bool>;
    /// Lets go of a claim this holder took.
    fn release(&mut self, user: i64) -> Result<()>;
}

impl dyn Row + '_ {
    /// Column `i` as a `T`.
    pub fn get<T: FromValue>(&self, i: usize) -> Result<T> {
        T::from_value(self.value(i)?)
            .map_err(|found| Error::Database(format!("column {i}: expected {}, found {found}", T::EXPECTED)))
    }

    /// Appends column `i`, an embedding, to `out`.
    pub fn extend_vector(&self, i: usize, out: &mut Vec<f32>) -> Result<()> {
        match self.value(i)? {
            Value::Blob(b) => out.extend(blob_floats(&b)),
            Value::Vector(v) => out.extend_from_slice(&v),
            other => {
                return Err(Error::Database(format!("column {i}: expected a vector, found {}", kind(&other))))
            }
        }
        Ok(())
    }
}

impl dyn Db + '_ {
    /// The rows of `sql`, each mapped by `map`.
    pub fn rows<T>(
        &self,
        sql: &str,
        params: &[Param<'_>],
        mut map: impl FnMut(&dyn Row) -> Result<T>,
    ) -> Result<Vec<T>> {
        let mut out = Vec::new();
        self.query(sql, params, &mut |r| {
            out.push(map(r)?);
            Ok(())
        })?;
        Ok(out)
    }

    /// The first row of `sql` mapped by `map`, if there is one.
    pub fn row<T>(
        &self,
        sql: &str,
        params: &[Param<'_>],
        map: impl FnOnce(&dyn Row) -> Result<T>,
    ) -> Result<Option<T>> {
        let mut map = Some(map);
        let mut out = None;
        self.query(sql, params, &mut |r| {
            if let Some(m) = map.take() {
                out = Some(m(r)?);
            }
            Ok(())
        })?;
        Ok(out)
    }

    /// Column 0 of the first row of `sql`, which must return one.
    pub fn one<T: FromValue>(&self, sql: &str, params: &[Param<'_>]) -> Result<T> {
        self.row(sql, params, |r| r.get(0))?
            .ok_or_else(|| Error::Database(format!("no row returned by: {sql}")))
    }

    /// Column 0 of the first row of `sql`, if there is one.
    pub fn opt<T: FromValue>(&self, sql: &str, params: &[Param<'_>]) -> Result<Option<T>> {
        self.row(sql, params, |r| r.get(0))
    }
}

fn kind(v: &Value<'_>) -> &'static str {
    match v {
        Value::Null => "NULL",
        Value::Int(_) => "an integer",
        Value::Real(_) => "a real",
        Value::Bool(_) => "a boolean",
        Value::Text(_) => "text",
        Value::Blob(_) => "a blob",
        Value::Vector(_) => "a vector",
    }
}

/// A column type a row can be read as.
pub trait FromValue: Sized {
    /// What a value of this type is called in an error.
    const EXPECTED: &'static str;
    /// The value as `Self`, or what was found instead.
    fn from_value(v: Value<'_>) -> std::result::Result<Self, &'static str>;
}

impl FromValue for i64 {
    const EXPECTED: &'static str = "an integer";
    fn from_value(v: Value<'_>) -> std::result::Result<Self, &'static str> {
        match v {
            Value::Int(i) => Ok(i),
            Value::Bool(b) => Ok(i64::from(b)),
            other => Err(kind(&other)),
        }
    }
}

impl FromValue for i32 {
    const EXPECTED: &'static str = "a 32-bit integer";
    fn from_value(v: Value<'_>) -> std::result::Result<Self, &'static str> {
        i32::try_from(i64::from_value(v)?).map_err(|_| "an integer out of range")
    }
}

impl FromValue for f64 {
    const EXPECTED: &'static str = "a real";
    fn from_value(v: Value<'_>) -> std::result::Result<Self, &'static str> {
        match v {
            Value::Real(r) => Ok(r),
            #[allow(clippy::cast_precision_loss)]
            Value::Int(i) => Ok(i as f64),
            other => Err(kind(&other)),
        }
    }
}

impl FromValue for f32 {
    const EXPECTED: &'static str = "a real";
    #[allow(clippy::cast_possible_truncation)]
    fn from_value(v: Value<'_>) -> std::result::Result<Self, &'static str> {
        f64::from_value(v).map(|r| r as f32)
    }
}

impl FromValue for bool {
    const EXPECTED: &'static str = "a boolean";
    fn from_value(v: Value<'_>) -> std::result::Result<Self, &'static str> {
        match v {
            Value::Bool(b) => Ok(b),
            Value::Int(i) => Ok(i != 0),
            other => Err(kind(&other)),
        }
    }
}

impl FromValue for String {
    const EXPECTED: &'static str = "text";
    fn from_value(v: Value<'_>) -> std::result::Result<Self, &'static str> {
        match v {
            Value::Text(t) => Ok(t.into_owned()),
            other => Err(kind(&other)),
        }
    }
}

impl FromValue for Vec<f32> {
    const EXPECTED: &'static str = "a vector";
    fn from_value(v: Value<'_>) -> std::result::Result<Self, &'static str> {
        match v {
            Value::Blob(b) => Ok(blob_floats(&b).collect()),
            Value::Vector(v) => Ok(v.into_owned()),
            other => Err(kind(&other)),
        }
    }
}

impl<T: FromValue> FromValue for Option<T> {
    const EXPECTED: &'static str = T::EXPECTED;
    fn from_value(v: Value<'_>) -> std::result::Result<Self, &'static str> {
        match v {
            Value::Null => Ok(None),
            v => T::from_value(v).map(Some),
        }
    }
}

fn blob_floats(b: &[u8]) -> impl Iterator<Item = f32> + '_ {
    b.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
}

impl From<i64> for Param<'_> {
    fn from(v: i64) -> Self {
        Param::Int(v)
    }
}
impl From<&i64> for Param<'_> {
    fn from(v: &i64) -> Self {
        Param::Int(*v)
    }
}
impl From<i32> for Param<'_> {
    fn from(v: i32) -> Self {
        Param::Int(i64::from(v))
    }
}
impl From<&i32> for Param<'_> {
    fn from(v: &i32) -> Self {
        Param::Int(i64::from(*v))
    }
}
impl From<usize> for Param<'_> {
    fn from(v: usize) -> Self {
        Param::Int(i64::try_from(v).unwrap_or(i64::MAX))
    }
}
impl From<f64> for Param<'_> {
    fn from(v: f64) -> Self {
        Param::Real(v)
    }
}
impl From<f32> for Param<'_> {
    fn from(v: f32) -> Self {
        Param::Real(f64::from(v))
    }
}
impl<'a> From<&'a str> for Param<'a> {
    fn from(v: &'a str) -> Self {
        Param::Text(v)
    }
}
impl<'a> From<&'a &str> for Param<'a> {
    fn from(v: &'a &str) -> Self {
        Param::Text(v)
    }
}
impl<'a> From<&'a String> for Param<'a> {
    fn from(v: &'a String) -> Self {
        Param::Text(v)
    }
}
impl<'a> From<&'a [f32]> for Param<'a> {
    fn from(v: &'a [f32]) -> Self {
        Param::Vector(v)
    }
}
impl<'a> From<&'a Vec<f32>> for Param<'a> {
    fn from(v: &'a Vec<f32>) -> Self {
        Param::Vector(v)
    }
}
impl<'a, T> From<Option<T>> for Param<'a>
where
    T: Into<Param<'a>>,
{
    fn from(v: Option<T>) -> Self {
        v.map_or(Param::Null, Into::into)
    }
}
impl<'a> From<&'a Option<String>> for Param<'a> {
    fn from(v: &'a Option<String>) -> Self {
        v.as_deref().map_or(Param::Null, Param::Text)
    }
}
impl<'a> From<&'a Option<i64>> for Param<'a> {
    fn from(v: &'a Option<i64>) -> Self {
        v.map_or(Param::Null, Param::Int)
    }
}

/// Bound values for a statement: `p![a, b, c]`.
#[macro_export]
macro_rules! p {
    ($($v:expr),* $(,)?) => {
        &[$($crate::Param::from($v)),*][..]
    };
}
