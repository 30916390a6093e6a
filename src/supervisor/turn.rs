//! One turn on a locked session: expire -> decide -> act on the decision, applying the
//! conversation state machine's transitions and performing their effects (cancelling remote
//! tasks, escalating, emitting the `done` event).

use chrono::{DateTime, Utc};
use serde_json::{json, Value};
use tracing::Instrument;

use super::{Supervisor, TurnRequest};
use crate::config::{Access, CircuitOpenAction, InjectionAction};
use crate::conversation::{Dropped, PlanOutcome, Policy, Round};
use crate::events::{EscalationCard, EventSink, Stage, StageEvent};
use crate::llm::decide::{decide, PlannerMeta};
use crate::planner::{
    choice, ChoiceInput, Decision, EscalationReason, IntentChoice, Lang, PlanMode, Previous, SemanticInfo, SubTask,
    TaskPlan, TaskStatus, TurnDecision, TurnInput,
};
use crate::registry::Registry;
use crate::session::Session;
use crate::summarize;

/// What every step of a turn reads: the snapshot, the request, the clock reading, the sink.
pub(super) struct TurnCtx<'a> {
    pub(super) registry: &'a Registry,
    pub(super) req: &'a TurnRequest,
    pub(super) thread_id: &'a str,
    pub(super) lang: Lang,
    pub(super) sink: &'a EventSink,
    pub(super) now: DateTime<Utc>,
    pub(super) policy: Policy,
    /// The turn's deadline (`request_timeout` from its arrival).
    pub(super) deadline: tokio::time::Instant,
}

impl<'a> TurnCtx<'a> {
    pub(super) fn new(
        registry: &'a Registry,
        req: &'a TurnRequest,
        thread_id: &'a str,
        lang: Lang,
        sink: &'a EventSink,
        now: DateTime<Utc>,
        deadline: tokio::time::Instant,
    ) -> Self {
        let policy = Policy::from_settings(&registry.settings);
        Self { registry, req, thread_id, lang, sink, now, policy, deadline }
    }

    /// The catalog message `id` in the turn's language.
    pub(super) fn text(&self, id: &str) -> String {
        self.registry.texts().get(self.lang, id, &[])
    }
}

impl Supervisor {
    /// Runs the turn on a locked session and returns the text of its `done` event.
    pub(super) async fn respond(&self, t: &TurnCtx<'_>, session: &mut Session) -> String {
        t.sink.emit(StageEvent::new(Stage::IntentStarted, t.text("stage-intent-started")));
        let (conversation, expired) = std::mem::take(&mut session.conversation).expire(t.now);
        session.conversation = conversation;
        if let Some(p) = &expired {
            self.cancel_remote(t.registry, p.tasks());
        }
        let mut flagged = None;
        let (turn, meta) = if t.req.cancel {
            (
                TurnDecision::cancel(&t.req.query, t.lang),
                PlannerMeta::rule(Some("cancelled by the client".into()), false, None),
            )
        } else {
            match self.screen(t, session) {
                Screened::Ended(text) => return text,
                Screened::Flagged(guard) => flagged = Some(guard),
                Screened::Clean => {}
            }
            self.decide_turn(t, session).await
        };
        self.emit_intent_done(t, &turn, &meta, expired.is_some(), flagged);
        let today = self.today.unwrap_or_else(|| t.registry.today(t.now));
        if let Some(question) = restart_offer(t, expired.as_ref(), &turn.decision, today) {
            for (k, v) in &t.req.slots {
                session.slots.insert(k.clone(), v.clone());
            }
            let what = expired_what(t, expired.as_ref());
            let text = t.registry.texts().get(t.lang, "answer-expired-restart", &[("tasks", what.into())]);
            return self.ask_choice(t, session, question, Intro::Text(text));
        }
        let note = expired.as_ref().map(|d| expired_what(t, Some(d)));
        let with_note = |text: String| match &note {
            Some(what) => expired_note(t, what, text),
            None => text,
        };
        match turn.decision {
            Decision::Escalate(reason) => {
                let summary = summarize::escalation_summary(t.registry.texts(), reason, &t.req.query, t.lang);
                let pending = session.conversation.pending().map(|p| p.tasks.clone());
                self.escalate(t, session, reason, summary, pending.as_deref(), None)
            }
            Decision::Direct(intent) => {
                let text = with_note(summarize::direct_answer(t.registry, intent, t.lang));
                t.sink.emit(StageEvent::new(Stage::Answer, text.clone()).state("simple_intent", intent));
                text
            }
            Decision::Cancel => {
                let (conversation, dropped) = std::mem::take(&mut session.conversation).cancel();
                session.conversation = conversation;
                let was_choice = matches!(dropped, Some(Dropped::Choice(_)));
                let tasks = dropped.map(Dropped::into_tasks);
                if let Some(tasks) = &tasks {
                    self.cancel_remote(t.registry, tasks);
                }
                let text = if was_choice {
                    t.text("cancel-choice")
                } else {
                    summarize::cancel_text(t.registry.texts(), tasks.as_deref(), t.lang)
                };
                let text = with_note(text);
                t.sink.emit(StageEvent::new(Stage::Answer, text.clone()).state("cancelled", tasks));
                text
            }
            Decision::Plan { plan, found, mode } => {
                self.planned(t, session, Planned { plan, found, mode }, note.as_deref()).await
            }
            Decision::Choose(question) => {
                let intro = match &note {
                    Some(what) => Intro::AfterExpiry(what.clone()),
                    None => Intro::Question,
                };
                self.ask_choice(t, session, question, intro)
            }
        }
    }

