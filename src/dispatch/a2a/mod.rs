//! Protocol `a2a`: the sub-agent speaks A2A 1.0 (JSON-RPC binding), types from the official
//! `a2a-lf` crate (the spec's `a2a.proto` in Rust).
//!
//! The Agent Card (`/.well-known/agent-card.json` under the configured URL, or the URL itself when
//! it names a `.json` file) says where to call (`supportedInterfaces[]` with binding `JSONRPC`) and
//! whether the agent streams. `SendStreamingMessage` (or `SendMessage`) carries the sub-task's
//! message as a text part and its semantic-key values as one data part, with header
//! `A2A-Version: 1.0`. Status-update and artifact texts are relayed as deltas; data parts of
//! artifacts become the `output` object. `TASK_STATE_COMPLETED` is done;
//! `FAILED` / `REJECTED` / `CANCELED` fail the sub-task; `INPUT_REQUIRED` (and `AUTH_REQUIRED`)
//! become [`DispatchError::InputRequired`], a clarification continued on the same task and context
//! by the next turn. The SSE frames are parsed by `eventsource-stream` (CRLF, `: ping` comments).

use std::sync::atomic::{AtomicBool, Ordering};

use ::a2a::{AgentCard, JsonRpcId, JsonRpcRequest, Message, Part, PartContent, Role, StreamResponse, Task, TaskState};
use eventsource_stream::Eventsource;
use futures::StreamExt;
use serde_json::{json, Map, Value};

use super::{read_limited, snippet, AgentReply, DeltaFn, DispatchError, DispatchLimits};
use crate::config::card_url;

pub mod card;
use crate::planner::RemoteTask;
use crate::registry::Agent;
pub use card::{fetch_card, resolve_cards, CardCache};

pub(crate) fn rpc_url(card: &AgentCard) -> Result<String, DispatchError> {
    card.supported_interfaces
        .iter()
        .find(|i| i.protocol_binding.eq_ignore_ascii_case("JSONRPC"))
        .map(|i| i.url.clone())
        .ok_or_else(|| DispatchError::Protocol("the agent card offers no JSONRPC interface".into()))
}

/// The A2A message for a sub-task request body (the shape of docs/sub-agent-protocol.md).
pub(crate) fn outgoing_message(body: &Value, remote: Option<&RemoteTask>) -> Message {
    let text = body["message"].as_str().unwrap_or_default().to_string();
    let mut data: Map<String, Value> = body["inputs"].as_object().cloned().unwrap_or_default();
    data.remove("message");
    let mut parts = vec![Part::text(text)];
    if !data.is_empty() {
        parts.push(Part::data(Value::Object(data)));
    }
    let mut message = Message::new(Role::User, parts);
    if let Some(r) = remote {
        message.task_id = Some(r.task_id.clone());
        message.context_id = Some(r.context_id.clone());
    }
    message
}

/// Accumulates a task's outcome from responses.
#[derive(Default)]
struct Outcome {
    texts: Vec<String>,
    data: Map<String, Value>,
    task_id: String,
    context_id: String,
    state: Option<TaskState>,
    status_text: String,
}

fn parts_text(parts: &[Part]) -> String {
    parts.iter().filter_map(Part::as_text).collect::<Vec<_>>().join("\n")
}

impl Outcome {
    fn task(&mut self, task: &Task, on_delta: Option<DeltaFn<'_>>) {
        self.task_id.clone_from(&task.id);
        self.context_id.clone_from(&task.context_id);
        for a in task.artifacts.iter().flatten() {
            self.parts(&a.parts, on_delta);
        }
        self.status(task.status.state.clone(), task.status.message.as_ref(), on_delta);
    }

    fn parts(&mut self, parts: &[Part], on_delta: Option<DeltaFn<'_>>) {
        for p in parts {
            match &p.content {
                PartContent::Text(t) if !t.is_empty() => {
                    if let Some(f) = on_delta {
                        f(t);
                    }
                    self.texts.push(t.clone());
                }
                PartContent::Data(Value::Object(obj)) => self.data.extend(obj.clone()),
                _ => {}
            }
        }
    }

    fn status(&mut self, state: TaskState, message: Option<&Message>, on_delta: Option<DeltaFn<'_>>) {
        if let Some(m) = message {
            let text = parts_text(&m.parts);
            if !text.is_empty() {
                if let Some(f) = on_delta {
                    f(&text);
                }
                self.status_text = text;
            }
            for p in &m.parts {
                if let PartContent::Data(Value::Object(obj)) = &p.content {
                    self.data.extend(obj.clone());
                }
            }
        }
        self.state = Some(state);
    }

