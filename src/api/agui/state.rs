//! The AG-UI state document: what a UI needs of the conversation between runs, sent as
//! `STATE_SNAPSHOT` when a run starts and as `STATE_DELTA` (RFC 6902 JSON Patch) when the turn's
//! saved session differs (docs/http-api.md, "AG-UI").
//!
//! The document is the run's input `state` (an object; other values are dropped) with one key
//! set by Switchboard, `conversation`:
//!
//! ```json
//! { "conversation": {
//!     "status": "idle" | "awaiting_input" | "awaiting_choice" | "escalated",
//!     "slots": { "city": "北京" },
//!     "pending": null | {
//!       "plan_id": "plan_…", "expires_at": "2026-…Z", "keys": ["check_in_date"],
//!       "widgets": [{ "key", "description", "widget", "descriptor" }],
//!       "tasks": [{ "task_id", "agent_id", "description", "question"? }] },
//!     "choice": null | { "choice_id", "expires_at", "candidates": [{ "agent_id", "name", "description" }] } } }
//! ```
//!
//! The frontend's own keys (`user_id`, …) are kept, so an AG-UI client that sends its state back
//! on the next run (as `HttpAgent` does) keeps naming the same user.

use serde_json::{json, Map, Value};

use crate::conversation::ConversationState;
use crate::registry::Registry;
use crate::session::Session;

/// The key of the document Switchboard owns.
pub const KEY: &str = "conversation";

/// The state document for `session` (`None`: a thread not stored yet), over the frontend's own
/// `input` state.
pub fn document(input: &Value, session: Option<&Session>, registry: &Registry) -> Value {
    let mut doc = match input {
        Value::Object(m) => m.clone(),
        _ => Map::new(),
    };
    doc.insert(KEY.into(), conversation(session, registry));
    Value::Object(doc)
}

/// The `conversation` part: status, remembered slots, the pending clarification.
pub fn conversation(session: Option<&Session>, registry: &Registry) -> Value {
    let Some(session) = session else {
        return json!({ "status": "idle", "slots": {}, "pending": null, "choice": null });
    };
    let status = match &session.conversation.state {
        ConversationState::Idle => "idle",
        ConversationState::AwaitingKeys(_) => "awaiting_input",
        ConversationState::AwaitingIntent(_) => "awaiting_choice",
        ConversationState::Escalated(_) => "escalated",
    };
    let pending = session.conversation.pending().map(|p| {
        // Each asked key once, described by the first pending task's agent that declares it.
        let widgets: Vec<Value> = p
            .keys
            .iter()
            .map(|key| {
                let def = p
                    .tasks
                    .iter()
                    .filter_map(|t| registry.get(&t.assigned_agent))
                    .find_map(|a| a.keys.iter().find(|k| k.spec.key == *key));
                let (description, widget) =
                    def.map_or((key.clone(), String::new()), |k| (k.spec.description.clone(), k.widget.clone()));
                let descriptor = registry.widgets.get(widget.as_str()).cloned().unwrap_or(Value::Null);
                json!({ "key": key, "description": description, "widget": widget, "descriptor": descriptor })
            })
            .collect();
        let tasks: Vec<Value> = p
            .tasks
            .iter()
            .map(|t| {
                let mut task =
                    json!({ "task_id": t.task_id, "agent_id": t.assigned_agent, "description": t.description });
                if let Some(remote) = &t.remote {
                    task["question"] = json!(remote.question);
                }
                task
            })
            .collect();
        json!({
            "plan_id": p.plan_id,
            "expires_at": p.expires_at.to_rfc3339(),
            "keys": p.keys,
            "widgets": widgets,
            "tasks": tasks,
        })
    });
    json!({ "status": status, "slots": session.slots, "pending": pending, "choice": choice(session, registry) })
}

/// The pending did-you-mean question: its id (the interrupt's), expiry and candidates.
fn choice(session: &Session, registry: &Registry) -> Value {
    let Some(c) = session.conversation.choice() else { return Value::Null };
    let candidates: Vec<Value> = c
        .candidates
        .iter()
        .map(|id| {
            let card = registry.get(id);
            json!({
                "agent_id": id,
                "name": card.map_or(id.as_str(), |a| a.spec.name.as_str()),
                "description": card.map_or("", |a| a.spec.description.as_str()),
            })
        })
        .collect();
    json!({ "choice_id": c.choice_id, "expires_at": c.expires_at.to_rfc3339(), "candidates": candidates })
}