    /// A did-you-mean question: counts its round (escalating when exhausted), stores it as the
    /// pending choice and ends the turn with its `semantic_info` (`type: "intent"`).
    fn ask_choice(&self, t: &TurnCtx<'_>, session: &mut Session, question: IntentChoice, intro: Intro) -> String {
        let offered = choice::offered(t.registry, &question.candidates, t.lang);
        if offered.is_empty() {
            let text = summarize::direct_answer(t.registry, crate::planner::SimpleIntent::OutOfScope, t.lang);
            let text = match intro {
                Intro::AfterExpiry(what) => expired_note(t, &what, text),
                _ => text,
            };
            t.sink.emit(StageEvent::new(Stage::Answer, text.clone()));
            return text;
        }
        let mut conv = std::mem::take(&mut session.conversation);
        if conv.pending().is_some() {
            let (next, dropped) = conv.reroute();
            conv = next;
            if let Some(dropped) = dropped {
                self.cancel_remote(t.registry, dropped.tasks());
            }
        }
        let candidates: Vec<String> = offered.iter().map(|c| c.agent_id.clone()).collect();
        let round = match conv.choice_round(&candidates, &t.policy) {
            Round::Ask(n) => n,
            Round::Exhausted => {
                session.conversation = conv;
                let reason = EscalationReason::ClarificationRoundsExhausted;
                let summary = summarize::escalation_summary(t.registry.texts(), reason, &question.query, t.lang);
                return self.escalate(t, session, reason, summary, None, None);
            }
        };
        let id = format!("choice_{}", &uuid::Uuid::new_v4().simple().to_string()[..12]);
        let conv = conv.asked_choice(id, question.query, candidates, round, t.now, &t.policy);
        let (choice_id, expires_at) = conv.choice().map(|c| (c.choice_id.clone(), c.expires_at)).unzip();
        session.conversation = conv;
        let question_text = || summarize::choice_text(t.registry.texts(), &offered, t.lang);
        // The note of an expired clarification goes into the event the user reads.
        let text = match intro {
            Intro::Question => question_text(),
            Intro::AfterExpiry(what) => expired_note(t, &what, question_text()),
            Intro::Text(text) => text,
        };
        let info = summarize::choice_info(t.registry.texts(), &choice_id.unwrap_or_default(), offered, t.lang);
        let mut done = StageEvent::new(Stage::Answer, text.clone()).semantic_info(&[info]).state("did_you_mean", round);
        done.payload.clarification_expires_at = expires_at;
        t.sink.emit(done);
        text
    }

