//! The task plan (docs/events.md, docs/planning.md) and how it is built: semantic keys filled and
//! checked, DAG edges from `produces`, cycles broken, blocked sub-tasks marked, the task type
//! derived.
//!
//! [`build`] is shared by fresh planning and by resuming a pending clarification, so both follow
//! the same rules: a key is taken from (in order) the sub-task's already known inputs, the
//! frontend's `slots`, the current text, the session's collected slots; a key nobody supplies but
//! another sub-task of the plan `produces` becomes a dependency; anything else is missing.

use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;

use chrono::NaiveDate;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::matching::{assign, KeyRule};
use crate::registry::{CapabilityCard, KeyDef, Rejection};
use crate::text::{Lang, Texts};

/// Lifecycle of a sub-task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskStatus {
    /// Runnable, not started.
    Pending,
    /// Missing or invalid semantic keys (or waiting on a blocked sub-task): never dispatched.
    Blocked,
    /// Dispatched, not finished.
    Running,
    /// Finished and accepted.
    Done,
    /// The call failed or the reply was rejected.
    Failed,
    /// Not run because a dependency failed.
    Skipped,
    /// Dropped by the user.
    Cancelled,
}

/// Shape of the plan's dependency graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskType {
    /// One sub-task, or a single chain.
    Sequential,
    /// Several sub-tasks, no dependencies.
    Parallel,
    /// Anything else.
    Dag,
}

/// One sub-task of a plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SubTask {
    /// `<plan_id>_task_<n>`.
    pub task_id: String,
    /// What it does, in user words.
    pub description: String,
    /// The capability card's id.
    pub assigned_agent: String,
    /// `message` plus the semantic keys known so far.
    pub inputs: Map<String, Value>,
    /// Task ids that must be done first.
    pub dependencies: Vec<String>,
    /// Current status.
    pub status: TaskStatus,
    /// Why it is blocked, failed or skipped (extension).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The accepted `output` (extension, when done).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    /// The agent's `message` for the user (extension, when done).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The remote A2A task this sub-task continues (extension: set when an A2A agent asked for
    /// input).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote: Option<RemoteTask>,
    /// Keys whose remembered values wait for the user's yes before this sub-task runs
    /// (extension; the `confirm` entry of `semantic_info`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub confirm: Vec<String>,
}

/// An A2A task left in `TASK_STATE_INPUT_REQUIRED`: the next turn continues it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RemoteTask {
    /// The agent's task id.
    pub task_id: String,
    /// The agent's context id.
    pub context_id: String,
    /// What the agent asked.
    pub question: String,
}

/// A question an A2A sub-agent asked the user (its sub-task is blocked on it): one entry of the
/// final answer's `metadata.input_required` (docs/events.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RemoteQuestion {
    /// The blocked sub-task.
    pub task_id: String,
    /// The capability card's id.
    pub sub_agent_id: String,
    /// What the agent asked, in its own words.
    pub question: String,
}

/// Whether a key has no value or a value that fails its schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MissKind {
    /// No value.
    Miss,
    /// A value that fails the input schema's property.
    Invalid,
    /// Which capability was meant: a did-you-mean question (`keys: ["intent"]`, `candidates`).
    Intent,
    /// Not a key: the sub-task's agent is `access: write` and the caller is not verified or
    /// lacks its scopes (extension; `auth` says which).
    Auth,
    /// Not missing: values remembered from earlier turns would drive a write (or `confirm`)
    /// card; the user is asked yes / no first (extension; `values` holds them, in `keys` order).
    Confirm,
}

/// Why an `auth` entry of `semantic_info` blocks its sub-task (extension).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuthNeed {
    /// `sign_in_required` (nobody is verified) or `insufficient_scope`.
    pub code: String,
    /// The scopes the agent's card requires.
    pub scopes: Vec<String>,
    /// Those the caller lacks (all of them when nobody is verified).
    pub missing_scopes: Vec<String>,
    /// What the user is told (catalog text, in the turn's language).
    pub message: String,
}

