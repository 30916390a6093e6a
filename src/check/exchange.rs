//! The exchanges of `check-agent`, read byte by byte so every check can show its evidence. The
//! request is built as the dispatcher builds it (`dispatch::post`, the A2A message of
//! `dispatch::a2a`), replies are parsed with the dispatcher's own parsers (`parse_reply`, the
//! A2A fold) and outputs are checked with the agent's compiled output validator.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use ::a2a::{AgentCard, JsonRpcId, JsonRpcRequest, SendMessageResponse, StreamResponse, TaskState};
use eventsource_stream::{EventStreamError, Eventsource};
use futures::StreamExt;
use serde_json::{json, Value};

use super::{shorten, Case, CheckOptions, Checks};
use crate::config::{card_url, Protocol};
use crate::dispatch::{a2a as da2a, parse_reply, post, read_limited, traceparent, AgentReply, DispatchError};
use crate::registry::CapabilityCard;

/// The body of the malformed-request probe: JSON cut short.
pub const MALFORMED_BODY: &str = "{\"task_id\": \"check_agent_malformed\", \"inputs\": {\"message\": ";

/// The `A2A-Version` no agent supports, for the version check.
const UNSUPPORTED_VERSION: &str = "99.0";

/// JSON-RPC code of A2A's `VersionNotSupportedError`.
const VERSION_NOT_SUPPORTED: i64 = -32009;

pub(crate) struct Exchanger<'a> {
    pub(crate) client: &'a reqwest::Client,
    pub(crate) agent: &'a CapabilityCard,
    pub(crate) opts: &'a CheckOptions,
}

/// Status line and content type of a reply.
struct Head {
    status: reqwest::StatusCode,
    content_type: String,
}

impl Head {
    fn of(resp: &reqwest::Response) -> Self {
        let content_type = resp
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("(none)")
            .to_string();
        Self { status: resp.status(), content_type }
    }

    fn is(&self, media: &str) -> bool {
        self.content_type.to_ascii_lowercase().starts_with(media)
    }

    fn status_text(&self) -> String {
        format!("{} {}", self.status.as_u16(), self.status.canonical_reason().unwrap_or(""))
    }
}

/// What an event stream held, as far as it was read.
#[derive(Default)]
struct Stream {
    /// `(event name, data)` in order.
    events: Vec<(String, String)>,
    /// Why reading stopped early (broken, not UTF-8, too large), if so.
    error: Option<String>,
    largest: usize,
}

impl Stream {
    fn counts(&self) -> String {
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for (name, _) in &self.events {
            *counts.entry(name.as_str()).or_default() += 1;
        }
        if counts.is_empty() {
            return "no events".into();
        }
        counts.iter().map(|(n, c)| format!("{n}×{c}")).collect::<Vec<_>>().join(", ")
    }
}

/// Reads `resp` as an event stream until `stop` says an event ends it, the stream ends or a
/// limit is passed (the dispatcher's limits).
async fn read_stream(
    resp: reqwest::Response,
    opts: &CheckOptions,
    out: &mut Stream,
    stop: impl Fn(&str, &str) -> bool,
) {
    let max = opts.limits.max_response_bytes;
    let mut total = 0usize;
    let bytes = resp.bytes_stream().map(move |chunk| {
        let chunk = chunk.map_err(|e| e.without_url().to_string())?;
        total += chunk.len();
        if total > max {
            return Err(format!("the stream passed the {max}-byte limit"));
        }
        Ok(chunk)
    });
    let mut events = bytes.eventsource();
    while let Some(event) = events.next().await {
        let event = match event {
            Ok(e) => e,
            Err(EventStreamError::Utf8(e)) => {
                out.error = Some(format!("the stream is not UTF-8: {e}"));
                return;
            }
            Err(e) => {
                out.error = Some(format!("the stream broke: {e}"));
                return;
            }
        };
        out.largest = out.largest.max(event.data.len());
        if event.data.len() > opts.limits.max_event_bytes {
            out.error = Some(format!(
                "a `{}` event carries {} bytes of data; the limit is {}",
                event.event,
                event.data.len(),
                opts.limits.max_event_bytes
            ));
            return;
        }
        let done = stop(&event.event, &event.data);
        out.events.push((event.event, event.data));
        if done {
            return;
        }
    }
}

