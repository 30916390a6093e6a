//! Sample sub-agents of a travel desk, served as real HTTP servers: used by `switchboard demo`
//! (the `demo` feature of the `switchboard` crate) and by its integration tests and benchmarks
//! (which read their [`CallLog`]s). This crate does not depend on `switchboard`.
//!
//! Each agent speaks the sub-agent protocol of docs/sub-agent-protocol.md on `POST /invoke`
//! (and answers `GET /healthz`):
//! - request body `{task_id, plan_id, session_id, user_id, thread_id, message, inputs, context}`;
//! - reply `200 {"output": {..}, "message": "text for the user"}`;
//! - with `Accept: text/event-stream`, an SSE stream of `delta` events (`{"text": ..}`) then one
//!   `result` event (the reply body), or one `error` event (`{"message": ..}`) when the inputs are
//!   unusable. The pickup agent (configured with protocol `sse`) streams three progress deltas;
//!   the others, configured as `http`, stream their message as a single delta if asked to;
//! - a body that is not a JSON object is a `400`, missing or invalid inputs a `422`, both with
//!   the error shape `{"error": {"code": .., "message": ..}}`.
//!
//! | agent | inputs | output |
//! |---|---|---|
//! | `flight_agent` | `flight_no` | `flight_no, airline, status, departure_airport, departure_airport_name, arrival_airport, arrival_airport_name, arrival_time, terminal, city` |
//! | `pickup_agent` | `airport`, `arrival_time`, `flight_no`? | `driver, car_plate, car_model, airport, pickup_time, meeting_point` |
//! | `hotel_agent` | `city`, `check_in_date`, `nights`? | `hotel_name, hotel_address, city, check_in_date, nights, price_per_night, currency` |
//! | `weather_agent` | `city` | `city, forecast[3] {date, condition, high_c, low_c}` |
//! | `exchange_agent` | `amount`, `currency` | `amount, currency, cny, rate` |
//!
//! The data is plausible and deterministic: it derives from the inputs and today's local date
//! (see `agents.rs`). Output data is Chinese; messages are Chinese when the request's `message`
//! contains CJK characters, English otherwise. Every call is recorded with its body, headers and
//! start/finish instants, so tests can prove ordering and concurrency from recorded intervals.
//!
//! The input and output JSON Schemas these agents satisfy are `schemas/agents/<id>.*.json`,
//! referenced from the repository's `agents_config.yaml`; `tests/config_files.rs` keeps them in
//! step.

mod agents;

use std::convert::Infallible;
use std::fmt;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Serialize;
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

use self::agents::{Lang, Reply};

/// The sample agents.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SampleAgentKind {
    /// Flight status (protocol `http`).
    Flight,
    /// Airport pickup (protocol `sse`).
    Pickup,
    /// Hotel booking (protocol `http`).
    Hotel,
    /// Three-day weather forecast (protocol `http`).
    Weather,
    /// Foreign currency to CNY (protocol `http`).
    Exchange,
}

impl SampleAgentKind {
    /// Every sample agent, in the order of `agents_config.yaml`.
    pub const ALL: [SampleAgentKind; 5] = [Self::Flight, Self::Pickup, Self::Hotel, Self::Weather, Self::Exchange];

    /// The agent id used in `agents_config.yaml`.
    pub fn agent_id(self) -> &'static str {
        match self {
            Self::Flight => "flight_agent",
            Self::Pickup => "pickup_agent",
            Self::Hotel => "hotel_agent",
            Self::Weather => "weather_agent",
            Self::Exchange => "exchange_agent",
        }
    }

    /// The sample for an agent id, if there is one.
    pub fn from_agent_id(id: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.agent_id() == id)
    }
}

impl fmt::Display for SampleAgentKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.agent_id())
    }
}

/// Behaviour knobs of a sample agent.
#[derive(Debug, Clone, Default)]
pub struct SampleOptions {
    /// Extra latency before replying. In SSE mode it is spread evenly before each delta and
    /// before the final event.
    pub delay: Duration,
}