    fn finish(self) -> Result<AgentReply, DispatchError> {
        let message = if self.status_text.is_empty() {
            self.texts.last().cloned().unwrap_or_default()
        } else {
            self.status_text.clone()
        };
        match self.state {
            Some(TaskState::Completed) | None => {
                let output = if self.data.is_empty() {
                    json!({ "text": self.texts.join("\n") })
                } else {
                    Value::Object(self.data)
                };
                Ok(AgentReply { output, message })
            }
            Some(TaskState::InputRequired | TaskState::AuthRequired) => Err(DispatchError::InputRequired(RemoteTask {
                task_id: self.task_id,
                context_id: self.context_id,
                question: message,
            })),
            Some(other) => Err(DispatchError::Agent(format!("task ended {other:?}: {message}"))),
        }
    }

    fn is_final(&self) -> bool {
        self.state
            .as_ref()
            .is_some_and(|s| s.is_terminal() || matches!(s, TaskState::InputRequired | TaskState::AuthRequired))
    }
}

fn rpc_error(v: &Value) -> Option<DispatchError> {
    v.get("error").filter(|e| !e.is_null()).map(|e| {
        DispatchError::Agent(format!("JSON-RPC error {}: {}", e["code"], e["message"].as_str().unwrap_or_default()))
    })
}

/// One A2A exchange for a sub-task. `remote` continues a task that asked for input.
///
/// # Errors
/// [`DispatchError`]; [`DispatchError::InputRequired`] when the agent asks the user something.
#[allow(clippy::too_many_arguments)]
pub async fn call(
    client: &reqwest::Client,
    cards: &CardCache,
    agent: &Agent,
    body: &Value,
    remote: Option<&RemoteTask>,
    traceparent: &str,
    limits: DispatchLimits,
    on_delta: DeltaFn<'_>,
    relayed: &AtomicBool,
) -> Result<AgentReply, DispatchError> {
    let card = fetch_card(client, cards, &card_url(&agent.url), limits).await?;
    let url = rpc_url(&card)?;
    let streaming = card.capabilities.streaming.unwrap_or(false);
    let params = json!({ "message": outgoing_message(body, remote) });
    let method = if streaming { "SendStreamingMessage" } else { "SendMessage" };
    let request = JsonRpcRequest::new(JsonRpcId::String(uuid::Uuid::new_v4().to_string()), method, Some(params));
    let accept = if streaming { "text/event-stream" } else { "application/json" };
    let resp = client
        .post(&url)
        .headers(agent.headers.clone())
        .header(::a2a::SVC_PARAM_VERSION, ::a2a::VERSION)
        .header("traceparent", traceparent)
        .header(reqwest::header::ACCEPT, accept)
        .json(&request)
        .send()
        .await?;
    let status = resp.status();
    let is_sse = resp
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.starts_with("text/event-stream"));
    if !status.is_success() || !is_sse {
        let bytes = read_limited(resp, limits.max_response_bytes).await?;
        if !status.is_success() {
            tracing::warn!(agent = agent.id(), status = status.as_u16(), body = %snippet(&bytes), "sub-agent error status");
            return Err(DispatchError::Status { status: status.as_u16(), body: snippet(&bytes) });
        }
        let v: Value =
            serde_json::from_slice(&bytes).map_err(|e| DispatchError::Protocol(format!("JSON-RPC reply: {e}")))?;
        if let Some(e) = rpc_error(&v) {
            return Err(e);
        }
        let mut outcome = Outcome::default();
        match serde_json::from_value::<::a2a::SendMessageResponse>(v["result"].clone()) {
            Ok(::a2a::SendMessageResponse::Task(task)) => outcome.task(&task, None),
            Ok(::a2a::SendMessageResponse::Message(m)) => {
                outcome.parts(&m.parts, None);
                outcome.state = Some(TaskState::Completed);
            }
            Err(e) => return Err(DispatchError::Protocol(format!("SendMessage result: {e}"))),
        }
        return outcome.finish();
    }

    let max = limits.max_response_bytes;
    let mut total = 0usize;
    let bytes = resp.bytes_stream().map(move |chunk| {
        let chunk = chunk.map_err(|e| e.without_url().to_string())?;
        total += chunk.len();
        if total > max {
            return Err(format!("stream larger than {max} bytes"));
        }
        Ok(chunk)
    });
    let mut events = bytes.eventsource();
    let mut outcome = Outcome::default();
    let relay = |text: &str| {
        relayed.store(true, Ordering::Relaxed);
        on_delta(text);
    };
    while let Some(event) = events.next().await {
        let event = event.map_err(|e| DispatchError::Protocol(format!("A2A stream: {e}")))?;
        if event.data.len() > limits.max_event_bytes {
            return Err(DispatchError::TooLarge(limits.max_event_bytes));
        }
        let v: Value =
            serde_json::from_str(&event.data).map_err(|e| DispatchError::Protocol(format!("A2A frame: {e}")))?;
        if let Some(e) = rpc_error(&v) {
            return Err(e);
        }
        let frame: StreamResponse = serde_json::from_value(v["result"].clone())
            .map_err(|e| DispatchError::Protocol(format!("A2A frame: {e}")))?;
        match frame {
            StreamResponse::Task(task) => outcome.task(&task, Some(&relay)),
            StreamResponse::Message(m) => {
                outcome.parts(&m.parts, Some(&relay));
                outcome.state = Some(TaskState::Completed);
            }
            StreamResponse::StatusUpdate(u) => {
                outcome.task_id = u.task_id;
                outcome.context_id = u.context_id;
                outcome.status(u.status.state, u.status.message.as_ref(), Some(&relay));
            }
            StreamResponse::ArtifactUpdate(u) => {
                outcome.task_id = u.task_id;
                outcome.context_id = u.context_id;
                outcome.parts(&u.artifact.parts, Some(&relay));
            }
        }
        if outcome.is_final() {
            break;
        }
    }
    if outcome.state.is_none() {
        return Err(DispatchError::Protocol("the A2A stream ended without a task state".into()));
    }
    outcome.finish()
}

