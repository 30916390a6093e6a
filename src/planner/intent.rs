//! Rule-based intent recognition (docs/planning.md): capability-card matching and the word lists
//! of simple intents (`locales/lexicons.txt` plus the operator's, compiled per snapshot as
//! [`Registry::lexicons`]).
//!
//! Card matching is the registry's scoring recognizer ([`crate::matching::recognize`]): keywords
//! and names (CJK as substrings, Latin as whole words), similarity to the card's name,
//! description and examples, distinctive entities, clause by clause, with negation scope.
//! Several agents can match one query (multi-intent); they are ordered by where they are first
//! mentioned.

use std::sync::LazyLock;

use regex::Regex;
use serde::Serialize;

use crate::matching::recognize::negations;
use crate::matching::Recognition;
use crate::registry::Registry;
use crate::text::Lexicon;

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
    /// Dangerous or sensitive content -> escalation.
    Sensitive,
    /// Thoughts of self-harm -> a safety message and an urgent escalation.
    SelfHarm,
    /// Insults and abuse -> escalation.
    Abusive,
    /// Frustration or anger -> an apology and a human offered.
    Angry,
    /// Nothing matched: a polite answer listing what is possible.
    OutOfScope,
}

/// The simple intents of the word lists, in the order they are checked.
const PRIORITY: [(Lexicon, SimpleIntent); 9] = [
    (Lexicon::SelfHarm, SimpleIntent::SelfHarm),
    (Lexicon::Sensitive, SimpleIntent::Sensitive),
    (Lexicon::Abuse, SimpleIntent::Abusive),
    (Lexicon::Human, SimpleIntent::HumanRequested),
    (Lexicon::Anger, SimpleIntent::Angry),
    (Lexicon::Capabilities, SimpleIntent::Capabilities),
    (Lexicon::ChitChat, SimpleIntent::ChitChat),
    (Lexicon::Greeting, SimpleIntent::Greeting),
    (Lexicon::Thanks, SimpleIntent::Thanks),
];

/// `true` when the text (lower-cased) holds a cancel word of the registry's lexicons
/// (`locales/lexicons.txt`: 取消, 算了, 退出, cancel, quit, exit, …, plus the operator's).
pub fn is_cancel(registry: &Registry, lower: &str) -> bool {
    registry.lexicons.matches(Lexicon::Cancel, lower)
}

/// The simple intent of a query (lower-cased), if one of the registry's word lists
/// (`locales/lexicons.txt` plus the operator's) matches: sensitive first, then a request for a
/// human, capabilities, chit-chat, greeting, thanks.
pub fn simple_intent(registry: &Registry, lower: &str) -> Option<SimpleIntent> {
    PRIORITY.iter().find_map(|(lexicon, intent)| {
        // A message that is only "help" asks what the capabilities list asks.
        let help = *lexicon == Lexicon::Capabilities && registry.lexicons.is_whole(Lexicon::Help, lower);
        (help || registry.lexicons.matches(*lexicon, lower)).then_some(*intent)
    })
}

/// [`simple_intent`] of a query beside its recognition: outside the safety lists (self-harm,
/// sensitive, abuse), a word inside a card keyword found in the query does not count, since an
/// operator's keyword names the card's job ("投诉" of a complaints card's "投诉骑手" is no
/// request for a human; the seeds count 投诉 as a business word). Nor does a request for a human
/// or a word of anger that a negation governs ("不用转人工，帮我查下北京天气", "I don't need a
/// human, just …"; scopes as for cards: [`negations`]; after a Chinese cue only its next four
/// characters). The safety lists are never read that way: "我不想活了" holds a negation cue and is
/// exactly what they are for.
pub fn simple_intent_beside(registry: &Registry, lower: &str, recognition: &Recognition) -> Option<SimpleIntent> {
    let simple = simple_intent(registry, lower)?;
    if matches!(simple, SimpleIntent::SelfHarm | SimpleIntent::Sensitive | SimpleIntent::Abusive) {
        return Some(simple);
    }
    let mut masked = lower.to_string();
    if matches!(simple, SimpleIntent::HumanRequested | SimpleIntent::Angry) {
        // A bare "not" is left out: "Can I not speak to a human?" asks for one.
        let negations = negations(lower).into_iter().filter(|n| &lower[n.cue.clone()] != "not");
        for span in negations.map(|n| governed(lower, &n)) {
            blank(&mut masked, span);
        }
    }
    for c in &recognition.candidates {
        for e in &c.evidence {
            if let crate::matching::Evidence::Keyword { term } = e {
                let term = term.to_lowercase();
                if !term.is_empty() && masked.contains(&term) {
                    // Blanked to the same byte length, so the spans of `lower` stay in place.
                    masked = masked.replace(&term, &" ".repeat(term.len()));
                }
            }
        }
    }
    if simple == SimpleIntent::HumanRequested {
        mask_card_words(registry, lower, recognition, &mut masked);
        mask_reported(registry, lower, &mut masked);
    }
    if masked == lower {
        return Some(simple);
    }
    simple_intent(registry, &masked)
}

