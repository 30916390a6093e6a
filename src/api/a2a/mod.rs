//! The supervisor as an A2A 1.0 agent (docs/http-api.md), so supervisors nest under other
//! supervisors: its Agent Card at `/.well-known/agent-card.json` (skills = the enabled capability
//! cards) and JSON-RPC at `/a2a` with `SendMessage`, `SendStreamingMessage`, `GetTask`,
//! `ListTasks`, `CancelTask` and `SubscribeToTask`. Only A2A 1.0 is served: a request for another
//! version (`A2A-Version`; none means 0.3) gets `VersionNotSupportedError` (`check_version`).
//! Types come from the official `a2a-lf` crate.
//!
//! One A2A task is one turn; the A2A context is the Switchboard thread. A task belongs to the
//! user that created it (`x-user-id`): other users get `TaskNotFoundError`. Text parts are the
//! query, data parts are `slots`. The turn runs in the background (`tasks.rs`): stage events move
//! the task to `TASK_STATE_WORKING` (streamed as status updates), the answer is an artifact.
//! `SendMessage` waits for the end unless `returnImmediately`; `GetTask` follows the task.
//! Missing semantic keys (or a sub-agent's question) end the task in `TASK_STATE_INPUT_REQUIRED`
//! whose status message carries the text and a data part `{semantic_info: [{keys,
//! key_descriptions, fe_widgets_suggestion, ..}]}`; a follow-up message on the same task resumes
//! it. A `write` sub-task the caller may not run ends it in `TASK_STATE_AUTH_REQUIRED` instead.
//! With `auth` on, the caller is verified first (HTTP 401 / 403, not JSON-RPC errors), and the
//! card declares the scheme (`securitySchemes`, `securityRequirements`). `CancelTask` stops
//! following a running turn (which still completes in the background).

mod tasks;

use std::collections::HashMap;
use std::convert::Infallible;

use ::a2a::{
    AgentCapabilities, AgentCard, AgentInterface, AgentSkill, ApiKeySecurityScheme, Artifact, CancelTaskRequest,
    GetTaskRequest, HttpAuthSecurityScheme, JsonRpcError, JsonRpcId, JsonRpcRequest, JsonRpcResponse, ListTasksRequest,
    ListTasksResponse, Message, Part, PartContent, Role, SecurityRequirement, SecurityScheme, SendMessageRequest,
    StreamResponse, Task, TaskArtifactUpdateEvent, TaskState, TaskStatus, TaskStatusUpdateEvent,
};
use axum::extract::{RawQuery, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::Json;
use futures::StreamExt;
use serde_json::{json, Map, Value};
use tokio_stream::wrappers::UnboundedReceiverStream;

use super::identity::Anonymous;
use super::AppState;
use crate::config::{Access, AuthMode, AuthSettings};
use crate::events::{Stage, StageEvent};
use crate::planner::MissKind;
use crate::supervisor::TurnRequest;
use crate::text::Lang;
pub use tasks::A2aTasks;
use tasks::{CancelError, Cursor, ListQuery, SubscribeError, Updates};

fn base_url(headers: &HeaderMap) -> String {
    let host = headers.get("host").and_then(|h| h.to_str().ok()).unwrap_or("127.0.0.1");
    let scheme = headers.get("x-forwarded-proto").and_then(|h| h.to_str().ok()).unwrap_or("http");
    format!("{scheme}://{host}")
}

/// `GET /.well-known/agent-card.json`.
pub async fn agent_card(State(state): State<AppState>, headers: HeaderMap) -> Json<AgentCard> {
    let reg = state.supervisor.registry.load();
    let skills = reg
        .enabled()
        .map(|a| AgentSkill {
            id: a.spec.id.to_string(),
            name: a.spec.name.to_string(),
            description: a.spec.description.to_string(),
            tags: a.spec.keywords.clone(),
            examples: Some(a.spec.examples.clone()),
            input_modes: None,
            output_modes: None,
            security_requirements: skill_security(&reg.auth.settings, a),
        })
        .collect();
    let (security_schemes, security_requirements) = security(&reg.auth.settings);
    let modes = vec!["text/plain".to_string(), "application/json".to_string()];
    Json(AgentCard {
        name: "Switchboard".into(),
        description: reg.texts().get(Lang::En, "a2a-card-description", &[]),
        version: env!("CARGO_PKG_VERSION").into(),
        supported_interfaces: vec![AgentInterface::new(format!("{}/a2a", base_url(&headers)), "JSONRPC")],
        capabilities: AgentCapabilities {
            streaming: Some(true),
            push_notifications: Some(false),
            extended_agent_card: Some(false),
            ..Default::default()
        },
        default_input_modes: modes.clone(),
        default_output_modes: modes,
        skills,
        provider: None,
        documentation_url: None,
        icon_url: None,
        security_schemes,
        security_requirements,
        signatures: None,
    })
}

/// The card's security scheme for the `auth` mode (A2A 1.0 §4.5, OpenAPI-style): `bearer` (HTTP
/// `Bearer`, format JWT) in mode `jwt`; `trusted_header` (an API-key-style header set by a
/// trusted proxy) in mode `trusted_header`; none in mode `none`. Every call requires it.
fn security(auth: &AuthSettings) -> (Option<HashMap<String, SecurityScheme>>, Option<Vec<SecurityRequirement>>) {
    let scheme = match auth.mode {
        AuthMode::None => return (None, None),
        AuthMode::Jwt => SecurityScheme::HttpAuth(HttpAuthSecurityScheme {
            scheme: "Bearer".into(),
            description: Some("A JWT from the configured issuer; the user is its `sub`.".into()),
            bearer_format: Some("JWT".into()),
        }),
        AuthMode::TrustedHeader => SecurityScheme::ApiKey(ApiKeySecurityScheme {
            location: "header".into(),
            name: auth.trusted_header.user_header.clone(),
            description: Some("The user, set by a trusted proxy; direct calls are refused.".into()),
        }),
    };
    let name = scheme_name(auth.mode).to_string();
    let requirement: SecurityRequirement = [(name.clone(), Vec::new())].into_iter().collect();
    (Some([(name, scheme)].into_iter().collect()), Some(vec![requirement]))
}

fn scheme_name(mode: AuthMode) -> &'static str {
    match mode {
        AuthMode::TrustedHeader => "trusted_header",
        _ => "bearer",
    }
}

