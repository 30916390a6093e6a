//! Dates and times in free text, Chinese and English, resolved against a given date (the turn's
//! date in `supervisor.timezone`; nothing here reads a clock). Used by the `date`, `time` and
//! `datetime` extractors ([`super::extract`]).
//!
//! - dates: ISO `2026-12-01` / `2026/12/01`; `12月1日`, `2026年12月1日`, `十二月一日`; `Dec 1`;
//!   今天/明天/后天/大后天 (明早, 明晚, 今晚), today/tomorrow/day after tomorrow; weekdays 周五,
//!   星期三, 礼拜天 (the next such day, today included), 这周五/本周五 (this week's), 下周一 /
//!   下个星期三 (next week's, weeks start on Monday), 下下周一, 上周一; `Friday` (the next one),
//!   `this Friday`, `next Monday` (next week's);
//! - times: `14:30`, `下午3:30`; `10点`, `上午10点`, `下午三点半`, `两点一刻`, `十二点`,
//!   `3点15分`; `3pm`, `9:30 am`. A Chinese hour of 1-6 without a part of the day (`两点`) is
//!   afternoon, as appointments are; 上午/凌晨/早上 make it morning. `一点` alone (also "a bit")
//!   counts only with a part of the day, minutes or 钟;
//! - datetimes: ISO `2026-12-01T08:15`, or a time with the date said just before it (or right
//!   after it: `3pm tomorrow`), else the date of the previous datetime in the text, else the
//!   given date.

use std::sync::LazyLock;

use chrono::{Datelike, Duration, NaiveDate, NaiveDateTime, NaiveTime};
use regex::{Captures, Regex};

/// A value found in a text and its byte range.
#[derive(Debug, Clone, PartialEq)]
pub struct Span<T> {
    /// Byte offset of the first byte.
    pub start: usize,
    /// Byte offset after the last byte.
    pub end: usize,
    /// The value.
    pub value: T,
}

fn re(p: &str) -> Regex {
    Regex::new(p).expect("static regex")
}

// Word boundaries are ASCII ones, `(?-u:\b)`: a Unicode `\b` makes the regex engine's fast
// automaton give up on any Chinese text and search with a slower one, on every turn; and for
// these English words an ASCII boundary is the right one ("明天tomorrow" holds "tomorrow").

/// A number of 1-3 Arabic digits or Chinese numerals (`十二`, `两`, `二十三`).
const NUM: &str = "[0-9零〇一二两三四五六七八九十]{1,3}";
/// A part of the day before a clock time.
const DAYPART: &str = "(凌晨|清晨|早上|早晨|上午|中午|下午|傍晚|晚上|夜里|半夜|早|晚)?";

static ISO_DATE: LazyLock<Regex> = LazyLock::new(|| re(r"(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})"));
static CN_DATE: LazyLock<Regex> = LazyLock::new(|| re(&format!(r"(?:(\d{{4}})年)?({NUM})月({NUM})[日号]")));
/// A day of the month alone (5号, 二十号, 下个月3号, the 5th).
static DAY_ONLY: LazyLock<Regex> = LazyLock::new(|| {
    re(&format!(r"(?i)(下个?月|这个?月|本月)?({NUM})[日号]|(?-u:\b)(?:on\s+)?the\s+(\d{{1,2}})(?:st|nd|rd|th)(?-u:\b)"))
});
/// Characters after 号 that make it a number of something else (3号线, 5号楼, T2号航站楼).
const NOT_A_DAY_AFTER: &str = "楼线门房厅位台座桌码机院室栋航窗车床柜口";
static EN_MONTH_DAY: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?i)(?-u:\b)(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+(\d{1,2})(?:st|nd|rd|th)?(?-u:\b)")
});
static RELATIVE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)大后天|后天|明天|明日|明早|明晚|今天|今日|今早|今晚|day after tomorrow|(?-u:\b)tomorrow(?-u:\b)|(?-u:\b)today(?-u:\b)|(?-u:\b)tonight(?-u:\b)",
    )
});
static CN_WEEKDAY: LazyLock<Regex> =
    LazyLock::new(|| re(r"(下下个?|下个?|上个?|本|这个?)?(?:周|星期|礼拜)([一二三四五六日天1-7])"));
