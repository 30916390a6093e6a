//! The registry: an immutable, versioned snapshot of the validated config, and the
//! [`RegistryHandle`] that swaps snapshots atomically (docs/config.md).
//!
//! A [`Registry`] is built only from a [`LoadedConfig`] (so it is valid by construction) and never
//! changes afterwards. Everything a request needs per call is compiled here, once per load: the
//! JSON Schema validators, per-key validators and the rule planner's extractors and matchers.
//! A request takes one `Arc<Registry>` at its start ([`RegistryHandle::load`]) and keeps it to the
//! end, whatever reloads happen meanwhile.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use arc_swap::ArcSwap;
use chrono::NaiveDate;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::config::{
    compile_schema, key_subschema, CapabilityCardSpec, ConfigError, ConfigErrors, DateBound, LoadedConfig,
    PlannerSettings, Prompts, Protocol, SemanticKeySpec, SupervisorSettings,
};
use crate::matching::{Extractor, LexiconMatcher, Recognizer, Term, TermMatcher};
use crate::redact::Secrets;
use crate::text::Texts;

/// One semantic key of a capability card, compiled.
#[derive(Debug)]
pub struct KeyDef {
    /// The key as configured.
    pub spec: SemanticKeySpec,
    /// Widget id, `""` for none (the wire form of `fe_widgets_suggestion`).
    pub widget: String,
    /// Validates `{ key: value }` against the key's property in the input schema.
    pub validator: Arc<jsonschema::Validator>,
    /// JSON type of the property (`"number"`, `"integer"`, `"string"`, ...), used to coerce form
    /// values such as `"1000"`.
    pub json_type: Option<String>,
    /// The rule planner's extractor, when `extract` is set.
    pub extractor: Option<Extractor>,
    /// Words that name the key in a text: its name (also with spaces for underscores), its
    /// description and its `synonyms`, prepared for matching.
    pub labels: Vec<Term>,
    /// The values the key's property allows (its schema's `enum`), empty when not enumerated.
    pub options: Vec<Value>,
    /// `extract.not_before`, if set.
    pub not_before: Option<DateBound>,
}

/// Why a value for a key was not accepted (`semantic_info[].reasons` on the wire).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Rejection {
    /// Not one of the values the key's schema enumerates.
    NotAnOption,
    /// A date before `not_before` (a past date).
    PastDate,
    /// Fails the key's property schema otherwise (type, pattern, range, format).
    Invalid,
}

impl KeyDef {
    /// `true` when `value` satisfies the key's property schema.
    pub fn accepts(&self, value: &Value) -> bool {
        let mut obj = Map::with_capacity(1);
        obj.insert(self.spec.key.clone(), value.clone());
        self.validator.is_valid(&Value::Object(obj))
    }

    /// Checks `value` against the key's property schema and its `not_before` rule, resolved
    /// against `today` (the turn's date in `supervisor.timezone`).
    ///
    /// # Errors
    /// Why the value is not accepted.
    pub fn check(&self, value: &Value, today: NaiveDate) -> Result<(), Rejection> {
        if !self.accepts(value) {
            let listed = self.options.is_empty() || self.options.contains(value);
            return Err(if listed { Rejection::Invalid } else { Rejection::NotAnOption });
        }
        let date = value.as_str().and_then(|s| s.get(..10)).and_then(|d| NaiveDate::parse_from_str(d, "%Y-%m-%d").ok());
        match (self.not_before, date) {
            (Some(DateBound::Today), Some(date)) if date < today => Err(Rejection::PastDate),
            _ => Ok(()),
        }
    }

    /// Compiles `spec`: `sub` is its property's schema ([`key_subschema`]), `validator` that
    /// schema compiled, `lists` the config's value lists.
    fn new(
        spec: &SemanticKeySpec,
        sub: &Value,
        validator: Arc<jsonschema::Validator>,
        lists: &std::collections::BTreeMap<String, Vec<String>>,
    ) -> Self {
        let prop = &sub["properties"][&spec.key];
        Self {
            spec: spec.clone(),
            widget: spec.widget.clone().unwrap_or_default(),
            validator,
            json_type: prop["type"].as_str().map(str::to_string),
            extractor: spec.extract.as_ref().and_then(|x| Extractor::new(x, lists)),
            labels: Self::label_terms(spec),
            options: prop["enum"].as_array().cloned().unwrap_or_default(),
            not_before: spec.extract.as_ref().and_then(|x| x.not_before),
        }
    }