/// A `write` skill's requirement: the scheme with the card's scopes.
fn skill_security(auth: &AuthSettings, agent: &crate::registry::CapabilityCard) -> Option<Vec<SecurityRequirement>> {
    if auth.mode == AuthMode::None || agent.spec.access != Access::Write {
        return None;
    }
    Some(vec![[(scheme_name(auth.mode).to_string(), agent.spec.scopes.clone())].into_iter().collect()])
}

const PUSH_NOT_SUPPORTED: &str = "push notifications are not supported (capabilities.pushNotifications is false)";

fn rpc_error(id: JsonRpcId, code: i32, message: impl Into<String>) -> Response {
    Json(JsonRpcResponse::error(id, JsonRpcError { code, message: message.into(), data: None })).into_response()
}

/// The error of a streaming method: one SSE frame when the client reads event streams (the
/// binding's response to these methods), else a JSON body.
fn stream_error(headers: &HeaderMap, id: JsonRpcId, code: i32, message: impl Into<String>) -> Response {
    let sse = headers
        .get_all(axum::http::header::ACCEPT)
        .iter()
        .any(|v| v.to_str().is_ok_and(|a| a.to_ascii_lowercase().contains("text/event-stream")));
    if !sse {
        return rpc_error(id, code, message);
    }
    let body = JsonRpcResponse::error(id, JsonRpcError { code, message: message.into(), data: None });
    let event = Ok::<_, Infallible>(Event::default().data(serde_json::to_string(&body).unwrap_or_default()));
    Sse::new(futures::stream::iter([event])).into_response()
}

fn success(id: JsonRpcId, result: Value) -> Response {
    Json(JsonRpcResponse::success(id, result)).into_response()
}

/// The A2A 0.3 JSON-RPC method names.
const V03_METHODS: [&str; 10] = [
    "message/send",
    "message/stream",
    "tasks/get",
    "tasks/cancel",
    "tasks/resubscribe",
    "tasks/pushNotificationConfig/set",
    "tasks/pushNotificationConfig/get",
    "tasks/pushNotificationConfig/list",
    "tasks/pushNotificationConfig/delete",
    "agent/getAuthenticatedExtendedCard",
];