static EN_WEEKDAY: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?i)(?-u:\b)(?:(next|this|coming)\s+)?(monday|tuesday|wednesday|thursday|friday|saturday|sunday)(?-u:\b)")
});
static CLOCK: LazyLock<Regex> = LazyLock::new(|| re(&format!(r"{DAYPART}(\d{{1,2}})[:：]([0-5]\d)")));
static CN_CLOCK: LazyLock<Regex> =
    LazyLock::new(|| re(&format!(r"{DAYPART}({NUM})[点时](?:(半)|([一三])刻|({NUM})分|(\d{{2}})|(钟|整))?")));
static EN_CLOCK: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?i)(?-u:\b)(\d{1,2})(?::([0-5]\d))?\s*([ap])\.?m(?-u:\b)\.?"));
static ISO_DATETIME: LazyLock<Regex> = LazyLock::new(|| re(r"(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2})"));

/// A number written in Arabic digits or Chinese numerals, 0-99 (`十二` = 12, `二十` = 20,
/// `两` = 2, `〇五` = 5).
pub fn cn_number(s: &str) -> Option<u32> {
    if let Ok(n) = s.parse() {
        return Some(n);
    }
    let digit = |c: char| match c {
        '零' | '〇' => Some(0),
        '一' => Some(1),
        '二' | '两' => Some(2),
        '三' => Some(3),
        '四' => Some(4),
        '五' => Some(5),
        '六' => Some(6),
        '七' => Some(7),
        '八' => Some(8),
        '九' => Some(9),
        _ => c.to_digit(10),
    };
    match s.split_once('十') {
        Some((tens, ones)) => {
            let tens = if tens.is_empty() { 1 } else { tens.chars().map(digit).sum::<Option<u32>>()? };
            let ones = if ones.is_empty() { 0 } else { ones.chars().map(digit).sum::<Option<u32>>()? };
            (tens < 10 && ones < 10).then_some(tens * 10 + ones)
        }
        None => s.chars().try_fold(0u32, |acc, c| Some(acc * 10 + digit(c)?)),
    }
}

fn group_num(c: &Captures<'_>, i: usize) -> Option<u32> {
    c.get(i).and_then(|m| cn_number(m.as_str()))
}

fn whole(c: &Captures<'_>) -> (usize, usize) {
    c.get(0).map_or((0, 0), |m| (m.start(), m.end()))
}

/// Keeps the earliest, then longest, of overlapping spans; sorted by start.
fn non_overlapping<T>(mut found: Vec<Span<T>>) -> Vec<Span<T>> {
    found.sort_by_key(|s| (s.start, std::cmp::Reverse(s.end)));
    let mut out: Vec<Span<T>> = Vec::with_capacity(found.len());
    for s in found {
        if out.last().is_none_or(|last| s.start >= last.end) {
            out.push(s);
        }
    }
    out
}

/// Month and day without a year: this year's, or next year's when that day has passed.
fn upcoming_month_day(today: NaiveDate, m: u32, d: u32) -> Option<NaiveDate> {
    let date = NaiveDate::from_ymd_opt(today.year(), m, d)?;
    if date < today {
        return NaiveDate::from_ymd_opt(today.year() + 1, m, d).or(Some(date));
    }
    Some(date)
}

/// Day `d` of the month `months_ahead` months from this one, or with `None` the next such day,
/// today included (the 5th after the 5th of this month is next month's).
fn month_day(today: NaiveDate, d: u32, months_ahead: Option<u32>) -> Option<NaiveDate> {
    let first = today.with_day(1)?;
    let in_month = |k: u32| first.checked_add_months(chrono::Months::new(k)).and_then(|m| m.with_day(d));
    match months_ahead {
        Some(k) => in_month(k),
        None => match in_month(0) {
            Some(date) if date >= today => Some(date),
            _ => in_month(1),
        },
    }
}

