//! Raw serde types of `agents_config.yaml` (docs/config.md).
//!
//! These types mirror the file one to one. Every struct denies unknown fields, so a typo'd key is
//! an error rather than a silently ignored setting. The JSON Schema checked in at
//! `schemas/agents_config.schema.json` is generated from these types ([`config_json_schema`]) and a
//! test keeps the two in step.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The whole `agents_config.yaml` file.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "Switchboard agents_config.yaml")]
pub struct ConfigFile {
    /// Format version of this file. Only `1` exists.
    #[schemars(range(min = 1, max = 1))]
    pub version: u32,
    /// Supervisor-wide settings; every field has a default.
    #[serde(default)]
    pub supervisor: SupervisorSettings,
    /// LLM planner settings (Switchboard extension; used when `LLM_BASE_URL` and `LLM_MODEL`
    /// are set).
    #[serde(default)]
    pub planner: PlannerSettings,
    /// Path of the widget map, relative to this file (Switchboard extension; default
    /// `widgets_map.json`).
    #[serde(default = "default_widgets_map")]
    pub widgets_map: String,
    /// Named value lists for `extract: { values_from: <name> }` (Switchboard extension).
    #[serde(default)]
    pub lists: BTreeMap<String, Vec<String>>,
    /// Who the user is and what a user may do (Switchboard extension; default: mode `none`).
    #[serde(default)]
    pub auth: AuthSettings,
    /// Screening of user text before planning (Switchboard extension; default: on, `refuse`).
    #[serde(default)]
    pub guardrails: GuardrailSettings,
    /// One capability card per sub-agent.
    pub agents: Vec<CapabilityCardSpec>,
}

fn default_widgets_map() -> String {
    "widgets_map.json".to_string()
}

/// The `supervisor:` block (docs/config.md).
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct SupervisorSettings {
    /// Turns of short-term memory used for query rewrite.
    #[schemars(range(min = 0, max = 100))]
    pub memory_max_history: u32,
    /// How long a blocked sub-task waits for the user (humantime, e.g. `10m`).
    pub clarification_timeout: HumanDuration,
    /// How many times the same keys are asked before escalation.
    #[schemars(range(min = 1, max = 100))]
    pub max_clarification_rounds: u32,
    /// Consecutive failed turns before handing over to a human.
    #[schemars(range(min = 1, max = 100))]
    pub escalate_after_failures: u32,
    /// Sub-tasks of one request running at once.
    #[schemars(range(min = 1, max = 1024))]
    pub max_parallel_tasks: u32,
    /// Timeout of a sub-agent call when its endpoint sets none (humantime, e.g. `30s`).
    pub default_agent_timeout: HumanDuration,
    /// Deadline of a whole turn (Switchboard extension, default `60s`), counted from its arrival,
    /// so waiting for an earlier turn of the same thread counts too: a turn still waiting then
    /// ends with one `done` saying the conversation is busy (`thread_busy`); sub-tasks still
    /// running then fail with "deadline".
    pub request_timeout: HumanDuration,
    /// Turns of one thread that may wait while an earlier turn of it runs (Switchboard
    /// extension, default 4, per process); one more is refused at once with one `done`
    /// (`thread_queue_full`). `0` refuses any second concurrent turn of a thread.
    #[schemars(range(min = 0, max = 1000))]
    pub max_queued_turns_per_thread: u32,
    /// Callers that name no user (an AG-UI run without `state.user_id`, `x-user-id` or
    /// `forwardedProps.user_id`; an `/a2a` call without `x-user-id`), Switchboard extension:
    /// `deny` (default) refuses them; `allow` makes each its own user, bound to a server-issued
    /// token sent back in `x-anonymous-token`.
    pub anonymous: AnonymousCallers,
    /// Unexpired sessions (threads) one user may have (Switchboard extension, default 1000;
    /// `0` = unlimited): a turn that would start one more ends at once with one `done`
    /// (`too_many_sessions`); the user's existing threads go on.
    #[schemars(range(min = 0, max = 1000000))]
    pub max_sessions_per_user: u32,
    /// Per-agent circuit breaker (Switchboard extension).
    pub circuit_breaker: BreakerSettings,
    /// What a sub-task failing because its agent's circuit is open does to the turn (Switchboard
    /// extension): `fail` (default) reports it as failed; `escalate` also offers the hand-over to a
    /// human in that turn's answer (`metadata.state.escalation`, reason `service_unavailable`).
    pub on_circuit_open: CircuitOpenAction,
    /// Directory of text overrides, relative to this file (Switchboard extension; unset: the
    /// shipped texts). `<texts_dir>/<locale>/*.ftl` (`zh-CN`, `en`) hold Fluent messages that
    /// replace the shipped messages of the same id; an unknown id, a placeholder the message is
    /// not given, or a syntax error is a config error. `<texts_dir>/lexicons.txt` adds words to the
    /// simple-intent word lists (`locales/lexicons.txt`: `cancel: 撤销, 作废`). Edits hot-reload
    /// with the config.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub texts_dir: Option<String>,
    /// Run the routing tests (`routing_tests.yaml` next to this file) on every reload and reject
    /// an edit that misroutes one of them, like an invalid file (Switchboard extension; default
    /// `false`). `switchboard validate` runs them regardless.
    pub reload_requires_routing_tests: bool,
    /// IANA time zone (e.g. `Asia/Shanghai`) in which relative dates of the user's text
    /// (明天, 下周一, next Monday) and `not_before: today` are resolved (Switchboard extension;
    /// unset: the host's local zone). An unknown name is a config error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timezone: Option<String>,
}

