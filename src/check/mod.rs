//! `switchboard check-agent`: tells a sub-agent team whether their agent speaks the sub-agent
//! protocol (docs/sub-agent-protocol.md) as its capability card says, before production.
//!
//! The agent is taken from a config ([`Target::config`] + id) or from a card file alone
//! ([`Target::card`], for an agent not yet in a config); either way it goes through the config
//! loader and the registry, so it is the same compiled [`CapabilityCard`] the supervisor would call.
//! [`check_agent`] then sends it requests built from the card (`inputs.rs`): cases `full`
//! (every input property; the semantic keys' `example`s first, then schema-valid values),
//! `minimal` (required properties only: the missing-optional-field case) and `dependencies`
//! (with a `context.dependencies` entry), a `malformed` request (truncated JSON, which must get a
//! 4xx promptly, not a hang) and, for `a2a`, the Agent Card and an unsupported `A2A-Version`.
//! Finally one call goes through the real [`Dispatcher`] (`supervisor` case): request building,
//! retries, timeout and acceptance exactly as in a turn.
//!
//! Every check in the [`Report`] passes or fails with its evidence (status, content type, JSON
//! pointers of schema errors, SSE event counts and sizes, task states, latency against the
//! card's timeout).

mod exchange;
mod inputs;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde_json::{json, Map, Value};

use crate::config::{ConfigErrors, Protocol};
use crate::dispatch::{request_body, DispatchLimits, Dispatcher, RequestIds};
use crate::registry::{CapabilityCard, Registry};

pub use exchange::MALFORMED_BODY;

/// Which agent to check and where it comes from.
#[derive(Debug, Clone, Default)]
pub struct Target {
    /// The agent id: looked up in [`Self::config`]; with [`Self::card`], it replaces the card's id.
    pub id: Option<String>,
    /// The config holding the agent (ignored with [`Self::card`]).
    pub config: PathBuf,
    /// A file holding one capability card (YAML or JSON, as one entry of `agents:`), for an agent
    /// not yet in a config. Relative schema paths are resolved from the card's directory.
    pub card: Option<PathBuf>,
    /// Call this URL instead of the card's `endpoint.url`.
    pub url: Option<String>,
    /// Use this protocol instead of the card's `endpoint.protocol`.
    pub protocol: Option<Protocol>,
}

/// Why no agent could be set up for checking.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// The config (or the card) has errors.
    #[error("{0}")]
    Config(ConfigErrors),
    /// Anything else: the file cannot be read, the id is unknown, arguments are missing.
    #[error("{0}")]
    Other(String),
}

/// Parses a `--protocol` value.
///
/// # Errors
/// A message naming the accepted values.
pub fn parse_protocol(s: &str) -> Result<Protocol, String> {
    match s {
        "http" => Ok(Protocol::Http),
        "sse" => Ok(Protocol::Sse),
        "a2a" => Ok(Protocol::A2a),
        other => Err(format!("unknown protocol {other:?}: use http, sse or a2a")),
    }
}

/// Loads the agent `target` names through the config loader and the registry.
///
/// # Errors
/// [`SetupError`] when the files cannot be read, the card or config is invalid, or the id is
/// not in the config.
pub fn load_agent(target: &Target) -> Result<Arc<CapabilityCard>, SetupError> {
    let mut source = match &target.card {
        Some(card_path) => CardSource::of_card_file(card_path, target.id.as_deref())?,
        None => {
            let Some(id) = &target.id else {
                return Err(SetupError::Other("give an agent id (or --card FILE)".into()));
            };
            CardSource::of_config(&target.config, id)?
        }
    };
    let card = &mut source.config["agents"][0];
    if !card.get("endpoint").is_some_and(Value::is_object) {
        card["endpoint"] = json!({});
    }
    if let Some(url) = &target.url {
        card["endpoint"]["url"] = json!(url);
    }
    if let Some(p) = target.protocol {
        card["endpoint"]["protocol"] = serde_json::to_value(p).unwrap_or_default();
    }
    let text = serde_yaml_ng::to_string(&source.config).map_err(|e| SetupError::Other(e.to_string()))?;
    let loaded = crate::config::load_from_str(&text, &source.path, &source.base, &|name| std::env::var(name).ok());
    if let Some(w) = source.widgets_file {
        let _ = std::fs::remove_file(w);
    }
    let registry = Registry::from_config(loaded.map_err(SetupError::Config)?, 1).map_err(SetupError::Config)?;
    registry.agents().first().cloned().ok_or_else(|| SetupError::Other("no agent".into()))
}

