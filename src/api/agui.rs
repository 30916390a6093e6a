//! `POST /v1/ag-ui`: the same pipeline speaking the AG-UI protocol (docs/http-api.md), so
//! CopilotKit-style frontends work unchanged.
//!
//! Input is AG-UI's `RunAgentInput` (`threadId`, `runId`, `messages`, `state`, `resume?`); the
//! query is the last user message. The turn's stage events are translated by [`AgUiMapper`]:
//! `RUN_STARTED`; `STEP_STARTED` / `STEP_FINISHED` per stage (`intent`, `plan`, `execute`,
//! `summarize`); `ACTIVITY_SNAPSHOT` (`activityType: "PLAN"`) for the task plan; each sub-task's
//! output as its own `TEXT_MESSAGE_START/CONTENT/END` (message id = task id); the final answer as
//! `TEXT_MESSAGE_*`; then `RUN_FINISHED` — with `outcome: {type: "interrupt", interrupts: [..]}`
//! when semantic keys are missing (one interrupt per blocked sub-task: `id` = task id, `reason:
//! "input_required"`, `message`, `responseSchema` from the agent's input schema for those keys,
//! `expiresAt`, `metadata.widgets`; `reason: "auth_required"` for a `write` sub-task the caller
//! may not run) — or `RUN_ERROR`. The frontend resumes with
//! `resume: [{interruptId, status: "resolved" | "cancelled", payload}]`: resolved payloads are the
//! widget values (`slots`), cancelled drops the pending work.

use std::convert::Infallible;

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
use crate::config::key_subschema;
use crate::events::{Stage, StageEvent};
use crate::planner::{RemoteQuestion, SemanticInfo};
use crate::registry::Registry;
use crate::supervisor::TurnRequest;

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
    let Resumed { slots, answers, cancelled } = resumed(&state, &input, &user).await?;
    let cancel = cancelled && slots.is_empty() && answers.is_empty();
    let query = if input.resume.is_empty() { last_user_text(&input.messages) } else { answers.join("\n") };
    let body = super::chat::ChatBody {
        query,
        user_id: Some(user),
        thread_id: Some(input.thread_id.clone()),
        slots: Some(slots),
    };
    let resumed = !input.resume.is_empty();
    let mut req: TurnRequest = match (cancel, resumed) {
        (true, _) => body.validate_cancel()?,
        (false, true) => body.validate_resume()?,
        (false, false) => body.validate()?,
    };
    req.trace_id = super::chat::trace_id(&headers);
    req.principal = principal;
    let admission = state.limits.admit_from(&req.user_id, client.0)?;
    let registry = state.supervisor.registry.load();
    let notice = super::chat::shutdown_text(&registry, &req.query);
    let turn = state.supervisor.start_turn(req);
    let trace = axum::http::HeaderValue::from_str(&turn.trace_id).ok();
    let turn_events = super::chat::drained(
        turn.events,
        state.shutdown.clone(),
        turn.thread_id.clone(),
        turn.session_id.clone(),
        notice,
    );
    let mut mapper = AgUiMapper::new(input.thread_id, input.run_id, registry);
    let first = mapper.start();
    let events = turn_events.flat_map(move |ev| {
        let _held = &admission;
        futures::stream::iter(mapper.map(&ev))
    });
    let stream =
        futures::stream::iter(first).chain(events).map(|v| Ok::<_, Infallible>(Event::default().data(v.to_string())));
    let mut response = Sse::new(stream).keep_alive(KeepAlive::default()).into_response();
    if let Some(trace) = trace {
        response.headers_mut().insert(super::chat::TRACE_HEADER, trace);
    }
    if let Some(a) = &anonymous {
        a.tell(response.headers_mut());
    }
    Ok(response)
}

/// What a run's `resume[]` entries give the turn.
#[derive(Default)]
struct Resumed {
    /// Values of resolved interrupts of our own sub-tasks.
    slots: Map<String, Value>,
    /// Text answers to A2A agents' questions.
    answers: Vec<String>,
    /// Some interrupt was cancelled.
    cancelled: bool,
}

