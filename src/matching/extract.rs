//! Semantic-key extraction from free text for the rule planner (docs/planning.md).
//!
//! An [`Extractor`] is compiled once per registry load from a key's `extract:` block and applied
//! to the user's text per turn. Built-in types: `date` (ISO `YYYY-MM-DD`), `time` (`HH:MM`) and
//! `datetime` (`YYYY-MM-DDTHH:MM`), read from Chinese and English text by [`super::dates`];
//! `number`, `phone`, `email`. `pattern` is a regex whose single capture group is the value;
//! `values` / `values_from` find the listed values (substring for CJK, whole word for Latin
//! scripts). [`Extractor::find_all`] gives every value with its place in the text, which
//! [`assign`](mod@super::assign) uses to give each of several keys of one kind its own value.
//! The date is always passed in: extraction reads no clock.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use chrono::NaiveDate;
use regex::Regex;
use serde_json::Value;

use crate::config::{ExtractSpec, ValueType};

use super::dates::{self, Span};
use super::terms::{find_term_all, Term};

/// A value found in a text, with its byte range.
pub type Found = Span<Value>;

/// A compiled `extract:` rule.
#[derive(Debug, Clone)]
pub enum Extractor {
    /// A built-in value type.
    Builtin(ValueType),
    /// A regex with one capture group.
    Pattern(Regex),
    /// Literal values (canonical spelling, prepared term).
    Values(Vec<(String, Term)>),
}

/// What kind of value an extractor finds: keys whose extractors are of one kind compete for the
/// values of a text (see [`super::assign`](mod@super::assign)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A built-in type.
    Builtin(ValueType),
    /// A `pattern`.
    Pattern,
    /// `values` / `values_from`.
    Values,
}

impl Extractor {
    /// Compiles `spec`, resolving `values_from` against `lists`. `None` when the spec is empty or
    /// refers to nothing (validation reports those cases before this runs).
    pub fn new(spec: &ExtractSpec, lists: &BTreeMap<String, Vec<String>>) -> Option<Self> {
        if let Some(kind) = spec.kind {
            return Some(Self::Builtin(kind));
        }
        if let Some(p) = &spec.pattern {
            return Regex::new(p).ok().map(Self::Pattern);
        }
        let values = spec.values.as_ref().or_else(|| spec.values_from.as_ref().and_then(|name| lists.get(name)))?;
        Some(Self::Values(values.iter().map(|v| (v.clone(), Term::new(v))).collect()))
    }

    /// The kind of value it finds.
    pub fn kind(&self) -> Kind {
        match self {
            Self::Builtin(t) => Kind::Builtin(*t),
            Self::Pattern(_) => Kind::Pattern,
            Self::Values(_) => Kind::Values,
        }
    }

    /// The first value found in `text`, if any. `today` resolves relative dates.
    pub fn extract(&self, text: &str, today: NaiveDate) -> Option<Value> {
        self.find_all(text, today).into_iter().next().map(|f| f.value)
    }

    /// Every value found in `text`, in order of position, without overlaps (at one position the
    /// longest match wins).
    pub fn find_all(&self, text: &str, today: NaiveDate) -> Vec<Found> {
        let string = |s: String| Value::String(s);
        let convert = |spans: Vec<Span<String>>| -> Vec<Found> {
            spans.into_iter().map(|s| Span { start: s.start, end: s.end, value: string(s.value) }).collect()
        };
        match self {
            Self::Builtin(ValueType::Date) => convert(map(dates::dates(text, today), |d| d.to_string())),
            Self::Builtin(ValueType::Time) => convert(map(dates::times(text), |t| t.format("%H:%M").to_string())),
            Self::Builtin(ValueType::Datetime) => {
                convert(map(dates::datetimes(text, today), |t| t.format("%Y-%m-%dT%H:%M").to_string()))
            }
            Self::Builtin(ValueType::Number) => find_numbers(text),
            Self::Builtin(ValueType::Phone) => convert(find_phones(text)),
            Self::Builtin(ValueType::Email) => EMAIL
                .find_iter(text)
                .map(|m| Span { start: m.start(), end: m.end(), value: string(m.as_str().into()) })
                .collect(),
            Self::Pattern(re) => re
                .captures_iter(text)
                .filter_map(|c| c.get(1))
                .map(|m| Span { start: m.start(), end: m.end(), value: string(m.as_str().into()) })
                .collect(),
            Self::Values(values) => find_values(values, text),
        }
    }
}