fn ms(d: Duration) -> String {
    format!("{} ms", d.as_millis())
}

impl Exchanger<'_> {
    fn latency(&self, case: &str, elapsed: Duration, checks: &mut Checks) {
        let timeout = self.agent.timeout;
        let passed = elapsed <= timeout;
        checks.add(case, "latency", passed, format!("{} (the card's timeout is {})", ms(elapsed), ms(timeout)));
    }

    fn timed_out(&self, case: &str, checks: &mut Checks, seen: &str) {
        checks.add(
            case,
            "latency",
            false,
            format!(
                "no complete reply within the card's timeout ({}){seen}; the supervisor fails this with `timeout`",
                ms(self.agent.timeout)
            ),
        );
    }

    fn output(&self, case: &str, reply: &AgentReply, checks: &mut Checks) {
        let errors: Vec<(String, String)> = self
            .agent
            .output_validator
            .iter_errors(&reply.output)
            .take(5)
            .map(|e| (e.instance_path().as_str().to_string(), e.to_string()))
            .collect();
        match errors.first() {
            None => checks.add(case, "output-schema", true, "`output` is valid against the card's output schema"),
            Some((pointer, _)) => {
                let text: Vec<String> =
                    errors.iter().map(|(p, m)| format!("at {:?}: {m}", if p.is_empty() { "" } else { p })).collect();
                checks.add_pointer(
                    case,
                    "output-schema",
                    format!(
                        "`output` fails the card's output schema ({}); the supervisor fails this with `output_rejected`",
                        text.join("; ")
                    ),
                    pointer.clone(),
                );
            }
        }
    }

    /// An `http` or `sse` case.
    pub(crate) async fn plain_case(&self, case: &Case, checks: &mut Checks) {
        let name = case.name;
        let sse = self.agent.protocol() == Protocol::Sse;
        let accept = if sse { "text/event-stream" } else { "application/json" };
        let trace = uuid::Uuid::new_v4().simple().to_string();
        let started = Instant::now();
        let mut head = None;
        let mut stream = Stream::default();
        let exchange = async {
            let resp = post(self.client, self.agent, &traceparent(&trace), accept).json(&case.body).send().await?;
            let h = Head::of(&resp);
            let streamed = sse && h.status == reqwest::StatusCode::OK && h.is("text/event-stream");
            head = Some(h);
            if streamed {
                read_stream(resp, self.opts, &mut stream, |event, _| matches!(event, "result" | "error")).await;
                Ok::<_, DispatchError>(None)
            } else {
                Ok(Some(read_limited(resp, self.opts.limits.max_response_bytes).await?))
            }
        };
        let result = tokio::time::timeout(self.agent.timeout, exchange).await;
        let elapsed = started.elapsed();
        let body = match result {
            Err(_) => {
                let seen =
                    if stream.events.is_empty() { String::new() } else { format!(" (events: {})", stream.counts()) };
                if let Some(h) = &head {
                    checks.add(
                        name,
                        "status",
                        h.status.is_success(),
                        format!("{}, content-type {}", h.status_text(), h.content_type),
                    );
                }
                return self.timed_out(name, checks, &seen);
            }
            Ok(Err(e)) => {
                return checks.add(name, "status", false, format!("no reply: {e} (code `{}`)", e.code()));
            }
            Ok(Ok(body)) => body,
        };
        let Some(head) = head else { return };
        let ok = head.status == reqwest::StatusCode::OK;
        let mut evidence = head.status_text();
        if let (false, Some(b)) = (ok, &body) {
            evidence = format!(
                "{evidence}: {}; the supervisor fails any status but 200 with `status`",
                shorten(&String::from_utf8_lossy(b), 200)
            );
        }
        checks.add(name, "status", ok, evidence);
        let (ct_ok, ct_note) = match (sse, head.is("application/json"), head.is("text/event-stream")) {
            (false, true, _) | (true, _, true) => (true, String::new()),
            (true, true, false) => (true, " (a JSON reply to an sse request is accepted as an http reply)".to_string()),
            (false, false, _) => (false, "; expected application/json".to_string()),
            (true, false, false) => (false, "; expected text/event-stream".to_string()),
        };
        checks.add(name, "content-type", ct_ok, format!("{}{ct_note}", head.content_type));
        if !ok {
            return self.latency(name, elapsed, checks);
        }
        let reply = match body {
            Some(bytes) => parse_reply(&bytes),
            None => self.sse_framing(name, &stream, checks),
        };
        match reply {
            Ok(reply) => {
                checks.add(
                    name,
                    "reply",
                    true,
                    format!("{{output, message}}; message {:?}", shorten(&reply.message, 80)),
                );
                self.output(name, &reply, checks);
            }
            Err(e) => checks.add(name, "reply", false, format!("{e}; the supervisor fails this with `{}`", e.code())),
        }
        self.latency(name, elapsed, checks);
    }

    /// Checks the framing of an `sse` reply; returns the `result` event's reply.
    fn sse_framing(&self, case: &str, stream: &Stream, checks: &mut Checks) -> Result<AgentReply, DispatchError> {
        let summary = format!(
            "events: {}; largest data {} bytes (limit {})",
            stream.counts(),
            stream.largest,
            self.opts.limits.max_event_bytes
        );
        let fail = |checks: &mut Checks, why: String| {
            checks.add(case, "sse-framing", false, format!("{why}; {summary}"));
            Err(DispatchError::Protocol(why))
        };
        for (i, (name, data)) in stream.events.iter().enumerate() {
            match name.as_str() {
                "delta" => {
                    let text = serde_json::from_str::<Value>(data).ok().filter(|v| v["text"].is_string());
                    if text.is_none() {
                        return fail(
                            checks,
                            format!("event {i} (`delta`) data is not {{\"text\": \"…\"}}: {}", shorten(data, 120)),
                        );
                    }
                }
                "error" => {
                    return fail(checks, format!("the agent sent an `error` event: {}", shorten(data, 200)));
                }
                "result" => {
                    checks.add(case, "sse-framing", true, format!("{summary}; UTF-8; ends with `result`"));
                    return parse_reply(data.as_bytes());
                }
                _ => {}
            }
        }
        match &stream.error {
            Some(e) => fail(checks, e.clone()),
            None => fail(checks, "the stream ended without a `result` event".into()),
        }
    }

    /// The malformed request (`http`, `sse`): it must get a 4xx within a bound, not hang.
    pub(crate) async fn plain_malformed(&self, checks: &mut Checks) {
        let accept = if self.agent.protocol() == Protocol::Sse { "text/event-stream" } else { "application/json" };
        let trace = uuid::Uuid::new_v4().simple().to_string();
        let request = post(self.client, self.agent, &traceparent(&trace), accept)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(MALFORMED_BODY);
        self.malformed(request, false, checks).await;
    }

    async fn malformed(&self, request: reqwest::RequestBuilder, jsonrpc: bool, checks: &mut Checks) {
        let bound = self.opts.malformed_timeout.min(self.agent.timeout);
        let started = Instant::now();
        let exchange = async {
            let resp = request.send().await?;
            let head = Head::of(&resp);
            let body = read_limited(resp, self.opts.limits.max_response_bytes).await?;
            Ok::<_, DispatchError>((head, body))
        };
        let what = "truncated JSON";
        match tokio::time::timeout(bound, exchange).await {
            Err(_) => checks.add(
                "malformed",
                "status",
                false,
                format!("{what}: no reply within {} (it should be a prompt 4xx, not a hang)", ms(bound)),
            ),
            Ok(Err(e)) => checks.add("malformed", "status", false, format!("{what}: no reply: {e}")),
            Ok(Ok((head, body))) => {
                let elapsed = ms(started.elapsed());
                let rpc_code = serde_json::from_slice::<Value>(&body).ok().and_then(|v| v["error"]["code"].as_i64());
                let client_error = head.status.is_client_error();
                let parse_error = jsonrpc && matches!(rpc_code, Some(-32700 | -32600));
                let evidence = match rpc_code {
                    Some(code) if jsonrpc => {
                        format!("{what}: {} with JSON-RPC error {code} in {elapsed}", head.status_text())
                    }
                    _ => format!(
                        "{what}: {} in {elapsed}: {}",
                        head.status_text(),
                        shorten(&String::from_utf8_lossy(&body), 120)
                    ),
                };
                let expected = if jsonrpc { "; expected a 4xx or JSON-RPC error -32700" } else { "; expected a 4xx" };
                let passed = client_error || parse_error;
                checks.add(
                    "malformed",
                    "status",
                    passed,
                    if passed { evidence } else { format!("{evidence}{expected}") },
                );
            }
        }
    }

    /// Fetches and checks the Agent Card (`a2a`).
    pub(crate) async fn a2a_card(&self, checks: &mut Checks) -> Option<AgentCard> {
        let url = card_url(&self.agent.url);
        let card = match self.fetch_card(&url).await {
            Ok(card) => card,
            Err(evidence) => {
                checks.add("card", "card-fields", false, evidence);
                return None;
            }
        };
        let missing = card_problems(&card);
        let jsonrpc = jsonrpc_interface(&card);
        let streaming = card.capabilities.streaming.unwrap_or(false);
        let summary = format!(
            "{:?} v{}, {} skill(s), streaming: {}, JSONRPC at {}",
            card.name,
            card.version,
            card.skills.len(),
            if streaming { "yes (SendStreamingMessage)" } else { "no (SendMessage)" },
            jsonrpc.map_or("-", |i| i.url.as_str())
        );
        if missing.is_empty() {
            checks.add("card", "card-fields", true, summary);
        } else {
            checks.add("card", "card-fields", false, format!("{}; {summary}", missing.join("; ")));
        }
        jsonrpc.is_some().then_some(card)
    }

    /// `GET url` within the agent's timeout, parsed as an A2A 1.0 Agent Card; the evidence of
    /// the failed check otherwise.
    async fn fetch_card(&self, url: &str) -> Result<AgentCard, String> {
        let exchange = async {
            let resp = self.client.get(url).header(::a2a::SVC_PARAM_VERSION, ::a2a::VERSION).send().await?;
            let head = Head::of(&resp);
            let body = read_limited(resp, self.opts.limits.max_response_bytes).await?;
            Ok::<_, DispatchError>((head, body))
        };
        let (head, body) = match tokio::time::timeout(self.agent.timeout, exchange).await {
            Err(_) => return Err(format!("GET {url}: no reply within {}", ms(self.agent.timeout))),
            Ok(Err(e)) => return Err(format!("GET {url}: {e}")),
            Ok(Ok(r)) => r,
        };
        if !head.status.is_success() || !head.is("application/json") {
            return Err(format!(
                "GET {url}: {}, content-type {}; expected 200 application/json",
                head.status_text(),
                head.content_type
            ));
        }
        serde_json::from_slice(&body).map_err(|e| format!("GET {url}: not an A2A 1.0 Agent Card: {e}"))
    }

    fn rpc_request(
        &self,
        card: &AgentCard,
        case: &Case,
        version: &str,
        stream: bool,
    ) -> (String, reqwest::RequestBuilder) {
        let url = da2a::rpc_url(card).unwrap_or_default();
        let id = uuid::Uuid::new_v4().to_string();
        let params = json!({ "message": da2a::outgoing_message(&case.body, None) });
        let method = if stream { "SendStreamingMessage" } else { "SendMessage" };
        let request = JsonRpcRequest::new(JsonRpcId::String(id.clone()), method, Some(params));
        let accept = if stream { "text/event-stream" } else { "application/json" };
        let trace = uuid::Uuid::new_v4().simple().to_string();
        let builder = self
            .client
            .post(url)
            .headers(self.agent.headers.clone())
            .header(::a2a::SVC_PARAM_VERSION, version)
            .header("traceparent", traceparent(&trace))
            .header(reqwest::header::ACCEPT, accept)
            .json(&request);
        (id, builder)
    }

    /// One `a2a` case: `SendStreamingMessage` (or `SendMessage`) with the case's message.
    pub(crate) async fn a2a_case(&self, card: &AgentCard, case: &Case, checks: &mut Checks) {
        let name = case.name;
        let streaming = card.capabilities.streaming.unwrap_or(false);
        let (id, request) = self.rpc_request(card, case, ::a2a::VERSION, streaming);
        let started = Instant::now();
        let mut head = None;
        let mut stream = Stream::default();
        let exchange = async {
            let resp = request.send().await?;
            let h = Head::of(&resp);
            let sse = h.status.is_success() && h.is("text/event-stream");
            head = Some(h);
            if sse {
                read_stream(resp, self.opts, &mut stream, |_, data| frame_is_final(data)).await;
                Ok::<_, DispatchError>(None)
            } else {
                Ok(Some(read_limited(resp, self.opts.limits.max_response_bytes).await?))
            }
        };
        let result = tokio::time::timeout(self.agent.timeout, exchange).await;
        let elapsed = started.elapsed();
        let body = match result {
            Err(_) => {
                let seen =
                    if stream.events.is_empty() { String::new() } else { format!(" ({} frames)", stream.events.len()) };
                return self.timed_out(name, checks, &seen);
            }
            Ok(Err(e)) => return checks.add(name, "status", false, format!("no reply: {e}")),
            Ok(Ok(body)) => body,
        };
        let Some(head) = head else { return };
        let ok = head.status == reqwest::StatusCode::OK;
        checks.add(name, "status", ok, head.status_text());
        let expected = if streaming { "text/event-stream" } else { "application/json" };
        // A streaming call refused up front is a JSON-RPC error in plain JSON.
        let ct_ok = head.is(expected) || (streaming && head.is("application/json"));
        let note = if ct_ok { String::new() } else { format!("; expected {expected}") };
        checks.add(name, "content-type", ct_ok, format!("{}{note}", head.content_type));
        if !ok {
            return self.latency(name, elapsed, checks);
        }
        // Every JSON-RPC response: the stream's frames, or the one body.
        let datas: Vec<String> = match &body {
            Some(bytes) => vec![String::from_utf8_lossy(bytes).into_owned()],
            None => stream.events.iter().map(|(_, d)| d.clone()).collect(),
        };
        let (frames, mut problems) = jsonrpc_frames(&datas, &id, body.is_some());
        if let Some(e) = &stream.error {
            problems.push(e.clone());
        }
        let framing = format!(
            "{} response(s){}",
            datas.len(),
            if body.is_none() {
                format!(", largest {} bytes (limit {})", stream.largest, self.opts.limits.max_event_bytes)
            } else {
                String::new()
            }
        );
        if problems.is_empty() {
            checks.add(name, "jsonrpc", true, format!("{framing}; jsonrpc 2.0, id echoed"));
        } else {
            checks.add(name, "jsonrpc", false, format!("{}; {framing}", problems.join("; ")));
        }
        self.task_states(name, &frames, streaming && body.is_none(), checks);
        if problems.is_empty() {
            match da2a::fold(&frames, streaming && body.is_none()) {
                Ok(reply) => self.output(name, &reply, checks),
                Err(e) => checks.add(name, "output-schema", false, format!("no output: {e} (`{}`)", e.code())),
            }
        }
        self.latency(name, elapsed, checks);
    }

    fn task_states(&self, case: &str, frames: &[StreamResponse], streaming: bool, checks: &mut Checks) {
        let mut states: Vec<TaskState> = Vec::new();
        let mut message_reply = false;
        for f in frames {
            match f {
                StreamResponse::Task(t) => states.push(t.status.state.clone()),
                StreamResponse::StatusUpdate(u) => states.push(u.status.state.clone()),
                StreamResponse::Message(_) => message_reply = true,
                StreamResponse::ArtifactUpdate(_) => {}
            }
        }
        let names: Vec<String> = states
            .iter()
            .map(|s| {
                serde_json::to_value(s)
                    .ok()
                    .and_then(|v| v.as_str().map(|s| s.trim_start_matches("TASK_STATE_").to_string()))
                    .unwrap_or_default()
            })
            .collect();
        let seq = if names.is_empty() { "no task state".to_string() } else { names.join(" → ") };
        let after_terminal = states.iter().position(TaskState::is_terminal).is_some_and(|i| i + 1 < states.len());
        let (passed, why) = match states.last() {
            _ if after_terminal => (false, "a state follows a terminal state".to_string()),
            _ if states.contains(&TaskState::Unspecified) => {
                (false, "TASK_STATE_UNSPECIFIED is not a state to send".into())
            }
            None if message_reply => (true, "a direct message reply (no task)".into()),
            None if streaming => {
                (false, "the stream ended without a task state (the supervisor fails this with `protocol`)".into())
            }
            None => (false, "no task and no message".into()),
            Some(TaskState::Completed) => (true, String::new()),
            Some(TaskState::InputRequired | TaskState::AuthRequired) => {
                (false, "the agent asked for more input although the inputs were complete".into())
            }
            Some(s) if s.is_terminal() => {
                (false, "the task did not complete (the supervisor fails this with `agent_error`)".into())
            }
            Some(_) => {
                (false, "the reply ended in a non-final state (the supervisor fails this with `agent_error`)".into())
            }
        };
        let evidence = if why.is_empty() { seq } else { format!("{seq}: {why}") };
        checks.add(case, "task-states", passed, evidence);
    }

    /// `A2A-Version` handling: a request for an unsupported version must be refused with
    /// `VersionNotSupportedError` (-32009).
    pub(crate) async fn a2a_version(&self, card: &AgentCard, case: Option<&Case>, checks: &mut Checks) {
        let Some(case) = case else { return };
        let (_, request) = self.rpc_request(card, case, UNSUPPORTED_VERSION, false);
        let exchange = async {
            let resp = request.send().await?;
            let head = Head::of(&resp);
            let body = read_limited(resp, self.opts.limits.max_response_bytes).await?;
            Ok::<_, DispatchError>((head, body))
        };
        let what = format!("SendMessage with A2A-Version: {UNSUPPORTED_VERSION}");
        let (passed, evidence) = match tokio::time::timeout(self.agent.timeout, exchange).await {
            Err(_) => (false, format!("{what}: no reply within {}", ms(self.agent.timeout))),
            Ok(Err(e)) => (false, format!("{what}: {e}")),
            Ok(Ok((head, body))) => {
                let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                match v["error"]["code"].as_i64() {
                    Some(VERSION_NOT_SUPPORTED) => {
                        (true, format!("{what}: JSON-RPC error -32009 (version not supported)"))
                    }
                    Some(code) => {
                        (false, format!("{what}: JSON-RPC error {code}; expected -32009 (VersionNotSupportedError)"))
                    }
                    None => (
                        false,
                        format!(
                            "{what}: {} {}; expected JSON-RPC error -32009 (VersionNotSupportedError)",
                            head.status_text(),
                            shorten(&String::from_utf8_lossy(&body), 120)
                        ),
                    ),
                }
            }
        };
        checks.add("version", "version-header", passed, evidence);
    }

    /// The malformed request (`a2a`): truncated JSON to the JSON-RPC endpoint.
    pub(crate) async fn a2a_malformed(&self, card: &AgentCard, checks: &mut Checks) {
        let url = da2a::rpc_url(card).unwrap_or_default();
        let request = self
            .client
            .post(url)
            .headers(self.agent.headers.clone())
            .header(::a2a::SVC_PARAM_VERSION, ::a2a::VERSION)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(MALFORMED_BODY);
        self.malformed(request, true, checks).await;
    }
}