/// `supervisor.anonymous`: what to do with callers that name no user.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum AnonymousCallers {
    /// Refuse them (400 on AG-UI, a JSON-RPC error on `/a2a`).
    #[default]
    Deny,
    /// Serve each as its own user, bound to a server-issued token.
    Allow,
}

/// `supervisor.on_circuit_open`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum CircuitOpenAction {
    /// The sub-task fails like any other failure.
    #[default]
    Fail,
    /// The sub-task fails and the turn's answer offers the hand-over to a human.
    Escalate,
}

/// `supervisor.circuit_breaker`: opens on a failure ratio over a window of recent calls, lets one
/// probe through after the cool-down (half-open), closes on its success.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct BreakerSettings {
    /// Open when at least this share of the calls in the window failed (0..1).
    #[schemars(range(min = 0.0, max = 1.0))]
    pub failure_ratio: f64,
    /// ...and at least this many calls were made in the window.
    #[schemars(range(min = 1, max = 10000))]
    pub min_calls: u32,
    /// The window of recent calls considered (humantime).
    pub window: HumanDuration,
    /// How long an open circuit fails calls at once before a probe (humantime).
    pub cool_down: HumanDuration,
}

impl Default for BreakerSettings {
    fn default() -> Self {
        Self {
            failure_ratio: 0.5,
            min_calls: 5,
            window: HumanDuration(Duration::from_secs(30)),
            cool_down: HumanDuration(Duration::from_secs(10)),
        }
    }
}

impl Default for SupervisorSettings {
    fn default() -> Self {
        Self {
            memory_max_history: 5,
            clarification_timeout: HumanDuration(Duration::from_secs(600)),
            max_clarification_rounds: 3,
            escalate_after_failures: 2,
            max_parallel_tasks: 8,
            default_agent_timeout: HumanDuration(Duration::from_secs(30)),
            request_timeout: HumanDuration(Duration::from_secs(60)),
            max_queued_turns_per_thread: 4,
            anonymous: AnonymousCallers::Deny,
            max_sessions_per_user: 1000,
            circuit_breaker: BreakerSettings::default(),
            on_circuit_open: CircuitOpenAction::Fail,
            texts_dir: None,
            reload_requires_routing_tests: false,
            timezone: None,
        }
    }
}

/// The `planner:` block (Switchboard extension): how the LLM planner is used.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct PlannerSettings {
    /// At most this many capability cards go into a prompt; with more enabled agents, the most
    /// relevant ones to the query are chosen by lexical scoring.
    #[schemars(range(min = 1, max = 500))]
    pub max_cards_in_prompt: u32,
    /// How long a recognized intent is cached for an identical query (humantime).
    pub intent_cache_ttl: HumanDuration,
    /// Timeout of one model call, retries included (humantime).
    pub llm_timeout: HumanDuration,
    /// Directory of the prompt templates (`intent.md`, `plan.md`, `summarize.md`), relative to
    /// this file; a missing template falls back to the built-in one.
    pub prompts_dir: String,
}

