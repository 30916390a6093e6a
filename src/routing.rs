//! Operators' view of routing: `switchboard explain` (every card's score, evidence and the
//! decision for one query) and routing tests (`routing_tests.yaml` next to the config: queries
//! with the agents they must reach), run by `switchboard validate` and, when
//! `supervisor.reload_requires_routing_tests` is on, by every reload.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use chrono::NaiveDate;
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::config::ConfigError;
use crate::matching::recognize::{SELECT, UNCERTAIN};
use crate::matching::{CardScore, Evidence};
use crate::planner::{self, Decision, TurnInput};
use crate::registry::Registry;

/// The routing test file looked for next to the config.
pub const ROUTING_TESTS_FILE: &str = "routing_tests.yaml";

/// One routing test: a query and the agents it must be routed to (`[]`: none).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoutingTest {
    /// The user's text.
    pub query: String,
    /// Agent ids the turn must plan, in any order; `[]` = nothing dispatched.
    pub expect: Vec<String>,
    /// Semantic keys the planned sub-tasks must carry, `{key: value}` (optional).
    #[serde(default)]
    pub keys: Map<String, Value>,
}

/// The routing test file of `config` (`routing_tests.yaml` in its directory), if present.
pub fn routing_tests_path(config: &Path) -> Option<PathBuf> {
    let p = config.parent().unwrap_or(Path::new(".")).join(ROUTING_TESTS_FILE);
    p.is_file().then_some(p)
}

/// Reads a routing test file.
///
/// # Errors
/// One [`ConfigError`] naming the file (unreadable or not a list of tests).
pub fn load_routing_tests(path: &Path) -> Result<Vec<RoutingTest>, ConfigError> {
    let shown = path.display().to_string();
    let whole = |message: String| ConfigError { file: shown.clone(), line: None, column: None, pointer: None, message };
    let text = std::fs::read_to_string(path).map_err(|e| whole(format!("cannot read: {e}")))?;
    serde_yaml_ng::from_str(&text).map_err(|e| {
        let loc = e.location();
        ConfigError {
            file: shown.clone(),
            line: loc.as_ref().map(|l| l.line()),
            column: loc.as_ref().map(|l| l.column()),
            pointer: None,
            message: format!("routing tests: {e}"),
        }
    })
}

/// The date routing tests resolve relative dates against (明天 is 2026-01-02 in a test's
/// expected `keys`, whatever day they run), so that a test passes or fails the same every day.
pub const ROUTING_TEST_DATE: (i32, u32, u32) = (2026, 1, 1);

/// How `plan_turn` decides `query` as the first turn of a new thread (nothing pending, no values)
/// on `today`.
fn first_turn(registry: &Registry, query: &str, today: NaiveDate) -> planner::TurnDecision {
    let empty = Map::new();
    let input = TurnInput {
        query,
        slots: &empty,
        session_slots: &empty,
        pending: None,
        pending_plan_id: None,
        choice: None,
        previous: None,
        today,
        plan_id: "routing_test",
        lang: crate::text::Lang::detect(query),
    };
    planner::plan_turn(registry, input)
}

/// The agents a query is routed to (as `plan_turn` decides a fresh turn) and the semantic keys
/// found for them.
pub fn route(registry: &Registry, query: &str) -> (Vec<String>, Map<String, Value>) {
    let (y, m, d) = ROUTING_TEST_DATE;
    let turn = first_turn(registry, query, NaiveDate::from_ymd_opt(y, m, d).unwrap_or_default());
    match turn.decision {
        Decision::Plan { plan, .. } => {
            let mut keys = Map::new();
            for t in &plan.sub_tasks {
                for (k, v) in &t.inputs {
                    keys.entry(k.clone()).or_insert_with(|| v.clone());
                }
            }
            (turn.intent.agents, keys)
        }
        _ => (Vec::new(), Map::new()),
    }
}

/// Runs `tests` against `registry`; one error per failing test, naming the file and the test's
/// index (`/3`).
pub fn run_routing_tests(registry: &Registry, tests: &[RoutingTest], file: &Path) -> Vec<ConfigError> {
    let mut errors = Vec::new();
    for (i, t) in tests.iter().enumerate() {
        let (got, keys) = route(registry, &t.query);
        let mut want: Vec<&str> = t.expect.iter().map(String::as_str).collect();
        let mut have: Vec<&str> = got.iter().map(String::as_str).collect();
        want.sort_unstable();
        have.sort_unstable();
        let mut problems = Vec::new();
        if want != have {
            let rec = registry.recognizer.recognize(&t.query);
            let top: Vec<String> = rec.top(3).iter().map(|c| format!("{} {:.2}", c.id, c.confidence)).collect();
            problems.push(format!(
                "routed to [{}], expected [{}] (top candidates: {})",
                have.join(", "),
                want.join(", "),
                if top.is_empty() { "none".to_string() } else { top.join(", ") }
            ));
        }
        for (k, v) in &t.keys {
            match keys.get(k) {
                Some(found) if found == v => {}
                Some(found) => problems.push(format!("key {k} = {found}, expected {v}")),
                None => problems.push(format!("key {k} not found, expected {v}")),
            }
        }
        if !problems.is_empty() {
            errors.push(ConfigError {
                file: file.display().to_string(),
                line: None,
                column: None,
                pointer: Some(format!("/{i}")),
                message: format!("routing test {:?}: {}", t.query, problems.join("; ")),
            });
        }
    }
    errors
}