/// `true` for a JSON-RPC stream frame after which the dispatcher stops reading (a terminal or
/// interrupted state, a direct message, an error).
fn frame_is_final(data: &str) -> bool {
    let Ok(v) = serde_json::from_str::<Value>(data) else { return true };
    if v.get("error").is_some_and(|e| !e.is_null()) {
        return true;
    }
    match serde_json::from_value::<StreamResponse>(v["result"].clone()) {
        Ok(StreamResponse::Message(_)) => true,
        Ok(StreamResponse::Task(t)) => is_final_state(&t.status.state),
        Ok(StreamResponse::StatusUpdate(u)) => is_final_state(&u.status.state),
        Ok(StreamResponse::ArtifactUpdate(_)) => false,
        Err(_) => true,
    }
}

fn is_final_state(s: &TaskState) -> bool {
    s.is_terminal() || matches!(s, TaskState::InputRequired | TaskState::AuthRequired)
}

/// The `JSONRPC` entry of the card's `supportedInterfaces`, if any.
fn jsonrpc_interface(card: &AgentCard) -> Option<&::a2a::AgentInterface> {
    card.supported_interfaces.iter().find(|i| i.protocol_binding.eq_ignore_ascii_case("JSONRPC"))
}

/// What an Agent Card lacks for the supervisor to call it (one sentence each; empty = fine).
fn card_problems(card: &AgentCard) -> Vec<String> {
    let mut missing = Vec::new();
    for (field, value) in [("name", &card.name), ("description", &card.description), ("version", &card.version)] {
        if value.trim().is_empty() {
            missing.push(format!("`{field}` is empty"));
        }
    }
    match jsonrpc_interface(card) {
        None => missing.push("no `supportedInterfaces[]` entry with `protocolBinding: JSONRPC`".into()),
        Some(i) => {
            if !matches!(reqwest::Url::parse(&i.url), Ok(u) if matches!(u.scheme(), "http" | "https")) {
                missing.push(format!("the JSONRPC interface URL {:?} is not an http(s) URL", i.url));
            }
            if !i.protocol_version.starts_with("1.") && i.protocol_version != "1" {
                missing.push(format!("the JSONRPC interface says protocolVersion {:?}, not 1.x", i.protocol_version));
            }
        }
    }
    if card.skills.is_empty() {
        missing.push("`skills` is empty".into());
    }
    for s in &card.skills {
        if s.id.trim().is_empty() || s.name.trim().is_empty() || s.description.trim().is_empty() {
            missing.push(format!("skill {:?} lacks an id, name or description", s.id));
        }
    }
    if card.default_input_modes.is_empty() || card.default_output_modes.is_empty() {
        missing.push("`defaultInputModes` / `defaultOutputModes` are empty".into());
    }
    missing
}

