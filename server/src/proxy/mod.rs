//! An OpenAI-compatible chat endpoint with memory, for apps that speak the OpenAI chat API and
//! cannot be changed: point their base URL here. `POST …/chat/completions`:
//!
//! 1. recalls the context for the request's last user message, as of the request's date
//!    (`X-Mnemon-Date`) or the server's clock, and adds it as a system message (after the
//!    request's own system messages) that says which date it used;
//! 2. forwards the request, otherwise untouched (tools, images and every other field pass), to
//!    the upstream;
//! 3. answers with the upstream's answer unchanged, streamed (SSE) as it arrives when the request
//!    streams;
//! 4. once the answer is complete, stores the round: that user message and the whole answer,
//!    with the request's timestamp. Nothing is stored for an upstream error, a stream that breaks
//!    off, or a client that goes away before the end; a retry with the same `Idempotency-Key`
//!    stores nothing more, whatever the upstream answers it.
//!
//! `GET …/models` passes through. Whose memory: a bound token's user; else `X-Mnemon-User`;
//! else the request's `user` field; else `default`. `X-Mnemon-Agent`, `X-Mnemon-Store` and
//! `X-Mnemon-Session` name the agent, store and conversation; without a session, a
//! conversation's rounds share one named after its opening messages (the system prompt and the
//! first user message), which every later request of the conversation repeats.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use serde_json::{json, Value};

use crate::error::{ApiError, Code};

mod events;
use crate::principal::Principal;
use crate::state::AppState;
use events::Events;

/// Where the proxy forwards chat requests, and how.
#[derive(Clone)]
pub struct Upstream {
    /// The upstream's base URL up to its API version (`https://api.openai.com/v1`,
    /// `http://127.0.0.1:11434/v1`): requests go to `URL/chat/completions` and `URL/models`.
    pub url: String,
    /// The key sent upstream as `Authorization: Bearer`. Without one, a caller's own
    /// `Authorization` is passed on when the server has no tokens of its own (then the header
    /// is not mnemon's), and none is sent otherwise.
    pub key: Option<String>,
    /// The recalled block's token budget (default 2,000).
    pub budget: usize,
    /// Longest the upstream may take to accept a connection, and to send the next part of an
    /// answer (default 300 s).
    pub timeout: Duration,
    /// Also answer at `/v1/chat/completions` and `/v1/models` (`mnemon proxy`), besides
    /// `/openai/v1/…`.
    pub at_root: bool,
}

impl Upstream {
    /// An upstream at `url` with the defaults.
    pub fn new(url: impl Into<String>) -> Upstream {
        Upstream {
            url: url.into(),
            key: None,
            budget: 2_000,
            timeout: Duration::from_secs(300),
            at_root: false,
        }
    }
}

impl std::fmt::Debug for Upstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Upstream")
            .field("url", &self.url)
            .field("key", &self.key.as_ref().map(|_| "***"))
            .field("budget", &self.budget)
            .field("timeout", &self.timeout)
            .field("at_root", &self.at_root)
            .finish()
    }
}

/// The proxy's part of the server's state.
pub(crate) struct Proxy {
    base: String,
    key: Option<String>,
    budget: usize,
    /// Whether a caller's `Authorization` goes upstream (no key of ours, no tokens of the server).
    pass_authorization: bool,
    client: reqwest::Client,
}

/// Request headers that go upstream as they came (besides the body's type and the key).
const PASSED_UP: [&str; 4] = ["accept", "openai-organization", "openai-project", "openai-beta"];

/// Response headers that do not come back from upstream: the connection's own, and the length
/// (the answer is sent in the server's own framing).
const NOT_PASSED_BACK: [&str; 6] =
    ["connection", "keep-alive", "transfer-encoding", "content-length", "upgrade", "proxy-connection"];

/// Marks a response that came from upstream, so that no layer rewrites it.
#[derive(Clone, Copy)]
pub(crate) struct Upstreamed;

