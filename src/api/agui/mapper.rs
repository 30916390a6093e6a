//! [`AgUiMapper`]: one turn's stage events (docs/events.md) as AG-UI 1.0 events (`@ag-ui/core`'s
//! schemas; the table is in docs/http-api.md, "AG-UI").
//!
//! - Stages are `STEP_STARTED` / `STEP_FINISHED` (`intent`, `plan`, `execute`, `summarize`), and
//!   their thinking texts `REASONING_*` messages: one reasoning span per step, one message per
//!   text.
//! - The plan is an activity message (`ACTIVITY_SNAPSHOT`, `activityType: "PLAN"`, message id =
//!   plan id), kept current by `ACTIVITY_DELTA` JSON Patches as sub-tasks change status and, at the
//!   end, to the final plan.
//! - Each dispatched sub-task is a sub-agent run: `SUBAGENT_STARTED` (`subagentRunId` = task id,
//!   `name` = agent id, `description` = the sub-task), its text message (message id = task id)
//!   carrying the `subagentRunId`, then `SUBAGENT_FINISHED` (`outcome: success`, `result` = its
//!   output; `suspended` with the interrupt id when an A2A agent asked a question) or
//!   `SUBAGENT_ERROR` (`message`, `code`). Sub-tasks never dispatched (skipped, invalid inputs)
//!   only get a text message of the parent agent.
//! - The answer is `TEXT_MESSAGE_*` (`answer_<runId>`), then `RUN_FINISHED` (with interrupts for
//!   missing keys and questions) or `RUN_ERROR`.

use std::sync::Arc;

use serde_json::{json, Value};

use crate::config::key_subschema;
use crate::events::{Stage, StageEvent};
use crate::planner::{RemoteQuestion, SemanticInfo};
use crate::registry::Registry;

/// Translates one turn's stage events into AG-UI events.
pub struct AgUiMapper {
    thread_id: String,
    run_id: String,
    registry: Arc<Registry>,
    step: Option<&'static str>,
    /// Text messages started and not yet ended (task ids).
    open: Vec<String>,
    /// Sub-agent runs started and not yet finished (task ids).
    subagents: Vec<String>,
    answer_open: bool,
    /// The plan activity: message id and content as the client has it after the events sent.
    plan: Option<(String, Value)>,
    /// The open reasoning span of the current step.
    reasoning: Option<String>,
}

impl AgUiMapper {
    /// A mapper for one run.
    pub fn new(thread_id: String, run_id: String, registry: Arc<Registry>) -> Self {
        Self {
            thread_id,
            run_id,
            registry,
            step: None,
            open: Vec::new(),
            subagents: Vec::new(),
            answer_open: false,
            plan: None,
            reasoning: None,
        }
    }

    /// `RUN_STARTED`.
    pub fn start(&self) -> Vec<Value> {
        vec![json!({ "type": "RUN_STARTED", "threadId": self.thread_id, "runId": self.run_id })]
    }

    fn answer_id(&self) -> String {
        format!("answer_{}", self.run_id)
    }

    fn enter(&mut self, step: &'static str, out: &mut Vec<Value>) {
        if self.step == Some(step) {
            return;
        }
        self.leave(out);
        out.push(json!({ "type": "STEP_STARTED", "stepName": step }));
        self.step = Some(step);
    }

    fn leave(&mut self, out: &mut Vec<Value>) {
        self.end_reasoning(out);
        if let Some(step) = self.step.take() {
            out.push(json!({ "type": "STEP_FINISHED", "stepName": step }));
        }
    }

    /// A stage's thinking text as one reasoning message, in the current step's span.
    fn reason(&mut self, seq: u64, text: &str, out: &mut Vec<Value>) {
        if text.is_empty() {
            return;
        }
        if self.reasoning.is_none() {
            let span = format!("{}_reasoning_{}", self.run_id, self.step.unwrap_or("run"));
            out.push(json!({ "type": "REASONING_START", "messageId": span }));
            self.reasoning = Some(span);
        }
        let id = format!("{}_reasoning_{seq}", self.run_id);
        out.push(json!({ "type": "REASONING_MESSAGE_START", "messageId": id, "role": "reasoning" }));
        out.push(json!({ "type": "REASONING_MESSAGE_CONTENT", "messageId": id, "delta": text }));
        out.push(json!({ "type": "REASONING_MESSAGE_END", "messageId": id }));
    }