    /// The key's names in a text (see [`KeyDef::labels`]).
    fn label_terms(spec: &SemanticKeySpec) -> Vec<Term> {
        let spaced = spec.key.replace('_', " ");
        let mut words: Vec<&str> = vec![&spec.key, &spaced, &spec.description];
        words.extend(spec.synonyms.iter().map(String::as_str));
        let mut seen = std::collections::HashSet::new();
        words
            .into_iter()
            .filter(|w| seen.insert(w.trim().to_lowercase()))
            .map(Term::new)
            .filter(|t| !t.is_empty())
            .collect()
    }
}

/// At most five messages ("… at \"/pointer\"") for what `value` breaks of `validator`'s schema.
/// A valid value (every dispatch's inputs and outputs, nearly always) is checked by the
/// validator's fast yes / no path and costs no error iterator.
fn schema_errors(validator: &jsonschema::Validator, value: &Value) -> Vec<String> {
    if validator.is_valid(value) {
        return Vec::new();
    }
    validator.iter_errors(value).take(5).map(|e| format!("{} at {:?}", e, e.instance_path().as_str())).collect()
}

/// A capability card, validated and compiled.
#[derive(Debug)]
pub struct CapabilityCard {
    /// The card as written (`${ENV}` not interpolated: safe to show).
    pub spec: CapabilityCardSpec,
    /// Endpoint URL, interpolated.
    pub url: reqwest::Url,
    /// Extra headers, interpolated. Secret.
    pub headers: reqwest::header::HeaderMap,
    /// Effective call timeout.
    pub timeout: Duration,
    /// The input JSON Schema document.
    pub input_schema: Arc<Value>,
    /// The output JSON Schema document.
    pub output_schema: Arc<Value>,
    /// Validator of the full `inputs` object (shared by the cards using the same schema file).
    pub input_validator: Arc<jsonschema::Validator>,
    /// Validator of the reply's `output` object ("acceptance"; shared like `input_validator`).
    pub output_validator: Arc<jsonschema::Validator>,
    /// `required_semantic_keys`, compiled, in config order.
    pub keys: Vec<KeyDef>,
    /// Keywords, name and examples, prepared for matching.
    pub matcher: TermMatcher,
    /// Why the agent cannot be used right now (its Agent Card is unreachable), if so.
    pub unavailable: Option<String>,
    /// The snapshot's `${ENV}` secrets: masked in everything this agent sends back.
    pub secrets: Arc<Secrets>,
}

impl CapabilityCard {
    /// The agent id.
    pub fn id(&self) -> &str {
        &self.spec.id
    }

    /// Why `inputs` does not satisfy the card's input schema: at most five messages, each with
    /// its JSON pointer; empty when it does.
    pub fn input_errors(&self, inputs: &Value) -> Vec<String> {
        schema_errors(&self.input_validator, inputs)
    }

    /// Why `output` (a reply's `output` object) does not satisfy the card's output schema, as
    /// [`input_errors`](Self::input_errors).
    pub fn output_errors(&self, output: &Value) -> Vec<String> {
        schema_errors(&self.output_validator, output)
    }

    /// The sub-agent protocol.
    pub fn protocol(&self) -> Protocol {
        self.spec.endpoint.protocol
    }

    /// The user-facing phrase for a sub-task of this agent in `lang`: its description (that
    /// language's when the card gives one) without trailing punctuation.
    pub fn task_description(&self, lang: crate::text::Lang) -> String {
        self.spec.description.for_lang(lang).trim().trim_end_matches(['。', '.', '！', '!', '；', ';']).to_string()
    }
}

