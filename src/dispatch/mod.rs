//! Outbound calls to sub-agents: the only place that talks to them (docs/sub-agent-protocol.md).
//!
//! One [`Dispatcher`] (one pooled `reqwest::Client`) serves every request. A call is
//! [`Dispatcher::dispatch`]: the protocol's exchange ([`http`], [`sse`]), retried with jittered
//! exponential backoff (`backon`) only on [`DispatchError::is_retryable`] failures and never after a
//! streamed delta reached the user, all inside the agent's timeout; then the reply's `output` is
//! checked against the card's output schema ("acceptance").

pub mod a2a;
pub mod breaker;
mod error;
pub mod http;
pub mod lines;
pub mod sse;

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use backon::{BackoffBuilder, ExponentialBuilder};
use bytes::Bytes;
use futures::StreamExt;
use serde::Deserialize;
use serde_json::Value;

pub use error::DispatchError;

use crate::config::Protocol;
use crate::planner::RemoteTask;
use crate::registry::CapabilityCard;

/// Size limits on what sub-agents send back.
#[derive(Debug, Clone, Copy)]
pub struct DispatchLimits {
    /// Largest reply body (http) or whole stream (sse), in bytes.
    pub max_response_bytes: usize,
    /// Largest single SSE event, in bytes.
    pub max_event_bytes: usize,
}

impl Default for DispatchLimits {
    fn default() -> Self {
        Self { max_response_bytes: 8 * 1024 * 1024, max_event_bytes: 1024 * 1024 }
    }
}

/// An accepted sub-agent reply: `{ "output": {..}, "message": "text for the user" }`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct AgentReply {
    /// Structured result; validated against the output schema.
    pub output: Value,
    /// Text for the user (may be empty).
    #[serde(default)]
    pub message: String,
}

/// Receives streamed text chunks as they arrive.
pub type DeltaFn<'a> = &'a (dyn Fn(&str) + Send + Sync);

/// Calls sub-agents. Cheap to clone (the client is reference-counted).
#[derive(Debug, Clone)]
pub struct Dispatcher {
    client: reqwest::Client,
    limits: DispatchLimits,
    cards: std::sync::Arc<a2a::AgentCardCache>,
    /// Per-agent circuit breakers.
    pub breakers: std::sync::Arc<breaker::Breakers>,
}

impl Default for Dispatcher {
    fn default() -> Self {
        Self::new(DispatchLimits::default())
    }
}

impl Dispatcher {
    /// A dispatcher with its own connection pool (connect timeout 5 s).
    pub fn new(limits: DispatchLimits) -> Self {
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .pool_max_idle_per_host(64)
            .tcp_nodelay(true)
            .build()
            .unwrap_or_default();
        Self { client, limits, cards: std::sync::Arc::default(), breakers: std::sync::Arc::default() }
    }