    /// The planner's decision (the model's in LLM mode) for this turn of `session`.
    async fn decide_turn(&self, t: &TurnCtx<'_>, session: &Session) -> (TurnDecision, PlannerMeta) {
        let conv = &session.conversation;
        let plan_id = format!("plan_{}", &uuid::Uuid::new_v4().simple().to_string()[..12]);
        let pending = conv.pending();
        let choice = conv.choice().map(|c| ChoiceInput { query: &c.query, candidates: &c.candidates });
        let input = TurnInput {
            query: &t.req.query,
            slots: &t.req.slots,
            session_slots: &session.slots,
            pending: pending.map(|p| p.tasks.as_slice()),
            pending_plan_id: pending.map(|p| p.plan_id.as_str()),
            choice,
            previous: (!conv.last_intent.is_empty())
                .then_some(Previous { intent: &conv.last_intent, query: &conv.last_query }),
            today: self.today.unwrap_or_else(|| t.registry.today(t.now)),
            plan_id: &plan_id,
            lang: t.lang,
        };
        let started = std::time::Instant::now();
        let decided = decide(self.llm.as_deref(), t.registry, input, &session.history)
            .instrument(tracing::info_span!("stage", name = "plan"))
            .await;
        crate::metrics::stage("plan", started.elapsed());
        tracing::debug!(planner = decided.1.planner, "turn planned");
        decided
    }

    /// The prompt-injection screen (`guardrails`) of the turn's text: with `refuse` the turn ends
    /// with a polite answer, with `escalate` it is handed to a human (nothing is planned either
    /// way); with `flag` it goes on, marked.
    fn screen(&self, t: &TurnCtx<'_>, session: &mut Session) -> Screened {
        let screen = &t.registry.screen;
        let Some(pattern) = screen.check(&t.req.query) else { return Screened::Clean };
        let guard = json!({ "action": screen.action, "pattern": pattern });
        tracing::warn!(pattern, action = ?screen.action, "the user's text matched the prompt-injection screen");
        crate::metrics::rejected("prompt_injection");
        if screen.action == InjectionAction::Flag {
            return Screened::Flagged(guard);
        }
        t.sink.emit(StageEvent::new(Stage::IntentDone, t.text("stage-intent-understood")).state("guardrail", &guard));
        if screen.action == InjectionAction::Escalate {
            let reason = EscalationReason::PromptInjection;
            let summary = summarize::escalation_summary(t.registry.texts(), reason, &t.req.query, t.lang);
            let pending = session.conversation.pending().map(|p| p.tasks.clone());
            let text = self.escalate(t, session, reason, summary, pending.as_deref(), None);
            return Screened::Ended(text);
        }
        let text = t.text("guard-refused");
        t.sink.emit(StageEvent::new(Stage::Answer, text.clone()).state("guardrail", guard));
        Screened::Ended(text)
    }

    /// The `intent_done` event: what was understood, by which planner (and the screen's flag).
    fn emit_intent_done(
        &self,
        t: &TurnCtx<'_>,
        turn: &TurnDecision,
        meta: &PlannerMeta,
        expired: bool,
        flagged: Option<Value>,
    ) {
        let mode = match &turn.decision {
            Decision::Plan { mode, .. } => Some(*mode),
            _ => None,
        };
        let text = match (&turn.decision, mode) {
            (_, Some(PlanMode::Rerouted)) => t.text("stage-intent-rerouted"),
            (_, Some(PlanMode::Resumed)) => t.text("stage-intent-resumed"),
            (_, Some(PlanMode::Chosen)) => t.text("stage-intent-chosen"),
            (Decision::Choose(_), _) => t.text("stage-intent-choice"),
            // The model's own sentence (LLM mode) says more than the count.
            (Decision::Plan { .. } | Decision::Direct(_), _) if turn.intent.user_friendly_message.is_some() => {
                turn.intent.user_friendly_message.clone().unwrap_or_default()
            }
            (Decision::Plan { plan, .. }, _) => {
                t.registry.texts().get(t.lang, "stage-intent-found", &[("count", plan.total_tasks.into())])
            }
            _ => t.text("stage-intent-understood"),
        };
        log_decision(t, turn, meta, mode);
        t.sink.emit(
            StageEvent::new(Stage::IntentDone, text)
                .state("intent", &turn.intent)
                .state("planner", meta.planner)
                .state("degraded", meta.degraded)
                .state("planner_reason", &meta.reason)
                .state("intent_cache_hit", meta.cache_hit)
                .state("mode", mode)
                .state("pending_expired", expired)
                .state("guardrail", flagged),
        );
    }

