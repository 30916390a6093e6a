//! The rule planner (docs/planning.md): intent recognition, semantic-key extraction and task
//! planning. Pure: no IO, no clock (today's date and the plan id come in [`TurnInput`]).
//!
//! - [`intent`]: capability-card matching and the simple-intent lexicons.
//! - [`plan`]: the [`TaskPlan`] types and the DAG builder shared by fresh plans and resumes.
//! - [`choice`]: the did-you-mean question asked when no card is confident, and its answer.
//!
//! [`plan_turn`] decides one turn: escalate (sensitive / human requested), resume the pending
//! clarification (the turn supplies its values and names no other agent), plan the matched
//! agents, ask which of several plausible agents was meant (did-you-mean), or answer directly
//! (capabilities, greeting, thanks, chit-chat, out of scope).

pub mod choice;
pub mod intent;
pub mod plan;
pub mod proposal;

use chrono::NaiveDate;
use serde::Serialize;
use serde_json::{Map, Value};

pub use crate::registry::Rejection;
pub use choice::{ChoiceCandidate, ChoiceInput, IntentChoice};
pub use intent::{Lang, SimpleIntent};
pub use plan::{
    AuthNeed, Candidate, KeySources, MissKind, RemoteQuestion, RemoteTask, SemanticInfo, SubTask, TaskPlan, TaskStatus,
    TaskType,
};

use crate::matching::OwnSpan;
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
    /// The pending clarification's blocked sub-tasks, if any (already checked for expiry).
    pub pending: Option<&'a [SubTask]>,
    /// The pending did-you-mean question, if any (already checked for expiry).
    pub choice: Option<ChoiceInput<'a>>,
    /// The plan id of the pending clarification (a resume keeps it).
    pub pending_plan_id: Option<&'a str>,
    /// The previous planned turn, for elliptical follow-ups ("那上海呢？").
    pub previous: Option<Previous<'a>>,
    /// Today, for relative dates.
    pub today: NaiveDate,
    /// Id for a new plan.
    pub plan_id: &'a str,
    /// The language to answer in (the query's, or the conversation's for a turn without words).
    pub lang: Lang,
}

/// The last planned turn of the session.
#[derive(Debug, Clone, Copy)]
pub struct Previous<'a> {
    /// Its agents, in order.
    pub intent: &'a [String],
    /// Its (rewritten) query.
    pub query: &'a str,
}

/// The recognized intents of a turn (`intent_done` metadata).
#[derive(Debug, Clone, Serialize)]
pub struct IntentResult {
    /// Ids of the capability cards recognized, in order of mention (`intent` on the wire).
    #[serde(rename = "intent")]
    pub agents: Vec<String>,
    /// A simple intent, if one was recognized.
    pub simple: Option<SimpleIntent>,
    /// The lowest confidence of the recognized cards; 1.0 for a simple intent, 0.3 for nothing
    /// (the model's in LLM mode). Sent with two decimals.
    #[serde(serialize_with = "crate::matching::serialize_confidence")]
    pub confidence: f32,
    /// Why (internal).
    pub reason: String,
    /// The query the planner worked on: the query as sent, or the previous query with the new
    /// values substituted for an elliptical follow-up.
    pub rewritten_query: String,
    /// The language of user-facing text.
    pub lang: Lang,
    /// `true` when the turn continues the pending clarification.
    pub resumes_pending: bool,
    /// The recognizer's best cards with confidence and evidence (selected, uncertain, negated).
    pub candidates: Vec<crate::matching::CardScore>,
    /// The model's one sentence for the user about what it understood (LLM mode; not sent in
    /// `state.intent`): the `intent_done` text of a fresh plan or a direct answer.
    #[serde(skip)]
    pub user_friendly_message: Option<String>,
}

/// Why a turn is handed to a human.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EscalationReason {
    /// The user asked for a human.
    UserRequested,
    /// Dangerous or sensitive content.
    Sensitive,
    /// Thoughts of self-harm: urgent (the escalation card's `priority`).
    SelfHarm,
    /// Insults and abuse.
    Abusive,
    /// `escalate_after_failures` consecutive turns in which no sub-task succeeded.
    RepeatedFailures,
    /// `max_clarification_rounds` asks for the same keys went unanswered.
    ClarificationRoundsExhausted,
    /// The text matched the prompt-injection screen (`guardrails.injection_action: escalate`).
    PromptInjection,
    /// A sub-task failed because its agent's circuit is open (`supervisor.on_circuit_open:
    /// escalate`).
    ServiceUnavailable,
}

