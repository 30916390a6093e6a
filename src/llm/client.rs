//! An OpenAI-compatible chat-completions client (`POST {LLM_BASE_URL}/chat/completions`) over
//! reqwest: non-streaming and streaming (`text/event-stream` chunks, parsed by
//! `eventsource-stream`), a deadline per call, retries on 429 / 5xx with jittered backoff
//! (`backon`) that honours `Retry-After`, and token usage counted.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use backon::{BackoffBuilder, ExponentialBuilder};
use eventsource_stream::Eventsource;
use futures::StreamExt;
use serde::Serialize;
use serde_json::{json, Value};
use tokio::time::Instant;

/// Where the model is.
#[derive(Debug, Clone)]
pub struct LlmSettings {
    /// `LLM_BASE_URL`, e.g. `https://api.openai.com/v1` (no trailing `/chat/completions`).
    pub base_url: String,
    /// `LLM_API_KEY` (sent as a bearer token when set).
    pub api_key: Option<String>,
    /// `LLM_MODEL`.
    pub model: String,
    /// Retries on 429 / 5xx.
    pub max_retries: usize,
}

impl LlmSettings {
    /// From `LLM_BASE_URL`, `LLM_MODEL` and optional `LLM_API_KEY`; `None` unless both of the
    /// first two are set and non-empty.
    pub fn from_env() -> Option<Self> {
        let get = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        Some(Self {
            base_url: get("LLM_BASE_URL")?,
            model: get("LLM_MODEL")?,
            api_key: get("LLM_API_KEY"),
            max_retries: 2,
        })
    }
}

/// Why a model call failed (every one of these makes the turn fall back to the rule planner or
/// the template summary).
#[derive(Debug, Clone, thiserror::Error)]
pub enum LlmError {
    /// No complete answer before the deadline.
    #[error("the model did not answer within {0:?}")]
    Timeout(Duration),
    /// Transport failure.
    #[error("cannot reach the model: {0}")]
    Connect(String),
    /// A non-success status (after retries for 429 / 5xx).
    #[error("the model endpoint answered HTTP {status}: {body}")]
    Status {
        /// The status.
        status: u16,
        /// The start of the body.
        body: String,
    },
    /// The response is not a chat completion.
    #[error("malformed completion: {0}")]
    Malformed(String),
    /// The content is not the JSON asked for.
    #[error("unusable model output: {0}")]
    Unusable(String),
}

/// One chat message.
#[derive(Debug, Clone, Serialize)]
pub struct Message {
    /// `system`, `user` or `assistant`.
    pub role: &'static str,
    /// The text.
    pub content: String,
}

impl Message {
    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Self { role: "system", content: content.into() }
    }

    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Self { role: "user", content: content.into() }
    }

    /// An assistant message.
    pub fn assistant(content: impl Into<String>) -> Self {
        Self { role: "assistant", content: content.into() }
    }
}

/// Usage counters since start.
#[derive(Debug, Default)]
pub struct Usage {
    /// Completed calls.
    pub calls: AtomicU64,
    /// Failed calls.
    pub failures: AtomicU64,
    /// Retried attempts.
    pub retries: AtomicU64,
    /// Prompt tokens reported by the server.
    pub prompt_tokens: AtomicU64,
    /// Completion tokens reported by the server.
    pub completion_tokens: AtomicU64,
}

impl Usage {
    fn record(&self, usage: &Value) {
        let get = |k: &str| usage.get(k).and_then(Value::as_u64).unwrap_or(0);
        self.prompt_tokens.fetch_add(get("prompt_tokens"), Ordering::Relaxed);
        self.completion_tokens.fetch_add(get("completion_tokens"), Ordering::Relaxed);
    }

    /// A JSON snapshot.
    pub fn snapshot(&self) -> Value {
        json!({
            "calls": self.calls.load(Ordering::Relaxed),
            "failures": self.failures.load(Ordering::Relaxed),
            "retries": self.retries.load(Ordering::Relaxed),
            "prompt_tokens": self.prompt_tokens.load(Ordering::Relaxed),
            "completion_tokens": self.completion_tokens.load(Ordering::Relaxed),
        })
    }
}

/// The client. Cheap to clone.
#[derive(Debug, Clone)]
pub struct ChatClient {
    http: reqwest::Client,
    settings: Arc<LlmSettings>,
    /// Usage counters.
    pub usage: Arc<Usage>,
}

impl ChatClient {
    /// A client for `settings`.
    pub fn new(settings: LlmSettings) -> Self {
        let http = reqwest::Client::builder().connect_timeout(Duration::from_secs(5)).build().unwrap_or_default();
        Self { http, settings: Arc::new(settings), usage: Arc::new(Usage::default()) }
    }

    /// The model name.
    pub fn model(&self) -> &str {
        &self.settings.model
    }

    fn url(&self) -> String {
        format!("{}/chat/completions", self.settings.base_url.trim_end_matches('/'))
    }

