//! The `mnemon` binary, run as a separate process.

use std::path::Path;
use std::process::{Command, Output};

fn mnemon(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mnemon")).args(args).output().expect("run mnemon")
}

fn ok(args: &[&str]) -> String {
    let out = mnemon(args);
    assert!(out.status.success(), "mnemon {args:?} failed:\n{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn fails(args: &[&str]) -> String {
    let out = mnemon(args);
    assert!(!out.status.success(), "mnemon {args:?} should have failed");
    String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout)
}

/// Two notes for `remember --file`: a procedural one with a tag, an episodic one of low importance.
const NOTES: &str = r#"{"content": "Deploy with make release.", "ts": "2026-03-01T10:00:00", "kind": "procedural", "tags": ["work"]}
{"content": "Ran 5 km.", "ts": "2026-03-02T10:00:00", "kind": "episodic", "importance": 0.2}
"#;

const CHAT: &str = r#"{"role":"user","content":"I adopted a beagle named Toby.","ts":"2023/05/20 (Sat) 02:21","session":"a"}
{"role":"assistant","content":"Congratulations on Toby!","ts":"2023/05/20 (Sat) 02:21","session":"a"}
{"role":"user","content":"I work night shifts as a nurse.","ts":"2023/06/01 (Thu) 20:00","session":"b"}
{"role":"assistant","content":"That must be tiring.","ts":"2023/06/01 (Thu) 20:00","session":"b"}
{"role":"user","content":"I started cello lessons.","ts":"1:56 pm on 8 July, 2023"}
"#;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Ingests `CHAT` for user `u` into `name` under `dir` and returns the store's path.
fn ingest_chat(dir: &Path, name: &str, embedder: &str) -> std::path::PathBuf {
    let chat = dir.join("chat.jsonl");
    std::fs::write(&chat, CHAT).unwrap();
    let db = dir.join(name);
    ok(&["ingest", "--store", s(&db), "--user", "u", "--embedder", embedder, s(&chat)]);
    db
}

#[test]
fn bench_runs_with_views_that_do_not_all_fit() {
    // 40 users under a view budget of nothing: every query loads its user's view and drops the
    // one before, and the run still reports its row.
    let out = ok(&[
        "bench",
        "--embedder",
        "hashing",
        "--sizes",
        "400",
        "--users",
        "40",
        "--queries",
        "40",
        "--view-cache-mib",
        "0",
    ]);
    let row =
        out.lines().find(|l| l.starts_with("| 400 |")).unwrap_or_else(|| panic!("no row for 400 in:\n{out}"));
    assert_eq!(row.split('|').count(), 17, "{row}");
}

#[test]
fn two_processes_build_byte_identical_outputs() {
    let dir = tempfile::tempdir().unwrap();
    for embedder in ["hashing", "minilm"] {
        let mut outputs = Vec::new();
        for run in 0..2 {
            let db = ingest_chat(dir.path(), &format!("{embedder}-{run}.db"), embedder);
            let mut all = String::new();
            for format in ["markdown", "text", "jsonl"] {
                all += &ok(&["export", "--store", s(&db), "--user", "u", "--format", format]);
            }
            all += &ok(&[
                "context",
                "--store",
                s(&db),
                "--user",
                "u",
                "--embedder",
                embedder,
                "--budget",
                "200",
                "What is my dog's name?",
            ]);
            all += &ok(&[
                "recall",
                "--store",
                s(&db),
                "--user",
                "u",
                "--embedder",
                embedder,
                "What do I do for work?",
            ]);
            outputs.push(all);
        }
        assert_eq!(outputs[0], outputs[1], "{embedder}");
        assert!(outputs[0].contains("Toby"));
        // The store files too, byte for byte, each written by its own processes.
        let files = [0, 1].map(|run| std::fs::read(dir.path().join(format!("{embedder}-{run}.db"))).unwrap());
        assert!(files[0] == files[1], "{embedder}: the store files differ");
    }
}

#[test]
fn invalid_utf8_is_refused_with_its_line_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.jsonl");
    let mut bytes = CHAT.lines().next().unwrap().as_bytes().to_vec();
    bytes.extend_from_slice(b"\n{\"role\":\"user\",\"content\":\"caf\xe9\",\"ts\":\"2023-01-01\"}\n");
    std::fs::write(&file, bytes).unwrap();
    let db = dir.path().join("m.db");
    let err = fails(&["ingest", "--store", s(&db), "--user", "u", "--embedder", "hashing", s(&file)]);
    assert!(err.contains("line 2: invalid UTF-8"), "{err}");
    assert!(!db.exists());
}

