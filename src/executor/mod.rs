//! Runs a [`TaskPlan`]'s runnable sub-tasks as a DAG (docs/sub-agent-protocol.md).
//!
//! Each sub-task starts as soon as all its dependencies are done, at most
//! `supervisor.max_parallel_tasks` at once. A dependent receives its dependencies' outputs in
//! `context.dependencies`, and any semantic key it still lacks is filled from them. A failed
//! sub-task marks its (transitive) dependents `skipped`; independent ones go on. Blocked
//! sub-tasks are never touched here: only `pending` ones are dispatched.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{json, Map, Value};
use tokio::task::JoinSet;
use tracing::Instrument;

use crate::auth::audit::{inputs_hash, AuditLog, AuditRecord};
use crate::auth::Principal;
use crate::config::Access;
use crate::dispatch::{request_body, traceparent, AgentReply, Call, DispatchError, Dispatcher, RequestIds};
use crate::events::{EventSink, Stage, StageEvent};
use crate::planner::{SubTask, TaskPlan, TaskStatus};
use crate::registry::{CapabilityCard, Registry};
use crate::text::{Lang, Texts};

/// Who and what a turn is about: passed to sub-agents and used for user-facing text.
#[derive(Debug, Clone)]
pub struct TurnContext {
    /// Session id.
    pub session_id: String,
    /// User id.
    pub user_id: String,
    /// Thread id.
    pub thread_id: String,
    /// 32 hex digits; every dispatch sends a `traceparent` with it.
    pub trace_id: String,
    /// Language of user-facing text.
    pub lang: Lang,
    /// When the turn must be over: sub-tasks still running then fail with "deadline".
    pub deadline: tokio::time::Instant,
    /// The verified caller (`None` in auth mode `none`): `context.user` of every request, the
    /// token forwarded to agents with `forward_user_token`, the user of audit lines.
    pub principal: Option<Arc<Principal>>,
}

/// What a run saw beyond the sub-tasks' statuses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunReport {
    /// Sub-tasks that failed because their agent's circuit was open.
    pub circuit_open: usize,
}

/// Runs plans; holds the dispatcher.
#[derive(Debug, Clone, Default)]
pub struct Executor {
    dispatcher: Dispatcher,
    audit: Arc<AuditLog>,
}

type Finished = (usize, Result<AgentReply, DispatchError>);

impl Executor {
    /// An executor dispatching through `dispatcher`.
    pub fn new(dispatcher: Dispatcher) -> Self {
        Self { dispatcher, audit: Arc::default() }
    }

    /// The dispatcher.
    pub fn dispatcher(&self) -> &Dispatcher {
        &self.dispatcher
    }

    /// Runs every `pending` sub-task of `plan` to `done`, `failed` or `skipped`, emitting
    /// `agent_started` / `agent_delta` / `agent_done` / `agent_failed` events. Results are written
    /// into the sub-tasks (`status`, `output`, `message`, `reason`). Every call of a `write` agent
    /// writes its audit line before its result is recorded.
    pub async fn run(
        &self,
        registry: &Registry,
        plan: &mut TaskPlan,
        ctx: &TurnContext,
        sink: &EventSink,
    ) -> RunReport {
        let mut report = RunReport::default();
        let n = plan.sub_tasks.len();
        let deps = dependency_indices(plan);
        let max_parallel = registry.settings.max_parallel_tasks.max(1) as usize;
        let texts = registry.texts();
        let mut running: JoinSet<Finished> = JoinSet::new();

        loop {
            // Start every ready sub-task, up to the parallelism bound.
            for i in ready(plan, &deps) {
                if running.len() >= max_parallel {
                    break;
                }
                match self.prepare(registry, plan, &deps[i], i, ctx) {
                    Ok((agent, body)) => {
                        plan.sub_tasks[i].status = TaskStatus::Running;
                        self.spawn_dispatch(&mut running, registry, &plan.sub_tasks[i], i, agent, body, ctx, sink);
                    }
                    Err(e) => self.finish(texts, plan, &deps, i, Err(e), ctx, sink),
                }
            }
            let mut finished = |plan: &mut TaskPlan, i: usize, result: Result<AgentReply, DispatchError>| {
                if matches!(result, Err(DispatchError::CircuitOpen(_))) {
                    report.circuit_open += 1;
                }
                self.audit(registry, plan, i, &result, ctx);
                self.finish(texts, plan, &deps, i, result, ctx, sink);
            };
            let joined = match tokio::time::timeout_at(ctx.deadline, running.join_next()).await {
                Ok(Some(joined)) => joined,
                Ok(None) => break,
                Err(_) => {
                    // The turn's deadline: stop waiting, fail what is still running.
                    running.abort_all();
                    for i in 0..n {
                        if plan.sub_tasks[i].status == TaskStatus::Running {
                            finished(plan, i, Err(DispatchError::Deadline));
                        }
                    }
                    break;
                }
            };
            match joined {
                Ok((i, result)) => finished(plan, i, result),
                Err(e) => tracing::error!(error = %e, "dispatch task panicked"),
            }
        }
        // Anything still pending waited on a failed path that was not marked (defensive).
        for task in &mut plan.sub_tasks {
            if matches!(task.status, TaskStatus::Pending | TaskStatus::Running) {
                task.status = TaskStatus::Skipped;
                task.reason = Some("not started".into());
            }
        }
        report
    }

