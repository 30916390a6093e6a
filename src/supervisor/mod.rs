//! The turn pipeline: session load -> decide (the conversation state machine and the planner)
//! -> emit -> execute -> summarize -> session save, one stage event per step (docs/events.md).
//!
//! [`Supervisor::start_turn`] returns at once with the turn's event receiver; the turn runs in its
//! own task, so a client that disconnects does not cut it short: its results are still saved.
//! The conversation's lifecycle rules (expiry, rounds, failures, escalation) are the pure
//! transitions of [`crate::conversation`]; this module only sequences them with the IO.
//!
//! - [`turn`](self): one turn's decision and the effects of the state machine's transitions;
//! - `pipeline`: a plan's events, execution and summary.
//!
//! **Invariant:** the stream ends with exactly one `done` event, even if the turn task panics.

mod pipeline;
mod turn;

use futures::FutureExt;
use std::sync::Arc;

use chrono::Utc;
use serde_json::{json, Map, Value};
use tokio::sync::oneshot;
use tracing::Instrument;

use crate::events::{EventSink, Stage, StageEvent};
use crate::executor::Executor;
use crate::llm::{LlmPlanner, LlmSettings};
use crate::planner::{Lang, SubTask};
use crate::registry::{Registry, RegistryHandle};
use crate::session::{session_id, HistoryEntry, Session, SessionStore, StoreError};

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
    /// The client cancels the pending clarification (an AG-UI `cancelled` resume): the turn
    /// is the conversation's cancel input, whatever `query` says.
    pub cancel: bool,
    /// The verified caller (auth modes `jwt` / `trusted_header`; `user_id` is theirs), or `None`
    /// in mode `none`.
    pub principal: Option<Arc<crate::auth::Principal>>,
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
    /// A fixed date for the turns' relative dates (tests); `None`: the clock's date in
    /// `supervisor.timezone`.
    pub today: Option<chrono::NaiveDate>,
    /// Turns in flight (a shutdown waits for their session writes).
    pub turns: tokio_util::task::TaskTracker,
    /// Cancelled when a shutdown's drain deadline passes: turns still running are cut off and
    /// save what they have (see `run_turn`); open streams end (`api::chat::drained`).
    pub shutdown: tokio_util::sync::CancellationToken,
}

/// The `done` event of a turn cut off by a shutdown.
fn shutting_down(registry: &Registry, lang: Lang) -> StageEvent {
    let text = registry.texts().get(lang, "error-shutting-down", &[]);
    StageEvent::new(Stage::Error, text).state("error", json!({ "code": "shutting_down" }))
}

/// A started turn.
pub struct TurnStream {
    /// The thread id (new when the request had none).
    pub thread_id: String,
    /// The session id.
    pub session_id: String,
    /// The turn's trace id (32 hex digits): the client's `traceparent` trace id, else a new one.
    /// Sent back as header `x-trace-id` and in the first event's `metadata.trace_id`.
    pub trace_id: String,
    /// The turn's events, ending with one `done`.
    pub events: crate::events::EventReceiver,
    /// The session as saved at the end of the turn (after the `done` event): for adapters that
    /// show the conversation's state (AG-UI's `STATE_DELTA`). Closed without a value when the
    /// turn saved nothing (a busy thread, a store failure). Dropping it costs the turn nothing.
    pub saved: oneshot::Receiver<Session>,
}

impl Supervisor {
    /// A supervisor over `registry` and `sessions`.
    pub fn new(registry: Arc<RegistryHandle>, sessions: Arc<SessionStore>) -> Self {
        Self {
            registry,
            sessions,
            executor: Executor::default(),
            llm: None,
            today: None,
            turns: tokio_util::task::TaskTracker::new(),
            shutdown: tokio_util::sync::CancellationToken::new(),
        }
    }

    /// Plans and summarizes with the model at `settings` (the rule planner and the template
    /// summary remain the fallback).
    pub fn with_llm(mut self, settings: Option<LlmSettings>) -> Self {
        self.llm = settings.map(|s| Arc::new(LlmPlanner::new(s)));
        self
    }

    /// Resolves every turn's relative dates against `today` instead of the clock (tests).
    pub fn with_today(mut self, today: Option<chrono::NaiveDate>) -> Self {
        self.today = today;
        self
    }

