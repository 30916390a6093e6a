//! A plan's stages: `plan_started` / `plan_done` / `blocked` events, DAG execution, and the
//! summary (the model's in LLM mode, else the template).

use std::sync::Arc;

use serde_json::{Map, Value};
use tracing::Instrument;

use super::turn::TurnCtx;
use super::Supervisor;
use crate::events::{Stage, StageEvent};
use crate::executor::{RunReport, TurnContext};
use crate::planner::{TaskPlan, TaskStatus};
use crate::registry::Registry;
use crate::session::Session;
use crate::summarize;

impl Supervisor {
    /// Plan, blocked, execution and summary events; returns the summary and who wrote it
    /// (`llm` or `template`).
    pub(super) async fn run_plan(
        &self,
        t: &TurnCtx<'_>,
        plan: &mut TaskPlan,
        found: Map<String, Value>,
        session: &mut Session,
    ) -> (String, &'static str, RunReport) {
        let (registry, req, lang, sink) = (t.registry, t.req, t.lang, t.sink);
        sink.emit(StageEvent::new(Stage::PlanStarted, t.text("stage-plan-started")));
        // A snapshot: the plan's statuses change while it runs.
        sink.emit(StageEvent::new(Stage::PlanDone, plan.user_friendly_message.clone()).plan(Arc::new(plan.clone())));
        for info in &plan.semantic_info {
            for key in &info.keys {
                crate::metrics::blocked(key);
            }
        }
        if !plan.semantic_info.is_empty() {
            sink.emit(
                StageEvent::new(Stage::Blocked, summarize::blocked_text(registry, plan, lang))
                    .semantic_info(&plan.semantic_info),
            );
        }
        for (k, v) in found {
            session.slots.insert(k, v);
        }
        let ctx = TurnContext {
            session_id: session.session_id.clone(),
            user_id: req.user_id.clone(),
            thread_id: t.thread_id.to_string(),
            trace_id: req.trace_id.clone().unwrap_or_else(|| uuid::Uuid::new_v4().simple().to_string()),
            lang,
            deadline: t.deadline,
            principal: req.principal.clone(),
        };
        let started = std::time::Instant::now();
        let report = self
            .executor
            .run(registry, plan, &ctx, sink)
            .instrument(tracing::info_span!("stage", name = "execute"))
            .await;
        crate::metrics::stage("execute", started.elapsed());
        let started = std::time::Instant::now();
        remember_outputs(registry, plan, session);
        sink.emit(StageEvent::new(Stage::SummarizeStarted, t.text("stage-summarize-started")).agent("summarize"));
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
                    let checked = summarize::check_model_summary(registry, plan, lang, text);
                    if let summarize::CheckedSummary::Rejected { claim, .. } = &checked {
                        tracing::warn!(%claim, "the model's summary reports unfinished work as done; using the template");
                    }
                    let (text, summarizer) = checked.into_parts();
                    return (text, summarizer, report);
                }
                Err(e) => tracing::warn!(error = %e, "model summary failed; using the template"),
            }
        }
        let text = summarize::summary(registry, plan, lang);
        crate::metrics::stage("summarize", started.elapsed());
        (text, "template", report)
    }
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