impl Default for PlannerSettings {
    fn default() -> Self {
        Self {
            max_cards_in_prompt: 20,
            intent_cache_ttl: HumanDuration(Duration::from_secs(30 * 60)),
            llm_timeout: HumanDuration(Duration::from_secs(20)),
            prompts_dir: "prompts".to_string(),
        }
    }
}

/// The id of a capability card: `[a-z0-9_]+`, 1-64 characters (checked on deserialize, so a
/// card with another id never loads), unique in the file. Reads as a `&str`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct AgentId(String);

impl JsonSchema for AgentId {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        "AgentId".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "string", "pattern": "^[a-z0-9_]+$", "minLength": 1, "maxLength": 64 })
    }
}

impl TryFrom<String> for AgentId {
    type Error = String;

    fn try_from(id: String) -> Result<Self, String> {
        let ok = (1..=64).contains(&id.len())
            && id.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
        if ok {
            Ok(Self(id))
        } else {
            Err(format!("agent id {id:?} is not 1-64 characters of [a-z0-9_]"))
        }
    }
}

impl From<AgentId> for String {
    fn from(id: AgentId) -> Self {
        id.0
    }
}

impl std::ops::Deref for AgentId {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl std::borrow::Borrow<str> for AgentId {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for AgentId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for AgentId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl PartialEq<str> for AgentId {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<String> for AgentId {
    fn eq(&self, other: &String) -> bool {
        &self.0 == other
    }
}

impl PartialEq<AgentId> for String {
    fn eq(&self, other: &AgentId) -> bool {
        *self == other.0
    }
}

/// A user-facing text of a card (`name`, `description`): a plain string, or one text per
/// language — `{zh: "…", en: "…"}` (keys `zh`, `zh-CN`, `en`) — for a card whose users write in
/// several (issue 17 item 5). Reads as the plain (primary) text: the Chinese one of a map, else
/// its first; [`LocalizedText::for_lang`] picks the one for an answer's language.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LocalizedText {
    text: String,
    by_lang: BTreeMap<String, String>,
}

impl LocalizedText {
    /// The text for `lang`: that language's own when the card gives one, else the plain text.
    pub fn for_lang(&self, lang: crate::text::Lang) -> &str {
        let keys: &[&str] = match lang {
            crate::text::Lang::Zh => &["zh", "zh-CN"],
            crate::text::Lang::En => &["en"],
        };
        keys.iter().find_map(|k| self.by_lang.get(*k)).map_or(self.text.as_str(), String::as_str)
    }

    /// The per-language texts (`zh` / `zh-CN` / `en` -> text); empty for a plain string.
    pub fn translations(&self) -> &BTreeMap<String, String> {
        &self.by_lang
    }

    /// Every text it holds (the plain one and each language's), for matching.
    pub fn all(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.text.as_str())
            .chain(self.by_lang.values().map(String::as_str).filter(move |t| *t != self.text))
    }
}

impl std::ops::Deref for LocalizedText {
    type Target = String;

    fn deref(&self) -> &String {
        &self.text
    }
}

impl fmt::Display for LocalizedText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl From<String> for LocalizedText {
    fn from(text: String) -> Self {
        Self { text, by_lang: BTreeMap::new() }
    }
}

impl From<&str> for LocalizedText {
    fn from(text: &str) -> Self {
        Self::from(text.to_string())
    }
}

impl Serialize for LocalizedText {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.by_lang.is_empty() {
            s.serialize_str(&self.text)
        } else {
            self.by_lang.serialize(s)
        }
    }
}

impl<'de> Deserialize<'de> for LocalizedText {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Form {
            Plain(String),
            PerLanguage(BTreeMap<String, String>),
        }
        match Form::deserialize(d)? {
            Form::Plain(text) => Ok(text.into()),
            Form::PerLanguage(by_lang) => {
                if let Some(bad) = by_lang.keys().find(|k| !["zh", "zh-CN", "en"].contains(&k.as_str())) {
                    return Err(serde::de::Error::custom(format!("unknown language {bad:?} (zh, zh-CN or en)")));
                }
                let text = ["zh", "zh-CN", "en"].iter().find_map(|k| by_lang.get(*k)).cloned().unwrap_or_default();
                Ok(Self { text, by_lang })
            }
        }
    }
}

