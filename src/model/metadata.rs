//! Conditions on a note's metadata object, in the filter language of mem0 and TinyContext:
//! `{"key": value}`, `{"key": {"op": operand}}` with the operators `eq ne in nin gt gte lt lte
//! contains icontains`, `"*"` for "the key is present", and `AND`, `OR`, `NOT` over lists of
//! such objects. Parsed once, checked (every error names its place), then tested against each
//! note's metadata.

use std::cmp::Ordering;

use serde_json::{Map, Value};

use crate::error::{Error, Result};

/// The most conditions one filter may hold (nested ones included).
pub const MAX_CONDITIONS: usize = 256;
/// The deepest nesting of `AND` / `OR` / `NOT`.
pub const MAX_DEPTH: usize = 8;

/// A condition on a note's metadata.
///
/// ```
/// use mnemon::notes::MetadataFilter;
/// use serde_json::json;
/// let f = MetadataFilter::parse(&json!({"year": {"gte": 2020}, "OR": [{"genre": "jazz"}, {"genre": "blues"}]}), "metadata").unwrap();
/// assert!(f.holds(&json!({"year": 2021, "genre": "blues"})));
/// assert!(!f.holds(&json!({"year": 2019, "genre": "jazz"})));
/// assert!(MetadataFilter::parse(&json!({"year": {"near": 2020}}), "metadata").is_err());
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum MetadataFilter {
    /// Every condition holds (an object's keys, `AND`).
    All(Vec<MetadataFilter>),
    /// At least one holds (`OR`).
    Any(Vec<MetadataFilter>),
    /// None holds (`NOT`: a note passes when it matches none of the listed conditions).
    None(Vec<MetadataFilter>),
    /// The value under `key` passes `test`.
    Field {
        /// A top-level key of the metadata object.
        key: String,
        /// What its value must satisfy.
        test: MetadataTest,
    },
}

/// What a metadata value must satisfy. A missing key fails every test but `Ne` and `Nin`,
/// which it passes (it differs from every value).
#[derive(Debug, Clone, PartialEq)]
pub enum MetadataTest {
    /// The key is present, whatever its value (`"*"`).
    Present,
    /// Equal (numbers by value: `1` equals `1.0`).
    Eq(Value),
    /// Missing or not equal.
    Ne(Value),
    /// Equal to one of these.
    In(Vec<Value>),
    /// Missing or equal to none of these.
    Nin(Vec<Value>),
    /// Greater than; numbers compare by value, strings by their bytes (ISO dates in order), any
    /// other pair fails.
    Gt(Value),
    /// Greater than or equal.
    Gte(Value),
    /// Less than.
    Lt(Value),
    /// Less than or equal.
    Lte(Value),
    /// A string holding this text, or a list holding this value.
    Contains(Value),
    /// A string holding this text, ignoring case.
    IContains(String),
}

impl MetadataFilter {
    /// Reads a filter from its JSON form; `at` names it in errors (`filter.metadata`).
    pub fn parse(value: &Value, at: &str) -> Result<MetadataFilter> {
        let mut budget = MAX_CONDITIONS;
        parse_object(value, at, 0, &mut budget)
    }

    /// Whether `metadata` (a JSON object; anything else holds no keys) passes.
    pub fn holds(&self, metadata: &Value) -> bool {
        match self {
            MetadataFilter::All(all) => all.iter().all(|f| f.holds(metadata)),
            MetadataFilter::Any(any) => any.iter().any(|f| f.holds(metadata)),
            MetadataFilter::None(none) => !none.iter().any(|f| f.holds(metadata)),
            MetadataFilter::Field { key, test } => test.holds(metadata.get(key)),
        }
    }

    /// Whether the canonical JSON text of a stored metadata object passes.
    pub(crate) fn holds_text(&self, metadata: &str) -> bool {
        let value: Value = serde_json::from_str(metadata).unwrap_or(Value::Null);
        self.holds(&value)
    }
}

fn parse_object(value: &Value, at: &str, depth: usize, budget: &mut usize) -> Result<MetadataFilter> {
    let Value::Object(map) = value else {
        return Err(Error::input(at, "must be an object of conditions"));
    };
    if depth > MAX_DEPTH {
        return Err(Error::input(at, format!("nests AND/OR/NOT deeper than {MAX_DEPTH}")));
    }
    let mut all = Vec::with_capacity(map.len());
    for (key, condition) in map {
        let here = format!("{at}.{key}");
        all.push(match key.as_str() {
            "AND" | "OR" | "NOT" => {
                let list = parse_list(condition, &here, depth, budget)?;
                match key.as_str() {
                    "AND" => MetadataFilter::All(list),
                    "OR" => MetadataFilter::Any(list),
                    _ => MetadataFilter::None(list),
                }
            }
            _ => parse_field(key, condition, &here, budget)?,
        });
    }
    Ok(if all.len() == 1 { all.pop().expect("one") } else { MetadataFilter::All(all) })
}