    /// Emits `agent_started` and starts the dispatch of sub-task `i` in `running`.
    #[allow(clippy::too_many_arguments)]
    fn spawn_dispatch(
        &self,
        running: &mut JoinSet<Finished>,
        registry: &Registry,
        task: &SubTask,
        i: usize,
        agent: Arc<CapabilityCard>,
        body: Value,
        ctx: &TurnContext,
        sink: &EventSink,
    ) {
        let texts = registry.texts();
        sink.emit(
            StageEvent::new(Stage::AgentStarted, started_text(texts, ctx.lang, &agent, task))
                .agent(&task.assigned_agent)
                .task(&task.task_id),
        );
        let dispatcher = self.dispatcher.clone();
        let sink = sink.clone();
        let task_id = task.task_id.clone();
        let remote = task.remote.clone();
        let breaker = registry.settings.circuit_breaker.clone();
        let tp = traceparent(&ctx.trace_id);
        let token = ctx.principal.as_ref().and_then(|p| p.token.clone()).filter(|_| agent.spec.forward_user_token);
        // One span per dispatch, inside the turn's span (its trace id and thread).
        let span = tracing::info_span!("dispatch", agent = %agent.spec.id, task = %task_id);
        running.spawn(
            async move {
                let agent_id = agent.spec.id.clone();
                let on_delta = |text: &str| {
                    sink.emit(StageEvent::new(Stage::AgentDelta, text).agent(&agent_id).task(&task_id));
                };
                let call = Call { traceparent: &tp, user_token: token.as_deref() };
                (i, dispatcher.dispatch(&agent, &body, remote.as_ref(), &call, &on_delta, &breaker).await)
            }
            .instrument(span),
        );
    }

    /// The audit line of a finished call of a `write` agent (`auth.audit_log`).
    fn audit(
        &self,
        registry: &Registry,
        plan: &TaskPlan,
        i: usize,
        result: &Result<AgentReply, DispatchError>,
        ctx: &TurnContext,
    ) {
        let task = &plan.sub_tasks[i];
        let (Some(to), Some(agent)) = (&registry.audit_log, registry.get(&task.assigned_agent)) else { return };
        if agent.spec.access != Access::Write {
            return;
        }
        let outcome = match result {
            Ok(_) => "done",
            Err(DispatchError::InputRequired(_)) => "input_required",
            Err(e) => e.code(),
        };
        let record = AuditRecord {
            time: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            user: ctx.principal.as_ref().map_or(&ctx.user_id, |p| &p.user_id),
            verified: ctx.principal.is_some(),
            agent: agent.id(),
            task_id: &task.task_id,
            trace_id: &ctx.trace_id,
            inputs_sha256: inputs_hash(&Value::Object(task.inputs.clone())),
            outcome,
        };
        self.audit.write(to.as_deref(), &record);
    }