/// How a plan relates to the conversation so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PlanMode {
    /// A new request.
    Fresh,
    /// The pending clarification's sub-tasks, with whatever this turn supplied (maybe nothing:
    /// then they are asked for again).
    Resumed,
    /// A new request while a clarification was pending: the pending work is dropped (docs/conversation.md).
    Rerouted,
    /// An elliptical follow-up: the previous intent with this turn's values.
    Elliptical,
    /// The card the user picked in answer to a did-you-mean question, planned on the query that
    /// was asked about.
    Chosen,
}

/// What to do with the turn.
// One per turn, moved once: boxing the plan would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
pub enum Decision {
    /// Answer without sub-agents.
    Direct(SimpleIntent),
    /// Hand over to a human.
    Escalate(EscalationReason),
    /// Drop the pending clarification (cancel words).
    Cancel,
    /// No card is confident but some are plausible: ask which one was meant.
    Choose(IntentChoice),
    /// Run a plan.
    Plan {
        /// The plan.
        plan: TaskPlan,
        /// Values found this turn, for the session.
        found: Map<String, Value>,
        /// How it relates to the conversation.
        mode: PlanMode,
    },
}

/// The planner's answer for one turn.
#[derive(Debug, Clone)]
pub struct TurnDecision {
    /// Intent recognition.
    pub intent: IntentResult,
    /// What to do.
    pub decision: Decision,
}

impl TurnDecision {
    /// The decision for an explicit cancel from the client (no recognition needed).
    pub fn cancel(query: &str, lang: Lang) -> Self {
        let intent = IntentResult {
            agents: Vec::new(),
            simple: None,
            confidence: 1.0,
            reason: "cancelled by the client".into(),
            rewritten_query: query.to_string(),
            lang,
            resumes_pending: false,
            candidates: Vec::new(),
            user_friendly_message: None,
        };
        Self { intent, decision: Decision::Cancel }
    }
}

/// Whether the cancel words of a turn with nothing pending only set a card aside while the turn
/// asks for another: a negated card beside a plausible one ("Never mind the test drive, I just
/// want to know what my old car is worth"). Such a turn is recognized like any other, never
/// acknowledged as a cancel.
fn asks_past_a_negation(recognition: &crate::matching::Recognition) -> bool {
    use crate::matching::recognize::{CardScore, UNCERTAIN};
    recognition.candidates.iter().any(CardScore::negated)
        && (recognition.uncertain.iter().chain(&recognition.candidates))
            .any(|c| !c.negated() && c.confidence >= UNCERTAIN)
}

