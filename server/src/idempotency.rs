//! Idempotency keys: a retried write carrying the key of an earlier attempt gets that attempt's
//! default timestamp, so the engine's own duplicate checks (a note's key derives from its scope,
//! timestamp and content; a round's session and key from its timestamp) store nothing twice,
//! whether the first attempt finished, failed or is still running. Held in memory, per process,
//! for a day, at most [`CAPACITY`] keys.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::error::ApiError;

/// Most keys held; past it the oldest goes.
pub const CAPACITY: usize = 65_536;

/// How long a key is held.
pub const HELD_FOR: Duration = Duration::from_secs(24 * 3600);

/// The first attempt of each key: the request's fingerprint and the timestamp it got.
#[derive(Default)]
pub struct Keys {
    held: Mutex<HashMap<String, Attempt>>,
}

struct Attempt {
    fingerprint: [u8; 32],
    ts: String,
    at: Instant,
    /// Whether an attempt's result was stored (the proxy's rounds: see [`Keys::settle`]).
    settled: bool,
}

impl Keys {
    /// The default timestamp for a request: `now` for a new key (or none), the first attempt's
    /// for a retry. `fingerprint` identifies the request (operation, caller and arguments); the
    /// same key with another fingerprint is refused, naming the field.
    pub fn stamp(&self, key: Option<&str>, fingerprint: [u8; 32], now: String) -> Result<String, ApiError> {
        let Some(key) = key else { return Ok(now) };
        if key.is_empty() || key.len() > 256 {
            return Err(ApiError::input("idempotency_key", "must be 1 to 256 bytes"));
        }
        #[allow(clippy::disallowed_methods)] // a server may read the clock to expire keys
        let at = Instant::now();
        let mut held = self.held.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(first) = held.get(key).filter(|a| at.duration_since(a.at) < HELD_FOR) {
            if first.fingerprint != fingerprint {
                return Err(ApiError::input(
                    "idempotency_key",
                    "was used for a different request; a retry must repeat the request unchanged",
                ));
            }
            return Ok(first.ts.clone());
        }
        if held.len() >= CAPACITY {
            held.retain(|_, a| at.duration_since(a.at) < HELD_FOR);
            if held.len() >= CAPACITY {
                if let Some(oldest) = held.iter().min_by_key(|(_, a)| a.at).map(|(k, _)| k.clone()) {
                    held.remove(&oldest);
                }
            }
        }
        held.insert(key.to_owned(), Attempt { fingerprint, ts: now.clone(), at, settled: false });
        Ok(now)
    }

    /// Marks `key`'s result as stored: `true` for the first attempt to settle it (it stores),
    /// `false` for a retry whose key was settled already, or that is no longer held. Used where
    /// retries of one request may produce different results (an upstream model's answers), so
    /// that the engine's duplicate checks cannot tell them apart.
    pub fn settle(&self, key: &str) -> bool {
        let mut held = self.held.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match held.get_mut(key) {
            Some(a) if !a.settled => {
                a.settled = true;
                true
            }
            _ => false,
        }
    }

    /// Undoes [`Keys::settle`] when the store it allowed failed, so that a retry stores.
    pub fn unsettle(&self, key: &str) {
        let mut held = self.held.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(a) = held.get_mut(key) {
            a.settled = false;
        }
    }
}

/// A request's fingerprint: blake3 over the operation and the request's fields (without its key).
pub fn fingerprint(operation: &str, request: &impl std::fmt::Debug) -> [u8; 32] {
    let mut h = blake3::Hasher::new();
    h.update(operation.as_bytes());
    h.update(&[0]);
    h.update(format!("{request:?}").as_bytes());
    *h.finalize().as_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_retry_gets_the_first_timestamp_and_a_changed_request_is_refused() {
        let keys = Keys::default();
        let (a, b) = (fingerprint("add", &"one"), fingerprint("add", &"two"));
        assert_eq!(keys.stamp(None, a, "t1".into()).unwrap(), "t1");
        assert_eq!(keys.stamp(Some("k"), a, "t1".into()).unwrap(), "t1");
        assert_eq!(keys.stamp(Some("k"), a, "t2".into()).unwrap(), "t1");
        let e = keys.stamp(Some("k"), b, "t3".into()).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("idempotency_key"));
        assert_eq!(keys.stamp(Some("other"), b, "t4".into()).unwrap(), "t4");
        assert!(keys.stamp(Some(""), a, "t".into()).is_err());
    }

    #[test]
    fn a_key_settles_once_and_again_after_an_unsettle() {
        let keys = Keys::default();
        let f = fingerprint("chat", &"one");
        assert!(!keys.settle("k"), "a key never stamped is not held");
        keys.stamp(Some("k"), f, "t1".into()).unwrap();
        assert!(keys.settle("k"));
        assert!(!keys.settle("k"), "a retry does not store again");
        keys.unsettle("k");
        assert!(keys.settle("k"), "a failed store lets the retry store");
    }

    #[test]
    fn the_oldest_key_goes_past_the_capacity() {
        let keys = Keys::default();
        let f = fingerprint("add", &0);
        for i in 0..=CAPACITY {
            keys.stamp(Some(&i.to_string()), f, format!("t{i}")).unwrap();
        }
        assert_eq!(keys.held.lock().unwrap().len(), CAPACITY);
        assert_eq!(keys.stamp(Some("0"), f, "new".into()).unwrap(), "new", "the oldest key was dropped");
    }
}