/// One entry of `metadata.semantic_info` (docs/events.md): parallel arrays in config order, `""`
/// for a key without a widget. Serialized with `fe_wigdets_suggestion` too, a compatibility alias
/// of `fe_widgets_suggestion` (the contract's examples spell it that way); reading ignores the
/// alias.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct SemanticInfo {
    /// `miss`, `invalid` or `intent` (a did-you-mean question).
    #[serde(rename = "type")]
    pub kind: MissKind,
    /// The capability card's id.
    pub sub_agent_id: String,
    /// The blocked sub-task (extension).
    pub task_id: String,
    /// The keys.
    pub keys: Vec<String>,
    /// Their descriptions.
    pub key_descriptions: Vec<String>,
    /// Their widget ids, `""` for none.
    pub fe_widgets_suggestion: Vec<String>,
    /// The capabilities offered by a did-you-mean question (`type: "intent"`), best first.
    #[serde(default)]
    pub candidates: Vec<super::choice::ChoiceCandidate>,
    /// For `invalid`: the values not accepted, parallel to `keys` (extension; not sent when
    /// empty).
    #[serde(default)]
    pub rejected_values: Vec<Value>,
    /// For `invalid`: why each was not accepted, parallel to `keys` (extension; not sent when
    /// empty): `not_an_option`, `past_date` or `invalid`.
    #[serde(default)]
    pub reasons: Vec<Rejection>,
    /// For `type: "auth"`: what is missing (extension).
    #[serde(default)]
    pub auth: Option<AuthNeed>,
    /// For a `confirm` entry: the remembered values to confirm, in `keys` order.
    #[serde(default)]
    pub values: Vec<Value>,
}

impl Serialize for SemanticInfo {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        /// The wire form: the fields in order, then the alias.
        #[derive(Serialize)]
        struct Wire<'a> {
            #[serde(rename = "type")]
            kind: MissKind,
            sub_agent_id: &'a str,
            task_id: &'a str,
            keys: &'a [String],
            key_descriptions: &'a [String],
            fe_widgets_suggestion: &'a [String],
            fe_wigdets_suggestion: &'a [String],
            #[serde(skip_serializing_if = "<[_]>::is_empty")]
            candidates: &'a [super::choice::ChoiceCandidate],
            #[serde(skip_serializing_if = "<[_]>::is_empty")]
            rejected_values: &'a [Value],
            #[serde(skip_serializing_if = "<[_]>::is_empty")]
            reasons: &'a [Rejection],
            #[serde(skip_serializing_if = "Option::is_none")]
            auth: Option<&'a AuthNeed>,
            #[serde(skip_serializing_if = "<[_]>::is_empty")]
            values: &'a [Value],
        }
        Wire {
            kind: self.kind,
            sub_agent_id: &self.sub_agent_id,
            task_id: &self.task_id,
            keys: &self.keys,
            key_descriptions: &self.key_descriptions,
            fe_widgets_suggestion: &self.fe_widgets_suggestion,
            fe_wigdets_suggestion: &self.fe_widgets_suggestion,
            candidates: &self.candidates,
            rejected_values: &self.rejected_values,
            reasons: &self.reasons,
            auth: self.auth.as_ref(),
            values: &self.values,
        }
        .serialize(s)
    }
}

/// A task plan (docs/events.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskPlan {
    /// `plan_<id>`.
    pub plan_id: String,
    /// Shape of the dependency graph.
    pub task_type: TaskType,
    /// The sub-tasks, in the order they were mentioned.
    pub sub_tasks: Vec<SubTask>,
    /// How the planner got here (internal; not user-facing).
    pub reasoning: String,
    /// `sub_tasks.len()`.
    pub total_tasks: usize,
    /// Every missing key of every blocked sub-task, deduplicated.
    pub missing_semantic_keys: Vec<String>,
    /// One sentence for the user about what will be done.
    pub user_friendly_message: String,
    /// Missing / invalid keys per blocked sub-task.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub semantic_info: Vec<SemanticInfo>,
    /// Parts of the request no capability card covers, as the user wrote them ("火车票"): the
    /// summary names them (docs/conversation.md).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unhandled: Vec<String>,
    /// Parts of the request joined by a connective that some cards may mean, none clearly
    /// (`{part, candidates}`, candidates as agent ids, best first): not planned; the summary
    /// asks about them (docs/planning.md, "Parts no card covers").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unresolved: Vec<crate::matching::recognize::Unresolved>,
}

impl TaskPlan {
    /// Sub-tasks that can be dispatched now.
    pub fn runnable(&self) -> impl Iterator<Item = &SubTask> {
        self.sub_tasks.iter().filter(|t| t.status == TaskStatus::Pending)
    }

    /// Sub-tasks held back for the user.
    pub fn blocked(&self) -> impl Iterator<Item = &SubTask> {
        self.sub_tasks.iter().filter(|t| t.status == TaskStatus::Blocked)
    }

    /// The questions A2A agents asked, one per sub-task blocked on its agent's question.
    pub fn remote_questions(&self) -> Vec<RemoteQuestion> {
        self.blocked()
            .filter_map(|t| {
                t.remote.as_ref().map(|r| RemoteQuestion {
                    task_id: t.task_id.clone(),
                    sub_agent_id: t.assigned_agent.clone(),
                    question: r.question.clone(),
                })
            })
            .collect()
    }
}

