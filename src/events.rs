//! The event stream of a turn: `ResponseState` (docs/events.md).
//!
//! Every stage of the pipeline emits [`StageEvent`]s into an [`EventSink`]; the sink numbers them
//! (`seq`, from 1 per turn) and forwards them in that order to whoever renders them (the SSE
//! stream, the JSON collector). The sink guarantees the stream's closing rule: exactly one
//! `type: "done"` event, after which nothing else is sent.

use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::{Map, Value};
use tokio::sync::mpsc;

use crate::planner::{EscalationReason, RemoteQuestion, SemanticInfo, SubTask, TaskPlan};

/// `content` for progress, `done` for the single final event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EventType {
    /// Progress.
    Content,
    /// The final event of the turn.
    Done,
}

/// The stages of the event stream (docs/events.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// Intent recognition started.
    IntentStarted,
    /// Intents recognized (`metadata.state.intent`).
    IntentDone,
    /// Planning started.
    PlanStarted,
    /// The plan (`metadata.state.plan`).
    PlanDone,
    /// Sub-tasks blocked on semantic keys (`metadata.semantic_info`).
    Blocked,
    /// A sub-task was dispatched.
    AgentStarted,
    /// A streamed chunk from a sub-agent.
    AgentDelta,
    /// A sub-task finished and was accepted.
    AgentDone,
    /// A sub-task failed or was skipped.
    AgentFailed,
    /// Summarizing started.
    SummarizeStarted,
    /// A chunk of the final answer.
    AnswerDelta,
    /// The final answer (`done`).
    Answer,
    /// Handed over to a human (`done`).
    Escalated,
    /// The turn failed (`done`).
    Error,
}

impl Stage {
    /// The wire name (`intent_started`, ...), used as the SSE `event:` field.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::IntentStarted => "intent_started",
            Self::IntentDone => "intent_done",
            Self::PlanStarted => "plan_started",
            Self::PlanDone => "plan_done",
            Self::Blocked => "blocked",
            Self::AgentStarted => "agent_started",
            Self::AgentDelta => "agent_delta",
            Self::AgentDone => "agent_done",
            Self::AgentFailed => "agent_failed",
            Self::SummarizeStarted => "summarize_started",
            Self::AnswerDelta => "answer_delta",
            Self::Answer => "answer",
            Self::Escalated => "escalated",
            Self::Error => "error",
        }
    }
}

/// One `ResponseState` object.
///
/// Serializes to the wire form (docs/events.md). The plan of `plan_done` and `answer` events is
/// shared through [`Payload::plan`] and written straight from it into `metadata.state.plan` when
/// the event is serialized: no copy of the plan as a JSON tree per event.
#[derive(Debug, Clone)]
pub struct StageEvent {
    /// `content` or `done`.
    pub kind: EventType,
    /// The stage.
    pub stage: Stage,
    /// User-facing text (no agent ids, no intent labels).
    pub content: String,
    /// `supervisor`, `summarize` or the sub-agent's id.
    pub agent_id: String,
    /// `true` for intermediate progress, `false` for answers.
    pub is_thinking: bool,
    /// The session id.
    pub session_id: String,
    /// The thread id.
    pub thread_id: String,
    /// The sub-task, for agent events.
    pub task_id: Option<String>,
    /// 1-based position in the turn's stream.
    pub seq: u64,
    /// `semantic_info` when blocked, `state` otherwise. With a [`Payload::plan`],
    /// `state.plan` holds `null` here (keeping its place among the keys) and the serialized
    /// event carries the plan there; [`StageEvent::wire_metadata`] is the wire form.
    pub metadata: Map<String, Value>,
    /// The same data, typed, for in-process adapters (AG-UI, A2A): not serialized itself.
    pub payload: Payload,
}

impl Serialize for StageEvent {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut e = s.serialize_struct("StageEvent", 10)?;
        e.serialize_field("type", &self.kind)?;
        e.serialize_field("stage", &self.stage)?;
        e.serialize_field("content", &self.content)?;
        e.serialize_field("agent_id", &self.agent_id)?;
        e.serialize_field("is_thinking", &self.is_thinking)?;
        e.serialize_field("session_id", &self.session_id)?;
        e.serialize_field("thread_id", &self.thread_id)?;
        e.serialize_field("task_id", &self.task_id)?;
        e.serialize_field("seq", &self.seq)?;
        e.serialize_field("metadata", &self.wire_metadata())?;
        e.end()
    }
}

/// `metadata` as sent: `state.plan` written from [`Payload::plan`].
#[derive(Debug, Clone, Copy)]
pub struct WireMetadata<'a> {
    metadata: &'a Map<String, Value>,
    plan: Option<&'a TaskPlan>,
}

impl Serialize for WireMetadata<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let Some(plan) = self.plan else { return self.metadata.serialize(s) };
        let mut m = s.serialize_map(Some(self.metadata.len()))?;
        for (k, v) in self.metadata {
            match v {
                Value::Object(state) if k == "state" => m.serialize_entry(k, &WireState { state, plan })?,
                _ => m.serialize_entry(k, v)?,
            }
        }
        m.end()
    }
}

