//! The turn's decision in either mode. Without a model it is the rule planner's
//! ([`planner::plan_turn`]). With one, the model recognizes intents and proposes a plan that is
//! validated like the rule planner's (one repair is asked for); on any model failure the rule
//! planner serves the turn and the metadata says `degraded`. Turns that continue or cancel a
//! pending clarification stay with the rules.

use serde::Serialize;

use super::LlmPlanner;
use crate::planner::proposal::build_from_proposal;
use crate::planner::{
    self, Decision, EscalationReason, IntentResult, Lang, PlanMode, SimpleIntent, TurnDecision, TurnInput,
};
use crate::registry::Registry;
use crate::session::HistoryEntry;

/// Which planner decided a turn, as `intent_done` reports it (`state.planner`, `state.degraded`,
/// `state.planner_reason`, `state.intent_cache_hit`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlannerMeta {
    /// `rule` or `llm`.
    pub planner: &'static str,
    /// `true` when the model failed and the rule planner served the turn.
    pub degraded: bool,
    /// Why the rule planner served a turn in LLM mode.
    pub reason: Option<String>,
    /// Whether the model's intent came from the cache (LLM mode only).
    pub cache_hit: Option<bool>,
}

impl PlannerMeta {
    /// The rule planner decided.
    pub fn rule(reason: Option<String>, degraded: bool, cache_hit: Option<bool>) -> Self {
        Self { planner: "rule", degraded, reason, cache_hit }
    }
}

/// Decides the turn: with a model, its intents and plan; on any model failure, the rule
/// planner, marked degraded.
pub async fn decide(
    llm: Option<&LlmPlanner>,
    registry: &Registry,
    input: TurnInput<'_>,
    history: &[HistoryEntry],
) -> (TurnDecision, PlannerMeta) {
    let rules = planner::plan_turn(registry, input);
    let Some(llm) = llm else {
        return (rules, PlannerMeta::rule(None, false, None));
    };
    if let Some(why) = fast_path(&rules) {
        return (rules, PlannerMeta::rule(Some(why.into()), false, None));
    }
    match llm_decide(llm, registry, input, history).await {
        Ok((Some(turn), cache_hit)) => {
            (turn, PlannerMeta { planner: "llm", degraded: false, reason: None, cache_hit: Some(cache_hit) })
        }
        Ok((None, cache_hit)) => {
            (rules, PlannerMeta::rule(Some("continuing the pending clarification".into()), false, Some(cache_hit)))
        }
        Err(reason) => {
            tracing::warn!(%reason, "LLM planner failed; the rule planner serves the turn");
            (rules, PlannerMeta::rule(Some(reason), true, None))
        }
    }
}

/// Turns the rules decide before the model is asked (so a slow or wrong model cannot delay or
/// override them): a request for a human, self-harm, abuse or sensitive content (a human request
/// always wins), cancel words, an upset user, and a pure greeting, thanks or capabilities
/// question. Returns why.
fn fast_path(rules: &TurnDecision) -> Option<&'static str> {
    match rules.decision {
        Decision::Escalate(EscalationReason::UserRequested) => Some("fast path: the user asked for a human"),
        Decision::Escalate(_) => Some("fast path: self-harm, abuse or sensitive content"),
        Decision::Cancel => Some("fast path: cancel words"),
        Decision::Direct(SimpleIntent::Greeting | SimpleIntent::Thanks | SimpleIntent::Capabilities) => {
            Some("fast path: greeting, thanks or a capabilities question")
        }
        Decision::Direct(SimpleIntent::Angry) => Some("fast path: an upset user"),
        _ => None,
    }
}

/// The model's sentence for the user, when it has one that names no agent id (user-facing text
/// never shows agent ids).
fn user_message(registry: &Registry, message: &str) -> Option<String> {
    let message = message.trim();
    let lower = message.to_lowercase();
    let names_an_agent = registry.agents().iter().any(|a| lower.contains(&a.id().to_lowercase()));
    (!message.is_empty() && !names_an_agent).then(|| message.to_string())
}

/// A label of the intent answer that names a simple intent.
fn simple_label(label: &str) -> Option<SimpleIntent> {
    Some(match label {
        "sensitive" => SimpleIntent::Sensitive,
        "human" => SimpleIntent::HumanRequested,
        "greeting" => SimpleIntent::Greeting,
        "thanks" => SimpleIntent::Thanks,
        "capabilities" => SimpleIntent::Capabilities,
        "chitchat" => SimpleIntent::ChitChat,
        "out_of_scope" => SimpleIntent::OutOfScope,
        _ => return None,
    })
}