/// A sub-task to plan: its agent and what is already known.
#[derive(Debug, Clone)]
pub struct Candidate {
    /// Existing task id when resuming; a new one is made otherwise.
    pub task_id: Option<String>,
    /// The agent.
    pub agent: Arc<CapabilityCard>,
    /// Known inputs (at least `message`).
    pub inputs: Map<String, Value>,
    /// Indices of candidates this one must wait for (besides data-flow edges).
    pub depends_on: Vec<usize>,
    /// The remote A2A task it continues, if any.
    pub remote: Option<RemoteTask>,
    /// The part of the turn's text that asked for this card (its clause, a byte range of
    /// [`KeySources::text`]), when the text has several clauses: a key takes a value found there
    /// before one found elsewhere in the text ("帮我订北京的酒店，顺便查下上海天气": the weather
    /// card's city is 上海). `None`: the whole text.
    pub own_text: Option<std::ops::Range<usize>>,
}

/// Where semantic-key values come from this turn.
#[derive(Debug, Clone, Copy)]
pub struct KeySources<'a> {
    /// The text of this turn.
    pub text: &'a str,
    /// Structured values from the frontend (`slots`).
    pub slots: &'a Map<String, Value>,
    /// Values collected in earlier turns.
    pub session_slots: &'a Map<String, Value>,
    /// Today's date, for relative dates.
    pub today: NaiveDate,
}

/// Converts a form value to the property's JSON type where that is lossless (`"1000"` -> `1000`).
pub fn coerce(key: &KeyDef, value: &Value) -> Value {
    match (key.json_type.as_deref(), value) {
        (Some("number"), Value::String(s)) => s
            .trim()
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map_or_else(|| value.clone(), Value::Number),
        (Some("integer"), Value::String(s)) => {
            s.trim().parse::<i64>().map_or_else(|_| value.clone(), |n| Value::Number(n.into()))
        }
        (Some("string"), Value::Number(n)) => Value::String(n.to_string()),
        _ => value.clone(),
    }
}

/// The values this turn's `text` gives `agent`'s keys, in key order: each value to at most one
/// key ([`crate::matching::assign()`]); `open` says which keys still need one.
pub fn text_values(
    agent: &CapabilityCard,
    open: impl Fn(&KeyDef) -> bool,
    text: &str,
    today: NaiveDate,
) -> Vec<Option<Value>> {
    let rules: Vec<KeyRule<'_>> = agent
        .keys
        .iter()
        .map(|k| KeyRule { extractor: k.extractor.as_ref(), labels: &k.labels, open: open(k) })
        .collect();
    assign(&rules, text, today)
}

/// The most sub-tasks one card's request is fanned out to ([`fan_out`]).
pub const MAX_FAN_OUT: usize = 5;

/// Words joining listed values: "北京和上海", "Beijing and Shanghai", "CA1234、MU5101", or a
/// bare comma between them ("北京，上海，杭州的天气"; a comma with other words is a new clause:
/// "我从上海出发，想订北京的酒店").
static COORDINATED: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(r"(?i)和|与|跟|及|、|以及|还有|/|&|(?-u:\b)(?:and|or)(?-u:\b)|^\s*[,，]\s*$")
        .expect("static regex")
});

/// A card that compares what it is given wants the values together ("比较iPhone和华为").
static COMPARES: std::sync::LazyLock<regex::Regex> =
    std::sync::LazyLock::new(|| regex::Regex::new(r"(?i)对比|比较|compar|versus").expect("static regex"));