    /// Calls `agent` with the request `body` of docs/sub-agent-protocol.md, relaying streamed
    /// text to `on_delta`, within the agent's timeout, retrying transient failures up to
    /// `endpoint.retries` times. `traceparent` is the W3C header value to send; `remote`
    /// continues an A2A task that asked for input. The agent's circuit breaker (`breaker`
    /// settings) is consulted first and told the outcome.
    ///
    /// # Errors
    /// [`DispatchError`]; [`DispatchError::Rejected`] when the output fails the output schema.
    pub async fn dispatch(
        &self,
        agent: &CapabilityCard,
        body: &Value,
        remote: Option<&RemoteTask>,
        call: &Call<'_>,
        on_delta: DeltaFn<'_>,
        breaker: &crate::config::model::BreakerSettings,
    ) -> Result<AgentReply, DispatchError> {
        self.breakers.admit(agent.id(), breaker)?;
        let started = std::time::Instant::now();
        // Everything the agent sends back has the config's `${ENV}` secrets masked. A delta that
        // ends with the start of a secret keeps that end back until the next one (or the end of
        // the call) shows whether the secret goes on: a secret split across deltas is masked too.
        let held = std::sync::Mutex::new(String::new());
        let masked_delta = |text: &str| {
            if agent.secrets.is_empty() {
                return on_delta(text);
            }
            let ready = {
                let mut held = held.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                held.push_str(text);
                let upto = held.len() - agent.secrets.partial_suffix(&held);
                let ready: String = held.drain(..upto).collect();
                ready
            };
            if !ready.is_empty() {
                on_delta(&agent.secrets.mask(&ready));
            }
        };
        let attempt = self.with_retries(agent, body, remote, call, &masked_delta);
        let result = match tokio::time::timeout(agent.timeout, attempt).await {
            Ok(r) => r.and_then(|reply| accept(agent, reply)),
            Err(_) => Err(DispatchError::Timeout(agent.timeout)),
        };
        let rest = std::mem::take(&mut *held.lock().unwrap_or_else(std::sync::PoisonError::into_inner));
        if !rest.is_empty() {
            on_delta(&agent.secrets.mask(&rest));
        }
        let result = match result {
            Ok(reply) => Ok(AgentReply {
                output: agent.secrets.mask_json(reply.output),
                message: agent.secrets.mask_string(reply.message),
            }),
            Err(e) => Err(e.redact(&agent.secrets)),
        };
        let healthy = result.as_ref().map_or_else(|e| !e.counts_against_agent(), |_| true);
        self.breakers.record(agent.id(), breaker, healthy);
        crate::metrics::agent_call(agent.id(), started.elapsed(), result.as_ref().err().map(DispatchError::code));
        result
    }

    /// Cancels an A2A task that asked for input (the user cancelled or switched intent).
    pub async fn cancel_remote(&self, agent: &CapabilityCard, remote: &RemoteTask) {
        a2a::cancel(&self.client, &self.cards, agent, remote, self.limits).await;
    }

    async fn with_retries(
        &self,
        agent: &CapabilityCard,
        body: &Value,
        remote: Option<&RemoteTask>,
        call: &Call<'_>,
        on_delta: DeltaFn<'_>,
    ) -> Result<AgentReply, DispatchError> {
        let mut backoff = ExponentialBuilder::default()
            .with_min_delay(Duration::from_millis(50))
            .with_max_delay(Duration::from_secs(2))
            .with_jitter()
            .with_max_times(agent.spec.endpoint.retries as usize)
            .build();
        loop {
            let relayed = AtomicBool::new(false);
            let result = match agent.protocol() {
                Protocol::Http => http::call(&self.client, agent, body, call, self.limits).await,
                Protocol::Sse => sse::call(&self.client, agent, body, call, self.limits, on_delta, &relayed).await,
                Protocol::A2a => {
                    let cards = &self.cards;
                    a2a::call(&self.client, cards, agent, body, remote, call, self.limits, on_delta, &relayed).await
                }
            };
            match result {
                Err(e) if e.is_retryable() && !relayed.load(Ordering::Relaxed) => match backoff.next() {
                    Some(delay) => {
                        tracing::debug!(agent = agent.id(), error = %e, ?delay, "retrying sub-agent call");
                        tokio::time::sleep(delay).await;
                    }
                    None => return Err(e),
                },
                other => return other,
            }
        }
    }
}

/// Checks the reply's `output` against the card's output schema.
fn accept(agent: &CapabilityCard, reply: AgentReply) -> Result<AgentReply, DispatchError> {
    let errors = agent.output_errors(&reply.output);
    if errors.is_empty() {
        Ok(reply)
    } else {
        Err(DispatchError::Rejected(errors.join("; ")))
    }
}

/// The per-call headers of one dispatch: the W3C `traceparent`, and the caller's bearer token
/// for an agent with `forward_user_token` (sent as `Authorization: Bearer …`).
#[derive(Clone, Copy)]
pub struct Call<'a> {
    /// The `traceparent` value.
    pub traceparent: &'a str,
    /// The caller's token to forward, if any.
    pub user_token: Option<&'a str>,
}