    /// Fills inputs from dependency outputs, validates them, builds the request body.
    fn prepare(
        &self,
        registry: &Registry,
        plan: &mut TaskPlan,
        deps: &[usize],
        i: usize,
        ctx: &TurnContext,
    ) -> Result<(Arc<CapabilityCard>, Value), DispatchError> {
        let agent_id = plan.sub_tasks[i].assigned_agent.clone();
        let agent = registry
            .get(&agent_id)
            .cloned()
            .ok_or_else(|| DispatchError::InvalidInputs(format!("agent {agent_id} is not registered")))?;
        let mut dep_outputs = Map::new();
        for &j in deps {
            let dep_id = plan.sub_tasks[j].task_id.clone();
            let output = plan.sub_tasks[j].output.clone().unwrap_or(Value::Null);
            for key in &agent.keys {
                let name = &key.spec.key;
                if !plan.sub_tasks[i].inputs.contains_key(name) {
                    // The output field of the key's name, else of one of its `from` names.
                    let names = std::iter::once(name).chain(&key.spec.from);
                    if let Some(v) = names.filter_map(|n| output.get(n)).find(|v| key.accepts(v)) {
                        plan.sub_tasks[i].inputs.insert(name.clone(), v.clone());
                    }
                }
            }
            dep_outputs.insert(dep_id, output);
        }
        let task = &plan.sub_tasks[i];
        let user = ctx.principal.as_ref().map(|p| p.context());
        let inputs = Value::Object(task.inputs.clone());
        let errors = agent.input_errors(&inputs);
        if !errors.is_empty() {
            return Err(DispatchError::InvalidInputs(errors.join("; ")));
        }
        let ids = RequestIds {
            task_id: &task.task_id,
            plan_id: &plan.plan_id,
            session_id: &ctx.session_id,
            user_id: &ctx.user_id,
            thread_id: &ctx.thread_id,
            user: user.as_ref(),
        };
        let body = request_body(ids, inputs, dep_outputs);
        Ok((agent, body))
    }

    /// Records a result and, on failure, skips the dependents.
    #[allow(clippy::too_many_arguments)]
    fn finish(
        &self,
        texts: &Texts,
        plan: &mut TaskPlan,
        deps: &[Vec<usize>],
        i: usize,
        result: Result<AgentReply, DispatchError>,
        ctx: &TurnContext,
        sink: &EventSink,
    ) {
        let task = &mut plan.sub_tasks[i];
        match result {
            Ok(reply) => {
                task.status = TaskStatus::Done;
                sink.emit(
                    StageEvent::new(Stage::AgentDone, reply.message.clone())
                        .agent(&task.assigned_agent)
                        .task(&task.task_id)
                        .state("status", TaskStatus::Done)
                        .state("output", &reply.output),
                );
                task.output = Some(reply.output);
                task.message = Some(reply.message);
            }
            Err(DispatchError::InputRequired(remote)) => {
                // An A2A agent asks the user something: a clarification, not a failure.
                task.status = TaskStatus::Blocked;
                task.reason = Some(remote.question.clone());
                sink.emit(
                    StageEvent::new(Stage::Blocked, remote.question.clone())
                        .agent(&task.assigned_agent)
                        .task(&task.task_id)
                        .meta("input_required", json!({ "task_id": task.task_id, "question": remote.question })),
                );
                task.remote = Some(remote);
                // Its dependents wait with it and resume with it.
                mark_dependents(plan, deps, i, TaskStatus::Blocked, "waiting for a blocked sub-task");
            }
            Err(err) => {
                tracing::warn!(agent = %task.assigned_agent, task = %task.task_id, error = %err, "sub-task failed");
                task.status = TaskStatus::Failed;
                let reason = err.user_reason(texts, ctx.lang);
                sink.emit(
                    StageEvent::new(Stage::AgentFailed, failed_text(texts, ctx.lang, &task.description, &reason))
                        .agent(&task.assigned_agent)
                        .task(&task.task_id)
                        .state("status", TaskStatus::Failed)
                        .state("error", json!({ "code": err.code(), "message": err.to_string() })),
                );
                task.reason = Some(reason);
                self.skip_dependents(texts, plan, deps, i, ctx, sink);
            }
        }
    }