    /// Starts a turn in its own task and returns its event stream.
    pub fn start_turn(&self, req: TurnRequest) -> TurnStream {
        let thread_id = req.thread_id.clone().unwrap_or_else(|| format!("th_{}", uuid::Uuid::new_v4().simple()));
        let session_id = session_id(&req.user_id, &thread_id);
        let trace_id = req.trace_id.clone().unwrap_or_else(|| uuid::Uuid::new_v4().simple().to_string());
        let (sink, events) = EventSink::new(&session_id, &thread_id);
        let sink = sink.traced(&trace_id);
        let (saved_tx, saved) = oneshot::channel();
        let this = self.clone();
        let this_texts = self.registry.load();
        let tid = thread_id.clone();
        let mut req = req;
        req.trace_id = Some(trace_id.clone());
        let span = tracing::info_span!("turn", trace_id = %trace_id, thread = %tid);
        self.turns.spawn(async move {
            let lang = Lang::detect(&req.query);
            // One task per turn: a panic inside the turn is caught here (not by a second task),
            // so the stream still ends with an error event.
            let turn = {
                let sink = sink.clone();
                let this = this.clone();
                async move { this.run_turn(req, tid, sink, saved_tx).await }
            }
            .instrument(span);
            if let Err(panic) = std::panic::AssertUnwindSafe(turn).catch_unwind().await {
                let what = panic
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                tracing::error!(error = %what, "turn task panicked");
            }
            if !sink.is_done() {
                let text = this_texts.texts().get(lang, "error-turn-failed", &[]);
                sink.emit(StageEvent::new(Stage::Error, text));
            }
            crate::metrics::request(sink.done_stage().map_or("error", Stage::as_str));
        });
        TurnStream { thread_id, session_id, trace_id, events, saved }
    }

    async fn run_turn(&self, req: TurnRequest, thread_id: String, sink: EventSink, saved: oneshot::Sender<Session>) {
        let registry = self.registry.load();
        let lang = Lang::detect(&req.query);
        // The turn's deadline counts from its arrival: waiting for the thread's lock uses it up.
        let deadline = tokio::time::Instant::now() + registry.settings.request_timeout.0;
        let Some(mut guard) = self.open_session(&registry, &req, &thread_id, deadline, lang, &sink).await else {
            return;
        };
        if self.over_session_bound(&registry, &req, &guard, lang, &sink).await {
            guard.release().await;
            return;
        }
        let turn_started = std::time::Instant::now();
        // The conversation's language (issue 17 item 5): the session's, else (sessions stored
        // before it was kept) its last worded query's; a turn changes it only with a sentence
        // clearly in another language — a widget form, "120" or "CA1234" do not.
        let conversation = guard.session.lang.unwrap_or_else(|| {
            let earlier = guard
                .session
                .history
                .iter()
                .rev()
                .map(|h| h.query.as_str())
                .find(|q| q.chars().any(char::is_alphabetic));
            earlier.map_or(lang, Lang::detect)
        });
        let lang = if guard.session.lang.is_none() && guard.session.history.is_empty() {
            Lang::confident(&req.query).unwrap_or(lang)
        } else {
            Lang::of_turn(&req.query, conversation)
        };
        guard.session.lang = Some(lang);
        let ctx = turn::TurnCtx::new(&registry, &req, &thread_id, lang, &sink, Utc::now(), deadline);
        let before = guard.session.clone();
        let answer = tokio::select! {
            answer = self.respond(&ctx, &mut guard.session) => Some(answer),
            () = self.shutdown.cancelled() => None,
        };
        let interrupted = answer.is_none();
        if interrupted {
            // Cut off by a shutdown: the session stays as it was before the turn (a pending
            // clarification is kept), and the turn is recorded as interrupted.
            tracing::warn!(thread = %thread_id, "turn cut off by the shutdown; saving it as interrupted");
            guard.session = before;
            if !sink.is_done() {
                sink.emit(shutting_down(&registry, lang));
            }
        }
        tracing::info!(
            outcome = sink.done_stage().map_or("none", Stage::as_str),
            elapsed_ms = turn_started.elapsed().as_millis() as u64,
            "turn finished"
        );
        let turn = HistoryEntry {
            turn_id: uuid::Uuid::new_v4().simple().to_string(),
            query: req.query,
            answer: answer.unwrap_or_default(),
            at: Utc::now(),
            interrupted,
        };
        guard.session.push_turn(turn, registry.settings.memory_max_history as usize);
        // A copy for whoever watches the saved state (nobody, mostly: then no copy is made).
        let copy = (!saved.is_closed()).then(|| guard.session.clone());
        let started = std::time::Instant::now();
        let result = guard.save().await;
        crate::metrics::stage("session_save", started.elapsed());
        match (result, copy) {
            (Err(e), _) => tracing::error!(error = %e, thread = %thread_id, "session save failed"),
            (Ok(()), Some(session)) => {
                let _ = saved.send(session);
            }
            (Ok(()), None) => {}
        }
    }