impl Proxy {
    /// The proxy of `upstream`; `server_has_tokens`: whether callers authenticate with tokens of
    /// the server's own (which then never go upstream).
    pub(crate) fn new(upstream: &Upstream, server_has_tokens: bool) -> Result<Proxy, String> {
        let base = upstream.url.trim_end_matches('/').to_owned();
        let parsed = reqwest::Url::parse(&base).map_err(|e| format!("--upstream {base:?}: {e}"))?;
        if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
            return Err(format!("--upstream {base:?}: expected an http:// or https:// URL"));
        }
        if upstream.budget == 0 {
            return Err("the proxy's context budget must be at least 1 token".into());
        }
        let client = reqwest::Client::builder()
            .connect_timeout(upstream.timeout)
            .read_timeout(upstream.timeout)
            .build()
            .map_err(|e| format!("the upstream client: {e}"))?;
        Ok(Proxy {
            base,
            key: upstream.key.clone(),
            budget: upstream.budget,
            pass_authorization: upstream.key.is_none() && !server_has_tokens,
            client,
        })
    }

    /// `request` with the upstream's `Authorization` and the headers passed up.
    fn prepare(&self, mut request: reqwest::RequestBuilder, headers: &HeaderMap) -> reqwest::RequestBuilder {
        if let Some(key) = &self.key {
            request = request.bearer_auth(key);
        } else if self.pass_authorization {
            if let Some(v) = headers.get(header::AUTHORIZATION) {
                request = request.header(header::AUTHORIZATION, v.clone());
            }
        }
        for name in PASSED_UP {
            if let Some(v) = headers.get(name) {
                request = request.header(name, v.clone());
            }
        }
        request
    }
}

/// The proxy's routes, relative to their `…/v1` prefix.
pub(crate) fn routes() -> axum::Router<AppState> {
    axum::Router::new()
        .route("/chat/completions", axum::routing::post(chat))
        .route("/models", axum::routing::get(models))
}

fn upstream_error(e: reqwest::Error) -> ApiError {
    // The URL may carry credentials; the kind of failure is what the caller can act on.
    let what = if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "could not be reached"
    } else if e.is_body() || e.is_decode() {
        "broke off its answer"
    } else {
        "failed"
    };
    tracing::warn!(error = %e.without_url(), "upstream {what}");
    ApiError::new(Code::Upstream, format!("the upstream {what}; nothing was stored"))
}

/// `GET …/models`: the upstream's list, as it answers.
async fn models(State(state): State<AppState>, headers: HeaderMap) -> Result<Response, ApiError> {
    let proxy = state.proxy.as_ref().ok_or_else(|| ApiError::new(Code::NotFound, "no such route"))?;
    let sent = proxy.prepare(proxy.client.get(format!("{}/models", proxy.base)), &headers).send().await;
    let response = sent.map_err(upstream_error)?;
    let (status, back) = (response.status(), passed_back(response.headers()));
    let bytes = response.bytes().await.map_err(upstream_error)?;
    Ok(answer(status, back, Body::from(bytes)))
}

/// The upstream's status and headers, with `body`, marked as the upstream's.
fn answer(status: StatusCode, headers: HeaderMap, body: Body) -> Response {
    let mut response = (status, body).into_response();
    *response.headers_mut() = headers;
    response.extensions_mut().insert(Upstreamed);
    response
}

fn passed_back(headers: &HeaderMap) -> HeaderMap {
    headers
        .iter()
        .filter(|(name, _)| !NOT_PASSED_BACK.contains(&name.as_str()))
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect()
}

/// Whose memory a chat request reaches, and where its round goes.
#[derive(Debug, Clone)]
struct Who {
    user: Option<String>,
    agent: Option<String>,
    store: Option<String>,
    session: String,
    /// The request's own date (`X-Mnemon-Date`), if it gave one.
    date: Option<String>,
}

fn header_text(headers: &HeaderMap, name: &str) -> Result<Option<String>, ApiError> {
    let Some(v) = headers.get(name) else { return Ok(None) };
    let text = std::str::from_utf8(v.as_bytes()).map_err(|_| ApiError::input(name, "must be UTF-8"))?;
    Ok(Some(text.trim().to_owned()).filter(|t| !t.is_empty()))
}

impl Who {
    fn of(
        caller: &Principal,
        headers: &HeaderMap,
        request: &serde_json::Map<String, Value>,
    ) -> Result<Who, ApiError> {
        let body_user = match request.get("user") {
            None | Some(Value::Null) => None,
            Some(Value::String(u)) => Some(u.clone()),
            Some(_) => return Err(ApiError::input("user", "must be a string")),
        };
        let user = header_text(headers, "x-mnemon-user")?.or(body_user);
        let agent = header_text(headers, "x-mnemon-agent")?;
        // A bound caller's user and agent are the token's; naming another is refused.
        let mut bound = json!({"user_id": user, "agent_id": agent});
        caller.bind("chat_completions", &mut bound)?;
        let text = |v: &Value| v.as_str().map(str::to_owned);
        let date = header_text(headers, "x-mnemon-date")?;
        if let Some(d) = &date {
            mnemon::Timestamp::parse(d).map_err(|e| ApiError::input("X-Mnemon-Date", e.to_string()))?;
        }
        let session = match header_text(headers, "x-mnemon-session")? {
            Some(s) => s,
            None => {
                conversation_session(request.get("messages").and_then(Value::as_array).map_or(&[], |m| m))
            }
        };
        Ok(Who {
            user: text(&bound["user_id"]),
            agent: text(&bound["agent_id"]),
            store: header_text(headers, "x-mnemon-store")?,
            session,
            date,
        })
    }

