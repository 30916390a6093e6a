//! Which value of a text goes to which semantic key of one card (docs/planning.md).
//!
//! Keys whose extractors find the same kind of value at overlapping places compete (a systolic
//! and a diastolic `number`, a `check_in` and a `check_out` `date`, an origin and a destination
//! city). Within such a group each value goes to at most one key and each key gets at most one
//! value:
//!
//! 1. **by label**: a value right after one of a key's labels (its name, its description, its
//!    configured synonyms; `收缩压135`, `diastolic 85`, `从北京`) goes to that key, or a value
//!    right before one (`12月1日入住`). Which way a text labels is decided by which links more
//!    values (labels first on a tie: in `北京到上海` the `到` belongs to 上海); the other way
//!    then links what is left;
//! 2. **by position**: the values left go to the keys left in the order the keys are asked
//!    (config order) — one value to the first key, two to the first two — unless more values than
//!    keys are left: that is ambiguous and the keys stay unfilled (the user is asked).
//!
//! A key that already has a value (`open: false`) takes part only to claim the values labelled
//! with its name, so a correction of it is not taken for another key. A key competing with no
//! other gets the first value found, as before.

use chrono::NaiveDate;
use serde_json::Value;

use super::extract::{lower_in_place, Extractor, Found};
use super::terms::{find_term_all, Term};

/// One key of a card, for [`assign`].
#[derive(Debug, Clone, Copy)]
pub struct KeyRule<'a> {
    /// Its extractor (`None`: the text gives it nothing).
    pub extractor: Option<&'a Extractor>,
    /// Words that name it (prepared terms).
    pub labels: &'a [Term],
    /// `true` when it still needs a value.
    pub open: bool,
}

/// Words between a label and its value that do not break the link (`收缩压是135`, `systolic
/// of 135`, `check-in on Dec 1`).
const CONNECTORS: [&str; 12] = ["是", "为", "在", "约", "大概", "is", "was", "of", "at", "on", "about", "around"];

/// The value for each key (`None` for keys not open or given nothing), in the keys' order.
pub fn assign(keys: &[KeyRule<'_>], text: &str, today: NaiveDate) -> Vec<Option<Value>> {
    let found: Vec<Vec<Found>> =
        keys.iter().map(|k| k.extractor.map(|x| x.find_all(text, today)).unwrap_or_default()).collect();
    let mut out: Vec<Option<Value>> = vec![None; keys.len()];
    for group in groups(keys, &found) {
        if let [k] = group[..] {
            if keys[k].open {
                out[k] = found[k].first().map(|f| f.value.clone());
            }
            continue;
        }
        for (k, value) in assign_group(keys, &found, &group, text) {
            out[k] = Some(value);
        }
    }
    out
}

/// Keys with values, grouped: same kind of extractor and overlapping places, in key order.
fn groups(keys: &[KeyRule<'_>], found: &[Vec<Found>]) -> Vec<Vec<usize>> {
    let overlap = |a: &[Found], b: &[Found]| a.iter().any(|x| b.iter().any(|y| x.start < y.end && y.start < x.end));
    let kind = |k: usize| keys[k].extractor.map(Extractor::kind);
    let mut group_of: Vec<Option<usize>> = vec![None; keys.len()];
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for k in (0..keys.len()).filter(|&k| !found[k].is_empty()) {
        let joined = (0..k).find(|&j| group_of[j].is_some() && kind(j) == kind(k) && overlap(&found[j], &found[k]));
        match joined.and_then(|j| group_of[j]) {
            Some(g) => {
                groups[g].push(k);
                group_of[k] = Some(g);
            }
            None => {
                group_of[k] = Some(groups.len());
                groups.push(vec![k]);
            }
        }
    }
    groups
}

/// A place in the text where a group's keys found a value.
#[derive(Debug, Clone)]
struct Place {
    start: usize,
    end: usize,
}

/// Who took which place and label so far.
#[derive(Debug, Clone)]
struct Bindings {
    /// Per place: the key that took it.
    taken_by: Vec<Option<usize>>,
    /// Per label occurrence: already linked to a value.
    used: Vec<bool>,
    /// Per key: has a value.
    has_value: Vec<bool>,
}

/// The text of one group's assignment.
struct Scene<'a> {
    lower: &'a str,
    places: Vec<Place>,
    labels: Vec<LabelPlace>,
    found: &'a [Vec<Found>],
}

impl Scene<'_> {
    /// Links labels to the free places next to them: labels before values (`收缩压135`) or,
    /// with `before == false`, after them (`12月1日入住`). Returns how many places it took.
    fn label_pass(&self, b: &mut Bindings, before: bool) -> usize {
        let mut count = 0;
        for (p, place) in self.places.iter().enumerate() {
            if b.taken_by[p].is_some() {
                continue;
            }
            let near = self.labels.iter().enumerate().filter(|(i, _)| !b.used[*i]).filter(|(_, l)| {
                if before {
                    l.end <= place.start && connects(&self.lower[l.end..place.start])
                } else {
                    l.start >= place.end && self.lower[place.end..l.start].trim().is_empty()
                }
            });
            let nearest = if before { near.max_by_key(|(_, l)| l.end) } else { near.min_by_key(|(_, l)| l.start) };
            let Some((i, l)) = nearest else { continue };
            if !b.has_value[l.key] && self.found[l.key].iter().any(|f| f.start == place.start) {
                b.taken_by[p] = Some(l.key);
                b.has_value[l.key] = true;
                b.used[i] = true;
                count += 1;
            }
        }
        count
    }
}