/// Blanks in `masked` (a copy of `lower`, same byte length) each word of the human list that a
/// selected card's text shares with the query (its evidence or its own name, keywords and
/// description: [`names_own_job`]) beside another word of its own: "我是要投诉昨天来的那个
/// 师傅" with a "师傅投诉" card asks that card (it shares 投诉 and 师傅), while "我要投诉" alone, which
/// the card shares nothing else with, still asks for a human. Another shared word is one of two
/// characters or more (CJK) or a whole word, with no letter of the human word ("要投" is none).
fn mask_card_words(registry: &Registry, lower: &str, recognition: &Recognition, masked: &mut String) {
    let shared = |word: &str| {
        recognition.selected.iter().filter_map(|s| recognition.score(&s.id)).any(|c| {
            let terms = c.evidence.iter().filter_map(|e| match e {
                crate::matching::Evidence::Terms { terms, .. } => Some(terms),
                _ => None,
            });
            let terms: Vec<&str> = terms.flatten().map(|t| term_word(t)).collect();
            (terms.contains(&word) || names_own_job(registry, &c.id, word))
                && terms
                    .iter()
                    .any(|t| !t.chars().any(|c| word.contains(c)) && (t.chars().count() >= 2 || t.is_ascii()))
        })
    };
    for span in registry.lexicons.find_all(Lexicon::Human, lower) {
        if masked.get(span.clone()).is_some_and(&shared) {
            blank(masked, span);
        }
    }
}

/// Whether the name, keywords or description of card `id` hold `word` (lower-cased): "投诉" of a
/// card named "洗车损伤投诉" is that card's job, though the query's evidence for the card may list
/// other words of it ("…漆面被刮花了，要投诉": the example's 洗完 / 刮 / 漆).
fn names_own_job(registry: &Registry, id: &str, word: &str) -> bool {
    registry.get(id).is_some_and(|card| {
        let spec = &card.spec;
        spec.name
            .all()
            .chain(spec.keywords.iter().map(String::as_str))
            .chain(spec.description.all())
            .any(|t| t.to_lowercase().contains(word))
    })
}

/// Blanks in `masked` each word of the human list that someone else did, as the query reports it:
/// "租客投诉晚上睡觉被虫咬" tells what a tenant complained of, it asks for no human. The word
/// follows a third party (租客, 邻居, 客人, 有人, 他 … or 被) with at most an adverb between.
fn mask_reported(registry: &Registry, lower: &str, masked: &mut String) {
    static OTHERS: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(concat!(
            r"(租客|房客|客人|顾客|客户|乘客|游客|住客|邻居|住户|业主|用户|学生|家长|员工|同事|病人|患者|",
            r"有人|别人|他们|她们|他|她|被)(又|也|都|还|一直|经常|多次|总是|老是)?$"
        ))
        .expect("static regex")
    });
    for span in registry.lexicons.find_all(Lexicon::Human, lower) {
        if OTHERS.is_match(&lower[..span.start]) {
            blank(masked, span);
        }
    }
}

/// Blanks `span` of `text` to spaces of the same byte length, so the spans after it stay in place.
fn blank(text: &mut String, span: std::ops::Range<usize>) {
    let spaces = " ".repeat(span.len());
    text.replace_range(span, &spaces);
}

