//! Reading and validating a config: YAML -> JSON Schema of the file -> typed -> cross-references.
//!
//! Every stage collects *all* its errors; a later stage runs only when the earlier one passed
//! (cross-references on a structurally broken file would only add noise). Each [`ConfigError`]
//! names the file and a line/column (syntax) or a JSON pointer (everything else).

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use regex::Regex;
use serde::Serialize;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use super::model::{
    config_json_schema, AuthMode, AuthOverrides, AuthSettings, CapabilityCardSpec, ConfigFile, GuardrailSettings,
    SchemaSource, ValueType,
};
use crate::text::{read_overrides, TextError, Texts};

/// One problem in a config, with where it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConfigError {
    /// The file the problem is in (as given, or as resolved from the config's directory).
    pub file: String,
    /// 1-based line, for YAML/JSON syntax errors.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    /// 1-based column, with `line`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<usize>,
    /// JSON pointer into the file (e.g. `/agents/1/endpoint/url`), for everything but syntax.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pointer: Option<String>,
    /// What is wrong, in plain words.
    pub message: String,
}

impl ConfigError {
    fn at(file: impl Into<String>, pointer: impl Into<String>, message: impl Into<String>) -> Self {
        Self { file: file.into(), line: None, column: None, pointer: Some(pointer.into()), message: message.into() }
    }

    fn whole(file: impl Into<String>, message: impl Into<String>) -> Self {
        Self { file: file.into(), line: None, column: None, pointer: None, message: message.into() }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.line, self.column, &self.pointer) {
            (Some(l), Some(c), _) => write!(f, "{}:{l}:{c}: {}", self.file, self.message),
            (_, _, Some(p)) if p.is_empty() => write!(f, "{}: {}", self.file, self.message),
            (_, _, Some(p)) => write!(f, "{} at {p}: {}", self.file, self.message),
            _ => write!(f, "{}: {}", self.file, self.message),
        }
    }
}

/// Every error found in a config; never empty.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{} configuration error(s); first: {}", .0.len(), .0.first().map(ToString::to_string).unwrap_or_default())]
pub struct ConfigErrors(pub Vec<ConfigError>);

/// A capability card after validation: URL and headers interpolated, schemas read and compiled.
#[derive(Debug, Clone)]
pub struct ResolvedCard {
    /// The card as written (headers still un-interpolated: safe to show).
    pub spec: CapabilityCardSpec,
    /// The endpoint URL with `${ENV}` interpolated.
    pub url: reqwest::Url,
    /// Extra headers with `${ENV}` interpolated. Secret: never shown.
    pub headers: Vec<(String, String)>,
    /// The effective call timeout.
    pub timeout: Duration,
    /// The input JSON Schema document.
    pub input_schema: Arc<Value>,
    /// The output JSON Schema document.
    pub output_schema: Arc<Value>,
    /// Why the agent cannot be used (its Agent Card could not be read), if so.
    pub unavailable: Option<String>,
}

/// The LLM prompt templates: `{prompts_dir}/intent.md`, `plan.md`, `summarize.md`, or the
/// built-in ones (`prompts/` of this repository) when a file is absent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prompts {
    /// Intent recognition + rewrite.
    pub intent: String,
    /// Task planning.
    pub plan: String,
    /// The streamed summary.
    pub summarize: String,
}

/// A fully validated config: the only input a registry snapshot is built from.
#[derive(Debug, Clone)]
pub struct LoadedConfig {
    /// The config file's path.
    pub path: PathBuf,
    /// The file as parsed.
    pub file: ConfigFile,
    /// One entry per `agents[]`, same order.
    pub agents: Vec<ResolvedCard>,
    /// `widgets_map.json`: widget id -> descriptor.
    pub widgets: Map<String, Value>,
    /// The LLM prompt templates.
    pub prompts: Prompts,
    /// The texts users read: the shipped catalog with the `supervisor.texts_dir` overrides.
    pub texts: Arc<Texts>,
    /// Hex SHA-256 over every file read and every interpolated value.
    pub hash: String,
    /// Every file read (config, widget map, schemas, prompts, text overrides): what the reload
    /// watcher watches.
    pub sources: Vec<PathBuf>,
    /// Every value interpolated from `${ENV}`: masked in agent text and logs ([`crate::redact`]).
    pub secrets: Vec<String>,
    /// The JWT verification key read from the environment (`auth.jwt.secret_env` /
    /// `public_key_env`), if one is configured. Secret.
    pub auth_key: Option<AuthKey>,
    /// Where audit lines go: `None` = off, `Some(None)` = stdout, `Some(Some(path))` = that file
    /// (resolved against the config's directory).
    pub audit_log: Option<Option<PathBuf>>,
}