fn parse_list(value: &Value, at: &str, depth: usize, budget: &mut usize) -> Result<Vec<MetadataFilter>> {
    let Value::Array(items) = value else {
        return Err(Error::input(at, "must be a list of condition objects"));
    };
    if items.is_empty() {
        return Err(Error::input(at, "must hold at least one condition"));
    }
    items
        .iter()
        .enumerate()
        .map(|(i, item)| parse_object(item, &format!("{at}[{i}]"), depth + 1, budget))
        .collect()
}

fn spend(budget: &mut usize, at: &str) -> Result<()> {
    *budget = budget
        .checked_sub(1)
        .ok_or_else(|| Error::input(at, format!("the filter holds more than {MAX_CONDITIONS} conditions")))?;
    Ok(())
}

fn parse_field(key: &str, condition: &Value, at: &str, budget: &mut usize) -> Result<MetadataFilter> {
    let field = |test| MetadataFilter::Field { key: key.to_owned(), test };
    let Value::Object(ops) = condition else {
        spend(budget, at)?;
        return Ok(field(match condition {
            Value::String(s) if s == "*" => MetadataTest::Present,
            v => MetadataTest::Eq(v.clone()),
        }));
    };
    if ops.is_empty() {
        return Err(Error::input(at, "names no operator (eq ne in nin gt gte lt lte contains icontains)"));
    }
    let mut tests = Vec::with_capacity(ops.len());
    for (op, operand) in ops {
        let here = format!("{at}.{op}");
        spend(budget, &here)?;
        tests.push(field(parse_test(op, operand, &here)?));
    }
    Ok(if tests.len() == 1 { tests.pop().expect("one") } else { MetadataFilter::All(tests) })
}

fn parse_test(op: &str, operand: &Value, at: &str) -> Result<MetadataTest> {
    let list = || match operand {
        Value::Array(items) => Ok(items.clone()),
        _ => Err(Error::input(at, "must be a list of values")),
    };
    let ordered = || match operand {
        Value::Number(_) | Value::String(_) => Ok(operand.clone()),
        _ => Err(Error::input(at, "must be a number or a string")),
    };
    Ok(match op {
        "eq" => MetadataTest::Eq(operand.clone()),
        "ne" => MetadataTest::Ne(operand.clone()),
        "in" => MetadataTest::In(list()?),
        "nin" => MetadataTest::Nin(list()?),
        "gt" => MetadataTest::Gt(ordered()?),
        "gte" => MetadataTest::Gte(ordered()?),
        "lt" => MetadataTest::Lt(ordered()?),
        "lte" => MetadataTest::Lte(ordered()?),
        "contains" => match operand {
            Value::Array(_) | Value::Object(_) => {
                return Err(Error::input(at, "must be a string, number or boolean"));
            }
            v => MetadataTest::Contains(v.clone()),
        },
        "icontains" => match operand {
            Value::String(s) => MetadataTest::IContains(s.to_lowercase()),
            _ => return Err(Error::input(at, "must be a string")),
        },
        _ => {
            return Err(Error::input(
                at,
                "is not an operator (eq ne in nin gt gte lt lte contains icontains, or AND OR NOT above a list)",
            ));
        }
    })
}

impl MetadataTest {
    fn holds(&self, value: Option<&Value>) -> bool {
        let Some(v) = value else {
            return matches!(self, MetadataTest::Ne(_) | MetadataTest::Nin(_));
        };
        match self {
            MetadataTest::Present => true,
            MetadataTest::Eq(x) => same(v, x),
            MetadataTest::Ne(x) => !same(v, x),
            MetadataTest::In(xs) => xs.iter().any(|x| same(v, x)),
            MetadataTest::Nin(xs) => !xs.iter().any(|x| same(v, x)),
            MetadataTest::Gt(x) => order(v, x) == Some(Ordering::Greater),
            MetadataTest::Gte(x) => matches!(order(v, x), Some(Ordering::Greater | Ordering::Equal)),
            MetadataTest::Lt(x) => order(v, x) == Some(Ordering::Less),
            MetadataTest::Lte(x) => matches!(order(v, x), Some(Ordering::Less | Ordering::Equal)),
            MetadataTest::Contains(x) => match (v, x) {
                (Value::String(s), Value::String(t)) => s.contains(t.as_str()),
                (Value::Array(items), x) => items.iter().any(|i| same(i, x)),
                _ => false,
            },
            MetadataTest::IContains(t) => match v {
                Value::String(s) => s.to_lowercase().contains(t.as_str()),
                _ => false,
            },
        }
    }
}

/// JSON equality, numbers by value.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b)),
        (Value::Object(x), Value::Object(y)) => objects_same(x, y),
        _ => a == b,
    }
}

fn objects_same(x: &Map<String, Value>, y: &Map<String, Value>) -> bool {
    x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
}