/// An immutable registry snapshot.
#[derive(Debug)]
pub struct Registry {
    /// Snapshot version: 1 for the first load, +1 for each swap.
    pub version: u64,
    /// Hex SHA-256 of every file the snapshot was built from.
    pub hash: String,
    /// When the snapshot was built.
    pub loaded_at: SystemTime,
    /// The config file path.
    pub path: std::path::PathBuf,
    /// Supervisor settings.
    pub settings: SupervisorSettings,
    /// LLM planner settings.
    pub planner: PlannerSettings,
    /// LLM prompt templates.
    pub prompts: Arc<Prompts>,
    /// The widget map as served.
    pub widgets: Arc<Map<String, Value>>,
    /// The texts users read (shipped catalog + `texts_dir` overrides of this config).
    texts: Arc<Texts>,
    /// Every file read: what hot reload watches.
    pub sources: Vec<std::path::PathBuf>,
    /// The intent recognizer over the enabled, available cards, compiled for this snapshot.
    pub recognizer: Recognizer,
    /// The simple-intent word lists of [`Registry::texts`] (shipped + `texts_dir/lexicons.txt`),
    /// compiled for this snapshot.
    pub lexicons: LexiconMatcher,
    /// Every value interpolated from `${ENV}` (never shown).
    pub secrets: Arc<Secrets>,
    /// `supervisor.timezone`, parsed (`None`: the host's local zone).
    pub timezone: Option<chrono_tz::Tz>,
    /// `auth`, compiled (effective settings: file + command-line overrides).
    pub auth: Arc<crate::auth::AuthConfig>,
    /// Where audit lines of `write` dispatches go: `None` = off, `Some(None)` = stdout.
    pub audit_log: Option<Option<std::path::PathBuf>>,
    /// The prompt-injection screen (`guardrails`).
    pub screen: crate::guardrails::Screen,
    agents: Vec<Arc<CapabilityCard>>,
    index: HashMap<String, usize>,
}

impl Registry {
    /// Builds a snapshot from a validated config.
    ///
    /// # Errors
    /// [`ConfigErrors`] only if a schema that passed validation fails to compile (not expected).
    pub fn from_config(loaded: LoadedConfig, version: u64) -> Result<Self, ConfigErrors> {
        let file_name = loaded.path.display().to_string();
        let mut validators = Validators::new(&file_name);
        let secrets = Arc::new(Secrets::new(loaded.secrets.iter().cloned()));
        crate::logging::remember_secrets(secrets.values());
        let mut agents = Vec::with_capacity(loaded.agents.len());
        for (i, resolved) in loaded.agents.into_iter().enumerate() {
            let mut keys = Vec::with_capacity(resolved.spec.required_semantic_keys.len());
            for (j, k) in resolved.spec.required_semantic_keys.iter().enumerate() {
                let sub = key_subschema(&resolved.input_schema, &[k.key.as_str()]);
                let pointer = format!("/agents/{i}/required_semantic_keys/{j}");
                let validator = validators.get(&resolved.input_schema, Some(k.key.as_str()), &sub, pointer)?;
                keys.push(KeyDef::new(k, &sub, validator, &loaded.file.lists));
            }
            let (input, output) = (&resolved.input_schema, &resolved.output_schema);
            let input_validator = validators.get(input, None, input, format!("/agents/{i}/input_schema"))?;
            let output_validator = validators.get(output, None, output, format!("/agents/{i}/output_schema"))?;
            let spec = &resolved.spec;
            let matcher = TermMatcher::new(spec.keywords.iter().chain([&*spec.name]), &spec.examples);
            agents.push(Arc::new(CapabilityCard {
                input_validator,
                output_validator,
                matcher,
                keys,
                headers: sensitive_headers(&resolved.headers),
                unavailable: resolved.unavailable,
                secrets: secrets.clone(),
                url: resolved.url,
                timeout: resolved.timeout,
                input_schema: resolved.input_schema,
                output_schema: resolved.output_schema,
                spec: resolved.spec,
            }));
        }
        let index = agents.iter().enumerate().map(|(i, a)| (a.spec.id.to_string(), i)).collect();
        let usable: Vec<&CapabilityCardSpec> =
            agents.iter().filter(|a| a.spec.enabled && a.unavailable.is_none()).map(|a| &a.spec).collect();
        let recognizer = Recognizer::new(&usable, &loaded.file.lists);
        let lexicons = LexiconMatcher::new(loaded.texts.lexicons());
        let timezone = loaded.file.supervisor.timezone.as_deref().and_then(|tz| tz.parse().ok());
        Ok(Self {
            timezone,
            version,
            hash: loaded.hash,
            loaded_at: SystemTime::now(),
            path: loaded.path,
            settings: loaded.file.supervisor,
            planner: loaded.file.planner,
            prompts: Arc::new(loaded.prompts),
            widgets: Arc::new(loaded.widgets),
            texts: loaded.texts,
            sources: loaded.sources,
            recognizer,
            lexicons,
            secrets,
            auth: Arc::new(compile_auth(&loaded.file.auth, loaded.auth_key.as_ref(), &file_name)?),
            audit_log: loaded.audit_log,
            screen: crate::guardrails::Screen::new(&loaded.file.guardrails),
            agents,
            index,
        })
    }

