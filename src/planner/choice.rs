//! The did-you-mean second stage of recognition (docs/planning.md), like Rasa's two-stage
//! fallback: when no capability card is confident but some are plausible, the turn asks the user
//! to pick one instead of answering "out of scope"; the next turn's pick (an ordinal such as
//! "第一个" / "the second one", a card's name or words of it such as "汇率那个" / "the weather
//! one", or the widget value `slots.intent = agent id`) plans the chosen card on the original
//! query.

use serde::Serialize;
use serde_json::{Map, Value};

use crate::matching::Recognition;
use crate::registry::Registry;

/// At most this many candidates are offered.
pub const CHOICES_SHOWN: usize = crate::matching::recognize::OFFERED;

/// The slot a widget form answers a did-you-mean question with (`{"intent": "<agent id>"}`).
pub const CHOICE_KEY: &str = "intent";

/// The widget id suggested for the question (`fe_widgets_suggestion`).
pub const CHOICE_WIDGET: &str = "intent_picker";

/// A pending did-you-mean question, as the planner reads it.
#[derive(Debug, Clone, Copy)]
pub struct ChoiceInput<'a> {
    /// The query that was not understood confidently.
    pub query: &'a str,
    /// The candidate agent ids offered, best first.
    pub candidates: &'a [String],
}

/// A did-you-mean question to ask.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IntentChoice {
    /// The query the chosen card will be planned on.
    pub query: String,
    /// Candidate agent ids, best first (at most [`CHOICES_SHOWN`]).
    pub candidates: Vec<String>,
}

/// One offered capability, as `semantic_info[].candidates` shows it: user-facing name and
/// description (the id is what a widget sends back).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct ChoiceCandidate {
    /// The agent id (the value of the `intent` slot that picks it).
    pub agent_id: String,
    /// The card's name.
    pub name: String,
    /// The card's description.
    pub description: String,
}

/// The question for a query no card is confident about: its plausible (uncertain, not negated)
/// cards, best first; `None` when there are none.
pub fn question(recognition: &Recognition, query: &str) -> Option<IntentChoice> {
    let candidates: Vec<String> = recognition.uncertain.iter().take(CHOICES_SHOWN).map(|s| s.id.clone()).collect();
    (!candidates.is_empty()).then(|| IntentChoice { query: query.to_string(), candidates })
}

/// The offered candidates with their user-facing names and descriptions in `lang` (cards no
/// longer enabled are left out).
pub fn offered(registry: &Registry, candidates: &[String], lang: crate::text::Lang) -> Vec<ChoiceCandidate> {
    candidates
        .iter()
        .filter_map(|id| registry.get_enabled(id))
        .map(|card| ChoiceCandidate {
            agent_id: card.id().to_string(),
            name: card.spec.name.for_lang(lang).to_string(),
            description: card.spec.description.for_lang(lang).to_string(),
        })
        .collect()
}

/// Which candidate the user's answer picks, if any: the `intent` slot naming a candidate; an
/// ordinal ("第二个", "2", "the first one", "last"); a short yes ("是", "ok": the `affirm` word
/// list) when one candidate was offered; a candidate's name in the text; else, with
/// `by_evidence`, the candidate the answer's own recognition scores best (not negated), when it
/// scores strictly better than the other candidates.
pub fn pick(
    registry: &Registry,
    text: &str,
    slots: &Map<String, Value>,
    candidates: &[String],
    recognition: &Recognition,
    by_evidence: bool,
) -> Option<String> {
    if let Some(Value::String(id)) = slots.get(CHOICE_KEY) {
        if candidates.contains(id) {
            return Some(id.clone());
        }
    }
    if let Some(i) = ordinal(text, candidates.len()) {
        return candidates.get(i).cloned();
    }
    // "是" / "ok" accepts the one option offered.
    let short = text.trim().chars().count() <= 8;
    let lexicon = crate::text::Lexicon::Affirm;
    if candidates.len() == 1 && short && registry.lexicons.matches(lexicon, &text.trim().to_lowercase()) {
        return candidates.first().cloned();
    }
    let lower = text.to_lowercase();
    let named = candidates.iter().find(|id| {
        registry
            .get(id)
            .is_some_and(|c| c.spec.name.all().any(|n| !n.trim().is_empty() && lower.contains(&n.to_lowercase())))
    });
    if let Some(id) = named {
        return Some(id.clone());
    }
    if !by_evidence {
        return None;
    }
    let mut scored =
        recognition.candidates.iter().filter(|s| candidates.contains(&s.id) && s.raw > 0.0).filter(|s| !s.negated());
    // Only a clear winner: a value that fits several candidates equally ("北京") picks none.
    match (scored.next(), scored.next()) {
        (Some(best), Some(next)) if next.raw >= best.raw => None,
        (Some(best), _) => Some(best.id.clone()),
        _ => None,
    }
}