/// Reads the run's `resume[]` against the thread's pending clarification or did-you-mean
/// question: every entry must be `resolved` or `cancelled` and name a pending sub-task or the
/// question (`invalid_resume`, `unknown_interrupt`).
async fn resumed(state: &AppState, input: &RunAgentInput, user: &str) -> Result<Resumed, ApiError> {
    let mut out = Resumed::default();
    if input.resume.is_empty() {
        return Ok(out);
    }
    // The sub-tasks (or the did-you-mean question) the resumed interrupts name: they must be pending.
    let session = state.supervisor.sessions.peek(user, &input.thread_id).await;
    let session = session.map_err(|e| ApiError::Unavailable(format!("session store: {e}")))?;
    let choice_id = session.as_ref().and_then(|s| s.conversation.choice().map(|c| c.choice_id.clone()));
    let pending = session.and_then(|s| s.conversation.pending().map(|p| p.tasks.clone())).unwrap_or_default();
    for r in &input.resume {
        if !matches!(r.status.as_str(), "resolved" | "cancelled") {
            let message = format!("resume status {:?} is not resolved or cancelled", r.status);
            return Err(ApiError::bad_request("invalid_resume", message));
        }
        if choice_id.as_deref() == Some(r.interrupt_id.as_str()) {
            match (&r.payload, r.status.as_str()) {
                (_, "cancelled") => out.cancelled = true,
                (Value::Object(values), _) => out.slots.extend(values.clone()),
                (Value::String(agent), _) => {
                    out.slots.insert(crate::planner::choice::CHOICE_KEY.into(), json!(agent));
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
            "cancelled" => out.cancelled = true,
            // An A2A agent's question is answered in text.
            _ if task.remote.is_some() => {
                if let Some(text) = r.payload.as_str().or_else(|| r.payload["answer"].as_str()) {
                    out.answers.push(text.to_string());
                }
            }
            _ => {
                if let Value::Object(values) = &r.payload {
                    out.slots.extend(values.clone());
                }
            }
        }
    }
    Ok(out)
}

/// Translates one turn's stage events into AG-UI events.
pub struct AgUiMapper {
    thread_id: String,
    run_id: String,
    registry: std::sync::Arc<Registry>,
    step: Option<&'static str>,
    /// Sub-task messages started and not yet ended.
    open: Vec<String>,
    answer_open: bool,
}

impl AgUiMapper {
    /// A mapper for one run.
    pub fn new(thread_id: String, run_id: String, registry: std::sync::Arc<Registry>) -> Self {
        Self { thread_id, run_id, registry, step: None, open: Vec::new(), answer_open: false }
    }

    /// `RUN_STARTED`.
    pub fn start(&self) -> Vec<Value> {
        vec![json!({ "type": "RUN_STARTED", "threadId": self.thread_id, "runId": self.run_id })]
    }

    fn answer_id(&self) -> String {
        format!("answer_{}", self.run_id)
    }

    fn enter(&mut self, step: &'static str, out: &mut Vec<Value>) {
        if self.step == Some(step) {
            return;
        }
        self.leave(out);
        out.push(json!({ "type": "STEP_STARTED", "stepName": step }));
        self.step = Some(step);
    }

    fn leave(&mut self, out: &mut Vec<Value>) {
        if let Some(step) = self.step.take() {
            out.push(json!({ "type": "STEP_FINISHED", "stepName": step }));
        }
    }

    fn text(out: &mut Vec<Value>, id: &str, started: bool, delta: &str) {
        if !started {
            out.push(json!({ "type": "TEXT_MESSAGE_START", "messageId": id, "role": "assistant" }));
        }
        if !delta.is_empty() {
            out.push(json!({ "type": "TEXT_MESSAGE_CONTENT", "messageId": id, "delta": delta }));
        }
    }

    fn close_task(&mut self, id: &str, out: &mut Vec<Value>) {
        if let Some(pos) = self.open.iter().position(|t| t == id) {
            self.open.remove(pos);
            out.push(json!({ "type": "TEXT_MESSAGE_END", "messageId": id }));
        }
    }

    /// The AG-UI events for one stage event.
    pub fn map(&mut self, ev: &StageEvent) -> Vec<Value> {
        let mut out = Vec::new();
        let task = ev.task_id.clone().unwrap_or_default();
        match ev.stage {
            Stage::IntentStarted | Stage::IntentDone => self.enter("intent", &mut out),
            Stage::PlanStarted => self.enter("plan", &mut out),
            Stage::PlanDone => {
                self.enter("plan", &mut out);
                let id = ev.payload.plan.as_ref().map_or_else(|| "plan".to_string(), |p| p.plan_id.clone());
                let plan =
                    ev.payload.plan.as_ref().map_or(Value::Null, |p| serde_json::to_value(&**p).unwrap_or_default());
                out.push(json!({ "type": "ACTIVITY_SNAPSHOT", "messageId": id, "activityType": "PLAN", "content": plan, "replace": true }));
            }
            // An A2A agent asked something: its question was relayed; its message ends here.
            Stage::Blocked if ev.task_id.is_some() => self.close_task(&task, &mut out),
            Stage::Blocked => {}
            Stage::AgentStarted => {
                self.enter("execute", &mut out);
                Self::text(&mut out, &task, false, "");
                self.open.push(task);
            }
            Stage::AgentDelta => {
                let started = self.open.contains(&task);
                Self::text(&mut out, &task, started, &ev.content);
                if !started {
                    self.open.push(task);
                }
            }
            Stage::AgentDone | Stage::AgentFailed => {
                self.enter("execute", &mut out);
                // The final message (or failure text) follows any streamed progress.
                let started = self.open.contains(&task);
                Self::text(&mut out, &task, started, &ev.content);
                if !started {
                    self.open.push(task.clone());
                }
                self.close_task(&task, &mut out);
            }
            Stage::SummarizeStarted => self.enter("summarize", &mut out),
            Stage::AnswerDelta => {
                let id = self.answer_id();
                Self::text(&mut out, &id, self.answer_open, &ev.content);
                self.answer_open = true;
            }
            Stage::Answer | Stage::Escalated => {
                let id = self.answer_id();
                if !self.answer_open {
                    Self::text(&mut out, &id, false, &ev.content);
                }
                out.push(json!({ "type": "TEXT_MESSAGE_END", "messageId": id }));
                for t in std::mem::take(&mut self.open) {
                    out.push(json!({ "type": "TEXT_MESSAGE_END", "messageId": t }));
                }
                self.leave(&mut out);
                let mut finished = json!({ "type": "RUN_FINISHED", "threadId": self.thread_id, "runId": self.run_id });
                let infos = ev.payload.semantic_info.as_deref().unwrap_or_default();
                let questions = ev.payload.questions.as_deref().unwrap_or_default();
                if !infos.is_empty() || !questions.is_empty() {
                    let expires = ev.payload.clarification_expires_at.unwrap_or_else(|| self.default_expiry());
                    let mut interrupts = self.interrupts(infos, &ev.content, expires);
                    interrupts.extend(questions.iter().map(|q| question_interrupt(q, expires)));
                    finished["outcome"] = json!({ "type": "interrupt", "interrupts": interrupts });
                } else {
                    finished["outcome"] = json!({ "type": "success" });
                    if let Some(card) = &ev.payload.escalation {
                        finished["result"] = json!({ "escalation": &**card });
                    }
                }
                out.push(finished);
            }
            Stage::Error => {
                self.leave(&mut out);
                out.push(json!({ "type": "RUN_ERROR", "message": ev.content, "code": "supervisor_error" }));
            }
        }
        out
    }

    /// When a clarification asked now would expire, for answers that carry no stored expiry.
    fn default_expiry(&self) -> chrono::DateTime<chrono::Utc> {
        chrono::Utc::now()
            + chrono::Duration::from_std(self.registry.settings.clarification_timeout.0)
                .unwrap_or(chrono::Duration::MAX)
    }

    /// One interrupt per blocked sub-task, merging its `miss` and `invalid` keys; a did-you-mean
    /// question is one interrupt whose `responseSchema` is an enum of the candidates; a sub-task
    /// blocked for auth gets one `auth_required` interrupt instead.
    fn interrupts(&self, infos: &[SemanticInfo], message: &str, expires: chrono::DateTime<chrono::Utc>) -> Vec<Value> {
        // (task id, agent id, [(key, description, widget)])
        type Keys = Vec<(String, String, String)>;
        let mut by_task: Vec<(String, String, Keys)> = Vec::new();
        let mut choices = Vec::new();
        let auth: Vec<&SemanticInfo> = infos.iter().filter(|i| i.auth.is_some()).collect();
        choices.extend(auth.iter().map(|i| auth_interrupt(i, expires)));
        for info in infos.iter().filter(|i| !auth.iter().any(|a| a.task_id == i.task_id)) {
            if info.kind == crate::planner::MissKind::Intent {
                choices.push(self.choice_interrupt(info, message, expires));
                continue;
            }
            let entry = match by_task.iter_mut().position(|(t, _, _)| *t == info.task_id) {
                Some(i) => &mut by_task[i],
                None => {
                    by_task.push((info.task_id.clone(), info.sub_agent_id.clone(), Vec::new()));
                    by_task.last_mut().expect("just pushed")
                }
            };
            for ((k, d), w) in info.keys.iter().zip(&info.key_descriptions).zip(&info.fe_widgets_suggestion) {
                entry.2.push((k.clone(), d.clone(), w.clone()));
            }
        }
        by_task
            .into_iter()
            .map(|(task, agent, keys)| {
                let names: Vec<&str> = keys.iter().map(|(k, _, _)| k.as_str()).collect();
                let input_schema = self.registry.get(&agent).map_or_else(|| json!({}), |a| (*a.input_schema).clone());
                let mut schema = key_subschema(&input_schema, &names);
                // A key the input schema does not describe (an agent registered by its card alone)
                // is still a described text field.
                for (k, d, _) in &keys {
                    let Some(Value::Object(prop)) = schema["properties"].get_mut(k) else { continue };
                    if prop.is_empty() {
                        prop.insert("type".into(), json!("string"));
                    }
                    prop.entry("description").or_insert_with(|| json!(d));
                }
                let widgets: Vec<Value> = keys
                    .iter()
                    .map(|(k, d, w)| {
                        json!({ "key": k, "description": d, "widget": w, "descriptor": self.registry.widgets.get(w.as_str()) })
                    })
                    .collect();
                json!({
                    "id": task,
                    "reason": "input_required",
                    "message": message,
                    "responseSchema": schema,
                    "expiresAt": expires.to_rfc3339(),
                    "metadata": { "widgets": widgets },
                })
            })
            .chain(choices)
            .collect()
    }

    /// The interrupt of a did-you-mean question: `{intent: <agent id>}` with the candidates as
    /// an enum (`oneOf` with titles for display), the `intent_picker` widget and the candidates.
    fn choice_interrupt(&self, info: &SemanticInfo, message: &str, expires: chrono::DateTime<chrono::Utc>) -> Value {
        let key = crate::planner::choice::CHOICE_KEY;
        let description = info.key_descriptions.first().cloned().unwrap_or_default();
        let ids: Vec<&str> = info.candidates.iter().map(|c| c.agent_id.as_str()).collect();
        let titled: Vec<Value> = info
            .candidates
            .iter()
            .map(|c| json!({ "const": c.agent_id, "title": c.name, "description": c.description }))
            .collect();
        let widget = info.fe_widgets_suggestion.first().cloned().unwrap_or_default();
        json!({
            "id": info.task_id,
            "reason": "input_required",
            "message": message,
            "responseSchema": {
                "type": "object",
                "properties": { key: { "type": "string", "enum": ids, "oneOf": titled, "description": description } },
                "required": [key],
            },
            "expiresAt": expires.to_rfc3339(),
            "metadata": {
                "widgets": [{ "key": key, "description": description, "widget": widget, "descriptor": self.registry.widgets.get(widget.as_str()) }],
                "candidates": info.candidates,
            },
        })
    }
}

/// The interrupt of a sub-task blocked for auth: the client signs the user in (or gets the
/// scopes) and resumes it (`status: "resolved"`, no payload needed) with the new credentials.
fn auth_interrupt(info: &SemanticInfo, expires: chrono::DateTime<chrono::Utc>) -> Value {
    let auth = info.auth.as_ref();
    json!({
        "id": info.task_id,
        "reason": "auth_required",
        "message": auth.map(|a| a.message.as_str()),
        "expiresAt": expires.to_rfc3339(),
        "metadata": {
            "code": auth.map(|a| a.code.as_str()),
            "scopes": auth.map(|a| &a.scopes),
            "missing_scopes": auth.map(|a| &a.missing_scopes),
        },
    })
}

/// The interrupt for an A2A sub-agent's own question: its message is the question, the answer a
/// text (`payload: {"answer": "…"}`), sent to the agent on its task.
fn question_interrupt(q: &RemoteQuestion, expires: chrono::DateTime<chrono::Utc>) -> Value {
    json!({
        "id": q.task_id,
        "reason": "input_required",
        "message": q.question,
        "responseSchema": {
            "type": "object",
            "properties": { "answer": { "type": "string", "description": q.question } },
            "required": ["answer"],
        },
        "expiresAt": expires.to_rfc3339(),
        "metadata": { "widgets": [] },
    })
}