/// A JWT verification key from the environment.
#[derive(Clone, PartialEq, Eq)]
pub enum AuthKey {
    /// An HMAC secret (HS256/384/512).
    Hmac(String),
    /// A PEM public key (RSA, EC or Ed25519).
    Pem(String),
}

impl fmt::Debug for AuthKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Hmac(_) => "AuthKey::Hmac(..)",
            Self::Pem(_) => "AuthKey::Pem(..)",
        })
    }
}

/// Reads, parses and validates the config at `path` (and the files it references), using the
/// process environment for `${ENV}`.
///
/// # Errors
/// [`ConfigErrors`] with every problem found (missing/empty file, syntax, schema, references).
pub fn load(path: &Path) -> Result<LoadedConfig, ConfigErrors> {
    load_traced(path).0
}

/// [`load`], also returning every path it read or tried to read (the config, the files it
/// names, the texts directory), whether the load succeeded or not: what a reload watches for
/// changes.
pub fn load_traced(path: &Path) -> (Result<LoadedConfig, ConfigErrors>, Vec<PathBuf>) {
    load_traced_with(path, &AuthOverrides::default())
}

/// [`load_traced`] with the `auth` values given outside the file (`serve --auth-…`) replacing
/// the file's before the settings are checked.
pub fn load_traced_with(path: &Path, overrides: &AuthOverrides) -> (Result<LoadedConfig, ConfigErrors>, Vec<PathBuf>) {
    let mut touched = vec![path.to_path_buf()];
    let text = match crate::files::read_text(path, crate::files::MAX_FILE_BYTES) {
        Ok(text) => text,
        Err(e) => {
            let error = ConfigError::whole(path.display().to_string(), format!("cannot read: {e}"));
            return (Err(ConfigErrors(vec![error])), touched);
        }
    };
    let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let result = load_inner(&text, path, &base, &|name| std::env::var(name).ok(), overrides, &mut touched);
    (result, touched)
}

