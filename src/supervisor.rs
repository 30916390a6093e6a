//! The turn pipeline (DESIGN.md sections 4 and 7): session load -> intent (+ rewrite with memory)
//! -> direct answer, cancel, escalation or plan -> semantic-key check -> DAG execution ->
//! summarize -> session save, one stage event per arrow.
//!
//! [`Supervisor::start_turn`] returns at once with the turn's event receiver; the turn runs in its
//! own task, so a client that disconnects does not cut it short: its results are still saved.
//! The conversation lifecycle lives here because it needs the clock and the settings: pending
//! clarifications expire after `clarification_timeout`, are asked for at most
//! `max_clarification_rounds` times, and `escalate_after_failures` failed turns in a row hand the
//! user to a human.
//! **Invariant:** the stream ends with exactly one `done` event, even if the turn task panics.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};
use tokio::sync::mpsc;
use tracing::Instrument;

use crate::events::{EventSink, Stage, StageEvent};
use crate::executor::{Executor, TurnContext};
use crate::llm::{LlmPlanner, LlmSettings};
use crate::planner::proposal::build_from_proposal;
use crate::planner::{
    self, Decision, EscalationReason, Lang, PlanMode, Previous, SimpleIntent, SubTask, TaskPlan, TaskStatus, TurnInput,
};
use crate::registry::{Registry, RegistryHandle};
use crate::session::{PendingClarification, Session, SessionStore, Turn};
use crate::summarize;

/// One user turn, as validated by the API.
#[derive(Debug, Clone)]
pub struct TurnRequest {
    /// The user's text (may be empty when `slots` are given).
    pub query: String,
    /// The user.
    pub user_id: String,
    /// The thread; a new one is made when absent.
    pub thread_id: Option<String>,
    /// Values from the frontend's widget form.
    pub slots: Map<String, Value>,
    /// The W3C trace id to continue (from the client's `traceparent`), if any.
    pub trace_id: Option<String>,
}

/// The supervisor: registry, sessions, executor and (in LLM mode) the model planner, shared by
/// every request.
#[derive(Debug, Clone)]
pub struct Supervisor {
    /// The serving registry.
    pub registry: Arc<RegistryHandle>,
    /// Sessions.
    pub sessions: Arc<SessionStore>,
    /// Runs plans.
    pub executor: Executor,
    /// The LLM planner, when `LLM_BASE_URL` + `LLM_MODEL` are set.
    pub llm: Option<Arc<LlmPlanner>>,
    /// Turns in flight (a shutdown waits for their session writes).
    pub turns: tokio_util::task::TaskTracker,
}

/// A started turn.
pub struct TurnStream {
    /// The thread id (new when the request had none).
    pub thread_id: String,
    /// The session id.
    pub session_id: String,
    /// The turn's events, ending with one `done`.
    pub events: mpsc::UnboundedReceiver<StageEvent>,
}

/// `sess_` + 24 hex digits of SHA-256 over `user_id` and `thread_id`: stable per session.
pub fn session_id(user_id: &str, thread_id: &str) -> String {
    let digest = Sha256::new()
        .chain_update(user_id.as_bytes())
        .chain_update([0u8])
        .chain_update(thread_id.as_bytes())
        .finalize();
    let hex: String = digest.iter().take(12).map(|b| format!("{b:02x}")).collect();
    format!("sess_{hex}")
}

fn pick(lang: Lang, zh: &str, en: &str) -> String {
    match lang {
        Lang::Zh => zh.to_string(),
        Lang::En => en.to_string(),
    }
}

impl Supervisor {
    /// A supervisor over `registry` and `sessions`.
    pub fn new(registry: Arc<RegistryHandle>, sessions: Arc<SessionStore>) -> Self {
        Self {
            registry,
            sessions,
            executor: Executor::default(),
            llm: None,
            turns: tokio_util::task::TaskTracker::new(),
        }
    }

    /// Plans and summarizes with the model at `settings` (the rule planner and the template
    /// summary remain the fallback).
    pub fn with_llm(mut self, settings: Option<LlmSettings>) -> Self {
        self.llm = settings.map(|s| Arc::new(LlmPlanner::new(s)));
        self
    }