#[test]
fn a_bad_line_names_its_field_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("m.db");
    let cases = [
        (r#"{"role":"user","content":"x","ts":"whenever"}"#, "line 2: invalid input: ts"),
        (r#"{"role":"bot","content":"x","ts":"2023-01-01"}"#, "line 2.role"),
        (
            r#"{"role":"user","content":42,"ts":"2023-01-01"}"#,
            "line 2.content: expected a string, found a number",
        ),
        (r#"not json"#, "line 2: not JSON"),
    ];
    for (line, want) in cases {
        let file = dir.path().join("in.jsonl");
        std::fs::write(&file, format!("{}\n{line}\n", CHAT.lines().next().unwrap())).unwrap();
        let err = fails(&["ingest", "--store", s(&db), "--user", "u", "--embedder", "hashing", s(&file)]);
        assert!(err.contains(want), "{line}: {err}");
        assert!(!db.exists());
    }
}

#[test]
fn a_file_that_is_not_a_store_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("notes.txt");
    std::fs::write(&db, "hello\n".repeat(1000)).unwrap();
    let err = fails(&["export", "--store", s(&db), "--user", "u"]);
    assert!(err.contains("is not a mnemon store"), "{err}");
    let err = fails(&["context", "--store", s(&db), "--user", "u", "--embedder", "hashing", "q"]);
    assert!(err.contains("not a SQLite database"), "{err}");
}

#[test]
fn export_and_import_round_trip_through_files() {
    let dir = tempfile::tempdir().unwrap();
    let a = ingest_chat(dir.path(), "a.db", "hashing");
    let b = dir.path().join("b.db");
    let dump = dir.path().join("u.jsonl");
    ok(&["export", "--store", s(&a), "--user", "u", "--format", "jsonl", "-o", s(&dump)]);
    let report = ok(&["import", "--store", s(&b), s(&dump)]);
    assert!(report.contains("\"rounds\":3"), "{report}");
    assert_eq!(
        ok(&["export", "--store", s(&a), "--user", "u", "--format", "text"]),
        ok(&["export", "--store", s(&b), "--user", "u", "--format", "text"])
    );
    let forgot = ok(&["forget", "--store", s(&b), "--user", "u"]);
    assert!(forgot.contains("\"rounds\":3"));
}

#[test]
fn doctor_fails_with_the_fix_when_models_are_missing() {
    let dir = tempfile::tempdir().unwrap();
    let out = fails(&["doctor", "--models", s(dir.path())]);
    assert!(out.contains("FAIL  model file"), "{out}");
    assert!(out.contains("fix: run `mnemon fetch-models`"), "{out}");
    assert!(out.contains("scripts/fetch-models.sh"), "{out}");
    assert!(out.contains("ok    fts5: enabled"), "{out}");
}

#[test]
fn doctor_passes_with_the_fetched_models_and_shows_store_pins() {
    let dir = tempfile::tempdir().unwrap();
    let db = ingest_chat(dir.path(), "m.db", "minilm");
    let out = ok(&["doctor", "--store", s(&db)]);
    assert!(out.contains("all checks passed"), "{out}");
    assert!(out.contains("ok    store quick_check: ok"), "{out}");
    assert!(out.contains("pin embedder.name = all-MiniLM-L6-v2-int8"), "{out}");
}

/// `mnemon demo` runs its model once here (the slowest step of the suite): its output, the
/// context it prints with MiniLM, and the store it leaves, which the decision log and
/// `consolidate` read without models.
#[test]
fn demo_runs_end_to_end_and_its_store_consolidates_without_models() {
    let _model = crate::common::one_model_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("demo.db");
    let out = ok(&["demo", "--store", s(&db)]);
    assert!(out.contains("<memory-") && out.contains("# Memory of `maya`"), "{out}");
    assert!(out.contains("1 duplicate rounds skipped") && out.contains("1 empty turns dropped"), "{out}");
    // The model's facts (Qwen2.5-Coder-0.5B under the slots contract): the move to Lisbon
    // supersedes the home in Porto under one key, and the export shows it.
    assert!(out.contains("facts made by qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"), "{out}");
    assert!(out.contains(" active, 1 superseded"), "{out}");
    assert!(
        out.contains("~~The user lives in Porto with the user's beagle, Toby.~~ (superseded by `"),
        "{out}"
    );
    assert!(out.contains("The user moved to Lisbon last week!"), "{out}");
    let log = &out[out.find("== decision log").unwrap()..];
    let superseded: Vec<&str> = log.lines().filter(|l| l.starts_with("fact.superseded")).collect();
    assert_eq!(superseded.len(), 1, "{log}");
    assert!(superseded[0].contains(r#""key":"user|lives_in""#) && superseded[0].contains("Lisbon"), "{log}");
    // As of a time before the move, the old home is current and the new one unknown.
    let then = &out[out.find("== the facts as of").unwrap()..out.find("== decision log").unwrap()];
    assert!(then.contains("The user lives in Porto") && !then.contains("Lisbon"), "{then}");
    // The context (MiniLM) answers the demo's question with the current fact.
    let context = &out[out.find("<memory-").unwrap()..out.find("</memory-").unwrap()];
    for needed in ["Lisbon", "peanuts", "- The user moved to Lisbon last week!"] {
        assert!(context.contains(needed), "the context lacks {needed}:\n{context}");
    }
    assert!(!context.contains("- The user lives in Porto"), "a superseded fact in the context:\n{context}");

    // The store it leaves: the log and consolidate need no model.
    let log = ok(&["log", "--store", s(&db), "--user", "maya"]);
    assert_eq!(log.matches(" fact.superseded ").count(), 1, "{log}");
    assert!(log.starts_with("#1 at "), "{log}");
    // The profile: the current home, changed once; Porto is not there.
    let profile = ok(&["profile", "--store", s(&db), "--user", "maya"]);
    let home: Vec<&str> = profile.lines().filter(|l| l.starts_with("- lives_in: ")).collect();
    assert_eq!(home.len(), 1, "{profile}");
    assert!(home[0].contains("Lisbon") && home[0].ends_with(", changed once)"), "{profile}");
    assert!(!profile.contains("Porto"), "{profile}");
    let json: serde_json::Value =
        serde_json::from_str(&ok(&["profile", "--store", s(&db), "--user", "maya", "--json"])).unwrap();
    assert_eq!(json["relations"][0]["relation"], "lives_in", "{json}");
    let report = ok(&["consolidate", "--store", s(&db), "--user", "maya"]);
    assert_eq!(report.trim(), r#"{"superseded":0,"restored":0,"rekeyed":0,"decayed":0,"condensed":0}"#);
    let decayed = ok(&["consolidate", "--store", s(&db), "--user", "maya", "--decay"]);
    let v: serde_json::Value = serde_json::from_str(&decayed).unwrap();
    assert!(v["decayed"].as_u64().unwrap() > 0, "{decayed}");
    let again = ok(&["consolidate", "--store", s(&db), "--user", "maya", "--decay"]);
    assert_eq!(
        again.trim(),
        r#"{"superseded":0,"restored":0,"rekeyed":0,"decayed":0,"condensed":0}"#,
        "twice = once"
    );
    assert!(ok(&["log", "--store", s(&db), "--user", "maya"]).contains(" fact.decayed "));
}

/// The flag names of earlier releases still work, for this release (hidden aliases).
#[test]
fn the_flag_names_of_the_last_release_still_work() {
    let dir = tempfile::tempdir().unwrap();
    let db = ingest_chat(dir.path(), "m.db", "hashing");
    assert_eq!(
        ok(&["export", "--db", s(&db), "--user", "u", "--format", "md"]),
        ok(&["export", "--store", s(&db), "--user", "u", "--format", "markdown"])
    );
    assert_eq!(
        ok(&["list", "--db", s(&db), "--user", "u", "--scope", "local"]),
        ok(&["list", "--store", s(&db), "--user", "u", "--reach", "local"])
    );
}

#[test]
fn benchmark_files_ingest_one_user_per_question_or_conversation() {
    let dir = tempfile::tempdir().unwrap();
    let lme = dir.path().join("lme.json");
    std::fs::write(
        &lme,
        r#"[{"question_id":"q1","question_type":"single-session-user","question":"?","answer":"x",
            "question_date":"2023/05/30 (Tue) 10:00",
            "haystack_dates":["2023/05/25 (Thu) 09:00","2023/05/20 (Sat) 02:21"],
            "haystack_session_ids":["late","early"],
            "haystack_sessions":[[{"role":"user","content":"later session"},{"role":"assistant","content":"ok"}],
                                 [{"role":"user","content":"I bought a red kayak.","has_answer":true},{"role":"assistant","content":"Nice!"}]],
            "answer_session_ids":["early"]},
           {"question_id":"q2","haystack_dates":["2023/01/01 (Sun) 00:00"],"haystack_session_ids":["s"],
            "haystack_sessions":[[{"role":"user","content":"hello there"}]]}]"#,
    )
    .unwrap();
    let db = dir.path().join("lme.db");
    let out = ok(&["ingest", "--store", s(&db), "--format", "longmemeval", "--embedder", "hashing", s(&lme)]);
    assert!(out.contains("\"users\":2") && out.contains("\"rounds_stored\":3"), "{out}");
    let md = ok(&["export", "--store", s(&db), "--user", "q1"]);
    assert!(md.find("kayak").unwrap() < md.find("later session").unwrap(), "sessions sorted by date");

    let locomo = dir.path().join("locomo.json");
    std::fs::write(
        &locomo,
        r#"[{"sample_id":"conv-1","conversation":{"speaker_a":"Caroline","speaker_b":"Mel",
            "session_2_date_time":"2:00 pm on 9 May, 2023","session_1_date_time":"1:56 pm on 8 May, 2023",
            "session_3_date_time":"3:00 pm on 10 May, 2023",
            "session_2":[{"speaker":"Mel","dia_id":"D2:1","text":"Look at this!","blip_caption":"a photo of a cat"}],
            "session_1":[{"speaker":"Caroline","dia_id":"D1:1","text":"I went to a support group."},
                         {"speaker":"Mel","dia_id":"D1:2","text":"That's great."}]},
            "qa":[]}]"#,
    )
    .unwrap();
    let db = dir.path().join("locomo.db");
    let out = ok(&["ingest", "--store", s(&db), "--format", "locomo", "--embedder", "hashing", s(&locomo)]);
    assert!(out.contains("\"rounds_stored\":2"), "{out}");
    let text = ok(&["export", "--store", s(&db), "--user", "conv-1", "--format", "text"]);
    assert!(text.contains("user [speaker Caroline] [id D1:1]: I went to a support group."), "{text}");
    assert!(text.contains("[shared an image: a photo of a cat]"), "{text}");
    let err = fails(&[
        "ingest",
        "--store",
        s(&db),
        "--format",
        "locomo",
        "--user",
        "conv-9",
        "--embedder",
        "hashing",
        s(&locomo),
    ]);
    assert!(err.contains("no question or conversation"), "{err}");
}