/// One card asked for several listed values of one key ("北京和上海明天的天气", "weather in Beijing
/// and Shanghai", "查一下CA1234和MU5101"; `alone`: the only card of the plan, else only in its
/// own clause): the candidate once per value, that value preset (at
/// most [`MAX_FAN_OUT`]). Only for a key whose values come from a list or a pattern, which no
/// other key of the card also finds there (an origin and a destination compete for two cities:
/// "从北京到上海" is one trip), whose property is no array, of a card that does not compare
/// (its name and description say nothing of 对比 / 比较 / compare), and when the values follow
/// each other joined by 和 / 、 / and / … with at most a few words between ("北京天气和上海天气"),
/// none of them one end of a route with a value outside the list ("北京到上海").
/// Otherwise the candidate as it is.
pub fn fan_out(cand: Candidate, text: &str, alone: bool, today: NaiveDate) -> Vec<Candidate> {
    use crate::matching::extract::Kind;
    let spec = &cand.agent.spec;
    if spec.name.all().chain(spec.description.all()).any(|t| COMPARES.is_match(t)) {
        return vec![cand];
    }
    let own = cand.own_text.clone().unwrap_or(0..text.len());
    let keys = &cand.agent.keys;
    // One value a key: a key whose property is an array takes the values together.
    let listed = |k: &KeyDef| {
        k.json_type.as_deref() != Some("array")
            && k.extractor.as_ref().is_some_and(|x| matches!(x.kind(), Kind::Values | Kind::Pattern))
    };
    let joined = |a: &crate::matching::extract::Found, b: &crate::matching::extract::Found| {
        let gap = text.get(a.end..b.start).unwrap_or_default();
        gap.chars().count() <= 8 && COORDINATED.is_match(gap)
    };
    for (i, key) in keys.iter().enumerate() {
        let Some(extractor) = key.extractor.as_ref().filter(|_| listed(key)) else { continue };
        if cand.inputs.contains_key(&key.spec.key) {
            continue;
        }
        // The run of joined values around the first one in the card's own clause; past that
        // clause only for a card planned alone (the clause splitter may have cut "Beijing | and
        // Shanghai"; beside another card, "北京天气 | 和上海的酒店" is that card's value).
        let mut found = extractor.find_all(text, today);
        if !alone {
            found.retain(|f| own.contains(&f.start));
        }
        let Some(anchor) = found.iter().position(|f| own.contains(&f.start)) else { continue };
        let (mut first, mut last) = (anchor, anchor);
        while first > 0 && joined(&found[first - 1], &found[first]) {
            first -= 1;
        }
        while last + 1 < found.len() && joined(&found[last], &found[last + 1]) {
            last += 1;
        }
        // A value bound to a neighbour outside the run ("北京到上海", "Beijing to Shanghai") is
        // one end of a route, not an item of the list: "订上海的酒店和北京到上海的机票".
        let bound = |a: &crate::matching::extract::Found, b: &crate::matching::extract::Found| {
            text.get(a.end..b.start).is_some_and(|gap| gap.trim().chars().count() <= 3)
        };
        if (first > 0 && bound(&found[first - 1], &found[first]))
            || (last + 1 < found.len() && bound(&found[last], &found[last + 1]))
        {
            continue;
        }
        let run = &found[first..=last];
        let mut values: Vec<Value> = Vec::new();
        for f in run {
            if !values.contains(&f.value) {
                values.push(f.value.clone());
            }
        }
        if values.len() < 2 {
            continue;
        }
        let competed = keys.iter().enumerate().any(|(j, other)| {
            j != i
                && other.extractor.as_ref().is_some_and(|x| {
                    x.find_all(text, today).iter().any(|o| run.iter().any(|f| o.start < f.end && f.start < o.end))
                })
        });
        if competed {
            continue;
        }
        return values
            .into_iter()
            .take(MAX_FAN_OUT)
            .map(|v| {
                let mut c = cand.clone();
                c.inputs.insert(key.spec.key.clone(), v);
                c
            })
            .collect();
    }
    vec![cand]
}

/// Sub-tasks of one card fanned out over several values ([`fan_out`]) say which value each is
/// for ("查询城市的天气预报（上海）"), so the plan's message does not repeat one description.
fn name_fanned_out(tasks: &mut [SubTask], lang: Lang) {
    let mut named: Vec<(usize, String)> = Vec::new();
    for (i, t) in tasks.iter().enumerate() {
        let siblings: Vec<&SubTask> = tasks.iter().filter(|o| o.assigned_agent == t.assigned_agent).collect();
        if siblings.len() < 2 {
            continue;
        }
        // The first key whose value tells the siblings apart.
        let differs = |k: &String| siblings.iter().any(|o| o.inputs.get(k) != t.inputs.get(k));
        let value = t.inputs.iter().find(|(k, _)| k.as_str() != "message" && differs(k)).map(|(_, v)| v);
        if let Some(v) = value {
            named.push((i, v.as_str().map_or_else(|| v.to_string(), str::to_string)));
        }
    }
    for (i, v) in named {
        let task = &mut tasks[i];
        task.description = match lang {
            Lang::Zh => format!("{}（{v}）", task.description),
            Lang::En => format!("{} ({v})", task.description),
        };
    }
}

/// A remembered value for `key`: the session slot of its name, else of the first of its `from`
/// names the session has.
pub fn remembered<'a>(key: &KeyDef, session_slots: &'a Map<String, Value>) -> Option<&'a Value> {
    std::iter::once(&key.spec.key).chain(&key.spec.from).find_map(|name| session_slots.get(name))
}