    /// Starts a turn in its own task and returns its event stream.
    pub fn start_turn(&self, req: TurnRequest) -> TurnStream {
        let thread_id = req.thread_id.clone().unwrap_or_else(|| format!("th_{}", uuid::Uuid::new_v4().simple()));
        let session_id = session_id(&req.user_id, &thread_id);
        let (sink, events) = EventSink::new(&session_id, &thread_id);
        let this = self.clone();
        let tid = thread_id.clone();
        self.turns.spawn(async move {
            let lang = Lang::detect(&req.query);
            let trace_id = req.trace_id.clone().unwrap_or_else(|| uuid::Uuid::new_v4().simple().to_string());
            let span = tracing::info_span!("turn", trace_id = %trace_id, thread = %tid);
            let mut req = req;
            req.trace_id = Some(trace_id);
            let inner = tokio::spawn(
                {
                    let sink = sink.clone();
                    async move { this.run_turn(req, tid, sink).await }
                }
                .instrument(span),
            );
            if let Err(e) = inner.await {
                tracing::error!(error = %e, "turn task failed");
            }
            if !sink.is_done() {
                let text = pick(
                    lang,
                    "抱歉，处理您的请求时出现了问题，请稍后再试。",
                    "Sorry, something went wrong while handling your request. Please try again.",
                );
                sink.emit(StageEvent::new(Stage::Error, text));
            }
            crate::metrics::request(sink.done_stage().map_or("error", Stage::as_str));
        });
        TurnStream { thread_id, session_id, events }
    }

    async fn run_turn(&self, req: TurnRequest, thread_id: String, sink: EventSink) {
        let registry = self.registry.load();
        let lang = Lang::detect(&req.query);
        let started = std::time::Instant::now();
        let opened = self.sessions.open(&req.user_id, &thread_id).await;
        crate::metrics::stage("session_load", started.elapsed());
        let mut guard = match opened {
            Ok(g) => g,
            Err(e) => {
                tracing::error!(error = %e, thread = %thread_id, "session store failed");
                let text = pick(
                    lang,
                    "抱歉，会话服务暂时不可用，请稍后再试。",
                    "Sorry, conversations are unavailable right now. Please try again later.",
                );
                sink.emit(
                    StageEvent::new(Stage::Error, text)
                        .state("error", json!({ "code": "session_store", "message": e.to_string() })),
                );
                return;
            }
        };
        let turn_started = std::time::Instant::now();
        let answer = self.converse(&registry, &req, &thread_id, &mut guard.session, lang, &sink).await;
        tracing::info!(
            outcome = sink.done_stage().map_or("none", Stage::as_str),
            elapsed_ms = turn_started.elapsed().as_millis() as u64,
            "turn finished"
        );
        let turn = Turn {
            turn_id: uuid::Uuid::new_v4().simple().to_string(),
            query: req.query,
            answer,
            at: Utc::now().to_rfc3339(),
        };
        guard.session.push_turn(turn, registry.settings.memory_max_history as usize);
        let started = std::time::Instant::now();
        let saved = guard.save().await;
        crate::metrics::stage("session_save", started.elapsed());
        if let Err(e) = saved {
            tracing::error!(error = %e, thread = %thread_id, "session save failed");
        }
    }