/// Plans one turn against `registry` (rule mode). The order of the rules:
/// 1. sensitive content or a request for a human -> escalate;
/// 2. with a pending clarification: a turn naming another agent re-routes; cancel words cancel;
///    anything else continues the pending sub-tasks (simple intents such as a greeting are
///    answered and keep it pending);
/// 3. without one: cancel words are acknowledged; matched agents are planned; a turn that only
///    brings new values for the previous intent's keys re-runs that intent (ellipsis);
/// 4. simple intents are answered; anything else is out of scope.
pub fn plan_turn(registry: &Registry, input: TurnInput<'_>) -> TurnDecision {
    let lang = input.lang;
    let lower = input.query.to_lowercase();
    let recognition = intent::recognize(registry, input.query);
    let simple = intent::simple_intent_beside(registry, &lower, &recognition);
    // A greeting addressing someone by a title a card shares ("老师好～" beside a tutoring card)
    // is a greeting, thanks after it too ("王老师好，谢谢您了").
    let greeted = matches!(simple, None | Some(SimpleIntent::Greeting | SimpleIntent::Thanks))
        && intent::greeting_addressed(&lower, &recognition);
    let simple = if greeted { Some(SimpleIntent::Greeting) } else { simple };
    // A greeting, thanks or small talk that only resembles a card in meaning asks for nothing,
    // nor does a thanks naming whom it thanks ("谢谢老师" beside a teacher-message card) or only
    // praising what was done ("Thanks! The cake was amazing").
    let addressed = greeted
        || simple == Some(SimpleIntent::Thanks)
            && (intent::thanks_addressed(&lower, &recognition) || intent::thanks_praise_only(&lower));
    let hits = if (recognition.by_meaning && simple.is_some()) || addressed { Vec::new() } else { recognition.hits() };
    let cancel = intent::is_cancel(registry, &lower);
    let result = intent_result(&recognition, simple, &input);
    let src =
        KeySources { text: input.query, slots: input.slots, session_slots: input.session_slots, today: input.today };
    let decide = decided;

    let escalation = match simple {
        Some(SimpleIntent::SelfHarm) => Some((EscalationReason::SelfHarm, "thoughts of self-harm")),
        Some(SimpleIntent::Sensitive) => Some((EscalationReason::Sensitive, "sensitive content")),
        Some(SimpleIntent::Abusive) => Some((EscalationReason::Abusive, "abusive language")),
        Some(SimpleIntent::HumanRequested) => Some((EscalationReason::UserRequested, "the user asked for a human")),
        _ => None,
    };
    if let Some((reason, why)) = escalation {
        return decide(result, why, Decision::Escalate(reason));
    }

    if let Some(choice) = input.choice.filter(|c| !c.candidates.is_empty()) {
        let answer = ChoiceAnswer { choice, recognition: &recognition, hits: &hits, simple, cancel };
        if let Some(decided) = answer_choice(registry, &input, answer, result.clone()) {
            return decided;
        }
    }

    if let Some(pending) = input.pending.filter(|p| !p.is_empty()) {
        let pending_agents: Vec<&str> = pending.iter().map(|t| t.assigned_agent.as_str()).collect();
        let names_other_agent = hits.iter().any(|(_, id)| !pending_agents.contains(&id.as_str()));
        if names_other_agent {
            let mut plan =
                fresh_plan(registry, &hits, input.query, &recognition.own_spans(input.query), src, input.plan_id, lang);
            plan.0.unhandled = recognition.unhandled.clone();
            plan.0.unresolved = recognition.unresolved.clone();
            let reason = format!("intent switch to {}", result.agents.join(", "));
            return decide(result, &reason, Decision::Plan { plan: plan.0, found: plan.1, mode: PlanMode::Rerouted });
        }
        if cancel {
            return decide(result, "cancel words with a pending clarification", Decision::Cancel);
        }
        if let Some(decided) = answer_confirmation(registry, &input, pending, src, simple, result.clone()) {
            return decided;
        }
        // An A2A agent's own question is answered by whatever the user says next.
        let answers_remote = pending.iter().any(|t| t.remote.is_some()) && !input.query.trim().is_empty();
        let supplies = answers_remote || supplies_pending(registry, pending, src);
        let chat_only = matches!(
            simple,
            Some(SimpleIntent::Greeting | SimpleIntent::Thanks | SimpleIntent::Capabilities | SimpleIntent::ChitChat)
        );
        if supplies || !chat_only {
            if let Some(resumed) = resume(registry, &input, pending, src, supplies, result.clone()) {
                return resumed;
            }
        }
    } else if cancel && hits.is_empty() && !asks_past_a_negation(&recognition) {
        return decide(result, "cancel words, nothing pending", Decision::Cancel);
    }

    if recognition.by_meaning && simple.is_none() {
        // A card found only by meaning yields to the previous intent when the turn just brings
        // new values for it ("那上海呢？" after a weather question).
        if let Some(decided) = elliptical_follow_up(registry, &input, src, result.clone()) {
            return decided;
        }
    }
    if !hits.is_empty() {
        let (mut plan, found) =
            fresh_plan(registry, &hits, input.query, &recognition.own_spans(input.query), src, input.plan_id, lang);
        plan.unhandled = recognition.unhandled.clone();
        plan.unresolved = recognition.unresolved.clone();
        let reason = format!("recognized: {}", result.agents.join(", "));
        return decide(result, &reason, Decision::Plan { plan, found, mode: PlanMode::Fresh });
    }

    if simple.is_none() {
        if let Some(decided) = elliptical_follow_up(registry, &input, src, result.clone()) {
            return decided;
        }
    }
    unplanned(&recognition, input.query, simple, result)
}

/// `result` with its reason, and the decision.
fn decided(mut result: IntentResult, reason: &str, decision: Decision) -> TurnDecision {
    result.reason = reason.to_string();
    TurnDecision { intent: result, decision }
}

