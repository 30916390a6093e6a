//! Semantic-key extraction from free text for the rule planner (docs/planning.md).
//!
//! An [`Extractor`] is compiled once per registry load from a key's `extract:` block and applied
//! to the user's text per turn. Built-in types: `date` (ISO `YYYY-MM-DD`; 今天/明天/后天/大后天,
//! today/tomorrow/day after tomorrow, `12月1日`, `2026年12月1日`, `2026/12/01`, `Dec 1`),
//! `time` (`HH:MM`; `14:30`, `下午3点半`, `3pm`), `datetime` (`YYYY-MM-DDTHH:MM`, date and time
//! found together, or a time alone meaning today), `number`, `phone`, `email`. `pattern` is a
//! regex whose single capture group is the value; `values` / `values_from` find the earliest
//! listed value (substring for CJK, whole word for Latin scripts). The date is always passed in:
//! extraction reads no clock.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use chrono::{Datelike, Duration, NaiveDate};
use regex::Regex;
use serde_json::Value;

use crate::config::{ExtractSpec, ValueType};

use super::terms::{find_term, Term};

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

    /// The value found in `text`, if any. `today` resolves relative dates.
    pub fn extract(&self, text: &str, today: NaiveDate) -> Option<Value> {
        match self {
            Self::Builtin(ValueType::Date) => find_date(text, today).map(|(_, d)| Value::String(d.to_string())),
            Self::Builtin(ValueType::Time) => find_time(text).map(|(_, t)| Value::String(t)),
            Self::Builtin(ValueType::Datetime) => find_datetime(text, today).map(Value::String),
            Self::Builtin(ValueType::Number) => find_number(text),
            Self::Builtin(ValueType::Phone) => find_phone(text).map(Value::String),
            Self::Builtin(ValueType::Email) => EMAIL.find(text).map(|m| Value::String(m.as_str().to_string())),
            Self::Pattern(re) => {
                re.captures(text).and_then(|c| c.get(1)).map(|m| Value::String(m.as_str().to_string()))
            }
            Self::Values(values) => {
                let lower = text.to_lowercase();
                values
                    .iter()
                    .filter_map(|(canon, term)| {
                        find_term(&lower, term).map(|pos| (pos, std::cmp::Reverse(term.len()), canon))
                    })
                    .min()
                    .map(|(_, _, canon)| Value::String(canon.clone()))
            }
        }
    }
}

fn re(p: &str) -> Regex {
    Regex::new(p).expect("static regex")
}

static ISO_DATE: LazyLock<Regex> = LazyLock::new(|| re(r"(\d{4})[-/.年](\d{1,2})[-/.月](\d{1,2})[日号]?"));
static CN_MONTH_DAY: LazyLock<Regex> = LazyLock::new(|| re(r"(\d{1,2})月(\d{1,2})[日号]"));
static EN_MONTH_DAY: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?i)\b(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+(\d{1,2})(?:st|nd|rd|th)?\b")
});
static RELATIVE: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?i)大后天|后天|明天|明日|今天|今日|day after tomorrow|tomorrow|today|tonight"));
static CLOCK: LazyLock<Regex> = LazyLock::new(|| re(r"(?:^|[^\d])([01]?\d|2[0-3])[:：]([0-5]\d)"));
static CN_CLOCK: LazyLock<Regex> =
    LazyLock::new(|| re(r"(凌晨|早上|上午|中午|下午|傍晚|晚上)?(\d{1,2})点(?:(半)|(\d{1,2})分?)?"));