/// Validates config `text` as if it were the file `path`, resolving relative paths against
/// `base_dir` and `${ENV}` through `env`. Used by [`load`] and by `POST /v1/config/validate`.
///
/// # Errors
/// As [`load`].
pub fn load_from_str(
    text: &str,
    path: &Path,
    base_dir: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<LoadedConfig, ConfigErrors> {
    load_inner(text, path, base_dir, env, &AuthOverrides::default(), &mut Vec::new())
}

fn load_inner(
    text: &str,
    path: &Path,
    base_dir: &Path,
    env: &dyn Fn(&str) -> Option<String>,
    overrides: &AuthOverrides,
    touched: &mut Vec<PathBuf>,
) -> Result<LoadedConfig, ConfigErrors> {
    let file_name = path.display().to_string();
    if text.trim().is_empty() {
        return Err(ConfigErrors(vec![ConfigError::whole(&file_name, "the file is empty")]));
    }
    let value: Value = super::yaml::parse(text).map_err(|e| {
        let loc = e.location();
        ConfigErrors(vec![ConfigError {
            file: file_name.clone(),
            line: loc.as_ref().map(|l| l.line()),
            column: loc.as_ref().map(|l| l.column()),
            pointer: None,
            message: format!("YAML syntax: {e}"),
        }])
    })?;

    // A valid file (nearly every load) takes the validator's fast yes / no path.
    if !CONFIG_VALIDATOR.is_valid(&value) {
        let mut errors: Vec<ConfigError> = CONFIG_VALIDATOR
            .iter_errors(&value)
            .map(|e| ConfigError::at(&file_name, e.instance_path().to_string(), e.to_string()))
            .collect();
        let more = cross_check_intact_agents(&value, &errors, text, path, base_dir, env, touched);
        errors.extend(more);
        return Err(ConfigErrors(errors));
    }
    let mut file: ConfigFile = serde_path_to_error::deserialize(&value).map_err(|e| {
        let pointer = format!("/{}", e.path().to_string().replace('.', "/"));
        ConfigErrors(vec![ConfigError::at(&file_name, pointer, e.inner().to_string())])
    })?;
    file.auth = overrides.apply(std::mem::take(&mut file.auth));
    check_file(file, text, path, base_dir, env, touched)
}

/// The cross-reference checks (widgets, schema files, keys, `${ENV}`, URLs, texts) of a config
/// that passed the schema, producing the loaded config.
fn check_file(
    file: ConfigFile,
    text: &str,
    path: &Path,
    base_dir: &Path,
    env: &dyn Fn(&str) -> Option<String>,
    touched: &mut Vec<PathBuf>,
) -> Result<LoadedConfig, ConfigErrors> {
    let file_name = path.display().to_string();
    let mut check = Checker {
        file_name: &file_name,
        base_dir,
        env,
        errors: Vec::new(),
        hasher: Sha256::new(),
        sources: vec![path.to_path_buf()],
        schema_cache: HashMap::new(),
        secrets: Vec::new(),
        touched,
    };
    check.hasher.update(text.as_bytes());
    let widgets = check.widgets(&file.widgets_map);
    let prompts = check.prompts(&file.planner.prompts_dir);
    let texts = check.texts(file.supervisor.texts_dir.as_deref());
    let agents = check.agents(&file, widgets.as_ref());
    if let Some(tz) = &file.supervisor.timezone {
        if tz.parse::<chrono_tz::Tz>().is_err() {
            check.err("/supervisor/timezone".into(), format!("{tz:?} is not an IANA time zone name"));
        }
    }
    let auth_key = check.auth(&file.auth);
    check.guardrails(&file.guardrails);
    let audit_log = match file.auth.audit_log.trim() {
        "off" | "" => None,
        "stdout" | "-" => Some(None),
        rel => Some(Some(base_dir.join(rel))),
    };
    let Checker { errors, hasher, sources, secrets, .. } = check;
    if !errors.is_empty() {
        return Err(ConfigErrors(errors));
    }
    let hash = hasher.finalize().iter().map(|b| format!("{b:02x}")).collect();
    Ok(LoadedConfig {
        path: path.to_path_buf(),
        file,
        agents: agents.into_iter().flatten().collect(),
        widgets: widgets.unwrap_or_default(),
        prompts,
        texts,
        hash,
        sources,
        secrets,
        auth_key,
        audit_log,
    })
}

/// When the schema rejected some agents (`/agents/<i>/…`) and nothing else, the cross-reference
/// errors of the other agents and of the rest of the file, found by checking the config without
/// the rejected agents; their pointers name the agents' places in the file. Empty when the rest
/// does not pass the schema either.
fn cross_check_intact_agents(
    value: &Value,
    schema_errors: &[ConfigError],
    text: &str,
    path: &Path,
    base_dir: &Path,
    env: &dyn Fn(&str) -> Option<String>,
    touched: &mut Vec<PathBuf>,
) -> Vec<ConfigError> {
    let rejected = |i: usize| {
        let agent = format!("/agents/{i}");
        schema_errors
            .iter()
            .filter_map(|e| e.pointer.as_deref())
            .any(|p| p == agent || p.strip_prefix(agent.as_str()).is_some_and(|rest| rest.starts_with('/')))
    };
    let mut intact = value.clone();
    let Some(agents) = intact.get_mut("agents").and_then(Value::as_array_mut) else { return Vec::new() };
    let kept: Vec<usize> = (0..agents.len()).filter(|i| !rejected(*i)).collect();
    if kept.is_empty() || kept.len() == agents.len() {
        return Vec::new();
    }
    *agents = kept.iter().map(|&i| agents[i].clone()).collect();
    if !CONFIG_VALIDATOR.is_valid(&intact) {
        return Vec::new();
    }
    let Ok(file) = serde_json::from_value::<ConfigFile>(intact) else { return Vec::new() };
    let Err(ConfigErrors(errors)) = check_file(file, text, path, base_dir, env, touched) else { return Vec::new() };
    errors.into_iter().map(|e| renumber_agent(e, &kept)).collect()
}

/// `/agents/<j>/…` of the checked subset -> `/agents/<kept[j]>/…` of the file.
fn renumber_agent(mut error: ConfigError, kept: &[usize]) -> ConfigError {
    if let Some(rest) = error.pointer.as_deref().and_then(|p| p.strip_prefix("/agents/")) {
        let (index, tail) = rest.split_once('/').map_or((rest, ""), |(i, t)| (i, t));
        if let Some(&orig) = index.parse::<usize>().ok().and_then(|j| kept.get(j)) {
            let tail = if tail.is_empty() { String::new() } else { format!("/{tail}") };
            error.pointer = Some(format!("/agents/{orig}{tail}"));
        }
    }
    error
}

static CONFIG_VALIDATOR: LazyLock<jsonschema::Validator> = LazyLock::new(|| {
    jsonschema::validator_for(&config_json_schema()).expect("the generated config schema is a valid JSON Schema")
});

static WIDGETS_VALIDATOR: LazyLock<jsonschema::Validator> = LazyLock::new(|| {
    let schema: Value = serde_json::from_str(include_str!("../../schemas/widgets_map.schema.json"))
        .expect("schemas/widgets_map.schema.json is JSON");
    jsonschema::validator_for(&schema).expect("schemas/widgets_map.schema.json is a valid JSON Schema")
});

static ENV_REF: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}").expect("static regex"));

