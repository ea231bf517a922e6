//! Fixtures shared by the harness's tests.

use std::path::PathBuf;
use std::sync::Arc;

use mnemon::config::Config;
use mnemon::embed::{Embedder, HashingEmbedder};
use mnemon_eval::{Benchmark, RunConfig};

/// A run of `dataset` into `out`: every question, one job, the default engine, no reader, judge
/// or extractor.
pub fn run_config(dataset: PathBuf, out: PathBuf, benchmark: Benchmark) -> RunConfig {
    RunConfig {
        dataset,
        benchmark,
        out,
        limit: None,
        types: Vec::new(),
        questions: Vec::new(),
        jobs: 1,
        engine: Config::default(),
        command_line: "test".into(),
        qa: None,
        local: None,
        extractor: None,
        ranking: mnemon::context::Ranking::default(),
        postgres: None,
    }
}

/// The hashing embedder, for every job of a run.
pub fn hashing() -> mnemon::Result<Arc<dyn Embedder>> {
    Ok(Arc::new(HashingEmbedder::default()))
}

/// A hand-made LongMemEval file: a single-session question, a two-evidence temporal question and an
/// abstention question.
pub const LME: &str = r#"[
 {"question_id":"q1","question_type":"single-session-user","question":"What colour is my kayak?","answer":"red",
  "question_date":"2023/05/30 (Tue) 10:00",
  "haystack_dates":["2023/05/20 (Sat) 02:21","2023/05/25 (Thu) 09:00"],"haystack_session_ids":["s1","s2"],
  "haystack_sessions":[[{"role":"user","content":"I bought a red kayak yesterday.","has_answer":true},{"role":"assistant","content":"Fun! Where will you paddle?"}],
                       [{"role":"user","content":"Recommend a pasta recipe."},{"role":"assistant","content":"Try carbonara."}]],
  "answer_session_ids":["s1"]},
 {"question_id":"q2","question_type":"temporal-reasoning","question":"How many pets do I have?","answer":2,
  "question_date":"2023/06/30 (Fri) 10:00",
  "haystack_dates":["2023/06/01 (Thu) 10:00","2023/06/10 (Sat) 10:00","2023/06/12 (Mon) 10:00"],"haystack_session_ids":["a","b","c"],
  "haystack_sessions":[[{"role":"user","content":"My cat Miso sleeps all day.","has_answer":true}],
                       [{"role":"user","content":"We adopted a dog called Pip, so two pets now.","has_answer":true}],
                       [{"role":"user","content":"What is the capital of Peru?"},{"role":"assistant","content":"Lima."}]],
  "answer_session_ids":["a","b"]},
 {"question_id":"q3_abs","question_type":"single-session-user","question":"What is my horse called?","answer":"You never mentioned a horse.",
  "question_date":"2023/06/30 (Fri) 10:00",
  "haystack_dates":["2023/06/01 (Thu) 10:00"],"haystack_session_ids":["x"],
  "haystack_sessions":[[{"role":"user","content":"I like tea."}]],
  "answer_session_ids":[]}
]"#;