    /// Locks and loads the turn's session within its deadline; on a shutdown, a busy thread or a
    /// store failure emits the turn's `done` and returns `None`.
    async fn open_session(
        &self,
        registry: &Registry,
        req: &TurnRequest,
        thread_id: &str,
        deadline: tokio::time::Instant,
        lang: Lang,
        sink: &EventSink,
    ) -> Option<crate::session::SessionGuard<'_>> {
        let started = std::time::Instant::now();
        let max_queued = registry.settings.max_queued_turns_per_thread as usize;
        // A thread id made up by start_turn has no stored session yet: no load.
        let open = async {
            if req.thread_id.is_none() {
                self.sessions.open_new_within(&req.user_id, thread_id, deadline, max_queued).await
            } else {
                self.sessions.open_within(&req.user_id, thread_id, deadline, max_queued).await
            }
        };
        let opened = tokio::select! {
            opened = open => Some(opened),
            () = self.shutdown.cancelled() => None,
        };
        crate::metrics::stage("session_load", started.elapsed());
        let Some(opened) = opened else {
            // Cut off by a shutdown while waiting for the thread: nothing was done, nothing to save.
            sink.emit(shutting_down(registry, lang));
            return None;
        };
        let (code, id, e) = match opened {
            Ok(g) => return Some(g),
            Err(e @ (StoreError::Busy | StoreError::QueueFull(_))) => {
                let code = if matches!(e, StoreError::Busy) { "thread_busy" } else { "thread_queue_full" };
                tracing::warn!(error = %e, thread = %thread_id, "turn refused: the thread is busy");
                crate::metrics::rejected(code);
                (code, "error-thread-busy", e)
            }
            Err(e) => {
                tracing::error!(error = %e, thread = %thread_id, "session store failed");
                ("session_store", "error-session-store", e)
            }
        };
        let text = registry.texts().get(lang, id, &[]);
        sink.emit(
            StageEvent::new(Stage::Error, text).state("error", json!({ "code": code, "message": e.to_string() })),
        );
        None
    }

    /// `true` (after emitting the turn's `done`) when a new thread would pass
    /// `max_sessions_per_user`.
    async fn over_session_bound(
        &self,
        registry: &Registry,
        req: &TurnRequest,
        guard: &crate::session::SessionGuard<'_>,
        lang: Lang,
        sink: &EventSink,
    ) -> bool {
        let max_sessions = registry.settings.max_sessions_per_user as usize;
        if !guard.is_new() || max_sessions == 0 {
            return false;
        }
        match self.sessions.count_user(&req.user_id).await {
            Ok(n) if n >= max_sessions => {
                tracing::warn!(sessions = n, "turn refused: the user has too many sessions");
                crate::metrics::rejected("too_many_sessions");
                let text = registry.texts().get(lang, "error-too-many-sessions", &[]);
                let message = format!("the user already has {n} sessions (at most {max_sessions})");
                sink.emit(
                    StageEvent::new(Stage::Error, text)
                        .state("error", json!({ "code": "too_many_sessions", "message": message })),
                );
                true
            }
            Ok(_) => false,
            Err(e) => {
                tracing::warn!(error = %e, "cannot count the user's sessions; not bounded for this turn");
                false
            }
        }
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
        let (conversation, dropped) = std::mem::take(&mut guard.session.conversation).cancel();
        guard.session.conversation = conversation;
        let dropped = dropped.map(crate::conversation::Dropped::into_tasks).unwrap_or_default();
        self.cancel_remote(&self.registry.load(), &dropped);
        guard.save().await?;
        Ok(Some(dropped))
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
}