/// Parses JSON-RPC responses (`datas`: the stream's frames, or the one body when `plain`) as
/// A2A responses to the request `id`: the frames read up to the first fatal problem, and every
/// problem found (not JSON, wrong `jsonrpc` / `id`, a JSON-RPC error, not an A2A 1.0 result).
fn jsonrpc_frames(datas: &[String], id: &str, plain: bool) -> (Vec<StreamResponse>, Vec<String>) {
    let mut frames = Vec::new();
    let mut problems = Vec::new();
    for (i, data) in datas.iter().enumerate() {
        let v: Value = match serde_json::from_str(data) {
            Ok(v) => v,
            Err(e) => {
                problems.push(format!("frame {i} is not JSON: {e}"));
                break;
            }
        };
        if v["jsonrpc"] != "2.0" {
            problems.push(format!("frame {i}: `jsonrpc` is not \"2.0\""));
        }
        if v["id"] != Value::String(id.to_string()) {
            problems.push(format!("frame {i}: `id` {} does not echo the request id", v["id"]));
        }
        if let Some(e) = v.get("error").filter(|e| !e.is_null()) {
            problems.push(format!("JSON-RPC error {}: {}", e["code"], e["message"].as_str().unwrap_or_default()));
            break;
        }
        let parsed = if plain {
            serde_json::from_value::<SendMessageResponse>(v["result"].clone()).map(|r| match r {
                SendMessageResponse::Task(t) => StreamResponse::Task(t),
                SendMessageResponse::Message(m) => StreamResponse::Message(m),
            })
        } else {
            serde_json::from_value::<StreamResponse>(v["result"].clone())
        };
        match parsed {
            Ok(frame) => frames.push(frame),
            Err(e) => {
                problems.push(format!("frame {i}: `result` is not an A2A 1.0 response: {e}"));
                break;
            }
        }
    }
    (frames, problems)
}
