//! The interface between the store's statements and a database (`mnemon-backend`'s), as the
//! store's modules name it.

pub(crate) use mnemon_backend::{Backend, Claims, Connection, Db, Dialect, Param, Row};