/// The 0-based position an answer names among `n` offered candidates: "第一个" / "第2项" /
/// "选三" / "2" / "#2" / "first" / "2nd" / "the last one" / "最后一个". Only short answers count
/// (a number inside a longer sentence is a value, not a pick).
pub fn ordinal(text: &str, n: usize) -> Option<usize> {
    let t = text.trim().trim_end_matches(['。', '.', '！', '!', '？', '?', '吧', '呀', '啊']).trim().to_lowercase();
    if t.is_empty() || t.chars().count() > 24 {
        return None;
    }
    if ["最后一个", "最后那个", "最后一项", "last", "the last", "the last one", "last one"].contains(&t.as_str())
    {
        return n.checked_sub(1);
    }
    const EN: [(&str, usize); 10] = [
        ("first", 0),
        ("1st", 0),
        ("second", 1),
        ("2nd", 1),
        ("third", 2),
        ("3rd", 2),
        ("fourth", 3),
        ("4th", 3),
        ("fifth", 4),
        ("5th", 4),
    ];
    let words: Vec<&str> = t.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).collect();
    if words.len() <= 5 {
        if let Some(i) = words.iter().find_map(|w| EN.iter().find(|(e, _)| e == w).map(|(_, i)| *i)) {
            return (i < n).then_some(i);
        }
        let number = words.iter().filter_map(|w| w.parse::<usize>().ok()).collect::<Vec<_>>();
        let fillers = ["option", "number", "no", "the", "one", "choice", "pick", "i", "want", "take"];
        if number.len() == 1 && words.iter().all(|w| w.parse::<usize>().is_ok() || fillers.contains(w)) {
            return (1..=n).contains(&number[0]).then(|| number[0] - 1);
        }
    }
    chinese_ordinal(&t).filter(|i| *i < n)
}

/// "第一个", "第2项", "选三", "要第二种", "二": the 0-based position.
fn chinese_ordinal(t: &str) -> Option<usize> {
    const DIGITS: [char; 9] = ['一', '二', '三', '四', '五', '六', '七', '八', '九'];
    let rest =
        ["我选", "选择", "就选", "选", "我要", "要", "就", "是"].iter().find_map(|p| t.strip_prefix(p)).unwrap_or(t);
    let (marked, rest) = match rest.strip_prefix('第') {
        Some(r) => (true, r),
        None => (false, rest),
    };
    let mut chars = rest.chars();
    let c = chars.next()?;
    let i = DIGITS.iter().position(|d| *d == c).or_else(|| c.to_digit(10).and_then(|d| (d as usize).checked_sub(1)))?;
    let tail: String = chars.collect();
    let tail = tail.trim();
    let suffixes = ["", "个", "项", "种", "条", "个吧", "项吧", "个服务", "项服务", "个选项"];
    // A bare "二" or "2" must be the whole answer; with 第 a longer tail ("第一个，谢谢") is fine.
    (suffixes.contains(&tail) || (marked && !tail.starts_with(|c: char| c.is_ascii_digit()))).then_some(i)
}

#[cfg(test)]
mod tests {
    use super::ordinal;

    #[test]
    fn ordinals_in_both_languages() {
        let cases = [
            ("第一个", Some(0)),
            ("第2个", Some(1)),
            ("选三", Some(2)),
            ("第二项吧", Some(1)),
            ("第一个，谢谢", Some(0)),
            ("2", Some(1)),
            ("#3", Some(2)),
            ("option 2", Some(1)),
            ("the first one", Some(0)),
            ("Second.", Some(1)),
            ("3rd", Some(2)),
            ("the last one", Some(2)),
            ("最后一个", Some(2)),
            ("第五个", None),
            ("7", None),
            ("", None),
            ("帮我订2间房", None),
            ("北京明天天气", None),
            ("I need 2 rooms for the first week of December in Beijing", None),
        ];
        for (text, want) in cases {
            assert_eq!(ordinal(text, 3), want, "{text:?}");
        }
    }
}