/// Assigns a group's values: by label, then by position. Returns (key, value) for open keys.
fn assign_group(keys: &[KeyRule<'_>], found: &[Vec<Found>], group: &[usize], text: &str) -> Vec<(usize, Value)> {
    let mut places: Vec<Place> = Vec::new();
    for &k in group {
        for f in &found[k] {
            if !places.iter().any(|p| p.start == f.start && p.end == f.end) {
                places.push(Place { start: f.start, end: f.end });
            }
        }
    }
    places.sort_by_key(|p| p.start);
    let lower = lower_in_place(text);
    let labels = label_places(keys, group, &lower, &places);
    let scene = Scene { lower: &lower, places, labels, found };
    let empty = Bindings {
        taken_by: vec![None; scene.places.len()],
        used: vec![false; scene.labels.len()],
        has_value: vec![false; keys.len()],
    };
    // 1. Labels: the orientation that links more values first (labels before values on a tie),
    // then the other one for what is left.
    let (mut before, mut after) = (empty.clone(), empty);
    let linked_before = scene.label_pass(&mut before, true);
    let linked_after = scene.label_pass(&mut after, false);
    let mut b = if linked_after > linked_before {
        scene.label_pass(&mut after, true);
        after
    } else {
        scene.label_pass(&mut before, false);
        before
    };
    // 2. Position: the values left to the open keys left, in order, when that is unambiguous.
    let free_keys: Vec<usize> = group.iter().copied().filter(|&k| keys[k].open && !b.has_value[k]).collect();
    let free_places: Vec<usize> = (0..scene.places.len()).filter(|&p| b.taken_by[p].is_none()).collect();
    if free_places.len() <= free_keys.len() {
        for (&k, &p) in free_keys.iter().zip(&free_places) {
            if found[k].iter().any(|f| f.start == scene.places[p].start) {
                b.taken_by[p] = Some(k);
            }
        }
    }
    scene
        .places
        .iter()
        .zip(&b.taken_by)
        .filter_map(|(p, k)| {
            let k = k.filter(|&k| keys[k].open)?;
            found[k].iter().find(|f| f.start == p.start).map(|f| (k, f.value.clone()))
        })
        .collect()
}

/// Where a key's label occurs.
struct LabelPlace {
    key: usize,
    start: usize,
    end: usize,
}

/// Every occurrence of the group's labels outside the values, the longest at each place.
fn label_places(keys: &[KeyRule<'_>], group: &[usize], lower: &str, places: &[Place]) -> Vec<LabelPlace> {
    let mut out: Vec<LabelPlace> = Vec::new();
    for &k in group {
        for term in keys[k].labels {
            for start in find_term_all(lower, term) {
                let end = start + term.len();
                if !places.iter().any(|p| start < p.end && p.start < end) {
                    out.push(LabelPlace { key: k, start, end });
                }
            }
        }
    }
    out.sort_by_key(|l| (l.start, std::cmp::Reverse(l.end)));
    let mut kept: Vec<LabelPlace> = Vec::with_capacity(out.len());
    for l in out {
        if kept.last().is_none_or(|last| l.start >= last.end) {
            kept.push(l);
        }
    }
    kept
}

/// `true` when `gap` (between a label and the value after it) holds only spaces, `:` or `=`, and
/// at most one connector word. A comma separates: `入住，12月3日` does not link.
fn connects(gap: &str) -> bool {
    let trimmed = gap.trim_matches(|c: char| c.is_whitespace() || matches!(c, ':' | '：' | '='));
    trimmed.is_empty() || CONNECTORS.contains(&trimmed)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde_json::json;

    use super::*;
    use crate::config::{ExtractSpec, ValueType};

    fn today() -> NaiveDate {
        NaiveDate::from_ymd_opt(2026, 11, 23).unwrap()
    }

    fn terms(words: &[&str]) -> Vec<Term> {
        words.iter().map(|w| Term::new(w)).collect()
    }

    /// Two keys of one extractor, labelled, both open unless `closed` names one.
    fn pair(x: &Extractor, labels: [&[Term]; 2], text: &str, closed: Option<usize>) -> Vec<Option<Value>> {
        let keys: Vec<KeyRule<'_>> =
            (0..2).map(|i| KeyRule { extractor: Some(x), labels: labels[i], open: closed != Some(i) }).collect();
        assign(&keys, text, today())
    }

    #[test]
    fn two_numbers_by_label_or_position() {
        let x = Extractor::Builtin(ValueType::Number);
        let (sys, dia) = (terms(&["systolic", "收缩压", "高压"]), terms(&["diastolic", "舒张压", "低压"]));
        let bp = |text: &str| pair(&x, [&sys, &dia], text, None);
        let cases = [
            ("120", [Some(json!(120)), None]),
            ("120，80", [Some(json!(120)), Some(json!(80))]),
            ("120/80", [Some(json!(120)), Some(json!(80))]),
            ("收缩压135，舒张压85", [Some(json!(135)), Some(json!(85))]),
            ("舒张压85，收缩压135", [Some(json!(135)), Some(json!(85))]),
            ("diastolic 85 systolic 135", [Some(json!(135)), Some(json!(85))]),
            ("低压是80", [None, Some(json!(80))]),
            ("120 80 70", [None, None]),
            ("收缩压130 80 70", [Some(json!(130)), None]),
        ];
        for (text, want) in cases {
            assert_eq!(bp(text), want, "{text}");
        }
        // The second turn: systolic is known, "80" is the diastolic; a labelled correction of
        // the known key is not taken for the other.
        assert_eq!(pair(&x, [&sys, &dia], "80", Some(0)), [None, Some(json!(80))]);
        assert_eq!(pair(&x, [&sys, &dia], "收缩压130", Some(0)), [None, None]);
    }

    #[test]
    fn two_cities_and_two_dates() {
        let spec = ExtractSpec { values: Some(vec!["北京".into(), "上海".into()]), ..Default::default() };
        let cities = Extractor::new(&spec, &BTreeMap::new()).unwrap();
        let (from, to) = (terms(&["origin", "从", "出发"]), terms(&["destination", "到", "去"]));
        let route = |text: &str| pair(&cities, [&from, &to], text, None);
        assert_eq!(route("从北京到上海"), [Some(json!("北京")), Some(json!("上海"))]);
        assert_eq!(route("北京到上海"), [Some(json!("北京")), Some(json!("上海"))]);
        assert_eq!(route("到上海，从北京出发"), [Some(json!("北京")), Some(json!("上海"))]);
        assert_eq!(route("去上海"), [None, Some(json!("上海"))]);

        let dates = Extractor::Builtin(ValueType::Date);
        let (check_in, check_out) = (terms(&["check in", "入住"]), terms(&["check out", "离店", "退房"]));
        let stay = |text: &str| pair(&dates, [&check_in, &check_out], text, None);
        assert_eq!(stay("12月1日入住，12月3日离店"), [Some(json!("2026-12-01")), Some(json!("2026-12-03"))]);
        assert_eq!(stay("离店12月3日，入住12月1日"), [Some(json!("2026-12-01")), Some(json!("2026-12-03"))]);
        assert_eq!(stay("明天入住"), [Some(json!("2026-11-24")), None]);
        assert_eq!(stay("check out on Dec 3"), [None, Some(json!("2026-12-03"))]);
    }

    #[test]
    fn keys_of_other_kinds_do_not_compete() {
        let (date, datetime) = (Extractor::Builtin(ValueType::Date), Extractor::Builtin(ValueType::Datetime));
        let keys = [
            KeyRule { extractor: Some(&date), labels: &[], open: true },
            KeyRule { extractor: Some(&datetime), labels: &[], open: true },
        ];
        assert_eq!(assign(&keys, "明天下午3点", today()), [Some(json!("2026-11-24")), Some(json!("2026-11-24T15:00"))]);
    }
}