#[test]
fn eval_flags_are_checked_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("none.json");
    let out = dir.path().join("run");
    let base = ["eval", "run", "--dataset", s(&data), "--benchmark", "longmemeval", "--out", s(&out)];
    let e = fails(&[&base[..], &["--reader", "m"]].concat());
    assert!(e.contains("--judge"), "{e}");
    let e = fails(&[&base[..], &["--rrf", "5", "--dense-only"]].concat());
    assert!(e.contains("--dense-only") && e.contains("--rrf"), "{e}");
    let templates = dir.path().join("t.json");
    std::fs::write(&templates, r#"{"standard": "no placeholders"}"#).unwrap();
    let e = fails(&[&base[..], &["--reader", "m", "--judge", "j", "--templates", s(&templates)]].concat());
    assert!(e.contains("t.json") && e.contains("{question}"), "{e}");
    assert!(!out.exists(), "nothing was written");
}

#[test]
fn extract_prints_the_same_facts_in_two_processes() {
    let _model = crate::common::one_model_at_a_time();
    let model = mnemon::extract::default_gguf("SmolLM2-135M-Instruct.Q4_1.gguf");
    let model = model.to_str().unwrap();
    let round =
        "user: I moved to Lisbon last week with my beagle Toby.\nassistant: Congratulations on the move!";
    let args = ["extract", "--extractor", model, "--extract-max-tokens", "96", round];
    let a = ok(&args);
    assert_eq!(ok(&args), a, "byte-identical across processes");
    let v: serde_json::Value = serde_json::from_str(&a).unwrap();
    assert!(v["prompt_tokens"].as_u64().unwrap() > 100, "{a}");
    let doctor = ok(&["doctor", "--extractor", model]);
    assert!(doctor.contains("ok    extractor") && doctor.contains("quant Q4_1"), "{doctor}");
    let bad = mnemon(&["doctor", "--extractor", "/nonexistent/model.gguf"]);
    let report = String::from_utf8_lossy(&bad.stdout);
    assert!(
        !bad.status.success() && report.contains("FAIL  extractor") && report.contains("fetch-models"),
        "{report}"
    );
    let e = fails(&["extract", "--extractor", "/nonexistent/model.gguf", round]);
    assert!(e.contains("/nonexistent/model.gguf") && e.contains("scripts/fetch-models.sh"), "{e}");
}