    fn end_reasoning(&mut self, out: &mut Vec<Value>) {
        if let Some(span) = self.reasoning.take() {
            out.push(json!({ "type": "REASONING_END", "messageId": span }));
        }
    }

    /// `event` with `subagentRunId` when `task` is a running sub-agent.
    fn attributed(&self, mut event: Value, task: &str) -> Value {
        if self.subagents.iter().any(|t| t == task) {
            event["subagentRunId"] = json!(task);
        }
        event
    }

    /// Starts the message `id` unless open, then appends `delta` (if any).
    fn text(&mut self, out: &mut Vec<Value>, id: &str, delta: &str) {
        if !self.open.iter().any(|t| t == id) {
            out.push(
                self.attributed(json!({ "type": "TEXT_MESSAGE_START", "messageId": id, "role": "assistant" }), id),
            );
            self.open.push(id.to_string());
        }
        if !delta.is_empty() {
            out.push(self.attributed(json!({ "type": "TEXT_MESSAGE_CONTENT", "messageId": id, "delta": delta }), id));
        }
    }

    fn close_text(&mut self, id: &str, out: &mut Vec<Value>) {
        if let Some(pos) = self.open.iter().position(|t| t == id) {
            out.push(self.attributed(json!({ "type": "TEXT_MESSAGE_END", "messageId": id }), id));
            self.open.remove(pos);
        }
    }

    /// Ends the sub-agent run of `task` with `event` (its `subagentRunId` is set here).
    fn end_subagent(&mut self, task: &str, mut event: Value, out: &mut Vec<Value>) {
        if let Some(pos) = self.subagents.iter().position(|t| t == task) {
            self.subagents.remove(pos);
            event["subagentRunId"] = json!(task);
            out.push(event);
        }
    }

    /// The plan activity after `change` to sub-task `task`: an `ACTIVITY_DELTA` when it changed.
    fn plan_delta(&mut self, task: &str, change: impl FnOnce(&mut serde_json::Map<String, Value>)) -> Option<Value> {
        let (_, content) = self.plan.as_ref()?;
        let mut next = content.clone();
        let sub = next["sub_tasks"].as_array_mut()?.iter_mut().find(|t| t["task_id"] == task)?;
        change(sub.as_object_mut()?);
        self.replace_plan(next)
    }

    /// An `ACTIVITY_DELTA` from the plan as sent to `next`, if they differ.
    fn replace_plan(&mut self, next: Value) -> Option<Value> {
        let (id, content) = self.plan.as_mut()?;
        let patch = json_patch::diff(content, &next);
        if patch.is_empty() {
            return None;
        }
        *content = next;
        Some(json!({ "type": "ACTIVITY_DELTA", "messageId": id, "activityType": "PLAN", "patch": patch }))
    }

    fn status(&mut self, task: &str, status: &str, out: &mut Vec<Value>) {
        out.extend(self.plan_delta(task, |t| {
            t.insert("status".into(), json!(status));
        }));
    }