    /// A plan: re-route, count the ask round, run it, then record the new state and the failure
    /// count; escalates when rounds or failures are exhausted.
    async fn planned(&self, t: &TurnCtx<'_>, session: &mut Session, p: Planned, expired: Option<&str>) -> String {
        let Planned { mut plan, found, mode } = p;
        self.gate_writes(t, &mut plan);
        let mut conv = std::mem::take(&mut session.conversation);
        if mode == PlanMode::Rerouted {
            let (next, dropped) = conv.reroute();
            conv = next;
            if let Some(dropped) = dropped {
                self.cancel_remote(t.registry, dropped.tasks());
            }
        }
        let runs_something = plan.runnable().next().is_some();
        let round = match conv.ask_round(mode, runs_something, &plan.missing_semantic_keys, &t.policy) {
            Round::Ask(n) => n,
            Round::Exhausted => {
                session.conversation = conv;
                let summary = summarize::blocked_text(t.registry, &plan, t.lang);
                let blocked: Vec<SubTask> = plan.blocked().cloned().collect();
                return self.escalate(
                    t,
                    session,
                    EscalationReason::ClarificationRoundsExhausted,
                    summary,
                    Some(&blocked),
                    None,
                );
            }
        };
        let (text, summarizer, report) = self.run_plan(t, &mut plan, found, session).await;
        let outcome = plan_outcome(&plan, mode, &t.req.query);
        let dispatched =
            plan.sub_tasks.iter().filter(|s| matches!(s.status, TaskStatus::Done | TaskStatus::Failed)).count();
        let succeeded = plan.sub_tasks.iter().filter(|s| s.status == TaskStatus::Done).count();
        let (conv, escalate) =
            conv.planned(outcome, round, t.now, &t.policy).record_dispatch(dispatched, succeeded, &t.policy);
        session.conversation = conv;
        let text = match expired {
            Some(what) => expired_note(t, what, text),
            None => text,
        };
        if escalate {
            let pending = session.conversation.pending().map(|p| p.tasks.clone());
            return self.escalate(t, session, EscalationReason::RepeatedFailures, text, pending.as_deref(), None);
        }
        if report.circuit_open > 0 && t.registry.settings.on_circuit_open == CircuitOpenAction::Escalate {
            // A service is down: the answer says what was done, then offers a human.
            let reason = EscalationReason::ServiceUnavailable;
            let summary = summarize::escalation_summary(t.registry.texts(), reason, &t.req.query, t.lang);
            let pending = session.conversation.pending().map(|p| p.tasks.clone());
            return self.escalate(t, session, reason, summary, pending.as_deref(), Some(&text));
        }
        let mut asks = plan.semantic_info.clone();
        let choice = self.ask_unresolved(t, session, &plan);
        let asked = choice.is_some();
        asks.extend(choice);
        let plan = std::sync::Arc::new(plan);
        let mut done = StageEvent::new(Stage::Answer, text.clone())
            .agent("summarize")
            .plan(plan.clone())
            .state("summarizer", summarizer);
        if asked {
            done = done.state("did_you_mean", 1);
        }
        if !asks.is_empty() {
            done = done.semantic_info(&asks);
        }
        let questions = plan.remote_questions();
        if !questions.is_empty() {
            done = done.questions(&questions);
        }
        if !asks.is_empty() || !questions.is_empty() {
            done.payload.clarification_expires_at = session.conversation.waiting_until();
        }
        t.sink.emit(done);
        text
    }