    /// Runs the pipeline on a locked session and returns the text of the `done` event.
    async fn converse(
        &self,
        registry: &Registry,
        req: &TurnRequest,
        thread_id: &str,
        session: &mut Session,
        lang: Lang,
        sink: &EventSink,
    ) -> String {
        sink.emit(StageEvent::new(
            Stage::IntentStarted,
            pick(lang, "正在理解您的需求…", "Understanding your request…"),
        ));
        let now = Utc::now();
        let settings = &registry.settings;

        // A clarification past its timeout is dropped before planning; the user is told.
        let expired = session.pending.as_ref().is_some_and(|p| {
            DateTime::parse_from_rfc3339(&p.expires_at).map(|t| t.with_timezone(&Utc) <= now).unwrap_or(false)
        });
        if expired {
            // Planned afresh: neither the pending work nor its intent carries over.
            if let Some(p) = session.pending.take() {
                self.cancel_remote(registry, &p.tasks);
            }
            session.current_intent.clear();
        }
        let pending_before = session.pending.clone();
        let previous_intent = session.current_intent.clone();
        let previous_query = session.current_query.clone();
        let plan_id = format!("plan_{}", &uuid::Uuid::new_v4().simple().to_string()[..12]);
        let history = session.history.clone();
        let input = TurnInput {
            query: &req.query,
            slots: &req.slots,
            session_slots: &session.slots,
            pending: pending_before.as_ref().map(|p| p.tasks.as_slice()),
            previous: (!previous_intent.is_empty())
                .then_some(Previous { intent: &previous_intent, query: &previous_query }),
            today: chrono::Local::now().date_naive(),
            plan_id: &plan_id,
        };
        let started = std::time::Instant::now();
        let (turn, planner_meta) =
            self.decide(registry, input, &history).instrument(tracing::info_span!("stage", name = "plan")).await;
        crate::metrics::stage("plan", started.elapsed());
        tracing::debug!(planner = planner_meta["planner"].as_str().unwrap_or_default(), "turn planned");
        let mode = match &turn.decision {
            Decision::Plan { mode, .. } => Some(mode.to_owned()),
            _ => None,
        };
        let intent_text = match (&turn.decision, mode) {
            (_, Some(PlanMode::Rerouted)) => pick(
                lang,
                "好的，先放下之前未完成的请求，为您处理新的需求。",
                "OK, leaving the earlier request aside for your new one.",
            ),
            (_, Some(PlanMode::Resumed)) => {
                pick(lang, "收到，继续处理您之前的请求。", "Got it, continuing your earlier request.")
            }
            (Decision::Plan { plan, .. }, _) => match lang {
                Lang::Zh => format!("识别到 {} 项需求。", plan.total_tasks),
                Lang::En => format!("Found {} request(s).", plan.total_tasks),
            },
            _ => pick(lang, "已理解您的需求。", "Understood."),
        };
        sink.emit(
            StageEvent::new(Stage::IntentDone, intent_text)
                .state("intent", &turn.intent)
                .state("planner", &planner_meta["planner"])
                .state("degraded", &planner_meta["degraded"])
                .state("planner_reason", &planner_meta["reason"])
                .state("intent_cache_hit", &planner_meta["cache_hit"])
                .state("mode", mode)
                .state("pending_expired", expired),
        );
        let expired_note = expired.then(|| {
            pick(
                lang,
                "（您之前的请求等待补充信息超时，已自动取消。）\n",
                "(Your earlier request timed out waiting for details and was dropped.)\n",
            )
        });
        let with_note = |text: String| match &expired_note {
            Some(note) => format!("{note}{text}"),
            None => text,
        };

        match turn.decision {
            Decision::Escalate(reason) => {
                let summary = pick(lang, &format!("用户请求：{}", req.query), &format!("User request: {}", req.query));
                let pending = session.pending.as_ref().map(|p| p.tasks.clone());
                self.escalate(reason, summary, pending.as_deref(), session, lang, sink)
            }
            Decision::Direct(intent) => {
                let text = with_note(summarize::direct_answer(registry, intent, lang));
                sink.emit(StageEvent::new(Stage::Answer, text.clone()).state("simple_intent", intent));
                text
            }
            Decision::Cancel => {
                let dropped = session.pending.take();
                if let Some(p) = &dropped {
                    self.cancel_remote(registry, &p.tasks);
                }
                session.current_intent.clear();
                let text = with_note(summarize::cancel_text(dropped.as_ref().map(|p| p.tasks.as_slice()), lang));
                sink.emit(StageEvent::new(Stage::Answer, text.clone()).state("cancelled", dropped.map(|p| p.tasks)));
                text
            }
            Decision::Plan { mut plan, found, mode } => {
                if let (PlanMode::Rerouted, Some(p)) = (mode, &pending_before) {
                    self.cancel_remote(registry, &p.tasks);
                }
                // Asked again for exactly the same keys: count the round, escalate when exhausted.
                let same_keys = mode == PlanMode::Resumed
                    && plan.runnable().next().is_none()
                    && pending_before.as_ref().is_some_and(|p| sorted(&p.keys) == sorted(&plan.missing_semantic_keys));
                let rounds = match (&pending_before, same_keys) {
                    (Some(p), true) => p.rounds + 1,
                    _ => 1,
                };
                if same_keys && rounds > settings.max_clarification_rounds {
                    let summary = summarize::blocked_text(registry, &plan, lang);
                    let blocked: Vec<SubTask> = plan.blocked().cloned().collect();
                    session.pending = None;
                    return self.escalate(
                        EscalationReason::ClarificationRoundsExhausted,
                        summary,
                        Some(&blocked),
                        session,
                        lang,
                        sink,
                    );
                }
                let (text, summarizer) =
                    self.run_plan(registry, &mut plan, found, req, thread_id, session, lang, sink).await;
                let blocked: Vec<SubTask> = plan.blocked().cloned().collect();
                session.pending = (!blocked.is_empty()).then(|| PendingClarification {
                    plan_id: plan.plan_id.clone(),
                    created_at: pending_before
                        .as_ref()
                        .filter(|_| mode == PlanMode::Resumed)
                        .map_or_else(|| now.to_rfc3339(), |p| p.created_at.clone()),
                    expires_at: (now
                        + chrono::Duration::from_std(settings.clarification_timeout.0)
                            .unwrap_or(chrono::Duration::MAX))
                    .to_rfc3339(),
                    rounds,
                    keys: plan.missing_semantic_keys.clone(),
                    tasks: blocked,
                });
                session.current_intent = plan.sub_tasks.iter().map(|t| t.assigned_agent.clone()).collect();
                if mode != PlanMode::Resumed {
                    session.current_query = plan
                        .sub_tasks
                        .first()
                        .and_then(|t| t.inputs.get("message"))
                        .and_then(Value::as_str)
                        .unwrap_or(&req.query)
                        .to_string();
                }

                // Failure counting: only turns that dispatched something count.
                let dispatched =
                    plan.sub_tasks.iter().filter(|t| matches!(t.status, TaskStatus::Done | TaskStatus::Failed)).count();
                let succeeded = plan.sub_tasks.iter().filter(|t| t.status == TaskStatus::Done).count();
                if dispatched > 0 {
                    session.failures = if succeeded == 0 { session.failures + 1 } else { 0 };
                }
                let text = with_note(text);
                if session.failures >= settings.escalate_after_failures {
                    session.failures = 0;
                    let pending = session.pending.as_ref().map(|p| p.tasks.clone());
                    return self.escalate(
                        EscalationReason::RepeatedFailures,
                        text,
                        pending.as_deref(),
                        session,
                        lang,
                        sink,
                    );
                }
                let mut done = StageEvent::new(Stage::Answer, text.clone())
                    .agent("summarize")
                    .state("plan", &plan)
                    .state("summarizer", summarizer);
                if !plan.semantic_info.is_empty() {
                    done = done.meta("semantic_info", &plan.semantic_info);
                }
                sink.emit(done);
                text
            }
        }
    }

