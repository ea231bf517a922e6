//! QA mode against a local OpenAI-compatible mock that the test starts itself. These tests check
//! the protocol (path, headers, body) and the bookkeeping (verdicts, cache, resume, retries,
//! summaries, paired comparison), never a model's quality.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

use mnemon_eval::qa::{Endpoint, QaConfig, Templates};
use mnemon_eval::{run, Benchmark, RunConfig};

use crate::common;
use common::{hashing, LME};

#[derive(Debug, Clone)]
struct Request {
    path: String,
    authorization: Option<String>,
    body: Value,
}

type Respond = dyn Fn(usize, &Value) -> (u16, String) + Send + Sync;

/// A one-request-per-connection HTTP/1.1 server on a free loopback port; returns its base URL
/// and the requests it received.
fn mock(respond: Arc<Respond>) -> (String, Arc<Mutex<Vec<Request>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            let path = line.split_whitespace().nth(1).unwrap_or_default().to_string();
            let (mut length, mut authorization) = (0usize, None);
            loop {
                let mut h = String::new();
                reader.read_line(&mut h).unwrap();
                let h = h.trim_end();
                if h.is_empty() {
                    break;
                }
                let (name, value) = h.split_once(':').unwrap();
                match name.to_ascii_lowercase().as_str() {
                    "content-length" => length = value.trim().parse().unwrap(),
                    "authorization" => authorization = Some(value.trim().to_string()),
                    _ => {}
                }
            }
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            let body: Value = serde_json::from_slice(&body).unwrap();
            let n = {
                let mut log = log.lock().unwrap();
                log.push(Request { path, authorization, body: body.clone() });
                log.len()
            };
            let (status, text) = respond(n, &body);
            let reply = format!(
                "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
                text.len()
            );
            let _ = stream.write_all(reply.as_bytes());
        }
    });
    (format!("http://{addr}/v1"), seen)
}

fn completion(content: &str) -> String {
    json!({
        "id": "x", "object": "chat.completion",
        "choices": [{ "index": 0, "message": { "role": "assistant", "content": content }, "finish_reason": "stop" }],
        "usage": { "prompt_tokens": 100, "completion_tokens": 7, "total_tokens": 107 }
    })
    .to_string()
}

fn prompt(body: &Value) -> &str {
    body["messages"][0]["content"].as_str().unwrap()
}

/// The reader answers from the question; the judge grades by what the response says.
fn scripted(n: usize, body: &Value) -> (u16, String) {
    let p = prompt(body);
    let content = match body["model"].as_str().unwrap() {
        "reader-m" if p.contains("Question: What colour is my kayak?") => {
            "Note: a red kayak. The answer is red."
        }
        "reader-m" if p.contains("Question: How many pets") => "The answer is 2.",
        "reader-m" => "I cannot answer from the conversation history.",
        "judge-m" if p.contains("Response: Note: a red kayak. The answer is red.") => "Yes.",
        "judge-m" if p.contains("Response: The answer is 2.") => "Maybe, it depends.",
        "judge-m" if p.contains("The answer is B-answer") && p.contains("Be generous") => "yes",
        "judge-m" | "judge-m2" => "no",
        other => panic!("request {n}: unknown model {other}"),
    };
    (200, completion(content))
}

const LOCOMO: &str = r#"[{"sample_id":"conv-1","conversation":{"speaker_a":"Ann","speaker_b":"Bo",
  "session_1_date_time":"1:56 pm on 8 May, 2023",
  "session_1":[{"speaker":"Ann","dia_id":"D1:1","text":"I started pottery classes."},
               {"speaker":"Bo","dia_id":"D1:2","text":"Nice, I went hiking in Utah."}]},
  "qa":[{"question":"What class did Ann start?","answer":"pottery","evidence":["D1:1"],"category":4},
        {"question":"Where did Bo hike?","answer":"Utah","evidence":["D1:2"],"category":1},
        {"question":"What did Ann paint?","adversarial_answer":"a sunset","evidence":["D1:1"],"category":5}]}]"#;

