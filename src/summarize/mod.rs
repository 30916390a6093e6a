//! The user-facing texts of a turn: the template summary of a plan's results and the direct
//! answers of simple intents (DESIGN.md section 4, seed 003's summarize step).
//!
//! The summary says what was done (the agents' own `message`s), what failed and why, and what is
//! still needed with an example of how to give it. It never shows agent ids or intent labels:
//! sub-tasks are named by their user-facing description, keys by their description.

use serde_json::Value;

use crate::planner::{EscalationReason, Lang, SimpleIntent, SubTask, TaskPlan, TaskStatus};
use crate::registry::Registry;

/// The template summary of an executed plan.
pub fn summary(registry: &Registry, plan: &TaskPlan, lang: Lang) -> String {
    let zh = lang == Lang::Zh;
    let mut out: Vec<String> = Vec::new();

    let done: Vec<String> = plan
        .sub_tasks
        .iter()
        .filter(|t| t.status == TaskStatus::Done)
        .map(|t| match t.message.as_deref().map(str::trim) {
            Some(m) if !m.is_empty() => format!("- {m}"),
            _ => format!("- {}", t.description),
        })
        .collect();
    if !done.is_empty() {
        out.push(if zh { "已为您完成：".into() } else { "Done:".into() });
        out.extend(done);
    }

    let failed: Vec<String> = plan
        .sub_tasks
        .iter()
        .filter(|t| matches!(t.status, TaskStatus::Failed | TaskStatus::Skipped))
        .map(|t| {
            let reason = t.reason.as_deref().unwrap_or(if zh { "未知原因" } else { "unknown reason" });
            if zh {
                format!("- {}：{reason}", t.description)
            } else {
                format!("- {}: {reason}", t.description)
            }
        })
        .collect();
    if !failed.is_empty() {
        out.push(if zh { "未能完成：".into() } else { "Could not be done:".into() });
        out.extend(failed);
    }

    let (mut needed, examples) = still_needed(registry, plan, lang);
    // Questions asked by A2A agents themselves.
    for t in plan.sub_tasks.iter().filter(|t| t.status == TaskStatus::Blocked) {
        if let Some(remote) = &t.remote {
            needed.push(format!("- {}", remote.question));
        }
    }
    if !needed.is_empty() {
        out.push(if zh { "还需要您提供：".into() } else { "Still needed from you:".into() });
        out.extend(needed);
        if !examples.is_empty() {
            out.push(if zh {
                format!("您可以直接回复，例如：“{}”，或在表单中填写。", examples.join("，"))
            } else {
                format!("Just reply, for example: \"{}\", or fill in the form.", examples.join(", "))
            });
        }
    }

    if out.is_empty() {
        out.push(if zh { "没有需要执行的任务。".into() } else { "There was nothing to do.".into() });
    }
    out.join("\n")
}

