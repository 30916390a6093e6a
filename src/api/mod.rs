//! The HTTP API (docs/http-api.md): [`router`] builds the axum app from an [`AppState`], so
//! tests serve it on a real listener exactly as `switchboard serve` does.
//!
//! Only this module knows HTTP: status codes, JSON error bodies ([`error::ApiError`]), SSE framing.

pub mod a2a;
pub mod agui;
pub mod chat;
pub mod error;
pub mod identity;
pub mod limits;
pub mod web;
pub mod wire;

use std::sync::Arc;

use axum::extract::{DefaultBodyLimit, Path, Query, State};
use axum::http::{header, HeaderMap};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};

use crate::registry::{Registry, ReloadOutcome};
use crate::reload::Reloader;
use crate::supervisor::Supervisor;
use error::ApiError;

/// Largest request body, in bytes.
pub const MAX_BODY_BYTES: usize = 256 * 1024;

/// What every handler can reach.
#[derive(Clone)]
pub struct AppState {
    /// The pipeline.
    pub supervisor: Supervisor,
    /// The reload loop.
    pub reloader: Reloader,
    /// Bearer token for `/v1/admin/*`; admin endpoints answer 403 when unset.
    pub admin_token: Option<Arc<str>>,
    /// Tasks of the supervisor's own A2A endpoint.
    pub a2a_tasks: Arc<a2a::A2aTasks>,
    /// Load shedding and per-user rate.
    pub limits: Arc<limits::Limits>,
    /// Cancelled when the drain deadline of a shutdown passes: open streams then end with an
    /// `error` done event.
    pub shutdown: tokio_util::sync::CancellationToken,
    /// Allowed CORS origins (`*` = any); empty = no CORS headers.
    pub cors_origins: Arc<[String]>,
    /// Verifies callers (`auth`); holds the JWKS cache.
    pub auth: Arc<crate::auth::Authenticator>,
}

/// The API router.
pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/v1/chat", post(chat::chat))
        .route("/v1/ag-ui", post(agui::run))
        .route("/.well-known/agent-card.json", get(a2a::agent_card))
        .route("/a2a", post(a2a::rpc))
        .route("/v1/agents", get(agents))
        .route("/v1/widgets", get(widgets))
        .route("/v1/config", get(config_status))
        .route("/v1/config/validate", post(validate_config))
        .route("/v1/admin/reload", post(admin_reload))
        .route("/v1/sessions/{thread_id}", get(get_session).delete(delete_session))
        .route("/healthz", get(|| async { Json(json!({ "status": "ok" })) }))
        .route("/metrics", get(metrics))
        .route("/readyz", get(readyz))
        .route("/", get(web::index))
        .route("/ops", get(web::ops))
        .route("/web/{name}", get(web::asset))
        .fallback(|| async { ApiError::NotFound("no such endpoint".into()) })
        .method_not_allowed_fallback(|| async { ApiError::MethodNotAllowed })
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(axum::middleware::from_fn(error::limit_headers))
        .layer(axum::middleware::map_response(error::json_errors))
        .layer(cors(&state.cors_origins))
        .with_state(state)
}

/// CORS for the configured origins (`*` = any); no headers when none are configured.
fn cors(origins: &[String]) -> tower_http::cors::CorsLayer {
    use tower_http::cors::{AllowOrigin, Any, CorsLayer};
    if origins.is_empty() {
        return CorsLayer::new();
    }
    let allow = if origins.iter().any(|o| o == "*") {
        AllowOrigin::any()
    } else {
        AllowOrigin::list(origins.iter().filter_map(|o| o.parse().ok()))
    };
    CorsLayer::new().allow_origin(allow).allow_methods(Any).allow_headers(Any).expose_headers(Any)
}