/// Builds a plan from candidates, its user-facing message from `texts`. Returns the plan and the valid values found this turn (from
/// slots and text), which the session remembers. The steps, in order: `fill_keys` (values
/// from slots, text and memory), `link_producers` (data-flow edges), `break_cycles` (edges
/// that cannot be ordered become missing keys), `mark_blocked` (statuses and `semantic_info`).
pub fn build(
    texts: &Texts,
    candidates: Vec<Candidate>,
    src: KeySources<'_>,
    plan_id: &str,
    lang: Lang,
    reasoning: String,
) -> (TaskPlan, Map<String, Value>) {
    let (mut draft, found) = fill_keys(&candidates, src, plan_id);
    for (task, cand) in draft.tasks.iter_mut().zip(&candidates) {
        task.description = cand.agent.task_description(lang);
    }
    name_fanned_out(&mut draft.tasks, lang);
    link_producers(&candidates, &mut draft);
    let order = break_cycles(&mut draft);
    let (semantic_info, missing_keys) = mark_blocked(&candidates, &mut draft, &order);
    let Draft { mut tasks, deps, .. } = draft;
    let ids: Vec<String> = tasks.iter().map(|t| t.task_id.clone()).collect();
    for (i, task) in tasks.iter_mut().enumerate() {
        task.dependencies = deps[i].iter().map(|&j| ids[j].clone()).collect();
    }
    let user_friendly_message = plan_message(texts, &tasks, lang);
    let plan = TaskPlan {
        plan_id: plan_id.to_string(),
        task_type: task_type(&deps),
        total_tasks: tasks.len(),
        sub_tasks: tasks,
        reasoning,
        missing_semantic_keys: missing_keys,
        user_friendly_message,
        semantic_info,
        unhandled: Vec::new(),
        unresolved: Vec::new(),
    };
    (plan, found)
}

/// A plan under construction: one entry per candidate, by index.
struct Draft {
    tasks: Vec<SubTask>,
    /// Key indices without a value.
    missing: Vec<Vec<usize>>,
    /// Key indices with a value that was not accepted, the value and why.
    invalid: Vec<Vec<(usize, Value, Rejection)>>,
    /// The tasks each task waits for.
    deps: Vec<BTreeSet<usize>>,
    /// Data-flow edges: (task, producer, key index).
    edges: Vec<(usize, usize, usize)>,
    /// Key indices filled from the session's memory (not stated this turn).
    remembered: Vec<Vec<usize>>,
}

/// Fills every candidate's keys (a value already in its inputs wins, then this turn's slots, the
/// text, and the session's memory) and gives new sub-tasks ids unique in the plan. Returns the
/// draft and the valid values found this turn.
fn fill_keys(candidates: &[Candidate], src: KeySources<'_>, plan_id: &str) -> (Draft, Map<String, Value>) {
    let n = candidates.len();
    let mut found = Map::new();
    let mut draft = Draft {
        tasks: Vec::with_capacity(n),
        missing: vec![Vec::new(); n],
        invalid: vec![Vec::new(); n],
        deps: candidates.iter().map(|c| c.depends_on.iter().copied().filter(|&j| j < n).collect()).collect(),
        edges: Vec::new(),
        remembered: vec![Vec::new(); n],
    };
    let mut used_ids: HashSet<String> = candidates.iter().filter_map(|c| c.task_id.clone()).collect();
    let mut counter = 0;
    for (i, cand) in candidates.iter().enumerate() {
        let mut inputs = cand.inputs.clone();
        let open = |k: &KeyDef| !inputs.contains_key(&k.spec.key) && !src.slots.contains_key(&k.spec.key);
        let own_text = cand.own_text.clone().and_then(|r| src.text.get(r));
        let from_text = match own_text.map(|own| text_values(&cand.agent, open, own, src.today)) {
            // The clause gave every open key a value: the rest of the text has nothing to add.
            Some(own) if own.iter().zip(&cand.agent.keys).all(|(v, k)| v.is_some() || !open(k)) => own,
            Some(own) => {
                // The clause's value for a key, unless the whole text gave it to another key
                // (keys of one kind share the values: "订12月3日走的民宿，12月1日入住" keeps
                // check-in 1st, check-out 3rd rather than the 3rd twice).
                let whole = text_values(&cand.agent, open, src.text, src.today);
                let mut merged = whole.clone();
                for (k, (value, own)) in merged.iter_mut().zip(own).enumerate() {
                    let taken = |v: &Value| whole.iter().enumerate().any(|(j, w)| j != k && w.as_ref() == Some(v));
                    if own.as_ref().is_some_and(|v| !taken(v)) {
                        *value = own;
                    }
                }
                merged
            }
            None => text_values(&cand.agent, open, src.text, src.today),
        };
        for ((k, key), said) in cand.agent.keys.iter().enumerate().zip(from_text) {
            let name = &key.spec.key;
            if inputs.contains_key(name) {
                continue;
            }
            let fresh = src.slots.get(name).map(|v| coerce(key, v)).or(said);
            let value = fresh.clone().or_else(|| remembered(key, src.session_slots).cloned());
            match value.map(|v| (key.check(&v, src.today), v)) {
                Some((Ok(()), v)) => {
                    if fresh.is_some() {
                        found.insert(name.clone(), v.clone());
                    } else {
                        draft.remembered[i].push(k);
                    }
                    inputs.insert(name.clone(), v);
                }
                Some((Err(why), v)) => draft.invalid[i].push((k, v, why)),
                None => draft.missing[i].push(k),
            }
        }
        let task_id = cand.task_id.clone().unwrap_or_else(|| loop {
            counter += 1;
            let id = format!("{plan_id}_task_{counter}");
            if used_ids.insert(id.clone()) {
                break id;
            }
        });
        draft.tasks.push(SubTask {
            task_id,
            description: String::new(), // in the turn's language, by `build`
            assigned_agent: cand.agent.spec.id.to_string(),
            inputs,
            dependencies: Vec::new(),
            status: TaskStatus::Pending,
            reason: None,
            output: None,
            message: None,
            remote: cand.remote.clone(),
            confirm: Vec::new(),
        });
    }
    (draft, found)
}