/// One request a sample agent received.
#[derive(Debug, Clone, Serialize)]
pub struct RecordedCall {
    /// The JSON body; for a body that is not JSON, its text as a JSON string.
    pub body: Value,
    /// Request headers in arrival order, names lower-case.
    pub headers: Vec<(String, String)>,
    /// When the handler began.
    #[serde(skip)]
    pub started: Instant,
    /// Just before the reply was sent (SSE: just before the final `result` or `error` event).
    #[serde(skip)]
    pub finished: Instant,
}

impl RecordedCall {
    /// The first value of a header (name matched case-insensitively).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// The calls a sample agent received, shared between its server and the test that reads it.
#[derive(Debug, Clone, Default)]
pub struct CallLog(Arc<Mutex<Vec<RecordedCall>>>);

impl CallLog {
    /// An empty log.
    pub fn new() -> Self {
        Self::default()
    }

    /// A copy of every recorded call, in order of completion.
    pub fn calls(&self) -> Vec<RecordedCall> {
        self.lock().clone()
    }

    /// Number of recorded calls.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// `true` when no call was recorded.
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    /// Forgets every recorded call.
    pub fn clear(&self) {
        self.lock().clear();
    }

    fn push(&self, call: RecordedCall) {
        self.lock().push(call);
    }

    /// The calls, even if a holder of the lock panicked (the data is append-only).
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<RecordedCall>> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// A running sample agent; the server stops when this is dropped.
pub struct SampleAgentHandle {
    /// Which sample this is.
    pub kind: SampleAgentKind,
    /// Where it listens.
    pub addr: SocketAddr,
    /// What it received.
    pub log: CallLog,
    task: tokio::task::JoinHandle<()>,
}

impl SampleAgentHandle {
    /// The invoke URL, `http://{addr}/invoke`.
    pub fn url(&self) -> String {
        format!("http://{}/invoke", self.addr)
    }
}

impl fmt::Debug for SampleAgentHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SampleAgentHandle")
            .field("kind", &self.kind)
            .field("addr", &self.addr)
            .field("calls", &self.log.len())
            .finish_non_exhaustive()
    }
}

impl Drop for SampleAgentHandle {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Serves the `kind` sample agent on `listener` in a background task until the handle is dropped.
pub async fn spawn_sample_agent(
    kind: SampleAgentKind,
    listener: TcpListener,
    opts: SampleOptions,
) -> SampleAgentHandle {
    let log = CallLog::new();
    let addr = match listener.local_addr() {
        Ok(addr) => addr,
        Err(e) => {
            tracing::warn!(agent = %kind, error = %e, "sample agent listener has no local address");
            SocketAddr::from(([127, 0, 0, 1], 0))
        }
    };
    let router = sample_router(kind, opts, log.clone());
    let task = tokio::spawn(async move {
        if let Err(e) = axum::serve(nodelay(listener), router).await {
            tracing::error!(agent = %kind, error = %e, "sample agent stopped");
        }
    });
    tracing::debug!(agent = %kind, %addr, "sample agent listening");
    SampleAgentHandle { kind, addr, log, task }
}

/// `listener` with `TCP_NODELAY` set on every accepted connection (SSE deltas are small writes
/// that must not wait for Nagle's algorithm).
fn nodelay(listener: TcpListener) -> impl axum::serve::Listener<Io = tokio::net::TcpStream, Addr = SocketAddr> {
    use axum::serve::ListenerExt;
    listener.tap_io(|tcp| {
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::trace!(error = %e, "cannot set TCP_NODELAY");
        }
    })
}