/// Loads the routing tests next to the registry's config (if any) and runs them.
pub fn check_registry(registry: &Registry) -> Vec<ConfigError> {
    let Some(path) = routing_tests_path(&registry.path) else { return Vec::new() };
    match load_routing_tests(&path) {
        Ok(tests) => run_routing_tests(registry, &tests, &path),
        Err(e) => vec![e],
    }
}

/// The planner's decision as `explain` prints it: what a first turn of a thread would do.
fn decision_line(decision: &Decision) -> String {
    let name = |v: serde_json::Result<String>| v.unwrap_or_default().trim_matches('"').to_string();
    match decision {
        Decision::Plan { plan, .. } => {
            let agents: Vec<&str> = plan.sub_tasks.iter().map(|t| t.assigned_agent.as_str()).collect();
            let keys: Vec<String> = plan
                .sub_tasks
                .iter()
                .map(|t| {
                    let found = t.inputs.iter().filter(|(k, _)| k.as_str() != "message");
                    let found: Vec<String> = found.map(|(k, v)| format!("{k}={v}")).collect();
                    format!("{} {{{}}}", t.assigned_agent, found.join(", "))
                })
                .collect();
            let blocked = &plan.missing_semantic_keys;
            let mut line = format!("plan {}", agents.join(" -> "));
            let _ = write!(line, "\nkeys found: {}", keys.join("; "));
            if !blocked.is_empty() {
                let _ = write!(line, "\nmissing keys (blocked, asked for): {}", blocked.join(", "));
            }
            line
        }
        Decision::Choose(q) => {
            format!("ask which capability was meant (nothing dispatched)\ndid you mean: {}", q.candidates.join(" / "))
        }
        Decision::Direct(planner::SimpleIntent::OutOfScope) => "out of scope (nothing dispatched)".to_string(),
        Decision::Direct(s) => format!("answer directly ({})", name(serde_json::to_string(s))),
        Decision::Escalate(r) => format!("hand over to a human ({})", name(serde_json::to_string(r))),
        Decision::Cancel => "cancel (nothing pending, acknowledged)".to_string(),
    }
}

fn evidence_line(e: &Evidence) -> String {
    e.to_string()
}

/// A terminal-readable explanation of how `query` is routed: clauses, every enabled card's
/// score with its evidence, and the decision of a first turn made today (in the config's
/// `supervisor.timezone`: relative dates resolve as a live turn's would).
pub fn explain(registry: &Registry, query: &str) -> String {
    let rec = registry.recognizer.recognize(query);
    let mut out = String::new();
    let _ = writeln!(out, "query:   {query:?}");
    let _ = writeln!(out, "clauses: {}", rec.clauses.iter().map(|c| format!("{c:?}")).collect::<Vec<_>>().join(" | "));
    let _ = writeln!(out, "thresholds: selected >= {SELECT:.2}, uncertain >= {UNCERTAIN:.2}");
    let _ = writeln!(out);
    let mut rows: Vec<CardScore> = rec.candidates.clone();
    for a in registry.enabled() {
        if rec.score(a.id()).is_none() {
            rows.push(CardScore { id: a.id().to_string(), confidence: 0.0, evidence: Vec::new(), raw: 0.0 });
        }
    }
    let width = rows.iter().map(|r| r.id.len()).max().unwrap_or(8).max(8);
    let _ = writeln!(out, "{:<width$}  {:>5}  {:>5}  {:<10}  evidence", "card", "conf", "raw", "verdict");
    for r in &rows {
        let verdict = if rec.selected.iter().any(|s| s.id == r.id) {
            "SELECTED"
        } else if r.negated() {
            "negated"
        } else if rec.uncertain.iter().any(|u| u.id == r.id) {
            "uncertain"
        } else {
            "-"
        };
        let first = r.evidence.first().map(evidence_line).unwrap_or_default();
        let _ = writeln!(out, "{:<width$}  {:>5.2}  {:>5.2}  {:<10}  {first}", r.id, r.confidence, r.raw, verdict);
        for e in r.evidence.iter().skip(1) {
            let _ = writeln!(out, "{:<width$}  {:>5}  {:>5}  {:<10}  {}", "", "", "", "", evidence_line(e));
        }
    }
    #[cfg(feature = "semantic")]
    {
        use crate::matching::semantic_stage::TRUST;
        let (read, nearest, odds) = registry.recognizer.meaning(query, &rec, 3);
        if !nearest.is_empty() {
            if let Some(read) = read {
                let _ = write!(out, "\nthe encoder reads: {read:?}");
            }
            let cards: Vec<String> = nearest.iter().map(|(id, cosine)| format!("{id} {cosine:.2}")).collect();
            let odds = odds.map_or(String::new(), |p| {
                format!("; odds the nearest is meant {p:.2} (planned from {TRUST:.2} when no rule decided)")
            });
            let _ = writeln!(out, "\nnearest in meaning: {}{odds}", cards.join(", "));
        }
    }
    let _ = writeln!(out);
    // Today in the config's zone, as a turn now would see it.
    let today = registry.today(chrono::Utc::now());
    let _ = writeln!(out, "decision: {}", decision_line(&first_turn(registry, query, today).decision));
    if !rec.unhandled.is_empty() {
        let _ = writeln!(out, "not covered by any card: {}", rec.unhandled.join(", "));
    }
    for u in &rec.unresolved {
        let _ = writeln!(out, "not sure which card \"{}\" means: {}", u.part, u.candidates.join(" / "));
    }
    out
}
