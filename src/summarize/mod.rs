//! The user-facing texts of a turn: the template summary of a plan's results and the direct
//! answers of simple intents (docs/events.md, docs/conversation.md), composed from the
//! messages of the registry's text catalog ([`crate::text`]).
//!
//! The summary says what was done (the agents' own `message`s), what failed and why, and what is
//! still needed with an example of how to give it. It never shows agent ids or intent labels:
//! sub-tasks are named by their user-facing description, keys by their description.

use serde_json::Value;

use crate::planner::{
    choice, ChoiceCandidate, EscalationReason, MissKind, Rejection, SemanticInfo, SimpleIntent, SubTask, TaskPlan,
    TaskStatus,
};
use crate::registry::Registry;
use crate::text::{FluentValue, Lang, Texts};

mod check;

pub use check::{check_model_summary, CheckedSummary};

/// The template summary of an executed plan.
pub fn summary(registry: &Registry, plan: &TaskPlan, lang: Lang) -> String {
    let s = sections(registry, plan, lang);
    let mut out: Vec<String> = [s.done, s.failed, s.unhandled, s.unresolved, s.auth, s.needed].concat();
    if out.is_empty() {
        out.push(registry.texts().get(lang, "summary-nothing", &[]));
    }
    out.join("\n")
}

/// The parts of a template summary, each with its header line, empty when there is nothing to say.
#[derive(Debug, Clone, Default)]
pub struct Sections {
    /// What was done (the agents' own messages).
    pub done: Vec<String>,
    /// What failed or was skipped, and why.
    pub failed: Vec<String>,
    /// Why sub-tasks that need a signed-in user (or more permissions) were not done.
    pub auth: Vec<String>,
    /// What is still needed, with examples.
    pub needed: Vec<String>,
    /// The parts of the request no capability covers.
    pub unhandled: Vec<String>,
    /// The parts of the request some capabilities may mean, none clearly, with their names.
    pub unresolved: Vec<String>,
}