/// The protocol version of a request (spec §3.6): header `A2A-Version`, else the request
/// parameter of that name; `Major.Minor`, a patch number is ignored; absent or empty means 0.3.
/// Only 1.0 is served. A 0.3 request is refused with `VersionNotSupportedError` — except that a
/// request without a version whose method exists only in 1.0 (`SendMessage`, …) is served as 1.0
/// (**extension**: no 0.3 client sends those names).
fn check_version(headers: &HeaderMap, query: Option<&str>, method: &str) -> Result<(), String> {
    let from_query = query.into_iter().flat_map(|q| q.split('&')).find_map(|kv| {
        let (k, v) = kv.split_once('=')?;
        k.eq_ignore_ascii_case("A2A-Version").then(|| v.to_string())
    });
    let given = headers
        .get(::a2a::SVC_PARAM_VERSION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
        .or(from_query)
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty());
    let major_minor = |v: &str| {
        let mut parts = v.split('.');
        let major = parts.next().unwrap_or_default();
        let minor = parts.next().unwrap_or("0");
        (major.to_string(), minor.to_string())
    };
    match given.as_deref().map(major_minor) {
        Some((major, minor)) if major == "1" && minor == "0" => Ok(()),
        None if !V03_METHODS.contains(&method) => Ok(()),
        Some((major, minor)) if !(major == "0" && minor == "3") => {
            Err(format!("A2A version {major}.{minor} is not supported; this agent speaks A2A 1.0"))
        }
        _ => Err("A2A 0.3 is not supported (no A2A-Version header means 0.3): send `A2A-Version: 1.0` \
                  and use the 1.0 methods (SendMessage, GetTask, ...)"
            .into()),
    }
}

/// Reads the JSON-RPC 2.0 request object: `-32700` when the body is not JSON; `-32600` (with the
/// request's `id` when it can be read) when it is not a request object — a batch, `jsonrpc` not
/// `"2.0"`, `method` missing or not a string, `id` not a string, integer or null, `params` not
/// structured; `-32602` for positional params (A2A's are named). `None` for a notification (no
/// `id` member).
fn envelope(body: &[u8]) -> Result<Option<JsonRpcRequest>, (JsonRpcId, i32, String)> {
    let value: Value =
        serde_json::from_slice(body).map_err(|e| (JsonRpcId::Null, -32700, format!("parse error: {e}")))?;
    let Value::Object(obj) = value else {
        let what = if value.is_array() { "batch requests are not supported" } else { "not a request object" };
        return Err((JsonRpcId::Null, -32600, format!("invalid request: {what}")));
    };
    let id = match obj.get("id") {
        None => None,
        Some(Value::Null) => Some(JsonRpcId::Null),
        Some(Value::String(s)) => Some(JsonRpcId::String(s.clone())),
        Some(Value::Number(n)) if n.is_i64() => Some(JsonRpcId::Number(n.as_i64().unwrap_or_default())),
        Some(other) => {
            return Err((
                JsonRpcId::Null,
                -32600,
                format!("invalid request: `id` must be a string or an integer, not {other}"),
            ))
        }
    };
    let invalid = |msg: &str| (id.clone().unwrap_or(JsonRpcId::Null), -32600, format!("invalid request: {msg}"));
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(invalid("`jsonrpc` must be \"2.0\""));
    }
    let Some(method) = obj.get("method").and_then(Value::as_str) else {
        return Err(invalid("`method` (a string) is required"));
    };
    let params = match obj.get("params") {
        None | Some(Value::Null) => None,
        Some(p @ Value::Object(_)) => Some(p.clone()),
        Some(Value::Array(_)) => {
            let id = id.clone().unwrap_or(JsonRpcId::Null);
            return Err((id, -32602, "invalid params: A2A params are an object, not an array".into()));
        }
        Some(_) => return Err(invalid("`params` must be an object")),
    };
    Ok(id.map(|id| JsonRpcRequest { jsonrpc: "2.0".into(), id, method: method.to_string(), params }))
}