/// Asks the agent to cancel `remote` (`CancelTask`). Best effort: failures are logged.
pub async fn cancel(
    client: &reqwest::Client,
    cards: &CardCache,
    agent: &Agent,
    remote: &RemoteTask,
    limits: DispatchLimits,
) {
    let result = async {
        let card = fetch_card(client, cards, &card_url(&agent.url), limits).await?;
        let url = rpc_url(&card)?;
        let request = JsonRpcRequest::new(
            JsonRpcId::String(uuid::Uuid::new_v4().to_string()),
            "CancelTask",
            Some(json!({ "id": remote.task_id })),
        );
        let resp = client
            .post(&url)
            .headers(agent.headers.clone())
            .header(::a2a::SVC_PARAM_VERSION, ::a2a::VERSION)
            .json(&request)
            .send()
            .await?;
        let bytes = read_limited(resp, limits.max_response_bytes).await?;
        let v: Value = serde_json::from_slice(&bytes).map_err(|e| DispatchError::Protocol(e.to_string()))?;
        rpc_error(&v).map_or(Ok(()), Err)
    }
    .await;
    if let Err(e) = result {
        tracing::warn!(agent = agent.id(), task = %remote.task_id, error = %e, "A2A CancelTask failed");
    }
}

/// What [`call`] makes of the results of one exchange, in order (a `SendMessage` result is one
/// frame): the reply it would accept, or its error. For `switchboard check-agent`, which reads
/// the frames itself to report on them.
pub(crate) fn fold(frames: &[StreamResponse], streaming: bool) -> Result<AgentReply, DispatchError> {
    let mut outcome = Outcome::default();
    for frame in frames {
        match frame {
            StreamResponse::Task(task) => outcome.task(task, None),
            StreamResponse::Message(m) => {
                outcome.parts(&m.parts, None);
                outcome.state = Some(TaskState::Completed);
            }
            StreamResponse::StatusUpdate(u) => {
                outcome.task_id.clone_from(&u.task_id);
                outcome.context_id.clone_from(&u.context_id);
                outcome.status(u.status.state.clone(), u.status.message.as_ref(), None);
            }
            StreamResponse::ArtifactUpdate(u) => {
                outcome.task_id.clone_from(&u.task_id);
                outcome.context_id.clone_from(&u.context_id);
                outcome.parts(&u.artifact.parts, None);
            }
        }
        if outcome.is_final() {
            break;
        }
    }
    if streaming && outcome.state.is_none() {
        return Err(DispatchError::Protocol("the A2A stream ended without a task state".into()));
    }
    outcome.finish()
}
