//! Protocol `a2a`: the sub-agent speaks A2A 1.0 (JSON-RPC binding), types from the official
//! `a2a-lf` crate (the spec's `a2a.proto` in Rust).
//!
//! The Agent Card (`/.well-known/agent-card.json` under the configured URL, or the URL itself when
//! it names a `.json` file) says where to call (`supportedInterfaces[]` with binding `JSONRPC`) and
//! whether the agent streams. `SendStreamingMessage` (or `SendMessage`) carries the sub-task's
//! message as a text part and its semantic-key values as one data part, with header
//! `A2A-Version: 1.0`. Status-update and artifact texts are relayed as deltas; artifacts are the
//! result (their text the reply's message, their data parts the `output` object), status texts
//! are progress. The task's last state decides: `TASK_STATE_COMPLETED` is done;
//! `FAILED` / `REJECTED` / `CANCELED` fail the sub-task; `INPUT_REQUIRED` (and `AUTH_REQUIRED`)
//! become [`DispatchError::InputRequired`], a clarification continued on the same task and context
//! by the next turn. The SSE frames are read as for the `sse` protocol (`sse::events`:
//! `eventsource-stream` behind the bounded line framing).

use std::sync::atomic::{AtomicBool, Ordering};

use ::a2a::{
    AgentCard, Artifact, JsonRpcId, JsonRpcRequest, Message, Part, PartContent, Role, StreamResponse, Task, TaskState,
};
use futures::StreamExt;
use serde_json::{json, Map, Value};

use super::{read_limited, snippet, AgentReply, DeltaFn, DispatchError, DispatchLimits};
use crate::config::card_url;

pub mod card;
use crate::planner::RemoteTask;
use crate::registry::CapabilityCard;
pub use card::{fetch_agent_card, resolve_agent_cards, AgentCardCache};

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

/// Folds a task's responses into one outcome. The task's *last* state decides: a stream may open
/// with the stored task still `INPUT_REQUIRED` (a follow-up on a task that asked something) and
/// go on to `WORKING` and `COMPLETED`. Artifacts are the result; status messages are progress
/// (relayed), except the question of an `INPUT_REQUIRED` status and the text of the last status
/// when there is no artifact.
#[derive(Default)]
struct Outcome {
    task_id: String,
    context_id: String,
    state: Option<TaskState>,
    /// The text of the latest status message (`""` when that status had none).
    status_text: String,
    /// Data parts (objects) of the latest status message.
    status_data: Map<String, Value>,
    /// Artifacts by id, in order of first appearance (a direct message reply is one too).
    artifacts: Vec<(String, Vec<Part>)>,
}

fn parts_text(parts: &[Part]) -> String {
    parts.iter().filter_map(Part::as_text).filter(|t| !t.is_empty()).collect::<Vec<_>>().join("\n")
}

fn parts_data(parts: &[Part]) -> Map<String, Value> {
    let mut data = Map::new();
    for p in parts {
        if let PartContent::Data(Value::Object(obj)) = &p.content {
            data.extend(obj.clone());
        }
    }
    data
}

impl Outcome {
    /// A task snapshot (a `SendMessage` result or a stream's `task` frame): its state, status and
    /// artifacts as they are now. Nothing is relayed: a snapshot is not progress.
    fn task(&mut self, task: &Task) {
        self.task_id.clone_from(&task.id);
        self.context_id.clone_from(&task.context_id);
        self.artifacts = task.artifacts.iter().flatten().map(|a| (a.artifact_id.clone(), a.parts.clone())).collect();
        self.status(task.status.state.clone(), task.status.message.as_ref(), None);
    }

    /// An artifact (update): appended to the artifact of the same id when `append`, else it
    /// replaces it. Its text is relayed.
    fn artifact(&mut self, artifact: &Artifact, append: bool, on_delta: Option<DeltaFn<'_>>) {
        let text = parts_text(&artifact.parts);
        if let (Some(f), false) = (on_delta, text.is_empty()) {
            f(&text);
        }
        match self.artifacts.iter_mut().find(|(id, _)| *id == artifact.artifact_id) {
            Some((_, parts)) if append => parts.extend(artifact.parts.iter().cloned()),
            Some((_, parts)) => parts.clone_from(&artifact.parts),
            None => self.artifacts.push((artifact.artifact_id.clone(), artifact.parts.clone())),
        }
    }

    /// A direct message reply: the result, and the task (if any) is done.
    fn message(&mut self, message: &Message, on_delta: Option<DeltaFn<'_>>) {
        let artifact = Artifact {
            artifact_id: message.message_id.clone(),
            name: None,
            description: None,
            parts: message.parts.clone(),
            metadata: None,
            extensions: None,
        };
        self.artifact(&artifact, false, on_delta);
        self.state = Some(TaskState::Completed);
    }

    /// A status (update): the new state; its message text is relayed as progress.
    fn status(&mut self, state: TaskState, message: Option<&Message>, on_delta: Option<DeltaFn<'_>>) {
        self.status_text = message.map(|m| parts_text(&m.parts)).unwrap_or_default();
        self.status_data = message.map(|m| parts_data(&m.parts)).unwrap_or_default();
        if let (Some(f), false) = (on_delta, self.status_text.is_empty()) {
            f(&self.status_text);
        }
        self.state = Some(state);
    }