/// `POST /a2a`: JSON-RPC 2.0.
pub async fn rpc(
    State(state): State<AppState>,
    client: super::limits::ClientAddr,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
    body: axum::body::Bytes,
) -> Response {
    let req = match envelope(&body) {
        Ok(Some(r)) => r,
        // A notification: A2A has none, and JSON-RPC forbids answering one.
        Ok(None) => return axum::http::StatusCode::NO_CONTENT.into_response(),
        Err((id, code, message)) => return rpc_error(id, code, message),
    };
    let id = req.id.clone();
    if let Err(e) = check_version(&headers, query.as_deref(), &req.method) {
        let data = json!({ "supportedVersions": [::a2a::VERSION] });
        return Json(JsonRpcResponse::error(id, JsonRpcError { code: -32009, message: e, data: Some(data) }))
            .into_response();
    }
    let params = req.params.unwrap_or(Value::Null);
    // Authentication is the transport's: a refused caller gets the HTTP 401 / 403 of every route.
    let principal = match super::identity::verify(&state, &headers, client).await {
        Ok(p) => p,
        Err(e) => return e.into_response(),
    };
    let named = headers.get("x-user-id").and_then(|v| v.to_str().ok()).filter(|u| !u.is_empty());
    let verified = match super::identity::acting_user(principal.as_deref(), [named]) {
        Ok(user) => principal.is_some().then_some(user).flatten(),
        Err(e) => return e.into_response(),
    };
    let (user, anonymous) = match verified.as_deref().or(named) {
        Some(user) => (user.to_string(), None),
        None => {
            // Without its token, an anonymous caller naming a task an anonymous caller created is
            // that caller: the task id, server-issued and unguessable, is the capability (a client
            // such as a conformance suite does not keep headers between calls).
            let owner = (!headers.contains_key(super::identity::TOKEN_HEADER))
                .then(|| anonymous_owner(&state, &params))
                .flatten();
            match (Anonymous::of(&headers, state.supervisor.registry.load().settings.anonymous), owner) {
                (Some(_), Some(owner)) => (owner, None),
                (Some(a), None) => (a.user_id.clone(), Some(a)),
                (None, _) => {
                    let message = "a user identity is required (header x-user-id); anonymous callers are not allowed";
                    return rpc_error(id, -32600, message);
                }
            }
        }
    };
    let caller = Caller { user, principal };
    let mut response = dispatch_rpc(&state, &headers, id, &req.method, params, &caller, client).await;
    if let Some(a) = &anonymous {
        a.tell(response.headers_mut());
    }
    response
}

/// The anonymous owner of the task a call names (`params.id`, or `params.message.taskId`).
fn anonymous_owner(state: &AppState, params: &Value) -> Option<String> {
    let task = params["id"].as_str().or_else(|| params["message"]["taskId"].as_str())?;
    state.a2a_tasks.owner(task).filter(|owner| owner.starts_with("anon-"))
}

/// Who an `/a2a` call acts for.
struct Caller {
    /// The user (verified, named by `x-user-id`, or anonymous).
    user: String,
    /// The verified caller, with `auth` on.
    principal: Option<std::sync::Arc<crate::auth::Principal>>,
}

/// One JSON-RPC call of `caller`.
async fn dispatch_rpc(
    state: &AppState,
    headers: &HeaderMap,
    id: JsonRpcId,
    method: &str,
    params: Value,
    caller: &Caller,
    client: super::limits::ClientAddr,
) -> Response {
    let user = caller.user.as_str();
    match method {
        "SendMessage" => send_message(state, id, params, caller, client).await,
        "SendStreamingMessage" => match start(state, params, caller, client) {
            Ok((started, updates)) => {
                stream(id, with_history(started.task, started.history_length), updates).into_response()
            }
            Err(Refused::Rpc(code, msg)) => stream_error(headers, id, code, msg),
            Err(refused) => refused.into_response(id),
        },
        "SubscribeToTask" => subscribe_to_task(state, headers, id, &params, user),
        "GetTask" => get_task(state, id, params, user),
        "ListTasks" => match list(state, params, user) {
            Ok(result) => success(id, result),
            Err(msg) => rpc_error(id, -32602, msg),
        },
        "CancelTask" => cancel_task(state, id, params, user).await,
        "CreateTaskPushNotificationConfig"
        | "GetTaskPushNotificationConfig"
        | "ListTaskPushNotificationConfigs"
        | "DeleteTaskPushNotificationConfig" => rpc_error(id, -32003, PUSH_NOT_SUPPORTED),
        // The card does not declare `capabilities.extendedAgentCard`.
        "GetExtendedAgentCard" => {
            rpc_error(id, -32004, "this agent has no extended agent card (capabilities.extendedAgentCard is not set)")
        }
        other => rpc_error(id, -32601, format!("method not found: {other}")),
    }
}