#[test]
fn ingest_with_an_extractor_stores_facts_that_the_context_shows() {
    let _model = crate::common::one_model_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let model = mnemon::extract::default_gguf("SmolLM2-135M-Instruct.Q4_1.gguf");
    let model = model.to_str().unwrap();
    let chat = dir.path().join("chat.jsonl");
    std::fs::write(&chat, CHAT).unwrap();
    let cache = dir.path().join("extract-cache.db");
    let ingest = |name: &str| {
        let db = dir.path().join(name);
        let args = ["--embedder", "hashing", "--extractor", model, "--extract-cache", s(&cache)];
        let out = ok(&[&["ingest", "--store", s(&db), "--user", "u"][..], &args, &[s(&chat)]].concat());
        (db, out)
    };
    let (db, out) = ingest("a.db");
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["extractor"], "SmolLM2-135M-Instruct.Q4_1.gguf", "{out}");
    assert_eq!(report["rounds_stored"], 3, "{out}");
    // A second store from the cache: the same bytes in every export.
    let (copy, _) = ingest("b.db");
    for format in ["markdown", "text", "jsonl"] {
        assert_eq!(
            ok(&["export", "--store", s(&db), "--user", "u", "--format", format]),
            ok(&["export", "--store", s(&copy), "--user", "u", "--format", format])
        );
    }
    let text = ok(&["export", "--store", s(&db), "--user", "u", "--format", "text"]);
    assert_eq!(text.matches(" round.extracted ").count(), 3, "{text}");
    let context = ok(&[
        "context",
        "--store",
        s(&db),
        "--user",
        "u",
        "--embedder",
        "hashing",
        "--extractor",
        model,
        "Who is Toby?",
    ]);
    assert!(context.contains("Toby"), "{context}");
    // Reading needs no extractor: the same context without one.
    let plain = ok(&["context", "--store", s(&db), "--user", "u", "--embedder", "hashing", "Who is Toby?"]);
    assert_eq!(plain, context);
    // Nothing is stale under the extractor that built it.
    let reextract = |x: &str| -> serde_json::Value {
        let args =
            ["reextract", "--store", s(&db), "--embedder", "hashing", "--extractor", x, "--extract-cache"];
        serde_json::from_str(&ok(&[&args[..], &[s(&cache)]].concat())).unwrap()
    };
    assert_eq!(reextract(model)["reextract"]["rounds"], 0);
    // Another extractor (a script that finds nothing) re-extracts every round, replacing every fact.
    let script = dir.path().join("nothing.json");
    std::fs::write(&script, "{}").unwrap();
    let report = reextract(s(&script));
    assert_eq!(report["reextract"]["rounds"], 3, "{report}");
    let extractors = report["extractors"].as_array().unwrap();
    assert_eq!(extractors.len(), 2, "{report}");
    assert_eq!(
        (extractors[0]["rounds"].clone(), extractors[0]["facts"].clone()),
        (0.into(), 0.into()),
        "{report}"
    );
    assert_eq!((extractors[1]["current"].clone(), extractors[1]["rounds"].clone()), (true.into(), 3.into()));
    let after = ok(&["export", "--store", s(&db), "--user", "u", "--format", "text"]);
    assert!(after.contains("\nfacts: 0\n"), "{after}");
    assert_eq!(
        after.matches(" fact.replaced ").count(),
        report["reextract"]["replaced"].as_u64().unwrap() as usize
    );
}