fn config(dir: &Path, out: &str, base_url: &str, benchmark: Benchmark) -> RunConfig {
    RunConfig {
        qa: Some(QaConfig {
            reader: "reader-m".into(),
            judge: "judge-m".into(),
            endpoint: Endpoint { base_url: base_url.into(), api_key: Some("test-key".into()) },
            cache: dir.join("qa-cache.db"),
            templates: Templates::default(),
            reader_max_tokens: 300,
            retries: (3, Duration::from_millis(1)),
        }),
        ..common::run_config(dir.join("data.json"), dir.join(out), benchmark)
    }
}

fn predictions(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("predictions.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn longmemeval_questions_are_read_judged_by_type_and_cached() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("data.json"), LME).unwrap();
    // The very first request is rate-limited: the client must retry it.
    let (url, seen) = mock(Arc::new(|n, body| if n == 1 { (429, "{}".into()) } else { scripted(n, body) }));

    let a = run(&config(dir.path(), "a", &url, Benchmark::LongMemEval), &hashing, &|_, _| {}).unwrap();
    let requests = seen.lock().unwrap().clone();
    assert_eq!(requests.len(), 1 + 3 + 3, "one retried request, three readings, three verdicts");
    for r in &requests {
        assert_eq!(r.path, "/v1/chat/completions");
        assert_eq!(r.authorization.as_deref(), Some("Bearer test-key"));
        assert_eq!(r.body["temperature"], 0);
        assert_eq!(r.body["messages"].as_array().unwrap().len(), 1);
        assert_eq!(r.body["messages"][0]["role"], "user");
    }
    let readings: Vec<&Request> = requests[1..].iter().filter(|r| r.body["model"] == "reader-m").collect();
    assert_eq!(readings.len(), 3);
    assert!(readings.iter().all(|r| r.body["max_tokens"] == 300));
    let kayak = readings.iter().find(|r| prompt(&r.body).contains("kayak?")).unwrap();
    assert!(prompt(&kayak.body).contains("I bought a red kayak yesterday."), "the context is in the prompt");
    assert!(prompt(&kayak.body).contains("Current date: 2023/05/30 (Tue) 10:00"));
    let judged: Vec<&str> =
        requests.iter().filter(|r| r.body["model"] == "judge-m").map(|r| prompt(&r.body)).collect();
    assert!(judged.iter().any(|p| p.contains("off by one") && p.contains("Gold answer: 2")), "temporal");
    assert!(
        judged.iter().any(|p| p.contains("decline") && p.contains("never mentioned a horse")),
        "abstention"
    );

    let qa = &a.metrics.overall.qa["official"];
    assert_eq!((qa.correct.hits, qa.correct.n, qa.unparsed), (1, 3, 1));
    assert_eq!(a.metrics.by_type["temporal-reasoning"].qa["official"].unparsed, 1);
    let calls = a.speed.qa_calls.unwrap();
    assert_eq!((calls.reader, calls.reader_cached, calls.judge, calls.judge_cached), (3, 0, 3, 0));
    let p = predictions(&dir.path().join("a"));
    let q3 = p.iter().find(|p| p["id"] == "q3_abs").unwrap();
    assert_eq!(q3["qa"]["response"], "I cannot answer from the conversation history.");
    assert_eq!(q3["qa"]["verdicts"]["official"]["template"], "abstention");
    assert_eq!(q3["qa"]["verdicts"]["official"]["correct"], false);
    assert_eq!(q3["qa"]["prompt_tokens"], 100);
    let report = std::fs::read_to_string(dir.path().join("a/report.md")).unwrap();
    assert!(report.contains("## QA accuracy"), "{report}");
    let pins = std::fs::read_to_string(dir.path().join("a/pins.json")).unwrap();
    assert!(pins.contains("reader-m") && pins.contains("judge-m") && !pins.contains("test-key"), "{pins}");

    // A second run with the same cache sends nothing and scores the same; the paired
    // comparison sees no discordant question.
    let b = run(&config(dir.path(), "b", &url, Benchmark::LongMemEval), &hashing, &|_, _| {}).unwrap();
    assert_eq!(seen.lock().unwrap().len(), 7, "everything came from the cache");
    assert_eq!(b.metrics, a.metrics);
    let calls = b.speed.qa_calls.unwrap();
    assert_eq!((calls.reader, calls.reader_cached, calls.judge, calls.judge_cached), (0, 3, 0, 3));
    let table = mnemon_eval::report::compare(&dir.path().join("a"), &dir.path().join("b")).unwrap();
    assert!(table.contains("| official | 3 | 33.3 | 33.3 | 0 | 0 | 1.0000 |"), "{table}");
}

#[test]
fn an_interrupted_qa_run_resumes_to_the_same_summary() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("data.json"), LME).unwrap();
    let (url, seen) = mock(Arc::new(scripted));
    let full = run(&config(dir.path(), "full", &url, Benchmark::LongMemEval), &hashing, &|_, _| {}).unwrap();
    let partial = RunConfig { limit: Some(1), ..config(dir.path(), "resumed", &url, Benchmark::LongMemEval) };
    run(&partial, &hashing, &|_, _| {}).unwrap();
    let resumed =
        run(&config(dir.path(), "resumed", &url, Benchmark::LongMemEval), &hashing, &|_, _| {}).unwrap();
    assert_eq!(resumed.metrics, full.metrics);
    assert_eq!(predictions(&dir.path().join("resumed")).len(), 3);
    assert_eq!(seen.lock().unwrap().len(), 6, "the resumed run was served by the cache");

    // Another judge model is another pin: the directory refuses it, and its verdicts are not
    // taken from the cache.
    let mut other = config(dir.path(), "resumed", &url, Benchmark::LongMemEval);
    other.qa.as_mut().unwrap().judge = "judge-m2".into();
    assert!(run(&other, &hashing, &|_, _| {}).is_err());
    other.out = dir.path().join("other-judge");
    let s = run(&other, &hashing, &|_, _| {}).unwrap();
    let calls = s.speed.qa_calls.unwrap();
    assert_eq!((calls.reader, calls.reader_cached, calls.judge, calls.judge_cached), (0, 3, 3, 0));
    let models: Vec<String> =
        seen.lock().unwrap()[6..].iter().map(|r| r.body["model"].as_str().unwrap().to_string()).collect();
    assert_eq!(models, ["judge-m2"; 3]);
}