    /// `fields` with this caller's `user_id`, `agent_id` and `store`.
    fn request(&self, mut fields: Value) -> Value {
        fields["user_id"] = json!(self.user);
        fields["agent_id"] = json!(self.agent);
        fields["store"] = json!(self.store);
        fields
    }
}

/// The text of a message's `content`: a string, or the text parts of a list of parts (images,
/// audio and files carry no text to remember).
fn text_of(message: &Value) -> String {
    match &message["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter(|p| p["type"] == "text")
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The session of a conversation without `X-Mnemon-Session`: named after its opening messages
/// up to the first user message, which every request of the conversation repeats.
fn conversation_session(messages: &[Value]) -> String {
    let mut h = blake3::Hasher::new();
    for m in messages {
        let role = m["role"].as_str().unwrap_or_default();
        h.update(role.as_bytes());
        h.update(&[0]);
        h.update(text_of(m).as_bytes());
        h.update(&[0]);
        if role == "user" {
            break;
        }
    }
    format!("chat-{}", &h.finalize().to_hex()[..16])
}

/// The text of the last user message, if it has any.
fn last_user_text(messages: &[Value]) -> Option<String> {
    let last = messages.iter().rev().find(|m| m["role"] == "user")?;
    Some(text_of(last)).filter(|t| !t.trim().is_empty())
}

/// `POST …/chat/completions`.
async fn chat(
    State(state): State<AppState>,
    Extension(caller): Extension<Principal>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let proxy =
        Arc::clone(state.proxy.as_ref().ok_or_else(|| ApiError::new(Code::NotFound, "no such route"))?);
    let mut request = crate::http::json_body(body)?;
    let Value::Object(object) = &mut request else {
        return Err(ApiError::input("body", "expected a JSON object"));
    };
    match object.get("messages") {
        Some(Value::Array(m)) if !m.is_empty() => {}
        _ => return Err(ApiError::input("messages", "must be a non-empty array of messages")),
    }
    let streaming = match object.get("stream") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(ApiError::input("stream", "must be true or false")),
    };
    let who = Who::of(&caller, &headers, object)?;
    let Some(Value::Array(messages)) = object.get_mut("messages") else {
        return Err(ApiError::input("messages", "must be a non-empty array of messages"));
    };
    let asked = last_user_text(messages);

    // The round's timestamp: the request's date, else now (a retry with the same key gets the
    // first attempt's).
    let key = header_text(&headers, "idempotency-key")?;
    let fingerprint = crate::idempotency::fingerprint("chat_completions", &(&who, &*messages));
    let stamped = state.service.keys().stamp(key.as_deref(), fingerprint, crate::service::now())?;
    let ts = who.date.clone().unwrap_or(stamped);

    if let Some(asked) = &asked {
        let recall = who.request(json!({"query": asked, "budget": proxy.budget, "date": ts}));
        let recall: crate::api::RecallMemories =
            serde_json::from_value(recall).map_err(ApiError::internal)?;
        let service = Arc::clone(&state.service);
        let context = match crate::service::blocking(move || service.recall(&recall)).await {
            Ok(r) => r.context,
            // A store nobody wrote to yet holds nothing to recall.
            Err(e) if e.code == Code::NotFound && e.field.as_deref() == Some("store") => String::new(),
            Err(e) => return Err(e),
        };
        if !context.is_empty() {
            let source = if who.date.is_some() {
                "the request's X-Mnemon-Date"
            } else {
                "the proxy's clock; the request gave no date"
            };
            let content = format!("Current date: {ts} ({source}).\n{context}");
            let at = messages
                .iter()
                .take_while(|m| matches!(m["role"].as_str(), Some("system" | "developer")))
                .count();
            messages.insert(at, json!({"role": "system", "content": content}));
        }
    }

    let forward = proxy
        .client
        .post(format!("{}/chat/completions", proxy.base))
        .header(header::CONTENT_TYPE, "application/json")
        .body(serde_json::to_vec(&request).map_err(ApiError::internal)?);
    let response = proxy.prepare(forward, &headers).send().await.map_err(upstream_error)?;
    let (status, back) = (response.status(), passed_back(response.headers()));
    let round = asked.map(|asked| Round { state: state.clone(), who, asked, ts, key });
    if !streaming || !status.is_success() {
        let bytes = response.bytes().await.map_err(upstream_error)?;
        if status.is_success() {
            let reply: Value = serde_json::from_slice(&bytes).unwrap_or_default();
            if let (Some(round), Some(answer)) = (round, reply["choices"][0]["message"]["content"].as_str()) {
                round.store(answer).await;
            }
        }
        return Ok(answer(status, back, Body::from(bytes)));
    }
    let (tx, rx) = tokio::sync::mpsc::channel(32);
    tokio::spawn(relay(response, tx, round));
    Ok(answer(status, back, Body::new(Channel(rx))))
}

/// A round to store once its answer is complete.
struct Round {
    state: AppState,
    who: Who,
    asked: String,
    ts: String,
    key: Option<String>,
}

impl Round {
    /// Stores the round with `answer` (once per idempotency key). A failure is logged and
    /// counted, not answered: the caller has its answer.
    async fn store(self, answer: &str) {
        if answer.trim().is_empty() {
            return;
        }
        let keys = self.state.service.keys();
        if let Some(k) = &self.key {
            if !keys.settle(k) {
                return;
            }
        }
        let turn = |role: &str, content: &str| json!({"role": role, "content": content, "ts": self.ts, "session": self.who.session});
        let add =
            self.who.request(json!({"messages": [turn("user", &self.asked), turn("assistant", answer)]}));
        let stored = match serde_json::from_value::<crate::api::AddMessages>(add) {
            Ok(add) => {
                let service = Arc::clone(&self.state.service);
                crate::service::blocking(move || service.add(&add)).await.map(|_| ())
            }
            Err(e) => Err(ApiError::internal(e)),
        };
        if let Err(e) = stored {
            metrics::counter!("mnemon_proxy_store_failures_total").increment(1);
            tracing::warn!(code = e.code.as_str(), message = %e.message, "the proxy could not store a round");
            if let Some(k) = &self.key {
                keys.unsettle(k);
            }
        }
    }
}

/// A response body fed by the relay task.
struct Channel(tokio::sync::mpsc::Receiver<Result<Bytes, std::io::Error>>);

impl http_body::Body for Channel {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, std::io::Error>>> {
        self.0.poll_recv(cx).map(|next| next.map(|r| r.map(http_body::Frame::data)))
    }
}

/// Relays a streamed answer to the caller as it arrives, event by event, reading the answer's
/// text on the way. At the answer's end (`data: [DONE]`, or the upstream's end after a
/// `finish_reason`) the round is stored before the end is sent, so a caller that has read the
/// whole answer finds its round stored. An upstream that breaks off, or a caller that goes away,
/// stores nothing.
async fn relay(
    mut response: reqwest::Response,
    tx: tokio::sync::mpsc::Sender<Result<Bytes, std::io::Error>>,
    round: Option<Round>,
) {
    let mut events = Events::default();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                let ready = events.feed(&chunk);
                if !ready.is_empty() && tx.send(Ok(ready)).await.is_err() {
                    return; // the caller went away: nothing is stored
                }
                if events.done {
                    break; // the answer's end: nothing after it is waited for
                }
            }
            Ok(None) => break,
            Err(e) => {
                let e = upstream_error(e);
                let _ = tx.send(Err(std::io::Error::other(e.message))).await;
                return;
            }
        }
    }
    drop(response);
    if (events.done || events.finished) && !tx.is_closed() {
        if let Some(round) = round {
            round.store(&events.answer).await;
        }
    }
    let rest = Bytes::from(std::mem::take(&mut events.held));
    if !rest.is_empty() {
        let _ = tx.send(Ok(rest)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_session_is_the_conversations_opening() {
        let a = [json!({"role": "system", "content": "be brief"}), json!({"role": "user", "content": "hi"})];
        let later = [
            a[0].clone(),
            a[1].clone(),
            json!({"role": "assistant", "content": "hello"}),
            json!({"role": "user", "content": "and?"}),
        ];
        assert_eq!(conversation_session(&a), conversation_session(&later));
        let other = [json!({"role": "system", "content": "be long"}), a[1].clone()];
        assert_ne!(conversation_session(&a), conversation_session(&other));
    }

    #[test]
    fn text_parts_are_read_and_others_skipped() {
        let m = json!({"role": "user", "content": [
            {"type": "text", "text": "what is this?"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
            {"type": "text", "text": "be short"}
        ]});
        assert_eq!(text_of(&m), "what is this?\nbe short");
        assert_eq!(
            last_user_text(&[m, json!({"role": "assistant", "content": null})]).unwrap(),
            "what is this?\nbe short"
        );
    }
}
