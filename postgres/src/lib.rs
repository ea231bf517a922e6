//! mnemon's store in a PostgreSQL database with pgvector.
//!
//! [`PgBackend`] implements [`mnemon_backend::Backend`]: it connects, runs the statements the
//! engine's `store/` module writes once for both databases (translating `?N` to `$N`, binding
//! each value as the type the statement's parameter has), and holds the locks a store needs
//! across processes, all of them PostgreSQL advisory locks keyed by the store's schema:
//!
//! - write locks, transaction-scoped: a write for some users takes the store's lock shared and
//!   each user's lock exclusive (in one order), so writes for one user are serialized across
//!   every process on the database, as SQLite's `BEGIN IMMEDIATE` serializes a file's, while
//!   other users' writes go on beside them; a write on the whole store (an import, a migration)
//!   takes the store's lock exclusive;
//! - extraction claims, session-scoped: a process extracts a user's queued rounds only while it
//!   holds that user's claim, so no round is extracted twice, each user's rounds are settled in
//!   order, and several processes extract different users' rounds in parallel. A claim ends with
//!   its connection: a crashed process's users are claimed by the next one that looks.
//!
//! The library itself stays free of an async runtime: the `postgres` client's runtime lives in
//! this crate.
//!
//! mnemon opens a `postgres://` location through it (its `postgres` feature), or takes one as a
//! backend:
//!
//! ```no_run
//! use std::sync::Arc;
//! use mnemon::{Memory, Message};
//! use mnemon::embed::HashingEmbedder;
//! use mnemon::stores::Location;
//! let backend = mnemon_postgres::PgBackend::new("postgres://mnemon@db.internal:5432/memories")?;
//! let memory = Memory::builder(Location::Backend(Arc::new(backend))).embedder(HashingEmbedder::default()).open()?;
//! memory.add(&[Message::user("I moved to Lisbon.", "2026-03-01T10:00:00")], "alice")?;
//! # Ok::<(), mnemon::Error>(())
//! ```

#![deny(missing_docs)]

pub mod tls;

use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::str::FromStr;
use std::sync::Arc;

use mnemon_backend::{Backend, Claims, Connection, Db, Dialect, Error, Param, Result, Row, Value};
use postgres::types::{IsNull, ToSql, Type};
use postgres::{Client, NoTls, Statement};

/// The first key of the store's write locks (a two-key advisory lock): its schema's. The second
/// is 0 for the whole store, a user's [`user_key`] for the user.
const WRITE_LOCKS: &str = "hashtext(current_schema())";
/// The first key of the store's extraction claims; the second is the user's row id.
const CLAIMS: &str = "hashtext(current_schema() || '/extract')";

/// A user's write lock key: a hash of the name (FNV-1a), never 0 (the whole store's). Two names
/// with one key serialize each other's writes, nothing worse.
fn user_key(name: &str) -> i32 {
    let hash = name.bytes().fold(0x811c_9dc5_u32, |h, b| (h ^ u32::from(b)).wrapping_mul(0x0100_0193));
    match i32::from_ne_bytes(hash.to_ne_bytes()) {
        0 => 1,
        key => key,
    }
}

/// A store's database on a PostgreSQL server (with the pgvector extension).
#[derive(Clone)]
pub struct PgBackend {
    config: Arc<postgres::Config>,
    /// TLS for `sslmode` other than `disable`.
    tls: Option<tokio_postgres_rustls::MakeRustlsConnect>,
    location: String,
    approximate: bool,
    /// The store's own schema, if it has one, and whether it is known to exist.
    schema: Option<Arc<(String, std::sync::atomic::AtomicBool)>>,
}

impl std::fmt::Debug for PgBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgBackend").field("location", &self.location).finish()
    }
}

/// Whether `reference` names a PostgreSQL database (`postgres://` or `postgresql://`).
fn is_url(reference: &str) -> bool {
    reference.starts_with("postgres://") || reference.starts_with("postgresql://")
}

