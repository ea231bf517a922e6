//! Pins: the configuration a store was built under, written once and checked at every open.

use std::collections::BTreeMap;

use crate::error::PinDifference;

/// The schema version this build reads and writes.
pub(crate) const SCHEMA_VERSION: u32 = 5;

/// The store pin that says whether rounds are queued for extraction (`on`) or not (`off`).
pub(crate) const EXTRACTION: &str = "extraction";

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

    /// Whether the store queues its rounds for extraction.
    pub(crate) fn extracts(&self) -> bool {
        self.0.get(EXTRACTION).map(String::as_str) == Some("on")
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

/// Whether a key of a schema 4 store's pins (or a version 2 or 3 dump's) belongs to the extractor:
/// since schema 5 those are recorded per extractor, not pinned for the whole store.
fn is_extractor_key(key: &str) -> bool {
    key == "extractor" || key.starts_with("extractor.") || key.starts_with("facts.")
}

/// Splits the pins of a schema 3 or 4 store (or of a dump made from one) into the store's pins
/// of this schema (with [`EXTRACTION`] on or off and this schema version) and the pins of the
/// extractor it was built with, if it had one. `all` holds no `pins_hash`.
pub(crate) fn split_legacy(all: BTreeMap<String, String>) -> (Pins, Option<BTreeMap<String, String>>) {
    let (extractor, mut store): (BTreeMap<String, String>, BTreeMap<String, String>) =
        all.into_iter().partition(|(k, _)| is_extractor_key(k));
    let had = extractor.get("extractor").is_some_and(|name| name != "none");
    store.insert(EXTRACTION.into(), if had { "on" } else { "off" }.into());
    store.insert("schema_version".into(), SCHEMA_VERSION.to_string());
    for (k, v) in NOTE_PINS {
        store.entry((*k).to_owned()).or_insert_with(|| (*v).to_owned());
    }
    (Pins(store), had.then_some(extractor))
}

/// The hash an extractor's pins are known by: blake3 over their canonical JSON.
pub(crate) fn extractor_hash(pins: &BTreeMap<String, String>) -> String {
    blake3::hash(canonical_json(pins).as_bytes()).to_hex().to_string()
}

/// The canonical JSON of an extractor's pins, as stored.
pub(crate) fn extractor_json(pins: &BTreeMap<String, String>) -> String {
    canonical_json(pins)
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
    fn legacy_pins_split_into_the_store_and_its_extractor() {
        let old: BTreeMap<String, String> = [
            ("embedder.dim", "384"),
            ("extractor", "qwen.gguf"),
            ("extractor.prompt", "p"),
            ("facts.lexicons", "l"),
            ("rounds.normalizer", "v1"),
            ("schema_version", "4"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        let (store, extractor) = split_legacy(old.clone());
        assert!(store.extracts());
        assert_eq!(store.0["schema_version"], SCHEMA_VERSION.to_string());
        assert!(store.0.keys().all(|k| !is_extractor_key(k)), "{store:?}");
        let extractor = extractor.unwrap();
        assert_eq!(extractor.keys().collect::<Vec<_>>(), ["extractor", "extractor.prompt", "facts.lexicons"]);
        let mut none = old;
        none.retain(|k, _| !is_extractor_key(k));
        none.insert("extractor".into(), "none".into());
        let (store, extractor) = split_legacy(none);
        assert!(!store.extracts() && extractor.is_none());
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
