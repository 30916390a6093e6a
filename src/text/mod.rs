//! The texts users read, and the language they are written in.
//!
//! Every sentence Switchboard shows a user lives in a [Fluent](https://projectfluent.org/)
//! catalog: `locales/<locale>/*.ftl` in the repository, embedded in the binary at build time.
//! An operator can override single messages, per locale, with `supervisor.texts_dir` in the config
//! ([`Texts::with_overrides`]); the registry snapshot holds the compiled [`Texts`], so one turn
//! reads one consistent catalog and an edit hot-reloads with the config.
//!
//! The word lists of simple intents (greeting, thanks, cancel words, …) live next to the catalog:
//! `locales/lexicons.txt`, extended by `<texts_dir>/lexicons.txt` ([`Lexicons`]).
//!
//! The language of a turn is the script of its query ([`Lang::detect`]): Chinese when it holds a
//! CJK ideograph ([`is_cjk`]), English otherwise; a query without words keeps the conversation's
//! language ([`Lang::of_turn`]).
//!
//! **Layering:** this is the lowest module of the crate; it imports no other `crate::` module.

mod catalog;
mod lexicon;

pub use catalog::{read_overrides, OverrideFile, TextError, Texts};
pub use lexicon::{Lexicon, Lexicons};

/// The operator's lexicon file in `supervisor.texts_dir` (see [`Lexicons`]).
pub const LEXICON_FILE: &str = "lexicons.txt";
pub use fluent_bundle::FluentValue;

use serde::{Deserialize, Serialize};

/// The language user-facing text is written in, from the script of the query.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Lang {
    /// Chinese: the query contains CJK characters.
    Zh,
    /// English: everything else.
    En,
}

impl Lang {
    /// Every language, in catalog order.
    pub const ALL: [Lang; 2] = [Lang::Zh, Lang::En];

    /// Chinese when `text` holds any CJK ideograph ([`is_cjk`]), English otherwise.
    pub fn detect(text: &str) -> Self {
        if has_cjk(text) {
            Self::Zh
        } else {
            Self::En
        }
    }

    /// The language of a turn's `text` in a conversation held in `conversation`: the text's
    /// language when it is confidently one ([`Lang::confident`]), else the conversation's — a
    /// widget form (empty text), "120", "CA1234", "Dec 1, 14:30" or "OK" in a Chinese
    /// conversation stay Chinese; "北京" in an English one stays English.
    pub fn of_turn(text: &str, conversation: Self) -> Self {
        Self::confident(text).unwrap_or(conversation)
    }

    /// The language `text` is clearly written in, if any — a sentence, not a name or a value:
    /// Chinese with at least three CJK ideographs, one of them a word of sentences (我 / 要 /
    /// 吗 / 帮 …), and no more Latin words than ideographs; English with more Latin words (two
    /// letters or more, no digits) than ideographs and either three of them or two with a
    /// function word (a / the / my / please …). "白云机场", "CA1234", "Dec 1, 14:30",
    /// "Baiyun Airport" and "OK" say nothing of the language.
    pub fn confident(text: &str) -> Option<Self> {
        const ZH_SENTENCE: &str = "我你您的了吗呢吧帮要想请是在有么怎哪谁能会不没给把让";
        const EN_FUNCTION: &[&str] =
            &["a", "an", "the", "my", "me", "i", "you", "to", "for", "please", "can", "what", "how", "is", "are", "do"];
        let cjk = text.chars().filter(|&c| is_cjk(c)).count();
        let sentence_char = text.chars().any(|c| ZH_SENTENCE.contains(c));
        // Addresses and links are values, not words.
        let values_out: Vec<&str> =
            text.split_whitespace().filter(|c| !c.contains('@') && !c.contains("://")).collect();
        let tokens: Vec<String> = values_out
            .join(" ")
            .split(|c: char| !(c.is_alphanumeric() || c == '\'') || is_cjk(c))
            .filter(|w| !w.is_empty() && !w.chars().any(|c| c.is_ascii_digit()))
            .map(str::to_lowercase)
            .collect();
        let words = tokens.iter().filter(|w| w.chars().filter(|c| c.is_alphabetic()).count() >= 2).count();
        let function = tokens.iter().any(|w| EN_FUNCTION.contains(&w.as_str()));
        if cjk >= 3 && sentence_char && cjk >= words {
            Some(Self::Zh)
        } else if words > cjk && (words >= 3 || (words >= 2 && function)) {
            Some(Self::En)
        } else {
            None
        }
    }

    /// The locale of its catalog: the directory name under `locales/` and under `texts_dir`.
    pub fn locale(self) -> &'static str {
        match self {
            Self::Zh => "zh-CN",
            Self::En => "en",
        }
    }

    /// The language whose catalog directory is `locale`, if any.
    pub fn from_locale(locale: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|l| l.locale() == locale)
    }

    /// The language's slot in per-language arrays: Chinese 0, English 1.
    pub(crate) fn index(self) -> usize {
        match self {
            Self::Zh => 0,
            Self::En => 1,
        }
    }
}

