//! Classified dispatch errors: what is retryable, and how each failure is told to the user.

use std::time::Duration;

use crate::planner::Lang;

/// Why a sub-agent call failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum DispatchError {
    /// Could not connect (refused, unreachable): the request never reached the agent.
    #[error("connection failed: {0}")]
    Connect(String),
    /// The connection broke after the request was sent and before a reply: the agent may have
    /// acted on it, so it is not sent again.
    #[error("connection lost before the reply: {0}")]
    Disconnected(String),
    /// No complete reply within the agent's timeout.
    #[error("no reply within {0:?}")]
    Timeout(Duration),
    /// A non-200 status. The body is kept for logs only: it is the agent's internals and is not
    /// part of the message shown in event metadata.
    #[error("HTTP status {status}")]
    Status {
        /// The status code.
        status: u16,
        /// The start of the body, for logs.
        body: String,
    },
    /// The reply is not the protocol's shape (bad JSON, wrong content type, stream ended early).
    #[error("malformed reply: {0}")]
    Protocol(String),
    /// The reply exceeded the size limit (bytes).
    #[error("reply larger than {0} bytes")]
    TooLarge(usize),
    /// The agent reported an error (`event: error`).
    #[error("agent error: {0}")]
    Agent(String),
    /// The reply's `output` failed the card's output schema.
    #[error("output rejected: {0}")]
    Rejected(String),
    /// The inputs failed the card's input schema (caught before any call).
    #[error("inputs invalid: {0}")]
    InvalidInputs(String),
    /// The agent's circuit is open: not called (retry after the cool-down).
    #[error("circuit open: the agent failed repeatedly; not called for up to {0:?}")]
    CircuitOpen(Duration),
    /// The turn's deadline passed before the sub-task finished.
    #[error("the request deadline passed")]
    Deadline,
    /// An A2A agent needs more from the user (`TASK_STATE_INPUT_REQUIRED`): not a failure, a
    /// clarification continued on the same remote task.
    #[error("the agent asks: {}", .0.question)]
    InputRequired(crate::planner::RemoteTask),
}

impl DispatchError {
    /// Safe to retry: the agent did not (or could not) act on the request. Connect errors and
    /// 502 / 503 / 504 only (docs/sub-agent-protocol.md, "Timeouts and retries").
    pub fn is_retryable(&self) -> bool {
        matches!(self, Self::Connect(_)) || matches!(self, Self::Status { status, .. } if matches!(status, 502..=504))
    }

    /// Short, user-facing reason (no ids, no internals).
    pub fn user_reason(&self, lang: Lang) -> &'static str {
        match (self, lang) {
            (Self::Connect(_), Lang::Zh) => "服务暂时无法连接",
            (Self::Connect(_), Lang::En) => "the service could not be reached",
            (Self::Disconnected(_), Lang::Zh) => "与服务的连接中断",
            (Self::Disconnected(_), Lang::En) => "the connection to the service was lost",
            (Self::Timeout(_), Lang::Zh) => "服务响应超时",
            (Self::Timeout(_), Lang::En) => "the service did not answer in time",
            (Self::Status { .. } | Self::Protocol(_) | Self::TooLarge(_) | Self::Rejected(_), Lang::Zh) => {
                "服务返回了无法使用的结果"
            }
            (Self::Status { .. } | Self::Protocol(_) | Self::TooLarge(_) | Self::Rejected(_), Lang::En) => {
                "the service returned an unusable result"
            }
            (Self::Agent(_), Lang::Zh) => "服务处理失败",
            (Self::Agent(_), Lang::En) => "the service reported a failure",
            (Self::InvalidInputs(_), Lang::Zh) => "提供的信息格式不正确",
            (Self::InvalidInputs(_), Lang::En) => "some details were not in a usable form",
            (Self::CircuitOpen(_), Lang::Zh) => "服务暂时不可用，请稍后再试",
            (Self::CircuitOpen(_), Lang::En) => "the service is temporarily unavailable, please try again later",
            (Self::Deadline, Lang::Zh) => "处理超时",
            (Self::Deadline, Lang::En) => "it took too long",
            (Self::InputRequired(_), Lang::Zh) => "还需要您补充信息",
            (Self::InputRequired(_), Lang::En) => "more details are needed from you",
        }
    }

    /// `true` when the failure says something about the agent's health (feeds its breaker).
    pub fn counts_against_agent(&self) -> bool {
        !matches!(self, Self::InvalidInputs(_) | Self::InputRequired(_) | Self::CircuitOpen(_) | Self::Deadline)
    }

    /// Stable code for event metadata (`connect`, `timeout`, `status`, ...).
    pub fn code(&self) -> &'static str {
        match self {
            Self::Connect(_) => "connect",
            Self::Disconnected(_) => "disconnected",
            Self::Timeout(_) => "timeout",
            Self::Status { .. } => "status",
            Self::Protocol(_) => "protocol",
            Self::TooLarge(_) => "too_large",
            Self::Agent(_) => "agent_error",
            Self::Rejected(_) => "output_rejected",
            Self::InvalidInputs(_) => "invalid_inputs",
            Self::InputRequired(_) => "input_required",
            Self::CircuitOpen(_) => "circuit_open",
            Self::Deadline => "deadline",
        }
    }
}

impl From<reqwest::Error> for DispatchError {
    /// The URL is dropped from the message: an interpolated `${ENV}` secret may live in it.
    fn from(e: reqwest::Error) -> Self {
        let e = e.without_url();
        if e.is_timeout() {
            Self::Timeout(Duration::ZERO)
        } else if e.is_connect() {
            Self::Connect(e.to_string())
        } else if e.is_request() && !e.is_body() && !e.is_decode() {
            // Sent (maybe fully received), then the connection broke: never retried.
            Self::Disconnected(e.to_string())
        } else {
            Self::Protocol(e.to_string())
        }
    }
}