async fn metrics(State(state): State<AppState>) -> impl axum::response::IntoResponse {
    let reg = state.supervisor.registry.load();
    let breakers = &state.supervisor.executor.dispatcher().breakers;
    let circuits: Vec<(String, f64)> = reg
        .agents()
        .iter()
        .map(|a| {
            let value = match breakers.state(a.id(), &reg.settings.circuit_breaker) {
                crate::dispatch::breaker::CircuitState::Closed => 0.0,
                crate::dispatch::breaker::CircuitState::HalfOpen => 1.0,
                crate::dispatch::breaker::CircuitState::Open => 2.0,
            };
            (a.spec.id.to_string(), value)
        })
        .collect();
    crate::metrics::config_version(reg.version);
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], crate::metrics::render(&circuits))
}

/// A capability card as shown by the API: everything but secrets (headers, interpolated URL).
fn card(state: &AppState, reg: &Registry, agent: &crate::registry::CapabilityCard) -> Value {
    let circuit = state.supervisor.executor.dispatcher().breakers.state(agent.id(), &reg.settings.circuit_breaker);
    let s = &agent.spec;
    let mut card = json!({
        "id": s.id,
        "name": s.name.as_str(),
        "description": s.description.as_str(),
        "domain": s.domain,
        "enabled": s.enabled,
        "available": agent.unavailable.is_none(),
        "circuit": circuit,
        "unavailable_reason": agent.unavailable,
        "endpoint": {
            "url": s.endpoint.url,
            "protocol": s.endpoint.protocol,
            "timeout_ms": agent.timeout.as_millis() as u64,
            "retries": s.endpoint.retries,
        },
        "keywords": s.keywords,
        "examples": s.examples,
        "input_schema": *agent.input_schema,
        "output_schema": *agent.output_schema,
        "required_semantic_keys": s.required_semantic_keys.iter().map(|k| json!({
            "key": k.key,
            "description": k.description,
            "widget": k.widget.clone().unwrap_or_default(),
            "widget_descriptor": k.widget.as_deref().and_then(|w| reg.widgets.get(w)),
            "example": k.example,
        })).collect::<Vec<_>>(),
        "produces": s.produces,
    });
    // Per-language texts (extension): `name` / `description` stay the plain (primary) strings.
    if !s.name.translations().is_empty() {
        card["names"] = json!(s.name.translations());
    }
    if !s.description.translations().is_empty() {
        card["descriptions"] = json!(s.description.translations());
    }
    card
}

async fn agents(State(state): State<AppState>) -> Json<Value> {
    let reg = state.supervisor.registry.load();
    let agents: Vec<Value> = reg.agents().iter().map(|a| card(&state, &reg, a)).collect();
    Json(json!({ "version": reg.version, "hash": reg.hash, "agents": agents }))
}

async fn widgets(State(state): State<AppState>) -> Json<Value> {
    Json(Value::Object((*state.supervisor.registry.load().widgets).clone()))
}

async fn config_status(State(state): State<AppState>) -> Json<Value> {
    let reg = state.supervisor.registry.load();
    let status = state.supervisor.registry.status();
    Json(json!({
        "version": reg.version,
        "hash": reg.hash,
        "loaded_at": chrono::DateTime::<chrono::Utc>::from(reg.loaded_at).to_rfc3339(),
        "path": reg.path.display().to_string(),
        "agents": reg.agents().len(),
        "enabled_agents": reg.enabled().count(),
        "watching_files": state.reloader.watching(),
        "reloads_ok": status.reloads_ok,
        "reloads_failed": status.reloads_failed,
        "last_attempt_at": status.last_attempt_at,
        "last_error": status.last_error,
        "session_store": state.supervisor.sessions.kind(),
        "llm": state.supervisor.llm.as_ref().map(|l| l.stats()),
    }))
}