/// The template summary's sections for `plan`.
pub fn sections(registry: &Registry, plan: &TaskPlan, lang: Lang) -> Sections {
    let texts = registry.texts();
    let text = |id: &str, args: &[(&str, FluentValue<'_>)]| texts.get(lang, id, args);
    let mut out = Sections::default();

    let done: Vec<String> = plan
        .sub_tasks
        .iter()
        .filter(|t| t.status == TaskStatus::Done)
        .map(|t| match t.message.as_deref().map(str::trim) {
            Some(m) if !m.is_empty() => text("list-item", &[("text", m.into())]),
            _ => text("list-item", &[("text", t.description.as_str().into())]),
        })
        .collect();
    if !done.is_empty() {
        out.done.push(text("summary-done-header", &[]));
        out.done.extend(done);
    }

    let failed: Vec<String> = plan
        .sub_tasks
        .iter()
        .filter(|t| matches!(t.status, TaskStatus::Failed | TaskStatus::Skipped))
        .map(|t| {
            let reason = t.reason.clone().unwrap_or_else(|| text("summary-unknown-reason", &[]));
            text("summary-failed-item", &[("task", t.description.as_str().into()), ("reason", reason.into())])
        })
        .collect();
    if !failed.is_empty() {
        out.failed.push(text("summary-failed-header", &[]));
        out.failed.extend(failed);
    }

    let Needed { lines: mut needed, examples, form, confirm } = still_needed(registry, plan, lang);
    // Questions asked by A2A agents themselves.
    for t in plan.sub_tasks.iter().filter(|t| t.status == TaskStatus::Blocked) {
        if let Some(remote) = &t.remote {
            needed.push(text("list-item", &[("text", remote.question.as_str().into())]));
        }
    }
    if !plan.unhandled.is_empty() {
        out.unhandled.push(text("summary-unhandled-header", &[]));
        out.unhandled.extend(plan.unhandled.iter().map(|p| text("list-item", &[("text", p.as_str().into())])));
    }
    if !plan.unresolved.is_empty() {
        out.unresolved.push(text("summary-unresolved-header", &[]));
        let separator = text("summary-example-separator", &[]);
        out.unresolved.extend(plan.unresolved.iter().map(|u| {
            let names: Vec<&str> = u
                .candidates
                .iter()
                .filter_map(|id| registry.get_enabled(id))
                .map(|card| card.spec.name.for_lang(lang))
                .collect();
            text(
                "summary-unresolved-item",
                &[("part", u.part.as_str().into()), ("names", names.join(&separator).into())],
            )
        }));
    }
    out.auth.extend(auth_lines(plan));
    out.needed.extend(confirm);
    if !needed.is_empty() {
        out.needed.push(text("summary-needed-header", &[]));
        out.needed.extend(needed);
        if !examples.is_empty() {
            let examples = examples.join(&text("summary-example-separator", &[]));
            let id = if form { "summary-needed-hint" } else { "summary-needed-hint-no-form" };
            out.needed.push(text(id, &[("examples", examples.into())]));
        }
    }
    out
}

/// What the blocked keys need from the user.
struct Needed {
    /// User lines (`- 入住城市（例如：北京）`, or for a value not accepted
    /// `- 接机机场：“火星机场”无法使用，请从以下选项中选择：…`).
    lines: Vec<String>,
    /// Their examples, as people write them (12月1日 14:30, not 2026-12-01T14:30).
    examples: Vec<String>,
    /// Some key has a widget: the frontend can show a form.
    form: bool,
    /// One yes / no question per sub-task waiting for the user to confirm remembered values.
    confirm: Vec<String>,
}

/// The blocked keys as user lines, their examples, and whether a form can be offered.
fn still_needed(registry: &Registry, plan: &TaskPlan, lang: Lang) -> Needed {
    let year = chrono::Datelike::year(&chrono::Utc::now());
    let mut lines = Vec::new();
    let mut examples = Vec::new();
    let mut form = false;
    let mut confirm = Vec::new();
    // Name the sub-task a key is for only when several sub-tasks are asking.
    let mut asking: Vec<&str> = plan.semantic_info.iter().map(|i| i.task_id.as_str()).collect();
    asking.dedup();
    let several = asking.len() > 1;
    for info in &plan.semantic_info {
        let task = plan.sub_tasks.iter().find(|t| t.task_id == info.task_id);
        let agent = registry.get(&info.sub_agent_id);
        if info.kind == MissKind::Confirm {
            confirm.push(confirm_line(registry.texts(), info, agent, lang, year));
            continue;
        }
        for (n, (key, description)) in info.keys.iter().zip(&info.key_descriptions).enumerate() {
            let def = agent.and_then(|a| a.keys.iter().find(|k| &k.spec.key == key));
            form |= def.is_some_and(|k| k.spec.widget.is_some());
            let example = def.and_then(|k| k.spec.example.as_ref()).map(|v| crate::text::human_value(v, lang, year));
            let ask = Ask {
                description,
                example: example.as_deref(),
                purpose: task.filter(|_| several).map(|t| t.description.as_str()),
                rejected: (info.kind == MissKind::Invalid).then(|| (info.rejected_values.get(n), info.reasons.get(n))),
                options: def.map_or(&[], |k| k.options.as_slice()),
            };
            let line = ask.line(registry.texts(), lang);
            if !lines.contains(&line) {
                lines.push(line);
            }
            if let Some(ex) = example {
                if !examples.contains(&ex) {
                    examples.push(ex);
                }
            }
        }
    }
    Needed { lines, examples, form, confirm }
}

/// "- 请确认是否按以下信息为您办理酒店服务：入住城市：北京、入住日期：12月1日…": the question of a
/// `confirm` entry, values as people write them.
fn confirm_line(
    texts: &Texts,
    info: &SemanticInfo,
    agent: Option<&std::sync::Arc<crate::registry::CapabilityCard>>,
    lang: Lang,
    year: i32,
) -> String {
    let values: Vec<String> = info
        .key_descriptions
        .iter()
        .zip(&info.values)
        .map(|(key, v)| {
            let value = crate::text::human_value(v, lang, year);
            texts.get(lang, "confirm-value", &[("key", key.as_str().into()), ("value", value.into())])
        })
        .collect();
    let task = agent.map_or(String::new(), |a| a.spec.name.for_lang(lang).to_string());
    let values = values.join(&texts.get(lang, "value-separator", &[]));
    texts.get(lang, "confirm-ask", &[("task", task.into()), ("values", values.into())])
}

/// One key to ask for.
struct Ask<'a> {
    description: &'a str,
    example: Option<&'a str>,
    /// The sub-task it is for, when several are asking.
    purpose: Option<&'a str>,
    /// For an invalid key: the value not accepted and why, when known.
    rejected: Option<(Option<&'a Value>, Option<&'a Rejection>)>,
    /// The values the key allows (its schema's enum).
    options: &'a [Value],
}

/// At most this many allowed values are listed when asking again.
const OPTIONS_SHOWN: usize = 10;

impl Ask<'_> {
    /// The ask-key-* line for this key.
    fn line(&self, texts: &Texts, lang: Lang) -> String {
        let mut args: Vec<(&str, FluentValue<'_>)> = vec![("key", self.description.into())];
        if let Some(ex) = self.example {
            args.push(("example", ex.into()));
        }
        let with_example = self.example.is_some();
        let id = match (self.rejected, self.purpose) {
            (Some((Some(value), why)), _) => {
                args.push(("value", example_text(value).into()));
                args.push(("reason", self.reason(texts, lang, why.copied()).into()));
                if with_example {
                    "ask-key-rejected-example"
                } else {
                    "ask-key-rejected"
                }
            }
            (Some((None, _)), _) if with_example => "ask-key-invalid-example",
            (Some((None, _)), _) => "ask-key-invalid",
            (None, Some(p)) => {
                args.push(("task", p.into()));
                if with_example {
                    "ask-key-for-example"
                } else {
                    "ask-key-for"
                }
            }
            (None, None) if with_example => "ask-key-example",
            (None, None) => "ask-key",
        };
        texts.get(lang, id, &args)
    }

    /// Why the value was not accepted, with the allowed values (in the answer's language when
    /// the list mixes languages) when the schema enumerates them.
    fn reason(&self, texts: &Texts, lang: Lang, why: Option<Rejection>) -> String {
        let all: Vec<String> = self.options.iter().map(example_text).collect();
        let same_lang: Vec<String> = all.iter().filter(|o| Lang::detect(o) == lang).cloned().collect();
        let options = if same_lang.is_empty() { all } else { same_lang };
        match why {
            Some(Rejection::PastDate) => texts.get(lang, "reason-past-date", &[]),
            _ if !options.is_empty() => {
                let sep = texts.get(lang, "option-separator", &[]);
                let shown = options.iter().take(OPTIONS_SHOWN).cloned().collect::<Vec<_>>().join(&sep);
                if options.len() > OPTIONS_SHOWN {
                    let args = [("options", shown.into()), ("count", options.len().into())];
                    texts.get(lang, "reason-not-an-option-more", &args)
                } else {
                    texts.get(lang, "reason-not-an-option", &[("options", shown.into())])
                }
            }
            _ => texts.get(lang, "reason-invalid", &[]),
        }
    }
}

fn example_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The `blocked` event's text: which details are needed, with examples; then why sub-tasks
/// that need a signed-in user (or more permissions) wait.
pub fn blocked_text(registry: &Registry, plan: &TaskPlan, lang: Lang) -> String {
    let Needed { lines, confirm, .. } = still_needed(registry, plan, lang);
    let mut out = Vec::new();
    if !lines.is_empty() {
        out.push(registry.texts().get(lang, "blocked-ask", &[("keys", lines.join("\n").into())]));
    }
    out.extend(confirm);
    out.extend(auth_lines(plan));
    out.join("\n")
}

/// The user-facing reasons of sub-tasks blocked for auth (`semantic_info` of type `auth`).
fn auth_lines(plan: &TaskPlan) -> impl Iterator<Item = String> + '_ {
    plan.semantic_info.iter().filter_map(|i| i.auth.as_ref()).map(|a| a.message.clone())
}

