//! The turn pipeline (DESIGN.md section 4): session load -> intent -> direct answer or plan ->
//! semantic-key check -> DAG execution -> summarize -> session save, one stage event per arrow.
//!
//! [`Supervisor::start_turn`] returns at once with the turn's event receiver; the turn runs in its
//! own task, so a client that disconnects does not cut it short: its results are still saved.
//! **Invariant:** the stream ends with exactly one `done` event, even if the turn task panics.

use std::sync::Arc;

use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};
use tokio::sync::mpsc;

use crate::events::{EventSink, Stage, StageEvent};
use crate::executor::{Executor, TurnContext};
use crate::planner::{self, Decision, Lang, TaskStatus, TurnInput};
use crate::registry::RegistryHandle;
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
}

/// The supervisor: registry, sessions and executor, shared by every request.
#[derive(Debug, Clone)]
pub struct Supervisor {
    /// The serving registry.
    pub registry: Arc<RegistryHandle>,
    /// Sessions.
    pub sessions: Arc<SessionStore>,
    /// Runs plans.
    pub executor: Executor,
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

impl Supervisor {
    /// A supervisor over `registry` with an in-memory session store.
    pub fn new(registry: Arc<RegistryHandle>) -> Self {
        Self { registry, sessions: Arc::new(SessionStore::new()), executor: Executor::default() }
    }

    /// Starts a turn in its own task and returns its event stream.
    pub fn start_turn(&self, req: TurnRequest) -> TurnStream {
        let thread_id = req.thread_id.clone().unwrap_or_else(|| format!("th_{}", uuid::Uuid::new_v4().simple()));
        let session_id = session_id(&req.user_id, &thread_id);
        let (sink, events) = EventSink::new(&session_id, &thread_id);
        let this = self.clone();
        let tid = thread_id.clone();
        tokio::spawn(async move {
            let lang = Lang::detect(&req.query);
            let inner = tokio::spawn({
                let sink = sink.clone();
                async move { this.run_turn(req, tid, sink).await }
            });
            if let Err(e) = inner.await {
                tracing::error!(error = %e, "turn task failed");
            }
            if !sink.is_done() {
                let text = match lang {
                    Lang::Zh => "抱歉，处理您的请求时出现了问题，请稍后再试。",
                    Lang::En => "Sorry, something went wrong while handling your request. Please try again.",
                };
                sink.emit(StageEvent::new(Stage::Error, text));
            }
        });
        TurnStream { thread_id, session_id, events }
    }

    async fn run_turn(&self, req: TurnRequest, thread_id: String, sink: EventSink) {
        let registry = self.registry.load();
        let mut session = self.sessions.open(&req.user_id, &thread_id).await;
        let lang = Lang::detect(&req.query);
        let zh = lang == Lang::Zh;
        sink.emit(StageEvent::new(
            Stage::IntentStarted,
            if zh { "正在理解您的需求…" } else { "Understanding your request…" },
        ));

        let plan_id = format!("plan_{}", &uuid::Uuid::new_v4().simple().to_string()[..12]);
        let pending = session.pending.as_ref().map(|p| p.tasks.clone());
        let turn = planner::plan_turn(
            &registry,
            TurnInput {
                query: &req.query,
                slots: &req.slots,
                session_slots: &session.slots,
                pending: pending.as_deref(),
                today: chrono::Local::now().date_naive(),
                plan_id: &plan_id,
            },
        );
        let intent_text = match (&turn.decision, zh) {
            (Decision::Plan { resumed: true, .. }, true) => "收到，继续处理您之前的请求。".to_string(),
            (Decision::Plan { resumed: true, .. }, false) => "Got it, continuing your earlier request.".to_string(),
            (Decision::Plan { plan, .. }, true) => format!("识别到 {} 项需求。", plan.total_tasks),
            (Decision::Plan { plan, .. }, false) => format!("Found {} request(s).", plan.total_tasks),
            (_, true) => "已理解您的需求。".to_string(),
            (_, false) => "Understood.".to_string(),
        };
        sink.emit(
            StageEvent::new(Stage::IntentDone, intent_text).state("intent", &turn.intent).state("planner", "rule"),
        );

        let answer = match turn.decision {
            Decision::Escalate(reason) => {
                let text = summarize::escalation_text(reason, lang);
                let card = json!({
                    "reason": reason,
                    "summary": req.query,
                    "last_turns": session.history,
                    "pending": session.pending.as_ref().map(|p| &p.tasks),
                });
                sink.emit(StageEvent::new(Stage::Escalated, text.clone()).state("escalation", card));
                text
            }
            Decision::Direct(intent) => {
                let text = summarize::direct_answer(&registry, intent, lang);
                sink.emit(StageEvent::new(Stage::Answer, text.clone()).state("simple_intent", intent));
                text
            }
            Decision::Plan { mut plan, found, resumed } => {
                sink.emit(StageEvent::new(Stage::PlanStarted, if zh { "正在规划任务…" } else { "Planning…" }));
                sink.emit(
                    StageEvent::new(Stage::PlanDone, plan.user_friendly_message.clone())
                        .state("plan", &plan)
                        .state("resumed", resumed),
                );
                if !plan.semantic_info.is_empty() {
                    sink.emit(
                        StageEvent::new(Stage::Blocked, summarize::blocked_text(&registry, &plan, lang))
                            .meta("semantic_info", &plan.semantic_info),
                    );
                }
                for (k, v) in found {
                    session.slots.insert(k, v);
                }
                let ctx = TurnContext {
                    session_id: session.session_id.clone(),
                    user_id: req.user_id.clone(),
                    thread_id: thread_id.clone(),
                    trace_id: uuid::Uuid::new_v4().simple().to_string(),
                    lang,
                };
                self.executor.run(&registry, &mut plan, &ctx, &sink).await;
                remember_outputs(&registry, &plan, &mut session);
                sink.emit(
                    StageEvent::new(Stage::SummarizeStarted, if zh { "正在整理结果…" } else { "Summarizing…" })
                        .agent("summarize"),
                );
                let text = summarize::summary(&registry, &plan, lang);
                let blocked: Vec<_> = plan.blocked().cloned().collect();
                session.pending = (!blocked.is_empty()).then(|| PendingClarification {
                    plan_id: plan.plan_id.clone(),
                    rounds: session.pending.as_ref().filter(|_| resumed).map_or(1, |p| p.rounds + 1),
                    tasks: blocked,
                    created_at: chrono::Utc::now().to_rfc3339(),
                });
                let mut done = StageEvent::new(Stage::Answer, text.clone()).agent("summarize").state("plan", &plan);
                if !plan.semantic_info.is_empty() {
                    done = done.meta("semantic_info", &plan.semantic_info);
                }
                sink.emit(done);
                text
            }
        };
        let max = registry.settings.memory_max_history as usize;
        session.push_turn(Turn { query: req.query, answer, at: chrono::Utc::now().to_rfc3339() }, max);
    }
}

/// Keeps the `produces` keys of finished sub-tasks as session slots, for later turns.
fn remember_outputs(registry: &crate::registry::Registry, plan: &planner::TaskPlan, session: &mut Session) {
    for task in plan.sub_tasks.iter().filter(|t| t.status == TaskStatus::Done) {
        let (Some(agent), Some(output)) = (registry.get(&task.assigned_agent), task.output.as_ref()) else { continue };
        for key in &agent.spec.produces {
            if let Some(v) = output.get(key) {
                session.slots.insert(key.clone(), v.clone());
            }
        }
    }
}
