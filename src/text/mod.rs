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

use serde::Serialize;

/// The language user-facing text is written in, from the script of the query.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
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

    /// The language of a turn's `text`; a text without words (empty, form values only, a bare
    /// date or number) keeps `conversation`'s language.
    pub fn of_turn(text: &str, conversation: Self) -> Self {
        if text.chars().any(char::is_alphabetic) {
            Self::detect(text)
        } else {
            conversation
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

    fn index(self) -> usize {
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
        assert_eq!(Lang::of_turn("hello", Lang::Zh), Lang::En);
        assert_eq!(Lang::of_turn("北京", Lang::En), Lang::Zh);
        assert_eq!(Lang::from_locale("zh-CN"), Some(Lang::Zh));
        assert_eq!(Lang::from_locale("zh_CN"), None);
        for lang in Lang::ALL {
            assert_eq!(Lang::from_locale(lang.locale()), Some(lang));
            assert_eq!(Lang::ALL[lang.index()], lang);
        }
    }
}
