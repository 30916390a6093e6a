//! A2A agents registered by their Agent Card (DESIGN.md section 6): name, description,
//! keywords and examples not written in the config are read from the card at every load.
//!
//! This is the only network step of loading; it runs after the files validated. A card that
//! cannot be fetched or parsed makes *that agent* unavailable with the reason (shown by
//! `GET /v1/agents`); it never fails the load, so one dead agent cannot block a reload.

use std::time::Duration;

use sha2::{Digest, Sha256};

use super::load::LoadedConfig;
use super::model::Protocol;

/// How long one card fetch may take.
pub const CARD_TIMEOUT: Duration = Duration::from_secs(3);

/// Fills card-registered `a2a` agents from their cards; marks unreachable ones unavailable and
/// folds the cards into the config hash (a changed card is a new registry version).
pub async fn resolve(loaded: &mut LoadedConfig) {
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
        let url = crate::dispatch::a2a::card_url(&agent.url);
        let result = async {
            let resp = client
                .get(&url)
                .header(::a2a::SVC_PARAM_VERSION, ::a2a::VERSION)
                .send()
                .await
                .map_err(|e| e.to_string())?;
            if !resp.status().is_success() {
                return Err(format!("HTTP {}", resp.status().as_u16()));
            }
            let text = resp.text().await.map_err(|e| e.to_string())?;
            let card: ::a2a::AgentCard = serde_json::from_str(&text).map_err(|e| format!("not an Agent Card: {e}"))?;
            Ok((card, text))
        }
        .await;
        match result {
            Ok((card, text)) => {
                hasher.update(text.as_bytes());
                let spec = &mut agent.spec;
                if spec.name.trim().is_empty() {
                    spec.name = card.name.clone();
                }
                if spec.description.trim().is_empty() {
                    spec.description = card.description.clone();
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
                    agent.spec.name.clone_from(&agent.spec.id);
                }
                agent.unavailable = Some(reason);
            }
        }
    }
    if fetched {
        loaded.hash = hasher.finalize().iter().map(|b| format!("{b:02x}")).collect();
    }
}
