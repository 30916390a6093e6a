//! The model's summary, checked against the plan (LLM mode): the model may rephrase, but the
//! facts — what is done, what failed, what is still needed — come from the plan. A summary that
//! reports an unfinished sub-task as done is replaced by the template; one that leaves out a
//! failure or a needed key gets the template's section for it appended.

use crate::matching::Evidence;
use crate::planner::{TaskPlan, TaskStatus};
use crate::registry::Registry;
use crate::text::Lang;

/// The verdict on a model's summary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CheckedSummary {
    /// The model's text states every fact: used as is.
    Kept(String),
    /// The model's text, with the template's sections for the facts it left out appended.
    Completed(String),
    /// The model's text claims an unfinished sub-task is done: the template is used instead.
    Rejected {
        /// The template summary.
        text: String,
        /// The clause that made the claim (for the log).
        claim: String,
    },
}

impl CheckedSummary {
    /// The text to send and who wrote it (`state.summarizer`: `llm`, `llm+template`, `template`).
    pub fn into_parts(self) -> (String, &'static str) {
        match self {
            Self::Kept(t) => (t, "llm"),
            Self::Completed(t) => (t, "llm+template"),
            Self::Rejected { text, .. } => (text, "template"),
        }
    }
}

/// Words that claim something was done, and words that negate such a claim (lower case).
const DONE: &[&str] = &[
    "已为您",
    "已经为您",
    "已帮您",
    "已经帮您",
    "已预订",
    "已订好",
    "订好了",
    "已完成",
    "已办理",
    "已安排",
    "安排好了",
    "成功",
    "办好了",
    "搞定",
    "booked",
    "reserved",
    "confirmed",
    "completed",
    "successfully",
    "all set",
    "arranged",
    "i have ",
    "i've ",
    "done",
];
const NEGATED: &[&str] = &[
    "未",
    "没有",
    "没能",
    "无法",
    "不能",
    "尚未",
    "还没",
    "失败",
    "需要您",
    "请提供",
    "not ",
    "n't",
    "unable",
    "failed",
    "yet",
    "need ",
    "needs ",
    "please ",
];

/// Checks the model's `text` against `plan` (see the module docs).
pub fn check_model_summary(registry: &Registry, plan: &TaskPlan, lang: Lang, text: String) -> CheckedSummary {
    let unfinished: Vec<&str> = plan
        .sub_tasks
        .iter()
        .filter(|t| matches!(t.status, TaskStatus::Blocked | TaskStatus::Failed | TaskStatus::Skipped))
        .map(|t| t.assigned_agent.as_str())
        .filter(|a| !plan.sub_tasks.iter().any(|t| t.assigned_agent == *a && t.status == TaskStatus::Done))
        .collect();
    let unhandled_told = plan.unhandled.iter().all(|p| text.to_lowercase().contains(&p.to_lowercase()));
    let unresolved_told = plan.unresolved.iter().all(|u| text.to_lowercase().contains(&u.part.to_lowercase()));
    if unfinished.is_empty() && unhandled_told && unresolved_told {
        return CheckedSummary::Kept(text);
    }
    if let Some(claim) = false_claim(registry, &text, &unfinished) {
        return CheckedSummary::Rejected { text: super::summary(registry, plan, lang), claim };
    }
    let sections = super::sections(registry, plan, lang);
    let lower = text.to_lowercase();
    let mut appended: Vec<String> = Vec::new();
    let failed_told = plan
        .sub_tasks
        .iter()
        .filter(|t| matches!(t.status, TaskStatus::Failed | TaskStatus::Skipped))
        .all(|t| mentions(registry, &text, &lower, &t.assigned_agent, &t.description));
    if !failed_told {
        appended.extend(sections.failed);
    }
    if !unhandled_told {
        appended.extend(sections.unhandled);
    }
    if !unresolved_told {
        appended.extend(sections.unresolved);
    }
    let needed_told =
        plan.semantic_info.iter().flat_map(|i| &i.key_descriptions).all(|d| lower.contains(&d.to_lowercase()))
            && plan.remote_questions().iter().all(|q| text.contains(q.question.as_str()));
    if !sections.auth.iter().all(|line| text.contains(line.as_str())) {
        appended.extend(sections.auth);
    }
    if !needed_told {
        appended.extend(sections.needed);
    }
    if appended.is_empty() {
        CheckedSummary::Kept(text)
    } else {
        CheckedSummary::Completed(format!("{}\n\n{}", text.trim_end(), appended.join("\n")))
    }
}

/// The first clause of `text` that claims one of the `unfinished` agents' work is done: a done
/// word, no negation, and the recognizer finds that agent's card in the clause.
fn false_claim(registry: &Registry, text: &str, unfinished: &[&str]) -> Option<String> {
    text.split(['。', '！', '!', '？', '?', '；', ';', '，', ',', '\n', '.'])
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .find(|clause| {
            let lower = clause.to_lowercase();
            if !DONE.iter().any(|w| lower.contains(w)) || NEGATED.iter().any(|w| lower.contains(w)) {
                return false;
            }
            let rec = registry.recognizer.recognize(clause);
            let named = |id: &str| {
                rec.selected.iter().any(|s| s.id == id)
                    || rec.uncertain.iter().any(|s| s.id == id)
                    || rec
                        .candidates
                        .iter()
                        .any(|s| s.id == id && s.evidence.iter().any(|e| matches!(e, Evidence::Keyword { .. })))
            };
            unfinished.iter().any(|a| named(a))
        })
        .map(str::to_string)
}

/// `true` when the text names the sub-task: its description or its card's name, or the
/// recognizer finds the card in the text.
fn mentions(registry: &Registry, text: &str, lower: &str, agent: &str, description: &str) -> bool {
    if !description.is_empty() && lower.contains(&description.to_lowercase()) {
        return true;
    }
    let Some(card) = registry.get(agent) else { return true };
    if card.spec.name.all().any(|n| !n.trim().is_empty() && lower.contains(&n.to_lowercase())) {
        return true;
    }
    let rec = registry.recognizer.recognize(text);
    rec.selected.iter().any(|s| s.id == agent) || rec.uncertain.iter().any(|s| s.id == agent)
}
