//! `POST /v1/ag-ui`: the same pipeline speaking the AG-UI protocol (docs/http-api.md), so
//! CopilotKit-style frontends work unchanged.
//!
//! Input is AG-UI's `RunAgentInput` (`threadId`, `runId`, `messages`, `state`, `resume?`); the
//! query is the last user message. The run streams `RUN_STARTED`, a `STATE_SNAPSHOT` of the
//! conversation ([`state`]), the turn's stage events as translated by [`AgUiMapper`] (steps,
//! reasoning, the plan activity, one sub-agent run per dispatched sub-task, the answer), a
//! `STATE_DELTA` to the state the turn saved, then `RUN_FINISHED` — with `outcome: {type:
//! "interrupt", interrupts: [..]}` when semantic keys are missing (one interrupt per blocked
//! sub-task: `id` = task id, `reason: "input_required"`, `message`, `responseSchema` from the
//! agent's input schema for those keys, `expiresAt`, `metadata.widgets`) — or `RUN_ERROR`. The
//! frontend resumes with `resume: [{interruptId, status: "resolved" | "cancelled", payload}]`:
//! resolved payloads are the widget values (`slots`), cancelled drops the pending work.

use std::convert::Infallible;
use std::sync::Arc;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::IntoResponse;
use futures::StreamExt;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::error::{ApiError, ApiJson};
use super::identity::{Anonymous, DENIED};
use super::AppState;
use crate::events::StageEvent;
use crate::planner::SubTask;
use crate::registry::Registry;
use crate::session::Session;
use crate::supervisor::TurnRequest;

mod mapper;
pub mod state;

pub use mapper::AgUiMapper;

/// AG-UI `RunAgentInput` (the fields Switchboard reads; others are accepted and ignored).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunAgentInput {
    /// The conversation thread (Switchboard's `thread_id`).
    pub thread_id: String,
    /// This run.
    pub run_id: String,
    /// The conversation; the last `user` message is the query.
    #[serde(default)]
    pub messages: Vec<Value>,
    /// Frontend state; `state.user_id` names the user (else header `x-user-id`, else
    /// `forwardedProps.user_id`, else the caller is anonymous: see [`super::identity`]).
    #[serde(default)]
    pub state: Value,
    /// Forwarded props.
    #[serde(default)]
    pub forwarded_props: Value,
    /// Answers to the previous run's interrupts.
    #[serde(default)]
    pub resume: Vec<ResumeEntry>,
}

/// One `resume[]` entry.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResumeEntry {
    /// The interrupt answered (a blocked sub-task's id).
    pub interrupt_id: String,
    /// `resolved` or `cancelled`.
    pub status: String,
    /// For `resolved`: the values, semantic key -> value.
    #[serde(default)]
    pub payload: Value,
}

/// The users a run names, in precedence order: `state.user_id`, header `x-user-id`,
/// `forwardedProps.user_id`.
fn named_users<'a>(input: &'a RunAgentInput, headers: &'a HeaderMap) -> [Option<&'a str>; 3] {
    [
        input.state["user_id"].as_str(),
        headers.get("x-user-id").and_then(|v| v.to_str().ok()),
        input.forwarded_props["user_id"].as_str(),
    ]
}

fn last_user_text(messages: &[Value]) -> String {
    messages
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .map(|m| match &m["content"] {
            Value::String(s) => s.clone(),
            // Multimodal content: join the text parts.
            Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect::<Vec<_>>().join(" "),
            _ => String::new(),
        })
        .unwrap_or_default()
}

/// The handler.
pub async fn run(
    State(state): State<AppState>,
    client: super::limits::ClientAddr,
    headers: HeaderMap,
    ApiJson(input): ApiJson<RunAgentInput>,
) -> Result<axum::response::Response, ApiError> {
    let policy = state.supervisor.registry.load().settings.anonymous;
    let principal = super::identity::verify(&state, &headers, client).await?;
    let named = super::identity::acting_user(principal.as_deref(), named_users(&input, &headers))?;
    let (user, anonymous) = match named {
        Some(user) => (user, None),
        None => {
            let a = Anonymous::of(&headers, policy).ok_or_else(|| ApiError::bad_request("user_required", DENIED))?;
            (a.user_id.clone(), Some(a))
        }
    };
    let session = state.supervisor.sessions.peek(&user, &input.thread_id).await;
    let session = session.map_err(|e| ApiError::Unavailable(format!("session store: {e}")))?;
    let registry = state.supervisor.registry.load();
    let snapshot = self::state::document(&input.state, session.as_ref(), &registry);
    // The sub-tasks (or the did-you-mean question) the resumed interrupts name: they must be pending.
    let choice_id = session.as_ref().and_then(|s| s.conversation.choice().map(|c| c.choice_id.clone()));
    let pending = session.and_then(|s| s.conversation.pending().map(|p| p.tasks.clone())).unwrap_or_default();
    let Resumed { slots, answers, cancelled } = resumed(&input, &pending, choice_id.as_deref())?;
    let cancel = cancelled && slots.is_empty() && answers.is_empty();
    let query = if input.resume.is_empty() { last_user_text(&input.messages) } else { answers.join("\n") };
    let body = super::chat::ChatBody {
        query,
        user_id: Some(user),
        thread_id: Some(input.thread_id.clone()),
        slots: Some(slots),
    };
    let mut req: TurnRequest = match (cancel, !input.resume.is_empty()) {
        (true, _) => body.validate_cancel()?,
        (false, true) => body.validate_resume()?,
        (false, false) => body.validate()?,
    };
    req.trace_id = super::chat::trace_id(&headers);
    req.principal = principal;
    let admission = state.limits.admit_from(&req.user_id, client.0)?;
    let notice = super::chat::shutdown_text(&registry, &req.query);
    let turn = state.supervisor.start_turn(req);
    let trace = axum::http::HeaderValue::from_str(&turn.trace_id).ok();
    let events = super::chat::drained(
        turn.events,
        state.shutdown.clone(),
        turn.thread_id.clone(),
        turn.session_id.clone(),
        notice,
    );
    let mapper = AgUiMapper::new(input.thread_id, input.run_id, registry.clone());
    let mut first = mapper.start();
    first.push(json!({ "type": "STATE_SNAPSHOT", "snapshot": snapshot }));
    let run = Run {
        events: Box::pin(events),
        mapper,
        saved: Some(turn.saved),
        shutdown: state.shutdown.clone(),
        input_state: input.state,
        sent: snapshot,
        registry,
        _admission: admission,
    };
    let stream = futures::stream::iter(first)
        .chain(futures::stream::unfold(run, Run::next).flat_map(futures::stream::iter))
        .map(|v| Ok::<_, Infallible>(Event::default().data(v.to_string())));
    let mut response = Sse::new(stream).keep_alive(KeepAlive::default()).into_response();
    if let Some(trace) = trace {
        response.headers_mut().insert(super::chat::TRACE_HEADER, trace);
    }
    if let Some(a) = &anonymous {
        a.tell(response.headers_mut());
    }
    Ok(response)
}