    fn skip_dependents(
        &self,
        texts: &Texts,
        plan: &mut TaskPlan,
        deps: &[Vec<usize>],
        failed: usize,
        ctx: &TurnContext,
        sink: &EventSink,
    ) {
        let reason = texts.get(ctx.lang, "dispatch-skipped", &[]);
        for i in mark_dependents(plan, deps, failed, TaskStatus::Skipped, &reason) {
            let task = &plan.sub_tasks[i];
            sink.emit(
                StageEvent::new(Stage::AgentFailed, failed_text(texts, ctx.lang, &task.description, &reason))
                    .agent(&task.assigned_agent)
                    .task(&task.task_id)
                    .state("status", TaskStatus::Skipped),
            );
        }
    }
}

/// At most this many semantic values are named in a progress text.
const VALUES_SHOWN: usize = 3;

/// "正在为您办理接机服务：白云机场、12月1日 14:30…": the card's name and the sub-task's semantic
/// values as people write them (not its description, not ISO dates).
fn started_text(texts: &Texts, lang: Lang, agent: &CapabilityCard, task: &SubTask) -> String {
    let year = chrono::Datelike::year(&chrono::Utc::now());
    let values: Vec<String> = agent
        .keys
        .iter()
        .filter_map(|k| task.inputs.get(&k.spec.key))
        .map(|v| crate::text::human_value(v, lang, year))
        .filter(|v| !v.trim().is_empty())
        .take(VALUES_SHOWN)
        .collect();
    let name = agent.spec.name.for_lang(lang);
    if values.is_empty() {
        return texts.get(lang, "stage-dispatch-started", &[("task", name.into())]);
    }
    let values = values.join(&texts.get(lang, "value-separator", &[]));
    texts.get(lang, "stage-dispatch-started-values", &[("task", name.into()), ("values", values.into())])
}

fn failed_text(texts: &Texts, lang: Lang, description: &str, reason: &str) -> String {
    texts.get(lang, "stage-dispatch-failed", &[("task", description.into()), ("reason", reason.into())])
}

/// Gives the pending (transitive) dependents of `from` the `status` and `reason`; returns them in
/// the order marked.
fn mark_dependents(
    plan: &mut TaskPlan,
    deps: &[Vec<usize>],
    from: usize,
    status: TaskStatus,
    reason: &str,
) -> Vec<usize> {
    let mut marked = Vec::new();
    let mut stack = vec![from];
    while let Some(j) = stack.pop() {
        for (i, task_deps) in deps.iter().enumerate() {
            if task_deps.contains(&j) && plan.sub_tasks[i].status == TaskStatus::Pending {
                plan.sub_tasks[i].status = status;
                plan.sub_tasks[i].reason = Some(reason.to_string());
                marked.push(i);
                stack.push(i);
            }
        }
    }
    marked
}

/// Per sub-task, the indices of the sub-tasks it depends on (unknown ids are ignored).
fn dependency_indices(plan: &TaskPlan) -> Vec<Vec<usize>> {
    let index: HashMap<&str, usize> = plan.sub_tasks.iter().enumerate().map(|(i, t)| (t.task_id.as_str(), i)).collect();
    plan.sub_tasks
        .iter()
        .map(|t| t.dependencies.iter().filter_map(|d| index.get(d.as_str()).copied()).collect())
        .collect()
}

/// The pending sub-tasks whose dependencies are all done, in plan order.
fn ready(plan: &TaskPlan, deps: &[Vec<usize>]) -> Vec<usize> {
    (0..plan.sub_tasks.len())
        .filter(|&i| plan.sub_tasks[i].status == TaskStatus::Pending)
        .filter(|&i| deps[i].iter().all(|&j| plan.sub_tasks[j].status == TaskStatus::Done))
        .collect()
}
