//! `POST /v1/chat` (docs/http-api.md): validate the body, start the turn, and render its events
//! as SSE (default) or, with `Accept: application/json`, as one JSON body.

use std::convert::Infallible;

use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

use crate::events::{Stage, StageEvent, WireMetadata};
use crate::registry::Registry;
use crate::text::Lang;

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
    /// The user. Optional with `auth.mode` `jwt` / `trusted_header` (the verified user; another
    /// one is refused with 403); required otherwise.
    #[serde(default)]
    pub user_id: Option<String>,
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
        self.check(false, false)
    }

    /// Like [`ChatBody::validate`], for a turn that resumes the pending clarification without
    /// new values (an AG-UI `resolved` resume of an `auth_required` interrupt, sent with new
    /// credentials): an empty query is then allowed.
    ///
    /// # Errors
    /// [`ApiError::BadRequest`] naming the rule broken.
    pub fn validate_resume(self) -> Result<TurnRequest, ApiError> {
        self.check(false, true)
    }

    /// Like [`ChatBody::validate`], for a turn that cancels the pending clarification (an empty
    /// query is then allowed).
    ///
    /// # Errors
    /// [`ApiError::BadRequest`] naming the rule broken.
    pub fn validate_cancel(self) -> Result<TurnRequest, ApiError> {
        self.check(true, true)
    }

    fn check(self, cancel: bool, may_be_empty: bool) -> Result<TurnRequest, ApiError> {
        let slots = self.slots.unwrap_or_default();
        if !may_be_empty && self.query.trim().is_empty() && slots.is_empty() {
            return Err(ApiError::bad_request("empty_query", "`query` is empty and no `slots` were given"));
        }
        if self.query.chars().count() > MAX_QUERY_CHARS {
            return Err(ApiError::bad_request(
                "query_too_long",
                format!("`query` is longer than {MAX_QUERY_CHARS} characters"),
            ));
        }
        let id_ok = |s: &str| !s.is_empty() && s.chars().count() <= MAX_ID_CHARS && !s.chars().any(char::is_control);
        let user_id = self.user_id.unwrap_or_default();
        if !id_ok(&user_id) {
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
        Ok(TurnRequest {
            query: self.query,
            user_id,
            thread_id: self.thread_id,
            slots,
            trace_id: None,
            cancel,
            principal: None,
        })
    }
}

fn wants_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("application/json") && !a.contains("text/event-stream"))
}

/// The response header carrying the turn's trace id (32 hex digits), on `/v1/chat` and
/// `/v1/ag-ui`.
pub const TRACE_HEADER: &str = "x-trace-id";

/// The trace id of a W3C `traceparent` header (`00-<32 hex>-<16 hex>-<2 hex>`), if valid.
pub fn trace_id(headers: &HeaderMap) -> Option<String> {
    let value = headers.get("traceparent")?.to_str().ok()?;
    let mut parts = value.trim().split('-');
    let (version, trace, span, flags) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    let hex = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_hexdigit());
    let valid = hex(version, 2) && hex(trace, 32) && hex(span, 16) && hex(flags, 2) && trace.bytes().any(|b| b != b'0');
    valid.then(|| trace.to_ascii_lowercase())
}

/// The text of the synthetic `error` event [`drained`] ends a stream with at shutdown, in the
/// language of `query`.
pub fn shutdown_text(registry: &Registry, query: &str) -> String {
    registry.texts().get(Lang::detect(query), "error-shutting-down", &[])
}

/// A turn's events until its `done` — or until the server's drain deadline passes, then one
/// synthetic `error` done event with `shutdown_text` ends the stream (the turn itself is cut off at
/// the same deadline and saved as interrupted).
pub fn drained(
    events: crate::events::EventReceiver,
    shutdown: CancellationToken,
    thread_id: String,
    session_id: String,
    shutdown_text: String,
) -> impl futures::Stream<Item = StageEvent> {
    struct St {
        rx: crate::events::EventReceiver,
        shutdown: CancellationToken,
        last_seq: u64,
        ended: bool,
        thread_id: String,
        session_id: String,
        shutdown_text: String,
    }
    let st = St { rx: events, shutdown, last_seq: 0, ended: false, thread_id, session_id, shutdown_text };
    futures::stream::unfold(st, |mut st| async move {
        if st.ended {
            return None;
        }
        tokio::select! {
            biased;
            ev = st.rx.recv() => {
                let ev = ev?;
                st.last_seq = ev.seq;
                st.ended = ev.is_done();
                Some((ev, st))
            }
            () = st.shutdown.cancelled() => {
                st.ended = true;
                let text = std::mem::take(&mut st.shutdown_text);
                let mut ev = StageEvent::new(Stage::Error, text).state("error", serde_json::json!({ "code": "shutting_down" }));
                ev.seq = st.last_seq + 1;
                ev.thread_id = st.thread_id.clone();
                ev.session_id = st.session_id.clone();
                Some((ev, st))
            }
        }
    })
}

/// The JSON form of a whole turn (`Accept: application/json`).
#[derive(Serialize)]
struct Collected<'a> {
    thread_id: &'a str,
    session_id: &'a str,
    stage: Option<Stage>,
    content: Option<&'a str>,
    metadata: Option<WireMetadata<'a>>,
    events: &'a [StageEvent],
}