    /// The date at `now` in `supervisor.timezone` (the host's local zone when unset): what
    /// relative dates of a turn and `not_before: today` resolve against.
    pub fn today(&self, now: chrono::DateTime<chrono::Utc>) -> NaiveDate {
        match self.timezone {
            Some(tz) => now.with_timezone(&tz).date_naive(),
            None => now.with_timezone(&chrono::Local).date_naive(),
        }
    }

    /// The texts users read, as configured for this snapshot: one turn keeps one catalog.
    pub fn texts(&self) -> &Texts {
        &self.texts
    }

    /// Every agent, enabled or not, in config order.
    pub fn agents(&self) -> &[Arc<CapabilityCard>] {
        &self.agents
    }

    /// Enabled and available agents in config order: the only ones planned.
    pub fn enabled(&self) -> impl Iterator<Item = &Arc<CapabilityCard>> {
        self.agents.iter().filter(|a| a.spec.enabled && a.unavailable.is_none())
    }

    /// An agent by id, enabled or not.
    pub fn get(&self, id: &str) -> Option<&Arc<CapabilityCard>> {
        self.index.get(id).map(|&i| &self.agents[i])
    }

    /// An enabled and available agent by id.
    pub fn get_enabled(&self, id: &str) -> Option<&Arc<CapabilityCard>> {
        self.get(id).filter(|a| a.spec.enabled && a.unavailable.is_none())
    }
}

/// The snapshot's `auth`, compiled (a PEM key that is no public key is a config error).
fn compile_auth(
    auth: &crate::config::AuthSettings,
    key: Option<&crate::config::AuthKey>,
    file_name: &str,
) -> Result<crate::auth::AuthConfig, ConfigErrors> {
    crate::auth::AuthConfig::new(auth.clone(), key)
        .map_err(|m| config_error(file_name, "/auth/jwt/public_key_env".into(), m))
}

/// One error at `pointer` of the config file.
/// The validators of one snapshot. Cards sharing a schema file share its `Arc<Value>` (the
/// loader reads each file once), so each distinct schema — or key of it — is compiled once, not
/// once per card.
struct Validators<'a> {
    file_name: &'a str,
    compiled: HashMap<(*const Value, String), Arc<jsonschema::Validator>>,
}

impl<'a> Validators<'a> {
    fn new(file_name: &'a str) -> Self {
        Self { file_name, compiled: HashMap::new() }
    }

    /// The validator of `schema`, which is `doc` itself or its property `key`.
    fn get(
        &mut self,
        doc: &Arc<Value>,
        key: Option<&str>,
        schema: &Value,
        pointer: String,
    ) -> Result<Arc<jsonschema::Validator>, ConfigErrors> {
        let id = (Arc::as_ptr(doc), key.unwrap_or("").to_string());
        if let Some(v) = self.compiled.get(&id) {
            return Ok(v.clone());
        }
        let v = compile_schema(schema).map_err(|m| config_error(self.file_name, pointer, m))?;
        self.compiled.insert(id, v.clone());
        Ok(v)
    }
}