/// Data-flow edges: a missing key another sub-task `produces` makes this task depend on that one
/// (and no longer missing).
fn link_producers(candidates: &[Candidate], draft: &mut Draft) {
    let n = candidates.len();
    for i in 0..n {
        let agent = &candidates[i].agent;
        let (deps, edges) = (&mut draft.deps, &mut draft.edges);
        draft.missing[i].retain(|&k| {
            let spec = &agent.keys[k].spec;
            let names: Vec<&String> = std::iter::once(&spec.key).chain(&spec.from).collect();
            let producer =
                (0..n).find(|&j| j != i && candidates[j].agent.spec.produces.iter().any(|p| names.contains(&p)));
            match producer {
                Some(j) => {
                    deps[i].insert(j);
                    edges.push((i, j, k));
                    false
                }
                None => true,
            }
        });
    }
}

/// Orders the tasks; data-flow edges between tasks Kahn's algorithm cannot order become missing
/// keys again, and other edges inside the cycle are dropped. Returns the topological order.
fn break_cycles(draft: &mut Draft) -> Vec<usize> {
    loop {
        match topo_order(&draft.deps) {
            Ok(order) => return order,
            Err(stuck) => {
                for &(i, j, k) in &draft.edges {
                    if stuck.contains(&i) && stuck.contains(&j) && draft.deps[i].remove(&j) {
                        draft.missing[i].push(k);
                    }
                }
                for &i in &stuck {
                    draft.deps[i].retain(|j| !stuck.contains(j));
                }
            }
        }
    }
}

/// Blocks the tasks with missing or invalid keys and, in topological `order`, the tasks waiting
/// on a blocked one. Returns `semantic_info` (in plan order) and the missing keys (first-asked
/// order, no duplicates).
fn mark_blocked(candidates: &[Candidate], draft: &mut Draft, order: &[usize]) -> (Vec<SemanticInfo>, Vec<String>) {
    let mut semantic_info = Vec::new();
    let mut missing_keys: Vec<String> = Vec::new();
    for &i in order {
        let agent = &candidates[i].agent;
        draft.missing[i].sort_unstable();
        let waits_on_blocked = draft.deps[i].iter().any(|&j| draft.tasks[j].status == TaskStatus::Blocked);
        let invalid: Vec<usize> = draft.invalid[i].iter().map(|(k, _, _)| *k).collect();
        for (kind, list) in [(MissKind::Miss, &draft.missing[i]), (MissKind::Invalid, &invalid)] {
            if list.is_empty() {
                continue;
            }
            let keys: Vec<&KeyDef> = list.iter().map(|&k| &agent.keys[k]).collect();
            let rejected = if kind == MissKind::Invalid { draft.invalid[i].as_slice() } else { &[] };
            semantic_info.push(SemanticInfo {
                kind,
                sub_agent_id: agent.spec.id.to_string(),
                task_id: draft.tasks[i].task_id.clone(),
                keys: keys.iter().map(|k| k.spec.key.clone()).collect(),
                key_descriptions: keys.iter().map(|k| k.spec.description.clone()).collect(),
                fe_widgets_suggestion: keys.iter().map(|k| k.widget.clone()).collect(),
                candidates: Vec::new(),
                rejected_values: rejected.iter().map(|(_, v, _)| v.clone()).collect(),
                reasons: rejected.iter().map(|(_, _, why)| *why).collect(),
                auth: None,
                values: Vec::new(),
            });
            for k in keys {
                if !missing_keys.contains(&k.spec.key) {
                    missing_keys.push(k.spec.key.clone());
                }
            }
        }
        let task = &mut draft.tasks[i];
        if !draft.missing[i].is_empty() || !draft.invalid[i].is_empty() {
            task.status = TaskStatus::Blocked;
            task.reason = Some("missing or invalid semantic keys".into());
            // A card that confirms remembered values does not keep them while it waits: they
            // are remembered again, and confirmed, once the missing keys come.
            if needs_confirmation(agent) {
                for &k in &draft.remembered[i] {
                    task.inputs.remove(&agent.keys[k].spec.key);
                }
            }
        } else if waits_on_blocked {
            task.status = TaskStatus::Blocked;
            task.reason = Some("waiting for a blocked sub-task".into());
        } else if let Some(info) = confirmation(agent, task, &draft.remembered[i]) {
            task.status = TaskStatus::Blocked;
            task.reason = Some("waiting for the user's confirmation".into());
            task.confirm = info.keys.clone();
            semantic_info.push(info);
        }
    }
    // Keep semantic_info in plan order, not topological order.
    semantic_info.sort_by_key(|s| draft.tasks.iter().position(|t| t.task_id == s.task_id));
    (semantic_info, missing_keys)
}