/// Every date mentioned in `text`, in order, without overlaps.
pub fn dates(text: &str, today: NaiveDate) -> Vec<Span<NaiveDate>> {
    let mut found = Vec::new();
    let mut push = |(start, end): (usize, usize), date: Option<NaiveDate>| {
        if let Some(value) = date {
            found.push(Span { start, end, value });
        }
    };
    for c in ISO_DATE.captures_iter(text) {
        let (y, m, d) = (group_num(&c, 1), group_num(&c, 2), group_num(&c, 3));
        push(whole(&c), y.zip(m).zip(d).and_then(|((y, m), d)| NaiveDate::from_ymd_opt(y as i32, m, d)));
    }
    for c in CN_DATE.captures_iter(text) {
        let (m, d) = (group_num(&c, 2).unwrap_or(0), group_num(&c, 3).unwrap_or(0));
        let date = match group_num(&c, 1) {
            Some(y) => NaiveDate::from_ymd_opt(y as i32, m, d),
            None => upcoming_month_day(today, m, d),
        };
        push(whole(&c), date);
    }
    for c in EN_MONTH_DAY.captures_iter(text) {
        let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];
        let m = months.iter().position(|m| c[1].eq_ignore_ascii_case(m)).map_or(12, |i| i as u32 + 1);
        push(whole(&c), upcoming_month_day(today, m, group_num(&c, 2).unwrap_or(0)));
    }
    for c in DAY_ONLY.captures_iter(text) {
        let (start, end) = whole(&c);
        if text[end..].chars().next().is_some_and(|n| NOT_A_DAY_AFTER.contains(n)) {
            continue;
        }
        let day = group_num(&c, 2).or_else(|| group_num(&c, 3)).unwrap_or(0);
        let months_ahead = match c.get(1).map(|m| m.as_str()) {
            Some(p) if p.starts_with('下') => Some(1),
            Some(_) => Some(0),
            None => None,
        };
        push((start, end), month_day(today, day, months_ahead));
    }
    for m in RELATIVE.find_iter(text) {
        let days = match m.as_str().to_ascii_lowercase().as_str() {
            "大后天" => 3,
            "后天" | "day after tomorrow" => 2,
            "明天" | "明日" | "明早" | "明晚" | "tomorrow" => 1,
            _ => 0,
        };
        push((m.start(), m.end()), Some(today + Duration::days(days)));
    }
    for c in CN_WEEKDAY.captures_iter(text) {
        let day = match &c[2] {
            "日" | "天" => 6,
            d => cn_number(d).map_or(0, |n| i64::from((n + 6) % 7)),
        };
        let week = match c.get(1).map(|m| m.as_str()) {
            None => None,
            Some(p) if p.starts_with("下下") => Some(2),
            Some(p) if p.starts_with('下') => Some(1),
            Some(p) if p.starts_with('上') => Some(-1),
            Some(_) => Some(0),
        };
        push(whole(&c), Some(weekday(today, day, week)));
    }
    for c in EN_WEEKDAY.captures_iter(text) {
        let names = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"];
        let day = names.iter().position(|n| c[2].eq_ignore_ascii_case(n)).unwrap_or(0) as i64;
        let week = match c.get(1).map(|m| m.as_str().to_ascii_lowercase()) {
            Some(p) if p == "next" => Some(1),
            Some(p) if p == "this" => Some(0),
            _ => None,
        };
        push(whole(&c), Some(weekday(today, day, week)));
    }
    non_overlapping(found)
}

/// Weekday `day` (0 = Monday) of the week `week` weeks from this one (Monday-based), or with
/// `None` the next such day, today included.
fn weekday(today: NaiveDate, day: i64, week: Option<i64>) -> NaiveDate {
    let now = i64::from(today.weekday().num_days_from_monday());
    match week {
        Some(w) => today + Duration::days(w * 7 + day - now),
        None => today + Duration::days((day - now).rem_euclid(7)),
    }
}

/// The 24-hour clock of `hour` said with a part of the day (or none).
fn day_hour(daypart: Option<&str>, hour: u32, chinese: bool) -> u32 {
    match daypart {
        Some("下午" | "傍晚" | "晚上" | "夜里" | "晚") if hour < 12 => hour + 12,
        Some("中午") if hour < 6 => hour + 12,
        Some("晚上" | "夜里" | "半夜" | "凌晨") if hour == 12 => 0,
        // A bare Chinese 1-6 o'clock is an afternoon appointment (两点 = 14:00).
        None if chinese && (1..=6).contains(&hour) => hour + 12,
        _ => hour,
    }
}