struct WireState<'a> {
    state: &'a Map<String, Value>,
    plan: &'a TaskPlan,
}

impl Serialize for WireState<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(self.state.len()))?;
        for (k, v) in self.state {
            if k == "plan" {
                m.serialize_entry(k, self.plan)?;
            } else {
                m.serialize_entry(k, v)?;
            }
        }
        m.end()
    }
}

/// The typed data an event carries, so the protocol adapters match on types instead of reading
/// keys back out of `metadata` (the wire form of the same data).
#[derive(Debug, Clone, Default)]
pub struct Payload {
    /// The task plan (`plan_done`, `answer`): `metadata.state.plan` on the wire.
    pub plan: Option<Arc<TaskPlan>>,
    /// Keys blocking sub-tasks (`blocked`, `answer`): `metadata.semantic_info` on the wire.
    pub semantic_info: Option<Arc<[SemanticInfo]>>,
    /// Questions A2A sub-agents asked the user (`answer`): `metadata.input_required` on the wire.
    pub questions: Option<Arc<[RemoteQuestion]>>,
    /// The hand-over to a human (`escalated`): `metadata.state.escalation` on the wire.
    pub escalation: Option<Arc<EscalationCard>>,
    /// When the pending clarification this answer asks for expires (`answer` with
    /// `semantic_info` or `questions`); the stored expiry, so every surface shows the same time.
    pub clarification_expires_at: Option<DateTime<Utc>>,
}

/// What a human taking over needs (`metadata.state.escalation` of an `escalated` event).
#[derive(Debug, Clone, Serialize)]
pub struct EscalationCard {
    /// Why the user is handed over.
    pub reason: EscalationReason,
    /// What the user wanted, or what was left undone.
    pub summary: String,
    /// The last turns of the conversation (history entries, oldest first).
    pub last_turns: Value,
    /// Sub-tasks still waiting, if any.
    pub pending: Option<Vec<SubTask>>,
    /// The user.
    pub user_id: String,
    /// The thread.
    pub thread_id: String,
    /// `urgent` (self-harm: a human must take it at once) or `normal` (extension).
    pub priority: &'static str,
}

impl StageEvent {
    /// A progress event from the supervisor.
    pub fn new(stage: Stage, content: impl Into<String>) -> Self {
        Self {
            kind: if matches!(stage, Stage::Answer | Stage::Escalated | Stage::Error) {
                EventType::Done
            } else {
                EventType::Content
            },
            stage,
            content: content.into(),
            agent_id: "supervisor".into(),
            is_thinking: !matches!(
                stage,
                Stage::Answer | Stage::AnswerDelta | Stage::Escalated | Stage::Error | Stage::Blocked
            ),
            session_id: String::new(),
            thread_id: String::new(),
            task_id: None,
            seq: 0,
            metadata: Map::new(),
            payload: Payload::default(),
        }
    }

    /// Attaches the task plan: [`Payload::plan`], sent as `metadata.state.plan` (shared, not
    /// copied: pass a snapshot when the plan changes afterwards).
    pub fn plan(mut self, plan: Arc<TaskPlan>) -> Self {
        self = self.state("plan", Value::Null);
        self.payload.plan = Some(plan);
        self
    }

    /// `metadata` as it is sent (with the plan in `state.plan`).
    pub fn wire_metadata(&self) -> WireMetadata<'_> {
        WireMetadata { metadata: &self.metadata, plan: self.payload.plan.as_deref() }
    }

    /// Attaches the keys blocking sub-tasks: `metadata.semantic_info` and
    /// [`Payload::semantic_info`].
    pub fn semantic_info(mut self, infos: &[SemanticInfo]) -> Self {
        self = self.meta("semantic_info", infos);
        self.payload.semantic_info = Some(infos.into());
        self
    }

    /// Attaches the questions A2A sub-agents asked: `metadata.input_required` and
    /// [`Payload::questions`].
    pub fn questions(mut self, questions: &[RemoteQuestion]) -> Self {
        self = self.meta("input_required", questions);
        self.payload.questions = Some(questions.into());
        self
    }

    /// Attaches the escalation card: `metadata.state.escalation` and [`Payload::escalation`].
    pub fn escalation(mut self, card: EscalationCard) -> Self {
        self = self.state("escalation", &card);
        self.payload.escalation = Some(Arc::new(card));
        self
    }

    /// Sets `agent_id`.
    pub fn agent(mut self, agent_id: &str) -> Self {
        self.agent_id = agent_id.to_string();
        self
    }

    /// Sets `task_id`.
    pub fn task(mut self, task_id: &str) -> Self {
        self.task_id = Some(task_id.to_string());
        self
    }

    /// Adds `metadata.state.<key> = value`.
    pub fn state(mut self, key: &str, value: impl Serialize) -> Self {
        let state = self.metadata.entry("state").or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(state) = state {
            state.insert(key.to_string(), serde_json::to_value(value).unwrap_or(Value::Null));
        }
        self
    }

    /// Sets `metadata.<key> = value`.
    pub fn meta(mut self, key: &str, value: impl Serialize) -> Self {
        self.metadata.insert(key.to_string(), serde_json::to_value(value).unwrap_or(Value::Null));
        self
    }

    /// `true` for the final event.
    pub fn is_done(&self) -> bool {
        self.kind == EventType::Done
    }
}