static EN_CLOCK: LazyLock<Regex> = LazyLock::new(|| re(r"(?i)\b(\d{1,2})(?::([0-5]\d))?\s*(am|pm)\b"));
static NUMBER: LazyLock<Regex> = LazyLock::new(|| re(r"\d+(?:\.\d+)?"));
static CN_MOBILE: LazyLock<Regex> = LazyLock::new(|| re(r"(?:\+?86[- ]?)?(1[3-9]\d[- ]?\d{4}[- ]?\d{4})"));
static INTL_PHONE: LazyLock<Regex> = LazyLock::new(|| re(r"\+\d[\d -]{6,16}\d"));
static EMAIL: LazyLock<Regex> = LazyLock::new(|| re(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}"));

/// The first date mentioned in `text` and its byte offset.
pub fn find_date(text: &str, today: NaiveDate) -> Option<(usize, NaiveDate)> {
    let mut found: Vec<(usize, NaiveDate)> = Vec::new();
    for c in ISO_DATE.captures_iter(text) {
        let (y, m, d) = (num(&c, 1), num(&c, 2), num(&c, 3));
        if let Some(date) = NaiveDate::from_ymd_opt(y as i32, m, d) {
            found.push((c.get(0).map_or(0, |m| m.start()), date));
        }
    }
    let mut month_day = |pos: usize, m: u32, d: u32| {
        if let Some(mut date) = NaiveDate::from_ymd_opt(today.year(), m, d) {
            if date < today {
                date = NaiveDate::from_ymd_opt(today.year() + 1, m, d).unwrap_or(date);
            }
            found.push((pos, date));
        }
    };
    for c in CN_MONTH_DAY.captures_iter(text) {
        let pos = c.get(0).map_or(0, |m| m.start());
        // Skip the month-day tail of a full `2026年12月1日` already taken above.
        if pos > 0 && text[..pos].ends_with('年') {
            continue;
        }
        month_day(pos, num(&c, 1), num(&c, 2));
    }
    for c in EN_MONTH_DAY.captures_iter(text) {
        let month = match c[1].to_ascii_lowercase().as_str() {
            "jan" => 1,
            "feb" => 2,
            "mar" => 3,
            "apr" => 4,
            "may" => 5,
            "jun" => 6,
            "jul" => 7,
            "aug" => 8,
            "sep" => 9,
            "oct" => 10,
            "nov" => 11,
            _ => 12,
        };
        month_day(c.get(0).map_or(0, |m| m.start()), month, num(&c, 2));
    }
    for m in RELATIVE.find_iter(text) {
        let days = match m.as_str().to_ascii_lowercase().as_str() {
            "大后天" => 3,
            "后天" | "day after tomorrow" => 2,
            "明天" | "明日" | "tomorrow" => 1,
            _ => 0,
        };
        found.push((m.start(), today + Duration::days(days)));
    }
    found.into_iter().min_by_key(|(pos, _)| *pos)
}

/// The first time of day mentioned in `text` as `HH:MM`, with its byte offset.
pub fn find_time(text: &str) -> Option<(usize, String)> {
    let mut found: Vec<(usize, u32, u32)> = Vec::new();
    for c in CLOCK.captures_iter(text) {
        // Not the `MM-DD` of a date: `12-01` has no colon, so only real clocks match here.
        found.push((c.get(1).map_or(0, |m| m.start()), num(&c, 1), num(&c, 2)));
    }
    for c in CN_CLOCK.captures_iter(text) {
        let mut h = num(&c, 2);
        let min = if c.get(3).is_some() { 30 } else { c.get(4).map_or(0, |m| m.as_str().parse().unwrap_or(0)) };
        if matches!(c.get(1).map(|m| m.as_str()), Some("下午" | "傍晚" | "晚上")) && h < 12 {
            h += 12;
        }
        if h < 24 && min < 60 {
            found.push((c.get(0).map_or(0, |m| m.start()), h, min));
        }
    }
    for c in EN_CLOCK.captures_iter(text) {
        let mut h = num(&c, 1);
        let min = c.get(2).map_or(0, |m| m.as_str().parse().unwrap_or(0));
        let pm = c[3].eq_ignore_ascii_case("pm");
        if (1..=12).contains(&h) {
            h = match (pm, h) {
                (true, 12) => 12,
                (true, h) => h + 12,
                (false, 12) => 0,
                (false, h) => h,
            };
            found.push((c.get(0).map_or(0, |m| m.start()), h, min));
        }
    }
    found.into_iter().min_by_key(|(pos, _, _)| *pos).map(|(pos, h, m)| (pos, format!("{h:02}:{m:02}")))
}

/// `YYYY-MM-DDTHH:MM` from an ISO datetime, a date plus a time, or a time alone (today).
pub fn find_datetime(text: &str, today: NaiveDate) -> Option<String> {
    static ISO_DT: LazyLock<Regex> = LazyLock::new(|| re(r"(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2})"));
    if let Some(c) = ISO_DT.captures(text) {
        if NaiveDate::parse_from_str(&c[1], "%Y-%m-%d").is_ok() {
            return Some(format!("{}T{}", &c[1], &c[2]));
        }
    }
    let (_, time) = find_time(text)?;
    let date = find_date(text, today).map_or(today, |(_, d)| d);
    Some(format!("{date}T{time}"))
}

/// The first standalone number (not part of a code like `CA1234`, a date or a clock time).
fn find_number(text: &str) -> Option<Value> {
    let bytes = text.as_bytes();
    for m in NUMBER.find_iter(text) {
        let before = text[..m.start()].chars().next_back();
        let after = text[m.end()..].chars().next();
        let glued = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphabetic() || matches!(c, '-' | '/' | ':' | '：'));
        let date_or_time = after.is_some_and(|c| matches!(c, '年' | '月' | '日' | '号' | '点'));
        if glued(before) || glued(after) || date_or_time || (m.start() > 0 && bytes[m.start() - 1] == b'.') {
            continue;
        }
        let s = m.as_str();
        return if s.contains('.') {
            s.parse::<f64>().ok().and_then(serde_json::Number::from_f64).map(Value::Number)
        } else {
            s.parse::<i64>().ok().map(|n| Value::Number(n.into()))
        };
    }
    None
}