/// What the assistant can do, one line per enabled capability card's description; grouped under
/// their domain (in first-seen order) when cards declare one.
fn capabilities(registry: &Registry, lang: Lang) -> String {
    let texts = registry.texts();
    let line = |a: &crate::registry::CapabilityCard| {
        texts.get(lang, "list-item", &[("text", a.task_description(lang).into())])
    };
    if registry.enabled().all(|a| a.spec.domain.is_none()) {
        return registry.enabled().map(|a| line(a)).collect::<Vec<_>>().join("\n");
    }
    let mut groups: Vec<(Option<&str>, Vec<String>)> = Vec::new();
    for a in registry.enabled() {
        let d = a.spec.domain.as_deref().map(str::trim).filter(|d| !d.is_empty());
        match groups.iter_mut().find(|(g, _)| *g == d) {
            Some((_, lines)) => lines.push(line(a)),
            None => groups.push((d, vec![line(a)])),
        }
    }
    // Cards without a domain come last.
    groups.sort_by_key(|(d, _)| d.is_none());
    groups
        .into_iter()
        .map(|(d, lines)| {
            let lines = lines.into_iter().map(|l| format!("  {l}")).collect::<Vec<_>>().join("\n");
            let other = texts.get(lang, "capabilities-other-domain", &[]);
            format!("{}:\n{lines}", d.map_or(other, str::to_string))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The direct answer to a simple intent.
pub fn direct_answer(registry: &Registry, intent: SimpleIntent, lang: Lang) -> String {
    let id = match intent {
        SimpleIntent::Greeting => "direct-greeting",
        SimpleIntent::Thanks => "direct-thanks",
        SimpleIntent::Capabilities => "direct-capabilities",
        SimpleIntent::ChitChat => "direct-chitchat",
        SimpleIntent::Angry => "direct-angry",
        SimpleIntent::HumanRequested
        | SimpleIntent::Sensitive
        | SimpleIntent::SelfHarm
        | SimpleIntent::Abusive
        | SimpleIntent::OutOfScope => "direct-out-of-scope",
    };
    registry.texts().get(lang, id, &[("capabilities", capabilities(registry, lang).into())])
}

/// The text of an `escalated` event.
pub fn escalation_text(texts: &Texts, reason: EscalationReason, lang: Lang) -> String {
    let id = match reason {
        EscalationReason::UserRequested => "escalation-user-requested",
        EscalationReason::Sensitive => "escalation-sensitive",
        EscalationReason::SelfHarm => "escalation-self-harm",
        EscalationReason::Abusive => "escalation-abusive",
        EscalationReason::RepeatedFailures => "escalation-repeated-failures",
        EscalationReason::ClarificationRoundsExhausted => "escalation-clarification-exhausted",
        EscalationReason::PromptInjection => "escalation-prompt-injection",
        EscalationReason::ServiceUnavailable => "escalation-service-unavailable",
    };
    texts.get(lang, id, &[])
}

/// The escalation card's summary for the human agent: what happened, by reason, with the user's
/// words (`escalation-summary-*`).
pub fn escalation_summary(texts: &Texts, reason: EscalationReason, query: &str, lang: Lang) -> String {
    let id = match reason {
        EscalationReason::UserRequested => "escalation-summary-user-requested",
        EscalationReason::Sensitive => "escalation-summary-sensitive",
        EscalationReason::SelfHarm => "escalation-summary-self-harm",
        EscalationReason::Abusive => "escalation-summary-abusive",
        EscalationReason::PromptInjection => "escalation-summary-prompt-injection",
        EscalationReason::ServiceUnavailable => "escalation-summary-service-unavailable",
        EscalationReason::RepeatedFailures | EscalationReason::ClarificationRoundsExhausted => "escalation-summary",
    };
    texts.get(lang, id, &[("query", query.into())])
}

/// `urgent` for a hand-over a human must take at once (self-harm), else `normal`.
pub fn escalation_priority(reason: EscalationReason) -> &'static str {
    if reason == EscalationReason::SelfHarm {
        "urgent"
    } else {
        "normal"
    }
}

/// The answer to cancel words: what was dropped, or that nothing was pending.
pub fn cancel_text(texts: &Texts, dropped: Option<&[SubTask]>, lang: Lang) -> String {
    match dropped.filter(|d| !d.is_empty()) {
        Some(tasks) => {
            let what: Vec<&str> = tasks.iter().map(|t| t.description.as_str()).collect();
            let what = what.join(&texts.get(lang, "list-separator", &[]));
            texts.get(lang, "cancel-done", &[("tasks", what.into())])
        }
        None => texts.get(lang, "cancel-nothing", &[]),
    }
}

/// The did-you-mean question: the numbered candidates (`choice-question`, `choice-option`).
pub fn choice_text(texts: &Texts, offered: &[ChoiceCandidate], lang: Lang) -> String {
    let options: Vec<String> = offered
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let description = c.description.trim().trim_end_matches(['。', '.', '；', ';']);
            let args = [("n", (i + 1).into()), ("name", c.name.as_str().into()), ("description", description.into())];
            texts.get(lang, "choice-option", &args)
        })
        .collect();
    texts.get(lang, "choice-question", &[("options", options.join("\n").into())])
}

