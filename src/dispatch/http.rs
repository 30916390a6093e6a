//! Protocol `http`: `POST` the request as JSON, read one JSON reply (docs/sub-agent-protocol.md).

use serde_json::Value;

use super::{parse_reply, post, read_limited, snippet, AgentReply, DispatchError, DispatchLimits};
use crate::registry::CapabilityCard;

/// One exchange. A non-200 status is [`DispatchError::Status`].
///
/// # Errors
/// [`DispatchError`] for transport failures, statuses, oversized or malformed replies.
pub async fn call(
    client: &reqwest::Client,
    agent: &CapabilityCard,
    body: &Value,
    call: &super::Call<'_>,
    limits: DispatchLimits,
) -> Result<AgentReply, DispatchError> {
    let resp = call.authorize(post(client, agent, call.traceparent, "application/json")).json(body).send().await?;
    let status = resp.status();
    let bytes = read_limited(resp, limits.max_response_bytes).await?;
    if status != reqwest::StatusCode::OK {
        tracing::warn!(agent = agent.id(), status = status.as_u16(), body = %snippet(&bytes), "sub-agent error status");
        return Err(DispatchError::Status { status: status.as_u16(), body: snippet(&bytes) });
    }
    parse_reply(&bytes)
}
