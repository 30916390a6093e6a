//! Classified dispatch errors: what is retryable, and how each failure is told to the user.

use std::time::Duration;

use crate::text::{Lang, Texts};

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
    /// The error with `secrets` masked in every text that came from the agent.
    #[must_use]
    pub fn redact(self, secrets: &crate::redact::Secrets) -> Self {
        if secrets.is_empty() {
            return self;
        }
        let m = |s: String| secrets.mask_string(s);
        match self {
            Self::Connect(s) => Self::Connect(m(s)),
            Self::Disconnected(s) => Self::Disconnected(m(s)),
            Self::Status { status, body } => Self::Status { status, body: m(body) },
            Self::Protocol(s) => Self::Protocol(m(s)),
            Self::Agent(s) => Self::Agent(m(s)),
            Self::Rejected(s) => Self::Rejected(m(s)),
            Self::InvalidInputs(s) => Self::InvalidInputs(m(s)),
            Self::InputRequired(mut r) => {
                r.question = m(r.question);
                Self::InputRequired(r)
            }
            other @ (Self::Timeout(_) | Self::TooLarge(_) | Self::CircuitOpen(_) | Self::Deadline) => other,
        }
    }

    /// Safe to retry: the agent did not (or could not) act on the request. Connect errors and
    /// 502 / 503 / 504 only (docs/sub-agent-protocol.md, "Timeouts and retries").
    pub fn is_retryable(&self) -> bool {
        matches!(self, Self::Connect(_)) || matches!(self, Self::Status { status, .. } if matches!(status, 502..=504))
    }

    /// Short, user-facing reason (no ids, no internals): the catalog message [`Self::text_id`].
    pub fn user_reason(&self, texts: &Texts, lang: Lang) -> String {
        texts.get(lang, self.text_id(), &[])
    }

    /// The catalog id of the user-facing reason: `dispatch-` and [`Self::code`] (`_` as `-`).
    pub fn text_id(&self) -> &'static str {
        match self {
            Self::Connect(_) => "dispatch-connect",
            Self::Disconnected(_) => "dispatch-disconnected",
            Self::Timeout(_) => "dispatch-timeout",
            Self::Status { .. } => "dispatch-status",
            Self::Protocol(_) => "dispatch-protocol",
            Self::TooLarge(_) => "dispatch-too-large",
            Self::Agent(_) => "dispatch-agent-error",
            Self::Rejected(_) => "dispatch-output-rejected",
            Self::InvalidInputs(_) => "dispatch-invalid-inputs",
            Self::InputRequired(_) => "dispatch-input-required",
            Self::CircuitOpen(_) => "dispatch-circuit-open",
            Self::Deadline => "dispatch-deadline",
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_error_has_its_reason_in_the_catalog_under_its_code() {
        let remote = crate::planner::RemoteTask { task_id: "t".into(), context_id: "c".into(), question: "?".into() };
        let all = [
            DispatchError::Connect(String::new()),
            DispatchError::Disconnected(String::new()),
            DispatchError::Timeout(Duration::ZERO),
            DispatchError::Status { status: 500, body: String::new() },
            DispatchError::Protocol(String::new()),
            DispatchError::TooLarge(1),
            DispatchError::Agent(String::new()),
            DispatchError::Rejected(String::new()),
            DispatchError::InvalidInputs(String::new()),
            DispatchError::InputRequired(remote),
            DispatchError::CircuitOpen(Duration::ZERO),
            DispatchError::Deadline,
        ];
        let texts = Texts::shipped();
        for e in &all {
            assert_eq!(e.text_id(), format!("dispatch-{}", e.code().replace('_', "-")));
            assert!(texts.has(e.text_id()), "{}", e.text_id());
        }
        assert!(all[0].user_reason(&texts, Lang::En).starts_with("the service could not be reached"));
        assert!(all[3].user_reason(&texts, Lang::Zh).starts_with("服务返回了无法使用的结果"));
        // Unavailable, timed out, a bad answer and a refusal read differently, each with a next
        // step for the user.
        for lang in [Lang::Zh, Lang::En] {
            let kinds = [&all[3], &all[2], &all[7], &all[6]].map(|e| e.user_reason(&texts, lang));
            for (i, a) in kinds.iter().enumerate() {
                assert!(kinds[i + 1..].iter().all(|b| a != b), "{kinds:?}");
                let next = ["稍后", "换个说法", "转人工", "try again", "rephrase", "human"];
                assert!(next.iter().any(|n| a.contains(n)), "no next step in {a:?}");
            }
        }
    }
}