/// The `confirm` entry for a sub-task of a write (or `confirm: true`) card that would run on
/// `remembered` values (key indices) no one stated this turn (issue 17 item 4); `None` when the
/// card needs no confirmation or every value is fresh.
fn confirmation(agent: &CapabilityCard, task: &SubTask, remembered: &[usize]) -> Option<SemanticInfo> {
    if !needs_confirmation(agent) || remembered.is_empty() {
        return None;
    }
    let keys: Vec<&KeyDef> = remembered.iter().map(|&k| &agent.keys[k]).collect();
    Some(SemanticInfo {
        kind: MissKind::Confirm,
        sub_agent_id: agent.spec.id.to_string(),
        task_id: task.task_id.clone(),
        keys: keys.iter().map(|k| k.spec.key.clone()).collect(),
        key_descriptions: keys.iter().map(|k| k.spec.description.clone()).collect(),
        fe_widgets_suggestion: vec![CONFIRM_WIDGET.to_string(); keys.len()],
        candidates: Vec::new(),
        rejected_values: Vec::new(),
        reasons: Vec::new(),
        auth: None,
        values: keys.iter().map(|k| task.inputs.get(&k.spec.key).cloned().unwrap_or(Value::Null)).collect(),
    })
}

/// Whether sub-tasks of `agent` confirm remembered values: `access: write` or `confirm: true`.
fn needs_confirmation(agent: &CapabilityCard) -> bool {
    agent.spec.confirm || agent.spec.access == crate::config::Access::Write
}

/// The widget id of a yes / no confirmation (in the demo `widgets_map.json`).
pub const CONFIRM_WIDGET: &str = "confirm_dialog";

/// Whether an agent's sub-tasks may not run for this caller: why, and the card's scopes.
pub type DenyFn<'a> = dyn Fn(&str) -> Option<(crate::auth::Denied, Vec<String>)> + 'a;