#[test]
fn locomo_has_a_strict_and_a_lenient_judge_and_skips_category_5() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("data.json"), LOCOMO).unwrap();
    let (url, seen) = mock(Arc::new(|n, body| {
        let p = prompt(body);
        if body["model"] == "reader-m" && p.contains("Where did Bo hike?") {
            return (200, completion("The answer is B-answer"));
        }
        scripted(n, body)
    }));
    let s = run(&config(dir.path(), "l", &url, Benchmark::LoCoMo), &hashing, &|_, _| {}).unwrap();
    let requests = seen.lock().unwrap().clone();
    let readers = requests.iter().filter(|r| r.body["model"] == "reader-m").count();
    let judges: Vec<&str> =
        requests.iter().filter(|r| r.body["model"] == "judge-m").map(|r| prompt(&r.body)).collect();
    assert_eq!(readers, 2, "category 5 is not read");
    assert_eq!(judges.len(), 4, "two judges for each of the two questions");
    assert!(judges.iter().any(|p| p.contains("Be generous")));
    assert!(judges.iter().any(|p| p.contains("a vaguer one")));
    assert!(requests.iter().all(|r| !prompt(&r.body).contains("paint")));
    let o = &s.metrics.overall;
    assert_eq!((o.qa["strict"].correct.hits, o.qa["strict"].correct.n), (0, 2));
    assert_eq!((o.qa["lenient"].correct.hits, o.qa["lenient"].correct.n), (1, 2));
    assert_eq!(o.questions, 3, "category 5 still has its retrieval prediction");
    let p = predictions(&dir.path().join("l"));
    assert!(p.iter().any(|p| p["kind"] == "category-5" && p.get("qa").is_none()));
}

#[test]
fn a_refused_request_stops_the_run_with_the_status_and_keeps_what_was_done() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("data.json"), LME).unwrap();
    let (url, seen) = mock(Arc::new(|n, body| {
        if n == 3 {
            (400, r#"{"error":{"message":"model not found"}}"#.into())
        } else {
            scripted(n, body)
        }
    }));
    let e = run(&config(dir.path(), "x", &url, Benchmark::LongMemEval), &hashing, &|_, _| {})
        .unwrap_err()
        .to_string();
    assert!(e.contains("HTTP 400") && e.contains("model not found"), "{e}");
    assert_eq!(seen.lock().unwrap().len(), 3, "a 400 is not retried");
    assert_eq!(predictions(&dir.path().join("x")).len(), 1, "the first question was recorded");
}
