//! Validation of a task plan proposed by a model: the same rules whatever the planner
//! (docs/planning.md).
//!
//! A [`ProposedPlan`] becomes a [`TaskPlan`] only through the same [`plan::build`] the rule planner
//! uses, after these checks: every agent exists and is enabled, task ids are unique, dependencies
//! name tasks of the plan and form no cycle, and every semantic-key value the model filled in fits
//! the input schema. Problems are returned as plain sentences, ready to be sent back to the model
//! for one repair.

use std::collections::{BTreeSet, HashMap};

use serde::Deserialize;
use serde_json::{Map, Value};

use super::plan::{self, coerce, topo_order, Candidate, KeySources, TaskPlan};
use crate::registry::{CapabilityCard, Registry};
use crate::text::Lang;

/// A model's plan (the JSON asked for by `prompts/plan.md`).
#[derive(Debug, Clone, Deserialize)]
pub struct ProposedPlan {
    /// The sub-tasks.
    #[serde(default)]
    pub sub_tasks: Vec<ProposedTask>,
    /// The model's reasoning (internal).
    #[serde(default)]
    pub reasoning: String,
}

/// One proposed sub-task.
#[derive(Debug, Clone, Deserialize)]
pub struct ProposedTask {
    /// The model's id for the task (`task_1`); replaced by the plan's own ids.
    pub task_id: String,
    /// The capability card's id.
    pub assigned_agent: String,
    /// Inputs following the agent's input schema.
    #[serde(default)]
    pub inputs: Map<String, Value>,
    /// Model task ids this one waits for.
    #[serde(default)]
    pub dependencies: Vec<String>,
}

/// Validates `proposal` and builds the plan. `message` is used for sub-tasks whose inputs carry
/// none. Returns the plan and the key values it brought (for the session).
///
/// # Errors
/// Every problem found, as sentences for a repair prompt.
pub fn build_from_proposal(
    registry: &Registry,
    proposal: &ProposedPlan,
    src: KeySources<'_>,
    plan_id: &str,
    lang: Lang,
    message: &str,
) -> Result<(TaskPlan, Map<String, Value>), Vec<String>> {
    let (deps, mut problems) = check_graph(proposal);
    let mut found = Map::new();
    let mut candidates = Vec::with_capacity(proposal.sub_tasks.len());
    for (i, t) in proposal.sub_tasks.iter().enumerate() {
        let Some(agent) = registry.get_enabled(&t.assigned_agent) else {
            problems.push(format!("{}: {:?} is not an available agent", t.task_id, t.assigned_agent));
            continue;
        };
        let inputs = proposed_inputs(agent, t, src, message, &mut found, &mut problems);
        candidates.push(Candidate {
            task_id: None,
            agent: agent.clone(),
            inputs,
            depends_on: deps[i].iter().copied().collect(),
            remote: None,
            own_text: None,
        });
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    let reasoning = if proposal.reasoning.is_empty() { "llm planner".to_string() } else { proposal.reasoning.clone() };
    let (plan, mut from_build) = plan::build(registry.texts(), candidates, src, plan_id, lang, reasoning);
    from_build.extend(found);
    Ok((plan, from_build))
}

/// The proposal's dependency graph by task index, and its problems: no sub-tasks, duplicate ids,
/// unknown or self dependencies, cycles.
fn check_graph(proposal: &ProposedPlan) -> (Vec<BTreeSet<usize>>, Vec<String>) {
    let mut problems = Vec::new();
    if proposal.sub_tasks.is_empty() {
        problems.push("the plan has no sub_tasks".to_string());
    }
    let mut index: HashMap<&str, usize> = HashMap::new();
    for (i, t) in proposal.sub_tasks.iter().enumerate() {
        if index.insert(t.task_id.as_str(), i).is_some() {
            problems.push(format!("task_id {:?} is used twice", t.task_id));
        }
    }
    let mut deps: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); proposal.sub_tasks.len()];
    for (i, t) in proposal.sub_tasks.iter().enumerate() {
        for d in &t.dependencies {
            match index.get(d.as_str()) {
                Some(&j) if j != i => {
                    deps[i].insert(j);
                }
                Some(_) => problems.push(format!("{} depends on itself", t.task_id)),
                None => problems.push(format!("{} depends on {d:?}, which is not a task of the plan", t.task_id)),
            }
        }
    }
    if let Err(stuck) = topo_order(&deps) {
        let ids: Vec<&str> = stuck.iter().map(|&i| proposal.sub_tasks[i].task_id.as_str()).collect();
        problems.push(format!("the dependencies form a cycle among {}", ids.join(", ")));
    }
    (deps, problems)
}

/// A proposed sub-task's inputs: its message (or the turn's), and each proposed value that fits
/// the agent's input schema (values of semantic keys are remembered in `found`; a value the
/// frontend sent in `slots` wins over the model's). Misfits are problems.
fn proposed_inputs(
    agent: &CapabilityCard,
    t: &ProposedTask,
    src: KeySources<'_>,
    message: &str,
    found: &mut Map<String, Value>,
    problems: &mut Vec<String>,
) -> Map<String, Value> {
    let props = agent.input_schema.get("properties").and_then(Value::as_object);
    let mut inputs = Map::new();
    let msg = t.inputs.get("message").and_then(Value::as_str).filter(|m| !m.trim().is_empty()).unwrap_or(message);
    inputs.insert("message".into(), Value::String(msg.to_string()));
    for (name, value) in &t.inputs {
        if name == "message" || value.is_null() || src.slots.contains_key(name) {
            continue;
        }
        match agent.keys.iter().find(|k| &k.spec.key == name) {
            Some(key) => {
                let v = coerce(key, value);
                if key.check(&v, src.today).is_ok() {
                    found.insert(name.clone(), v.clone());
                    inputs.insert(name.clone(), v);
                } else {
                    problems.push(format!("{}: inputs.{name} = {value} does not fit the input schema", t.task_id));
                }
            }
            None if props.is_some_and(|p| p.contains_key(name)) => {
                inputs.insert(name.clone(), value.clone());
            }
            None => {}
        }
    }
    inputs
}