/// `SendMessage`: starts (or continues) the task; waits for its end unless `returnImmediately`.
async fn send_message(
    state: &AppState,
    id: JsonRpcId,
    params: Value,
    caller: &Caller,
    client: super::limits::ClientAddr,
) -> Response {
    let user = caller.user.as_str();
    match start(state, params, caller, client) {
        Ok((started, mut updates)) if !started.return_immediately => {
            // Wait for the end: the updates stop when the task is terminal or interrupted.
            while updates.recv().await.is_some() {}
            let task = state.a2a_tasks.get(&started.task.id, user).unwrap_or(started.task);
            success(id, json!({ "task": with_history(task, started.history_length) }))
        }
        Ok((started, _)) => success(id, json!({ "task": with_history(started.task, started.history_length) })),
        Err(refused) => refused.into_response(id),
    }
}

/// `SubscribeToTask`: the task's updates as a stream, from now on.
fn subscribe_to_task(state: &AppState, headers: &HeaderMap, id: JsonRpcId, params: &Value, user: &str) -> Response {
    let Some(task_id) = params["id"].as_str().filter(|t| !t.is_empty()) else {
        return stream_error(headers, id, -32602, "invalid params: `id` (the task id) is required");
    };
    match state.a2a_tasks.subscribe(task_id, user) {
        Ok((task, updates)) => stream(id, task, updates).into_response(),
        Err(SubscribeError::NotFound) => stream_error(headers, id, -32001, "task not found"),
        Err(SubscribeError::Terminal) => stream_error(
            headers,
            id,
            -32004,
            format!("task {task_id} is in a terminal state: there is nothing to subscribe to"),
        ),
    }
}

/// `GetTask`: the user's task, with at most `historyLength` history messages.
fn get_task(state: &AppState, id: JsonRpcId, params: Value, user: &str) -> Response {
    let req: GetTaskRequest = match serde_json::from_value(params) {
        Ok(r) => r,
        Err(e) => return rpc_error(id, -32602, format!("invalid params: {e}")),
    };
    if let Err(msg) = check_history_length(req.history_length) {
        return rpc_error(id, -32602, msg);
    }
    match state.a2a_tasks.get(&req.id, user) {
        Some(task) => success(id, json!(with_history(task, req.history_length))),
        None => rpc_error(id, -32001, "task not found"),
    }
}

/// `CancelTask`: drops the clarification the task waits on (if any), then marks it canceled.
async fn cancel_task(state: &AppState, id: JsonRpcId, params: Value, user: &str) -> Response {
    let req: CancelTaskRequest = match serde_json::from_value(params) {
        Ok(r) => r,
        Err(e) => return rpc_error(id, -32602, format!("invalid params: {e}")),
    };
    let task_id = req.id.as_str();
    // A clarification the task waits on is dropped first: if that fails, nothing changed.
    if let Some(task) = state.a2a_tasks.get(task_id, user) {
        if task.status.state == TaskState::InputRequired {
            if let Err(e) = state.supervisor.cancel_pending(user, &task.context_id).await {
                return rpc_error(id, -32603, format!("session store: {e}"));
            }
        }
    }
    let status = TaskStatus { state: TaskState::Canceled, message: None, timestamp: Some(chrono::Utc::now()) };
    match state.a2a_tasks.cancel(task_id, user, status) {
        Ok((task, _)) => success(id, json!(task)),
        Err(CancelError::NotFound) => rpc_error(id, -32001, "task not found"),
        Err(CancelError::NotCancelable) => rpc_error(id, -32002, "task cannot be canceled"),
    }
}