struct SinkState {
    seq: u64,
    done: bool,
    done_stage: Option<Stage>,
    tx: mpsc::UnboundedSender<Box<StageEvent>>,
}

/// Numbers events and forwards them, in order, to one receiver. Cheap to clone; usable from
/// concurrently running sub-tasks. Sending never fails: a gone receiver (client disconnected)
/// only means nobody watches, the turn still completes and is saved.
#[derive(Clone)]
pub struct EventSink {
    session_id: Arc<str>,
    thread_id: Arc<str>,
    trace_id: Option<Arc<str>>,
    state: Arc<Mutex<SinkState>>,
}

/// The receiving end of a turn's events. Events travel boxed: the channel allocates its slots
/// 32 at a time, and 32 boxes (256 bytes) instead of 32 events (about 8.7 KB) is what an open
/// turn waiting on its sub-agents holds (BENCHMARKS.md, "open streams").
#[derive(Debug)]
pub struct EventReceiver(mpsc::UnboundedReceiver<Box<StageEvent>>);

impl EventReceiver {
    /// The next event; `None` once the sink and all its clones are gone.
    pub async fn recv(&mut self) -> Option<StageEvent> {
        self.0.recv().await.map(|event| *event)
    }
}

impl EventSink {
    /// A sink for one turn and the receiving end of its stream.
    pub fn new(session_id: &str, thread_id: &str) -> (Self, EventReceiver) {
        let (tx, rx) = mpsc::unbounded_channel();
        let sink = Self {
            session_id: session_id.into(),
            thread_id: thread_id.into(),
            trace_id: None,
            state: Arc::new(Mutex::new(SinkState { seq: 0, done: false, done_stage: None, tx })),
        };
        (sink, EventReceiver(rx))
    }

    /// The same sink, writing `trace_id` into the first event's `metadata.trace_id`.
    pub fn traced(mut self, trace_id: &str) -> Self {
        self.trace_id = Some(trace_id.into());
        self
    }

    /// Stamps and forwards `event`. Events after the `done` event are dropped.
    pub fn emit(&self, mut event: StageEvent) {
        let Ok(mut st) = self.state.lock() else { return };
        if st.done {
            return;
        }
        st.seq += 1;
        st.done = event.is_done();
        if st.done {
            st.done_stage = Some(event.stage);
        }
        event.seq = st.seq;
        if let (1, Some(trace_id)) = (st.seq, &self.trace_id) {
            event.metadata.insert("trace_id".into(), Value::String(trace_id.to_string()));
        }
        event.session_id = self.session_id.to_string();
        event.thread_id = self.thread_id.to_string();
        let _ = st.tx.send(Box::new(event));
    }

    /// The stage of the `done` event, once it went out.
    pub fn done_stage(&self) -> Option<Stage> {
        self.state.lock().ok().and_then(|s| s.done_stage)
    }

    /// `true` once the `done` event went out.
    pub fn is_done(&self) -> bool {
        self.state.lock().map(|s| s.done).unwrap_or(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_shared_plan_is_sent_where_a_copied_plan_was() {
        let plan: TaskPlan = serde_json::from_value(json!({
            "plan_id": "plan_1", "task_type": "parallel", "reasoning": "r", "total_tasks": 1,
            "missing_semantic_keys": [], "user_friendly_message": "m",
            "sub_tasks": [{ "task_id": "t1", "description": "d", "assigned_agent": "weather_agent",
                "inputs": { "message": "q", "city": "北京" }, "dependencies": [], "status": "done",
                "output": { "z": 1.5, "a": [1, 2] } }],
        }))
        .unwrap();
        let ev = StageEvent::new(Stage::Answer, "a")
            .plan(Arc::new(plan.clone()))
            .state("summarizer", "template")
            .meta("semantic_info", json!([]));
        // What the event carried before: the plan copied into metadata as a JSON tree.
        let copied = json!({ "state": { "plan": plan, "summarizer": "template" }, "semantic_info": [] });
        assert_eq!(serde_json::to_string(&ev.wire_metadata()).unwrap(), copied.to_string());
        let wire: Value = serde_json::to_value(&ev).unwrap();
        assert_eq!(wire["metadata"], copied);
        assert_eq!(wire["type"], "done");
        assert!(Arc::ptr_eq(ev.payload.plan.as_ref().unwrap(), ev.clone().payload.plan.as_ref().unwrap()));
    }
}