impl JsonSchema for LocalizedText {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        "LocalizedText".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "anyOf": [
            { "type": "string" },
            { "type": "object", "minProperties": 1, "additionalProperties": false,
              "properties": { "zh": { "type": "string" }, "zh-CN": { "type": "string" }, "en": { "type": "string" } } }
        ] })
    }
}

/// One capability card.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CapabilityCardSpec {
    /// Stable id, `[a-z0-9_]+`, unique in the file. Never shown to users.
    pub id: AgentId,
    /// Intent label shown to the planner. Required, except for an `a2a` agent registered by its
    /// Agent Card (then read from the card at every load).
    /// A string, or one per language ([`LocalizedText`]).
    #[serde(default)]
    pub name: LocalizedText,
    /// What the agent does, in words a user understands (shown in capability answers). Required,
    /// except for an `a2a` agent registered by its card. A string, or one per language
    /// ([`LocalizedText`]).
    #[serde(default)]
    pub description: LocalizedText,
    /// Optional business domain (e.g. `travel`, `insurance`, `it_support`). With many cards
    /// (more than 30) the recognizer scores domains first, then cards within the best domains;
    /// capability answers group cards by domain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 64))]
    pub domain: Option<String>,
    /// `false` = registered but never planned.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Where and how to call the agent.
    pub endpoint: EndpointSpec,
    /// Rule-planner hints: substring match for CJK, word match for Latin scripts.
    #[serde(default)]
    pub keywords: Vec<String>,
    /// Example requests (few-shot for planners; also matched by the rule planner).
    #[serde(default)]
    pub examples: Vec<String>,
    /// JSON Schema of the `inputs` object: a path relative to this file, or an inline object.
    /// Required, except for `a2a` agents (default: any object).
    #[serde(default)]
    pub input_schema: Option<SchemaSource>,
    /// JSON Schema of the reply's `output` object: a path or an inline object. Required, except
    /// for `a2a` agents (default: any object).
    #[serde(default)]
    pub output_schema: Option<SchemaSource>,
    /// Keys the agent cannot work without; a sub-task missing one is blocked, never dispatched.
    #[serde(default)]
    pub required_semantic_keys: Vec<SemanticKeySpec>,
    /// Keys this agent's output provides to later sub-tasks (DAG edges).
    #[serde(default)]
    pub produces: Vec<String>,
    /// `read` (default) or `write` (Switchboard extension): a `write` sub-task runs only for a
    /// verified user holding every one of `scopes` (docs/config.md, "auth"); otherwise it is
    /// blocked, never dispatched. Every dispatch to a `write` agent is audited.
    #[serde(default)]
    pub access: Access,
    /// Ask the user to confirm before a sub-task of this card runs on values remembered from
    /// earlier turns rather than stated in this one (Switchboard extension; `access: write`
    /// cards always do). Default `false`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub confirm: bool,
    /// Scopes a verified user must hold for this agent's `write` sub-tasks (Switchboard
    /// extension; ignored for `read` agents).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
    /// Send the caller's bearer token to this agent as `Authorization: Bearer …` (Switchboard
    /// extension; default `false`; only with `auth.mode: jwt`; an `endpoint.headers`
    /// `Authorization` conflicts with it).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub forward_user_token: bool,
}

/// `access:` of a capability card.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Access {
    /// Reads only: runs for anyone the API admits.
    #[default]
    Read,
    /// Acts on the user's behalf (books, pays, changes): runs only for a verified user with the
    /// card's `scopes`.
    Write,
}

/// The `auth:` block (Switchboard extension, docs/config.md): who the caller is.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct AuthSettings {
    /// `none` (default: the body's `user_id` is taken at its word, the demo), `jwt` (bearer
    /// tokens) or `trusted_header` (a header set by a trusted proxy).
    pub mode: AuthMode,
    /// Settings of mode `jwt`.
    pub jwt: JwtSettings,
    /// Settings of mode `trusted_header`.
    pub trusted_header: TrustedHeaderSettings,
    /// In mode `none` nobody is verified: `allow` (default) runs `write` sub-tasks anyway (the
    /// behaviour before `access` existed, so the demo works); `block` blocks every `write`
    /// sub-task until a mode that verifies users is configured.
    pub unverified_writes: UnverifiedWrites,
    /// Where the audit lines of `write` dispatches go: `stdout` (default), `off`, or a file path
    /// (relative to this file; appended to).
    pub audit_log: String,
}