/// Validates a candidate config (YAML in the body) as if it replaced the serving file: relative
/// paths resolve against the serving config's directory. Applies nothing.
async fn validate_config(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: String,
) -> Result<Json<Value>, ApiError> {
    check_admin(&state, &headers)?;
    let reg = state.supervisor.registry.load();
    let base = reg.path.parent().map(std::path::Path::to_path_buf).unwrap_or_default();
    let path = reg.path.clone();
    let result = tokio::task::spawn_blocking(move || {
        crate::config::load_from_str(&body, &path, &base, &|name| std::env::var(name).ok()).map(|c| c.agents.len())
    })
    .await
    .map_err(|_| ApiError::Unavailable("validation failed to run".into()))?;
    match result {
        Ok(agents) => Ok(Json(json!({ "valid": true, "agents": agents }))),
        Err(errors) => Err(ApiError::InvalidConfig(errors.0)),
    }
}

fn check_admin(state: &AppState, headers: &HeaderMap) -> Result<(), ApiError> {
    let Some(token) = state.admin_token.as_deref() else {
        return Err(ApiError::Forbidden("admin endpoints are disabled: set SWITCHBOARD_ADMIN_TOKEN".into()));
    };
    let given = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(crate::auth::bearer_token);
    match given {
        Some(g) if constant_time_eq(g.as_bytes(), token.as_bytes()) => Ok(()),
        _ => Err(ApiError::Unauthorized),
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

async fn admin_reload(State(state): State<AppState>, headers: HeaderMap) -> Result<Json<ReloadOutcome>, ApiError> {
    check_admin(&state, &headers)?;
    state
        .reloader
        .reload("admin")
        .await
        .map(Json)
        .ok_or_else(|| ApiError::Unavailable("the reload loop stopped".into()))
}

async fn readyz(State(state): State<AppState>) -> Json<Value> {
    let reg = state.supervisor.registry.load();
    Json(json!({ "status": "ready", "version": reg.version, "agents": reg.enabled().count() }))
}

/// `?user_id=…` of the session endpoints.
#[derive(Debug, serde::Deserialize)]
struct SessionQuery {
    user_id: Option<String>,
}

/// The owner of a session request: the verified caller (a `user_id` that differs is 403), else
/// the `user_id` query parameter.
async fn owner(
    state: &AppState,
    headers: &HeaderMap,
    client: limits::ClientAddr,
    q: SessionQuery,
) -> Result<String, ApiError> {
    let principal = identity::verify(state, headers, client).await?;
    identity::acting_user(principal.as_deref(), [q.user_id.as_deref()])?
        .ok_or_else(|| ApiError::bad_request("missing_user_id", "`user_id` query parameter is required"))
}

fn store_error(e: crate::session::StoreError) -> ApiError {
    tracing::error!(error = %e, "session store failed");
    ApiError::Unavailable("the session store is unavailable".into())
}

/// The session of `thread_id` owned by `user_id`: history, slots, pending clarification (with
/// its expiry), failure count. Another user's thread is 404.
async fn get_session(
    State(state): State<AppState>,
    client: limits::ClientAddr,
    headers: HeaderMap,
    Path(thread_id): Path<String>,
    Query(q): Query<SessionQuery>,
) -> Result<Json<Value>, ApiError> {
    let user_id = owner(&state, &headers, client, q).await?;
    match state.supervisor.sessions.peek(&user_id, &thread_id).await.map_err(store_error)? {
        Some(session) => Ok(Json(serde_json::to_value(session).unwrap_or_default())),
        None => Err(ApiError::NotFound(format!("no session {thread_id:?} for this user"))),
    }
}

/// Cancels the pending work of `thread_id`; returns the dropped sub-tasks.
async fn delete_session(
    State(state): State<AppState>,
    client: limits::ClientAddr,
    headers: HeaderMap,
    Path(thread_id): Path<String>,
    Query(q): Query<SessionQuery>,
) -> Result<Json<Value>, ApiError> {
    let user_id = owner(&state, &headers, client, q).await?;
    match state.supervisor.cancel_pending(&user_id, &thread_id).await.map_err(store_error)? {
        Some(dropped) => Ok(Json(json!({ "thread_id": thread_id, "cancelled": dropped }))),
        None => Err(ApiError::NotFound(format!("no session {thread_id:?} for this user"))),
    }
}