fn find_phone(text: &str) -> Option<String> {
    let digits = |s: &str| s.chars().filter(|c| c.is_ascii_digit() || *c == '+').collect::<String>();
    if let Some(c) = CN_MOBILE.captures(text) {
        return c.get(1).map(|m| digits(m.as_str()));
    }
    INTL_PHONE.find(text).map(|m| digits(m.as_str()))
}

fn num(c: &regex::Captures<'_>, i: usize) -> u32 {
    c.get(i).and_then(|m| m.as_str().parse().ok()).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn today() -> NaiveDate {
        NaiveDate::from_ymd_opt(2026, 11, 23).unwrap()
    }

    #[test]
    fn dates() {
        let d = |t: &str| find_date(t, today()).map(|(_, d)| d.to_string());
        assert_eq!(d("明天入住").as_deref(), Some("2026-11-24"));
        assert_eq!(d("后天").as_deref(), Some("2026-11-25"));
        assert_eq!(d("大后天").as_deref(), Some("2026-11-26"));
        assert_eq!(d("check in tomorrow").as_deref(), Some("2026-11-24"));
        assert_eq!(d("the day after tomorrow").as_deref(), Some("2026-11-25"));
        assert_eq!(d("today").as_deref(), Some("2026-11-23"));
        assert_eq!(d("北京，2026-12-01 入住").as_deref(), Some("2026-12-01"));
        assert_eq!(d("2026年12月1日").as_deref(), Some("2026-12-01"));
        assert_eq!(d("12月1号").as_deref(), Some("2026-12-01"));
        assert_eq!(d("1月5日").as_deref(), Some("2027-01-05"));
        assert_eq!(d("on Dec 3rd").as_deref(), Some("2026-12-03"));
        assert_eq!(d("2026-02-30"), None);
        assert_eq!(d("航班CA1234"), None);
    }

    #[test]
    fn times_and_datetimes() {
        assert_eq!(find_time("下午3点半到").map(|t| t.1).as_deref(), Some("15:30"));
        assert_eq!(find_time("at 9pm").map(|t| t.1).as_deref(), Some("21:00"));
        assert_eq!(find_time("14:05落地").map(|t| t.1).as_deref(), Some("14:05"));
        assert_eq!(find_datetime("明天14:30到", today()).as_deref(), Some("2026-11-24T14:30"));
        assert_eq!(find_datetime("2026-12-01T08:15", today()).as_deref(), Some("2026-12-01T08:15"));
        assert_eq!(find_datetime("2026-12-01", today()), None);
    }

    #[test]
    fn numbers_phones_emails() {
        assert_eq!(find_number("把1000美元换成人民币"), Some(serde_json::json!(1000)));
        assert_eq!(find_number("航班CA1234，换 12.5 欧元"), Some(serde_json::json!(12.5)));
        assert_eq!(find_number("12月1日 3点"), None);
        assert_eq!(find_phone("电话 138-1234-5678").as_deref(), Some("13812345678"));
        assert_eq!(find_phone("call +44 20 7946 0958").as_deref(), Some("+442079460958"));
        let email = Extractor::Builtin(ValueType::Email);
        assert_eq!(email.extract("mail me at a.b@example.com", today()), Some(serde_json::json!("a.b@example.com")));
    }

    #[test]
    fn values_pick_the_earliest_and_respect_words() {
        let list = vec!["北京".to_string(), "上海".to_string(), "Beijing".to_string(), "Xi'an".to_string()];
        let x = Extractor::new(&ExtractSpec { values: Some(list), ..Default::default() }, &BTreeMap::new()).unwrap();
        assert_eq!(x.extract("上海和北京", today()), Some(serde_json::json!("上海")));
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