    /// The AG-UI events for one stage event.
    pub fn map(&mut self, ev: &StageEvent) -> Vec<Value> {
        let mut out = Vec::new();
        let task = ev.task_id.clone().unwrap_or_default();
        match ev.stage {
            Stage::IntentStarted | Stage::IntentDone => {
                self.enter("intent", &mut out);
                self.reason(ev.seq, &ev.content, &mut out);
            }
            Stage::PlanStarted => {
                self.enter("plan", &mut out);
                self.reason(ev.seq, &ev.content, &mut out);
            }
            Stage::PlanDone => self.plan_done(ev, &mut out),
            // An A2A agent asked something: its question was relayed; its message and its run end
            // here, suspended on the interrupt the run finishes with.
            Stage::Blocked if ev.task_id.is_some() => {
                self.close_text(&task, &mut out);
                let outcome = json!({ "type": "suspended", "interruptIds": [task] });
                self.end_subagent(&task, json!({ "type": "SUBAGENT_FINISHED", "outcome": outcome }), &mut out);
                out.extend(self.plan_delta(&task, |t| {
                    t.insert("status".into(), json!("blocked"));
                    t.insert("reason".into(), json!(ev.content));
                }));
            }
            Stage::Blocked => {}
            Stage::AgentStarted => {
                self.enter("execute", &mut out);
                let mut started = json!({ "type": "SUBAGENT_STARTED", "subagentRunId": task, "name": ev.agent_id });
                if let Some(d) = self.description(&task) {
                    started["description"] = json!(d);
                }
                out.push(started);
                self.subagents.push(task.clone());
                self.text(&mut out, &task, "");
                self.status(&task, "running", &mut out);
            }
            Stage::AgentDelta => self.text(&mut out, &task, &ev.content),
            Stage::AgentDone | Stage::AgentFailed => self.agent_finished(ev, &task, &mut out),
            Stage::SummarizeStarted => {
                self.enter("summarize", &mut out);
                self.reason(ev.seq, &ev.content, &mut out);
            }
            Stage::AnswerDelta => {
                self.end_reasoning(&mut out);
                let id = self.answer_id();
                self.text(&mut out, &id, &ev.content);
                self.answer_open = true;
            }
            Stage::Answer | Stage::Escalated => self.finish(ev, &mut out),
            Stage::Error => {
                self.leave(&mut out);
                out.push(json!({ "type": "RUN_ERROR", "message": ev.content, "code": "supervisor_error" }));
            }
        }
        out
    }

    fn plan_done(&mut self, ev: &StageEvent, out: &mut Vec<Value>) {
        self.enter("plan", out);
        self.reason(ev.seq, &ev.content, out);
        let Some(plan) = ev.payload.plan.as_deref() else { return };
        let content = serde_json::to_value(plan).unwrap_or_default();
        out.push(json!({ "type": "ACTIVITY_SNAPSHOT", "messageId": plan.plan_id, "activityType": "PLAN", "content": content, "replace": true }));
        self.plan = Some((plan.plan_id.clone(), content));
    }

    /// The sub-task's description, from the plan.
    fn description(&self, task: &str) -> Option<String> {
        let (_, plan) = self.plan.as_ref()?;
        let sub = plan["sub_tasks"].as_array()?.iter().find(|t| t["task_id"] == task)?;
        sub["description"].as_str().map(str::to_string)
    }

    /// `agent_done` / `agent_failed`: the final text, the end of the message and of the run.
    fn agent_finished(&mut self, ev: &StageEvent, task: &str, out: &mut Vec<Value>) {
        self.enter("execute", out);
        let state = &ev.metadata.get("state").cloned().unwrap_or_default();
        // The final message (or failure text) follows any streamed progress.
        self.text(out, task, &ev.content);
        self.close_text(task, out);
        if ev.stage == Stage::AgentDone {
            let mut finished = json!({ "type": "SUBAGENT_FINISHED", "outcome": { "type": "success" } });
            if !state["output"].is_null() {
                finished["result"] = state["output"].clone();
            }
            self.end_subagent(task, finished, out);
            let (output, message) = (state["output"].clone(), ev.content.clone());
            out.extend(self.plan_delta(task, |t| {
                t.insert("status".into(), json!("done"));
                if !output.is_null() {
                    t.insert("output".into(), output);
                }
                t.insert("message".into(), json!(message));
            }));
        } else {
            let mut error = json!({ "type": "SUBAGENT_ERROR", "message": ev.content });
            if let Some(code) = state["error"]["code"].as_str() {
                error["code"] = json!(code);
            }
            self.end_subagent(task, error, out);
            let status = state["status"].as_str().unwrap_or("failed").to_string();
            self.status(task, &status, out);
        }
    }

