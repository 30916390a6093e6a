//! The rule planner (DESIGN.md section 5): intent recognition, semantic-key extraction and task
//! planning. Pure: no IO, no clock (today's date and the plan id come in [`TurnInput`]).
//!
//! - [`intent`]: capability-card matching and the simple-intent lexicons.
//! - [`extract`]: semantic-key extractors.
//! - [`plan`]: the [`TaskPlan`] types and the DAG builder shared by fresh plans and resumes.
//!
//! [`plan_turn`] decides one turn: escalate (sensitive / human requested), resume the pending
//! clarification (the turn supplies its values and names no other agent), plan the matched
//! agents, or answer directly (capabilities, greeting, thanks, chit-chat, out of scope).

pub mod extract;
pub mod intent;
pub mod plan;

use chrono::NaiveDate;
use serde::Serialize;
use serde_json::{Map, Value};

pub use extract::Extractor;
pub use intent::{Lang, SimpleIntent, TermMatcher};
pub use plan::{Candidate, KeySources, MissKind, SemanticInfo, SubTask, TaskPlan, TaskStatus, TaskType};

use crate::registry::Registry;

/// Everything the planner needs about one turn.
#[derive(Debug, Clone, Copy)]
pub struct TurnInput<'a> {
    /// The user's text (may be empty when the turn only carries `slots`).
    pub query: &'a str,
    /// Structured values from the frontend's widget form.
    pub slots: &'a Map<String, Value>,
    /// Values collected in earlier turns of the session.
    pub session_slots: &'a Map<String, Value>,
    /// The pending clarification's blocked sub-tasks, if any.
    pub pending: Option<&'a [SubTask]>,
    /// Today, for relative dates.
    pub today: NaiveDate,
    /// Id for a new plan.
    pub plan_id: &'a str,
}

/// The recognized intents of a turn (`intent_done` metadata).
#[derive(Debug, Clone, Serialize)]
pub struct IntentResult {
    /// Agent ids, in order of mention.
    pub intent: Vec<String>,
    /// A simple intent, if one was recognized.
    pub simple: Option<SimpleIntent>,
    /// 1.0 for keyword matches, lower for fallbacks (rule mode is deterministic).
    pub confidence: f32,
    /// Why (internal).
    pub reason: String,
    /// The query the planner worked on (rule mode: the query as sent).
    pub rewritten_query: String,
    /// The language of user-facing text.
    pub lang: Lang,
    /// `true` when the turn resumes a pending clarification.
    pub resumes_pending: bool,
}

/// Why a turn is handed to a human.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EscalationReason {
    /// The user asked for a human.
    UserRequested,
    /// Abusive or sensitive content.
    Sensitive,
}

/// What to do with the turn.
#[derive(Debug, Clone)]
pub enum Decision {
    /// Answer without sub-agents.
    Direct(SimpleIntent),
    /// Hand over to a human.
    Escalate(EscalationReason),
    /// Run a plan. `resumed` when it continues the pending clarification.
    Plan {
        /// The plan.
        plan: TaskPlan,
        /// Values found this turn, for the session.
        found: Map<String, Value>,
        /// `true` when resuming pending sub-tasks.
        resumed: bool,
    },
}

/// The planner's answer for one turn.
#[derive(Debug, Clone)]
pub struct TurnPlan {
    /// Intent recognition.
    pub intent: IntentResult,
    /// What to do.
    pub decision: Decision,
}

/// Plans one turn against `registry` (rule mode).
pub fn plan_turn(registry: &Registry, input: TurnInput<'_>) -> TurnPlan {
    let lang = Lang::detect(input.query);
    let lower = input.query.to_lowercase();
    let hits = intent::match_agents(registry, input.query);
    let simple = intent::simple_intent(&lower);
    let mut result = IntentResult {
        intent: hits.iter().map(|(_, id)| id.clone()).collect(),
        simple,
        confidence: if hits.is_empty() && simple.is_none() { 0.3 } else { 1.0 },
        reason: String::new(),
        rewritten_query: input.query.to_string(),
        lang,
        resumes_pending: false,
    };
    let src =
        KeySources { text: input.query, slots: input.slots, session_slots: input.session_slots, today: input.today };

    match simple {
        Some(SimpleIntent::Sensitive) => {
            result.reason = "sensitive content".into();
            return TurnPlan { intent: result, decision: Decision::Escalate(EscalationReason::Sensitive) };
        }
        Some(SimpleIntent::HumanRequested) => {
            result.reason = "the user asked for a human".into();
            return TurnPlan { intent: result, decision: Decision::Escalate(EscalationReason::UserRequested) };
        }
        _ => {}
    }

    if let Some(pending) = input.pending.filter(|p| !p.is_empty()) {
        let pending_agents: Vec<&str> = pending.iter().map(|t| t.assigned_agent.as_str()).collect();
        let names_other_agent = hits.iter().any(|(_, id)| !pending_agents.contains(&id.as_str()));
        if !names_other_agent && supplies_pending(registry, pending, src) {
            let candidates: Vec<Candidate> = pending
                .iter()
                .filter_map(|t| {
                    registry.get_enabled(&t.assigned_agent).map(|agent| Candidate {
                        task_id: Some(t.task_id.clone()),
                        agent: agent.clone(),
                        inputs: t.inputs.clone(),
                    })
                })
                .collect();
            if !candidates.is_empty() {
                let plan_id = pending[0].task_id.split("_task_").next().unwrap_or(input.plan_id).to_string();
                result.intent = candidates.iter().map(|c| c.agent.spec.id.clone()).collect();
                result.reason = "the turn supplies values for the pending clarification".into();
                result.resumes_pending = true;
                let (plan, found) = plan::build(candidates, src, &plan_id, lang, "resume pending sub-tasks".into());
                return TurnPlan { intent: result, decision: Decision::Plan { plan, found, resumed: true } };
            }
        }
    }

    if !hits.is_empty() {
        let candidates: Vec<Candidate> = hits
            .iter()
            .filter_map(|(_, id)| registry.get_enabled(id))
            .map(|agent| {
                let mut inputs = Map::new();
                inputs.insert("message".into(), Value::String(input.query.to_string()));
                Candidate { task_id: None, agent: agent.clone(), inputs }
            })
            .collect();
        result.reason = format!("keyword match: {}", result.intent.join(", "));
        let reasoning = format!("rule planner: {} sub-task(s) from keyword matches", candidates.len());
        let (plan, found) = plan::build(candidates, src, input.plan_id, lang, reasoning);
        return TurnPlan { intent: result, decision: Decision::Plan { plan, found, resumed: false } };
    }

    let simple = simple.unwrap_or(SimpleIntent::OutOfScope);
    result.simple = Some(simple);
    result.reason = match simple {
        SimpleIntent::OutOfScope => "no capability card matches".into(),
        other => format!("simple intent {other:?}"),
    };
    TurnPlan { intent: result, decision: Decision::Direct(simple) }
}

/// `true` when this turn's slots or text give a valid value for a key some pending sub-task lacks.
fn supplies_pending(registry: &Registry, pending: &[SubTask], src: KeySources<'_>) -> bool {
    pending.iter().any(|t| {
        let Some(agent) = registry.get_enabled(&t.assigned_agent) else { return false };
        agent.keys.iter().filter(|k| !t.inputs.contains_key(&k.spec.key)).any(|k| {
            src.slots
                .get(&k.spec.key)
                .map(|v| plan::coerce(k, v))
                .or_else(|| k.extractor.as_ref().and_then(|x| x.extract(src.text, src.today)))
                .is_some_and(|v| k.accepts(&v))
        })
    })
}