/// The query's word of a `Terms` evidence entry (`word` or `word→#concept`).
fn term_word(term: &str) -> &str {
    term.split('→').next().unwrap_or(term)
}

/// The words a negation governs for the simple intents: from its cue to the end of its scope,
/// but after a Chinese cue (whose scope runs to the end of its sentence part) only the next
/// [`GOVERNED_CHARS`] characters: "不要机器人我要人工" negates the robot, not the human asked for
/// without a pause.
fn governed(text: &str, n: &crate::matching::recognize::Negation) -> std::ops::Range<usize> {
    let after = &text[n.cue.end..n.scope.end.max(n.cue.end)];
    let end = match after.chars().next() {
        Some(c) if crate::text::is_cjk(c) => {
            n.cue.end + after.char_indices().nth(GOVERNED_CHARS).map_or(after.len(), |(i, _)| i)
        }
        _ => n.scope.end.max(n.cue.end),
    };
    n.cue.start.min(n.scope.start)..end
}

/// See [`governed`]: enough for "不用转人工", "不需要人工客服", "别给我转人工".
const GOVERNED_CHARS: usize = 4;

/// Whether a thanks names only whom it thanks ("谢谢老师", "辛苦了，谢谢医生", "Thanks, doctor!"):
/// the word after the thanks ends the message, and it is all the evidence any selected card has
/// (shared words, and examples met on them; no keyword or value). A kindergarten's
/// teacher-message card or a clinic's doctor card shares that word, but nothing is asked of it.
pub fn thanks_addressed(lower: &str, recognition: &Recognition) -> bool {
    static ADDRESSED: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(concat!(
            r"(?:谢谢|感谢|多谢|辛苦)(?:您|你)?了?(\p{Han}{1,3})[\s!！。.~～]*$",
            r"|(?-u:\b)(?:thanks|thank you|cheers)[\s,]+(?:so much[\s,]+)?(?:dear\s+|mr\.?\s+|ms\.?\s+|dr\.?\s+)?(\w+)[\s!.]*$"
        ))
        .expect("static regex")
    });
    let Some(word) = ADDRESSED.captures(lower).and_then(|c| c.get(1).or_else(|| c.get(2))) else {
        return false;
    };
    only_the_word(word.as_str(), recognition)
}

/// Whether a greeting only addresses someone ("老师好～", "王医生您好", "您好，师傅", "Hi
/// doctor!"): the message is a title (老师, 师傅, 医生, 经理 …, up to two characters before it,
/// as in 王老师) with 好 / 早 / 您好 …, or a greeting followed by such a title (either maybe followed
/// by thanks: "老师好，辛苦啦", "王老师好，谢谢您了"), and no selected
/// card has a keyword or a value in it ([`thanks_addressed`]'s test on the whole message). A
/// tutoring card that shares 老师 is not asked for: the turn is answered as a greeting; so is
/// "老师好" where no card was selected (not out of scope).
pub fn greeting_addressed(lower: &str, recognition: &Recognition) -> bool {
    static ADDRESSED: LazyLock<Regex> = LazyLock::new(|| {
        let title = r"(?:\p{Han}{0,2}?(?:老师|师傅|医生|大夫|护士|律师|经理|老板|阿姨|叔叔|同学|各位|大家|客服|小姐|先生|女士|教练|主任|院长|校长|店长|管家))们?";
        let hello = r"(?:好|早|您好|你好|早上好|上午好|下午好|晚上好)";
        Regex::new(&format!(
            concat!(
                r"^\s*(?:{title}{hello}|(?:你好|您好|嗨|哈喽)[\s,，、]*{title})[\s!！。.~～,，]*",
                r"(?:(?:辛苦(?:您|你)?(?:了|啦)|谢谢(?:您|你)?(?:了|啦)?)[\s!！。.~～]*)?$",
                r"|^\s*(?:hi|hello|hey|good (?:morning|afternoon|evening))[\s,]+(?:dear\s+|mr\.?\s+|ms\.?\s+|dr\.?\s+)?",
                r"(?:doctor|teacher|coach|sir|madam|miss|professor|doc)[\s!.]*$"
            ),
            title = title,
            hello = hello
        ))
        .expect("static regex")
    });
    // The message is nothing but the address: every word of it may be the cards' evidence.
    ADDRESSED.is_match(lower) && (recognition.selected.is_empty() || only_the_word(lower, recognition))
}