    /// `answer` / `escalated`: the answer's text, the final plan, everything closed, then
    /// `RUN_FINISHED`.
    fn finish(&mut self, ev: &StageEvent, out: &mut Vec<Value>) {
        self.end_reasoning(out);
        let id = self.answer_id();
        if !self.answer_open {
            self.text(out, &id, &ev.content);
        }
        self.close_text(&id, out);
        for t in std::mem::take(&mut self.open) {
            out.push(self.attributed(json!({ "type": "TEXT_MESSAGE_END", "messageId": t }), &t));
        }
        // Defensive: a run still open here ended without a result.
        for t in std::mem::take(&mut self.subagents) {
            out.push(
                json!({ "type": "SUBAGENT_ERROR", "subagentRunId": t, "message": ev.content, "code": "not_finished" }),
            );
        }
        if let Some(plan) = ev.payload.plan.as_deref() {
            out.extend(self.replace_plan(serde_json::to_value(plan).unwrap_or_default()));
        }
        self.leave(out);
        let mut finished = json!({ "type": "RUN_FINISHED", "threadId": self.thread_id, "runId": self.run_id });
        let infos = ev.payload.semantic_info.as_deref().unwrap_or_default();
        let questions = ev.payload.questions.as_deref().unwrap_or_default();
        if !infos.is_empty() || !questions.is_empty() {
            let expires = ev.payload.clarification_expires_at.unwrap_or_else(|| self.default_expiry());
            // A plan's answer reports what was done: a did-you-mean question beside it is
            // introduced by its own key description (the part it asks about), not by the answer.
            let mut interrupts = self.interrupts(infos, &ev.content, ev.payload.plan.is_some(), expires);
            interrupts.extend(questions.iter().map(|q| question_interrupt(q, expires)));
            finished["outcome"] = json!({ "type": "interrupt", "interrupts": interrupts });
        } else {
            finished["outcome"] = json!({ "type": "success" });
            if let Some(card) = &ev.payload.escalation {
                finished["result"] = json!({ "escalation": &**card });
            }
        }
        out.push(finished);
    }

    /// When a clarification asked now would expire, for answers that carry no stored expiry.
    fn default_expiry(&self) -> chrono::DateTime<chrono::Utc> {
        chrono::Utc::now()
            + chrono::Duration::from_std(self.registry.settings.clarification_timeout.0)
                .unwrap_or(chrono::Duration::MAX)
    }
    /// One interrupt per blocked sub-task, merging its `miss` and `invalid` keys; a did-you-mean
    /// question is one interrupt whose `responseSchema` is an enum of the candidates (beside a
    /// plan's answer, `plan_answer`, its message is its own key description, which names the
    /// part it asks about, rather than the answer); a sub-task
    /// blocked for auth gets one `auth_required` interrupt instead.
    fn interrupts(
        &self,
        infos: &[SemanticInfo],
        message: &str,
        plan_answer: bool,
        expires: chrono::DateTime<chrono::Utc>,
    ) -> Vec<Value> {
        // (task id, agent id, [(key, description, widget)])
        type Keys = Vec<(String, String, String)>;
        let mut by_task: Vec<(String, String, Keys)> = Vec::new();
        let mut choices = Vec::new();
        let auth: Vec<&SemanticInfo> = infos.iter().filter(|i| i.auth.is_some()).collect();
        choices.extend(auth.iter().map(|i| auth_interrupt(i, expires)));
        for info in infos.iter().filter(|i| !auth.iter().any(|a| a.task_id == i.task_id)) {
            if info.kind == crate::planner::MissKind::Intent {
                let own = info.key_descriptions.first().filter(|_| plan_answer);
                choices.push(self.choice_interrupt(info, own.map_or(message, String::as_str), expires));
                continue;
            }
            let entry = match by_task.iter_mut().position(|(t, _, _)| *t == info.task_id) {
                Some(i) => &mut by_task[i],
                None => {
                    by_task.push((info.task_id.clone(), info.sub_agent_id.clone(), Vec::new()));
                    by_task.last_mut().expect("just pushed")
                }
            };
            for ((k, d), w) in info.keys.iter().zip(&info.key_descriptions).zip(&info.fe_widgets_suggestion) {
                entry.2.push((k.clone(), d.clone(), w.clone()));
            }
        }
        by_task
            .into_iter()
            .map(|(task, agent, keys)| {
                let names: Vec<&str> = keys.iter().map(|(k, _, _)| k.as_str()).collect();
                let input_schema = self.registry.get(&agent).map_or_else(|| json!({}), |a| (*a.input_schema).clone());
                let mut schema = key_subschema(&input_schema, &names);
                // A key the input schema does not describe (an agent registered by its card alone)
                // is still a described text field.
                for (k, d, _) in &keys {
                    let Some(Value::Object(prop)) = schema["properties"].get_mut(k) else { continue };
                    if prop.is_empty() {
                        prop.insert("type".into(), json!("string"));
                    }
                    prop.entry("description").or_insert_with(|| json!(d));
                    // A value to confirm is offered as the field's default (accepting the form
                    // confirms it; changing it replaces it).
                    let confirm = infos.iter().filter(|i| i.task_id == task && i.kind == crate::planner::MissKind::Confirm);
                    if let Some(v) = confirm.flat_map(|i| i.keys.iter().zip(&i.values)).find(|(key, _)| *key == k).map(|(_, v)| v) {
                        prop.insert("default".into(), v.clone());
                    }
                }
                let widgets: Vec<Value> = keys
                    .iter()
                    .map(|(k, d, w)| {
                        json!({ "key": k, "description": d, "widget": w, "descriptor": self.registry.widgets.get(w.as_str()) })
                    })
                    .collect();
                json!({
                    "id": task,
                    "reason": "input_required",
                    "message": message,
                    "responseSchema": schema,
                    "expiresAt": expires.to_rfc3339(),
                    "metadata": { "widgets": widgets },
                })
            })
            .chain(choices)
            .collect()
    }