/// The blocked keys as user lines (`- 入住城市（例如：北京）`), and their examples.
fn still_needed(registry: &Registry, plan: &TaskPlan, lang: Lang) -> (Vec<String>, Vec<String>) {
    let mut lines = Vec::new();
    let mut examples = Vec::new();
    // Name the sub-task a key is for only when several sub-tasks are asking.
    let mut asking: Vec<&str> = plan.semantic_info.iter().map(|i| i.task_id.as_str()).collect();
    asking.dedup();
    let several = asking.len() > 1;
    for info in &plan.semantic_info {
        let task = plan.sub_tasks.iter().find(|t| t.task_id == info.task_id);
        let agent = registry.get(&info.sub_agent_id);
        for (key, description) in info.keys.iter().zip(&info.key_descriptions) {
            let example = agent
                .and_then(|a| a.keys.iter().find(|k| &k.spec.key == key))
                .and_then(|k| k.spec.example.as_ref())
                .map(example_text);
            let invalid = info.kind == crate::planner::MissKind::Invalid;
            let purpose = task.filter(|_| several).map(|t| t.description.as_str());
            let line = match (lang, &example, invalid) {
                (Lang::Zh, Some(ex), false) => match purpose {
                    Some(p) => format!("- {description}（用于{p}，例如：{ex}）"),
                    None => format!("- {description}（例如：{ex}）"),
                },
                (Lang::Zh, None, false) => match purpose {
                    Some(p) => format!("- {description}（用于{p}）"),
                    None => format!("- {description}"),
                },
                (Lang::Zh, Some(ex), true) => format!("- {description}：您提供的值无法使用，请重新提供（例如：{ex}）"),
                (Lang::Zh, None, true) => format!("- {description}：您提供的值无法使用，请重新提供"),
                (Lang::En, Some(ex), false) => match purpose {
                    Some(p) => format!("- {description} (for: {p}; e.g. {ex})"),
                    None => format!("- {description} (e.g. {ex})"),
                },
                (Lang::En, None, false) => match purpose {
                    Some(p) => format!("- {description} (for: {p})"),
                    None => format!("- {description}"),
                },
                (Lang::En, Some(ex), true) => {
                    format!("- {description}: the value given cannot be used, please give it again (e.g. {ex})")
                }
                (Lang::En, None, true) => {
                    format!("- {description}: the value given cannot be used, please give it again")
                }
            };
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
    (lines, examples)
}

fn example_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The `blocked` event's text: which details are needed, with examples.
pub fn blocked_text(registry: &Registry, plan: &TaskPlan, lang: Lang) -> String {
    let (lines, _) = still_needed(registry, plan, lang);
    let head = match lang {
        Lang::Zh => "为了继续，还需要您提供：",
        Lang::En => "To go on, I need:",
    };
    format!("{head}\n{}", lines.join("\n"))
}

/// What the assistant can do, one line per enabled capability card's description; grouped under
/// their domain (in first-seen order) when cards declare one.
fn capabilities(registry: &Registry, lang: Lang) -> String {
    let line = |a: &crate::registry::Agent| format!("- {}", a.task_description());
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
            let other = match lang {
                Lang::Zh => "其他",
                Lang::En => "Other",
            };
            format!("{}:\n{lines}", d.unwrap_or(other))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The direct answer to a simple intent.
pub fn direct_answer(registry: &Registry, intent: SimpleIntent, lang: Lang) -> String {
    let caps = capabilities(registry, lang);
    match (intent, lang) {
        (SimpleIntent::Greeting, Lang::Zh) => {
            format!("您好！我是您的智能助理，可以帮您：\n{caps}\n请问有什么可以帮您？")
        }
        (SimpleIntent::Greeting, Lang::En) => {
            format!("Hello! I'm your assistant. I can help you with:\n{caps}\nWhat can I do for you?")
        }
        (SimpleIntent::Thanks, Lang::Zh) => "不客气！还有其他需要帮忙的吗？".into(),
        (SimpleIntent::Thanks, Lang::En) => "You're welcome! Anything else I can help with?".into(),
        (SimpleIntent::Capabilities, Lang::Zh) => format!("我可以帮您：\n{caps}"),
        (SimpleIntent::Capabilities, Lang::En) => format!("I can help you with:\n{caps}"),
        (SimpleIntent::ChitChat, Lang::Zh) => format!("我是您的智能助理，更擅长帮您办事。比如：\n{caps}"),
        (SimpleIntent::ChitChat, Lang::En) => {
            format!("I'm your assistant, best at getting things done. For example:\n{caps}")
        }
        (_, Lang::Zh) => format!("抱歉，这个问题超出了我能处理的范围。我可以帮您：\n{caps}"),
        (_, Lang::En) => format!("Sorry, that is outside what I can handle. I can help you with:\n{caps}"),
    }
}

/// The text of an `escalated` event.
pub fn escalation_text(reason: EscalationReason, lang: Lang) -> String {
    let (zh, en) = match reason {
        EscalationReason::UserRequested => {
            ("好的，正在为您转接人工客服，请稍候。", "Sure, I'm handing you over to a human agent. Please hold on.")
        }
        EscalationReason::Sensitive => (
            "这个问题需要人工客服来处理，正在为您转接，请稍候。",
            "A human agent will take this from here. Please hold on.",
        ),
        EscalationReason::RepeatedFailures => (
            "抱歉，连续几次都没能帮您办成，正在为您转接人工客服，请稍候。",
            "Sorry, I could not get this done several times in a row. I'm handing you over to a human agent.",
        ),
        EscalationReason::ClarificationRoundsExhausted => (
            "看起来我们没能确认所需的信息，正在为您转接人工客服，请稍候。",
            "It seems we could not settle the details I need. I'm handing you over to a human agent.",
        ),
    };
    match lang {
        Lang::Zh => zh.to_string(),
        Lang::En => en.to_string(),
    }
}

/// The answer to cancel words: what was dropped, or that nothing was pending.
pub fn cancel_text(dropped: Option<&[SubTask]>, lang: Lang) -> String {
    match (dropped.filter(|d| !d.is_empty()), lang) {
        (Some(tasks), Lang::Zh) => {
            let what: Vec<&str> = tasks.iter().map(|t| t.description.as_str()).collect();
            format!("好的，已取消：{}。还有什么可以帮您？", what.join("；"))
        }
        (Some(tasks), Lang::En) => {
            let what: Vec<&str> = tasks.iter().map(|t| t.description.as_str()).collect();
            format!("OK, cancelled: {}. Anything else I can help with?", what.join("; "))
        }
        (None, Lang::Zh) => "好的。还有什么可以帮您？".to_string(),
        (None, Lang::En) => "OK. Anything else I can help with?".to_string(),
    }
}