/// A card's extra headers as a header map, every value marked sensitive (kept out of debug
/// output); names or values that are not valid HTTP are left out (the config check reports them).
fn sensitive_headers(pairs: &[(String, String)]) -> reqwest::header::HeaderMap {
    let mut headers = reqwest::header::HeaderMap::new();
    for (name, value) in pairs {
        if let (Ok(n), Ok(mut v)) =
            (reqwest::header::HeaderName::from_bytes(name.as_bytes()), reqwest::header::HeaderValue::from_str(value))
        {
            v.set_sensitive(true);
            headers.insert(n, v);
        }
    }
    headers
}

fn config_error(file_name: &str, pointer: String, message: String) -> ConfigErrors {
    ConfigErrors(vec![ConfigError {
        file: file_name.to_string(),
        line: None,
        column: None,
        pointer: Some(pointer),
        message,
    }])
}

/// What a reload attempt did.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum ReloadOutcome {
    /// A new snapshot is serving.
    Swapped {
        /// Its version.
        version: u64,
        /// Agent ids added, removed and changed relative to the previous snapshot.
        added: Vec<String>,
        /// Removed ids.
        removed: Vec<String>,
        /// Ids whose card changed.
        changed: Vec<String>,
    },
    /// The files are byte-for-byte what is serving; nothing swapped.
    Unchanged {
        /// The serving version.
        version: u64,
    },
    /// The new config is invalid; the last good snapshot keeps serving.
    Rejected {
        /// The serving version.
        version: u64,
        /// Every error found.
        errors: Vec<ConfigError>,
    },
}

/// Reload bookkeeping shown at `GET /v1/config`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ReloadStatus {
    /// Successful swaps since start.
    pub reloads_ok: u64,
    /// Rejected reloads since start.
    pub reloads_failed: u64,
    /// When the last attempt finished (RFC 3339).
    pub last_attempt_at: Option<String>,
    /// Errors of the last attempt, when it was rejected; cleared by the next good one.
    pub last_error: Option<Vec<ConfigError>>,
}

/// The serving snapshot plus reload status; shared by every request (`Arc<RegistryHandle>`).
#[derive(Debug)]
pub struct RegistryHandle {
    current: ArcSwap<Registry>,
    status: Mutex<ReloadStatus>,
    next_version: AtomicU64,
    /// `auth` values from the command line, applied at every load of this handle's config.
    overrides: crate::config::AuthOverrides,
}

impl RegistryHandle {
    /// Wraps the first snapshot (its version should be 1).
    pub fn new(first: Registry) -> Self {
        let next = first.version + 1;
        Self {
            current: ArcSwap::from_pointee(first),
            status: Mutex::new(ReloadStatus::default()),
            next_version: AtomicU64::new(next),
            overrides: crate::config::AuthOverrides::default(),
        }
    }

    /// The handle with the `auth` overrides its reloads apply (the first snapshot must have been
    /// loaded with the same).
    #[must_use]
    pub fn with_overrides(mut self, overrides: crate::config::AuthOverrides) -> Self {
        self.overrides = overrides;
        self
    }

    /// The `auth` overrides every load of this handle's config applies.
    pub fn overrides(&self) -> &crate::config::AuthOverrides {
        &self.overrides
    }

    /// Records an attempt that was rejected with the same errors on the same content as the last
    /// rejection: only its time, not as another failed reload (`last_error` stays).
    pub fn note_repeated_rejection(&self) {
        if let Ok(mut st) = self.status.lock() {
            st.last_attempt_at = Some(chrono::Utc::now().to_rfc3339());
        }
    }

    /// Loads and validates the config at `path` into a version-1 handle.
    ///
    /// # Errors
    /// Every config error.
    pub fn open(path: &std::path::Path) -> Result<Self, ConfigErrors> {
        let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        let loaded = crate::config::load(&path)?;
        let handle = Self::new(Registry::from_config(loaded, 1)?);
        let _ = warm_in_background(&handle.load());
        Ok(handle)
    }

    /// The serving snapshot. Call once per request and keep the `Arc`.
    pub fn load(&self) -> Arc<Registry> {
        self.current.load_full()
    }

