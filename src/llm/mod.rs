//! LLM mode (docs/planning.md): intent recognition + rewrite, task planning and the streamed
//! summary from any OpenAI-compatible model, enabled by `LLM_BASE_URL` + `LLM_MODEL`
//! (+ `LLM_API_KEY`).
//!
//! - [`client`]: the chat-completions client (retries, `Retry-After`, streaming, usage).
//! - [`parse`]: tolerant JSON extraction (fences, prose around the object).
//! - [`cache`]: the intent cache.
//! - [`decide`]: the turn's decision: the model's, or the rule planner's when there is no model
//!   or it fails.
//!
//! The model only ever *proposes*: intents naming no enabled agent are dropped, plans go through
//! [`crate::planner::proposal`] (the rule planner's validation), one repair is asked for, and every
//! failure falls back to the rule planner or the template summary; the supervisor records
//! `planner: "rule", degraded: true, reason` then. Prompts are the registry's templates
//! (`prompts/*.md`, reloaded with the config), filled with the capability cards, memory and data.

pub mod cache;
pub mod client;
pub mod decide;
pub mod parse;

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

pub use client::{ChatClient, LlmError, LlmSettings, Message};

use crate::matching::{find_term, normalize, Term};
use crate::planner::proposal::ProposedPlan;
use crate::planner::{SubTask, TaskPlan, TaskStatus};
use crate::registry::{CapabilityCard, Registry};
use crate::session::HistoryEntry;

/// The model's intent answer (docs/planning.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IntentAnswer {
    /// Agent ids and special labels (`greeting`, `thanks`, `capabilities`, `chitchat`, `human`,
    /// `sensitive`, `out_of_scope`).
    #[serde(default)]
    pub intent: Vec<String>,
    /// 0..1.
    #[serde(default)]
    pub confidence: f32,
    /// Why.
    #[serde(default)]
    pub reason: String,
    /// The query with ellipses resolved.
    #[serde(default)]
    pub rewritten_query: String,
    /// One sentence for the user.
    #[serde(default)]
    pub user_friendly_message: String,
}

/// The LLM planner: client + intent cache.
#[derive(Debug)]
pub struct LlmPlanner {
    /// The client.
    pub client: ChatClient,
    /// The intent cache.
    pub cache: cache::IntentCache,
}

fn intent_format() -> Value {
    json!({ "type": "json_schema", "json_schema": { "name": "intent_result", "strict": false, "schema": {
        "type": "object",
        "properties": {
            "intent": { "type": "array", "items": { "type": "string" } },
            "confidence": { "type": "number" },
            "reason": { "type": "string" },
            "rewritten_query": { "type": "string" },
            "user_friendly_message": { "type": "string" }
        },
        "required": ["intent", "confidence", "rewritten_query"]
    } } })
}

fn plan_format() -> Value {
    json!({ "type": "json_schema", "json_schema": { "name": "task_plan", "strict": false, "schema": {
        "type": "object",
        "properties": {
            "sub_tasks": { "type": "array", "items": { "type": "object",
                "properties": {
                    "task_id": { "type": "string" },
                    "assigned_agent": { "type": "string" },
                    "description": { "type": "string" },
                    "inputs": { "type": "object" },
                    "dependencies": { "type": "array", "items": { "type": "string" } }
                },
                "required": ["task_id", "assigned_agent", "inputs", "dependencies"] } },
            "reasoning": { "type": "string" }
        },
        "required": ["sub_tasks"]
    } } })
}

impl LlmPlanner {
    /// A planner for `settings`.
    pub fn new(settings: LlmSettings) -> Self {
        Self { client: ChatClient::new(settings), cache: cache::IntentCache::default() }
    }

    /// Usage and cache counters, for `GET /v1/config`.
    pub fn stats(&self) -> Value {
        let (hits, misses) = self.cache.counts();
        json!({ "model": self.client.model(), "usage": self.client.usage.snapshot(), "intent_cache": { "hits": hits, "misses": misses } })
    }

    fn timeout(registry: &Registry) -> Duration {
        registry.planner.llm_timeout.0
    }