impl Default for AuthSettings {
    fn default() -> Self {
        Self {
            mode: AuthMode::None,
            jwt: JwtSettings::default(),
            trusted_header: TrustedHeaderSettings::default(),
            unverified_writes: UnverifiedWrites::Allow,
            audit_log: "stdout".into(),
        }
    }
}

/// `auth.mode`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
#[value(rename_all = "snake_case")]
pub enum AuthMode {
    /// No verification: the user is whoever the request says.
    #[default]
    None,
    /// `Authorization: Bearer <JWT>`, verified against a JWKS URL or a key from the environment.
    Jwt,
    /// The user named by a header, believed only from trusted proxy addresses.
    TrustedHeader,
}

/// `auth.unverified_writes`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum UnverifiedWrites {
    /// Run them.
    #[default]
    Allow,
    /// Block them.
    Block,
}

/// `auth.jwt`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct JwtSettings {
    /// URL of the issuer's JSON Web Key Set (keys picked by `kid`; cached, fetched again for an
    /// unknown `kid` at most once per `jwks_min_refresh`). Exactly one of `jwks_url`,
    /// `secret_env`, `public_key_env`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jwks_url: Option<String>,
    /// Name of the environment variable holding an HMAC secret (HS256/384/512).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret_env: Option<String>,
    /// Name of the environment variable holding a PEM public key (RSA, EC or Ed25519).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub public_key_env: Option<String>,
    /// Required `iss`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub issuer: Option<String>,
    /// Required `aud` (one of the token's audiences).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub audience: Option<String>,
    /// Clock skew allowed on `exp` and `nbf` (humantime).
    pub leeway: HumanDuration,
    /// The claim holding the user's scopes: a space-separated string (`scope`) or an array of
    /// strings (`scp`).
    pub scopes_claim: String,
    /// Claims passed to sub-agents in `context.user.claims` (besides the id), e.g. `[email,
    /// name]`.
    pub user_claims: Vec<String>,
    /// Least time between two JWKS fetches (humantime).
    pub jwks_min_refresh: HumanDuration,
    /// How long fetched keys are used before they are fetched again (humantime).
    pub jwks_max_age: HumanDuration,
}

impl Default for JwtSettings {
    fn default() -> Self {
        Self {
            jwks_url: None,
            secret_env: None,
            public_key_env: None,
            issuer: None,
            audience: None,
            leeway: HumanDuration(Duration::from_secs(30)),
            scopes_claim: "scope".into(),
            user_claims: Vec::new(),
            jwks_min_refresh: HumanDuration(Duration::from_secs(10)),
            jwks_max_age: HumanDuration(Duration::from_secs(600)),
        }
    }
}

/// `auth.trusted_header`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct TrustedHeaderSettings {
    /// The header naming the user.
    pub user_header: String,
    /// A header with the user's scopes, space-separated (optional).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scopes_header: Option<String>,
    /// Peer addresses (CIDRs, e.g. `10.0.0.0/8`, `127.0.0.1/32`) whose headers are believed;
    /// a request from any other address is refused (401).
    pub trusted_proxies: Vec<String>,
}

impl Default for TrustedHeaderSettings {
    fn default() -> Self {
        Self { user_header: "x-auth-user".into(), scopes_header: None, trusted_proxies: Vec::new() }
    }
}

/// Values of `auth` given on the command line or in the environment of `serve` / `demo`; each
/// replaces the file's value (at start-up and at every reload).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuthOverrides {
    /// `--auth-mode` / `SWITCHBOARD_AUTH_MODE`.
    pub mode: Option<AuthMode>,
    /// `--auth-jwks-url` / `SWITCHBOARD_AUTH_JWKS_URL`.
    pub jwks_url: Option<String>,
    /// `--auth-issuer` / `SWITCHBOARD_AUTH_ISSUER`.
    pub issuer: Option<String>,
    /// `--auth-audience` / `SWITCHBOARD_AUTH_AUDIENCE`.
    pub audience: Option<String>,
    /// `--auth-trusted-proxies` / `SWITCHBOARD_AUTH_TRUSTED_PROXIES` (comma-separated).
    pub trusted_proxies: Option<Vec<String>>,
    /// `--audit-log` / `SWITCHBOARD_AUDIT_LOG`.
    pub audit_log: Option<String>,
}