/// The model's decision; `Ok(None)` leaves the turn to the rules (a pending clarification
/// being answered or cancelled, a did-you-mean question being answered, cancel words). The `bool` is the intent cache hit.
async fn llm_decide(
    llm: &LlmPlanner,
    registry: &Registry,
    input: TurnInput<'_>,
    history: &[HistoryEntry],
) -> Result<(Option<TurnDecision>, bool), String> {
    // The answer to a did-you-mean question is the rules' to read (an ordinal, a name, a slot).
    if input.choice.is_some() {
        return Ok((None, false));
    }
    let (answer, cache_hit) =
        llm.recognize(registry, input.query, history, input.pending).await.map_err(|e| e.to_string())?;
    let mut agents: Vec<String> = Vec::new();
    for id in &answer.intent {
        if registry.get_enabled(id).is_some() && !agents.contains(id) {
            agents.push(id.clone());
        }
    }
    let simple = answer.intent.iter().find_map(|label| simple_label(label));
    let rewritten =
        if answer.rewritten_query.trim().is_empty() { input.query.to_string() } else { answer.rewritten_query.clone() };
    let mut intent = IntentResult {
        agents: agents.clone(),
        simple,
        confidence: answer.confidence,
        reason: answer.reason.clone(),
        rewritten_query: rewritten.clone(),
        lang: input.lang,
        resumes_pending: false,
        candidates: planner::intent::recognize(registry, input.query).top(planner::intent::CANDIDATES_SHOWN),
        user_friendly_message: user_message(registry, &answer.user_friendly_message),
    };
    let escalate = match simple {
        Some(SimpleIntent::Sensitive) => Some(EscalationReason::Sensitive),
        Some(SimpleIntent::HumanRequested) => Some(EscalationReason::UserRequested),
        _ => None,
    };
    if let Some(reason) = escalate {
        return Ok((Some(TurnDecision { intent, decision: Decision::Escalate(reason) }), cache_hit));
    }
    let pending = input.pending.filter(|p| !p.is_empty());
    let new_agents = agents.iter().any(|a| !pending.is_some_and(|p| p.iter().any(|t| &t.assigned_agent == a)));
    if (pending.is_some() && !new_agents) || planner::intent::is_cancel(registry, &input.query.to_lowercase()) {
        return Ok((None, cache_hit));
    }
    if agents.is_empty() {
        let simple = simple.unwrap_or(SimpleIntent::OutOfScope);
        intent.simple = Some(simple);
        return Ok((Some(TurnDecision { intent, decision: Decision::Direct(simple) }), cache_hit));
    }
    let mode = if pending.is_some() { PlanMode::Rerouted } else { PlanMode::Fresh };
    let (plan, found) = model_plan(llm, registry, input, &agents, &rewritten, intent.lang).await?;
    Ok((Some(TurnDecision { intent, decision: Decision::Plan { plan, found, mode } }), cache_hit))
}

/// The model's plan for `agents`, validated by the rule planner's builder, with one repair.
async fn model_plan(
    llm: &LlmPlanner,
    registry: &Registry,
    input: TurnInput<'_>,
    agents: &[String],
    rewritten: &str,
    lang: Lang,
) -> Result<(planner::TaskPlan, serde_json::Map<String, serde_json::Value>), String> {
    let src = planner::KeySources {
        text: input.query,
        slots: input.slots,
        session_slots: input.session_slots,
        today: input.today,
    };
    let (proposal, raw) =
        llm.plan(registry, rewritten, agents, input.session_slots, None).await.map_err(|e| e.to_string())?;
    match build_from_proposal(registry, &proposal, src, input.plan_id, lang, rewritten) {
        Ok(built) => Ok(built),
        Err(problems) => {
            tracing::info!(?problems, "asking the model to repair its plan");
            let (repaired, _) = llm
                .plan(registry, rewritten, agents, input.session_slots, Some((&raw, &problems)))
                .await
                .map_err(|e| format!("plan repair failed: {e}"))?;
            build_from_proposal(registry, &repaired, src, input.plan_id, lang, rewritten)
                .map_err(|p| format!("invalid plan after one repair: {}", p.join("; ")))
        }
    }
}