/// The router of one sample agent: `POST /invoke`, `GET /healthz`; anything else is a JSON 404
/// or 405. Calls are recorded in `log`.
pub fn sample_router(kind: SampleAgentKind, opts: SampleOptions, log: CallLog) -> Router {
    Router::new()
        .route("/invoke", post(invoke))
        .route("/healthz", get(healthz))
        .fallback(|| async { error(StatusCode::NOT_FOUND, "not_found", "no such route; use POST /invoke") })
        .method_not_allowed_fallback(|| async {
            error(StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed", "method not allowed")
        })
        .with_state(Arc::new(AgentState { kind, opts, log }))
}

struct AgentState {
    kind: SampleAgentKind,
    opts: SampleOptions,
    log: CallLog,
}

/// A call being served: recorded once, when its reply is about to be sent.
struct Pending {
    log: CallLog,
    body: Value,
    headers: Vec<(String, String)>,
    started: Instant,
}

impl Pending {
    fn finish(self) {
        let Pending { log, body, headers, started } = self;
        log.push(RecordedCall { body, headers, started, finished: Instant::now() });
    }
}

fn error(status: StatusCode, code: &str, message: impl Into<String>) -> Response {
    (status, Json(json!({ "error": { "code": code, "message": message.into() } }))).into_response()
}

async fn healthz(State(st): State<Arc<AgentState>>) -> Json<Value> {
    Json(json!({ "status": "ok", "agent": st.kind.agent_id() }))
}

async fn invoke(
    State(st): State<Arc<AgentState>>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let started = Instant::now();
    let recorded_headers = headers
        .iter()
        .map(|(k, v)| (k.as_str().to_string(), String::from_utf8_lossy(v.as_bytes()).into_owned()))
        .collect();
    let mut pending = Pending { log: st.log.clone(), body: Value::Null, headers: recorded_headers, started };

    let bytes = match body {
        Ok(bytes) => bytes,
        Err(rejection) => {
            let status = rejection.status();
            let code = if status == StatusCode::PAYLOAD_TOO_LARGE { "payload_too_large" } else { "bad_request" };
            pending.finish();
            return error(status, code, rejection.body_text());
        }
    };
    let body = match serde_json::from_slice::<Value>(&bytes) {
        Ok(v @ Value::Object(_)) => v,
        Ok(other) => {
            pending.body = other;
            pending.finish();
            return error(StatusCode::BAD_REQUEST, "bad_request", "the body must be a JSON object");
        }
        Err(e) => {
            pending.body = Value::String(String::from_utf8_lossy(&bytes).into_owned());
            pending.finish();
            return error(StatusCode::BAD_REQUEST, "bad_request", format!("the body is not valid JSON: {e}"));
        }
    };
    let lang = Lang::of_request(&body);
    let result = agents::run(st.kind, &body, lang);
    pending.body = body;

    if wants_sse(&headers) {
        return stream(st.opts.delay, result, pending);
    }
    pause(st.opts.delay).await;
    pending.finish();
    match result {
        Ok(reply) => Json(reply.body()).into_response(),
        Err(message) => error(StatusCode::UNPROCESSABLE_ENTITY, "invalid_inputs", message),
    }
}

fn wants_sse(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .any(|v| v.to_str().is_ok_and(|a| a.to_ascii_lowercase().contains("text/event-stream")))
}

/// The SSE reply: `delta` events then `result`, or a single `error`, with `delay` spread evenly
/// before each event. The call is recorded just before the final event.
fn stream(delay: Duration, result: Result<Reply, String>, pending: Pending) -> Response {
    let (tx, rx) = mpsc::channel::<Result<Event, Infallible>>(8);
    tokio::spawn(async move {
        let (deltas, last) = match &result {
            Ok(reply) => (reply.deltas.as_slice(), Event::default().event("result").data(reply.body().to_string())),
            Err(message) => (&[][..], Event::default().event("error").data(json!({ "message": message }).to_string())),
        };
        let step = delay / u32::try_from(deltas.len() + 1).unwrap_or(1);
        for text in deltas {
            pause(step).await;
            let ev = Event::default().event("delta").data(json!({ "text": text }).to_string());
            if tx.send(Ok(ev)).await.is_err() {
                // The caller went away; the call still happened.
                pending.finish();
                return;
            }
        }
        pause(step).await;
        pending.finish();
        let _ = tx.send(Ok(last)).await;
    });
    Sse::new(tokio_stream::wrappers::ReceiverStream::new(rx)).keep_alive(KeepAlive::default()).into_response()
}

/// Sleeps for `d`, or not at all for zero (a zero sleep still waits for the next timer tick,
/// about a millisecond, which would dominate a zero-latency benchmark).
async fn pause(d: Duration) {
    if !d.is_zero() {
        tokio::time::sleep(d).await;
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use futures::StreamExt;

    use super::*;

    async fn spawn(kind: SampleAgentKind, delay: Duration) -> SampleAgentHandle {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        spawn_sample_agent(kind, listener, SampleOptions { delay }).await
    }

    /// A supervisor-shaped request body.
    fn request(message: &str, inputs: Value) -> Value {
        json!({
            "task_id": "plan_1_task_1", "plan_id": "plan_1", "session_id": "s1", "user_id": "u1",
            "thread_id": "th1", "message": message, "inputs": inputs, "context": { "dependencies": {} },
        })
    }

    fn sample_inputs(kind: SampleAgentKind) -> Value {
        match kind {
            SampleAgentKind::Flight => json!({ "flight_no": "CA1234" }),
            SampleAgentKind::Pickup => json!({ "airport": "白云机场", "arrival_time": "2026-12-01T14:30" }),
            SampleAgentKind::Hotel => json!({ "city": "北京", "check_in_date": "2026-12-01", "nights": 2 }),
            SampleAgentKind::Weather => json!({ "city": "上海" }),
            SampleAgentKind::Exchange => json!({ "amount": 1000, "currency": "美元" }),
        }
    }

    /// The repository root (this crate is `crates/switchboard-demo`).
    fn repo() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
    }

    fn read_json(path: &Path) -> Value {
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    fn validator(schema: &Value) -> jsonschema::Validator {
        jsonschema::options().should_validate_formats(true).build(schema).unwrap()
    }

    fn output_schema(kind: SampleAgentKind) -> jsonschema::Validator {
        validator(&read_json(&repo().join(format!("schemas/agents/{}.output.json", kind.agent_id()))))
    }

    fn assert_valid(v: &jsonschema::Validator, instance: &Value, what: &str) {
        let errors: Vec<String> = v.iter_errors(instance).map(|e| format!("{e} at {}", e.instance_path())).collect();
        assert!(errors.is_empty(), "{what}: {errors:?}\n{instance:#}");
    }

    /// The SSE events of a response body: (event, data) pairs; comments skipped.
    fn parse_sse(text: &str) -> Vec<(String, Value)> {
        text.replace("\r\n", "\n")
            .split("\n\n")
            .filter_map(|block| {
                let mut event = String::from("message");
                let mut data = Vec::new();
                for line in block.lines() {
                    if let Some(e) = line.strip_prefix("event:") {
                        event = e.trim().to_string();
                    } else if let Some(d) = line.strip_prefix("data:") {
                        data.push(d.strip_prefix(' ').unwrap_or(d));
                    }
                }
                (!data.is_empty()).then(|| (event, serde_json::from_str(&data.join("\n")).unwrap()))
            })
            .collect()
    }

    #[test]
    fn agent_ids_round_trip() {
        for kind in SampleAgentKind::ALL {
            assert_eq!(SampleAgentKind::from_agent_id(kind.agent_id()), Some(kind));
            assert_eq!(kind.to_string(), kind.agent_id());
        }
        assert_eq!(SampleAgentKind::from_agent_id("limo_agent"), None);
    }

    #[tokio::test]
    async fn each_agent_replies_with_its_output_schema_and_records_the_call() {
        let client = reqwest::Client::new();
        for kind in SampleAgentKind::ALL {
            let h = spawn(kind, Duration::ZERO).await;
            assert_eq!(h.kind, kind);
            let body = request("帮我处理一下", sample_inputs(kind));
            let resp = client
                .post(h.url())
                .header("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
                .json(&body)
                .send()
                .await
                .unwrap();
            assert_eq!(resp.status(), 200, "{kind}");
            assert!(resp.headers()["content-type"].to_str().unwrap().starts_with("application/json"));
            let reply: Value = resp.json().await.unwrap();
            assert_eq!(reply.as_object().unwrap().len(), 2, "{kind}: {reply}");
            assert_valid(&output_schema(kind), &reply["output"], kind.agent_id());
            let message = reply["message"].as_str().unwrap();
            assert!(message.chars().any(agents::is_cjk), "{kind}: Chinese: {message}");

            let calls = h.log.calls();
            assert_eq!((calls.len(), h.log.len(), h.log.is_empty()), (1, 1, false));
            assert_eq!(calls[0].body, body);
            assert_eq!(calls[0].header("TraceParent"), Some("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"));
            assert!(calls[0].started <= calls[0].finished);
            let recorded = serde_json::to_value(&calls[0]).unwrap();
            assert_eq!(recorded.as_object().unwrap().keys().collect::<Vec<_>>(), ["body", "headers"]);
            h.log.clear();
            assert!(h.log.is_empty());
        }
    }

    #[tokio::test]
    async fn messages_are_english_without_cjk() {
        let h = spawn(SampleAgentKind::Flight, Duration::ZERO).await;
        let reply: Value = reqwest::Client::new()
            .post(h.url())
            .json(&request("status of flight CA1234?", json!({ "flight_no": "CA1234" })))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let message = reply["message"].as_str().unwrap();
        assert!(message.starts_with("Flight CA1234 (Air China)"), "{message}");
        assert!(message.contains("Guangzhou Baiyun International Airport"), "{message}");
        // Output data does not depend on the language.
        assert_eq!(reply["output"]["arrival_airport"], "白云机场");
    }

    #[tokio::test]
    async fn malformed_bodies_are_400_and_bad_inputs_422() {
        let client = reqwest::Client::new();
        let h = spawn(SampleAgentKind::Hotel, Duration::ZERO).await;
        for bad in ["{oops", "[1, 2]", "", "\"text\""] {
            let resp = client.post(h.url()).header("content-type", "application/json").body(bad).send().await.unwrap();
            assert_eq!(resp.status(), 400, "{bad:?}");
            let err: Value = resp.json().await.unwrap();
            assert_eq!(err["error"]["code"], "bad_request");
            assert!(err["error"]["message"].as_str().is_some_and(|m| !m.is_empty()));
        }
        assert_eq!(h.log.len(), 4, "malformed calls are recorded too");
        assert_eq!(h.log.calls()[0].body, json!("{oops"));

        for inputs in [json!({}), json!({ "city": "北京" }), json!({ "city": "火星", "check_in_date": "2026-12-01" })]
        {
            let resp = client.post(h.url()).json(&request("订酒店", inputs.clone())).send().await.unwrap();
            assert_eq!(resp.status(), 422, "{inputs}");
            let err: Value = resp.json().await.unwrap();
            assert_eq!(err["error"]["code"], "invalid_inputs");
            assert!(err["error"]["message"].as_str().unwrap().starts_with("输入有误"), "{err}");
        }
        let resp = client.post(h.url()).json(&json!({ "message": "hotel" })).send().await.unwrap();
        assert_eq!(resp.status(), 422);
        let err: Value = resp.json().await.unwrap();
        assert!(err["error"]["message"].as_str().unwrap().contains("missing input `city`"), "{err}");
    }

    #[tokio::test]
    async fn other_routes_answer_json() {
        let client = reqwest::Client::new();
        let h = spawn(SampleAgentKind::Weather, Duration::ZERO).await;
        let base = format!("http://{}", h.addr);
        let health: Value = client.get(format!("{base}/healthz")).send().await.unwrap().json().await.unwrap();
        assert_eq!(health, json!({ "status": "ok", "agent": "weather_agent" }));
        let resp = client.get(format!("{base}/nope")).send().await.unwrap();
        assert_eq!(resp.status(), 404);
        assert_eq!(resp.json::<Value>().await.unwrap()["error"]["code"], "not_found");
        let resp = client.get(h.url()).send().await.unwrap();
        assert_eq!(resp.status(), 405);
        assert_eq!(resp.json::<Value>().await.unwrap()["error"]["code"], "method_not_allowed");
        assert!(h.log.is_empty());
    }

    #[tokio::test]
    async fn pickup_streams_three_deltas_then_the_result() {
        let h = spawn(SampleAgentKind::Pickup, Duration::ZERO).await;
        let body = request("安排白云机场接机", sample_inputs(SampleAgentKind::Pickup));
        let resp = reqwest::Client::new()
            .post(h.url())
            .header("accept", "text/event-stream")
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        assert!(resp.headers()["content-type"].to_str().unwrap().starts_with("text/event-stream"));
        let events = parse_sse(&resp.text().await.unwrap());
        let names: Vec<&str> = events.iter().map(|(e, _)| e.as_str()).collect();
        assert_eq!(names, ["delta", "delta", "delta", "result"]);
        assert_eq!(events[0].1, json!({ "text": "正在为您匹配白云机场附近的司机…" }));
        for (_, data) in &events[..3] {
            assert!(data["text"].as_str().is_some_and(|t| !t.is_empty()), "{data}");
        }
        let result = &events[3].1;
        assert_valid(&output_schema(SampleAgentKind::Pickup), &result["output"], "pickup result");
        assert_eq!(result["output"]["pickup_time"], "2026-12-01T15:00");
        assert!(result["message"].as_str().unwrap().starts_with("已为您安排"), "{result}");

        // The same request as plain JSON gives the same result.
        let plain: Value = reqwest::Client::new().post(h.url()).json(&body).send().await.unwrap().json().await.unwrap();
        assert_eq!(&plain, result);
        assert_eq!(h.log.len(), 2);
        assert_eq!(h.log.calls()[0].header("accept"), Some("text/event-stream"));
    }

    #[tokio::test]
    async fn pickup_reports_bad_inputs_as_an_error_event() {
        let h = spawn(SampleAgentKind::Pickup, Duration::ZERO).await;
        let resp = reqwest::Client::new()
            .post(h.url())
            .header("accept", "text/event-stream")
            .json(&request("pickup please", json!({ "airport": "Mars Airport" })))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        let events = parse_sse(&resp.text().await.unwrap());
        assert_eq!(events.len(), 1, "{events:?}");
        assert_eq!(events[0].0, "error");
        let message = events[0].1["message"].as_str().unwrap();
        assert!(message.contains("airport") && message.contains("arrival_time"), "{message}");
        assert_eq!(h.log.len(), 1);
    }

    #[tokio::test]
    async fn the_delay_is_spread_across_the_events() {
        let delay = Duration::from_millis(200);
        let h = spawn(SampleAgentKind::Pickup, delay).await;
        let body = request("接机", sample_inputs(SampleAgentKind::Pickup));
        let t0 = Instant::now();
        let resp = reqwest::Client::new()
            .post(h.url())
            .header("accept", "text/event-stream")
            .json(&body)
            .send()
            .await
            .unwrap();
        let mut chunks = resp.bytes_stream();
        let mut arrivals = Vec::new();
        let mut text = String::new();
        while let Some(chunk) = chunks.next().await {
            let chunk = chunk.unwrap();
            let s = String::from_utf8_lossy(&chunk);
            for _ in s.matches("event:") {
                arrivals.push(t0.elapsed());
            }
            text.push_str(&s);
        }
        assert_eq!(parse_sse(&text).len(), 4);
        assert!(arrivals[0] >= delay / 4, "first delta after a quarter of the delay: {arrivals:?}");
        assert!(*arrivals.last().unwrap() >= delay, "result after the whole delay: {arrivals:?}");
        let call = &h.log.calls()[0];
        assert!(call.finished - call.started >= delay);

        // Plain JSON: the whole delay before the reply.
        let h = spawn(SampleAgentKind::Exchange, delay).await;
        let t0 = Instant::now();
        let resp = reqwest::Client::new()
            .post(h.url())
            .json(&request("换汇", sample_inputs(SampleAgentKind::Exchange)))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        assert!(t0.elapsed() >= delay);
        let call = &h.log.calls()[0];
        assert!(call.finished - call.started >= delay);
    }

    #[tokio::test]
    async fn a_pickup_after_a_flight_uses_the_flight_output() {
        let client = reqwest::Client::new();
        let flight = spawn(SampleAgentKind::Flight, Duration::ZERO).await;
        let pickup = spawn(SampleAgentKind::Pickup, Duration::ZERO).await;
        let f: Value = client
            .post(flight.url())
            .json(&request("查航班CA1234", json!({ "flight_no": "CA1234" })))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let mut body =
            request("安排白云机场接机", json!({ "airport": "白云机场", "arrival_time": f["output"]["arrival_time"] }));
        body["context"]["dependencies"]["plan_1_task_1"] = f["output"].clone();
        let p: Value = client.post(pickup.url()).json(&body).send().await.unwrap().json().await.unwrap();
        let terminal = f["output"]["terminal"].as_str().unwrap();
        assert!(p["output"]["meeting_point"].as_str().unwrap().starts_with(terminal), "{p}");
        assert!(p["message"].as_str().unwrap().contains("航班 CA1234"), "{p}");
    }
}