    /// Sends `body` (model and stream flag added), retrying 429 / 5xx until `deadline`.
    async fn send(&self, mut body: Value, deadline: Instant, timeout: Duration) -> Result<reqwest::Response, LlmError> {
        body["model"] = json!(self.settings.model);
        let mut backoff = ExponentialBuilder::default()
            .with_min_delay(Duration::from_millis(100))
            .with_max_delay(Duration::from_secs(5))
            .with_jitter()
            .with_max_times(self.settings.max_retries)
            .build();
        let mut dropped_format = false;
        loop {
            let mut req = self.http.post(self.url()).json(&body);
            if let Some(key) = &self.settings.api_key {
                req = req.bearer_auth(key);
            }
            let resp = match tokio::time::timeout_at(deadline, req.send()).await {
                Err(_) => return Err(LlmError::Timeout(timeout)),
                Ok(Err(e)) => return Err(LlmError::Connect(e.without_url().to_string())),
                Ok(Ok(r)) => r,
            };
            let status = resp.status();
            if status.is_success() {
                return Ok(resp);
            }
            let retry_after = resp
                .headers()
                .get(reqwest::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u64>().ok())
                .map(Duration::from_secs);
            let text =
                tokio::time::timeout_at(deadline, resp.text()).await.ok().and_then(Result::ok).unwrap_or_default();
            // A server without structured outputs: ask again without `response_format`, once.
            if status == reqwest::StatusCode::BAD_REQUEST && !dropped_format && body.get("response_format").is_some() {
                if let Some(obj) = body.as_object_mut() {
                    obj.remove("response_format");
                }
                dropped_format = true;
                continue;
            }
            let retryable = status == reqwest::StatusCode::TOO_MANY_REQUESTS || status.is_server_error();
            let err = LlmError::Status { status: status.as_u16(), body: text.chars().take(200).collect() };
            let Some(delay) = backoff.next().filter(|_| retryable) else { return Err(err) };
            let delay = retry_after.map_or(delay, |ra| ra.max(delay));
            if Instant::now() + delay >= deadline {
                return Err(err);
            }
            self.usage.retries.fetch_add(1, Ordering::Relaxed);
            tracing::debug!(status = status.as_u16(), ?delay, "retrying the model call");
            tokio::time::sleep(delay).await;
        }
    }

    /// One non-streaming completion; returns the message content. `response_format` is sent
    /// as given (e.g. a `json_schema` format) and dropped once if the server rejects it.
    ///
    /// # Errors
    /// [`LlmError`].
    pub async fn complete(
        &self,
        messages: &[Message],
        response_format: Option<Value>,
        timeout: Duration,
    ) -> Result<String, LlmError> {
        let result = self.complete_inner(messages, response_format, timeout).await;
        self.count(&result);
        result
    }

    async fn complete_inner(
        &self,
        messages: &[Message],
        response_format: Option<Value>,
        timeout: Duration,
    ) -> Result<String, LlmError> {
        let deadline = Instant::now() + timeout;
        let mut body = json!({ "messages": messages, "temperature": 0, "stream": false });
        if let Some(rf) = response_format {
            body["response_format"] = rf;
        }
        let resp = self.send(body, deadline, timeout).await?;
        let value: Value = match tokio::time::timeout_at(deadline, resp.json()).await {
            Err(_) => return Err(LlmError::Timeout(timeout)),
            Ok(Err(e)) => return Err(LlmError::Malformed(e.to_string())),
            Ok(Ok(v)) => v,
        };
        if let Some(usage) = value.get("usage") {
            self.usage.record(usage);
        }
        value["choices"][0]["message"]["content"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| LlmError::Malformed("no choices[0].message.content".into()))
    }

    /// A streaming completion: `on_token` gets each content chunk as it arrives; returns the
    /// whole text.
    ///
    /// # Errors
    /// [`LlmError`] (tokens already delivered stay delivered).
    pub async fn stream(
        &self,
        messages: &[Message],
        timeout: Duration,
        on_token: &(dyn Fn(&str) + Send + Sync),
    ) -> Result<String, LlmError> {
        let result = self.stream_inner(messages, timeout, on_token).await;
        self.count(&result);
        result
    }

    async fn stream_inner(
        &self,
        messages: &[Message],
        timeout: Duration,
        on_token: &(dyn Fn(&str) + Send + Sync),
    ) -> Result<String, LlmError> {
        let deadline = Instant::now() + timeout;
        let body = json!({ "messages": messages, "temperature": 0, "stream": true, "stream_options": { "include_usage": true } });
        let resp = self.send(body, deadline, timeout).await?;
        let mut events = resp.bytes_stream().eventsource();
        let mut text = String::new();
        loop {
            let event = match tokio::time::timeout_at(deadline, events.next()).await {
                Err(_) => return Err(LlmError::Timeout(timeout)),
                Ok(None) => break,
                Ok(Some(Err(e))) => return Err(LlmError::Malformed(format!("stream: {e}"))),
                Ok(Some(Ok(e))) => e,
            };
            if event.data.trim() == "[DONE]" {
                break;
            }
            let chunk: Value =
                serde_json::from_str(&event.data).map_err(|e| LlmError::Malformed(format!("chunk: {e}")))?;
            if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
                self.usage.record(usage);
            }
            if let Some(token) = chunk["choices"][0]["delta"]["content"].as_str() {
                if !token.is_empty() {
                    on_token(token);
                    text.push_str(token);
                }
            }
        }
        if text.is_empty() {
            return Err(LlmError::Malformed("the stream carried no content".into()));
        }
        Ok(text)
    }

    fn count<T>(&self, result: &Result<T, LlmError>) {
        let counter = if result.is_ok() { &self.usage.calls } else { &self.usage.failures };
        counter.fetch_add(1, Ordering::Relaxed);
    }
}