fn map<T, U>(spans: Vec<Span<T>>, f: impl Fn(T) -> U) -> Vec<Span<U>> {
    spans.into_iter().map(|s| Span { start: s.start, end: s.end, value: f(s.value) }).collect()
}

/// `text` lower-cased without moving any byte offset (full Unicode lower-casing when it keeps
/// the length, ASCII otherwise).
pub fn lower_in_place(text: &str) -> String {
    let lower = text.to_lowercase();
    if lower.len() == text.len() {
        lower
    } else {
        text.to_ascii_lowercase()
    }
}

/// Every listed value in `text`; at one position the longest, and none inside a longer one.
fn find_values(values: &[(String, Term)], text: &str) -> Vec<Found> {
    let lower = lower_in_place(text);
    let mut found: Vec<Found> = Vec::new();
    for (canon, term) in values {
        for start in find_term_all(&lower, term) {
            found.push(Span { start, end: start + term.len(), value: Value::String(canon.clone()) });
        }
    }
    found.sort_by_key(|s| (s.start, std::cmp::Reverse(s.end)));
    let mut out: Vec<Found> = Vec::with_capacity(found.len());
    for s in found {
        if out.last().is_none_or(|last| s.start >= last.end) {
            out.push(s);
        }
    }
    out
}

fn re(p: &str) -> Regex {
    Regex::new(p).expect("static regex")
}

