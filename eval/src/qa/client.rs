//! The chat endpoint and the cache in front of it: an OpenAI-compatible `/chat/completions`
//! client with retries, and one SQLite file of reader replies and verdicts shared by runs.

// Back-off between retries sleeps; the engine never reads a clock, the harness may.
#![allow(clippy::disallowed_methods)]

use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use mnemon::{Error, Result};

/// Where the chat endpoint is.
#[derive(Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// Base URL, ending before `/chat/completions`.
    pub base_url: String,
    /// Bearer token, if any.
    pub api_key: Option<String>,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<set>"))
            .finish()
    }
}

impl Endpoint {
    /// From `MNEMON_EVAL_BASE_URL` / `OPENAI_BASE_URL` and `MNEMON_EVAL_API_KEY` / `OPENAI_API_KEY`.
    pub fn from_env() -> Endpoint {
        let var = |names: &[&str]| {
            names.iter().find_map(|n| std::env::var(n).ok().filter(|v| !v.trim().is_empty()))
        };
        Endpoint {
            base_url: var(&["MNEMON_EVAL_BASE_URL", "OPENAI_BASE_URL"])
                .unwrap_or_else(|| "https://api.openai.com/v1".into()),
            api_key: var(&["MNEMON_EVAL_API_KEY", "OPENAI_API_KEY"]),
        }
    }
}

/// One reply of the chat endpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reply {
    /// The message content.
    pub text: String,
    /// Prompt tokens billed (0 when the server does not say).
    pub prompt_tokens: u64,
    /// Completion tokens billed.
    pub completion_tokens: u64,
}

/// A blocking client for `POST {base}/chat/completions`, retrying 429s, 5xxs and transport
/// failures with exponential back-off.
pub struct Client {
    endpoint: Endpoint,
    agent: ureq::Agent,
    attempts: u32,
    backoff: Duration,
}

fn remote(url: &str, reason: impl std::fmt::Display) -> Error {
    Error::from(std::io::Error::other(format!("{url}: {reason}")))
}

impl Client {
    /// A client with a 5-minute limit per request, 6 attempts and back-off from 2 s.
    pub fn new(endpoint: Endpoint) -> Client {
        let config = ureq::Agent::config_builder()
            .timeout_global(Some(Duration::from_secs(300)))
            .http_status_as_error(false)
            .build();
        Client {
            endpoint,
            agent: ureq::Agent::new_with_config(config),
            attempts: 6,
            backoff: Duration::from_secs(2),
        }
    }

    /// Sets the number of attempts and the first back-off (doubled after each failure).
    pub fn with_retries(mut self, attempts: u32, backoff: Duration) -> Client {
        self.attempts = attempts.max(1);
        self.backoff = backoff;
        self
    }

    /// One single-message chat completion at temperature 0.
    pub fn chat(&self, model: &str, prompt: &str, max_tokens: u32) -> Result<Reply> {
        let url = format!("{}/chat/completions", self.endpoint.base_url.trim_end_matches('/'));
        let body = json!({
            "model": model,
            "messages": [{ "role": "user", "content": prompt }],
            "temperature": 0,
            "max_tokens": max_tokens,
        });
        let mut wait = self.backoff;
        let mut last = String::new();
        for attempt in 0..self.attempts {
            if attempt > 0 {
                tracing::warn!("{url}: {last}; retrying in {wait:?}");
                std::thread::sleep(wait);
                wait *= 2;
            }
            let mut request = self.agent.post(&url);
            if let Some(key) = &self.endpoint.api_key {
                request = request.header("Authorization", &format!("Bearer {key}"));
            }
            let mut response = match request.send_json(&body) {
                Ok(r) => r,
                Err(e) => {
                    last = e.to_string();
                    continue;
                }
            };
            let status = response.status().as_u16();
            let text = response.body_mut().read_to_string().unwrap_or_default();
            if status == 429 || status >= 500 {
                last = format!("HTTP {status}");
                continue;
            }
            if status != 200 {
                let excerpt: String = text.chars().take(300).collect();
                return Err(remote(&url, format!("HTTP {status}: {excerpt}")));
            }
            let v: Value = serde_json::from_str(&text)
                .map_err(|e| remote(&url, format!("the reply is not JSON: {e}")))?;
            let content = v["choices"][0]["message"]["content"]
                .as_str()
                .ok_or_else(|| remote(&url, "the reply has no choices[0].message.content"))?;
            return Ok(Reply {
                text: content.to_string(),
                prompt_tokens: v["usage"]["prompt_tokens"].as_u64().unwrap_or(0),
                completion_tokens: v["usage"]["completion_tokens"].as_u64().unwrap_or(0),
            });
        }
        Err(remote(&url, format!("gave up after {} attempts: {last}", self.attempts)))
    }
}

/// Reader replies and verdicts already paid for, in one SQLite file shared by runs and processes.
pub struct Cache {
    conn: rusqlite::Connection,
}

fn sql(path: &Path, e: rusqlite::Error) -> Error {
    Error::from(std::io::Error::other(format!("{}: {e}", path.display())))
}

pub(super) fn key(parts: &[&str]) -> String {
    blake3::hash(serde_json::to_string(parts).unwrap_or_default().as_bytes()).to_hex().to_string()
}

impl Cache {
    /// Opens (creating) the cache at `path`.
    pub fn open(path: &Path) -> Result<Cache> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        let conn = rusqlite::Connection::open(path).map_err(|e| sql(path, e))?;
        conn.busy_timeout(Duration::from_secs(30)).map_err(|e| sql(path, e))?;
        conn.execute_batch(
            "PRAGMA journal_mode=WAL;
             CREATE TABLE IF NOT EXISTS replies(key TEXT PRIMARY KEY, reply TEXT NOT NULL);
             CREATE TABLE IF NOT EXISTS verdicts(key TEXT PRIMARY KEY, reply TEXT NOT NULL);",
        )
        .map_err(|e| sql(path, e))?;
        Ok(Cache { conn })
    }

    pub(super) fn get(&self, table: &str, key: &str) -> Option<Reply> {
        let text: String = self
            .conn
            .query_row(&format!("SELECT reply FROM {table} WHERE key = ?1"), [key], |r| r.get(0))
            .ok()?;
        serde_json::from_str(&text).ok()
    }

    /// The reply cached under `key` in `table`, else `ask`'s (then cached); and whether it came
    /// from the cache.
    pub(super) fn get_or_ask(
        &self,
        table: &str,
        key: &str,
        ask: impl FnOnce() -> Result<Reply>,
    ) -> Result<(Reply, bool)> {
        if let Some(reply) = self.get(table, key) {
            return Ok((reply, true));
        }
        let reply = ask()?;
        self.put(table, key, &reply)?;
        Ok((reply, false))
    }

    pub(super) fn put(&self, table: &str, key: &str, reply: &Reply) -> Result<()> {
        let text = serde_json::to_string(reply).unwrap_or_default();
        self.conn
            .execute(&format!("INSERT OR REPLACE INTO {table}(key, reply) VALUES (?1, ?2)"), [key, &text])
            .map_err(|e| Error::from(std::io::Error::other(format!("QA cache: {e}"))))?;
        Ok(())
    }
}