/// A turn that only brings new values for the previous intent's keys re-runs that intent
/// (ellipsis); `None` when there is no previous intent or the turn brings none of its keys.
fn elliptical_follow_up(
    registry: &Registry,
    input: &TurnInput<'_>,
    src: KeySources<'_>,
    mut result: IntentResult,
) -> Option<TurnDecision> {
    let (rewritten, candidates) = elliptical(registry, input.previous?, input.query, src)?;
    result.agents = candidates.iter().map(|c| c.agent.spec.id.to_string()).collect();
    result.rewritten_query = rewritten;
    let reasoning = "rule planner: elliptical follow-up of the previous intent".to_string();
    let (plan, found) = plan::build(registry.texts(), candidates, src, input.plan_id, input.lang, reasoning);
    let decision = Decision::Plan { plan, found, mode: PlanMode::Elliptical };
    Some(decided(result, "new values for the previous intent", decision))
}

/// A turn nothing is planned for: a did-you-mean question when plausible cards compete (and the
/// turn is no simple intent), else the simple intent answered directly (or out of scope).
fn unplanned(
    recognition: &crate::matching::Recognition,
    query: &str,
    simple: Option<SimpleIntent>,
    mut result: IntentResult,
) -> TurnDecision {
    if simple.is_none() {
        if let Some(question) = choice::question(recognition, query) {
            let reason = format!("did you mean: {}", question.candidates.join(", "));
            return decided(result, &reason, Decision::Choose(question));
        }
    }
    let simple = simple.unwrap_or(SimpleIntent::OutOfScope);
    result.simple = Some(simple);
    let reason = match simple {
        SimpleIntent::OutOfScope => "no capability card matches".to_string(),
        other => format!("simple intent {other:?}"),
    };
    decided(result, &reason, Decision::Direct(simple))
}

/// What [`answer_choice`] reads of the turn.
struct ChoiceAnswer<'a> {
    choice: ChoiceInput<'a>,
    recognition: &'a crate::matching::Recognition,
    hits: &'a [(usize, String)],
    simple: Option<SimpleIntent>,
    cancel: bool,
}

/// A turn while a did-you-mean question is pending: a pick plans the chosen card on the original
/// query (with this turn's text for its values); cancel words cancel; a request naming another
/// card, or a different plausible set, is planned / asked as a new request (`None`); a simple
/// intent is answered and the question stays; anything else asks the same question again.
fn answer_choice(
    registry: &Registry,
    input: &TurnInput<'_>,
    a: ChoiceAnswer<'_>,
    mut result: IntentResult,
) -> Option<TurnDecision> {
    let ChoiceAnswer { choice: c, recognition, hits, simple, cancel } = a;
    let decide = |mut result: IntentResult, reason: String, decision: Decision| {
        result.reason = reason;
        Some(TurnDecision { intent: result, decision })
    };
    // A request naming a card that was not offered is a new request (unless the pick is explicit).
    let names_other = hits.iter().any(|(_, id)| !c.candidates.contains(id));
    if let Some(agent) = choice::pick(registry, input.query, input.slots, c.candidates, recognition, !names_other) {
        let text = format!("{} {}", c.query, input.query);
        let src =
            KeySources { text: &text, slots: input.slots, session_slots: input.session_slots, today: input.today };
        let (plan, found) = fresh_plan(registry, &[(0, agent.clone())], c.query, &[], src, input.plan_id, input.lang);
        result.agents = vec![agent.clone()];
        result.confidence = 1.0;
        result.rewritten_query = c.query.to_string();
        result.resumes_pending = true;
        return decide(result, format!("picked {agent}"), Decision::Plan { plan, found, mode: PlanMode::Chosen });
    }
    if names_other {
        return None;
    }
    if cancel {
        return decide(result, "cancel words with a pending question".into(), Decision::Cancel);
    }
    if let Some(simple) = simple {
        result.simple = Some(simple);
        return decide(result, format!("simple intent {simple:?}"), Decision::Direct(simple));
    }
    if choice::question(recognition, input.query).is_some_and(|q| q.candidates != c.candidates) {
        return None;
    }
    let again = IntentChoice { query: c.query.to_string(), candidates: c.candidates.to_vec() };
    decide(result, "no pick: ask again".into(), Decision::Choose(again))
}

