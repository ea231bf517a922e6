//! The binary's error: a message for the user, from any library or I/O error.

use std::fmt;

/// A failure to report on stderr.
pub struct Fail(String);

impl Fail {
    pub fn msg(m: impl Into<String>) -> Fail {
        Fail(m.into())
    }
}

impl fmt::Display for Fail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<mnemon::Error> for Fail {
    fn from(e: mnemon::Error) -> Fail {
        Fail(e.to_string())
    }
}

/// Adds what was being done to an error.
pub trait Context<T> {
    fn context(self, what: impl Into<String>) -> Result<T, Fail>;
}

impl<T, E: fmt::Display> Context<T> for Result<T, E> {
    fn context(self, what: impl Into<String>) -> Result<T, Fail> {
        self.map_err(|e| Fail(format!("{}: {e}", what.into())))
    }
}
