//! `mnemon doctor`: every check prints `ok` or `FAIL` with the fix; any failure exits non-zero.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use mnemon::embed::{Embedder as _, HashingEmbedder, OnnxConfig, OnnxEmbedder};
use mnemon::extract::{Extractor as _, LlamaConfig, LlamaExtractor};
use mnemon::rounds::{Role, Turn};
use mnemon::stores::redact;
use mnemon::Memory;

struct Report {
    failures: usize,
}

impl Report {
    fn ok(&self, what: &str, detail: impl std::fmt::Display) {
        println!("ok    {what}: {detail}");
    }
    fn fail(&mut self, what: &str, problem: impl std::fmt::Display, fix: &str) {
        self.failures += 1;
        println!("FAIL  {what}: {problem}\n      fix: {fix}");
    }
}

pub fn run(db: Option<&Path>, models: Option<PathBuf>, extractor: Option<&Path>) -> ExitCode {
    let mut r = Report { failures: 0 };
    let dir = models.unwrap_or_else(mnemon::model_files::default_dir);
    println!("models folder: {}", dir.display());
    for (path, status) in mnemon::model_files::verify(&dir) {
        match status {
            Ok(()) => r.ok("model file", path.display()),
            Err(e) => r.fail(&format!("model file {}", path.display()), e, mnemon::model_files::FETCH_HINT),
        }
    }
    match OnnxEmbedder::new(OnnxConfig::from_dir(&dir)) {
        Ok(e) => match e.embed_query("The user lives in Lisbon.") {
            Ok(v) => r.ok("ONNX Runtime + MiniLM", format!("loaded, embeds to {} dimensions", v.len())),
            Err(err) => r.fail("ONNX Runtime + MiniLM", err, mnemon::model_files::FETCH_HINT),
        },
        Err(err) => r.fail("ONNX Runtime + MiniLM", err, mnemon::model_files::FETCH_HINT),
    }
    #[cfg(target_arch = "x86_64")]
    r.ok(
        "cpu",
        format!(
            "avx2 {}, fma {} (the vector kernel uses them when present)",
            std::is_x86_feature_detected!("avx2"),
            std::is_x86_feature_detected!("fma")
        ),
    );
    match sqlite_versions() {
        Ok(versions) => {
            for (name, version) in versions {
                if version == "missing" {
                    r.fail(&name, "not compiled in", "rebuild with rusqlite's `bundled` feature");
                } else {
                    r.ok(&name, version);
                }
            }
        }
        Err(e) => r.fail("sqlite", e, "rebuild mnemon (rusqlite `bundled`, sqlite-vec)"),
    }
    if let Some(path) = extractor {
        let what = format!("extractor {}", path.display());
        let extracted = LlamaExtractor::load(path, LlamaConfig { max_tokens: 48, ..LlamaConfig::default() })
            .and_then(|m| {
                let turn = Turn::new(Role::User, "I live in Lisbon.", String::new());
                Ok((m.pins(), m.extract(&[turn])?))
            });
        match extracted {
            Ok((pins, e)) => {
                r.ok(&what, format!("loads and decodes ({} prompt tokens)", e.prompt_tokens));
                println!(
                    "      quant {}, runtime {}, blake3 {}",
                    pins.quant, pins.runtime, pins.model_blake3
                );
            }
            Err(mnemon::Error::ModelUnavailable { reason, fix, .. }) => r.fail(&what, reason, &fix),
            Err(e) => r.fail(&what, e, "check that the file is a complete GGUF with a chat template"),
        }
    }
    if let Some(db) = db {
        let opened = Memory::builder(db)
            .stored()
            .open()
            .and_then(|m| Ok((m.pins()?, m.user_names()?, m.extractors(None)?, m.check(false)?)));
        match opened {
            Ok((pins, users, extractors, problems)) => {
                r.ok("store", format!("{} opens, {} users", redact(&db.display().to_string()), users.len()));
                if problems.is_empty() {
                    r.ok("store quick_check", "ok");
                } else {
                    r.fail(
                        "store quick_check",
                        problems.join("; "),
                        "restore the latest `mnemon backup`, or export what still reads and import it",
                    );
                }
                for (k, v) in pins {
                    println!("      pin {k} = {v}");
                }
                for e in extractors {
                    let name = e.pins.get("extractor").map_or("?", String::as_str);
                    println!("      extractor {} ({name}): {} rounds, {} facts", e.hash, e.rounds, e.facts);
                }
            }
            Err(e) => r.fail("store", e, "check the path; a store of a newer schema needs a newer mnemon"),
        }
    }
    if r.failures == 0 {
        println!("all checks passed");
        ExitCode::SUCCESS
    } else {
        println!("{} check(s) failed", r.failures);
        ExitCode::FAILURE
    }
}

fn sqlite_versions() -> mnemon::Result<Vec<(String, String)>> {
    let dir = tempfile::tempdir()?;
    let memory = Memory::builder(dir.path().join("doctor.db")).embedder(HashingEmbedder::default()).open()?;
    memory.versions()
}