/// The recognized intents of a turn, before its decision.
fn intent_result(
    recognition: &crate::matching::Recognition,
    simple: Option<SimpleIntent>,
    input: &TurnInput<'_>,
) -> IntentResult {
    IntentResult {
        agents: recognition.hits().into_iter().map(|(_, id)| id).collect(),
        simple,
        confidence: match recognition.selected.iter().map(|s| s.confidence).reduce(f32::min) {
            Some(c) => c,
            None if simple.is_none() => 0.3,
            None => 1.0,
        },
        reason: String::new(),
        rewritten_query: input.query.to_string(),
        lang: input.lang,
        resumes_pending: false,
        candidates: recognition.top(intent::CANDIDATES_SHOWN),
        user_friendly_message: None,
    }
}

/// The pending clarification's sub-tasks, resumed with this turn's values (or asked for again),
/// in the stored plan; `None` when none of their cards is enabled any more.
fn resume(
    registry: &Registry,
    input: &TurnInput<'_>,
    pending: &[SubTask],
    src: KeySources<'_>,
    supplies: bool,
    mut result: IntentResult,
) -> Option<TurnDecision> {
    let candidates: Vec<Candidate> = pending
        .iter()
        .filter_map(|t| {
            registry.get_enabled(&t.assigned_agent).map(|agent| Candidate {
                task_id: Some(t.task_id.clone()),
                agent: agent.clone(),
                inputs: remote_inputs(t, input.query),
                depends_on: Vec::new(),
                remote: t.remote.clone(),
                own_text: None,
            })
        })
        .collect();
    if candidates.is_empty() {
        return None;
    }
    let plan_id = input.pending_plan_id.unwrap_or(input.plan_id).to_string();
    result.agents = candidates.iter().map(|c| c.agent.spec.id.to_string()).collect();
    result.resumes_pending = true;
    result.reason = if supplies {
        "the turn supplies values for the pending clarification"
    } else {
        "ask again for the pending clarification"
    }
    .to_string();
    let (plan, found) =
        plan::build(registry.texts(), candidates, src, &plan_id, input.lang, "resume pending sub-tasks".into());
    Some(TurnDecision { intent: result, decision: Decision::Plan { plan, found, mode: PlanMode::Resumed } })
}

/// The answer to a pending confirmation of remembered values (issue 17 item 4), when one is
/// pending: a short no (`deny` words) drops the request like cancel; a short yes (`affirm`)
/// runs it with the values as they are; small talk is answered and leaves it pending (`None`);
/// anything else plans it again with the values the turn states — the ones still only
/// remembered are asked about again.
fn answer_confirmation(
    registry: &Registry,
    input: &TurnInput<'_>,
    pending: &[SubTask],
    src: KeySources<'_>,
    simple: Option<SimpleIntent>,
    result: IntentResult,
) -> Option<TurnDecision> {
    if pending.iter().all(|t| t.confirm.is_empty()) {
        return None;
    }
    let lower = input.query.trim().to_lowercase();
    let short = !lower.is_empty() && lower.chars().count() <= 12;
    if short && registry.lexicons.matches(crate::text::Lexicon::Deny, &lower) {
        return Some(decided(result, "the user declined the confirmation", Decision::Cancel));
    }
    // "是北京吗？" asks; it does not confirm.
    let question = lower.contains(['吗', '?', '？']);
    let yes = short && !question && registry.lexicons.matches(crate::text::Lexicon::Affirm, &lower);
    let chat = matches!(
        simple,
        Some(SimpleIntent::Greeting | SimpleIntent::Thanks | SimpleIntent::Capabilities | SimpleIntent::ChitChat)
    );
    if !yes && chat {
        return None;
    }
    let tasks: Vec<SubTask> = pending
        .iter()
        .cloned()
        .map(|mut t| {
            if !yes {
                for k in &t.confirm {
                    t.inputs.remove(k);
                }
            }
            t.confirm.clear();
            t
        })
        .collect();
    resume(registry, input, &tasks, src, true, result)
}

