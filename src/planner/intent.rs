//! Rule-based intent recognition (docs/planning.md): capability-card matching and the built-in
//! lexicons of simple intents.
//!
//! Card matching is the registry's scoring recognizer ([`crate::matching::recognize`]): keywords
//! and names (CJK as substrings, Latin as whole words), similarity to the card's name,
//! description and examples, distinctive entities, clause by clause, with negation scope.
//! Several agents can match one query (multi-intent); they are ordered by where they are first
//! mentioned.

use serde::Serialize;

use crate::matching::{find_term, Recognition, Term};
use crate::registry::Registry;

/// The language of user-facing text; it lives in [`crate::text`] (kept here for existing paths).
pub use crate::text::Lang;

/// Intents answered without planning sub-tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SimpleIntent {
    /// 你好 / hello.
    Greeting,
    /// 谢谢 / thanks.
    Thanks,
    /// "What can you do?" — answered from the registry's cards.
    Capabilities,
    /// Small talk.
    ChitChat,
    /// The user asks for a human -> escalation.
    HumanRequested,
    /// Abusive or sensitive content -> escalation.
    Sensitive,
    /// Nothing matched: a polite answer listing what is possible.
    OutOfScope,
}

const SENSITIVE: &[&str] = &[
    "傻逼",
    "傻b",
    "sb客服",
    "操你",
    "草泥马",
    "去死",
    "滚蛋",
    "妈的",
    "他妈",
    "废物客服",
    "自杀",
    "炸弹",
    "fuck",
    "fucking",
    "shit",
    "bitch",
    "asshole",
    "idiot",
    "kill myself",
    "suicide",
    "bomb",
];
const HUMAN: &[&str] = &[
    "转人工",
    "人工客服",
    "人工服务",
    "找人工",
    "要人工",
    "人工坐席",
    "真人客服",
    "真人",
    "找客服",
    "投诉",
    "human agent",
    "real person",
    "a human",
    "speak to a human",
    "talk to a human",
    "live agent",
    "representative",
];
const CAPABILITIES: &[&str] = &[
    "你能做什么",
    "你会做什么",
    "你会什么",
    "能做什么",
    "可以做什么",
    "能帮我做什么",
    "能帮我什么",
    "有什么功能",
    "有哪些功能",
    "你能干什么",
    "功能介绍",
    "what can you do",
    "what do you do",
    "what can i ask",
    "help",
];
const GREETING: &[&str] = &[
    "你好",
    "您好",
    "嗨",
    "哈喽",
    "早上好",
    "上午好",
    "下午好",
    "晚上好",
    "在吗",
    "hello",
    "hi",
    "hey",
    "good morning",
    "good afternoon",
    "good evening",
];
const THANKS: &[&str] = &["谢谢", "多谢", "感谢", "谢了", "thanks", "thank you", "thx", "cheers"];
const CHIT_CHAT: &[&str] = &[
    "你是谁",
    "你叫什么",
    "讲个笑话",
    "说个笑话",
    "聊聊天",
    "聊天",
    "无聊",
    "你好吗",
    "how are you",
    "who are you",
    "tell me a joke",
    "what's your name",
    "your name",
];

const CANCEL: &[&str] =
    &["取消", "算了", "不用了", "不要了", "不需要了", "cancel", "never mind", "nevermind", "forget it"];

/// `true` when the text holds a cancel word (取消, 算了, 不用了, 不要了, cancel, never mind, forget it).
pub fn is_cancel(lower: &str) -> bool {
    any_term(lower, &CANCEL_TERMS)
}

fn any_term(lower: &str, terms: &[Term]) -> bool {
    terms.iter().any(|t| find_term(lower, t).is_some())
}

fn terms(list: &[&str]) -> Vec<Term> {
    list.iter().map(|t| Term::new(t)).collect()
}

static CANCEL_TERMS: std::sync::LazyLock<Vec<Term>> = std::sync::LazyLock::new(|| terms(CANCEL));

/// The lexicons, prepared once, in priority order.
static LEXICONS: std::sync::LazyLock<[(Vec<Term>, SimpleIntent); 6]> = std::sync::LazyLock::new(|| {
    [
        (terms(SENSITIVE), SimpleIntent::Sensitive),
        (terms(HUMAN), SimpleIntent::HumanRequested),
        (terms(CAPABILITIES), SimpleIntent::Capabilities),
        (terms(CHIT_CHAT), SimpleIntent::ChitChat),
        (terms(GREETING), SimpleIntent::Greeting),
        (terms(THANKS), SimpleIntent::Thanks),
    ]
});

/// The simple intent of a query, if one of the lexicons matches (sensitive first, then a request
/// for a human, capabilities, greeting, thanks, chit-chat).
pub fn simple_intent(lower: &str) -> Option<SimpleIntent> {
    LEXICONS.iter().find_map(|(terms, intent)| any_term(lower, terms).then_some(*intent))
}

/// Enabled agents the query confidently asks for, ordered by first mention:
/// `(offset, agent id)` (the `selected` cards of [`recognize`]).
pub fn match_agents(registry: &Registry, query: &str) -> Vec<(usize, String)> {
    recognize(registry, query).hits()
}

/// The full recognition of `query` against the registry's enabled cards: selected cards,
/// uncertain ones (for a did-you-mean question) and the scored candidates with their evidence.
pub fn recognize(registry: &Registry, query: &str) -> Recognition {
    registry.recognizer.recognize(query)
}

/// How many candidates go into `intent_done` metadata and the intent prompt.
pub const CANDIDATES_SHOWN: usize = 5;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexicons() {
        assert_eq!(simple_intent("你好"), Some(SimpleIntent::Greeting));
        assert_eq!(simple_intent("谢谢你"), Some(SimpleIntent::Thanks));
        assert_eq!(simple_intent("我要转人工"), Some(SimpleIntent::HumanRequested));
        assert_eq!(simple_intent("what can you do?"), Some(SimpleIntent::Capabilities));
        assert_eq!(simple_intent("你这个傻逼"), Some(SimpleIntent::Sensitive));
        assert_eq!(simple_intent("tell me a joke"), Some(SimpleIntent::ChitChat));
        assert_eq!(simple_intent("量子力学是什么"), None);
    }
}