    /// The first part of the plan's query no card clearly meant (`plan.unresolved`), as a
    /// did-you-mean question stored beside the plan (see [`Conversation::planned_with_choice`]):
    /// its `semantic_info` entry (`type: "intent"`, the `intent_picker` widget, the key described
    /// by a question naming the part: "“我们能不能再多住一天”是指哪项服务？"), or `None` when
    /// there is no such part, none of its cards is enabled, or blocked sub-tasks already wait for
    /// the user (the summary still names the part).
    fn ask_unresolved(&self, t: &TurnCtx<'_>, session: &mut Session, plan: &TaskPlan) -> Option<SemanticInfo> {
        let part = plan.unresolved.first()?;
        let offered = choice::offered(t.registry, &part.candidates, t.lang);
        if offered.is_empty() {
            return None;
        }
        let id = format!("choice_{}", &uuid::Uuid::new_v4().simple().to_string()[..12]);
        let candidates = offered.iter().map(|c| c.agent_id.clone()).collect();
        let conv = std::mem::take(&mut session.conversation);
        session.conversation = conv.planned_with_choice(id.clone(), part.part.clone(), candidates, t.now, &t.policy);
        // Stored only when nothing else waited (`planned_with_choice` decides).
        if session.conversation.choice().is_none_or(|c| c.choice_id != id) {
            return None;
        }
        let texts = t.registry.texts();
        let mut info = summarize::choice_info(texts, &id, offered, t.lang);
        info.key_descriptions =
            vec![texts.get(t.lang, "choice-part-description", &[("part", part.part.as_str().into())])];
        Some(info)
    }

    /// Blocks the plan's `write` sub-tasks the caller may not run (`auth`): never dispatched,
    /// told in `semantic_info` (`type: "auth"`).
    fn gate_writes(&self, t: &TurnCtx<'_>, plan: &mut TaskPlan) {
        let (registry, principal) = (t.registry, t.req.principal.as_deref());
        let unverified = registry.auth.settings.unverified_writes;
        let denied = |agent_id: &str| {
            let agent = registry.get(agent_id).filter(|a| a.spec.access == Access::Write)?;
            let scopes = &agent.spec.scopes;
            crate::auth::check_write(principal, scopes, unverified).err().map(|d| (d, scopes.clone()))
        };
        let blocked = crate::planner::plan::block_denied(registry.texts(), plan, t.lang, &denied);
        if blocked > 0 {
            let user = principal.map(|p| p.user_id.as_str());
            tracing::warn!(blocked, user, "write sub-tasks blocked: the caller may not run them");
        }
    }

    /// Ends the turn with an `escalated` event carrying the escalation card, and records the
    /// hand-over in the conversation. `answer`, if given, comes before the hand-over text.
    fn escalate(
        &self,
        t: &TurnCtx<'_>,
        session: &mut Session,
        reason: EscalationReason,
        summary: String,
        pending: Option<&[SubTask]>,
        answer: Option<&str>,
    ) -> String {
        session.conversation = std::mem::take(&mut session.conversation).escalated(reason, t.now);
        let text = summarize::escalation_text(t.registry.texts(), reason, t.lang);
        let text = match answer {
            Some(answer) => format!("{answer}\n{text}"),
            None => text,
        };
        let card = EscalationCard {
            reason,
            summary,
            last_turns: serde_json::to_value(&session.history).unwrap_or_default(),
            pending: pending.map(<[SubTask]>::to_vec),
            user_id: session.user_id.clone(),
            thread_id: session.thread_id.clone(),
            priority: summarize::escalation_priority(reason),
        };
        t.sink.emit(StageEvent::new(Stage::Escalated, text.clone()).escalation(card));
        text
    }
}

/// What the prompt-injection screen made of a turn.
enum Screened {
    /// No pattern matched.
    Clean,
    /// A pattern matched and the action is `flag`: `intent_done`'s `state.guardrail`.
    Flagged(Value),
    /// The turn ended (refused or escalated): the text of its `done`.
    Ended(String),
}

/// A plan the planner decided on.
struct Planned {
    plan: TaskPlan,
    found: serde_json::Map<String, Value>,
    mode: PlanMode,
}

