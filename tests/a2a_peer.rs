//! An A2A 1.0 sub-agent written here, over real sockets (axum on 127.0.0.1:0), that behaves like
//! the `@a2a-js/sdk` sample server: a follow-up `SendStreamingMessage` on a task waiting for input
//! is answered by a stream that *begins with the stored task* (still `TASK_STATE_INPUT_REQUIRED`,
//! with its old question), then `WORKING` status updates, an artifact and `COMPLETED` (the last
//! status update also carries the A2A 0.3 `final: true`, as that SDK still sends it).
//!
//! The agent books train tickets: a message without a date is asked "请问您哪天出发？"; the answer
//! (any text) is the date. Booking streams a `WORKING` text ("余票充足，正在出票…"), then an artifact
//! whose text is the result ("已为您预订…") and whose data part is `{date, train, seat}`.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};

/// What the agent asks when the message names no date.
pub(crate) const QUESTION: &str = "请问您哪天出发？";
/// The progress text streamed before the result.
pub(crate) const PROGRESS: &str = "余票充足，正在出票…";

/// The booking's result text for `date`.
pub(crate) fn booked(date: &str) -> String {
    format!("已为您预订{date}的G123次列车，座位08车12F。")
}

#[derive(Default)]
struct PeerState {
    base: String,
    tasks: HashMap<String, Value>,
    /// Every JSON-RPC request received, in order.
    requests: Vec<Value>,
}

