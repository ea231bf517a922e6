//! JSON input: each input object (a message, a new note, a note's update) is one serde type with
//! unknown fields refused; [`read`] turns a JSON value into it, and its error into an
//! [`Error::InvalidInput`] that names the field at fault (`line 3.tags[1]`) with a short reason
//! (`expected a string, found a number`, `missing`, `unknown field`).

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::{Error, Result};

/// Reads one JSON object as `T`; `at` names the object in errors (`memories[2]`, `line 3`).
pub(crate) fn read<T: DeserializeOwned>(value: &Value, at: &str) -> Result<T> {
    // serde reads a struct from an array too; an input object is an object.
    if !value.is_object() {
        return Err(Error::input(at, format!("expected a JSON object, found {}", json_kind(value))));
    }
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner().to_string();
        let at_key = !path.ends_with(']');
        let mut field = if path == "." { at.to_owned() } else { format!("{at}.{path}") };
        let reason = if let Some(rest) = inner.strip_prefix("missing field `") {
            field = format!("{at}.{}", rest.trim_end_matches('`'));
            "missing".to_owned()
        } else if inner.starts_with("unknown field `") {
            "unknown field".to_owned()
        } else if let Some((found, expected)) = invalid_type(&inner) {
            // A required field given as null is missing; optional fields take null as absent.
            if found == "null" && at_key {
                "missing".to_owned()
            } else {
                format!("expected {expected}, found {found}")
            }
        } else {
            inner
        };
        Error::input(field, reason)
    })
}

/// serde's `invalid type: <found>, expected <expected>`, in the words of JSON.
fn invalid_type(message: &str) -> Option<(&'static str, String)> {
    let (found, expected) = message.strip_prefix("invalid type: ")?.split_once(", expected ")?;
    let found = match found.split(' ').next().unwrap_or("") {
        "integer" | "floating" => "a number",
        "string" => "a string",
        "boolean" => "a boolean",
        "null" | "unit" => "null",
        "sequence" => "an array",
        "map" => "an object",
        _ => return None,
    };
    let expected = match expected {
        "f32" | "f64" => "a number".to_owned(),
        "a sequence" => "an array".to_owned(),
        other if other.starts_with("struct ") || other == "a map" => "a JSON object".to_owned(),
        other => other.to_owned(),
    };
    Some((found, expected))
}

/// A JSON value's kind, as error messages name it.
pub(crate) fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Deserializes `tags` as an array of strings, saying so when it is not one.
pub(crate) mod tags {
    use serde::de::{Deserializer, SeqAccess, Visitor};

    struct Tags;

    impl<'de> Visitor<'de> for Tags {
        type Value = Vec<String>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("an array of strings")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<String>, A::Error> {
            let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(64));
            while let Some(tag) = seq.next_element::<String>()? {
                out.push(tag);
            }
            Ok(out)
        }
    }

    /// `tags` when present (absent or null: none).
    pub fn option<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<String>>, D::Error> {
        struct Maybe;
        impl<'de> Visitor<'de> for Maybe {
            type Value = Option<Vec<String>>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an array of strings")
            }
            fn visit_none<E>(self) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
                d.deserialize_seq(Tags).map(Some)
            }
        }
        d.deserialize_option(Maybe)
    }

    /// `tags`, absent or null as none.
    pub fn list<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
        option(d).map(Option::unwrap_or_default)
    }
}

/// Deserializes `metadata` as a JSON object (absent or null: none).
pub(crate) fn metadata<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> std::result::Result<Option<Value>, D::Error> {
    use serde::Deserialize;
    match Option::<Value>::deserialize(d)? {
        None | Some(Value::Null) => Ok(None),
        Some(v @ Value::Object(_)) => Ok(Some(v)),
        Some(other) => {
            Err(serde::de::Error::custom(format!("expected a JSON object, found {}", json_kind(&other))))
        }
    }
}

/// `Some(None)` for an explicit `null`, `None` when the field is absent (with `#[serde(default)]`).
pub(crate) fn null_or<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> std::result::Result<Option<Option<String>>, D::Error> {
    use serde::Deserialize;
    Option::<String>::deserialize(d).map(Some)
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde_json::json;

    use super::*;

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Probe {
        content: String,
        #[serde(default, deserialize_with = "tags::list")]
        tags: Vec<String>,
        #[serde(default)]
        weight: Option<f32>,
        #[serde(default, deserialize_with = "metadata")]
        metadata: Option<Value>,
    }

    fn error(v: Value) -> String {
        read::<Probe>(&v, "line 2").unwrap_err().to_string()
    }

    #[test]
    fn errors_name_the_field_and_say_what_was_wrong_in_json_words() {
        assert!(error(json!({"content": 7})).contains("line 2.content: expected a string, found a number"));
        assert!(error(json!({"content": null})).contains("line 2.content: missing"));
        assert!(error(json!({})).contains("line 2.content: missing"));
        assert!(error(json!({"content": "a", "zz": 1})).contains("line 2.zz: unknown field"));
        assert!(
            error(json!({"content": "a", "tags": ["x", 7]}))
                .contains("line 2.tags[1]: expected a string, found a number")
        );
        assert!(
            error(json!({"content": "a", "tags": [null]}))
                .contains("line 2.tags[0]: expected a string, found null")
        );
        assert!(
            error(json!({"content": "a", "tags": "x"}))
                .contains("line 2.tags: expected an array of strings, found a string")
        );
        assert!(
            error(json!({"content": "a", "weight": "x"}))
                .contains("line 2.weight: expected a number, found a string")
        );
        assert!(
            error(json!({"content": "a", "metadata": [1]}))
                .contains("line 2.metadata: expected a JSON object, found an array")
        );
        assert!(error(json!([1])).contains("line 2: expected a JSON object, found an array"));
        assert!(error(json!("x")).contains("line 2: expected a JSON object, found a string"));
    }

    #[test]
    fn null_is_absent_for_optional_fields() {
        let p: Probe =
            read(&json!({"content": "a", "tags": null, "weight": null, "metadata": null}), "x").unwrap();
        assert_eq!(p, Probe { content: "a".into(), tags: vec![], weight: None, metadata: None });
    }
}