/// Numbers by value, strings by bytes; nothing else is ordered.
fn order(a: &Value, b: &Value) -> Option<Ordering> {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64()?.partial_cmp(&y.as_f64()?),
        (Value::String(x), Value::String(y)) => Some(x.as_str().cmp(y.as_str())),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn holds(filter: Value, metadata: Value) -> bool {
        MetadataFilter::parse(&filter, "metadata").unwrap().holds(&metadata)
    }

    fn field_of(filter: Value) -> String {
        match MetadataFilter::parse(&filter, "filter.metadata") {
            Err(Error::InvalidInput { field, .. }) => field,
            other => panic!("expected an input error, got {other:?}"),
        }
    }

    #[test]
    fn each_operator_tests_its_value() {
        let m = json!({"n": 3, "s": "Jazz Night", "tags": ["a", "b"], "d": "2024-05-01", "b": true});
        assert!(holds(json!({"n": 3.0}), m.clone()));
        assert!(holds(json!({"n": {"eq": 3}}), m.clone()));
        assert!(!holds(json!({"n": {"ne": 3}}), m.clone()));
        assert!(holds(json!({"missing": {"ne": 3}}), m.clone()));
        assert!(holds(json!({"n": {"in": [1, 3]}}), m.clone()));
        assert!(!holds(json!({"n": {"nin": [1, 3]}}), m.clone()));
        assert!(holds(json!({"missing": {"nin": [1]}}), m.clone()));
        assert!(holds(json!({"n": {"gt": 2, "lte": 3}}), m.clone()));
        assert!(!holds(json!({"n": {"gt": 3}}), m.clone()));
        assert!(holds(json!({"n": {"gte": 3, "lt": 4}}), m.clone()));
        assert!(holds(json!({"d": {"gte": "2024-01-01", "lt": "2025"}}), m.clone()));
        assert!(!holds(json!({"s": {"gt": 1}}), m.clone()), "a string and a number are not ordered");
        assert!(holds(json!({"s": {"contains": "Night"}}), m.clone()));
        assert!(!holds(json!({"s": {"contains": "night"}}), m.clone()));
        assert!(holds(json!({"s": {"icontains": "NIGHT"}}), m.clone()));
        assert!(holds(json!({"tags": {"contains": "b"}}), m.clone()));
        assert!(holds(json!({"b": "*"}), m.clone()));
        assert!(!holds(json!({"missing": "*"}), m.clone()));
        assert!(!holds(json!({"missing": 3}), m.clone()));
        assert!(holds(json!({"b": true}), m));
    }

    #[test]
    fn and_or_not_combine_conditions() {
        let m = json!({"genre": "jazz", "year": 1959});
        assert!(holds(json!({"AND": [{"genre": "jazz"}, {"year": {"lt": 1960}}]}), m.clone()));
        assert!(!holds(json!({"AND": [{"genre": "jazz"}, {"year": {"gt": 1960}}]}), m.clone()));
        assert!(holds(json!({"OR": [{"genre": "rock"}, {"year": 1959}]}), m.clone()));
        assert!(!holds(json!({"NOT": [{"genre": "rock"}, {"year": 1959}]}), m.clone()));
        assert!(holds(json!({"NOT": [{"genre": "rock"}]}), m.clone()));
        assert!(holds(
            json!({"genre": "jazz", "NOT": [{"OR": [{"year": 1960}, {"year": 1961}]}]}),
            m.clone()
        ));
        assert!(holds(json!({}), m.clone()), "no condition holds for every note");
        assert!(!holds(json!({"genre": "jazz"}), json!(null)), "no metadata holds no key");
    }

    #[test]
    fn a_filter_that_cannot_be_read_names_the_place() {
        assert_eq!(field_of(json!({"year": {"near": 3}})), "filter.metadata.year.near");
        assert_eq!(field_of(json!({"year": {"in": 3}})), "filter.metadata.year.in");
        assert_eq!(field_of(json!({"year": {"gt": [1]}})), "filter.metadata.year.gt");
        assert_eq!(field_of(json!({"s": {"icontains": 1}})), "filter.metadata.s.icontains");
        assert_eq!(field_of(json!({"OR": {"a": 1}})), "filter.metadata.OR");
        assert_eq!(field_of(json!({"OR": []})), "filter.metadata.OR");
        assert_eq!(field_of(json!({"AND": [{"a": 1}, 3]})), "filter.metadata.AND[1]");
        assert_eq!(field_of(json!({"a": {}})), "filter.metadata.a");
        assert_eq!(field_of(json!([1])), "filter.metadata");
        let mut deep = json!({"a": 1});
        for _ in 0..=MAX_DEPTH {
            deep = json!({ "AND": [deep] });
        }
        assert!(field_of(deep).starts_with("filter.metadata.AND[0]"));
        let wide: Map<String, Value> = (0..=MAX_CONDITIONS).map(|i| (format!("k{i}"), json!(i))).collect();
        assert!(field_of(Value::Object(wide)).starts_with("filter.metadata.k"));
    }
}
