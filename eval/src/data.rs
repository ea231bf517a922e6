//! Loaders for the public benchmarks mnemon is measured on: LongMemEval (S and oracle) and LoCoMo.
//!
//! A [`Dataset`] holds per-user message lists ready for `Memory::add` (one user per LongMemEval
//! question, one per LoCoMo conversation) and the questions with the ids of their evidence turns.
//! Every message carries an id (`<session>:<turn>` for LongMemEval, the `dia_id` for LoCoMo) so
//! that evidence can be located among stored rounds. Errors name the file, record and field.

use std::collections::BTreeSet;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use mnemon::rounds::Role;
use mnemon::{Error, Message, Result, Timestamp};

fn input(field: impl Into<String>, reason: impl Into<String>) -> Error {
    Error::InvalidInput { field: field.into(), reason: reason.into() }
}

/// Which benchmark a file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Benchmark {
    /// LongMemEval (S or oracle), a JSON array of questions.
    LongMemEval,
    /// LoCoMo, a JSON array of conversations.
    LoCoMo,
}

/// One benchmark user: the question or conversation id and its messages.
#[derive(Debug, Clone, PartialEq)]
pub struct Haystack {
    /// `question_id` or `sample_id`.
    pub user: String,
    /// Every message, oldest session first.
    pub messages: Vec<Message>,
}

/// One benchmark question and where its evidence is.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Question {
    /// LongMemEval `question_id`; LoCoMo `<sample_id>#<index in qa>`.
    pub id: String,
    /// The haystack (user) the question is asked of.
    pub user: String,
    /// LongMemEval `question_type`; LoCoMo `category-<n>`.
    pub kind: String,
    /// The question text.
    pub question: String,
    /// The gold answer, as text.
    pub answer: String,
    /// When the question is asked (LongMemEval `question_date`).
    pub date: Option<String>,
    /// Abstention (LongMemEval `_abs`) or adversarial (LoCoMo category 5): scored apart.
    pub abstention: bool,
    /// Ids of the messages that hold the answer (turn level).
    pub evidence_turns: Vec<String>,
    /// Sessions that hold the answer (LongMemEval session level; empty for LoCoMo).
    pub evidence_sessions: Vec<String>,
}

/// Annotation defects met while loading, and what was done with them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Defects {
    /// LoCoMo evidence strings holding several ids (`"D8:6; D9:17"`), split.
    pub evidence_strings_split: usize,
    /// LoCoMo evidence ids written with zero padding (`D30:05`), normalized.
    pub evidence_ids_unpadded: usize,
    /// LoCoMo evidence ids that resolve to no turn (`"D"`, `"D:11:26"`), skipped.
    pub evidence_ids_skipped: usize,
    /// Questions left with no evidence id at all.
    pub questions_without_evidence: usize,
}

/// A loaded benchmark file.
#[derive(Debug, Clone)]
pub struct Dataset {
    /// Which benchmark.
    pub benchmark: Benchmark,
    /// One per user.
    pub haystacks: Vec<Haystack>,
    /// Every question, in file order.
    pub questions: Vec<Question>,
    /// What was tolerated.
    pub defects: Defects,
}

/// Reads a benchmark file (plain JSON or gzip, by content).
pub fn load(path: &Path, benchmark: Benchmark) -> Result<Dataset> {
    load_bytes(&std::fs::read(path)?, &path.display().to_string(), benchmark)
}

/// Reads a benchmark file's bytes (plain JSON or gzip, by content); `name` names it in errors.
pub fn load_bytes(bytes: &[u8], name: &str, benchmark: Benchmark) -> Result<Dataset> {
    let bytes = if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(bytes), &mut out)?;
        out
    } else {
        bytes.to_vec()
    };
    let value: Value =
        serde_json::from_slice(&bytes).map_err(|e| input(name.to_owned(), format!("not JSON: {e}")))?;
    let items = value.as_array().ok_or_else(|| input(name.to_owned(), "expected a JSON array"))?;
    let mut data =
        Dataset { benchmark, haystacks: Vec::new(), questions: Vec::new(), defects: Defects::default() };
    for (i, item) in items.iter().enumerate() {
        let at = format!("{name}[{i}]");
        match benchmark {
            Benchmark::LongMemEval => longmemeval(item, &at, &mut data)?,
            Benchmark::LoCoMo => locomo(item, &at, &mut data)?,
        }
    }
    Ok(data)
}

fn str_field<'a>(v: &'a Value, key: &str, at: &str) -> Result<&'a str> {
    v.get(key).and_then(Value::as_str).ok_or_else(|| input(format!("{at}.{key}"), "missing or not a string"))
}

fn array_field<'a>(v: &'a Value, key: &str, at: &str) -> Result<&'a Vec<Value>> {
    v.get(key)
        .and_then(Value::as_array)
        .ok_or_else(|| input(format!("{at}.{key}"), "missing or not an array"))
}