    /// Plan, blocked, execution and summary events; returns the summary and who wrote it
    /// (`llm` or `template`).
    #[allow(clippy::too_many_arguments)]
    async fn run_plan(
        &self,
        registry: &Registry,
        plan: &mut TaskPlan,
        found: Map<String, Value>,
        req: &TurnRequest,
        thread_id: &str,
        session: &mut Session,
        lang: Lang,
        sink: &EventSink,
    ) -> (String, &'static str) {
        sink.emit(StageEvent::new(Stage::PlanStarted, pick(lang, "正在规划任务…", "Planning…")));
        sink.emit(StageEvent::new(Stage::PlanDone, plan.user_friendly_message.clone()).state("plan", &*plan));
        for info in &plan.semantic_info {
            for key in &info.keys {
                crate::metrics::blocked(key);
            }
        }
        if !plan.semantic_info.is_empty() {
            sink.emit(
                StageEvent::new(Stage::Blocked, summarize::blocked_text(registry, plan, lang))
                    .meta("semantic_info", &plan.semantic_info),
            );
        }
        for (k, v) in found {
            session.slots.insert(k, v);
        }
        let ctx = TurnContext {
            session_id: session.session_id.clone(),
            user_id: req.user_id.clone(),
            thread_id: thread_id.to_string(),
            trace_id: req.trace_id.clone().unwrap_or_else(|| uuid::Uuid::new_v4().simple().to_string()),
            lang,
            deadline: tokio::time::Instant::now() + registry.settings.request_timeout.0,
        };
        let started = std::time::Instant::now();
        self.executor.run(registry, plan, &ctx, sink).instrument(tracing::info_span!("stage", name = "execute")).await;
        crate::metrics::stage("execute", started.elapsed());
        let started = std::time::Instant::now();
        remember_outputs(registry, plan, session);
        sink.emit(
            StageEvent::new(Stage::SummarizeStarted, pick(lang, "正在整理结果…", "Summarizing…")).agent("summarize"),
        );
        if let Some(llm) = &self.llm {
            let on_token = |token: &str| sink.emit(StageEvent::new(Stage::AnswerDelta, token).agent("summarize"));
            let query = plan
                .sub_tasks
                .first()
                .and_then(|t| t.inputs.get("message"))
                .and_then(Value::as_str)
                .unwrap_or(&req.query);
            let summary = llm.summarize(registry, query, plan, &on_token);
            match summary.instrument(tracing::info_span!("stage", name = "summarize")).await {
                Ok(text) => {
                    crate::metrics::stage("summarize", started.elapsed());
                    return (text, "llm");
                }
                Err(e) => tracing::warn!(error = %e, "model summary failed; using the template"),
            }
        }
        let text = summarize::summary(registry, plan, lang);
        crate::metrics::stage("summarize", started.elapsed());
        (text, "template")
    }