/// `ListTasks`: the user's tasks, filtered, most recently updated first, a page at a time
/// (`pageSize` 1..=100, default 50); artifacts only with `includeArtifacts`.
fn list(state: &AppState, params: Value, user: &str) -> Result<Value, String> {
    let params = if params.is_null() { json!({}) } else { params };
    let req: ListTasksRequest = serde_json::from_value(params).map_err(|e| format!("invalid params: {e}"))?;
    let page_size = match req.page_size {
        None => 50,
        Some(n @ 1..=100) => n as usize,
        Some(n) => return Err(format!("invalid params: pageSize must be between 1 and 100, not {n}")),
    };
    check_history_length(req.history_length)?;
    let cursor = match req.page_token.as_deref().filter(|t| !t.is_empty()) {
        None => None,
        Some(t) => {
            Some(Cursor::parse(t).ok_or_else(|| format!("invalid params: pageToken {t:?} is not a page token"))?)
        }
    };
    let query = ListQuery {
        context_id: req.context_id.filter(|c| !c.is_empty()),
        status: req.status.filter(|s| *s != TaskState::Unspecified),
        after: req.status_timestamp_after,
        cursor,
        page_size,
    };
    let page = state.a2a_tasks.list(user, &query);
    let include_artifacts = req.include_artifacts.unwrap_or(false);
    let tasks = page
        .tasks
        .into_iter()
        .map(|mut t| {
            if !include_artifacts {
                t.artifacts = None;
            }
            with_history(t, req.history_length)
        })
        .collect();
    let response = ListTasksResponse {
        tasks,
        next_page_token: page.next.map(|c| c.token()).unwrap_or_default(),
        page_size: page_size as i32,
        total_size: i32::try_from(page.total).unwrap_or(i32::MAX),
    };
    Ok(json!(response))
}

/// A negative `historyLength` is invalid.
fn check_history_length(n: Option<i32>) -> Result<(), String> {
    match n {
        Some(n) if n < 0 => Err(format!("invalid params: historyLength must not be negative, not {n}")),
        _ => Ok(()),
    }
}

/// The task with at most `n` of its most recent history messages (`0`: no `history` field;
/// unset: all of it).
fn with_history(mut task: Task, n: Option<i32>) -> Task {
    match n.and_then(|n| usize::try_from(n).ok()) {
        Some(0) => task.history = None,
        Some(n) => {
            if let Some(h) = task.history.as_mut() {
                let drop = h.len().saturating_sub(n);
                h.drain(..drop);
            }
        }
        None => {}
    }
    task
}

/// A task just started, and how the client wants the answer.
struct Started {
    task: Task,
    return_immediately: bool,
    /// The `historyLength` of the tasks returned.
    history_length: Option<i32>,
}

/// Why a message was not started.
enum Refused {
    /// A JSON-RPC error (invalid params, ...).
    Rpc(i32, String),
    /// Shed by the server's limits: the JSON-RPC error goes with the HTTP status (429 / 503) and
    /// `Retry-After`, as on every other route.
    Shed(super::error::ApiError),
}

impl Refused {
    fn into_response(self, id: JsonRpcId) -> Response {
        match self {
            Self::Rpc(code, message) => rpc_error(id, code, message),
            Self::Shed(e) => {
                let message = e.to_string();
                let api = e.into_response();
                let mut resp = rpc_error(id, -32603, message);
                *resp.status_mut() = api.status();
                if let Some(retry) = api.headers().get(axum::http::header::RETRY_AFTER) {
                    resp.headers_mut().insert(axum::http::header::RETRY_AFTER, retry.clone());
                }
                resp
            }
        }
    }
}

impl From<(i32, String)> for Refused {
    fn from((code, message): (i32, String)) -> Self {
        Self::Rpc(code, message)
    }
}