/// A CJK ideograph: the unified ideographs with extension A, the compatibility ideographs, and
/// the supplementary ideographic planes (extensions B and later). The one test of "Chinese text"
/// in the crate.
pub fn is_cjk(c: char) -> bool {
    matches!(c,
        '\u{3400}'..='\u{4dbf}'
        | '\u{4e00}'..='\u{9fff}'
        | '\u{f900}'..='\u{faff}'
        | '\u{20000}'..='\u{2fa1f}')
}

/// `true` when `text` holds any CJK ideograph.
pub fn has_cjk(text: &str) -> bool {
    text.chars().any(is_cjk)
}

/// A semantic value as a person reads it: an ISO date `2026-12-01` as 12月1日 / Dec 1, a
/// date-time `2026-12-01T14:30` as 12月1日 14:30 / Dec 1, 14:30 (the year shown only when it is
/// not `this_year`); other strings as they are, other JSON as its text. Sub-agents still get
/// the ISO form: this is for texts only.
pub fn human_value(value: &serde_json::Value, lang: Lang, this_year: i32) -> String {
    use chrono::{Datelike, NaiveDate, NaiveDateTime};
    let serde_json::Value::String(s) = value else { return value.to_string() };
    let t = s.trim();
    let (date, time) = if let Ok(dt) = NaiveDateTime::parse_from_str(t, "%Y-%m-%dT%H:%M") {
        (dt.date(), Some(dt.format("%H:%M").to_string()))
    } else if let Ok(dt) = NaiveDateTime::parse_from_str(t, "%Y-%m-%dT%H:%M:%S") {
        (dt.date(), Some(dt.format("%H:%M").to_string()))
    } else if let Ok(d) = NaiveDate::parse_from_str(t, "%Y-%m-%d") {
        (d, None)
    } else {
        return s.clone();
    };
    let with_year = date.year() != this_year;
    let day = match (lang, with_year) {
        (Lang::Zh, false) => format!("{}月{}日", date.month(), date.day()),
        (Lang::Zh, true) => format!("{}年{}月{}日", date.year(), date.month(), date.day()),
        (Lang::En, false) => date.format("%b %-d").to_string(),
        (Lang::En, true) => date.format("%b %-d, %Y").to_string(),
    };
    match (time, lang) {
        (Some(t), Lang::Zh) => format!("{day} {t}"),
        (Some(t), Lang::En) => format!("{day}, {t}"),
        (None, _) => day,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_read_as_people_write_them() {
        use serde_json::json;
        assert_eq!(human_value(&json!("2026-12-01"), Lang::Zh, 2026), "12月1日");
        assert_eq!(human_value(&json!("2026-12-01T14:30"), Lang::Zh, 2026), "12月1日 14:30");
        assert_eq!(human_value(&json!("2027-01-05"), Lang::Zh, 2026), "2027年1月5日");
        assert_eq!(human_value(&json!("2026-12-01T14:30"), Lang::En, 2026), "Dec 1, 14:30");
        assert_eq!(human_value(&json!("2027-01-05"), Lang::En, 2026), "Jan 5, 2027");
        assert_eq!(human_value(&json!("白云机场"), Lang::Zh, 2026), "白云机场");
        assert_eq!(human_value(&json!(120), Lang::Zh, 2026), "120");
        assert_eq!(human_value(&json!("2026-13-40"), Lang::En, 2026), "2026-13-40");
    }

    #[test]
    fn detects_the_language_by_script() {
        assert_eq!(Lang::detect("hello 北京"), Lang::Zh);
        assert_eq!(Lang::detect("hello"), Lang::En);
        assert_eq!(Lang::detect("㐀"), Lang::Zh, "extension A");
        assert_eq!(Lang::detect("𠀀"), Lang::Zh, "extension B");
        assert_eq!(Lang::detect("，。"), Lang::En, "punctuation alone is no script");
        // A turn without words keeps the conversation's language.
        assert_eq!(Lang::of_turn("", Lang::Zh), Lang::Zh);
        assert_eq!(Lang::of_turn("2026-12-01", Lang::Zh), Lang::Zh);
        // Values, names and codes keep the conversation's language (issue 17 item 5).
        for value in ["120", "CA1234", "Dec 1, 14:30", "OK", "hello", "Baiyun Airport", "zhang.san@example.com"] {
            assert_eq!(Lang::of_turn(value, Lang::Zh), Lang::Zh, "{value}");
        }
        for value in ["北京", "白云机场", "明天", "12月1日 14:30"] {
            assert_eq!(Lang::of_turn(value, Lang::En), Lang::En, "{value}");
        }
        // A clearly different-language sentence changes it.
        assert_eq!(Lang::of_turn("book a hotel", Lang::Zh), Lang::En);
        assert_eq!(Lang::of_turn("What's the weather in Beijing?", Lang::Zh), Lang::En);
        assert_eq!(Lang::of_turn("帮我订酒店", Lang::En), Lang::Zh);
        assert_eq!(Lang::of_turn("上海呢", Lang::En), Lang::Zh);
        assert_eq!(Lang::from_locale("zh-CN"), Some(Lang::Zh));
        assert_eq!(Lang::from_locale("zh_CN"), None);
        for lang in Lang::ALL {
            assert_eq!(Lang::from_locale(lang.locale()), Some(lang));
            assert_eq!(Lang::ALL[lang.index()], lang);
        }
    }
}