    /// Intent recognition + rewrite in one call (cached when nothing is pending). Returns the
    /// answer and whether it came from the cache.
    ///
    /// # Errors
    /// [`LlmError`] for transport, status, timeout or unparseable output.
    pub async fn recognize(
        &self,
        registry: &Registry,
        query: &str,
        history: &[HistoryEntry],
        pending: Option<&[SubTask]>,
    ) -> Result<(IntentAnswer, bool), LlmError> {
        let key = normalize(query);
        let cacheable = pending.is_none_or(<[SubTask]>::is_empty);
        if cacheable {
            if let Some(hit) = self.cache.get(&key, registry.version) {
                return Ok((hit, true));
            }
        }
        let cards = render_cards(&select_cards(registry, query), false);
        let system = registry
            .prompts
            .intent
            .replace("{{cards}}", &cards)
            .replace("{{history}}", &render_history(history))
            .replace("{{pending}}", &render_pending(pending))
            .replace("{{candidates}}", &render_candidates(&crate::planner::intent::recognize(registry, query)));
        let messages = [Message::system(system), Message::user(query)];
        let text = self.client.complete(&messages, Some(intent_format()), Self::timeout(registry)).await?;
        let value = parse::extract_json(&text)
            .ok_or_else(|| LlmError::Unusable("no JSON object in the intent answer".into()))?;
        let mut answer: IntentAnswer =
            serde_json::from_value(value).map_err(|e| LlmError::Unusable(format!("intent answer: {e}")))?;
        answer.confidence = answer.confidence.clamp(0.0, 1.0);
        if answer.rewritten_query.trim().is_empty() {
            answer.rewritten_query = query.to_string();
        }
        if cacheable {
            self.cache.put(&key, registry.version, &answer, registry.planner.intent_cache_ttl.0);
        }
        Ok((answer, false))
    }

    /// Asks for a task plan for `agents`; with `repair`, the previous answer and what was wrong
    /// with it go along (one repair round).
    ///
    /// # Errors
    /// [`LlmError`].
    pub async fn plan(
        &self,
        registry: &Registry,
        query: &str,
        agents: &[String],
        slots: &serde_json::Map<String, Value>,
        repair: Option<(&str, &[String])>,
    ) -> Result<(ProposedPlan, String), LlmError> {
        let chosen: Vec<&CapabilityCard> =
            agents.iter().filter_map(|id| registry.get_enabled(id).map(AsRef::as_ref)).collect();
        let system = registry
            .prompts
            .plan
            .replace("{{cards}}", &render_cards(&chosen, true))
            .replace("{{slots}}", &serde_json::to_string(slots).unwrap_or_default());
        let mut messages = vec![Message::system(system), Message::user(query)];
        if let Some((previous, problems)) = repair {
            messages.push(Message::assistant(previous));
            messages.push(Message::user(format!(
                "这个计划有问题，请修正后重新输出完整的 JSON：\n- {}",
                problems.join("\n- ")
            )));
        }
        let text = self.client.complete(&messages, Some(plan_format()), Self::timeout(registry)).await?;
        let value =
            parse::extract_json(&text).ok_or_else(|| LlmError::Unusable("no JSON object in the plan answer".into()))?;
        let plan = serde_json::from_value(value).map_err(|e| LlmError::Unusable(format!("plan answer: {e}")))?;
        Ok((plan, text))
    }

    /// Streams the summary of an executed plan, token by token, to `on_token`. Sub-agent outputs
    /// travel only as quoted data inside `<data>…</data>`, never as instructions.
    ///
    /// # Errors
    /// [`LlmError`].
    pub async fn summarize(
        &self,
        registry: &Registry,
        query: &str,
        plan: &TaskPlan,
        on_token: &(dyn Fn(&str) + Send + Sync),
    ) -> Result<String, LlmError> {
        let messages = [
            Message::system(registry.prompts.summarize.clone()),
            Message::user(summary_request(registry, query, plan)),
        ];
        self.client.stream(&messages, Self::timeout(registry), on_token).await
    }
}

/// The user message of the summary call: the request, then the results as JSON data.
pub fn summary_request(registry: &Registry, query: &str, plan: &TaskPlan) -> String {
    let results: Vec<Value> = plan
        .sub_tasks
        .iter()
        .map(|t| {
            let status = match t.status {
                TaskStatus::Done => "done",
                TaskStatus::Blocked => "needs_user_input",
                TaskStatus::Failed => "failed",
                TaskStatus::Skipped => "skipped",
                _ => "not_run",
            };
            json!({ "task": t.description, "status": status, "message": t.message, "output": t.output, "reason": t.reason })
        })
        .collect();
    let needed: Vec<Value> = plan
        .semantic_info
        .iter()
        .flat_map(|info| {
            let agent = registry.get(&info.sub_agent_id);
            info.keys.iter().zip(&info.key_descriptions).map(move |(key, description)| {
                let example =
                    agent.and_then(|a| a.keys.iter().find(|k| &k.spec.key == key)).and_then(|k| k.spec.example.clone());
                json!({ "what": description, "example": example, "problem": info.kind })
            })
        })
        .collect();
    // serde_json escapes nothing that could close the block early except a literal `</data>`;
    // neutralize it inside the data.
    let data = serde_json::to_string_pretty(&json!({ "results": results, "still_needed": needed }))
        .unwrap_or_default()
        .replace("</data>", "<\\/data>");
    format!("用户请求：{query}\n\n<data>\n{data}\n</data>")
}