    /// The interrupt of a did-you-mean question: `{intent: <agent id>}` with the candidates as
    /// an enum (`oneOf` with titles for display), the `intent_picker` widget and the candidates.
    fn choice_interrupt(&self, info: &SemanticInfo, message: &str, expires: chrono::DateTime<chrono::Utc>) -> Value {
        let key = crate::planner::choice::CHOICE_KEY;
        let description = info.key_descriptions.first().cloned().unwrap_or_default();
        let ids: Vec<&str> = info.candidates.iter().map(|c| c.agent_id.as_str()).collect();
        let titled: Vec<Value> = info
            .candidates
            .iter()
            .map(|c| json!({ "const": c.agent_id, "title": c.name, "description": c.description }))
            .collect();
        let widget = info.fe_widgets_suggestion.first().cloned().unwrap_or_default();
        json!({
            "id": info.task_id,
            "reason": "input_required",
            "message": message,
            "responseSchema": {
                "type": "object",
                "properties": { key: { "type": "string", "enum": ids, "oneOf": titled, "description": description } },
                "required": [key],
            },
            "expiresAt": expires.to_rfc3339(),
            "metadata": {
                "widgets": [{ "key": key, "description": description, "widget": widget, "descriptor": self.registry.widgets.get(widget.as_str()) }],
                "candidates": info.candidates,
            },
        })
    }
}

/// The interrupt of a sub-task blocked for auth: the client signs the user in (or gets the
/// scopes) and resumes it (`status: "resolved"`, no payload needed) with the new credentials.
fn auth_interrupt(info: &SemanticInfo, expires: chrono::DateTime<chrono::Utc>) -> Value {
    let auth = info.auth.as_ref();
    json!({
        "id": info.task_id,
        "reason": "auth_required",
        "message": auth.map(|a| a.message.as_str()),
        "expiresAt": expires.to_rfc3339(),
        "metadata": {
            "code": auth.map(|a| a.code.as_str()),
            "scopes": auth.map(|a| &a.scopes),
            "missing_scopes": auth.map(|a| &a.missing_scopes),
        },
    })
}

/// The interrupt for an A2A sub-agent's own question: its message is the question, the answer a
/// text (`payload: {"answer": "…"}`), sent to the agent on its task.
fn question_interrupt(q: &RemoteQuestion, expires: chrono::DateTime<chrono::Utc>) -> Value {
    json!({
        "id": q.task_id,
        "subagentRunId": q.task_id,
        "reason": "input_required",
        "message": q.question,
        "responseSchema": {
            "type": "object",
            "properties": { "answer": { "type": "string", "description": q.question } },
            "required": ["answer"],
        },
        "expiresAt": expires.to_rfc3339(),
        "metadata": { "widgets": [] },
    })
}