    /// Decides the turn: with a model, its intents and plan (validated like the rule planner's);
    /// on any model failure, the rule planner, marked degraded. Returns the decision and the
    /// planner metadata `{planner, degraded, reason, cache_hit}`.
    async fn decide(&self, registry: &Registry, input: TurnInput<'_>, history: &[Turn]) -> (planner::TurnPlan, Value) {
        let Some(llm) = &self.llm else {
            return (planner::plan_turn(registry, input), json!({ "planner": "rule", "degraded": false }));
        };
        match self.llm_decide(llm, registry, input, history).await {
            Ok((Some(turn), cache_hit)) => {
                (turn, json!({ "planner": "llm", "degraded": false, "cache_hit": cache_hit }))
            }
            Ok((None, cache_hit)) => (
                planner::plan_turn(registry, input),
                json!({ "planner": "rule", "degraded": false, "reason": "continuing the pending clarification", "cache_hit": cache_hit }),
            ),
            Err(reason) => {
                tracing::warn!(%reason, "LLM planner failed; the rule planner serves the turn");
                (planner::plan_turn(registry, input), json!({ "planner": "rule", "degraded": true, "reason": reason }))
            }
        }
    }

    /// The model's decision; `Ok(None)` leaves the turn to the rules (a pending clarification
    /// being answered or cancelled, cancel words).
    async fn llm_decide(
        &self,
        llm: &LlmPlanner,
        registry: &Registry,
        input: TurnInput<'_>,
        history: &[Turn],
    ) -> Result<(Option<planner::TurnPlan>, bool), String> {
        let (answer, cache_hit) =
            llm.recognize(registry, input.query, history, input.pending).await.map_err(|e| e.to_string())?;
        let lang = Lang::detect(input.query);
        let mut agents: Vec<String> = Vec::new();
        for id in &answer.intent {
            if registry.get_enabled(id).is_some() && !agents.contains(id) {
                agents.push(id.clone());
            }
        }
        let simple = answer.intent.iter().find_map(|label| match label.as_str() {
            "sensitive" => Some(SimpleIntent::Sensitive),
            "human" => Some(SimpleIntent::HumanRequested),
            "greeting" => Some(SimpleIntent::Greeting),
            "thanks" => Some(SimpleIntent::Thanks),
            "capabilities" => Some(SimpleIntent::Capabilities),
            "chitchat" => Some(SimpleIntent::ChitChat),
            "out_of_scope" => Some(SimpleIntent::OutOfScope),
            _ => None,
        });
        let rewritten = if answer.rewritten_query.trim().is_empty() {
            input.query.to_string()
        } else {
            answer.rewritten_query.clone()
        };
        let mut intent = planner::IntentResult {
            intent: agents.clone(),
            simple,
            confidence: answer.confidence,
            reason: answer.reason.clone(),
            rewritten_query: rewritten.clone(),
            lang,
            resumes_pending: false,
            candidates: planner::intent::recognize(registry, input.query).top(planner::intent::CANDIDATES_SHOWN),
        };
        let escalate = match simple {
            Some(SimpleIntent::Sensitive) => Some(EscalationReason::Sensitive),
            Some(SimpleIntent::HumanRequested) => Some(EscalationReason::UserRequested),
            _ => None,
        };
        if let Some(reason) = escalate {
            return Ok((Some(planner::TurnPlan { intent, decision: Decision::Escalate(reason) }), cache_hit));
        }
        let pending = input.pending.filter(|p| !p.is_empty());
        let new_agents = agents.iter().any(|a| !pending.is_some_and(|p| p.iter().any(|t| &t.assigned_agent == a)));
        if (pending.is_some() && !new_agents) || planner::intent::is_cancel(&input.query.to_lowercase()) {
            return Ok((None, cache_hit));
        }
        if agents.is_empty() {
            let simple = simple.unwrap_or(SimpleIntent::OutOfScope);
            intent.simple = Some(simple);
            return Ok((Some(planner::TurnPlan { intent, decision: Decision::Direct(simple) }), cache_hit));
        }
        let mode = if pending.is_some() { PlanMode::Rerouted } else { PlanMode::Fresh };
        let src = planner::KeySources {
            text: input.query,
            slots: input.slots,
            session_slots: input.session_slots,
            today: input.today,
        };
        let (proposal, raw) =
            llm.plan(registry, &rewritten, &agents, input.session_slots, None).await.map_err(|e| e.to_string())?;
        let built = match build_from_proposal(registry, &proposal, src, input.plan_id, lang, &rewritten) {
            Ok(built) => built,
            Err(problems) => {
                tracing::info!(?problems, "asking the model to repair its plan");
                let (repaired, _) = llm
                    .plan(registry, &rewritten, &agents, input.session_slots, Some((&raw, &problems)))
                    .await
                    .map_err(|e| format!("plan repair failed: {e}"))?;
                build_from_proposal(registry, &repaired, src, input.plan_id, lang, &rewritten)
                    .map_err(|p| format!("invalid plan after one repair: {}", p.join("; ")))?
            }
        };
        let (plan, found) = built;
        Ok((Some(planner::TurnPlan { intent, decision: Decision::Plan { plan, found, mode } }), cache_hit))
    }