    /// A copy of the reload status.
    pub fn status(&self) -> ReloadStatus {
        self.status.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// Applies the result of re-reading the config: swaps in a new snapshot when valid and
    /// different, keeps the serving one otherwise. Only the reload loop calls this.
    pub fn apply(&self, result: Result<LoadedConfig, ConfigErrors>) -> ReloadOutcome {
        self.apply_checked(result, &|_| Vec::new())
    }

    /// [`apply`](Self::apply) with a last check of the compiled snapshot before it is swapped
    /// in (the routing tests): any error it returns rejects the reload like an invalid file.
    pub fn apply_checked(
        &self,
        result: Result<LoadedConfig, ConfigErrors>,
        check: &dyn Fn(&Registry) -> Vec<ConfigError>,
    ) -> ReloadOutcome {
        let old = self.load();
        let outcome = match result {
            Ok(loaded) if loaded.hash == old.hash => ReloadOutcome::Unchanged { version: old.version },
            Ok(loaded) => {
                let version = self.next_version.load(Ordering::SeqCst);
                let checked = Registry::from_config(loaded, version).and_then(|new| {
                    let errors = check(&new);
                    if errors.is_empty() {
                        Ok(new)
                    } else {
                        Err(ConfigErrors(errors))
                    }
                });
                match checked {
                    Ok(new) => {
                        self.next_version.fetch_add(1, Ordering::SeqCst);
                        let new = Arc::new(new);
                        let _ = warm_in_background(&new);
                        // The status before the swap: whoever sees the new version sees no
                        // error of an earlier attempt.
                        self.record(Ok(true));
                        self.current.store(new.clone());
                        // Served first, then the report (every card serialized, old and new:
                        // ~5 ms at 1,000 cards).
                        let (added, removed, changed) = diff(&old, &new);
                        ReloadOutcome::Swapped { version, added, removed, changed }
                    }
                    Err(ConfigErrors(errors)) => ReloadOutcome::Rejected { version: old.version, errors },
                }
            }
            Err(ConfigErrors(errors)) => ReloadOutcome::Rejected { version: old.version, errors },
        };
        match &outcome {
            ReloadOutcome::Swapped { .. } => {} // recorded before the swap
            ReloadOutcome::Unchanged { .. } => self.record(Ok(false)),
            ReloadOutcome::Rejected { errors, .. } => self.record(Err(errors)),
        }
        outcome
    }

    /// Counts an attempt in the reload status (`GET /v1/config`): `Ok(swapped)` or the errors
    /// that rejected it.
    fn record(&self, attempt: Result<bool, &Vec<ConfigError>>) {
        if let Ok(mut st) = self.status.lock() {
            st.last_attempt_at = Some(chrono::Utc::now().to_rfc3339());
            match attempt {
                Ok(swapped) => {
                    st.reloads_ok += u64::from(swapped);
                    st.last_error = None;
                }
                Err(errors) => {
                    st.reloads_failed += 1;
                    st.last_error = Some(errors.clone());
                }
            }
        }
    }
}

fn diff(old: &Registry, new: &Registry) -> (Vec<String>, Vec<String>, Vec<String>) {
    let added = new.agents.iter().filter(|a| old.get(a.id()).is_none()).map(|a| a.spec.id.to_string()).collect();
    let removed = old.agents.iter().filter(|a| new.get(a.id()).is_none()).map(|a| a.spec.id.to_string()).collect();
    let changed = new
        .agents
        .iter()
        .filter(|a| {
            old.get(a.id()).is_some_and(|o| {
                o.spec != a.spec || o.input_schema != a.input_schema || o.output_schema != a.output_schema
            })
        })
        .map(|a| a.spec.id.to_string())
        .collect();
    (added, removed, changed)
}

/// Embeds the snapshot's card texts for the recognizer's semantic stage on a thread of its own,
/// so that the first query needing them does not wait (texts of earlier snapshots are reused).
/// Warm-ups take turns ([`WARMING`]), and one whose snapshot has been replaced and dropped by
/// the time its turn comes is skipped: quick successive reloads of a large config embed its new
/// texts once, not once per reload, and a replaced snapshot is not kept alive for a warm-up.
/// The thread's result says whether it warmed the snapshot.
fn warm_in_background(registry: &Arc<Registry>) -> Option<std::thread::JoinHandle<bool>> {
    #[cfg(feature = "semantic")]
    {
        let snapshot = Arc::downgrade(registry);
        let spawned = std::thread::Builder::new().name("semantic-warm".into()).spawn(move || {
            let _turn = WARMING.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let Some(registry) = snapshot.upgrade() else { return false };
            registry.recognizer.warm();
            true
        });
        match spawned {
            Ok(handle) => Some(handle),
            Err(e) => {
                tracing::warn!(error = %e, "could not start the semantic warm-up thread; cards are embedded on first use");
                None
            }
        }
    }
    #[cfg(not(feature = "semantic"))]
    {
        let _ = registry;
        None
    }
}

/// Held by the warm-up thread that is embedding (see [`warm_in_background`]).
#[cfg(feature = "semantic")]
static WARMING: Mutex<()> = Mutex::new(());

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use super::*;