/// A string, or a number or other scalar written as JSON.
fn text(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

fn longmemeval(q: &Value, at: &str, data: &mut Dataset) -> Result<()> {
    let user = str_field(q, "question_id", at)?.to_owned();
    let at = format!("{at}({user})");
    let dates = array_field(q, "haystack_dates", &at)?;
    let ids = array_field(q, "haystack_session_ids", &at)?;
    let sessions = array_field(q, "haystack_sessions", &at)?;
    if dates.len() != sessions.len() || ids.len() != sessions.len() {
        return Err(input(format!("{at}.haystack_sessions"), "lengths of dates, ids and sessions differ"));
    }
    let mut order = Vec::with_capacity(sessions.len());
    for (i, d) in dates.iter().enumerate() {
        let raw = d.as_str().ok_or_else(|| input(format!("{at}.haystack_dates[{i}]"), "not a string"))?;
        let ts = Timestamp::parse(raw)
            .map_err(|_| input(format!("{at}.haystack_dates[{i}]"), "not a timestamp"))?;
        order.push((ts, i));
    }
    // Haystack dates are not always sorted; the stable sort keeps file order for equal dates.
    order.sort_by(|a, b| a.0.cmp(&b.0));
    let mut messages = Vec::new();
    let mut evidence_turns = Vec::new();
    for (ts, i) in order {
        let session_id = text(Some(&ids[i]));
        let turns = sessions[i]
            .as_array()
            .ok_or_else(|| input(format!("{at}.haystack_sessions[{i}]"), "not an array"))?;
        for (j, t) in turns.iter().enumerate() {
            let tat = format!("{at}.haystack_sessions[{i}][{j}]");
            let role = Role::parse(str_field(t, "role", &tat)?)
                .ok_or_else(|| input(format!("{tat}.role"), "not user or assistant"))?;
            let mut m = Message::new(role, str_field(t, "content", &tat)?, ts.raw()).in_session(&session_id);
            let id = format!("{session_id}:{j}");
            if t.get("has_answer").and_then(Value::as_bool) == Some(true) {
                evidence_turns.push(id.clone());
            }
            m.id = Some(id);
            messages.push(m);
        }
    }
    let evidence_sessions = match q.get("answer_session_ids") {
        Some(Value::Array(a)) => a.iter().map(|v| text(Some(v))).collect(),
        _ => Vec::new(),
    };
    if evidence_turns.is_empty() && evidence_sessions.is_empty() {
        data.defects.questions_without_evidence += 1;
    }
    if q.get("question").is_some() {
        data.questions.push(Question {
            id: user.clone(),
            user: user.clone(),
            kind: text(q.get("question_type")),
            question: str_field(q, "question", &at)?.to_owned(),
            answer: text(q.get("answer")),
            date: q.get("question_date").and_then(Value::as_str).map(str::to_owned),
            abstention: user.ends_with("_abs"),
            evidence_turns,
            evidence_sessions,
        });
    }
    data.haystacks.push(Haystack { user, messages });
    Ok(())
}

/// `D30:05` → `D30:5`; `None` for anything that is not `D<n>:<n>`.
pub fn normalize_dia_id(raw: &str) -> Option<String> {
    let rest = raw.strip_prefix('D')?;
    let (s, t) = rest.split_once(':')?;
    let (s, t): (u32, u32) = (s.parse().ok()?, t.parse().ok()?);
    Some(format!("D{s}:{t}"))
}

fn locomo(c: &Value, at: &str, data: &mut Dataset) -> Result<()> {
    let user = str_field(c, "sample_id", at)?.to_owned();
    let at = format!("{at}({user})");
    let conv = c.get("conversation").ok_or_else(|| input(format!("{at}.conversation"), "missing"))?;
    let speaker_a = str_field(conv, "speaker_a", &at)?;
    let obj = conv.as_object().ok_or_else(|| input(format!("{at}.conversation"), "not an object"))?;
    let mut numbers: Vec<u32> = obj
        .keys()
        .filter_map(|k| k.strip_prefix("session_").and_then(|n| n.parse().ok()))
        .filter(|n| obj.get(&format!("session_{n}")).is_some_and(Value::is_array))
        .collect();
    numbers.sort_unstable();
    let mut messages = Vec::new();
    let mut known = BTreeSet::new();
    for n in numbers {
        let session = format!("session_{n}");
        let date = str_field(conv, &format!("{session}_date_time"), &at)?;
        Timestamp::parse(date).map_err(|_| input(format!("{at}.{session}_date_time"), "not a timestamp"))?;
        for (j, t) in conv[&session].as_array().into_iter().flatten().enumerate() {
            let tat = format!("{at}.{session}[{j}]");
            let speaker = str_field(t, "speaker", &tat)?;
            let mut content = str_field(t, "text", &tat)?.to_owned();
            if let Some(caption) = t.get("blip_caption").and_then(Value::as_str) {
                content.push_str(&format!(" [shared an image: {caption}]"));
            }
            let role = if speaker == speaker_a { Role::User } else { Role::Assistant };
            let mut m = Message::new(role, content, date).in_session(&session);
            m.speaker = Some(speaker.to_owned());
            m.id = t.get("dia_id").and_then(Value::as_str).and_then(normalize_dia_id);
            if let Some(id) = &m.id {
                known.insert(id.clone());
            }
            messages.push(m);
        }
    }
    for (i, qa) in c.get("qa").and_then(Value::as_array).into_iter().flatten().enumerate() {
        let qat = format!("{at}.qa[{i}]");
        let category = qa.get("category").and_then(Value::as_u64).unwrap_or(0);
        let mut evidence = Vec::new();
        for raw in qa.get("evidence").and_then(Value::as_array).into_iter().flatten() {
            let raw = text(Some(raw));
            let parts: Vec<&str> = raw.split([';', ' ', '\t', ',']).filter(|p| !p.is_empty()).collect();
            if parts.len() > 1 {
                data.defects.evidence_strings_split += 1;
            }
            for part in parts {
                match normalize_dia_id(part) {
                    Some(id) if known.contains(&id) => {
                        if id != part {
                            data.defects.evidence_ids_unpadded += 1;
                        }
                        if !evidence.contains(&id) {
                            evidence.push(id);
                        }
                    }
                    _ => data.defects.evidence_ids_skipped += 1,
                }
            }
        }
        if evidence.is_empty() {
            data.defects.questions_without_evidence += 1;
        }
        data.questions.push(Question {
            id: format!("{user}#{i}"),
            user: user.clone(),
            kind: format!("category-{category}"),
            question: str_field(qa, "question", &qat)?.to_owned(),
            answer: text(qa.get("answer").or_else(|| qa.get("adversarial_answer"))),
            date: None,
            abstention: category == 5,
            evidence_turns: evidence,
            evidence_sessions: Vec::new(),
        });
    }
    data.haystacks.push(Haystack { user, messages });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(json: &str) -> tempfile::NamedTempFile {
        let f = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(f.path(), json).unwrap();
        f
    }

    #[test]
    fn locomo_defects_are_split_normalized_skipped_and_counted() {
        let f = write(
            r#"[{"sample_id":"c","conversation":{"speaker_a":"A","speaker_b":"B",
                "session_1_date_time":"1:56 pm on 8 May, 2023",
                "session_1":[{"speaker":"A","dia_id":"D1:1","text":"x"},{"speaker":"B","dia_id":"D1:2","text":"y"},
                             {"speaker":"A","dia_id":"D1:5","text":"z"}]},
                "qa":[{"question":"q0","answer":1,"evidence":["D1:1; D1:2"],"category":1},
                      {"question":"q1","answer":"a","evidence":["D1:05","D","D:11:26","D9:9"],"category":2},
                      {"question":"q2","answer":"a","evidence":[],"category":4},
                      {"question":"q3","adversarial_answer":"n","evidence":["D1:1"],"category":5}]}]"#,
        );
        let d = load(f.path(), Benchmark::LoCoMo).unwrap();
        assert_eq!(d.questions[0].evidence_turns, vec!["D1:1", "D1:2"]);
        assert_eq!(d.questions[0].answer, "1");
        assert_eq!(d.questions[1].evidence_turns, vec!["D1:5"]);
        assert!(d.questions[3].abstention && !d.questions[0].abstention);
        assert_eq!(d.questions[1].kind, "category-2");
        assert_eq!(
            d.defects,
            Defects {
                evidence_strings_split: 1,
                evidence_ids_unpadded: 1,
                evidence_ids_skipped: 3,
                questions_without_evidence: 1
            }
        );
    }

    #[test]
    fn longmemeval_sessions_are_sorted_and_evidence_ids_kept() {
        let f = write(
            r#"[{"question_id":"q1_abs","question_type":"temporal-reasoning","question":"when?","answer":3,
                "question_date":"2023/05/30 (Tue) 10:00",
                "haystack_dates":["2023/05/25 (Thu) 09:00","2023/05/20 (Sat) 02:21"],
                "haystack_session_ids":["late","early"],
                "haystack_sessions":[[{"role":"user","content":"later"}],
                                     [{"role":"user","content":"kayak"},{"role":"assistant","content":"ok","has_answer":true}]],
                "answer_session_ids":["early"]}]"#,
        );
        let d = load(f.path(), Benchmark::LongMemEval).unwrap();
        let q = &d.questions[0];
        assert!(q.abstention);
        assert_eq!(q.answer, "3");
        assert_eq!(q.evidence_turns, vec!["early:1"]);
        assert_eq!(q.evidence_sessions, vec!["early"]);
        let contents: Vec<&str> = d.haystacks[0].messages.iter().map(|m| m.content.as_str()).collect();
        assert_eq!(contents, vec!["kayak", "ok", "later"]);
        assert_eq!(d.haystacks[0].messages[0].id.as_deref(), Some("early:0"));
    }

    #[test]
    fn a_bad_record_is_named() {
        let f = write(
            r#"[{"question_id":"q","haystack_dates":["nope"],"haystack_session_ids":["s"],"haystack_sessions":[[]]}]"#,
        );
        match load(f.path(), Benchmark::LongMemEval) {
            Err(Error::InvalidInput { field, .. }) => {
                assert!(field.ends_with("[0](q).haystack_dates[0]"), "{field}")
            }
            other => panic!("{other:?}"),
        }
    }
}