/// Runs mnemon with `MNEMON_DATA` set to `data`.
fn in_data(data: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mnemon"))
        .env("MNEMON_DATA", data)
        .args(args)
        .output()
        .expect("run mnemon")
}

fn ok_in(data: &Path, args: &[&str]) -> serde_json::Value {
    let out = in_data(data, args);
    assert!(out.status.success(), "mnemon {args:?} failed:\n{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{args:?}: not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
}

#[test]
fn notes_through_the_cli_with_project_and_global_stores() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let project = dir.path().join("my-app");
    std::fs::create_dir(&project).unwrap();
    let p = s(&project);
    let h = ["--embedder", "hashing"];
    let with = |args: &[&str]| -> Vec<String> { args.iter().chain(&h).map(|a| a.to_string()).collect() };
    let run = |args: &[&str]| ok_in(&data, &with(args).iter().map(String::as_str).collect::<Vec<_>>());

    // remember: one from the arguments (stamped now when no --ts), many from a file.
    let out = in_data(
        &data,
        &["remember", "--store", p, "--tag", "food", "--embedder", "hashing", "The user is vegetarian."],
    );
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("stamped "), "the stamp it used is printed");
    let file = dir.path().join("notes.jsonl");
    std::fs::write(&file, NOTES).unwrap();
    let stored = run(&["remember", "--store", p, "--file", s(&file)]);
    let deploy = stored["notes"][0]["key"].as_str().unwrap().to_owned();
    assert_eq!(stored["notes"].as_array().unwrap().len(), 2);
    // The project directory maps to one stable file under MNEMON_DATA.
    let stores: Vec<_> = std::fs::read_dir(data.join("projects")).unwrap().collect();
    assert_eq!(stores.len(), 1);

    let got = ok_in(&data, &["get", "--store", p, &deploy]);
    assert_eq!((got["record"].as_str(), got["kind"].as_str()), (Some("note"), Some("procedural")));
    let listed = ok_in(&data, &["list", "--store", p, "--tag-any", "WORK"]);
    assert_eq!(listed["notes"].as_array().unwrap().len(), 1);
    let listed =
        ok_in(&data, &["list", "--store", p, "--kind", "episodic", "--kind", "semantic", "--limit", "1"]);
    assert_eq!(listed["notes"].as_array().unwrap().len(), 1);
    let next = listed["next"].as_str().unwrap().to_owned();
    let rest =
        ok_in(&data, &["list", "--store", p, "--kind", "episodic", "--kind", "semantic", "--cursor", &next]);
    assert_eq!(rest["notes"].as_array().unwrap().len(), 1);
    assert!(rest["next"].is_null());
    assert_eq!(ok_in(&data, &["count", "--store", p])["notes"], 3);

    let found = run(&["search", "--store", p, "--min-score", "0.5", "how do I deploy with make?"]);
    assert_eq!(found["hits"].as_array().unwrap().len(), 1, "the floor of `low` drops the run: {found}");
    assert_eq!(found["hits"][0]["note"]["key"].as_str(), Some(deploy.as_str()));
    assert_eq!(found["hits"][0]["relevance"].as_str(), Some("high"));
    let updated = run(&[
        "update",
        "--store",
        p,
        "--ts",
        "2026-04-01T00:00:00",
        "--content",
        "Deploy with make ship.",
        &deploy,
    ]);
    assert_eq!(
        (updated["content"].as_str(), updated["updated"].as_str()),
        (Some("Deploy with make ship."), Some("2026-04-01T00:00:00"))
    );

    // context with query angles: notes and rounds in one block.
    let chat = dir.path().join("chat.jsonl");
    std::fs::write(&chat, CHAT).unwrap();
    let db = data.join("projects").join(stores[0].as_ref().unwrap().file_name());
    ok(&["ingest", "--store", s(&db), "--user", "default", "--embedder", "hashing", s(&chat)]);
    let out = in_data(
        &data,
        &with(&["context", "--store", p, "--query", "how do I deploy", "What is my dog's name?"])
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    let block = String::from_utf8_lossy(&out.stdout);
    assert!(block.contains("Toby") && block.contains("make ship") && block.contains("[Memory "), "{block}");

    // copy and move between the project and the global store.
    let copied = ok_in(&data, &["copy", "--from", p, "--to", "global", &deploy]);
    assert_eq!(copied["copied"][0].as_str(), Some(deploy.as_str()));
    assert!(data.join("global.db").exists());
    let all = ok_in(&data, &["list", "--store", p, "--reach", "all"]);
    assert_eq!(all["notes"].as_array().unwrap().len(), 3, "the copied note once");
    let veg =
        run(&["search", "--store", p, "vegetarian"])["hits"][0]["note"]["key"].as_str().unwrap().to_owned();
    let moved = ok_in(&data, &["move", "--from", p, "--to", "global", &veg]);
    assert_eq!(moved["removed"][0].as_str(), Some(veg.as_str()));
    assert_eq!(ok_in(&data, &["list", "--reach", "global"])["notes"].as_array().unwrap().len(), 2);
    assert_eq!(ok_in(&data, &["count", "--store", p])["notes"], 2);

    // delete, then the key is gone; bad input names the field and exits non-zero.
    let deleted = run(&["delete", "--store", p, &deploy]);
    assert_eq!(deleted["record"].as_str(), Some("note"));
    let gone = in_data(&data, &["get", "--store", p, &deploy]);
    assert!(!gone.status.success() && String::from_utf8_lossy(&gone.stderr).contains("not found"));
    let bad = in_data(&data, &["remember", "--store", p, "--embedder", "hashing", "--importance", "3", "x"]);
    assert!(!bad.status.success() && String::from_utf8_lossy(&bad.stderr).contains("memories[0].importance"));
    let bad = in_data(&data, &["remember", "--store", p, "--embedder", "hashing", "--metadata", "[1]", "x"]);
    assert!(!bad.status.success() && String::from_utf8_lossy(&bad.stderr).contains("memories[0].metadata"));
    let bad = in_data(&data, &["list", "--store", "nowhere/at/all"]);
    assert!(!bad.status.success() && String::from_utf8_lossy(&bad.stderr).contains("store"));
}