impl std::fmt::Debug for Call<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Call")
            .field("traceparent", &self.traceparent)
            .field("user_token", &self.user_token.map(|_| "…"))
            .finish()
    }
}

impl<'a> Call<'a> {
    /// A call with `traceparent` and no forwarded token.
    pub fn traced(traceparent: &'a str) -> Self {
        Self { traceparent, user_token: None }
    }

    /// `request` with the forwarded token, if any (marked sensitive).
    pub fn authorize(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match self.user_token.and_then(|t| reqwest::header::HeaderValue::from_str(&format!("Bearer {t}")).ok()) {
            Some(mut value) => {
                value.set_sensitive(true);
                request.header(reqwest::header::AUTHORIZATION, value)
            }
            None => request,
        }
    }
}

/// A `POST` to the agent's endpoint with its configured headers, `traceparent` and `accept`.
pub(crate) fn post(
    client: &reqwest::Client,
    agent: &CapabilityCard,
    traceparent: &str,
    accept: &str,
) -> reqwest::RequestBuilder {
    client
        .post(agent.url.clone())
        .headers(agent.headers.clone())
        .header("traceparent", traceparent)
        .header(reqwest::header::ACCEPT, accept)
}

/// Parses a reply body.
pub(crate) fn parse_reply(bytes: &[u8]) -> Result<AgentReply, DispatchError> {
    serde_json::from_slice(bytes)
        .map_err(|e| DispatchError::Protocol(format!("reply is not {{output, message}} JSON: {e}")))
}

/// Reads a whole body, failing once it exceeds `limit` bytes.
pub(crate) async fn read_limited(resp: reqwest::Response, limit: usize) -> Result<Bytes, DispatchError> {
    if resp.content_length().is_some_and(|n| n as usize > limit) {
        return Err(DispatchError::TooLarge(limit));
    }
    let mut stream = resp.bytes_stream();
    let mut buf = Vec::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| DispatchError::Protocol(format!("reading the reply: {e}")))?;
        if buf.len() + chunk.len() > limit {
            return Err(DispatchError::TooLarge(limit));
        }
        buf.extend_from_slice(&chunk);
    }
    Ok(Bytes::from(buf))
}

/// The start of a body as text, for error messages.
fn snippet(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(200)]);
    text.into_owned()
}

/// A fresh W3C `traceparent` value for `trace_id` (32 hex digits) with a new span id.
pub fn traceparent(trace_id: &str) -> String {
    let span = uuid::Uuid::new_v4().simple().to_string();
    format!("00-{trace_id}-{}-01", &span[..16])
}

/// Who a sub-task request is for: the ids of the request body (docs/sub-agent-protocol.md).
#[derive(Debug, Clone, Copy)]
pub struct RequestIds<'a> {
    /// The sub-task id.
    pub task_id: &'a str,
    /// The plan id.
    pub plan_id: &'a str,
    /// The session id.
    pub session_id: &'a str,
    /// The user id.
    pub user_id: &'a str,
    /// The thread id.
    pub thread_id: &'a str,
    /// `context.user`: the verified user (`auth::Principal::context`), if any.
    pub user: Option<&'a Value>,
}

/// The request body of every protocol (docs/sub-agent-protocol.md, "Request"): `message` is
/// `inputs.message`; `dependencies` maps each dependency's task id to its accepted output. Used
/// by the executor and by `switchboard check-agent`.
pub fn request_body(ids: RequestIds<'_>, inputs: Value, dependencies: serde_json::Map<String, Value>) -> Value {
    let message = inputs.get("message").and_then(Value::as_str).unwrap_or_default().to_string();
    let mut context = serde_json::json!({ "dependencies": dependencies });
    if let Some(user) = ids.user {
        context["user"] = user.clone();
    }
    serde_json::json!({
        "task_id": ids.task_id,
        "plan_id": ids.plan_id,
        "session_id": ids.session_id,
        "user_id": ids.user_id,
        "thread_id": ids.thread_id,
        "message": message,
        "inputs": inputs,
        "context": context,
    })
}