/// Compiles a JSON Schema document with format assertions on (a `format: date` that fails is an
/// invalid value, not an annotation). Memoized by the schema's text: the same schema gives the
/// same shared validator.
///
/// # Errors
/// The compiler's message when `schema` is not a valid JSON Schema.
pub fn compile_schema(schema: &Value) -> Result<Arc<jsonschema::Validator>, String> {
    let key = schema.to_string();
    if let Some(v) = COMPILED_SCHEMAS.get(&key) {
        return Ok(v);
    }
    let v = Arc::new(jsonschema::options().should_validate_formats(true).build(schema).map_err(|e| e.to_string())?);
    COMPILED_SCHEMAS.insert(key, v.clone());
    Ok(v)
}

/// Compiled validators by schema text, kept across loads: a reload compiles only the schemas
/// it has not seen (a 1,000-agent config checks and compiles ~2,000 schemas, ~20% of a reload
/// when all were compiled again). Bounded; invalid schemas are not kept.
static COMPILED_SCHEMAS: LazyLock<moka::sync::Cache<String, Arc<jsonschema::Validator>>> =
    LazyLock::new(|| moka::sync::Cache::builder().max_capacity(8_192).build());

struct Checker<'a> {
    file_name: &'a str,
    base_dir: &'a Path,
    env: &'a dyn Fn(&str) -> Option<String>,
    errors: Vec<ConfigError>,
    hasher: Sha256,
    sources: Vec<PathBuf>,
    schema_cache: HashMap<PathBuf, Option<Arc<Value>>>,
    secrets: Vec<String>,
    /// Every path read or tried (see [`load_traced`]).
    touched: &'a mut Vec<PathBuf>,
}