#[test]
fn an_agent_sees_only_its_own_and_the_shared_notes_through_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("a.db");
    let d = s(&db);
    let h = ["--embedder", "hashing", "--ts", "2026-01-01T00:00:00"];
    let remember = |extra: &[&str], text: &str| {
        let mut args = vec!["remember", "--store", d];
        args.extend(extra);
        args.extend(h);
        args.push(text);
        ok(&args);
    };
    remember(&[], "shared note about tea");
    remember(&["--agent", "a"], "agent a note about tea");
    remember(&["--agent", "b"], "agent b note about tea");
    let contents = |agent: Option<&str>| -> Vec<String> {
        let mut args = vec!["list", "--store", d];
        if let Some(a) = agent {
            args.extend(["--agent", a]);
        }
        let v: serde_json::Value = serde_json::from_str(&ok(&args)).unwrap();
        v["notes"].as_array().unwrap().iter().map(|n| n["content"].as_str().unwrap().to_owned()).collect()
    };
    assert_eq!(contents(Some("a")).len(), 2);
    assert!(contents(Some("a")).iter().all(|c| !c.contains("agent b")));
    assert_eq!(contents(None).len(), 3);
    let md = ok(&["export", "--store", d, "--user", "default", "--agent", "b"]);
    assert!(md.contains("agent b note") && !md.contains("agent a note"));
}

#[test]
fn backup_copies_a_store_that_then_answers_the_same_and_never_overwrites() {
    let dir = tempfile::tempdir().unwrap();
    let db = ingest_chat(dir.path(), "m.db", "hashing");
    let out = dir.path().join("copy.db");
    let said = ok(&["backup", "--store", s(&db), s(&out)]);
    assert!(said.contains("quick_check ok"), "{said}");
    let export = |p: &Path| ok(&["export", "--store", s(p), "--user", "u", "--format", "jsonl"]);
    assert_eq!(export(&db), export(&out));
    let again = fails(&["backup", "--store", s(&db), s(&out)]);
    assert!(again.contains("out") && again.contains("never overwrites"), "{again}");
    // A truncated copy is refused by name.
    let bytes = std::fs::read(&out).unwrap();
    let cut = dir.path().join("cut.db");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let refused = fails(&["export", "--store", s(&cut), "--user", "u"]);
    assert!(refused.contains("cut.db") && refused.contains("truncated"), "{refused}");
}

#[test]
fn fuzzing_every_parser_of_outside_text_finds_no_panic() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_mnemon"))
        .args(["fuzz", "--cases", "400", "--seed", "7"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{table}\n{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(table.lines().filter(|l| l.starts_with("| ") && l.ends_with(" | 0 |")).count(), 10, "{table}");
    let all = table.lines().find(|l| l.starts_with("| all |")).unwrap();
    assert!(all.starts_with("| all | 3600 |"), "{all}");
}

#[test]
fn forget_with_the_vector_cache_leaves_no_byte_of_the_user_in_the_store_or_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let chat = dir.path().join("chat.jsonl");
    std::fs::write(&chat, CHAT.replace("beagle", "Zorblaxian beagle")).unwrap();
    let (db, vectors) = (dir.path().join("m.db"), dir.path().join("vectors.db"));
    let cache = ["--embedder", "hashing", "--embed-cache", s(&vectors)];
    let mut ingest = vec!["ingest", "--store", s(&db), "--user", "u"];
    ingest.extend(cache);
    ingest.push(s(&chat));
    ok(&ingest);
    let holding = || -> Vec<String> {
        std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.file_name().unwrap() != "chat.jsonl")
            .filter(|p| String::from_utf8_lossy(&std::fs::read(p).unwrap()).contains("Zorblaxian"))
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect()
    };
    let cached = || -> i64 {
        rusqlite::Connection::open(&vectors)
            .unwrap()
            .query_row("SELECT count(*) FROM vectors", [], |r| r.get(0))
            .unwrap()
    };
    assert!(!holding().is_empty() && cached() > 0);
    let mut forget = vec!["forget", "--store", s(&db), "--user", "u"];
    forget.extend(cache);
    let report = ok(&forget);
    assert!(report.contains("\"scrubbed\":true"), "{report}");
    assert_eq!(holding(), Vec::<String>::new());
    assert_eq!(cached(), 0, "the user's vectors left in the cache");
}