/// Plans the given agents (`(offset of the first mention in src.text, id)`) as a fresh request
/// of `query`. With `spans` (per agent, from [`crate::matching::Recognition::own_spans`]), each
/// agent's values come first from its own part of the text ("我从上海出发，想订北京的酒店": 北京;
/// "查下北京天气和上海的酒店": 上海 for the hotel), then from the rest of the text; one card asked
/// for several listed values is fanned out ([`plan::fan_out`]).
pub fn fresh_plan(
    registry: &Registry,
    hits: &[(usize, String)],
    query: &str,
    spans: &[OwnSpan],
    src: KeySources<'_>,
    plan_id: &str,
    lang: Lang,
) -> (TaskPlan, Map<String, Value>) {
    let none = OwnSpan::default();
    let candidates: Vec<Candidate> = hits
        .iter()
        .zip(spans.iter().chain(std::iter::repeat(&none)))
        .filter_map(|((_, id), span)| registry.get_enabled(id).map(|agent| (span, agent)))
        .flat_map(|(span, agent)| {
            let mut inputs = Map::new();
            inputs.insert("message".into(), Value::String(query.to_string()));
            let own_text = span.own.clone();
            let c = Candidate {
                task_id: None,
                agent: agent.clone(),
                inputs,
                depends_on: Vec::new(),
                remote: None,
                own_text,
            };
            // Not when another card is asked for in the same clause ("查下北京天气和上海的酒店").
            let clause = span.clause.clone().unwrap_or(0..src.text.len());
            if hits.iter().filter(|(offset, _)| clause.contains(offset)).count() > 1 {
                return vec![c];
            }
            plan::fan_out(c, src.text, hits.len() == 1, src.today)
        })
        .collect();
    let reasoning = format!("rule planner: {} sub-task(s) from keyword matches", candidates.len());
    plan::build(registry.texts(), candidates, src, plan_id, lang, reasoning)
}

/// An elliptical follow-up: the text brings, for a key of the previous intent, a value that
/// differs from the one remembered. Returns the rewritten query (the previous query with the new
/// values substituted) and the candidates.
fn elliptical(
    registry: &Registry,
    prev: Previous<'_>,
    query: &str,
    src: KeySources<'_>,
) -> Option<(String, Vec<Candidate>)> {
    let agents: Vec<_> = prev.intent.iter().filter_map(|id| registry.get_enabled(id)).collect();
    let mut rewritten = prev.query.to_string();
    let mut changed = false;
    for agent in &agents {
        let said = plan::text_values(agent, |_| true, query, src.today);
        for (key, new) in agent.keys.iter().zip(said) {
            let Some(new) = new else { continue };
            let old = src.session_slots.get(&key.spec.key);
            if old == Some(&new) || key.check(&new, src.today).is_err() {
                continue;
            }
            changed = true;
            if let (Some(Value::String(old)), Value::String(new)) = (old, &new) {
                rewritten = rewritten.replace(old.as_str(), new);
            }
        }
    }
    if !changed {
        return None;
    }
    if rewritten == prev.query {
        rewritten = format!("{} {query}", prev.query);
    }
    let candidates = agents
        .into_iter()
        .map(|agent| {
            let mut inputs = Map::new();
            inputs.insert("message".into(), Value::String(rewritten.clone()));
            Candidate {
                task_id: None,
                agent: agent.clone(),
                inputs,
                depends_on: Vec::new(),
                remote: None,
                own_text: None,
            }
        })
        .collect();
    Some((rewritten, candidates))
}

/// A pending sub-task's inputs for its resume: an A2A task awaiting input gets this turn's text
/// as its message (the answer to its question).
fn remote_inputs(task: &SubTask, query: &str) -> Map<String, Value> {
    let mut inputs = task.inputs.clone();
    if task.remote.is_some() && !query.trim().is_empty() {
        inputs.insert("message".into(), Value::String(query.to_string()));
    }
    inputs
}

/// `true` when `text` or `slots` give a valid value for a key one of `tasks` lacks (e.g. the late
/// answer to a clarification that expired).
pub fn supplies(
    registry: &Registry,
    tasks: &[SubTask],
    text: &str,
    slots: &Map<String, Value>,
    today: NaiveDate,
) -> bool {
    let empty = Map::new();
    supplies_pending(registry, tasks, KeySources { text, slots, session_slots: &empty, today })
}

/// `true` when this turn's slots or text give a valid value for a key some pending sub-task lacks.
fn supplies_pending(registry: &Registry, pending: &[SubTask], src: KeySources<'_>) -> bool {
    pending.iter().any(|t| {
        let Some(agent) = registry.get_enabled(&t.assigned_agent) else { return false };
        let open = |k: &crate::registry::KeyDef| !t.inputs.contains_key(&k.spec.key);
        let said = plan::text_values(agent, open, src.text, src.today);
        agent.keys.iter().zip(said).filter(|(k, _)| open(k)).any(|(k, said)| {
            src.slots.get(&k.spec.key).map(|v| plan::coerce(k, v)).or(said).is_some_and(|v| k.accepts(&v))
        })
    })
}

#[cfg(test)]
mod tests;