    /// Asks A2A agents to cancel the remote tasks of dropped sub-tasks (in the background).
    fn cancel_remote(&self, registry: &Registry, tasks: &[SubTask]) {
        for task in tasks {
            let (Some(remote), Some(agent)) = (task.remote.clone(), registry.get(&task.assigned_agent).cloned()) else {
                continue;
            };
            let dispatcher = self.executor.dispatcher().clone();
            tokio::spawn(async move { dispatcher.cancel_remote(&agent, &remote).await });
        }
    }

    /// Ends the turn with an `escalated` event carrying the escalation card.
    fn escalate(
        &self,
        reason: EscalationReason,
        summary: String,
        pending: Option<&[SubTask]>,
        session: &Session,
        lang: Lang,
        sink: &EventSink,
    ) -> String {
        let text = summarize::escalation_text(reason, lang);
        let card = json!({
            "reason": reason,
            "summary": summary,
            "last_turns": session.history,
            "pending": pending,
            "user_id": session.user_id,
            "thread_id": session.thread_id,
        });
        sink.emit(StageEvent::new(Stage::Escalated, text.clone()).state("escalation", card));
        text
    }

    /// Drops the pending clarification of `(user_id, thread_id)`; returns the dropped sub-tasks
    /// (`None` when the session does not exist).
    ///
    /// # Errors
    /// The store's error.
    pub async fn cancel_pending(
        &self,
        user_id: &str,
        thread_id: &str,
    ) -> Result<Option<Vec<SubTask>>, crate::session::StoreError> {
        if self.sessions.peek(user_id, thread_id).await?.is_none() {
            return Ok(None);
        }
        let mut guard = self.sessions.open(user_id, thread_id).await?;
        let dropped = guard.session.pending.take().map(|p| p.tasks).unwrap_or_default();
        self.cancel_remote(&self.registry.load(), &dropped);
        guard.save().await?;
        Ok(Some(dropped))
    }
}

fn sorted(keys: &[String]) -> Vec<&str> {
    let mut v: Vec<&str> = keys.iter().map(String::as_str).collect();
    v.sort_unstable();
    v
}

/// Keeps the `produces` keys of finished sub-tasks as session slots, for later turns.
fn remember_outputs(registry: &Registry, plan: &TaskPlan, session: &mut Session) {
    for task in plan.sub_tasks.iter().filter(|t| t.status == TaskStatus::Done) {
        let (Some(agent), Some(output)) = (registry.get(&task.assigned_agent), task.output.as_ref()) else { continue };
        for key in &agent.spec.produces {
            if let Some(v) = output.get(key) {
                session.slots.insert(key.clone(), v.clone());
            }
        }
    }
}