/// The test PostgreSQL server (`$MNEMON_PG_URL`, else the project's own, started by
/// `scripts/postgres.sh start`) with a fresh database named `name`; returns its URL.
fn postgres_db(name: &str) -> String {
    let url = match std::env::var("MNEMON_PG_URL") {
        Ok(url) => url,
        Err(_) => {
            let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/postgres.sh");
            let out = Command::new(script).arg("start").output().expect("run scripts/postgres.sh");
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            String::from_utf8(out.stdout).unwrap().lines().last().unwrap().trim().to_owned()
        }
    };
    let db = format!("mnemon_cli_{name}_{}", std::process::id());
    let mut admin = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    admin.batch_execute(&format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)")).unwrap();
    admin.batch_execute(&format!("CREATE DATABASE {db}")).unwrap();
    format!("{}/{db}", url.rsplit_once('/').unwrap().0)
}

#[test]
fn every_store_command_gives_the_same_output_on_a_file_and_on_postgres() {
    let dir = tempfile::tempdir().unwrap();
    let chat = dir.path().join("chat.jsonl");
    std::fs::write(&chat, CHAT).unwrap();
    let notes = dir.path().join("notes.jsonl");
    std::fs::write(&notes, NOTES).unwrap();
    let file = dir.path().join("m.db");
    let url = postgres_db("same");
    let dump = dir.path().join("dump.jsonl");
    let mut outputs = Vec::new();
    for db in [s(&file), url.as_str()] {
        let h = ["--embedder", "hashing"];
        let run = |args: &[&str]| ok(&args.iter().chain(&h).copied().collect::<Vec<_>>());
        let mut out = vec![
            run(&["ingest", "--store", db, "--user", "u", s(&chat)]),
            run(&["remember", "--store", db, "--user", "u", "--file", s(&notes)]),
            run(&["search", "--store", db, "--user", "u", "deploy release"]),
            run(&["context", "--store", db, "--user", "u", "What is my dog called?"]),
            run(&["recall", "--store", db, "--user", "u", "cello lessons"]),
            ok(&["list", "--store", db, "--user", "u", "--tag-any", "work"]),
            ok(&["count", "--store", db, "--user", "u"]),
            ok(&["log", "--store", db, "--user", "u"]),
        ];
        for format in ["markdown", "text", "jsonl"] {
            out.push(ok(&["export", "--store", db, "--user", "u", "--format", format]));
        }
        out.push(ok(&["forget", "--store", db, "--user", "u"]));
        out.push(fails(&["export", "--store", db, "--user", "u", "--format", "jsonl"]));
        outputs.push(out);
    }
    // A file's forget empties its logs; PostgreSQL keeps deleted rows until VACUUM FULL, so a
    // forget there never says scrubbed. Everything else is the same.
    let forgot = outputs[0].len() - 2;
    assert_eq!(outputs[0][forgot], "{\"rounds\":3,\"notes\":2,\"scrubbed\":true}\n");
    assert_eq!(outputs[1][forgot], "{\"rounds\":3,\"notes\":2,\"scrubbed\":false}\n");
    outputs[1][forgot] = outputs[0][forgot].clone();
    assert_eq!(outputs[0], outputs[1]);
    assert!(outputs[1][8].contains("Toby") && outputs[1][8].contains("make release"), "{}", outputs[1][8]);
    // A dump imports into PostgreSQL, and doctor reads the store there.
    std::fs::write(&dump, &outputs[0][10]).unwrap();
    let other = postgres_db("import");
    ok(&["import", "--store", &other, s(&dump)]);
    let doctor = mnemon(&["doctor", "--store", &other]);
    let report =
        String::from_utf8_lossy(&doctor.stdout).into_owned() + &String::from_utf8_lossy(&doctor.stderr);
    assert!(report.contains("postgres://") && report.contains("opens"), "{report}");
}

#[test]
fn a_database_password_is_never_printed() {
    // A server that is not there (every command fails, and says so), and the test server, whose
    // trust authentication lets a URL with a password in (every command works).
    const CANARY: &str = "canary-pw-7f3a91";
    let url = format!("postgres://ann:{CANARY}@127.0.0.1:1/memories");
    let conninfo = format!("host=127.0.0.1 port=1 user=ann password={CANARY} dbname=memories");
    let real = postgres_db("canary");
    let (scheme_user, rest) = real.split_once('@').unwrap();
    let live = format!("{scheme_user}:{CANARY}@{rest}");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let out = out.to_str().unwrap();
    let dataset = dir.path().join("lme.json");
    std::fs::write(
        &dataset,
        r#"[{"question_id":"q1","question_type":"single-session-user","question":"What colour is my kayak?",
  "answer":"red","question_date":"2023/05/30 (Tue) 10:00","haystack_dates":["2023/05/20 (Sat) 02:21"],
  "haystack_session_ids":["s1"],"answer_session_ids":["s1"],
  "haystack_sessions":[[{"role":"user","content":"I bought a red kayak.","has_answer":true}]]}]"#,
    )
    .unwrap();
    let dataset = dataset.to_str().unwrap();
    let live_out = dir.path().join("live");
    let live_out = live_out.to_str().unwrap();
    assert!(ok(&[
        "ingest",
        "--store",
        &live,
        "--user",
        "ana",
        "--embedder",
        "hashing",
        s(&dataset_chat(dir.path()))
    ])
    .contains("stored"));
    fn eval<'a>(dataset: &'a str, scratch: &'a str, out: &'a str) -> Vec<&'a str> {
        let args =
            ["eval", "run", "--dataset", dataset, "--benchmark", "longmemeval", "--embedder", "hashing"];
        [&args[..], &["--scratch", scratch, "--out", out]].concat()
    }
    let runs: Vec<Vec<&str>> = vec![
        vec!["doctor", "--store", &live],
        vec!["count", "--store", &live, "--user", "ana"],
        vec!["export", "--store", &live, "--user", "ana", "--format", "text"],
        eval(dataset, &live, live_out),
        vec!["doctor", "--store", &url],
        vec!["export", "--store", &url, "--user", "ana"],
        vec!["export", "--store", &conninfo, "--user", "ana"],
        vec!["count", "--store", &url, "--user", "ana"],
        eval(dataset, &url, out),
    ];
    for args in runs {
        let o = mnemon(&args);
        let said = String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
        assert!(!said.contains(CANARY), "mnemon {args:?} printed the password:\n{said}");
    }
    for entry in walk(dir.path()) {
        let text = std::fs::read(&entry).unwrap();
        assert!(!String::from_utf8_lossy(&text).contains(CANARY), "{} holds the password", entry.display());
    }
}