    fn demo_path() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("agents_config.yaml")
    }

    /// The demo config with `edit` applied to its text, loaded as if it were the demo file.
    fn load_edited(edit: impl Fn(String) -> String) -> Result<LoadedConfig, ConfigErrors> {
        let path = demo_path();
        let text = edit(std::fs::read_to_string(&path).unwrap());
        crate::config::load_from_str(&text, &path, path.parent().unwrap(), &|_| None)
    }

    #[test]
    fn a_snapshot_compiles_every_card_and_indexes_it() {
        let handle = RegistryHandle::open(&demo_path()).unwrap();
        let reg = handle.load();
        assert_eq!(reg.version, 1);
        assert!(!reg.hash.is_empty());
        for agent in reg.agents() {
            assert_eq!(reg.get(agent.id()).map(|a| a.id()), Some(agent.id()));
            assert_eq!(agent.keys.len(), agent.spec.required_semantic_keys.len(), "{}", agent.id());
        }
        let hotel = reg.get_enabled("hotel_agent").unwrap();
        assert!(hotel.keys[0].accepts(&Value::String("北京".into())));
        assert!(reg.get("no_such_agent").is_none());
    }

    #[cfg(feature = "semantic")]
    #[test]
    fn a_warm_up_skips_a_snapshot_dropped_before_its_turn() {
        let registry = || Arc::new(Registry::from_config(load_edited(|t| t).unwrap(), 1).unwrap());
        let turn = WARMING.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let (kept, replaced) = (registry(), registry());
        let warm_kept = warm_in_background(&kept).unwrap();
        let warm_replaced = warm_in_background(&replaced).unwrap();
        // The replaced snapshot is dropped while the warm-ups wait for their turn.
        drop(replaced);
        drop(turn);
        assert!(warm_kept.join().unwrap(), "a live snapshot is warmed");
        assert!(!warm_replaced.join().unwrap(), "a dropped snapshot is not kept alive to be warmed");
    }

    #[test]
    fn apply_swaps_valid_changes_keeps_the_last_good_and_reports_the_diff() {
        let handle = RegistryHandle::open(&demo_path()).unwrap();
        // The same files: nothing swaps.
        assert!(matches!(handle.apply(load_edited(|t| t)), ReloadOutcome::Unchanged { version: 1 }));

        // A disabled card is a change: version 2, the card stays registered but not enabled.
        let disabled = load_edited(|t| t.replacen("enabled: true", "enabled: false", 1));
        let ReloadOutcome::Swapped { version, added, removed, changed } = handle.apply(disabled) else {
            panic!("a valid edit swaps")
        };
        assert_eq!((version, added.len(), removed.len(), changed.len()), (2, 0, 0, 1));
        let reg = handle.load();
        assert!(reg.get(&changed[0]).is_some() && reg.get_enabled(&changed[0]).is_none());

        // An invalid edit is rejected; version 2 keeps serving and the status shows the errors.
        let broken = load_edited(|t| t.replacen("version: 1", "version: one", 1));
        assert!(matches!(handle.apply(broken), ReloadOutcome::Rejected { version: 2, .. }));
        assert_eq!(handle.load().version, 2);
        let status = handle.status();
        assert_eq!((status.reloads_ok, status.reloads_failed), (1, 1));
        assert!(status.last_error.is_some_and(|e| !e.is_empty()));
    }
}