/// Every time of day mentioned in `text` as (hour, minute), in order, without overlaps.
pub fn times(text: &str) -> Vec<Span<NaiveTime>> {
    let mut found = Vec::new();
    let mut push = |(start, end): (usize, usize), h: u32, m: u32| {
        if let Some(value) = NaiveTime::from_hms_opt(h, m, 0) {
            found.push(Span { start, end, value });
        }
    };
    for c in CLOCK.captures_iter(text) {
        let hour = c.get(2).map_or(0, |m| m.start());
        if text[..hour].chars().next_back().is_some_and(|ch| ch.is_ascii_digit()) {
            continue;
        }
        let daypart = c.get(1).map(|m| m.as_str());
        let h = group_num(&c, 2).unwrap_or(99);
        push(whole(&c), day_hour(daypart, h, false), group_num(&c, 3).unwrap_or(0));
    }
    for c in CN_CLOCK.captures_iter(text) {
        let daypart = c.get(1).map(|m| m.as_str());
        let raw_hour = &c[2];
        let minutes = if c.get(3).is_some() {
            Some(30)
        } else if let Some(q) = c.get(4) {
            Some(if q.as_str() == "一" { 15 } else { 45 })
        } else {
            group_num(&c, 5).or_else(|| group_num(&c, 6))
        };
        // 一点 alone also means "a bit" (便宜一点).
        if raw_hour == "一" && daypart.is_none() && minutes.is_none() && c.get(7).is_none() {
            continue;
        }
        let Some(h) = cn_number(raw_hour) else { continue };
        push(whole(&c), day_hour(daypart, h, true), minutes.unwrap_or(0));
    }
    for c in EN_CLOCK.captures_iter(text) {
        let h = group_num(&c, 1).unwrap_or(99);
        if !(1..=12).contains(&h) {
            continue;
        }
        let pm = c[3].eq_ignore_ascii_case("p");
        let h = match (pm, h) {
            (true, 12) => 12,
            (true, h) => h + 12,
            (false, 12) => 0,
            (false, h) => h,
        };
        push(whole(&c), h, group_num(&c, 2).unwrap_or(0));
    }
    non_overlapping(found)
}

/// `true` when only whitespace lies between byte offsets `a` and `b` of `text`.
fn adjacent(text: &str, a: usize, b: usize) -> bool {
    let filler = |c: char| c.is_whitespace() || c == ',' || c == '，';
    a <= b
        && text.get(a..b).is_some_and(|gap| matches!(gap.trim_matches(filler).to_ascii_lowercase().as_str(), "" | "at"))
}