/// A one-round chat as JSON Lines, written in `dir`.
fn dataset_chat(dir: &Path) -> std::path::PathBuf {
    let chat = dir.join("chat.jsonl");
    std::fs::write(&chat, CHAT).unwrap();
    chat
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

fn chats_fixture(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/chats").join(name)
}

/// `import-chats` of each hand-written export: a JSON summary, each skipped entry named on
/// stderr, nothing new on a second run; `--dry-run` stores nothing and prints JSONL that
/// imports to the same memory.
#[test]
fn import_chats_stores_each_export_once_and_a_dry_run_prints_what_it_would_store() {
    let dir = tempfile::tempdir().unwrap();
    for (format, name, rounds, skipped) in
        [("chatgpt", "chatgpt.json", 3, 2), ("claude", "claude.json", 4, 3), ("jsonl", "chats.jsonl", 2, 3)]
    {
        let db = dir.path().join(format!("{format}.db"));
        let file = chats_fixture(name);
        let args =
            ["import-chats", "--store", s(&db), "--user", "ana", "--format", format, "--embedder", "hashing"];
        let first = mnemon(&[&args[..], &[s(&file)]].concat());
        assert!(first.status.success(), "{}", String::from_utf8_lossy(&first.stderr));
        let summary: serde_json::Value = serde_json::from_slice(&first.stdout).unwrap();
        assert_eq!(summary["rounds_stored"], rounds, "{name}: {summary}");
        assert_eq!(summary["skipped"], skipped, "{name}: {summary}");
        let stderr = String::from_utf8_lossy(&first.stderr);
        assert_eq!(stderr.matches("skipped ").count(), skipped, "{name}: {stderr}");
        let again: serde_json::Value = serde_json::from_str(&ok(&[&args[..], &[s(&file)]].concat())).unwrap();
        assert_eq!(
            (again["rounds_stored"].as_u64(), again["rounds_duplicate"].as_u64()),
            (Some(0), Some(rounds))
        );

        // The dry run's JSONL, imported into another store, gives the same memory.
        let dry = dir.path().join(format!("{format}-dry.db"));
        let printed = ok(&[
            "import-chats",
            "--store",
            s(&dry),
            "--user",
            "ana",
            "--format",
            format,
            "--dry-run",
            s(&file),
        ]);
        assert!(!dry.exists(), "a dry run creates no store");
        let jsonl = dir.path().join(format!("{format}.jsonl"));
        std::fs::write(&jsonl, printed).unwrap();
        ok(&[
            "import-chats",
            "--store",
            s(&dry),
            "--user",
            "ana",
            "--format",
            "jsonl",
            "--embedder",
            "hashing",
            s(&jsonl),
        ]);
        let export = |db: &Path| ok(&["export", "--store", s(db), "--user", "ana"]);
        assert_eq!(export(&db), export(&dry), "{name}");
    }
    let bad = fails(&["import-chats", "--user", "ana", "--format", "myspace", "x.json"]);
    assert!(bad.contains("expected chatgpt, claude or jsonl"), "{bad}");
}

/// With an extractor, the rounds are queued for the background worker and the command waits
/// for the queue: every round's facts are there when it returns.
#[test]
fn import_chats_with_an_extractor_extracts_every_round_before_it_returns() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("facts.json");
    std::fs::write(
        &script,
        r#"{"I started learning the cello in September.": [{"content": "The user is learning the cello.",
            "raw": "user: I started learning the cello", "when": null, "subject": "user", "predicate": "plays",
            "object": "the cello", "salience": 1.0}],
            "My teacher is called Agnes.": [{"content": "The user's cello teacher is Agnes.",
            "raw": "user: My teacher is called Agnes", "when": null, "subject": "user", "predicate": "has teacher",
            "object": "Agnes", "salience": 1.0}]}"#,
    )
    .unwrap();
    let db = dir.path().join("m.db");
    let file = chats_fixture("chats.jsonl");
    let out = ok(&[
        "import-chats",
        "--store",
        s(&db),
        "--user",
        "ana",
        "--format",
        "jsonl",
        "--embedder",
        "hashing",
        "--extractor",
        s(&script),
        s(&file),
    ]);
    let summary: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(summary["facts"], 2, "{summary}");
}
