//! `POST /v1/chat` (DESIGN.md section 8): validate the body, start the turn, and render its events
//! as SSE (default) or, with `Accept: application/json`, as one JSON body.

use std::convert::Infallible;

use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use tokio_stream::wrappers::UnboundedReceiverStream;

use super::error::{ApiError, ApiJson};
use super::AppState;
use crate::supervisor::TurnRequest;

/// Longest accepted `query`, in characters.
pub const MAX_QUERY_CHARS: usize = 4000;
/// Most `slots` entries per request.
pub const MAX_SLOTS: usize = 32;
/// Largest single slot value, serialized, in bytes.
pub const MAX_SLOT_BYTES: usize = 4096;
/// Longest `user_id` / `thread_id`, in characters.
pub const MAX_ID_CHARS: usize = 128;

/// The request body: `{ "query", "user_id", "thread_id"?, "slots"? }`.
#[derive(Debug, Deserialize)]
pub struct ChatBody {
    /// The user's text; may be empty when `slots` carry the turn.
    #[serde(default)]
    pub query: String,
    /// The user.
    pub user_id: String,
    /// The thread; created when absent.
    #[serde(default)]
    pub thread_id: Option<String>,
    /// Widget-form values: semantic key -> value.
    #[serde(default)]
    pub slots: Option<Map<String, Value>>,
}

impl ChatBody {
    /// Checks the limits and shapes of a body.
    ///
    /// # Errors
    /// [`ApiError::BadRequest`] naming the rule broken.
    pub fn validate(self) -> Result<TurnRequest, ApiError> {
        let slots = self.slots.unwrap_or_default();
        if self.query.trim().is_empty() && slots.is_empty() {
            return Err(ApiError::bad_request("empty_query", "`query` is empty and no `slots` were given"));
        }
        if self.query.chars().count() > MAX_QUERY_CHARS {
            return Err(ApiError::bad_request(
                "query_too_long",
                format!("`query` is longer than {MAX_QUERY_CHARS} characters"),
            ));
        }
        let id_ok = |s: &str| !s.is_empty() && s.chars().count() <= MAX_ID_CHARS && !s.chars().any(char::is_control);
        if !id_ok(&self.user_id) {
            return Err(ApiError::bad_request(
                "invalid_user_id",
                format!("`user_id` must be 1-{MAX_ID_CHARS} printable characters"),
            ));
        }
        if let Some(t) = &self.thread_id {
            let charset = t.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':'));
            if !id_ok(t) || !charset {
                return Err(ApiError::bad_request(
                    "invalid_thread_id",
                    format!("`thread_id` must be 1-{MAX_ID_CHARS} characters of A-Z a-z 0-9 _ - . :"),
                ));
            }
        }
        if slots.len() > MAX_SLOTS {
            return Err(ApiError::bad_request("too_many_slots", format!("at most {MAX_SLOTS} `slots`")));
        }
        if slots.values().any(|v| v.to_string().len() > MAX_SLOT_BYTES) {
            return Err(ApiError::bad_request(
                "slot_too_large",
                format!("a slot value is larger than {MAX_SLOT_BYTES} bytes"),
            ));
        }
        Ok(TurnRequest { query: self.query, user_id: self.user_id, thread_id: self.thread_id, slots })
    }
}

fn wants_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("application/json") && !a.contains("text/event-stream"))
}

/// The handler.
pub async fn chat(
    State(state): State<AppState>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<ChatBody>,
) -> Result<Response, ApiError> {
    let req = body.validate()?;
    let turn = state.supervisor.start_turn(req);
    let thread = HeaderValue::from_str(&turn.thread_id).ok();

    let mut response = if wants_json(&headers) {
        let events: Vec<_> = UnboundedReceiverStream::new(turn.events).collect().await;
        let done = events.iter().rev().find(|e| e.is_done());
        axum::Json(json!({
            "thread_id": turn.thread_id,
            "session_id": turn.session_id,
            "stage": done.map(|e| e.stage),
            "content": done.map(|e| e.content.as_str()),
            "metadata": done.map(|e| &e.metadata),
            "events": events,
        }))
        .into_response()
    } else {
        let stream = UnboundedReceiverStream::new(turn.events).map(|ev| {
            let event = Event::default().event(ev.stage.as_str()).id(ev.seq.to_string());
            Ok::<_, Infallible>(
                event.json_data(&ev).unwrap_or_else(|_| Event::default().comment("unserializable event")),
            )
        });
        Sse::new(stream).keep_alive(KeepAlive::default()).into_response()
    };
    if let Some(thread) = thread {
        response.headers_mut().insert("x-thread-id", thread);
    }
    Ok(response)
}
