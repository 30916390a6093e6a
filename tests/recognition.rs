//! Intent-recognition evaluation report: every query of `tests/fixtures/eval/*_queries.yaml` goes
//! through `planner::plan_turn` against its config (loaded with `RegistryHandle::open`), and the
//! report prints per-kind accuracy (exact agent sets), out-of-scope precision (nothing dispatched
//! when nothing should be) and, for misses, whether the right cards are among the candidates.
//!
//! `cargo test --test integration recognition -- --nocapture` shows the report. The demo set is
//! the tuning set; the eval set (its own insurance / IT / HR config) was never tuned on. Only the
//! floors reached are asserted.

use std::collections::BTreeMap;
use std::path::Path;

use chrono::NaiveDate;
use serde::Deserialize;
use serde_json::Map;
use switchboard::matching::normalize;
use switchboard::planner::{self, Decision, TurnInput};
use switchboard::registry::{Registry, RegistryHandle};

use crate::common::repo;

#[derive(Deserialize)]
struct QuerySet {
    config: String,
    queries: Vec<EvalQuery>,
}

#[derive(Deserialize)]
struct EvalQuery {
    q: String,
    expect: Vec<String>,
    kind: String,
}

/// Figures of one set.
#[derive(Default, Debug)]
pub struct Report {
    pub total: usize,
    pub exact: usize,
    pub by_kind: BTreeMap<String, (usize, usize)>,
    /// Task queries the old exact matcher (keywords, name, one whole example) got wrong.
    pub old_misses: (usize, usize),
    pub oos: (usize, usize),
    /// Misses (task queries) whose expected cards are all among the top candidates.
    pub misses_with_candidates: (usize, usize),
}

fn pct((ok, n): (usize, usize)) -> f64 {
    if n == 0 {
        100.0
    } else {
        100.0 * ok as f64 / n as f64
    }
}

fn sorted(v: &[String]) -> Vec<String> {
    let mut v = v.to_vec();
    v.sort();
    v
}

/// The agents `query` is planned for (nothing for a direct answer or escalation).
fn routed(reg: &Registry, query: &str) -> Vec<String> {
    let empty = Map::new();
    let input = TurnInput {
        query,
        slots: &empty,
        session_slots: &empty,
        pending: None,
        previous: None,
        today: NaiveDate::from_ymd_opt(2026, 11, 23).unwrap(),
        plan_id: "eval",
    };
    let turn = planner::plan_turn(reg, input);
    match turn.decision {
        Decision::Plan { .. } => turn.intent.intent,
        _ => Vec::new(),
    }
}

/// What the matcher before the recognizer found: keywords, name, or the whole query equal to an
/// example.
fn old_matcher(reg: &Registry, query: &str) -> Vec<String> {
    let lower = query.to_lowercase();
    let normalized = normalize(query);
    reg.enabled().filter(|a| a.matcher.find(&lower, &normalized).is_some()).map(|a| a.spec.id.clone()).collect()
}

