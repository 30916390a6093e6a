//! Protocol `sse`: `POST` with `Accept: text/event-stream`; `delta` events are relayed as they
//! arrive, `result` ends the task, `error` fails it (docs/sub-agent-protocol.md). Parsing uses the
//! `eventsource-stream` crate (CRLF line ends, comments, multi-line data), fed whole lines by
//! [`super::lines`], which enforces the line and event limit while the bytes arrive.

use std::sync::atomic::{AtomicBool, Ordering};

use eventsource_stream::{Event, EventStreamError, Eventsource};
use futures::{Stream, StreamExt};
use serde::Deserialize;
use serde_json::Value;

use super::lines::{bounded_lines, LineError, FRAMING_SLACK};
use super::{parse_reply, post, read_limited, snippet, AgentReply, DeltaFn, DispatchError, DispatchLimits};
use crate::registry::CapabilityCard;

#[derive(Deserialize)]
struct Delta {
    text: String,
}

#[derive(Deserialize)]
struct AgentErrorEvent {
    #[serde(default)]
    message: String,
}

#[derive(Debug)]
enum Source {
    Transport(reqwest::Error),
    TooLarge,
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Transport(e) => write!(f, "{e}"),
            Self::TooLarge => f.write_str("stream too large"),
        }
    }
}

/// The events of a `text/event-stream` reply. The stream fails with [`DispatchError::TooLarge`]
/// as soon as it passes `limits.max_response_bytes`, or a line or an event passes
/// `limits.max_event_bytes` (plus [`FRAMING_SLACK`] for field names on the wire), without reading
/// further.
pub(super) fn events(
    resp: reqwest::Response,
    limits: DispatchLimits,
) -> impl Stream<Item = Result<Event, DispatchError>> + Send + Unpin {
    let max = limits.max_response_bytes;
    let mut total = 0usize;
    let bytes = resp.bytes_stream().map(move |chunk| {
        // Without the URL: an interpolated `${ENV}` secret may live in it.
        let chunk = chunk.map_err(|e| Source::Transport(e.without_url()))?;
        total += chunk.len();
        if total > max {
            return Err(Source::TooLarge);
        }
        Ok(chunk)
    });
    let lines = bounded_lines(Box::pin(bytes), limits.max_event_bytes + FRAMING_SLACK);
    Box::pin(lines.eventsource().map(move |event| {
        let event = match event {
            Ok(e) => e,
            Err(EventStreamError::Transport(LineError::Transport(Source::TooLarge))) => {
                return Err(DispatchError::TooLarge(max))
            }
            Err(EventStreamError::Transport(LineError::TooLarge)) => {
                return Err(DispatchError::TooLarge(limits.max_event_bytes))
            }
            // The connection broke mid-stream (a reset, or a close before the last chunk): the
            // agent may have acted, and what it sent was relayed.
            Err(EventStreamError::Transport(LineError::Transport(Source::Transport(e)))) => {
                return Err(DispatchError::Disconnected(format!("stream broken: {e}")))
            }
            Err(e) => return Err(DispatchError::Protocol(format!("malformed event stream: {e}"))),
        };
        if event.data.len() > limits.max_event_bytes {
            return Err(DispatchError::TooLarge(limits.max_event_bytes));
        }
        Ok(event)
    }))
}

/// One streamed exchange. Sets `relayed` once a delta went to the user (no retry after that).
/// A reply with a JSON content type is accepted as a plain `http` reply.
///
/// # Errors
/// [`DispatchError`]; a stream that ends without `result` is [`DispatchError::Protocol`].
pub async fn call(
    client: &reqwest::Client,
    agent: &CapabilityCard,
    body: &Value,
    call: &super::Call<'_>,
    limits: DispatchLimits,
    on_delta: DeltaFn<'_>,
    relayed: &AtomicBool,
) -> Result<AgentReply, DispatchError> {
    let resp = call.authorize(post(client, agent, call.traceparent, "text/event-stream")).json(body).send().await?;
    let status = resp.status();
    let is_json = resp
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.starts_with("application/json"));
    if status != reqwest::StatusCode::OK || is_json {
        let bytes = read_limited(resp, limits.max_response_bytes).await?;
        if status != reqwest::StatusCode::OK {
            tracing::warn!(agent = agent.id(), status = status.as_u16(), body = %snippet(&bytes), "sub-agent error status");
            return Err(DispatchError::Status { status: status.as_u16(), body: snippet(&bytes) });
        }
        return parse_reply(&bytes);
    }

    let mut events = events(resp, limits);
    while let Some(event) = events.next().await {
        let event = event?;
        match event.event.as_str() {
            "delta" => {
                let delta: Delta = serde_json::from_str(&event.data)
                    .map_err(|e| DispatchError::Protocol(format!("delta is not {{\"text\": ..}}: {e}")))?;
                relayed.store(true, Ordering::Relaxed);
                on_delta(&delta.text);
            }
            "result" => return parse_reply(event.data.as_bytes()),
            "error" => {
                let err: AgentErrorEvent =
                    serde_json::from_str(&event.data).unwrap_or(AgentErrorEvent { message: event.data.clone() });
                return Err(DispatchError::Agent(err.message));
            }
            _ => {}
        }
    }
    Err(DispatchError::Protocol("the stream ended without a result event".into()))
}