/// Blocks every sub-task whose agent `denied` refuses (a `write` card the caller may not use),
/// with an `auth` entry in `semantic_info` and the user-facing reason, and the sub-tasks waiting
/// on a blocked one; refreshes the plan's message. Such a sub-task is never dispatched; the others
/// run. Returns how many sub-tasks it blocked for auth.
pub fn block_denied(texts: &Texts, plan: &mut TaskPlan, lang: Lang, denied: &DenyFn<'_>) -> usize {
    let mut blocked = 0;
    for i in 0..plan.sub_tasks.len() {
        let task = &plan.sub_tasks[i];
        if !matches!(task.status, TaskStatus::Pending | TaskStatus::Blocked) || task.remote.is_some() {
            continue;
        }
        let Some((why, scopes)) = denied(&task.assigned_agent) else { continue };
        let (id, missing) = match &why {
            crate::auth::Denied::SignInRequired => ("auth-sign-in-required", scopes.clone()),
            crate::auth::Denied::MissingScopes(m) => ("auth-scope-missing", m.clone()),
        };
        let message = texts.get(lang, id, &[("task", task.description.as_str().into())]);
        let info = SemanticInfo {
            kind: MissKind::Auth,
            sub_agent_id: task.assigned_agent.clone(),
            task_id: task.task_id.clone(),
            keys: Vec::new(),
            key_descriptions: Vec::new(),
            fe_widgets_suggestion: Vec::new(),
            candidates: Vec::new(),
            rejected_values: Vec::new(),
            reasons: Vec::new(),
            auth: Some(AuthNeed { code: why.code().into(), scopes, missing_scopes: missing, message: message.clone() }),
            values: Vec::new(),
        };
        let at = plan
            .semantic_info
            .iter()
            .position(|s| plan.sub_tasks.iter().position(|t| t.task_id == s.task_id) > Some(i));
        plan.semantic_info.insert(at.unwrap_or(plan.semantic_info.len()), info);
        let task = &mut plan.sub_tasks[i];
        task.status = TaskStatus::Blocked;
        task.reason = Some(message);
        blocked += 1;
    }
    if blocked == 0 {
        return 0;
    }
    // Whatever waits on a blocked sub-task waits with it.
    loop {
        let blocked_ids: HashSet<String> =
            plan.sub_tasks.iter().filter(|t| t.status == TaskStatus::Blocked).map(|t| t.task_id.clone()).collect();
        let mut changed = false;
        for task in &mut plan.sub_tasks {
            if task.status == TaskStatus::Pending && task.dependencies.iter().any(|d| blocked_ids.contains(d)) {
                task.status = TaskStatus::Blocked;
                task.reason = Some("waiting for a blocked sub-task".into());
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    plan.user_friendly_message = plan_message(texts, &plan.sub_tasks, lang);
    blocked
}

/// Kahn's algorithm over `deps[i]` = the tasks `i` waits for. `Err` holds the tasks left in or
/// behind a cycle.
pub fn topo_order(deps: &[BTreeSet<usize>]) -> Result<Vec<usize>, Vec<usize>> {
    let n = deps.len();
    let mut indegree: Vec<usize> = deps.iter().map(BTreeSet::len).collect();
    let mut queue: std::collections::VecDeque<usize> = (0..n).filter(|&i| indegree[i] == 0).collect();
    let mut order = Vec::with_capacity(n);
    while let Some(j) = queue.pop_front() {
        order.push(j);
        for i in 0..n {
            if deps[i].contains(&j) {
                indegree[i] -= 1;
                if indegree[i] == 0 {
                    queue.push_back(i);
                }
            }
        }
    }
    if order.len() == n {
        Ok(order)
    } else {
        Err((0..n).filter(|i| !order.contains(i)).collect())
    }
}

fn task_type(deps: &[BTreeSet<usize>]) -> TaskType {
    let n = deps.len();
    let edges: usize = deps.iter().map(BTreeSet::len).sum();
    if edges == 0 {
        return if n <= 1 { TaskType::Sequential } else { TaskType::Parallel };
    }
    let mut dependents = vec![0usize; n];
    for d in deps {
        for &j in d {
            dependents[j] += 1;
        }
    }
    let chain = edges == n - 1 && deps.iter().all(|d| d.len() <= 1) && dependents.iter().all(|&c| c <= 1);
    if chain {
        TaskType::Sequential
    } else {
        TaskType::Dag
    }
}

fn plan_message(texts: &Texts, tasks: &[SubTask], lang: Lang) -> String {
    let runnable: Vec<&str> =
        tasks.iter().filter(|t| t.status != TaskStatus::Blocked).map(|t| t.description.as_str()).collect();
    let blocked = tasks.iter().filter(|t| t.status == TaskStatus::Blocked).count();
    let list = || runnable.join(&texts.get(lang, "list-separator", &[]));
    match (runnable.is_empty(), blocked) {
        (true, 0) => String::new(),
        (true, _) => texts.get(lang, "plan-blocked", &[]),
        (false, 0) => texts.get(lang, "plan-runnable", &[("tasks", list().into())]),
        (false, n) => texts.get(lang, "plan-runnable-and-blocked", &[("tasks", list().into()), ("blocked", n.into())]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(v: &[usize]) -> BTreeSet<usize> {
        v.iter().copied().collect()
    }

    #[test]
    fn topo_orders_and_finds_cycles() {
        assert_eq!(topo_order(&[set(&[]), set(&[0]), set(&[1])]), Ok(vec![0, 1, 2]));
        assert_eq!(topo_order(&[set(&[1]), set(&[0]), set(&[])]), Err(vec![0, 1]));
    }

    #[test]
    fn plan_messages_in_both_languages() {
        let task = |d: &str, status| SubTask {
            task_id: d.into(),
            description: d.into(),
            assigned_agent: "a".into(),
            inputs: Map::new(),
            dependencies: Vec::new(),
            status,
            reason: None,
            output: None,
            message: None,
            remote: None,
            confirm: Vec::new(),
        };
        let (p, b) = (TaskStatus::Pending, TaskStatus::Blocked);
        let t = Texts::shipped();
        let cases = [
            (vec![task("A", p), task("B", p)], "好的，我来为您处理：A；B。", "On it: A; B."),
            (
                vec![task("A", p), task("B", b)],
                "好的，我来为您处理：A。另有 1 项还需要您补充一些信息。",
                "On it: A. 1 more step(s) need a few details from you.",
            ),
            (vec![task("B", b)], "还需要您补充一些信息才能继续。", "I need a few details from you first."),
            (vec![], "", ""),
        ];
        for (tasks, zh, en) in cases {
            assert_eq!(plan_message(&t, &tasks, Lang::Zh), zh);
            assert_eq!(plan_message(&t, &tasks, Lang::En), en);
        }
    }

    #[test]
    fn task_types() {
        assert_eq!(task_type(&[set(&[])]), TaskType::Sequential);
        assert_eq!(task_type(&[set(&[]), set(&[])]), TaskType::Parallel);
        assert_eq!(task_type(&[set(&[]), set(&[0]), set(&[1])]), TaskType::Sequential);
        assert_eq!(task_type(&[set(&[]), set(&[0]), set(&[0])]), TaskType::Dag);
        assert_eq!(task_type(&[set(&[]), set(&[0]), set(&[])]), TaskType::Dag);
    }
}