    /// One stream frame (a `SendMessage` result is one frame too).
    fn apply(&mut self, frame: StreamResponse, on_delta: Option<DeltaFn<'_>>) {
        match frame {
            // A snapshot, not progress: nothing in it is relayed.
            StreamResponse::Task(task) => self.task(&task),
            StreamResponse::Message(m) => self.message(&m, on_delta),
            StreamResponse::StatusUpdate(u) => {
                self.task_id = u.task_id;
                self.context_id = u.context_id;
                self.status(u.status.state, u.status.message.as_ref(), on_delta);
            }
            StreamResponse::ArtifactUpdate(u) => {
                self.task_id = u.task_id;
                self.context_id = u.context_id;
                self.artifact(&u.artifact, u.append == Some(true), on_delta);
            }
        }
    }

    fn finish(self) -> Result<AgentReply, DispatchError> {
        let result_text =
            self.artifacts.iter().map(|(_, p)| parts_text(p)).filter(|t| !t.is_empty()).collect::<Vec<_>>().join("\n");
        match self.state {
            Some(TaskState::Completed) | None => {
                let message = if result_text.is_empty() { self.status_text } else { result_text };
                let mut data = Map::new();
                for (_, parts) in &self.artifacts {
                    data.extend(parts_data(parts));
                }
                let output = if !data.is_empty() {
                    Value::Object(data)
                } else if !self.status_data.is_empty() {
                    Value::Object(self.status_data)
                } else {
                    json!({ "text": message })
                };
                Ok(AgentReply { output, message })
            }
            Some(TaskState::InputRequired | TaskState::AuthRequired) => Err(DispatchError::InputRequired(RemoteTask {
                task_id: self.task_id,
                context_id: self.context_id,
                question: if self.status_text.is_empty() { result_text } else { self.status_text },
            })),
            Some(other) => Err(DispatchError::Agent(format!("task ended {other:?}: {}", self.status_text))),
        }
    }
}

/// `true` when a stream frame ends the task's stream: a direct message, or a status update that
/// is terminal, interrupted (`INPUT_REQUIRED`, `AUTH_REQUIRED`) or marked `final` (as A2A 0.3
/// servers do). A `task` frame never does: it may be the stored task republished at the start
/// of a follow-up's stream, so only the last state decides.
fn ends_stream(frame: &StreamResponse, raw: &Value) -> bool {
    match frame {
        StreamResponse::Message(_) => true,
        StreamResponse::StatusUpdate(u) => {
            u.status.state.is_terminal()
                || matches!(u.status.state, TaskState::InputRequired | TaskState::AuthRequired)
                || raw["statusUpdate"]["final"] == Value::Bool(true)
        }
        StreamResponse::Task(_) | StreamResponse::ArtifactUpdate(_) => false,
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
    cards: &AgentCardCache,
    agent: &CapabilityCard,
    body: &Value,
    remote: Option<&RemoteTask>,
    call: &crate::dispatch::Call<'_>,
    limits: DispatchLimits,
    on_delta: DeltaFn<'_>,
    relayed: &AtomicBool,
) -> Result<AgentReply, DispatchError> {
    let card = fetch_agent_card(client, cards, &card_url(&agent.url), limits).await?;
    let url = rpc_url(&card)?;
    let streaming = card.capabilities.streaming.unwrap_or(false);
    let params = json!({ "message": outgoing_message(body, remote) });
    let method = if streaming { "SendStreamingMessage" } else { "SendMessage" };
    let request = JsonRpcRequest::new(JsonRpcId::String(uuid::Uuid::new_v4().to_string()), method, Some(params));
    let accept = if streaming { "text/event-stream" } else { "application/json" };
    let resp = call
        .authorize(client.post(&url))
        .headers(agent.headers.clone())
        .header(::a2a::SVC_PARAM_VERSION, ::a2a::VERSION)
        .header("traceparent", call.traceparent)
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
            Ok(::a2a::SendMessageResponse::Task(task)) => outcome.task(&task),
            Ok(::a2a::SendMessageResponse::Message(m)) => outcome.message(&m, None),
            Err(e) => return Err(DispatchError::Protocol(format!("SendMessage result: {e}"))),
        }
        return outcome.finish();
    }

    let mut events = super::sse::events(resp, limits);
    let mut outcome = Outcome::default();
    let relay = |text: &str| {
        relayed.store(true, Ordering::Relaxed);
        on_delta(text);
    };
    while let Some(event) = events.next().await {
        let event = event?;
        let v: Value =
            serde_json::from_str(&event.data).map_err(|e| DispatchError::Protocol(format!("A2A frame: {e}")))?;
        if let Some(e) = rpc_error(&v) {
            return Err(e);
        }
        let frame: StreamResponse = serde_json::from_value(v["result"].clone())
            .map_err(|e| DispatchError::Protocol(format!("A2A frame: {e}")))?;
        let last = ends_stream(&frame, &v["result"]);
        outcome.apply(frame, Some(&relay));
        if last {
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
    cards: &AgentCardCache,
    agent: &CapabilityCard,
    remote: &RemoteTask,
    limits: DispatchLimits,
) {
    let result = async {
        let card = fetch_agent_card(client, cards, &card_url(&agent.url), limits).await?;
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
        let raw = serde_json::to_value(frame).unwrap_or_default();
        let last = ends_stream(frame, &raw);
        outcome.apply(frame.clone(), None);
        if last {
            break;
        }
    }
    if streaming && outcome.state.is_none() {
        return Err(DispatchError::Protocol("the A2A stream ended without a task state".into()));
    }
    outcome.finish()
}