impl AuthOverrides {
    /// `auth` with the overridden values replaced.
    pub fn apply(&self, mut auth: AuthSettings) -> AuthSettings {
        if let Some(m) = self.mode {
            auth.mode = m;
        }
        if let Some(u) = &self.jwks_url {
            auth.jwt.jwks_url = Some(u.clone());
            auth.jwt.secret_env = None;
            auth.jwt.public_key_env = None;
        }
        if let Some(i) = &self.issuer {
            auth.jwt.issuer = Some(i.clone());
        }
        if let Some(a) = &self.audience {
            auth.jwt.audience = Some(a.clone());
        }
        if let Some(p) = &self.trusted_proxies {
            auth.trusted_header.trusted_proxies = p.clone();
        }
        if let Some(a) = &self.audit_log {
            auth.audit_log = a.clone();
        }
        auth
    }
}

/// The `guardrails:` block (Switchboard extension): the prompt-injection screen of user text.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct GuardrailSettings {
    /// What a turn whose text matches a pattern does: `refuse` (default: a polite answer,
    /// nothing dispatched), `escalate` (hand-over to a human) or `flag` (planned as usual,
    /// flagged in `intent_done` metadata and the logs).
    pub injection_action: InjectionAction,
    /// Case-insensitive regular expressions; empty (default) = the built-in set (English and
    /// Chinese: "ignore … instructions", "system prompt", "你现在是…", role-play and jailbreak
    /// phrasings). `extra_injection_patterns` add to whichever set is used.
    pub injection_patterns: Vec<String>,
    /// Patterns added to `injection_patterns` (or to the built-in set).
    pub extra_injection_patterns: Vec<String>,
    /// Turn the screen off.
    pub disabled: bool,
}

impl Default for GuardrailSettings {
    fn default() -> Self {
        Self {
            injection_action: InjectionAction::Refuse,
            injection_patterns: Vec::new(),
            extra_injection_patterns: Vec::new(),
            disabled: false,
        }
    }
}

/// `guardrails.injection_action`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum InjectionAction {
    /// A polite refusal; nothing is dispatched.
    #[default]
    Refuse,
    /// Hand over to a human (reason `prompt_injection`).
    Escalate,
    /// Plan as usual; flagged in metadata and logs.
    Flag,
}

fn yes() -> bool {
    true
}

/// `endpoint:` of a capability card.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EndpointSpec {
    /// `http://` or `https://` URL; `${ENV}` is interpolated.
    #[schemars(length(min = 1))]
    pub url: String,
    /// Sub-agent protocol (docs/sub-agent-protocol.md).
    pub protocol: Protocol,
    /// Call timeout (humantime); `supervisor.default_agent_timeout` when absent.
    #[serde(default)]
    pub timeout: Option<HumanDuration>,
    /// Retries, only on connect errors / 502 / 503 / 504 and never after a streamed byte.
    #[serde(default)]
    #[schemars(range(max = 10))]
    pub retries: u32,
    /// Extra request headers; `${ENV}` is interpolated; never echoed by the API.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
}

/// Sub-agent protocols.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    /// `POST` JSON, JSON reply.
    Http,
    /// `POST` JSON, `text/event-stream` reply with `delta` / `result` / `error` events.
    Sse,
    /// A2A 1.0 over JSON-RPC: `url` is the agent's base URL or its Agent Card URL.
    A2a,
}

/// A JSON Schema given by path (relative to the config file) or inline.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum SchemaSource {
    /// Path relative to the config file.
    Path(String),
    /// Inline JSON Schema object.
    Inline(serde_json::Map<String, serde_json::Value>),
}