/// What the `resume[]` entries answer.
#[derive(Debug, Default)]
struct Resumed {
    /// Form values, semantic key -> value.
    slots: Map<String, Value>,
    /// Text answers to A2A agents' questions.
    answers: Vec<String>,
    /// Whether any interrupt was cancelled.
    cancelled: bool,
}

/// The answers of the `resume[]` entries; every entry must name a `pending` sub-task or the
/// pending did-you-mean question (`choice_id`).
fn resumed(input: &RunAgentInput, pending: &[SubTask], choice_id: Option<&str>) -> Result<Resumed, ApiError> {
    let mut slots = Map::new();
    let mut answers = Vec::new();
    let mut cancelled = false;
    for r in &input.resume {
        if !matches!(r.status.as_str(), "resolved" | "cancelled") {
            let message = format!("resume status {:?} is not resolved or cancelled", r.status);
            return Err(ApiError::bad_request("invalid_resume", message));
        }
        if choice_id == Some(r.interrupt_id.as_str()) {
            match (&r.payload, r.status.as_str()) {
                (_, "cancelled") => cancelled = true,
                (Value::Object(values), _) => slots.extend(values.clone()),
                (Value::String(agent), _) => {
                    slots.insert(crate::planner::choice::CHOICE_KEY.into(), json!(agent));
                }
                _ => {}
            }
            continue;
        }
        let Some(task) = pending.iter().find(|t| t.task_id == r.interrupt_id) else {
            let message = format!(
                "interrupt {:?} is not pending on thread {:?}: it was already answered or cancelled, or never asked",
                r.interrupt_id, input.thread_id
            );
            return Err(ApiError::bad_request("unknown_interrupt", message));
        };
        match r.status.as_str() {
            "cancelled" => cancelled = true,
            // An A2A agent's question is answered in text.
            _ if task.remote.is_some() => {
                if let Some(text) = r.payload.as_str().or_else(|| r.payload["answer"].as_str()) {
                    answers.push(text.to_string());
                }
            }
            _ => {
                if let Value::Object(values) = &r.payload {
                    slots.extend(values.clone());
                }
            }
        }
    }
    Ok(Resumed { slots, answers, cancelled })
}

/// One run's stream: the turn's stage events through the mapper; before `RUN_FINISHED`, the
/// `STATE_DELTA` from the state sent at the start to the session the turn saved.
struct Run {
    events: std::pin::Pin<Box<dyn futures::Stream<Item = StageEvent> + Send>>,
    mapper: AgUiMapper,
    saved: Option<tokio::sync::oneshot::Receiver<Session>>,
    shutdown: tokio_util::sync::CancellationToken,
    input_state: Value,
    /// The state document as the client has it.
    sent: Value,
    registry: Arc<Registry>,
    /// Held for the stream's life: the admission slot of the request.
    _admission: super::limits::Admission,
}

impl Run {
    /// The AG-UI events of the next stage event; `None` after the last.
    async fn next(mut self) -> Option<(Vec<Value>, Self)> {
        let ev = self.events.next().await?;
        let mut out = self.mapper.map(&ev);
        let finished = out.last().filter(|e| e["type"] == "RUN_FINISHED").is_some();
        if let Some(saved) = self.saved.take_if(|_| finished) {
            let fin = out.pop();
            // The turn saves its session right after its `done` event (unless a shutdown cuts it).
            let session = tokio::select! {
                s = saved => s.ok(),
                () = self.shutdown.cancelled() => None,
            };
            if let Some(session) = session {
                let doc = self::state::document(&self.input_state, Some(&session), &self.registry);
                let delta = json_patch::diff(&self.sent, &doc);
                if !delta.is_empty() {
                    out.push(json!({ "type": "STATE_DELTA", "delta": delta }));
                    self.sent = doc;
                }
            }
            out.extend(fin);
        }
        Some((out, self))
    }
}