/// Validates the message, stores the task in `SUBMITTED` (new, or the continued one), starts the
/// turn in the background and subscribes to the task's updates.
fn start(
    state: &AppState,
    params: Value,
    caller: &Caller,
    client: super::limits::ClientAddr,
) -> Result<(Started, Updates), Refused> {
    let user = caller.user.as_str();
    // Shed with the HTTP status of every other route (429 / 503 + Retry-After).
    let admission = state.limits.admit_from(user, client.0).map_err(Refused::Shed)?;
    let req: SendMessageRequest =
        serde_json::from_value(params).map_err(|e| (-32602, format!("invalid params: {e}")))?;
    if req.configuration.as_ref().is_some_and(|c| c.task_push_notification_config.is_some()) {
        return Err(Refused::Rpc(-32003, PUSH_NOT_SUPPORTED.into()));
    }
    let return_immediately = req.configuration.as_ref().and_then(|c| c.return_immediately).unwrap_or(false);
    let history_length = req.configuration.as_ref().and_then(|c| c.history_length);
    check_history_length(history_length).map_err(|e| (-32602, e))?;
    let message = req.message;
    let (text, slots) = query_and_slots(&message);
    let continues = continued_task(state, &message, user)?;
    let context_id = continues.as_ref().map_or_else(
        || message.context_id.clone().unwrap_or_else(|| format!("ctx_{}", uuid::Uuid::new_v4().simple())),
        |t| t.context_id.clone(),
    );
    let task_id =
        continues.as_ref().map_or_else(|| format!("task_{}", uuid::Uuid::new_v4().simple()), |t| t.id.clone());
    let body = super::chat::ChatBody {
        query: text,
        user_id: Some(user.to_string()),
        thread_id: Some(context_id.clone()),
        slots: Some(slots),
    };
    let mut turn_req: TurnRequest = body.validate().map_err(|e| (-32602, e.to_string()))?;
    turn_req.principal = caller.principal.clone();
    let turn = state.supervisor.start_turn(turn_req);
    drop(admission);
    let mut history = continues.and_then(|t| t.history).unwrap_or_default();
    let mut message = message;
    message.task_id = Some(task_id.clone());
    message.context_id = Some(context_id.clone());
    history.push(message);
    let task = Task {
        id: task_id,
        context_id,
        status: TaskStatus { state: TaskState::Submitted, message: None, timestamp: Some(chrono::Utc::now()) },
        artifacts: None,
        history: Some(history),
        metadata: Some(HashMap::from([("trace_id".to_string(), json!(turn.trace_id))])),
    };
    let updates = state.a2a_tasks.start(task.clone(), user);
    drive(state.clone(), task.id.clone(), user.to_string(), task.context_id.clone(), turn.events);
    Ok((Started { task, return_immediately, history_length }, updates))
}

/// The query (the text parts, one a line) and the slots (the data parts' objects, merged) of a
/// message.
fn query_and_slots(message: &Message) -> (String, Map<String, Value>) {
    let mut text = Vec::new();
    let mut slots = Map::new();
    for part in &message.parts {
        match &part.content {
            PartContent::Text(t) => text.push(t.clone()),
            PartContent::Data(Value::Object(values)) => slots.extend(values.clone()),
            _ => {}
        }
    }
    (text.join("\n"), slots)
}

/// The task a message continues (it names one), if any. A message naming a task continues it
/// (and its thread): the task must exist for this user, not be terminal, and be in the message's
/// context if one is given. Nothing is rewritten.
fn continued_task(state: &AppState, message: &Message, user: &str) -> Result<Option<Task>, Refused> {
    let Some(id) = message.task_id.as_deref() else { return Ok(None) };
    let task = state.a2a_tasks.get(id, user).ok_or_else(|| (-32001, format!("task not found: {id}")))?;
    if task.status.state.is_terminal() {
        return Err(Refused::Rpc(-32004, format!("task {id} is in a terminal state and accepts no more messages")));
    }
    if !tasks::stopped(&task.status.state) {
        return Err(Refused::Rpc(-32004, format!("task {id} is still working; send when it asks for input")));
    }
    if message.context_id.as_ref().is_some_and(|c| *c != task.context_id) {
        return Err(Refused::Rpc(-32602, format!("invalid params: contextId does not match the context of task {id}")));
    }
    Ok(Some(task))
}

type Turn = crate::events::EventReceiver;

/// Applies the turn's events to the task in the background: a `WORKING` status update per stage
/// event with text, then at the `done` event the answer artifact and the final status. A task
/// cancelled meanwhile is left as it is; a clarification its turn opened is dropped.
fn drive(state: AppState, task_id: String, owner: String, context_id: String, mut turn: Turn) {
    tokio::spawn(async move {
        while let Some(ev) = turn.recv().await {
            if ev.is_done() {
                let applied = state.a2a_tasks.update(&task_id, |task| finish(task, &ev));
                let asks = ev.payload.semantic_info.as_ref().is_some_and(|i| !i.is_empty())
                    || ev.payload.questions.as_ref().is_some_and(|q| !q.is_empty());
                if !applied && asks {
                    if let Err(e) = state.supervisor.cancel_pending(&owner, &context_id).await {
                        tracing::warn!(task = %task_id, error = %e, "could not drop the clarification of a cancelled A2A task");
                    }
                }
                break;
            }
            if !ev.content.is_empty() {
                state.a2a_tasks.update(&task_id, |task| vec![working(task, &ev)]);
            }
        }
    });
}

