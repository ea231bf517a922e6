//! `POST /v1/import/chats`: a chat history uploaded as the request's body (ChatGPT's or
//! Claude's `conversations.json`, or mnemon's JSONL), read as it arrives and stored conversation
//! by conversation ([`mnemon::chats`]): the body is never held whole, only the conversation
//! being read.
//!
//! Its own limits, not the API's: a body of up to `--import-limit-mib` (a declared length past
//! it is refused before anything is read; a chunked body that grows past it stops the import),
//! each part of it within `--body-timeout` of the one before, and at most [`IMPORTS_AT_ONCE`]
//! imports at once (one more is answered `overloaded`), so that imports never take the places
//! of the API's requests.

use std::io::Read;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{RawQuery, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::Extension;
use http_body_util::BodyExt;
use serde_json::Value;

use crate::api::ImportChats;
use crate::error::{ApiError, Code, ErrorBody};
use crate::principal::Principal;
use crate::state::AppState;

/// The route.
pub(crate) const PATH: &str = "/v1/import/chats";

/// Most imports running at once.
pub const IMPORTS_AT_ONCE: usize = 2;

/// The body, chunk by chunk, as a blocking reader (on the blocking pool).
struct Chunks {
    rx: tokio::sync::mpsc::Receiver<Bytes>,
    current: Bytes,
}

impl Read for Chunks {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.current.is_empty() {
            match self.rx.blocking_recv() {
                Some(chunk) => self.current = chunk,
                None => return Ok(0),
            }
        }
        let n = buf.len().min(self.current.len());
        buf[..n].copy_from_slice(&self.current.split_to(n));
        Ok(n)
    }
}

/// Why the upload stopped early.
enum Stopped {
    TooLarge,
    TooSlow,
    Broken,
}

/// Import a chat history: the body is the file, the query names its `format` and whose
/// memory (`user_id`, `agent_id`, `store`). Each conversation is stored as a session with its
/// real times, one transaction each; run again, nothing new is stored.
#[utoipa::path(post, path = "/v1/import/chats", tag = "memories",
    params(
        ("format" = crate::api::ChatFormatIn, Query, description = "chatgpt, claude or jsonl"),
        ("user_id" = Option<String>, Query, description = "whose memory (default `default`)"),
        ("agent_id" = Option<String>, Query, description = "one of the user's agents"),
        ("store" = Option<String>, Query, description = "which store (default the server's)"),
    ),
    request_body(content = String, description = "the export file as it is", content_type = "application/json"),
    responses(
        (status = 200, body = mnemon::chats::Imported),
        (status = 400, body = ErrorBody), (status = 408, body = ErrorBody), (status = 413, body = ErrorBody),
        (status = 503, body = ErrorBody)))]
pub(crate) async fn import_chats(
    State(state): State<AppState>,
    Extension(caller): Extension<Principal>,
    RawQuery(query): RawQuery,
    body: Body,
) -> Result<Response, ApiError> {
    let mut args = Value::Object(crate::http::query_object(query)?);
    caller.bind("import_chats", &mut args)?;
    let req: ImportChats = crate::error::parse(args)?;
    let Ok(_permit) = Arc::clone(&state.imports).try_acquire_owned() else {
        return Err(ApiError {
            retry_after: Some(5),
            ..ApiError::new(Code::Overloaded, format!("{IMPORTS_AT_ONCE} imports are running; retry later"))
        });
    };
    let (tx, rx) = tokio::sync::mpsc::channel::<Bytes>(8);
    let service = Arc::clone(&state.service);
    let importing =
        crate::service::blocking(move || service.import_chats(&req, Chunks { rx, current: Bytes::new() }));
    let (limit, wait) = (state.import_limit, state.body_timeout);
    let feeding = async move {
        let mut body = body;
        let mut total = 0usize;
        loop {
            let frame = match tokio::time::timeout(wait, body.frame()).await {
                Err(_) => return Err(Stopped::TooSlow),
                Ok(None) => return Ok(()),
                Ok(Some(Err(_))) => return Err(Stopped::Broken),
                Ok(Some(Ok(frame))) => frame,
            };
            let Ok(data) = frame.into_data() else { continue };
            total += data.len();
            if total > limit {
                return Err(Stopped::TooLarge);
            }
            if tx.send(data).await.is_err() {
                return Ok(()); // the import stopped reading: its own answer says why
            }
        }
        // `tx` drops here: the reader sees the end (or, stopped early, a cut file).
    };
    let (fed, imported) = tokio::join!(feeding, importing);
    let stored =
        "the conversations read before it were stored; importing the file again stores only the rest";
    match fed {
        Err(Stopped::TooLarge) => Err(ApiError::new(
            Code::PayloadTooLarge,
            format!("the file is larger than {limit} bytes (--import-limit-mib); {stored}"),
        )),
        Err(Stopped::TooSlow) => Err(ApiError::new(
            Code::RequestTimeout,
            format!("the file stopped arriving for {} s; {stored}", wait.as_secs_f32()),
        )),
        Err(Stopped::Broken) => Err(ApiError::input("body", format!("the upload broke off; {stored}"))),
        Ok(()) => {
            let json = serde_json::to_vec(&imported?).map_err(ApiError::internal)?;
            Ok(([(header::CONTENT_TYPE, "application/json")], json).into_response())
        }
    }
}

/// The OpenAPI part of the route.
#[derive(utoipa::OpenApi)]
#[openapi(
    paths(import_chats),
    components(schemas(
        mnemon::chats::Imported,
        mnemon::chats::Tally,
        mnemon::chats::Skipped,
        crate::api::ChatFormatIn
    ))
)]
pub(crate) struct ImportDoc;