/// The running agent; stops when dropped.
pub(crate) struct TrainAgent {
    /// `http://127.0.0.1:<port>` (the card is under it).
    pub(crate) url: String,
    state: Arc<Mutex<PeerState>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for TrainAgent {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl TrainAgent {
    /// Starts the agent on a free port.
    pub(crate) async fn spawn() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let state = Arc::new(Mutex::new(PeerState { base: url.clone(), ..Default::default() }));
        let app = Router::new()
            .route("/.well-known/agent-card.json", get(card))
            .route("/rpc", post(rpc))
            .with_state(state.clone());
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Self { url, state, task }
    }

    /// The JSON-RPC requests received so far.
    pub(crate) fn requests(&self) -> Vec<Value> {
        self.state.lock().unwrap().requests.clone()
    }

    /// A stored task.
    pub(crate) fn task(&self, id: &str) -> Option<Value> {
        self.state.lock().unwrap().tasks.get(id).cloned()
    }

    /// The capability card registering this agent as `train_agent` (protocol `a2a`).
    pub(crate) fn config_entry(&self) -> Value {
        json!({
            "id": "train_agent",
            "name": "火车票预订",
            "description": "预订火车票。",
            "endpoint": { "url": self.url, "protocol": "a2a", "timeout": "10s" },
            "keywords": ["火车票", "高铁票", "train ticket"],
            "input_schema": { "type": "object", "properties": { "message": { "type": "string" } } },
            "output_schema": { "type": "object" },
        })
    }
}

async fn card(State(st): State<Arc<Mutex<PeerState>>>) -> Json<Value> {
    let base = st.lock().unwrap().base.clone();
    Json(json!({
        "name": "Train Agent",
        "description": "Books train tickets.",
        "version": "1.0.0",
        "supportedInterfaces": [{ "url": format!("{base}/rpc"), "protocolBinding": "JSONRPC", "protocolVersion": "1.0" }],
        "capabilities": { "streaming": true, "pushNotifications": false },
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain", "application/json"],
        "skills": [{ "id": "book", "name": "Book", "description": "Books a train ticket.", "tags": ["train"] }],
    }))
}

fn text_of(message: &Value) -> String {
    message["parts"].as_array().into_iter().flatten().filter_map(|p| p["text"].as_str()).collect::<Vec<_>>().join("\n")
}

fn status(state: &str, text: Option<&str>, task_id: &str, context_id: &str) -> Value {
    let mut status = json!({ "state": state, "timestamp": "2026-01-01T00:00:00Z" });
    if let Some(t) = text {
        status["message"] = json!({ "messageId": uuid::Uuid::new_v4().to_string(), "role": "ROLE_AGENT",
                                     "taskId": task_id, "contextId": context_id, "parts": [{ "text": t }] });
    }
    status
}

async fn rpc(State(st): State<Arc<Mutex<PeerState>>>, Json(req): Json<Value>) -> Response {
    let id = req["id"].clone();
    let error = |code: i64, message: &str| {
        Json(json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } })).into_response()
    };
    let mut st = st.lock().unwrap();
    st.requests.push(req.clone());
    match req["method"].as_str().unwrap_or_default() {
        "SendStreamingMessage" => {}
        "GetTask" => {
            return match st.tasks.get(req["params"]["id"].as_str().unwrap_or_default()) {
                Some(t) => Json(json!({ "jsonrpc": "2.0", "id": id, "result": t })).into_response(),
                None => error(-32001, "task not found"),
            }
        }
        "CancelTask" => {
            let Some(t) = st.tasks.get_mut(req["params"]["id"].as_str().unwrap_or_default()) else {
                return error(-32001, "task not found");
            };
            t["status"] = status("TASK_STATE_CANCELED", None, "", "");
            return Json(json!({ "jsonrpc": "2.0", "id": id, "result": t })).into_response();
        }
        _ => return error(-32601, "method not found"),
    }
    let message = req["params"]["message"].clone();
    let text = text_of(&message);
    let mut frames = Vec::new();
    let (task_id, context_id, date) = match message["taskId"].as_str() {
        // A follow-up: the stream begins with the stored task, as it is (still INPUT_REQUIRED).
        Some(tid) => {
            let Some(task) = st.tasks.get_mut(tid) else { return error(-32001, "task not found") };
            frames.push(json!({ "task": task.clone() }));
            task["history"].as_array_mut().unwrap().push(message.clone());
            (tid.to_string(), task["contextId"].as_str().unwrap().to_string(), Some(text.trim().to_string()))
        }
        None => {
            let tid = uuid::Uuid::new_v4().to_string();
            let ctx = message["contextId"].as_str().map_or_else(|| uuid::Uuid::new_v4().to_string(), str::to_string);
            let mut m = message.clone();
            m["taskId"] = json!(tid);
            m["contextId"] = json!(ctx);
            let task = json!({ "id": tid, "contextId": ctx, "status": status("TASK_STATE_SUBMITTED", None, &tid, &ctx),
                               "history": [m] });
            frames.push(json!({ "task": task.clone() }));
            st.tasks.insert(tid.clone(), task);
            let date = regex::Regex::new(r"\d+月\d+日").unwrap().find(&text).map(|m| m.as_str().to_string());
            (tid, ctx, date)
        }
    };
    let status_update = |state: &str, text: Option<&str>| json!({ "statusUpdate": { "taskId": task_id, "contextId": context_id, "status": status(state, text, &task_id, &context_id) } });
    let task = st.tasks.get_mut(&task_id).unwrap();
    match date.filter(|d| !d.is_empty()) {
        None => {
            frames.push(status_update("TASK_STATE_WORKING", Some("正在查询车次…")));
            frames.push(status_update("TASK_STATE_INPUT_REQUIRED", Some(QUESTION)));
            task["status"] = status("TASK_STATE_INPUT_REQUIRED", Some(QUESTION), &task_id, &context_id);
        }
        Some(date) => {
            frames.push(status_update("TASK_STATE_WORKING", Some(PROGRESS)));
            let artifact = json!({ "artifactId": "ticket", "name": "ticket", "parts": [
                { "text": booked(&date) }, { "data": { "date": date, "train": "G123", "seat": "08车12F" } } ] });
            frames.push(json!({ "artifactUpdate": { "taskId": task_id, "contextId": context_id,
                                                    "artifact": artifact, "lastChunk": true } }));
            let mut last = status_update("TASK_STATE_COMPLETED", None);
            last["statusUpdate"]["final"] = json!(true);
            frames.push(last);
            task["status"] = status("TASK_STATE_COMPLETED", None, &task_id, &context_id);
            task["artifacts"] = json!([artifact]);
        }
    }
    let events: Vec<Result<Event, Infallible>> = frames
        .into_iter()
        .map(|result| Ok(Event::default().data(json!({ "jsonrpc": "2.0", "id": id, "result": result }).to_string())))
        .collect();
    Sse::new(futures::stream::iter(events)).into_response()
}