/// The capability cards that go into a prompt: all enabled ones, or, past
/// `planner.max_cards_in_prompt`, the best by lexical score (keyword and name hits weigh 3, each
/// query character or word found in the description or examples weighs 1), in config order.
pub fn select_cards<'a>(registry: &'a Registry, query: &str) -> Vec<&'a CapabilityCard> {
    let enabled: Vec<&CapabilityCard> = registry.enabled().map(AsRef::as_ref).collect();
    let max = registry.planner.max_cards_in_prompt.max(1) as usize;
    if enabled.len() <= max {
        return enabled;
    }
    let lower = query.to_lowercase();
    let units: Vec<String> = lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .flat_map(|w| if w.is_ascii() { vec![w.to_string()] } else { w.chars().map(String::from).collect() })
        .collect();
    let mut scored: Vec<(usize, usize)> = enabled
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let s = &a.spec;
            let hits =
                s.keywords.iter().chain([&*s.name]).filter(|k| find_term(&lower, &Term::new(k)).is_some()).count() * 3;
            let text = format!("{} {}", s.description, s.examples.join(" ")).to_lowercase();
            let overlap = units.iter().filter(|u| text.contains(u.as_str())).count();
            (hits + overlap, i)
        })
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut keep: Vec<usize> = scored.into_iter().take(max).map(|(_, i)| i).collect();
    keep.sort_unstable();
    keep.into_iter().map(|i| enabled[i]).collect()
}

fn render_cards(agents: &[&CapabilityCard], with_schema: bool) -> String {
    agents
        .iter()
        .map(|a| {
            let s = &a.spec;
            let keys: Vec<String> =
                a.keys.iter().map(|k| format!("{}（{}）", k.spec.key, k.spec.description)).collect();
            let mut card = format!(
                "- id: {}\n  名称: {}\n  描述: {}\n  关键词: {}\n  示例: {}\n  必需语义键: {}\n  产出: {}",
                s.id,
                s.name,
                s.description,
                s.keywords.join("、"),
                s.examples.join(" | "),
                if keys.is_empty() { "无".to_string() } else { keys.join("，") },
                if s.produces.is_empty() { "无".to_string() } else { s.produces.join("，") },
            );
            if with_schema {
                card.push_str(&format!(
                    "\n  输入 schema: {}",
                    serde_json::to_string(&*a.input_schema).unwrap_or_default()
                ));
            }
            card
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The rule recognizer's best candidates for the intent prompt: one line each with its
/// confidence, verdict and evidence (a hint for the model, never binding).
pub fn render_candidates(rec: &crate::matching::Recognition) -> String {
    let top = rec.top(crate::planner::intent::CANDIDATES_SHOWN);
    if top.is_empty() {
        return "（无：规则识别没有找到相关的能力卡片）".to_string();
    }
    top.iter()
        .map(|c| {
            let verdict = if rec.selected.iter().any(|s| s.id == c.id) {
                "规则已选中"
            } else if c.negated() {
                "用户否定了"
            } else if rec.uncertain.iter().any(|u| u.id == c.id) {
                "不确定"
            } else {
                "证据很弱"
            };
            let evidence: Vec<String> = c.evidence.iter().map(ToString::to_string).collect();
            format!("- {}（置信度 {:.2}，{verdict}）：{}", c.id, c.confidence, evidence.join("；"))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn render_history(history: &[HistoryEntry]) -> String {
    if history.is_empty() {
        return "（无）".to_string();
    }
    history.iter().map(|t| format!("用户：{}\n助手：{}", t.query, t.answer)).collect::<Vec<_>>().join("\n")
}

fn render_pending(pending: Option<&[SubTask]>) -> String {
    match pending.filter(|p| !p.is_empty()) {
        None => "（无）".to_string(),
        Some(tasks) => tasks
            .iter()
            .map(|t| {
                format!(
                    "- {}（agent: {}，已知输入: {}）",
                    t.description,
                    t.assigned_agent,
                    Value::Object(t.inputs.clone())
                )
            })
            .collect::<Vec<_>>()
            .join("\n"),
    }
}