/// Every date with a time mentioned in `text`, in order (see the module docs for how a time
/// finds its date).
pub fn datetimes(text: &str, today: NaiveDate) -> Vec<Span<NaiveDateTime>> {
    let mut found: Vec<Span<NaiveDateTime>> = Vec::new();
    for c in ISO_DATETIME.captures_iter(text) {
        let dt = NaiveDateTime::parse_from_str(&format!("{}T{}", &c[1], &c[2]), "%Y-%m-%dT%H:%M");
        if let Ok(value) = dt {
            let (start, end) = whole(&c);
            found.push(Span { start, end, value });
        }
    }
    let taken = |s: usize, e: usize, found: &[Span<NaiveDateTime>]| found.iter().any(|f| s < f.end && f.start < e);
    let dates: Vec<Span<NaiveDate>> =
        dates(text, today).into_iter().filter(|d| !taken(d.start, d.end, &found)).collect();
    let times: Vec<Span<NaiveTime>> = times(text).into_iter().filter(|t| !taken(t.start, t.end, &found)).collect();
    let mut previous: Option<NaiveDate> = None;
    let mut after_previous = 0;
    for t in &times {
        // The date said last before this time (since the previous time), or right after it.
        let before = dates.iter().rev().find(|d| d.start >= after_previous && d.start < t.start && d.end <= t.end);
        let after = || dates.iter().find(|d| d.start >= t.end && adjacent(text, t.end, d.start));
        let (date, start, end) = match (before, after()) {
            (Some(d), _) => {
                (d.value, if adjacent(text, d.end, t.start) || d.end > t.start { d.start } else { t.start }, t.end)
            }
            (None, Some(d)) => (d.value, t.start, d.end),
            (None, None) => (previous.unwrap_or(today), t.start, t.end),
        };
        previous = Some(date);
        after_previous = t.end;
        found.push(Span { start, end, value: date.and_time(t.value) });
    }
    non_overlapping(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A Monday.
    fn today() -> NaiveDate {
        NaiveDate::from_ymd_opt(2026, 11, 23).unwrap()
    }

    fn date(t: &str) -> Option<String> {
        dates(t, today()).first().map(|s| s.value.to_string())
    }

    fn time(t: &str) -> Option<String> {
        times(t).first().map(|s| s.value.format("%H:%M").to_string())
    }

    fn datetime(t: &str) -> Option<String> {
        datetimes(t, today()).first().map(|s| s.value.format("%Y-%m-%dT%H:%M").to_string())
    }

    #[test]
    fn chinese_numbers() {
        let cases =
            [("十二", 12), ("十", 10), ("二十", 20), ("二十三", 23), ("两", 2), ("三", 3), ("〇五", 5), ("7", 7)];
        for (s, n) in cases {
            assert_eq!(cn_number(s), Some(n), "{s}");
        }
        assert_eq!(cn_number("十十"), None);
    }

    #[test]
    fn relative_and_chinese_dates() {
        let cases = [
            ("明天入住", "2026-11-24"),
            ("后天晚上", "2026-11-25"),
            ("大后天", "2026-11-26"),
            ("明晚", "2026-11-24"),
            ("tomorrow", "2026-11-24"),
            ("the day after tomorrow", "2026-11-25"),
            ("12月1日", "2026-12-01"),
            ("十二月一日", "2026-12-01"),
            ("2027年一月五号", "2027-01-05"),
            ("1月5日", "2027-01-05"),
            ("2020-01-01", "2020-01-01"),
            ("on Dec 3rd", "2026-12-03"),
            // Today is Monday 2026-11-23.
            ("周五", "2026-11-27"),
            ("周一", "2026-11-23"),
            ("星期天", "2026-11-29"),
            ("这周三", "2026-11-25"),
            ("下周一", "2026-11-30"),
            ("下周三", "2026-12-02"),
            ("下个星期五", "2026-12-04"),
            ("下下周一", "2026-12-07"),
            ("上周五", "2026-11-20"),
            ("next Monday", "2026-11-30"),
            ("friday", "2026-11-27"),
            ("this Wednesday", "2026-11-25"),
            // A day of the month alone: this month's, or next month's once passed.
            ("25号入住", "2026-11-25"),
            ("5号", "2026-12-05"),
            ("二十三号", "2026-11-23"),
            ("下个月3号", "2026-12-03"),
            ("本月30日", "2026-11-30"),
            ("on the 5th", "2026-12-05"),
        ];
        for (text, want) in cases {
            assert_eq!(date(text).as_deref(), Some(want), "{text}");
        }
        assert_eq!(date("2026-02-30"), None);
        assert_eq!(date("航班CA1234"), None);
        assert_eq!(date("下周"), None);
        for not_a_day in ["坐3号线", "5号楼", "2号航站楼", "本月31号"] {
            assert_eq!(date(not_a_day), None, "{not_a_day}");
        }
    }

    #[test]
    fn chinese_and_english_times() {
        let cases = [
            ("下午三点半", "15:30"),
            ("两点", "14:00"),
            ("上午10点", "10:00"),
            ("10点", "10:00"),
            ("早上7点一刻", "07:15"),
            ("晚上八点", "20:00"),
            ("十二点", "12:00"),
            ("凌晨2点", "02:00"),
            ("3点15分", "15:15"),
            ("下午3:30", "15:30"),
            ("14:05落地", "14:05"),
            ("3pm", "15:00"),
            ("9:30 am", "09:30"),
            ("12am", "00:00"),
            ("三点钟", "15:00"),
        ];
        for (text, want) in cases {
            assert_eq!(time(text).as_deref(), Some(want), "{text}");
        }
        assert_eq!(time("便宜一点的酒店"), None);
        assert_eq!(time("3小时"), None);
    }

    #[test]
    fn datetimes_take_their_date() {
        let cases = [
            ("下周一上午10点", "2026-11-30T10:00"),
            ("后天晚上8点", "2026-11-25T20:00"),
            ("明天14:30到", "2026-11-24T14:30"),
            ("3pm tomorrow", "2026-11-24T15:00"),
            ("两点", "2026-11-23T14:00"),
            ("十二月一日下午两点", "2026-12-01T14:00"),
            ("2026-12-01T08:15", "2026-12-01T08:15"),
            ("今晚8点", "2026-11-23T20:00"),
            // The forms the supervisor's own texts suggest.
            ("12月1日 14:30", "2026-12-01T14:30"),
            ("Dec 1, 14:30", "2026-12-01T14:30"),
            ("Dec 1 at 2pm", "2026-12-01T14:00"),
        ];
        for (text, want) in cases {
            assert_eq!(datetime(text).as_deref(), Some(want), "{text}");
        }
        assert_eq!(datetime("2026-12-01"), None);
        assert_eq!(datetime("后天晚上"), None, "no hour, no guess");
        let two: Vec<String> = datetimes("周五上午10点出发，下周三下午3点回来", today())
            .iter()
            .map(|s| s.value.format("%Y-%m-%dT%H:%M").to_string())
            .collect();
        assert_eq!(two, ["2026-11-27T10:00", "2026-12-02T15:00"]);
    }
}