/// A config holding only the agent under check, as [`load_agent`] loads it.
struct CardSource {
    /// The config document (`agents` has the one card).
    config: Value,
    /// The file it came from (for error locations).
    path: PathBuf,
    /// The directory relative paths resolve against.
    base: PathBuf,
    /// A temporary empty widget map to remove once loaded.
    widgets_file: Option<PathBuf>,
}

impl CardSource {
    /// One card file (`--card`), id `id` (or its own, or `agent_under_check`), wrapped in a
    /// config with an empty widget map.
    fn of_card_file(card_path: &Path, id: Option<&str>) -> Result<Self, SetupError> {
        let mut card = read_yaml(card_path)?;
        let Some(obj) = card.as_object_mut() else {
            return Err(SetupError::Other(format!("{}: a card is a mapping", card_path.display())));
        };
        if obj.contains_key("agents") {
            return Err(SetupError::Other(format!(
                "{}: this is a whole config; give one card, or use --config with the agent id",
                card_path.display()
            )));
        }
        if let Some(id) = id {
            obj.insert("id".into(), json!(id));
        }
        obj.entry("id").or_insert_with(|| json!("agent_under_check"));
        // Widgets and value lists belong to the config the card will join; they do not
        // change what is sent to the agent.
        if let Some(keys) = obj.get_mut("required_semantic_keys").and_then(Value::as_array_mut) {
            for key in keys.iter_mut().filter_map(Value::as_object_mut) {
                key.remove("widget");
                if key.get("extract").is_some_and(|x| x.get("values_from").is_some()) {
                    key.remove("extract");
                }
            }
        }
        // An empty widget map for the loader, removed once loaded.
        let widgets = std::env::temp_dir().join(format!(
            "switchboard-check-agent-{}-{}.json",
            std::process::id(),
            uuid::Uuid::new_v4().simple()
        ));
        std::fs::write(&widgets, "{}")
            .map_err(|e| SetupError::Other(format!("{}: cannot write: {e}", widgets.display())))?;
        let config = json!({ "version": 1, "widgets_map": widgets.display().to_string(), "agents": [card] });
        let base = card_path.parent().map(Path::to_path_buf).unwrap_or_default();
        Ok(Self { config, path: card_path.to_path_buf(), base, widgets_file: Some(widgets) })
    }

    /// The config at `config_path` with only agent `id` left in it.
    fn of_config(config_path: &Path, id: &str) -> Result<Self, SetupError> {
        let mut config = read_yaml(config_path)?;
        let agents = config.get_mut("agents").and_then(Value::as_array_mut);
        let Some(agents) = agents else {
            return Err(SetupError::Other(format!("{}: no agents", config_path.display())));
        };
        let ids: Vec<String> = agents.iter().filter_map(|a| a["id"].as_str().map(str::to_string)).collect();
        // Only the agent under check: errors elsewhere in the config do not block it.
        agents.retain(|a| a["id"].as_str() == Some(id));
        if agents.is_empty() {
            return Err(SetupError::Other(format!(
                "{}: no agent {id:?} (agents: {})",
                config_path.display(),
                ids.join(", ")
            )));
        }
        let base = config_path.parent().map(Path::to_path_buf).unwrap_or_default();
        Ok(Self { config, path: config_path.to_path_buf(), base, widgets_file: None })
    }
}

/// A YAML (or JSON) file as a JSON value.
fn read_yaml(path: &Path) -> Result<Value, SetupError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| SetupError::Other(format!("{}: cannot read: {e}", path.display())))?;
    serde_yaml_ng::from_str(&text).map_err(|e| SetupError::Other(format!("{}: {e}", path.display())))
}

/// Settings of a check run.
#[derive(Debug, Clone, Copy)]
pub struct CheckOptions {
    /// The supervisor's size limits (replies, SSE events).
    pub limits: DispatchLimits,
    /// Bound on the malformed-request probe (the card's timeout when shorter).
    pub malformed_timeout: Duration,
}

