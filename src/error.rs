//! The one error type, [`Error`]: it lives in `mnemon-backend`, so that a database backend
//! returns it too, and is re-exported at the crate's root.

pub(crate) use mnemon_backend::{Error, Result};
pub use mnemon_backend::{PinDifference, SqliteError};