impl Checker<'_> {
    fn err(&mut self, pointer: String, message: impl Into<String>) {
        self.errors.push(ConfigError::at(self.file_name, pointer, message));
    }

    fn read_json(&mut self, rel: &str) -> Result<Value, ConfigError> {
        let path = self.base_dir.join(rel);
        self.touched.push(path.clone());
        let shown = path.display().to_string();
        let text = crate::files::read_text(&path, crate::files::MAX_FILE_BYTES)
            .map_err(|e| ConfigError::whole(&shown, format!("cannot read: {e}")))?;
        self.hasher.update(rel.as_bytes());
        self.hasher.update(text.as_bytes());
        self.sources.push(path);
        serde_json::from_str(&text).map_err(|e| ConfigError {
            file: shown,
            line: Some(e.line()),
            column: Some(e.column()),
            pointer: None,
            message: format!("JSON syntax: {e}"),
        })
    }

    fn prompts(&mut self, dir: &str) -> Prompts {
        let mut read = |name: &str, builtin: &str| {
            let path = self.base_dir.join(dir).join(format!("{name}.md"));
            self.touched.push(path.clone());
            match crate::files::read_text(&path, crate::files::MAX_FILE_BYTES) {
                Ok(text) => {
                    self.hasher.update(text.as_bytes());
                    self.sources.push(path);
                    text
                }
                Err(crate::files::ReadError::NotFound) => builtin.to_string(),
                Err(e) => {
                    self.errors.push(ConfigError::whole(path.display().to_string(), format!("cannot read: {e}")));
                    builtin.to_string()
                }
            }
        };
        Prompts {
            intent: read("intent", include_str!("../../prompts/intent.md")),
            plan: read("plan", include_str!("../../prompts/plan.md")),
            summarize: read("summarize", include_str!("../../prompts/summarize.md")),
        }
    }

    /// The shipped texts with the overrides under `texts_dir` (every file hashed and watched).
    fn texts(&mut self, texts_dir: Option<&str>) -> Arc<Texts> {
        let Some(rel) = texts_dir else { return Texts::shipped() };
        let dir = self.base_dir.join(rel);
        self.touched.push(dir.clone());
        if !dir.is_dir() {
            self.err("/supervisor/texts_dir".into(), format!("{} is not a directory", dir.display()));
            return Texts::shipped();
        }
        let (files, read_errors) = read_overrides(&dir);
        for f in &files {
            self.touched.push(f.path.clone());
            if let Some(locale_dir) = f.path.parent() {
                self.touched.push(locale_dir.to_path_buf());
            }
            self.hasher.update(f.path.to_string_lossy().as_bytes());
            self.hasher.update(f.source.as_bytes());
            self.sources.push(f.path.clone());
        }
        let lexicon = self.lexicon_file(&dir);
        let errors = match (Texts::from_overrides(&files), lexicon) {
            (Ok(texts), lexicon) if read_errors.is_empty() => {
                let Some(Ok((path, source))) = lexicon else { return Arc::new(texts) };
                match texts.with_lexicon_file(&path, &source) {
                    Ok(texts) => return Arc::new(texts),
                    Err(errors) => errors,
                }
            }
            (Ok(_), _) => read_errors,
            (Err(more), _) => read_errors.into_iter().chain(more).collect(),
        };
        self.errors.extend(errors.into_iter().map(|e: TextError| ConfigError {
            file: e.file.display().to_string(),
            line: e.line,
            column: e.column,
            pointer: None,
            message: e.message,
        }));
        Texts::shipped()
    }

    /// `<texts_dir>/lexicons.txt` when there is one (hashed and watched): its path and text, or
    /// the read error (recorded).
    fn lexicon_file(&mut self, dir: &Path) -> Option<Result<(PathBuf, String), ()>> {
        let path = dir.join(crate::text::LEXICON_FILE);
        self.touched.push(path.clone());
        match crate::files::read_text(&path, crate::files::MAX_FILE_BYTES) {
            Ok(source) => {
                self.hasher.update(path.to_string_lossy().as_bytes());
                self.hasher.update(source.as_bytes());
                self.sources.push(path.clone());
                Some(Ok((path, source)))
            }
            Err(crate::files::ReadError::NotFound) => None,
            Err(e) => {
                self.errors.push(ConfigError::whole(path.display().to_string(), format!("cannot read: {e}")));
                Some(Err(()))
            }
        }
    }

    fn widgets(&mut self, rel: &str) -> Option<Map<String, Value>> {
        let value = match self.read_json(rel) {
            Ok(v) => v,
            Err(e) => {
                self.errors.push(e);
                return None;
            }
        };
        let shown = self.base_dir.join(rel).display().to_string();
        let errs: Vec<_> = WIDGETS_VALIDATOR
            .iter_errors(&value)
            .map(|e| ConfigError::at(&shown, e.instance_path().to_string(), e.to_string()))
            .collect();
        if !errs.is_empty() {
            self.errors.extend(errs);
            return None;
        }
        value.as_object().cloned()
    }

    fn schema(&mut self, src: &SchemaSource, pointer: String) -> Option<Arc<Value>> {
        match src {
            SchemaSource::Inline(map) => {
                let v = Value::Object(map.clone());
                self.check_schema(&v, pointer).then(|| Arc::new(v))
            }
            SchemaSource::Path(rel) => {
                let key = self.base_dir.join(rel);
                if let Some(cached) = self.schema_cache.get(&key) {
                    return cached.clone();
                }
                let result = match self.read_json(rel) {
                    Ok(v) => self.check_schema(&v, pointer).then(|| Arc::new(v)),
                    Err(e) => {
                        self.err(pointer, format!("schema file {rel:?}: {}", e.message));
                        None
                    }
                };
                self.schema_cache.insert(key, result.clone());
                result
            }
        }
    }

    fn check_schema(&mut self, schema: &Value, pointer: String) -> bool {
        match compile_schema(schema) {
            Ok(_) => true,
            Err(e) => {
                self.err(pointer, format!("not a valid JSON Schema: {e}"));
                false
            }
        }
    }

    fn interpolate(&mut self, text: &str, pointer: &str) -> String {
        let mut missing = Vec::new();
        let mut secrets = Vec::new();
        let out = ENV_REF.replace_all(text, |caps: &regex::Captures<'_>| match (self.env)(&caps[1]) {
            Some(v) => {
                secrets.push(v.clone());
                v
            }
            None => {
                missing.push(caps[1].to_string());
                String::new()
            }
        });
        for name in missing {
            self.err(pointer.to_string(), format!("environment variable {name} is not set"));
        }
        self.secrets.extend(secrets);
        self.hasher.update(out.as_bytes());
        out.into_owned()
    }

    /// Checks `auth` as a whole (mode-specific fields present, URLs, CIDRs, header names) and
    /// reads the JWT key from the environment.
    fn auth(&mut self, auth: &AuthSettings) -> Option<super::AuthKey> {
        let th = &auth.trusted_header;
        for (i, cidr) in th.trusted_proxies.iter().enumerate() {
            if parse_cidr(cidr).is_none() {
                self.err(
                    format!("/auth/trusted_header/trusted_proxies/{i}"),
                    format!("{cidr:?} is not a CIDR or an IP address"),
                );
            }
        }
        for (field, name) in [("user_header", Some(&th.user_header)), ("scopes_header", th.scopes_header.as_ref())] {
            if name.is_some_and(|n| reqwest::header::HeaderName::from_bytes(n.as_bytes()).is_err()) {
                self.err(format!("/auth/trusted_header/{field}"), format!("{name:?} is not a valid header name"));
            }
        }
        if auth.mode == AuthMode::TrustedHeader && th.trusted_proxies.is_empty() {
            self.err(
                "/auth/trusted_header/trusted_proxies".into(),
                "mode trusted_header needs at least one trusted proxy CIDR",
            );
        }
        let jwt = &auth.jwt;
        if let Some(url) = &jwt.jwks_url {
            if !reqwest::Url::parse(url).is_ok_and(|u| matches!(u.scheme(), "http" | "https")) {
                self.err("/auth/jwt/jwks_url".into(), format!("{url:?} is not an http(s) URL"));
            }
        }
        let sources = [jwt.jwks_url.is_some(), jwt.secret_env.is_some(), jwt.public_key_env.is_some()];
        let mut key = None;
        for (field, var, hmac) in
            [("secret_env", &jwt.secret_env, true), ("public_key_env", &jwt.public_key_env, false)]
        {
            let Some(var) = var else { continue };
            match (self.env)(var).filter(|v| !v.trim().is_empty()) {
                Some(value) => {
                    self.secrets.push(value.clone());
                    key = Some(if hmac { super::AuthKey::Hmac(value) } else { super::AuthKey::Pem(value) });
                }
                None if auth.mode == AuthMode::Jwt => {
                    self.err(format!("/auth/jwt/{field}"), format!("environment variable {var} is not set"));
                }
                None => {}
            }
        }
        if auth.mode == AuthMode::Jwt {
            if sources.iter().filter(|s| **s).count() != 1 {
                self.err("/auth/jwt".into(), "mode jwt needs exactly one of jwks_url, secret_env, public_key_env");
            }
            for (field, v) in [("issuer", &jwt.issuer), ("audience", &jwt.audience)] {
                if v.as_deref().is_none_or(|v| v.trim().is_empty()) {
                    self.err(
                        format!("/auth/jwt/{field}"),
                        format!("mode jwt needs {field} (the token's required {field})"),
                    );
                }
            }
        }
        key
    }

    /// Every injection pattern must compile.
    fn guardrails(&mut self, g: &GuardrailSettings) {
        for (field, list) in
            [("injection_patterns", &g.injection_patterns), ("extra_injection_patterns", &g.extra_injection_patterns)]
        {
            for (i, pat) in list.iter().enumerate() {
                if let Err(e) = regex::RegexBuilder::new(pat).case_insensitive(true).build() {
                    self.err(format!("/guardrails/{field}/{i}"), format!("invalid regex: {e}"));
                }
            }
        }
    }

    /// `forward_user_token` sends the caller's `Authorization`: the card may not set its own.
    fn forwarding(&mut self, agent: &CapabilityCardSpec, p: &str) {
        if agent.forward_user_token && agent.endpoint.headers.keys().any(|h| h.eq_ignore_ascii_case("authorization")) {
            self.err(
                format!("{p}/forward_user_token"),
                "forward_user_token sends the caller's Authorization header: remove endpoint.headers.Authorization",
            );
        }
    }

    fn agents(&mut self, file: &ConfigFile, widgets: Option<&Map<String, Value>>) -> Vec<Option<ResolvedCard>> {
        let mut seen: HashSet<&str> = HashSet::new();
        let default_timeout = file.supervisor.default_agent_timeout.0;
        let mut out = Vec::with_capacity(file.agents.len());
        for (i, agent) in file.agents.iter().enumerate() {
            let p = format!("/agents/{i}");
            if !seen.insert(&agent.id) {
                self.err(format!("{p}/id"), format!("duplicate agent id {:?}", agent.id));
            }
            let before = self.errors.len();
            let url = self.endpoint_url(agent, &p);
            let headers = self.endpoint_headers(agent, &p);
            self.forwarding(agent, &p);
            let a2a = agent.endpoint.protocol == super::model::Protocol::A2a;
            let any_object = || Some(Arc::new(json!({ "type": "object" })));
            let mut schema_of = |src: &Option<SchemaSource>, field: &str| match src {
                Some(src) => self.schema(src, format!("{p}/{field}")),
                None if a2a => any_object(),
                None => {
                    self.err(p.clone(), format!("{field} is required (only a2a agents may omit it)"));
                    None
                }
            };
            let input = schema_of(&agent.input_schema, "input_schema");
            let output = schema_of(&agent.output_schema, "output_schema");
            if !a2a {
                for (field, value) in [("name", &agent.name), ("description", &agent.description)] {
                    if value.trim().is_empty() {
                        self.err(
                            p.clone(),
                            format!("{field} is required (only a2a agents registered by card may omit it)"),
                        );
                    }
                }
            }
            self.keys(file, agent, &p, input.as_deref(), widgets);
            if let Some(output) = output.as_deref() {
                self.produces(agent, &p, output);
            }
            let ok = self.errors.len() == before;
            out.push(match (ok, url, input, output) {
                (true, Some(url), Some(input_schema), Some(output_schema)) => Some(ResolvedCard {
                    spec: agent.clone(),
                    url,
                    headers,
                    timeout: agent.endpoint.timeout.map_or(default_timeout, |t| t.0),
                    input_schema,
                    output_schema,
                    unavailable: None,
                }),
                _ => None,
            });
        }
        out
    }

    /// The agent's `endpoint.url` (interpolated): an http(s) URL with a host; at `{p}/endpoint/url`.
    fn endpoint_url(&mut self, agent: &CapabilityCardSpec, p: &str) -> Option<reqwest::Url> {
        let url = self.interpolate(&agent.endpoint.url, &format!("{p}/endpoint/url"));
        match reqwest::Url::parse(&url) {
            Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => Some(u),
            Ok(u) => {
                self.err(format!("{p}/endpoint/url"), format!("scheme {:?} is not http or https", u.scheme()));
                None
            }
            Err(e) => {
                self.err(format!("{p}/endpoint/url"), format!("not a URL: {e}"));
                None
            }
        }
    }

    /// The agent's `endpoint.headers` (values interpolated), each a valid HTTP header; at
    /// `{p}/endpoint/headers/{name}`.
    fn endpoint_headers(&mut self, agent: &CapabilityCardSpec, p: &str) -> Vec<(String, String)> {
        let mut headers = Vec::new();
        for (name, value) in &agent.endpoint.headers {
            let hp = format!("{p}/endpoint/headers/{name}");
            let value = self.interpolate(value, &hp);
            if reqwest::header::HeaderName::from_bytes(name.as_bytes()).is_err() {
                self.err(hp.clone(), format!("{name:?} is not a valid header name"));
            }
            if reqwest::header::HeaderValue::from_str(&value).is_err() {
                self.err(hp, "the value (after interpolation) is not a valid header value");
            }
            headers.push((name.clone(), value));
        }
        headers
    }

    /// Every key of the agent's `produces` is a property of its output schema (when the schema
    /// lists properties); at `{p}/produces/{j}`.
    fn produces(&mut self, agent: &CapabilityCardSpec, p: &str, output: &Value) {
        let props = output.get("properties").and_then(Value::as_object);
        for (j, key) in agent.produces.iter().enumerate() {
            if props.is_some_and(|props| !props.contains_key(key)) {
                self.err(format!("{p}/produces/{j}"), format!("{key:?} is not a property of the output schema"));
            }
        }
    }

    fn keys(
        &mut self,
        file: &ConfigFile,
        agent: &CapabilityCardSpec,
        p: &str,
        input: Option<&Value>,
        widgets: Option<&Map<String, Value>>,
    ) {
        let props = input.and_then(|s| s.get("properties")).and_then(Value::as_object);
        let mut seen = HashSet::new();
        for (j, k) in agent.required_semantic_keys.iter().enumerate() {
            let kp = format!("{p}/required_semantic_keys/{j}");
            if !seen.insert(k.key.as_str()) {
                self.err(format!("{kp}/key"), format!("duplicate semantic key {:?}", k.key));
            }
            if agent.input_schema.is_some() && input.is_some() && !props.is_some_and(|props| props.contains_key(&k.key))
            {
                self.err(format!("{kp}/key"), format!("{:?} is not a property of the agent's input schema", k.key));
            }
            if let (Some(w), Some(widgets)) = (k.widget.as_deref(), widgets) {
                if !w.is_empty() && !widgets.contains_key(w) {
                    self.err(format!("{kp}/widget"), format!("widget {w:?} is not in {}", file.widgets_map));
                }
            }
            if let Some(x) = &k.extract {
                let set = [x.kind.is_some(), x.pattern.is_some(), x.values.is_some(), x.values_from.is_some()];
                if set.iter().filter(|s| **s).count() != 1 {
                    self.err(format!("{kp}/extract"), "give exactly one of type, pattern, values, values_from");
                }
                if let Some(pat) = &x.pattern {
                    match Regex::new(pat) {
                        Ok(re) if re.captures_len() == 2 => {}
                        Ok(_) => {
                            self.err(format!("{kp}/extract/pattern"), "the pattern needs exactly one capture group")
                        }
                        Err(e) => self.err(format!("{kp}/extract/pattern"), format!("invalid regex: {e}")),
                    }
                }
                let dated = matches!(x.kind, Some(ValueType::Date | ValueType::Datetime));
                if x.not_before.is_some() && !dated {
                    self.err(format!("{kp}/extract/not_before"), "not_before needs type: date or type: datetime");
                }
                if let Some(list) = &x.values_from {
                    if !file.lists.contains_key(list) {
                        self.err(format!("{kp}/extract/values_from"), format!("no list {list:?} under lists:"));
                    }
                }
            }
        }
    }
}

/// A CIDR (`10.0.0.0/8`) or a single address (`127.0.0.1`, taken as `/32` or `/128`).
pub fn parse_cidr(text: &str) -> Option<ipnet::IpNet> {
    let text = text.trim();
    text.parse::<ipnet::IpNet>().ok().or_else(|| text.parse::<std::net::IpAddr>().ok().map(ipnet::IpNet::from))
}

/// Best-effort JSON Schema for a set of semantic keys: `{"type":"object","properties":{..},
/// "required":[..]}` with each key's property schema taken from `input_schema` (used for
/// validation of single values and by frontends).
pub fn key_subschema(input_schema: &Value, keys: &[&str]) -> Value {
    let props = input_schema.get("properties").and_then(Value::as_object);
    let mut out = Map::new();
    for key in keys {
        let prop = props.and_then(|p| p.get(*key)).cloned().unwrap_or(json!({}));
        out.insert((*key).to_string(), prop);
    }
    let mut schema = json!({ "type": "object", "properties": out, "required": keys });
    for defs in ["$defs", "definitions"] {
        if let Some(d) = input_schema.get(defs) {
            schema[defs] = d.clone();
        }
    }
    schema
}