impl Default for CheckOptions {
    fn default() -> Self {
        Self { limits: DispatchLimits::default(), malformed_timeout: Duration::from_secs(10) }
    }
}

/// One check: passed or failed, with what was seen.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    /// The request case: `card`, `full`, `minimal`, `dependencies`, `malformed`, `version`,
    /// `supervisor`.
    pub case: String,
    /// What was checked: `inputs`, `status`, `content-type`, `reply`, `output-schema`,
    /// `sse-framing`, `jsonrpc`, `task-states`, `latency`, `card-fields`, `version-header`, `dispatch`.
    pub check: String,
    /// `true` when it passed.
    pub passed: bool,
    /// What was seen, in plain words.
    pub evidence: String,
    /// The JSON pointer of the first failing instance, for schema checks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pointer: Option<String>,
}

/// The outcome of [`check_agent`].
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The agent id.
    pub agent: String,
    /// Its protocol.
    pub protocol: Protocol,
    /// Its endpoint URL as written (`${ENV}` not interpolated).
    pub url: String,
    /// The card's timeout, in milliseconds.
    pub timeout_ms: u64,
    /// `true` when every check passed.
    pub passed: bool,
    /// Every check, in the order run.
    pub checks: Vec<Check>,
}

impl Report {
    /// Checks that passed and that failed.
    pub fn counts(&self) -> (usize, usize) {
        let passed = self.checks.iter().filter(|c| c.passed).count();
        (passed, self.checks.len() - passed)
    }

    /// The failed checks.
    pub fn failures(&self) -> impl Iterator<Item = &Check> {
        self.checks.iter().filter(|c| !c.passed)
    }

    /// A report for people: one line per check, then the counts.
    pub fn render_text(&self) -> String {
        let mut out = String::new();
        let protocol = serde_json::to_value(self.protocol).ok();
        let protocol = protocol.as_ref().and_then(Value::as_str).unwrap_or_default();
        let _ = writeln!(out, "check-agent {} ({protocol}, {}, timeout {} ms)", self.agent, self.url, self.timeout_ms);
        for c in &self.checks {
            let mark = if c.passed { "PASS" } else { "FAIL" };
            let name = format!("{}/{}", c.case, c.check);
            let _ = writeln!(out, "  {mark}  {name:<28} {}", c.evidence);
        }
        let (passed, failed) = self.counts();
        let _ = writeln!(out, "check-agent {}: {passed} passed, {failed} failed", self.agent);
        out
    }

    /// The report as JSON (for CI).
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or_default()
    }
}

/// Collects checks as they are made.
#[derive(Debug, Default)]
pub(crate) struct Checks(Vec<Check>);

impl Checks {
    pub(crate) fn add(&mut self, case: &str, check: &str, passed: bool, evidence: impl Into<String>) {
        self.0.push(Check { case: case.into(), check: check.into(), passed, evidence: evidence.into(), pointer: None });
    }

    pub(crate) fn add_pointer(&mut self, case: &str, check: &str, evidence: impl Into<String>, pointer: String) {
        self.0.push(Check {
            case: case.into(),
            check: check.into(),
            passed: false,
            evidence: evidence.into(),
            pointer: Some(pointer),
        });
    }
}

/// One request case built from the card.
#[derive(Debug, Clone)]
pub(crate) struct Case {
    pub(crate) name: &'static str,
    pub(crate) body: Value,
}