static NUMBER: LazyLock<Regex> = LazyLock::new(|| re(r"\d+(?:\.\d+)?"));
static CN_MOBILE: LazyLock<Regex> = LazyLock::new(|| re(r"(?:\+?86[- ]?)?(1[3-9]\d[- ]?\d{4}[- ]?\d{4})"));
static INTL_PHONE: LazyLock<Regex> = LazyLock::new(|| re(r"\+\d[\d -]{6,16}\d"));
static EMAIL: LazyLock<Regex> = LazyLock::new(|| re(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}"));

/// Every standalone number: not part of a code like `CA1234`, a date (`2026-12-01`, `12月1日`) or
/// a clock time (`14:30`, `3点`, `3pm`). Two numbers joined by one slash (`120/80`) are two
/// numbers; a unit after a number (`135mmHg`, `5kg`) is allowed.
fn find_numbers(text: &str) -> Vec<Found> {
    let matches: Vec<regex::Match<'_>> = NUMBER.find_iter(text).collect();
    // Runs of numbers joined by single slashes: a run of two is a pair (`120/80`), a longer run a
    // date (`2026/12/01`).
    let joined =
        |a: &regex::Match<'_>, b: &regex::Match<'_>| a.end() + 1 == b.start() && &text[a.end()..b.start()] == "/";
    let mut run_len = vec![1usize; matches.len()];
    let mut i = 0;
    while i < matches.len() {
        let mut j = i;
        while j + 1 < matches.len() && joined(&matches[j], &matches[j + 1]) {
            j += 1;
        }
        run_len[i..=j].fill(j - i + 1);
        i = j + 1;
    }
    let mut out = Vec::new();
    for (i, m) in matches.iter().enumerate() {
        let before = text[..m.start()].chars().next_back();
        let after = text[m.end()..].chars().next();
        let slash = |c: Option<char>| c == Some('/');
        let lone_slash = (slash(before) || slash(after)) && run_len[i] != 2;
        let code_before = before.is_some_and(|c| c.is_ascii_alphabetic() || matches!(c, '-' | ':' | '：' | '.'));
        let glued_after =
            after.is_some_and(|c| matches!(c, '-' | ':' | '：')) || unit_is_clock_or_ordinal(&text[m.end()..]);
        let date_or_time = after.is_some_and(|c| matches!(c, '年' | '月' | '日' | '号' | '点' | '时' | '分'));
        if lone_slash || code_before || glued_after || date_or_time {
            continue;
        }
        let s = m.as_str();
        let value = if s.contains('.') {
            s.parse::<f64>().ok().and_then(serde_json::Number::from_f64).map(Value::Number)
        } else {
            s.parse::<i64>().ok().map(|n| Value::Number(n.into()))
        };
        if let Some(value) = value {
            out.push(Span { start: m.start(), end: m.end(), value });
        }
    }
    out
}

/// `true` when the letters right after a number make it a clock time (`3pm`), an ordinal date
/// (`1st`) or part of a code (`12A3`).
fn unit_is_clock_or_ordinal(rest: &str) -> bool {
    let letters: String = rest.chars().take_while(char::is_ascii_alphabetic).collect::<String>().to_ascii_lowercase();
    if letters.is_empty() {
        return false;
    }
    let code = rest[letters.len()..].chars().next().is_some_and(|c| c.is_ascii_digit());
    code || matches!(letters.as_str(), "am" | "pm" | "a" | "p" | "st" | "nd" | "rd" | "th" | "h")
}

fn find_phones(text: &str) -> Vec<Span<String>> {
    let digits = |s: &str| s.chars().filter(|c| c.is_ascii_digit() || *c == '+').collect::<String>();
    let mut found: Vec<Span<String>> = CN_MOBILE
        .captures_iter(text)
        .filter_map(|c| c.get(1))
        .map(|m| Span { start: m.start(), end: m.end(), value: digits(m.as_str()) })
        .collect();
    for m in INTL_PHONE.find_iter(text) {
        if !found.iter().any(|f| f.start < m.end() && m.start() < f.end) {
            found.push(Span { start: m.start(), end: m.end(), value: digits(m.as_str()) });
        }
    }
    found.sort_by_key(|f| f.start);
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn today() -> NaiveDate {
        NaiveDate::from_ymd_opt(2026, 11, 23).unwrap()
    }

    fn first_number(text: &str) -> Option<Value> {
        find_numbers(text).into_iter().next().map(|f| f.value)
    }

    fn all(x: &Extractor, text: &str) -> Vec<Value> {
        x.find_all(text, today()).into_iter().map(|f| f.value).collect()
    }

    #[test]
    fn builtin_types_give_wire_formats() {
        let x = |t| Extractor::Builtin(t);
        assert_eq!(x(ValueType::Date).extract("下周一上午10点", today()), Some(serde_json::json!("2026-11-30")));
        assert_eq!(x(ValueType::Time).extract("下午三点半", today()), Some(serde_json::json!("15:30")));
        assert_eq!(
            x(ValueType::Datetime).extract("下周一上午10点", today()),
            Some(serde_json::json!("2026-11-30T10:00"))
        );
        assert_eq!(all(&x(ValueType::Date), "12月1日入住，12月3日离店"), ["2026-12-01", "2026-12-03"]);
    }

    #[test]
    fn numbers_phones_emails() {
        assert_eq!(first_number("把1000美元换成人民币"), Some(serde_json::json!(1000)));
        assert_eq!(first_number("航班CA1234，换 12.5 欧元"), Some(serde_json::json!(12.5)));
        assert_eq!(first_number("12月1日 3点"), None);
        assert_eq!(first_number("at 3pm"), None);
        let n = Extractor::Builtin(ValueType::Number);
        assert_eq!(all(&n, "120/80"), [120, 80]);
        assert_eq!(all(&n, "120，80"), [120, 80]);
        assert_eq!(all(&n, "血压 135/85mmHg"), [135, 85]);
        assert!(all(&n, "2026/12/01").is_empty());
        assert!(all(&n, "2026-12-01 14:30").is_empty());
        let phone = Extractor::Builtin(ValueType::Phone);
        assert_eq!(all(&phone, "电话 138-1234-5678"), ["13812345678"]);
        assert_eq!(all(&phone, "call +44 20 7946 0958"), ["+442079460958"]);
        let email = Extractor::Builtin(ValueType::Email);
        assert_eq!(email.extract("mail me at a.b@example.com", today()), Some(serde_json::json!("a.b@example.com")));
    }

    #[test]
    fn values_pick_the_earliest_and_respect_words() {
        let list = vec!["北京".to_string(), "上海".to_string(), "Beijing".to_string(), "Xi'an".to_string()];
        let x = Extractor::new(&ExtractSpec { values: Some(list), ..Default::default() }, &BTreeMap::new()).unwrap();
        assert_eq!(x.extract("上海和北京", today()), Some(serde_json::json!("上海")));
        assert_eq!(all(&x, "从北京到上海"), ["北京", "上海"]);
        assert_eq!(x.extract("hotel in BEIJING please", today()), Some(serde_json::json!("Beijing")));
        assert_eq!(x.extract("Beijingese", today()), None);
    }

    #[test]
    fn pattern_takes_the_capture_group() {
        let spec = ExtractSpec { pattern: Some(r"([A-Za-z]{2}\d{3,4})".into()), ..Default::default() };
        let x = Extractor::new(&spec, &BTreeMap::new()).unwrap();
        assert_eq!(x.extract("帮我查一下航班CA1234，然后", today()), Some(serde_json::json!("CA1234")));
    }
}