pub fn evaluate(set_file: &str) -> Report {
    let path = repo().join("tests/fixtures/eval").join(set_file);
    let set: QuerySet = serde_yaml_ng::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let config = path.parent().unwrap().join(&set.config);
    let handle = RegistryHandle::open(Path::new(&config)).unwrap_or_else(|e| panic!("{}: {e}", config.display()));
    let reg = handle.load();
    let mut r = Report::default();
    println!("\n== {set_file} ({} queries, config {})", set.queries.len(), set.config);
    for q in &set.queries {
        let got = sorted(&routed(&reg, &q.q));
        let want = sorted(&q.expect);
        let ok = got == want;
        r.total += 1;
        r.exact += ok as usize;
        let k = r.by_kind.entry(q.kind.clone()).or_default();
        k.0 += ok as usize;
        k.1 += 1;
        if want.is_empty() {
            r.oos.0 += got.is_empty() as usize;
            r.oos.1 += 1;
        } else if sorted(&old_matcher(&reg, &q.q)) != want {
            r.old_misses.0 += ok as usize;
            r.old_misses.1 += 1;
        }
        let mut note = String::new();
        if !ok && !want.is_empty() {
            let rec = reg.recognizer.recognize(&q.q);
            let top: Vec<String> = rec.top(5).iter().map(|c| c.id.clone()).collect();
            let found = want.iter().all(|w| top.contains(w));
            r.misses_with_candidates.0 += found as usize;
            r.misses_with_candidates.1 += 1;
            note = format!(
                "  candidates: {}{}",
                rec.top(5).iter().map(|c| format!("{} {:.2}", c.id, c.confidence)).collect::<Vec<_>>().join(", "),
                if found { "" } else { "  (right card NOT among candidates)" }
            );
        }
        println!(
            "{} {:<11} {:<48} -> [{}]{}{}",
            if ok { "ok  " } else { "MISS" },
            q.kind,
            q.q,
            got.join(", "),
            if ok { String::new() } else { format!(" expected [{}]", want.join(", ")) },
            note
        );
    }
    println!("-- {set_file}: exact agent sets {}/{} ({:.1}%)", r.exact, r.total, pct((r.exact, r.total)));
    for (kind, v) in &r.by_kind {
        println!("   {kind:<11} {}/{} ({:.1}%)", v.0, v.1, pct(*v));
    }
    println!(
        "   queries the old exact matcher got wrong: {}/{} now right ({:.1}%)",
        r.old_misses.0,
        r.old_misses.1,
        pct(r.old_misses)
    );
    println!("   out-of-scope precision (nothing dispatched): {}/{} ({:.1}%)", r.oos.0, r.oos.1, pct(r.oos));
    println!(
        "   misses with the right cards among the top-5 candidates: {}/{} ({:.1}%)",
        r.misses_with_candidates.0,
        r.misses_with_candidates.1,
        pct(r.misses_with_candidates)
    );
    r
}

// Floors: the figures reached when the recognizer was last tuned (README, "Recognition").

#[test]
fn recognition_report_demo_config_tuning_set() {
    let r = evaluate("demo_queries.yaml");
    assert!(pct((r.exact, r.total)) >= 97.0, "{r:?}");
    assert!(pct(r.by_kind["paraphrase"]) >= 94.0, "{r:?}");
    assert!(pct(r.oos) >= 100.0, "{r:?}");
}

#[test]
fn recognition_report_held_out_config() {
    let r = evaluate("eval_queries.yaml");
    assert!(pct((r.exact, r.total)) >= 84.0, "{r:?}");
    assert!(pct(r.by_kind["paraphrase"]) >= 73.0, "{r:?}");
    assert!(pct(r.oos) >= 100.0, "{r:?}");
    assert!(pct(r.misses_with_candidates) >= 100.0, "{r:?}");
}

/// Raw scores of expected cards (positives) and of the best wrong card (negatives) on a set, per
/// clause-level decision: prints the separation the threshold is chosen from.
#[test]
#[ignore = "calibration aid: cargo test --test integration calibration -- --ignored --nocapture"]
fn calibration_table() {
    let path = repo().join("tests/fixtures/eval/demo_queries.yaml");
    let set: QuerySet = serde_yaml_ng::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let handle = RegistryHandle::open(&path.parent().unwrap().join(&set.config)).unwrap();
    let reg = handle.load();
    let (mut pos, mut neg) = (Vec::new(), Vec::new());
    for q in &set.queries {
        let rec = reg.recognizer.recognize(&q.q);
        for c in &rec.candidates {
            if c.evidence.iter().any(|e| matches!(e, switchboard::matching::Evidence::Negated { .. })) {
                continue;
            }
            if q.expect.contains(&c.id) {
                pos.push((c.raw, q.q.clone(), c.id.clone()));
            } else {
                neg.push((c.raw, q.q.clone(), c.id.clone()));
            }
        }
    }
    pos.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap());
    neg.sort_by(|a, b| b.0.partial_cmp(&a.0).unwrap());
    println!("lowest positives:");
    for p in pos.iter().take(12) {
        println!("  {:.2} {} {}", p.0, p.2, p.1);
    }
    println!("highest negatives:");
    for n in neg.iter().take(12) {
        println!("  {:.2} {} {}", n.0, n.2, n.1);
    }
}