fn agent_message(task: &Task, parts: Vec<Part>) -> Message {
    let mut m = Message::new(Role::Agent, parts);
    m.task_id = Some(task.id.clone());
    m.context_id = Some(task.context_id.clone());
    m
}

/// A stage event with text: the task is `WORKING`, the text is its status message.
fn working(task: &mut Task, ev: &StageEvent) -> StreamResponse {
    let message = agent_message(task, vec![Part::text(ev.content.clone())]);
    task.status = TaskStatus { state: TaskState::Working, message: Some(message), timestamp: Some(chrono::Utc::now()) };
    let mut metadata = HashMap::new();
    metadata.insert("stage".to_string(), json!(ev.stage));
    StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
        task_id: task.id.clone(),
        context_id: task.context_id.clone(),
        status: task.status.clone(),
        metadata: Some(metadata),
    })
}

/// Applies the turn's `done` event to the task: state, status message (also appended to the
/// history), answer artifact; returns the events telling it. Missing
/// semantic keys and questions of A2A sub-agents both leave the task `INPUT_REQUIRED`.
fn finish(task: &mut Task, done: &StageEvent) -> Vec<StreamResponse> {
    let mut asks = Map::new();
    if let Some(info) = done.payload.semantic_info.as_deref().filter(|i| !i.is_empty()) {
        asks.insert("semantic_info".into(), json!(info));
    }
    if let Some(questions) = done.payload.questions.as_deref().filter(|q| !q.is_empty()) {
        asks.insert("input_required".into(), json!(questions));
    }
    // A sub-task that needs a signed-in user (or more scopes) asks for credentials first.
    let auth = done.payload.semantic_info.as_deref().is_some_and(|i| i.iter().any(|s| s.kind == MissKind::Auth));
    let (state, mut parts) = match done.stage {
        Stage::Error => (TaskState::Failed, vec![Part::text(done.content.clone())]),
        _ if !asks.is_empty() => {
            let state = if auth { TaskState::AuthRequired } else { TaskState::InputRequired };
            (state, vec![Part::text(done.content.clone()), Part::data(Value::Object(asks))])
        }
        _ => (TaskState::Completed, vec![Part::text(done.content.clone())]),
    };
    if let Some(card) = &done.payload.escalation {
        parts.push(Part::data(json!({ "escalation": &**card })));
    }
    if state == TaskState::Completed {
        let mut artifact_parts = vec![Part::text(done.content.clone())];
        if let Some(plan) = &done.payload.plan {
            artifact_parts.push(Part::data(json!({ "plan": &**plan })));
        }
        task.artifacts = Some(vec![answer_artifact(artifact_parts)]);
    }
    let message = agent_message(task, parts);
    task.history.get_or_insert_with(Vec::new).push(message.clone());
    task.status = TaskStatus { state, message: Some(message), timestamp: Some(chrono::Utc::now()) };
    let mut events = Vec::new();
    if let Some(artifact) = task.artifacts.as_ref().and_then(|a| a.first()) {
        events.push(StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
            task_id: task.id.clone(),
            context_id: task.context_id.clone(),
            artifact: artifact.clone(),
            append: None,
            last_chunk: Some(true),
            metadata: None,
        }));
    }
    events.push(StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
        task_id: task.id.clone(),
        context_id: task.context_id.clone(),
        status: task.status.clone(),
        metadata: None,
    }));
    events
}

fn answer_artifact(parts: Vec<Part>) -> Artifact {
    Artifact {
        artifact_id: "answer".into(),
        name: Some("answer".into()),
        description: None,
        parts,
        metadata: None,
        extensions: None,
    }
}

fn frame(id: &JsonRpcId, result: &StreamResponse) -> Result<Event, Infallible> {
    let body = JsonRpcResponse::success(id.clone(), serde_json::to_value(result).unwrap_or(Value::Null));
    Ok(Event::default().data(serde_json::to_string(&body).unwrap_or_default()))
}

/// A task's stream: the task as it is, then its updates until it is terminal or interrupted.
fn stream(id: JsonRpcId, task: Task, updates: Updates) -> impl IntoResponse {
    let first = frame(&id, &StreamResponse::Task(task));
    let rest = UnboundedReceiverStream::new(updates).map(move |ev| frame(&id, &ev));
    Sse::new(futures::stream::iter([first]).chain(rest)).keep_alive(KeepAlive::default())
}
