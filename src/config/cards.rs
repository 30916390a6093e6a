//! Where an `a2a` sub-agent's Agent Card is: the URL rule shared by config loading and dispatch
//! (docs/sub-agent-protocol.md). Pure: fetching lives in `dispatch::a2a::card`.

/// The Agent Card URL for a configured endpoint URL.
pub fn card_url(endpoint: &reqwest::Url) -> String {
    if endpoint.path().ends_with(".json") {
        return endpoint.to_string();
    }
    let mut url = endpoint.clone();
    let path = format!("{}/.well-known/agent-card.json", endpoint.path().trim_end_matches('/'));
    url.set_path(&path);
    url.to_string()
}