/// One entry of `required_semantic_keys`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SemanticKeySpec {
    /// Property name in the agent's input schema.
    #[schemars(regex(pattern = r"^[A-Za-z_][A-Za-z0-9_]*$"))]
    pub key: String,
    /// What the value is, in the user's words; shown when the key is missing.
    #[schemars(length(min = 1))]
    pub description: String,
    /// Widget id from `widgets_map.json`; absent or `""` = no widget.
    #[serde(default)]
    pub widget: Option<String>,
    /// How the rule planner finds the value in free text (docs/planning.md).
    #[serde(default)]
    pub extract: Option<ExtractSpec>,
    /// An example value, shown when asking the user.
    #[serde(default)]
    pub example: Option<serde_json::Value>,
    /// Other words that name this key in the user's text (Switchboard extension), besides the key
    /// name and `description`: a value next to one of them goes to this key when several keys of
    /// the card take the same kind of value (`[从, from]` for an origin, `[到, to]` for a
    /// destination; docs/planning.md).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub synonyms: Vec<String>,
    /// Names under which upstream sub-tasks output this value or the session remembers it
    /// (Switchboard extension): the key is filled from a dependency's output field or a
    /// remembered slot of one of these names when its own name is not there, and a sub-task
    /// whose card `produces` one of them becomes a dependency (e.g. `from: [arrival_airport]`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub from: Vec<String>,
}

/// `extract:` — exactly one of its fields.
#[derive(Debug, Clone, PartialEq, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExtractSpec {
    /// A built-in value type.
    #[serde(default, rename = "type")]
    pub kind: Option<ValueType>,
    /// A regular expression with exactly one capture group.
    #[serde(default)]
    pub pattern: Option<String>,
    /// Literal values to look for.
    #[serde(default)]
    pub values: Option<Vec<String>>,
    /// Name of a list in the top-level `lists:` map.
    #[serde(default)]
    pub values_from: Option<String>,
    /// With `type: date` or `datetime` only (Switchboard extension): a date before this bound
    /// (`today`, in `supervisor.timezone`) makes the key `invalid`, so the user is asked again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_before: Option<DateBound>,
}

/// A bound of `extract.not_before`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum DateBound {
    /// The turn's date in `supervisor.timezone`.
    Today,
}

/// Built-in extractors of `extract: { type: .. }`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ValueType {
    /// ISO date `YYYY-MM-DD`; relative and Chinese dates (明天, 下周一, 十二月一日, next Monday)
    /// resolved against the turn's date.
    Date,
    /// `HH:MM`; also `下午三点半`, `两点`, `3pm`.
    Time,
    /// `YYYY-MM-DDTHH:MM`.
    Datetime,
    /// A JSON number.
    Number,
    /// A phone number (digits, optional leading `+`).
    Phone,
    /// An e-mail address.
    Email,
}

/// A duration written the humantime way (`250ms`, `30s`, `10m`, `1h 30m`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HumanDuration(pub Duration);

impl fmt::Display for HumanDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", humantime::format_duration(self.0))
    }
}

impl<'de> Deserialize<'de> for HumanDuration {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        humantime::parse_duration(&text)
            .map(HumanDuration)
            .map_err(|e| serde::de::Error::custom(format!("invalid duration {text:?}: {e}")))
    }
}

impl Serialize for HumanDuration {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl JsonSchema for HumanDuration {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "HumanDuration".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "description": "A duration such as `250ms`, `30s`, `10m` or `1h 30m`.",
            "pattern": r"^\s*([0-9]+\s*(ns|us|ms|s|sec|secs|m|min|mins|h|hr|hrs|d|days?)\s*)+$"
        })
    }
}

/// The JSON Schema of `agents_config.yaml`, generated from [`ConfigFile`].
///
/// The checked-in `schemas/agents_config.schema.json` must equal this (pretty-printed, trailing
/// newline); `cargo test` fails when it is stale and `switchboard schema` prints a fresh one.
pub fn config_json_schema() -> serde_json::Value {
    let schema =
        schemars::generate::SchemaSettings::draft2020_12().into_generator().into_root_schema_for::<ConfigFile>();
    serde_json::to_value(schema).unwrap_or_default()
}

#[cfg(test)]
mod agent_id_tests {
    use super::AgentId;

    #[test]
    fn an_agent_id_is_lowercase_digits_and_underscores() {
        for ok in ["hotel_agent", "a", "v2_agent"] {
            let id = AgentId::try_from(ok.to_string()).unwrap();
            assert_eq!(&*id, ok);
        }
        for bad in ["", "Hotel", "hotel-agent", "酒店", &"a".repeat(65)] {
            assert!(AgentId::try_from(bad.to_string()).is_err(), "{bad:?}");
            assert!(serde_json::from_value::<AgentId>(serde_json::json!(bad)).is_err(), "{bad:?}");
        }
    }
}