impl PgBackend {
    /// A backend for the database at `url` (`postgres://user[:password]@host[:port]/database`,
    /// or any libpq connection string). A URL's `schema=name` parameter puts the store in that
    /// schema ([`schema`](PgBackend::schema)): `postgres://mnemon@db/memories?schema=project_a`.
    /// `sslmode` and `sslrootcert` secure the connection as libpq's do ([`tls`]; the default,
    /// `prefer`, encrypts when the server offers TLS). Nothing connects until the store is
    /// opened.
    pub fn new(url: &str) -> Result<PgBackend> {
        let (url, tls) = tls::Tls::split(url)?;
        let (url, schema) = split_schema(&url);
        let backend = PgBackend::without_schema(&url, &tls)?;
        match schema {
            Some(name) => backend.schema(&name),
            None => Ok(backend),
        }
    }

    fn without_schema(url: &str, tls: &tls::Tls) -> Result<PgBackend> {
        let mut config = postgres::Config::from_str(url).map_err(|e| Error::InvalidInput {
            field: "db".into(),
            reason: format!("not a PostgreSQL URL: {e}"),
        })?;
        config.ssl_mode(match tls.mode {
            tls::SslMode::Disable => postgres::config::SslMode::Disable,
            tls::SslMode::Prefer => postgres::config::SslMode::Prefer,
            _ => postgres::config::SslMode::Require,
        });
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(std::time::Duration::from_secs(10));
        }
        config.application_name("mnemon");
        Ok(PgBackend {
            location: location(&config),
            config: Arc::new(config),
            tls: tls.client_config()?.map(tokio_postgres_rustls::MakeRustlsConnect::new),
            approximate: false,
            schema: None,
        })
    }

    /// The same database, the store in the schema `name` (created at the first connection if
    /// missing), so that one database holds several stores, one per schema. Its search path is
    /// `name, public` (pgvector's types are found in `public`). `name`: lowercase ASCII letters,
    /// digits and `_`, 1 to 63 bytes, starting with a letter or `_`, not `pg_…`.
    pub fn schema(mut self, name: &str) -> Result<PgBackend> {
        let valid = !name.is_empty()
            && name.len() <= 63
            && !name.starts_with("pg_")
            && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
            && !name.as_bytes()[0].is_ascii_digit();
        if !valid {
            return Err(Error::InvalidInput {
                field: "schema".into(),
                reason: format!(
                    "{name:?} is not a schema name mnemon takes (lowercase letters, digits and _, \
                     1 to 63 bytes, not starting with a digit or pg_)"
                ),
            });
        }
        self = self.with_options(&format!("-c search_path={name},public"));
        self.location = format!("{}?schema={name}", self.location);
        self.schema = Some(Arc::new((name.to_owned(), std::sync::atomic::AtomicBool::new(false))));
        Ok(self)
    }

    /// The same database, letting its nearest-neighbour search use pgvector's HNSW index
    /// (created at open if missing; iterative scans, so a user's filter still finds `k`
    /// rounds). Approximate: see [`Backend::approximate`].
    pub fn approximate(mut self, on: bool) -> PgBackend {
        if on && !self.approximate {
            self = self.with_options("-c hnsw.iterative_scan=relaxed_order -c hnsw.ef_search=100");
        }
        self.approximate = on;
        self
    }

    /// Adds server settings to every connection's startup options.
    fn with_options(mut self, more: &str) -> PgBackend {
        let mut config = (*self.config).clone();
        let options = match config.get_options() {
            Some(o) if !o.is_empty() => format!("{o} {more}"),
            _ => more.to_owned(),
        };
        config.options(&options);
        self.config = Arc::new(config);
        self
    }

    fn client(&self) -> Result<Client> {
        let error = |e: &postgres::Error| {
            Error::Database(format!("cannot connect to {}: {}", self.location, cause(e)))
        };
        let mut client = match &self.tls {
            None => self.config.connect(NoTls),
            Some(tls) => self.config.connect(tls.clone()),
        }
        .map_err(|e| error(&e))?;
        if let Some(schema) = &self.schema {
            let (name, known) = &**schema;
            if !known.load(std::sync::atomic::Ordering::Acquire) {
                // Looked for first: creating needs a privilege that using does not.
                let exists = client
                    .query_one("SELECT count(*) FROM pg_namespace WHERE nspname = $1", &[name])
                    .map_err(|e| error(&e))?
                    .get::<_, i64>(0)
                    > 0;
                if !exists {
                    client.batch_execute(&format!("CREATE SCHEMA IF NOT EXISTS {name}")).map_err(|e| {
                        Error::Database(format!(
                            "cannot create the schema {name} in {}: {}",
                            self.location,
                            cause(&e)
                        ))
                    })?;
                }
                known.store(true, std::sync::atomic::Ordering::Release);
            }
        }
        Ok(client)
    }
}