/// The request cases for `agent`: `full`, `minimal`, `dependencies`. A case whose generated
/// inputs fail the input schema is reported (check `inputs`) and left out.
fn cases(agent: &CapabilityCard, checks: &mut Checks) -> Vec<Case> {
    let examples = &agent.spec.examples;
    let message = |i: usize| {
        examples
            .get(i % examples.len().max(1))
            .cloned()
            .unwrap_or_else(|| format!("check-agent request to {}", agent.id()))
    };
    let run = uuid::Uuid::new_v4().simple().to_string();
    let plan_id = format!("plan_check{}", &run[..12]);
    let mut out = Vec::new();
    let specs = [
        ("full", inputs::Fill::All, 0, false),
        ("minimal", inputs::Fill::Required, 1, false),
        ("dependencies", inputs::Fill::Required, 0, true),
    ];
    for (n, (name, fill, example, with_deps)) in specs.into_iter().enumerate() {
        let inputs = inputs::inputs(agent, fill, &message(example));
        let errors = agent.input_errors(&inputs);
        if !errors.is_empty() {
            checks.add(
                name,
                "inputs",
                false,
                format!(
                    "could not build inputs that pass the card's input schema ({}); give the semantic keys an \
                     `example`, or `examples` in the schema: {inputs}",
                    errors.join("; ")
                ),
            );
            continue;
        }
        let mut deps = Map::new();
        if with_deps {
            // An upstream output as the executor passes it: the semantic-key values this agent
            // needs, produced by an earlier sub-task.
            let upstream: Map<String, Value> = agent
                .keys
                .iter()
                .filter_map(|k| inputs.get(&k.spec.key).map(|v| (k.spec.key.clone(), v.clone())))
                .collect();
            deps.insert(format!("{plan_id}_task_0"), Value::Object(upstream));
        }
        let task_id = format!("{plan_id}_task_{}", n + 1);
        let ids = RequestIds {
            task_id: &task_id,
            plan_id: &plan_id,
            session_id: "sess_check_agent",
            user_id: "check-agent",
            thread_id: "th_check_agent",
            user: None,
        };
        out.push(Case { name, body: request_body(ids, inputs, deps) });
    }
    out
}

/// Runs every check on `agent` and reports.
pub async fn check_agent(agent: &CapabilityCard, opts: &CheckOptions) -> Report {
    let mut checks = Checks::default();
    let cases = cases(agent, &mut checks);
    let client = reqwest::Client::builder().connect_timeout(Duration::from_secs(5)).build().unwrap_or_default();
    let ex = exchange::Exchanger { client: &client, agent, opts };
    match agent.protocol() {
        Protocol::Http | Protocol::Sse => {
            for case in &cases {
                ex.plain_case(case, &mut checks).await;
            }
            ex.plain_malformed(&mut checks).await;
        }
        Protocol::A2a => {
            if let Some(card) = ex.a2a_card(&mut checks).await {
                for case in &cases {
                    ex.a2a_case(&card, case, &mut checks).await;
                }
                ex.a2a_version(&card, cases.first(), &mut checks).await;
                ex.a2a_malformed(&card, &mut checks).await;
            }
        }
    }
    if let Some(case) = cases.first() {
        supervisor_case(agent, case, opts, &mut checks).await;
    }
    let checks = checks.0;
    Report {
        agent: agent.id().to_string(),
        protocol: agent.protocol(),
        url: agent.spec.endpoint.url.clone(),
        timeout_ms: agent.timeout.as_millis() as u64,
        passed: !checks.is_empty() && checks.iter().all(|c| c.passed),
        checks,
    }
}

/// The `full` case once more, through the supervisor's own dispatcher (retries, timeout,
/// acceptance): what a real turn would get.
async fn supervisor_case(agent: &CapabilityCard, case: &Case, opts: &CheckOptions, checks: &mut Checks) {
    let dispatcher = Dispatcher::new(opts.limits);
    let trace = uuid::Uuid::new_v4().simple().to_string();
    let started = std::time::Instant::now();
    let breaker = crate::config::model::BreakerSettings::default();
    let result = dispatcher
        .dispatch(
            agent,
            &case.body,
            None,
            &crate::dispatch::Call::traced(&crate::dispatch::traceparent(&trace)),
            &|_| {},
            &breaker,
        )
        .await;
    let ms = started.elapsed().as_millis();
    match result {
        Ok(reply) => checks.add(
            "supervisor",
            "dispatch",
            true,
            format!("the dispatcher accepted the reply in {ms} ms: message {:?}", shorten(&reply.message, 80)),
        ),
        Err(e) => checks.add(
            "supervisor",
            "dispatch",
            false,
            format!("the dispatcher failed the sub-task with `{}` after {ms} ms: {e}", e.code()),
        ),
    }
}

/// At most `n` characters of `s`, with `…` when cut.
pub(crate) fn shorten(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        format!("{}…", s.chars().take(n).collect::<String>())
    }
}