/// What the conversation keeps of a plan that ran.
fn plan_outcome(plan: &TaskPlan, mode: PlanMode, query: &str) -> PlanOutcome {
    PlanOutcome {
        mode,
        plan_id: plan.plan_id.clone(),
        blocked: plan.blocked().cloned().collect(),
        missing_keys: plan.missing_semantic_keys.clone(),
        agents: plan.sub_tasks.iter().map(|s| s.assigned_agent.clone()).collect(),
        query: plan
            .sub_tasks
            .first()
            .and_then(|s| s.inputs.get("message"))
            .and_then(Value::as_str)
            .unwrap_or(query)
            .to_string(),
    }
}

/// How a did-you-mean question's answer begins.
enum Intro {
    /// The numbered question.
    Question,
    /// The note that an earlier request (named) expired, then the question.
    AfterExpiry(String),
    /// This text instead of the question (the offer to restart an expired request).
    Text(String),
}

/// `text` after the note that the earlier request (`what`) expired.
fn expired_note(t: &TurnCtx<'_>, what: &str, text: String) -> String {
    t.registry.texts().get(t.lang, "answer-expired-note", &[("tasks", what.into()), ("answer", text.into())])
}

/// What an expired clarification or question was about, for the user: its sub-tasks'
/// descriptions, or the query asked about.
fn expired_what(t: &TurnCtx<'_>, expired: Option<&Dropped>) -> String {
    match expired {
        Some(Dropped::Keys(p)) => {
            let mut what: Vec<&str> = p.tasks.iter().map(|s| s.description.as_str()).collect();
            what.dedup();
            what.join(&t.text("list-separator"))
        }
        Some(Dropped::Choice(c)) => c.query.clone(),
        None => String::new(),
    }
}

/// The late answer to a clarification that expired this turn: when the turn plans nothing else
/// (out of scope, or a did-you-mean question) but brings values for the expired sub-tasks, the
/// user is offered to start them again with those values — a one-option question on the
/// original query with the late text, accepted by "是" / "ok".
fn restart_offer(
    t: &TurnCtx<'_>,
    expired: Option<&Dropped>,
    decision: &Decision,
    today: chrono::NaiveDate,
) -> Option<IntentChoice> {
    let Some(Dropped::Keys(p)) = expired else { return None };
    let nothing_else =
        matches!(decision, Decision::Direct(crate::planner::SimpleIntent::OutOfScope) | Decision::Choose(_));
    if !nothing_else || !crate::planner::supplies(t.registry, &p.tasks, &t.req.query, &t.req.slots, today) {
        return None;
    }
    let mut candidates: Vec<String> = Vec::new();
    for task in &p.tasks {
        if !candidates.contains(&task.assigned_agent) {
            candidates.push(task.assigned_agent.clone());
        }
    }
    let original = p.tasks.first().and_then(|s| s.inputs.get("message")).and_then(Value::as_str).unwrap_or_default();
    let query = match (original.trim(), t.req.query.trim()) {
        ("", late) => late.to_string(),
        (original, "") => original.to_string(),
        (original, late) => format!("{original}，{late}"),
    };
    Some(IntentChoice { query, candidates })
}

/// One INFO line per routing decision, with the trace id: the intents, the decision, the plan
/// mode (re-route, resume, ...), the planner and whether it was degraded.
fn log_decision(t: &TurnCtx<'_>, turn: &TurnDecision, meta: &PlannerMeta, mode: Option<PlanMode>) {
    let decision = match &turn.decision {
        Decision::Escalate(_) => "escalate",
        Decision::Direct(_) => "direct",
        Decision::Cancel => "cancel",
        Decision::Plan { .. } => "plan",
        Decision::Choose(_) => "choose",
    };
    let simple = turn.intent.simple.map(|s| format!("{s:?}"));
    tracing::info!(
        trace_id = t.req.trace_id.as_deref().unwrap_or_default(),
        intents = ?turn.intent.agents,
        simple = simple.as_deref().unwrap_or("-"),
        decision,
        mode = ?mode,
        planner = meta.planner,
        degraded = meta.degraded,
        reason = %turn.intent.reason,
        planner_reason = meta.reason.as_deref().unwrap_or("-"),
        "routing decision"
    );
}