/// A URL without its `schema=` parameter, and that parameter's value.
fn split_schema(url: &str) -> (String, Option<String>) {
    let Some((base, query)) = url.split_once('?').filter(|_| is_url(url)) else {
        return (url.to_owned(), None);
    };
    let (mut rest, mut schema) = (Vec::new(), None);
    for pair in query.split('&') {
        match pair.strip_prefix("schema=") {
            Some(name) => schema = Some(name.to_owned()),
            None => rest.push(pair),
        }
    }
    if rest.is_empty() {
        (base.to_owned(), schema)
    } else {
        (format!("{base}?{}", rest.join("&")), schema)
    }
}

/// `postgres://user@host:port/database`, without the password.
fn location(config: &postgres::Config) -> String {
    let host = config
        .get_hosts()
        .first()
        .map(|h| match h {
            postgres::config::Host::Tcp(h) => h.clone(),
            postgres::config::Host::Unix(p) => p.display().to_string(),
        })
        .unwrap_or_default();
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let user = config.get_user().map(|u| format!("{u}@")).unwrap_or_default();
    format!("postgres://{user}{host}:{port}/{}", config.get_dbname().unwrap_or(""))
}

/// The error's whole chain in one line (the client's top message alone often says only "error
/// connecting to server").
fn cause(e: &postgres::Error) -> String {
    let mut out = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

fn db_error(e: &postgres::Error) -> Error {
    if let Some(code) = e.code() {
        // A lock timeout, or a statement cancelled by a timeout: the caller may retry.
        if *code == postgres::error::SqlState::LOCK_NOT_AVAILABLE
            || *code == postgres::error::SqlState::QUERY_CANCELED
        {
            return Error::Busy;
        }
    }
    Error::Database(cause(e))
}

impl Backend for PgBackend {
    fn connect(&self) -> Result<Box<dyn Connection>> {
        Ok(Box::new(PgConnection {
            client: RefCell::new(self.client()?),
            statements: RefCell::default(),
            backend: self.clone(),
            in_transaction: Cell::new(false),
        }))
    }

    fn location(&self) -> String {
        self.location.clone()
    }

    fn approximate(&self) -> bool {
        self.approximate
    }

    fn identity(&self) -> Result<Option<String>> {
        let mut client = self.client()?;
        let row = client
            .query_one(
                "SELECT pg_postmaster_start_time()::text || '/' || current_database() || '/' || \
                 coalesce(current_schema(), '')",
                &[],
            )
            .map_err(|e| Error::Database(format!("{}: {}", self.location, cause(&e))))?;
        Ok(Some(row.get(0)))
    }

    fn extraction_claims(&self) -> Result<Box<dyn Claims>> {
        Ok(Box::new(PgClaims { client: self.client()?, backend: self.clone(), held: 0 }))
    }
}

/// Extraction claims: session-scoped advisory locks on one connection of their own, so that they
/// end with it. A connection the server dropped while it held no claim is replaced.
struct PgClaims {
    client: Client,
    backend: PgBackend,
    /// Claims taken and not released.
    held: usize,
}

impl Claims for PgClaims {
    fn try_claim(&mut self, user: i64) -> Result<bool> {
        let sql = format!("SELECT pg_try_advisory_lock({CLAIMS}, ($1::bigint % 2147483647)::int4)");
        let mut taken = self.client.query_one(sql.as_str(), &[&user]);
        if taken.is_err() && self.client.is_closed() && self.held == 0 {
            // Dropped with no claim on it: nothing was lost with it.
            tracing::warn!(location = %self.backend.location, "claims connection lost; reconnecting");
            self.client = self.backend.client()?;
            taken = self.client.query_one(sql.as_str(), &[&user]);
        }
        let taken: bool = taken.map_err(|e| db_error(&e))?.get(0);
        self.held += usize::from(taken);
        Ok(taken)
    }

    fn release(&mut self, user: i64) -> Result<()> {
        let sql = format!("SELECT pg_advisory_unlock({CLAIMS}, ($1::bigint % 2147483647)::int4)");
        self.client.query_one(sql.as_str(), &[&user]).map_err(|e| db_error(&e))?;
        self.held = self.held.saturating_sub(1);
        Ok(())
    }
}

/// One connection, with its prepared statements by their text. A connection the server dropped
/// (a restart, a terminated backend, a network cut) is replaced at the next statement outside a
/// transaction; inside one, the transaction is lost (the server rolled it back) and the call
/// fails, writing nothing.
struct PgConnection {
    client: RefCell<Client>,
    statements: RefCell<HashMap<String, Statement>>,
    backend: PgBackend,
    in_transaction: Cell<bool>,
}

impl PgConnection {
    /// Replaces a dropped connection when no transaction depended on it.
    fn ensure_open(&self) -> Result<()> {
        if !self.client.borrow().is_closed() {
            return Ok(());
        }
        if self.in_transaction.get() {
            return Err(Error::Database(format!(
                "the connection to {} was lost inside a transaction; nothing of it was written",
                self.backend.location
            )));
        }
        tracing::warn!(location = %self.backend.location, "connection lost; reconnecting");
        *self.client.borrow_mut() = self.backend.client()?;
        self.statements.borrow_mut().clear();
        Ok(())
    }

    fn prepare(&self, sql: &str) -> Result<Statement> {
        self.ensure_open()?;
        if let Some(s) = self.statements.borrow().get(sql) {
            return Ok(s.clone());
        }
        let statement = self
            .client
            .borrow_mut()
            .prepare(&numbered(sql))
            .map_err(|e| Error::Database(format!("{}; in: {sql}", cause(&e))))?;
        let mut cache = self.statements.borrow_mut();
        // A bound on what a long-lived connection keeps (statements built per filter vary).
        if cache.len() >= 512 {
            cache.clear();
        }
        cache.insert(sql.to_owned(), statement.clone());
        Ok(statement)
    }
}

/// `sql` with SQLite's `?N` placeholders as PostgreSQL's `$N` (string literals left alone).
fn numbered(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut quoted = false;
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\'' {
            quoted = !quoted;
        }
        if c == '?' && !quoted && chars.peek().is_some_and(char::is_ascii_digit) {
            out.push('$');
        } else {
            out.push(c);
        }
    }
    out
}

