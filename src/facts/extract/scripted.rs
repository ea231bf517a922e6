//! [`ScriptedExtractor`]: facts from a script instead of a model, for demos, tests and callers who
//! already know their facts. The script is a JSON object that maps a round's first user turn,
//! exactly as sent, to the array a model would write for that round (the contract in
//! `grammars/facts.schema.json`); every other round gets `[]`. The facts then go through the same
//! verification, dedup, screens and supersession as a model's.

use std::collections::BTreeMap;
use std::path::Path;

use super::{Extraction, Extractor, ExtractorPins, parse};
use crate::error::{Error, Result};
use crate::model::round::{Role, Turn};

/// Facts read from a script (see the module docs).
#[derive(Debug, Clone)]
pub struct ScriptedExtractor {
    script: BTreeMap<String, String>,
    pins: ExtractorPins,
}

impl ScriptedExtractor {
    /// A script from JSON text; `name` names it in the pins. Every entry must be a JSON array that
    /// meets the contract, else [`Error::InvalidInput`] naming the entry.
    ///
    /// ```
    /// use mnemon::extract::{Extractor, ScriptedExtractor};
    /// let script = r#"{"I live in Porto.": [{"content": "The user lives in Porto.", "raw": "user: I live in Porto",
    ///   "when": null, "subject": "user", "predicate": "lives in", "object": "Porto", "salience": 1.0}]}"#;
    /// let x = ScriptedExtractor::from_json("demo", script)?;
    /// let turn = mnemon::rounds::Turn::new(mnemon::rounds::Role::User, "I live in Porto.", "2026-01-01");
    /// assert_eq!(x.extract(&[turn])?.facts[0].object.as_deref(), Some("Porto"));
    /// # Ok::<(), mnemon::Error>(())
    /// ```
    pub fn from_json(name: &str, json: &str) -> Result<ScriptedExtractor> {
        let entries: BTreeMap<String, serde_json::Value> = serde_json::from_str(json)
            .map_err(|e| Error::input("script", format!("not a JSON object of arrays: {e}")))?;
        let mut script = BTreeMap::new();
        for (turn, facts) in entries {
            let out = facts.to_string();
            if parse(&out).is_none() {
                return Err(Error::input(format!("script[{turn:?}]"), "does not meet the facts contract"));
            }
            script.insert(turn, out);
        }
        let pins = ExtractorPins {
            name: format!("scripted:{name}"),
            model_blake3: blake3::hash(json.as_bytes()).to_hex().to_string(),
            quant: "none".into(),
            runtime: "mnemon scripted v1".into(),
            decode: "table lookup by the first user turn".into(),
            prompt: "none".into(),
        };
        Ok(ScriptedExtractor { script, pins })
    }

    /// A script from a file; the file name names it.
    pub fn load(path: impl AsRef<Path>) -> Result<ScriptedExtractor> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::input("extractor", format!("{}: {e}", path.display())))?;
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        ScriptedExtractor::from_json(&name, &text)
    }
}

impl Extractor for ScriptedExtractor {
    fn pins(&self) -> ExtractorPins {
        self.pins.clone()
    }

    fn extract(&self, turns: &[Turn]) -> Result<Extraction> {
        let first = turns.iter().find(|t| t.role == Role::User).or(turns.first());
        let out = first.and_then(|t| self.script.get(&t.content)).cloned().unwrap_or_else(|| "[]".into());
        Ok(Extraction::from_output(out, false, 0, 0))
    }
}
