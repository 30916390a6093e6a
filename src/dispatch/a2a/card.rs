//! Agent Cards of `a2a` sub-agents: fetched with the response-size limit of every dispatch,
//! cached for [`CARD_TTL`] for calls, and read afresh at every config load by [`resolve_agent_cards`]
//! (A2A agents registered by their card: name, description, keywords and examples not written in
//! the config come from the card; see docs/config.md).
//!
//! A card that cannot be fetched or parsed at load time makes *that agent* unavailable with the
//! reason (shown by `GET /v1/agents`); it never fails the load, so one dead agent cannot block a
//! reload.

use std::sync::Arc;
use std::time::{Duration, Instant};

use ::a2a::AgentCard;
use sha2::{Digest, Sha256};

use super::super::{read_limited, snippet, DispatchError, DispatchLimits};
use crate::config::{card_url, LoadedConfig, Protocol};

/// How long one card fetch may take at load time.
pub const CARD_TIMEOUT: Duration = Duration::from_secs(3);

/// How long a fetched Agent Card is reused.
pub const CARD_TTL: Duration = Duration::from_secs(300);

/// Agent Cards by card URL.
#[derive(Debug, Default)]
pub struct AgentCardCache {
    cards: std::sync::Mutex<std::collections::HashMap<String, (Instant, Arc<AgentCard>)>>,
}

/// Fetches (or reuses) the card at `url`.
///
/// # Errors
/// [`DispatchError`] when it cannot be fetched or parsed.
pub async fn fetch_agent_card(
    client: &reqwest::Client,
    cache: &AgentCardCache,
    url: &str,
    limits: DispatchLimits,
) -> Result<Arc<AgentCard>, DispatchError> {
    if let Some((at, card)) = cache.cards.lock().ok().and_then(|c| c.get(url).cloned()) {
        if at.elapsed() < CARD_TTL {
            return Ok(card);
        }
    }
    let card = Arc::new(fetch_agent_card_fresh(client, url, limits).await?);
    if let Ok(mut c) = cache.cards.lock() {
        c.insert(url.to_string(), (Instant::now(), card.clone()));
    }
    Ok(card)
}

/// Fetches the card at `url`, bypassing the cache (the body is read up to
/// `limits.max_response_bytes`).
///
/// # Errors
/// [`DispatchError`] when it cannot be fetched or parsed.
pub async fn fetch_agent_card_fresh(
    client: &reqwest::Client,
    url: &str,
    limits: DispatchLimits,
) -> Result<AgentCard, DispatchError> {
    let resp = client.get(url).header(::a2a::SVC_PARAM_VERSION, ::a2a::VERSION).send().await?;
    let status = resp.status();
    let bytes = read_limited(resp, limits.max_response_bytes).await?;
    if !status.is_success() {
        tracing::warn!(card = url, status = status.as_u16(), body = %snippet(&bytes), "sub-agent error status");
        return Err(DispatchError::Status { status: status.as_u16(), body: snippet(&bytes) });
    }
    let card: AgentCard =
        serde_json::from_slice(&bytes).map_err(|e| DispatchError::Protocol(format!("agent card: {e}")))?;
    Ok(card)
}

/// Fills card-registered `a2a` agents from their cards; marks unreachable ones unavailable and
/// folds the cards into the config hash (a changed card is a new registry version).
pub async fn resolve_agent_cards(loaded: &mut LoadedConfig, limits: DispatchLimits) {
    let client = reqwest::Client::builder().timeout(CARD_TIMEOUT).build().unwrap_or_default();
    let mut hasher = Sha256::new();
    hasher.update(loaded.hash.as_bytes());
    let mut fetched = false;
    for agent in loaded.agents.iter_mut().filter(|a| a.spec.endpoint.protocol == Protocol::A2a) {
        let from_card = agent.spec.name.trim().is_empty() || agent.spec.description.trim().is_empty();
        if !from_card {
            continue;
        }
        fetched = true;
        let url = card_url(&agent.url);
        let result = fetch_agent_card_fresh(&client, &url, limits).await.map_err(|e| e.to_string());
        match result {
            Ok(card) => {
                hasher.update(serde_json::to_string(&card).unwrap_or_default().as_bytes());
                let spec = &mut agent.spec;
                if spec.name.trim().is_empty() {
                    spec.name = card.name.clone().into();
                }
                if spec.description.trim().is_empty() {
                    spec.description = card.description.clone().into();
                }
                if spec.keywords.is_empty() {
                    spec.keywords =
                        card.skills.iter().flat_map(|s| s.tags.iter().cloned().chain([s.name.clone()])).collect();
                    spec.keywords.dedup();
                }
                if spec.examples.is_empty() {
                    spec.examples = card.skills.iter().flat_map(|s| s.examples.clone().unwrap_or_default()).collect();
                }
            }
            Err(reason) => {
                let reason = format!("agent card {url} unavailable: {reason}");
                tracing::warn!(agent = %agent.spec.id, %reason, "agent unavailable");
                hasher.update(reason.as_bytes());
                if agent.spec.name.trim().is_empty() {
                    agent.spec.name = agent.spec.id.to_string().into();
                }
                agent.unavailable = Some(reason);
            }
        }
    }
    if fetched {
        loaded.hash = hasher.finalize().iter().map(|b| format!("{b:02x}")).collect();
    }
}
