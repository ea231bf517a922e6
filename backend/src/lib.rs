//! What mnemon and its database backends share: the one [`Error`] type, and [`Db`], the
//! interface between the store's statements and a database, with SQLite's implementation.
//!
//! A backend (PostgreSQL's is `mnemon-postgres`) implements [`Backend`], [`Connection`] and
//! [`Claims`] in a crate of its own, depending on this one rather than on the engine, so that the
//! engine can open a `postgres://` location itself.

#![deny(missing_docs)]

mod db;
mod error;
mod sqlite;

pub use db::{Backend, Claims, Connection, Db, Dialect, FromValue, Param, Row, Value};
pub use error::{Error, PinDifference, Result, SqliteError};