/// How long an SSE stream may stay silent before a keep-alive comment (`:`) goes out.
pub const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// Appends `ev` as one SSE event: `event: <stage>`, `id: <seq>`, `data: <JSON>` (one line:
/// compact JSON has no raw newline), serialized once, straight into `buf`.
pub fn write_sse(buf: &mut Vec<u8>, ev: &StageEvent) {
    use std::io::Write as _;
    let start = buf.len();
    let _ = write!(buf, "event: {}\nid: {}\ndata: ", ev.stage.as_str(), ev.seq);
    if serde_json::to_writer(&mut *buf, ev).is_ok() {
        buf.extend_from_slice(b"\n\n");
    } else {
        buf.truncate(start);
        buf.extend_from_slice(b":unserializable event\n\n");
    }
}

/// How long the SSE response head waits for the turn's first events, so both go out in one
/// write; a turn that takes longer (its thread busy with another turn) gets the head at once.
pub const HEAD_WAIT: Duration = Duration::from_millis(20);

/// The SSE response of a turn's events. Events that are ready together (emitted between two
/// waits of the turn, or while the connection was busy) go out as one body chunk, so one socket
/// write, and the response head waits (at most [`HEAD_WAIT`]) for the first of them; `held`
/// (the admission) lives as long as the stream.
pub async fn sse_response<H: Send + 'static>(
    events: impl futures::Stream<Item = StageEvent> + Send + 'static,
    held: H,
) -> Response {
    let mut events = Box::pin(events.fuse());
    let first = tokio::time::timeout(HEAD_WAIT, next_chunk(&mut events)).await;
    let ended = matches!(first, Ok(None));
    let first = first.ok().flatten();
    let alive = Box::pin(tokio::time::sleep(KEEP_ALIVE));
    let rest =
        futures::stream::unfold((events, alive, held, ended), |(mut events, mut alive, held, ended)| async move {
            if ended {
                return None;
            }
            let chunk = tokio::select! {
                biased;
                chunk = next_chunk(&mut events) => chunk?,
                () = alive.as_mut() => Bytes::from_static(b":\n\n"),
            };
            alive.as_mut().reset(tokio::time::Instant::now() + KEEP_ALIVE);
            Some((chunk, (events, alive, held, ended)))
        });
    let body = futures::stream::iter(first).chain(rest).map(Ok::<_, Infallible>);
    (
        [(header::CONTENT_TYPE, "text/event-stream"), (header::CACHE_CONTROL, "no-cache")],
        axum::body::Body::from_stream(body),
    )
        .into_response()
}

/// Waits for the next event, then takes every event already waiting behind it (at most 32),
/// and writes them as one body chunk; `None` once the stream ended. Nothing is buffered between
/// calls (a stream waiting for its turn's next event holds no batch).
async fn next_chunk<S: futures::Stream<Item = StageEvent> + futures::stream::FusedStream + Unpin>(
    events: &mut S,
) -> Option<Bytes> {
    use futures::FutureExt as _;
    let first = events.next().await?;
    let mut buf = Vec::with_capacity(2048);
    write_sse(&mut buf, &first);
    for _ in 1..32 {
        match events.next().now_or_never() {
            Some(Some(ev)) => write_sse(&mut buf, &ev),
            _ => break,
        }
    }
    Some(Bytes::from(buf))
}

/// The handler.
pub async fn chat(
    State(state): State<AppState>,
    client: super::limits::ClientAddr,
    headers: HeaderMap,
    ApiJson(mut body): ApiJson<ChatBody>,
) -> Result<Response, ApiError> {
    let principal = super::identity::verify(&state, &headers, client).await?;
    if let Some(p) = &principal {
        body.user_id = super::identity::acting_user(Some(p), [body.user_id.as_deref()])?;
    } else if body.user_id.is_none() {
        return Err(ApiError::bad_request("invalid_body", "missing field `user_id`"));
    }
    let mut req = body.validate()?;
    req.trace_id = trace_id(&headers);
    req.principal = principal;
    let admission = state.limits.admit_from(&req.user_id, client.0)?;
    let notice = shutdown_text(&state.supervisor.registry.load(), &req.query);
    let turn = state.supervisor.start_turn(req);
    let thread = HeaderValue::from_str(&turn.thread_id).ok();
    let trace = HeaderValue::from_str(&turn.trace_id).ok();
    let events = drained(turn.events, state.shutdown.clone(), turn.thread_id.clone(), turn.session_id.clone(), notice);

    let mut response = if wants_json(&headers) {
        let events: Vec<_> = events.collect().await;
        drop(admission);
        let done = events.iter().rev().find(|e| e.is_done());
        axum::Json(Collected {
            thread_id: &turn.thread_id,
            session_id: &turn.session_id,
            stage: done.map(|e| e.stage),
            content: done.map(|e| e.content.as_str()),
            metadata: done.map(StageEvent::wire_metadata),
            events: &events,
        })
        .into_response()
    } else {
        sse_response(events, admission).await
    };
    if let Some(thread) = thread {
        response.headers_mut().insert("x-thread-id", thread);
    }
    if let Some(trace) = trace {
        response.headers_mut().insert(TRACE_HEADER, trace);
    }
    Ok(response)
}