/// A bound value, encoded as whatever type PostgreSQL inferred for its parameter.
#[derive(Debug)]
struct Bound<'a>(Param<'a>);

type EncodeResult = std::result::Result<IsNull, Box<dyn std::error::Error + Sync + Send>>;

impl ToSql for Bound<'_> {
    fn to_sql(&self, ty: &Type, out: &mut postgres::types::private::BytesMut) -> EncodeResult {
        match self.0 {
            Param::Null => Ok(IsNull::Yes),
            Param::Int(i) => match *ty {
                Type::INT2 => i16::try_from(i)?.to_sql(ty, out),
                Type::INT4 => i32::try_from(i)?.to_sql(ty, out),
                Type::INT8 => i.to_sql(ty, out),
                #[allow(clippy::cast_precision_loss)]
                Type::FLOAT8 => (i as f64).to_sql(ty, out),
                #[allow(clippy::cast_precision_loss)]
                Type::FLOAT4 => (i as f32).to_sql(ty, out),
                Type::BOOL => (i != 0).to_sql(ty, out),
                _ => i.to_string().as_str().to_sql(ty, out),
            },
            Param::Real(r) => match *ty {
                #[allow(clippy::cast_possible_truncation)]
                Type::FLOAT4 => (r as f32).to_sql(ty, out),
                _ => r.to_sql(ty, out),
            },
            Param::Text(t) => t.to_sql(ty, out),
            Param::Blob(b) => b.to_sql(ty, out),
            Param::Vector(v) => pgvector::Vector::from(v.to_vec()).to_sql(ty, out),
            Param::Ints(list) => list.to_sql(ty, out),
            Param::Texts(list) => list.to_sql(ty, out),
            Param::Vectors(list) => {
                list.iter().map(|v| pgvector::Vector::from(v.to_vec())).collect::<Vec<_>>().to_sql(ty, out)
            }
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    postgres::types::to_sql_checked!();
}

/// `f` with `params` bound as the client takes them.
fn bound<T>(params: &[Param<'_>], f: impl FnOnce(&[&(dyn ToSql + Sync)]) -> T) -> T {
    let bound: Vec<Bound<'_>> = params.iter().map(|p| Bound(*p)).collect();
    let refs: Vec<&(dyn ToSql + Sync)> = bound.iter().map(|b| b as &(dyn ToSql + Sync)).collect();
    f(&refs)
}

/// A row, read by the type of each column.
struct PgRow(postgres::Row);

impl Row for PgRow {
    fn value(&self, i: usize) -> Result<Value<'_>> {
        let column = self.0.columns().get(i).ok_or_else(|| Error::Database(format!("no column {i}")))?;
        let wrong = |e: postgres::Error| Error::Database(format!("column {i}: {e}"));
        let ty = column.type_();
        Ok(match *ty {
            Type::INT2 => self
                .0
                .try_get::<_, Option<i16>>(i)
                .map_err(wrong)?
                .map_or(Value::Null, |v| Value::Int(v.into())),
            Type::INT4 => self
                .0
                .try_get::<_, Option<i32>>(i)
                .map_err(wrong)?
                .map_or(Value::Null, |v| Value::Int(v.into())),
            Type::INT8 => self.0.try_get::<_, Option<i64>>(i).map_err(wrong)?.map_or(Value::Null, Value::Int),
            Type::FLOAT4 => self
                .0
                .try_get::<_, Option<f32>>(i)
                .map_err(wrong)?
                .map_or(Value::Null, |v| Value::Real(v.into())),
            Type::FLOAT8 => {
                self.0.try_get::<_, Option<f64>>(i).map_err(wrong)?.map_or(Value::Null, Value::Real)
            }
            Type::BOOL => {
                self.0.try_get::<_, Option<bool>>(i).map_err(wrong)?.map_or(Value::Null, Value::Bool)
            }
            Type::BYTEA => self
                .0
                .try_get::<_, Option<&[u8]>>(i)
                .map_err(wrong)?
                .map_or(Value::Null, |v| Value::Blob(Cow::Borrowed(v))),
            _ if ty.name() == "vector" => self
                .0
                .try_get::<_, Option<pgvector::Vector>>(i)
                .map_err(wrong)?
                .map_or(Value::Null, |v| Value::Vector(Cow::Owned(v.to_vec()))),
            _ => self
                .0
                .try_get::<_, Option<&str>>(i)
                .map_err(wrong)?
                .map_or(Value::Null, |v| Value::Text(Cow::Borrowed(v))),
        })
    }
}

impl Db for PgConnection {
    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }

    fn query(
        &self,
        sql: &str,
        params: &[Param<'_>],
        each: &mut dyn FnMut(&dyn Row) -> Result<()>,
    ) -> Result<()> {
        let statement = self.prepare(sql)?;
        let rows = bound(params, |refs| self.client.borrow_mut().query(&statement, refs))
            .map_err(|e| db_error(&e))?;
        for row in rows {
            each(&PgRow(row))?;
        }
        Ok(())
    }

    fn execute(&self, sql: &str, params: &[Param<'_>]) -> Result<u64> {
        let statement = self.prepare(sql)?;
        bound(params, |refs| self.client.borrow_mut().execute(&statement, refs)).map_err(|e| db_error(&e))
    }

    fn batch(&self, sql: &str) -> Result<()> {
        self.ensure_open()?;
        self.client.borrow_mut().batch_execute(sql).map_err(|e| db_error(&e))
    }
}

impl PgConnection {
    fn begin(&self, sql: &str) -> Result<()> {
        if let Err(e) = self.batch(sql) {
            // A lock not taken in time (`lock_timeout`) leaves the transaction begun and failed:
            // it ends here, so the connection serves the caller's retry.
            if !self.client.borrow().is_closed() {
                let _ = self.batch("ROLLBACK");
            }
            return Err(e);
        }
        self.in_transaction.set(true);
        Ok(())
    }

    fn end(&self, sql: &str) -> Result<()> {
        let was = self.in_transaction.replace(false);
        if was && self.client.borrow().is_closed() {
            // The server ended the session, and with it the transaction.
            return if sql == "ROLLBACK" {
                Ok(())
            } else {
                Err(Error::Database(format!(
                    "the connection to {} was lost before the commit; nothing of the transaction was written",
                    self.backend.location
                )))
            };
        }
        self.batch(sql)
    }
}

impl Connection for PgConnection {
    fn begin_write(&self) -> Result<()> {
        self.begin(&format!("BEGIN; SELECT pg_advisory_xact_lock({WRITE_LOCKS}, 0)"))
    }

    fn begin_user_write(&self, users: &[&str]) -> Result<()> {
        let mut keys: Vec<i32> = users.iter().map(|u| user_key(u)).collect();
        keys.sort_unstable();
        keys.dedup();
        let mut sql = format!("BEGIN; SELECT pg_advisory_xact_lock_shared({WRITE_LOCKS}, 0)");
        for key in keys {
            sql.push_str(&format!("; SELECT pg_advisory_xact_lock({WRITE_LOCKS}, {key})"));
        }
        self.begin(&sql)
    }

    fn begin_read(&self) -> Result<()> {
        self.begin("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
    }

    fn commit(&self) -> Result<()> {
        self.end("COMMIT")
    }

    fn rollback(&self) -> Result<()> {
        self.end("ROLLBACK")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_numbered_outside_string_literals() {
        assert_eq!(
            numbered("SELECT ?1, '?2', ?12 FROM t WHERE a = ?3"),
            "SELECT $1, '?2', $12 FROM t WHERE a = $3"
        );
        assert_eq!(numbered("SELECT 'it''s ?1' || ?1"), "SELECT 'it''s ?1' || $1");
    }

    #[test]
    fn user_keys_differ_by_name_and_are_never_the_whole_stores() {
        let keys: std::collections::BTreeSet<i32> =
            ["alice", "bob", "carol", "dave", "", "é"].iter().map(|n| user_key(n)).collect();
        assert_eq!(keys.len(), 6);
        assert!(!keys.contains(&0));
    }

    #[test]
    fn a_urls_schema_parameter_names_the_stores_schema() {
        assert_eq!(
            split_schema("postgres://h/db?schema=a_1"),
            ("postgres://h/db".into(), Some("a_1".into()))
        );
        assert_eq!(
            split_schema("postgres://h/db?sslmode=disable&schema=a&connect_timeout=3"),
            ("postgres://h/db?sslmode=disable&connect_timeout=3".into(), Some("a".into()))
        );
        assert_eq!(split_schema("host=h dbname=db"), ("host=h dbname=db".into(), None));
        let b = PgBackend::new("postgres://ann:secret@db.example/mem?schema=proj").unwrap();
        assert_eq!(b.location(), "postgres://ann@db.example:5432/mem?schema=proj");
        assert!(PgBackend::new("postgres://db.example/mem?schema=Proj").is_err());
    }

    #[test]
    fn a_location_never_shows_the_password() {
        let b = PgBackend::new("postgres://ann:secret@db.example:6543/mem").unwrap();
        assert_eq!(b.location(), "postgres://ann@db.example:6543/mem");
        let e = PgBackend::new("postgres://ann@db.example:port/mem").unwrap_err();
        assert!(e.to_string().contains("db: not a PostgreSQL URL"), "{e}");
    }
}
