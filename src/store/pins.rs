//! Pins: the configuration a store was built under, written once and checked at every open.

use std::collections::BTreeMap;

use crate::error::PinDifference;

/// The schema version this build reads and writes.
pub(crate) const SCHEMA_VERSION: u32 = 4;

/// How notes (direct memories) are keyed and deduplicated; pinned in every store. Stores of
/// schema version 3 gain these at migration (they hold no notes yet).
pub(crate) const NOTE_PINS: &[(&str, &str)] = &[("notes.key", "v1"), ("notes.normalizer", "v1")];

const HASH_KEY: &str = "pins_hash";

/// Sorted pin keys and values (the `pins_hash` entry is derived, never stored here).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Pins(pub(crate) BTreeMap<String, String>);

/// Sorted keys, no whitespace: the form every hash in mnemon is taken over.
fn canonical_json(map: &BTreeMap<String, String>) -> String {
    serde_json::to_string(map).unwrap_or_default()
}

impl Pins {
    pub(crate) fn new(entries: impl IntoIterator<Item = (&'static str, String)>) -> Pins {
        let mut map: BTreeMap<String, String> = entries.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
        map.insert("schema_version".into(), SCHEMA_VERSION.to_string());
        Pins(map)
    }

    /// blake3 over the canonical JSON of every pin.
    pub(crate) fn hash(&self) -> String {
        blake3::hash(canonical_json(&self.0).as_bytes()).to_hex().to_string()
    }

    /// The pins plus their hash, as stored in `meta`.
    pub(crate) fn with_hash(&self) -> BTreeMap<String, String> {
        let mut all = self.0.clone();
        all.insert(HASH_KEY.into(), self.hash());
        all
    }

    /// Rebuilds pins from a `meta` table, checking the stored hash.
    pub(crate) fn from_stored(mut all: BTreeMap<String, String>) -> Result<Pins, String> {
        let stored_hash = all.remove(HASH_KEY).ok_or("meta lacks pins_hash")?;
        let pins = Pins(all);
        let hash = pins.hash();
        if hash != stored_hash {
            return Err(format!("meta pins_hash is {stored_hash}, but the pins hash to {hash}"));
        }
        Ok(pins)
    }

    /// The vector width the store was created with.
    pub(crate) fn dim(&self) -> crate::error::Result<usize> {
        self.0.get("embedder.dim").and_then(|d| d.parse().ok()).filter(|d| (1..=8192).contains(d)).ok_or_else(
            || crate::error::Error::InvalidConfig {
                field: "embedder.dim",
                reason: "missing or out of range".into(),
            },
        )
    }

    /// Every key whose value differs, in key order.
    pub(crate) fn differences(&self, expected: &Pins) -> Vec<PinDifference> {
        let keys: std::collections::BTreeSet<&String> = self.0.keys().chain(expected.0.keys()).collect();
        keys.into_iter()
            .filter(|k| self.0.get(*k) != expected.0.get(*k))
            .map(|k| PinDifference {
                key: k.clone(),
                stored: self.0.get(k).cloned(),
                expected: expected.0.get(k).cloned(),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_differing_key_is_named() {
        let a = Pins::new([
            ("embedder.name", "a".to_owned()),
            ("embedder.dim", "384".to_owned()),
            ("x", "1".to_owned()),
        ]);
        let b = Pins::new([
            ("embedder.name", "b".to_owned()),
            ("embedder.dim", "384".to_owned()),
            ("y", "2".to_owned()),
        ]);
        let keys: Vec<String> = a.differences(&b).into_iter().map(|d| d.key).collect();
        assert_eq!(keys, vec!["embedder.name", "x", "y"]);
        assert!(a.differences(&a).is_empty());
    }

    #[test]
    fn a_tampered_hash_is_detected() {
        let p = Pins::new([("k", "v".to_owned())]);
        let mut stored = p.with_hash();
        assert_eq!(Pins::from_stored(stored.clone()).unwrap(), p);
        stored.insert("k".into(), "w".into());
        assert!(Pins::from_stored(stored).is_err());
    }
}