/// Whether every selected card (and at least one) was met only on `word` of an address: shared
/// words inside it, and examples or card texts met on them (similar example, close in meaning);
/// no keyword, value or negation.
fn only_the_word(word: &str, recognition: &Recognition) -> bool {
    let only = |e: &crate::matching::Evidence| match e {
        crate::matching::Evidence::Terms { terms, .. } => terms.iter().all(|t| word.contains(term_word(t))),
        // An example or a text met on that word alone ("Book a doctor's appointment" for "Thanks,
        // doctor").
        crate::matching::Evidence::SimilarExample { .. } | crate::matching::Evidence::Semantic { .. } => true,
        _ => false,
    };
    !recognition.selected.is_empty()
        && recognition
            .selected
            .iter()
            .all(|s| recognition.score(&s.id).is_some_and(|c| !c.evidence.is_empty() && c.evidence.iter().all(only)))
}

/// Whether a thanks only praises what was done ("Thanks! The cake last week was amazing, by the
/// way.", "谢谢，花很漂亮"): it holds a word of praise and nothing that asks (a question mark, a
/// question or request word: can, please, need, how …, 帮, 想, 吗 …), adds (also, 另外, 顺便),
/// contrasts or reports a fault (but, not, late, broken …, 但, 不, 没, 坏 …; 不错 is praise). A
/// card the praise names is not asked for.
pub fn thanks_praise_only(lower: &str) -> bool {
    static PRAISE: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(concat!(
            r"(?-u:\b)(?:amazing|great|delicious|lovely|loved|perfect|wonderful|awesome|fantastic|excellent|beautiful)(?-u:\b)",
            r"|(?-u:\b)(?:happy|glad|pleased|enjoyed|brilliant|superb|thrilled|spotless)(?-u:\b)",
            r"|(?-u:\b)(?:(?:as )?good as new|like new|like a new one|works perfectly|works great|spot on)(?-u:\b)",
            r"|好吃|太棒|很棒|真棒|满意|好评|不错|漂亮|好看|喜欢|开心|高兴|跟新的一样|像新的一样|和新的一样"
        ))
        .expect("static regex")
    });
    static ASKS_OR_FAULT: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(concat!(
            r"[?？]|(?-u:\b)(?:can|could|would|will|please|need|want|like to|how|what|when|where|why|which|who|help|also|another|but|however|though|except|not|no|never|late|wrong|broken|missing|damaged)(?-u:\b)|n't",
            r"|帮|请|想|要|能|吗|呢|怎么|什么|哪|多少|几|还有|另外|顺便|再|但|不过|可是|只是|就是|没|不|坏|错|迟|晚|差|投诉|问题"
        ))
        .expect("static regex")
    });
    PRAISE.is_match(lower) && !ASKS_OR_FAULT.is_match(&lower.replace("不错", ""))
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

    /// The demo config's registry (the repo's `agents_config.yaml`).
    fn demo_registry() -> std::sync::Arc<Registry> {
        crate::registry::RegistryHandle::open(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("agents_config.yaml"),
        )
        .unwrap()
        .load()
    }

    #[test]
    fn a_thanks_that_only_praises_asks_for_nothing() {
        for q in [
            "Thanks! The cake last week was amazing, by the way.",
            "谢谢，花很漂亮",
            "谢谢，蛋糕很不错",
            "Thank you so much for looking after Lily today, she came home really happy!",
            "谢谢老师，孩子今天回家特别开心",
            "Thanks so much, the bike rides like new!",
            "谢谢师傅，车修得跟新的一样",
        ] {
            assert!(thanks_praise_only(&q.to_lowercase()), "{q}");
        }
        for q in [
            "Thanks, the cake was great. Could I order another for Friday?",
            "Thanks, the cake was great but the box was crushed",
            "谢谢，蛋糕很好吃，再帮我订一个",
            "谢谢，蛋糕很好吃，就是送晚了",
            "Thanks, that's all I needed",
            "Thanks, she was happy but her bag went missing",
            "Thanks, it rides like new. Can you service my other bike too?",
        ] {
            assert!(!thanks_praise_only(&q.to_lowercase()), "{q}");
        }
    }

    #[test]
    fn lexicons() {
        let registry = demo_registry();
        let simple = |q: &str| simple_intent(&registry, &q.to_lowercase());
        assert_eq!(simple("你好"), Some(SimpleIntent::Greeting));
        assert_eq!(simple("谢谢你"), Some(SimpleIntent::Thanks));
        assert_eq!(simple("我要转人工"), Some(SimpleIntent::HumanRequested));
        assert_eq!(simple("Can I speak to a representative?"), Some(SimpleIntent::HumanRequested));
        // A company's legal representative is no request for a human.
        assert_eq!(simple("she's stepping down as legal representative, what paperwork do we need?"), None);
        assert_eq!(simple("what can you do?"), Some(SimpleIntent::Capabilities));
        // "help" alone asks the same; inside a request it is no signal.
        assert_eq!(simple("Help!"), Some(SimpleIntent::Capabilities));
        assert_eq!(simple("帮助"), Some(SimpleIntent::Capabilities));
        assert_eq!(simple("help me book a hotel in Beijing"), None);
        assert_eq!(simple("你这个傻逼"), Some(SimpleIntent::Abusive));
        assert_eq!(simple("我想自杀"), Some(SimpleIntent::SelfHarm));
        assert_eq!(simple("I want to end my life"), Some(SimpleIntent::SelfHarm));
        assert_eq!(simple("气死我了，什么破服务"), Some(SimpleIntent::Angry));
        assert_eq!(simple("箱子里有炸弹"), Some(SimpleIntent::Sensitive));
        assert_eq!(simple("tell me a joke"), Some(SimpleIntent::ChitChat));
        assert_eq!(simple("量子力学是什么"), None);
        // Issue 17 #12: the cancel words of the contract's scenarios.
        for q in ["退出", "我要退出", "quit", "Exit", "取消", "never mind"] {
            assert!(is_cancel(&registry, &q.to_lowercase()), "{q}");
        }
        assert!(!is_cancel(&registry, "exits of the airport"), "whole words only");
    }

    /// [`simple_intent_beside`] of `q` beside its recognition.
    fn beside(registry: &Registry, q: &str) -> Option<SimpleIntent> {
        simple_intent_beside(registry, &q.to_lowercase(), &registry.recognizer.recognize(q))
    }

    #[test]
    fn a_negated_request_for_a_human_is_none() {
        let registry = demo_registry();
        let beside = |q: &str| beside(&registry, q);
        for q in [
            "不用转人工，帮我查下北京天气",
            "别给我转人工，查下上海明天天气",
            "不需要人工客服",
            "I don't need a human, just check the weather in Beijing",
            "No need for a real person, what's the weather in Shanghai?",
        ] {
            assert_eq!(beside(q), None, "{q}");
        }
        // What follows the negated words, or a pause after them, still asks for one.
        for q in [
            "我要转人工",
            "不要机器人我要人工",
            "I don't want to talk to a bot, get me a human",
            "Can I not speak to a human?",
        ] {
            assert_eq!(beside(q), Some(SimpleIntent::HumanRequested), "{q}");
        }
        assert_eq!(beside("不是说你，气死我了"), Some(SimpleIntent::Angry));
        // The safety lists are never negated away.
        assert_eq!(beside("我不想活了"), Some(SimpleIntent::SelfHarm));
    }

    #[test]
    fn a_complaint_someone_else_made_asks_for_no_human() {
        let registry = demo_registry();
        let beside = |q: &str| beside(&registry, q);
        for q in ["租客投诉晚上睡觉被虫咬，能派人来看看吗", "邻居又投诉我们家空调滴水", "我被投诉了，说我噪音太大"]
        {
            assert_eq!(beside(q), None, "{q}");
        }
        for q in ["我要投诉", "投诉", "租客的事我要投诉"] {
            assert_eq!(beside(q), Some(SimpleIntent::HumanRequested), "{q}");
        }
    }
}