/// The `semantic_info` entry of a did-you-mean question `choice_id`: `type: "intent"`, the one
/// key `intent` with the `intent_picker` widget, and the candidates.
pub fn choice_info(texts: &Texts, choice_id: &str, offered: Vec<ChoiceCandidate>, lang: Lang) -> SemanticInfo {
    SemanticInfo {
        kind: MissKind::Intent,
        sub_agent_id: String::new(),
        task_id: choice_id.to_string(),
        keys: vec![choice::CHOICE_KEY.to_string()],
        key_descriptions: vec![texts.get(lang, "choice-key-description", &[])],
        fe_widgets_suggestion: vec![choice::CHOICE_WIDGET.to_string()],
        candidates: offered,
        rejected_values: Vec::new(),
        reasons: Vec::new(),
        auth: None,
        values: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use chrono::NaiveDate;
    use serde_json::{json, Map, Value};

    use super::*;
    use crate::planner::{plan_turn, Decision, TurnInput};
    use crate::registry::RegistryHandle;

    /// The demo registry and the plan of a fresh turn with `query` and form `slots`.
    fn fresh_plan(query: &str, slots: Value, lang: Lang) -> (std::sync::Arc<crate::registry::Registry>, TaskPlan) {
        let reg =
            RegistryHandle::open(&Path::new(env!("CARGO_MANIFEST_DIR")).join("agents_config.yaml")).unwrap().load();
        let slots: Map<String, Value> = slots.as_object().cloned().unwrap_or_default();
        let input = TurnInput {
            query,
            slots: &slots,
            session_slots: &Map::new(),
            pending: None,
            choice: None,
            pending_plan_id: None,
            previous: None,
            today: NaiveDate::from_ymd_opt(2026, 11, 23).unwrap(),
            plan_id: "plan_t",
            lang,
        };
        let Decision::Plan { plan, .. } = plan_turn(&reg, input).decision else { panic!("a plan") };
        (reg, plan)
    }

    /// The `blocked` text of a fresh turn with `query` and form `slots`.
    fn ask(query: &str, slots: Value, lang: Lang) -> String {
        let (reg, plan) = fresh_plan(query, slots, lang);
        blocked_text(&reg, &plan, lang)
    }

    /// A part no card clearly means is asked about by the template summary, with the cards'
    /// names, and appended to a model's summary that leaves it out.
    #[test]
    fn an_unresolved_part_is_asked_about_with_the_cards_names() {
        let (reg, mut plan) = fresh_plan("北京明天天气怎么样", json!({}), Lang::Zh);
        plan.unresolved = vec![crate::matching::recognize::Unresolved {
            part: "那边住的地方也帮我看看".to_string(),
            candidates: vec!["hotel_agent".to_string(), "pickup_agent".to_string()],
        }];
        let text = summary(&reg, &plan, Lang::Zh);
        assert!(text.contains("我不确定") && text.contains("“那边住的地方也帮我看看”：酒店服务，接机服务"), "{text}");
        let checked = check_model_summary(&reg, &plan, Lang::Zh, "已为您查询北京明天的天气。".to_string());
        let (text, by) = checked.into_parts();
        assert_eq!(by, "llm+template", "{text}");
        assert!(text.contains("那边住的地方也帮我看看"), "{text}");
    }

    #[test]
    fn a_rejected_value_is_named_with_why_and_the_options() {
        let past = ask("帮我订北京的酒店，2020-01-01入住", json!({}), Lang::Zh);
        assert!(past.contains("入住日期：“2020-01-01”无法使用，这个日期已经过去了"), "{past}");
        // The example is kept, as people write dates (issue 17 item 10), not 2026-12-01.
        assert!(past.contains("例如：") && past.contains("12月1日") && !past.contains("2026-12-01"), "{past}");

        let zh = ask("安排接机", json!({ "airport": "火星机场", "arrival_time": "2026-12-01T14:30" }), Lang::Zh);
        assert!(zh.contains("接机机场：“火星机场”无法使用，请从以下选项中选择：白云机场、首都机场"), "{zh}");
        assert!(zh.contains("咸阳机场") && !zh.contains("Baiyun"), "all ten Chinese options, no English: {zh}");
        assert!(zh.contains("例如：白云机场"), "{zh}");

        let en = ask("arrange a pickup", json!({ "airport": "Mars", "arrival_time": "2026-12-01T14:30" }), Lang::En);
        assert!(en.contains("\"Mars\" cannot be used: please choose one of Baiyun Airport, Capital Airport"), "{en}");
        assert!(!en.contains("白云机场,"), "{en}");
    }
}
