//! Wiring: build the application state from a config path, serve it, run the demo.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use tokio::net::TcpListener;

use crate::api::{self, AppState};
use crate::config::ConfigErrors;
use crate::reload::{self, ReloadError};
use crate::session::{open_backend, SessionStore, StoreError};
use crate::supervisor::Supervisor;

/// Why the service could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The config is invalid.
    #[error(transparent)]
    Config(#[from] ConfigErrors),
    /// Hot reload could not start.
    #[error(transparent)]
    Reload(#[from] ReloadError),
    /// The session store could not be opened.
    #[error("session store: {0}")]
    Store(#[from] StoreError),
    /// A listener could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        /// The address.
        addr: String,
        /// The OS error.
        source: std::io::Error,
    },
}

/// Options of [`build_state`].
#[derive(Debug, Clone)]
pub struct AppOptions {
    /// Session store URL: `memory://`, `sqlite://PATH`, `redis://HOST:PORT`.
    pub store: String,
    /// Sessions expire this long after their last turn.
    pub session_ttl: std::time::Duration,
    /// The model for LLM mode (`None`: rule planner only).
    pub llm: Option<crate::llm::LlmSettings>,
    /// Turns open at once before new ones get 503 + `Retry-After`.
    pub max_concurrent_requests: usize,
    /// Turns a minute per user before 429 + `Retry-After` (0 = unlimited).
    pub user_rate_per_minute: u32,
    /// Allowed CORS origins (`*` = any; empty = no CORS headers).
    pub cors_origins: Vec<String>,
    /// Reload when the config files change. `SIGHUP` and `POST /v1/admin/reload` reload either
    /// way.
    pub watch_files: bool,
    /// Bearer token of `/v1/admin/*` (`SWITCHBOARD_ADMIN_TOKEN`).
    pub admin_token: Option<String>,
}

impl Default for AppOptions {
    /// In-memory sessions (24 h), no file watching, no admin token.
    fn default() -> Self {
        Self {
            store: "memory://".into(),
            session_ttl: std::time::Duration::from_secs(24 * 3600),
            llm: None,
            max_concurrent_requests: 1024,
            user_rate_per_minute: 0,
            cors_origins: Vec::new(),
            watch_files: false,
            admin_token: None,
        }
    }
}

/// Loads the config at `config`, opens the session store, starts the reload loop and builds the
/// state `api::router` serves. Call from within a Tokio runtime.
///
/// # Errors
/// [`StartError::Config`] with every config error; [`StartError::Store`] when the session store
/// cannot be opened; [`StartError::Reload`] if watching fails.
pub async fn build_state(config: &Path, opts: AppOptions) -> Result<AppState, StartError> {
    let registry = Arc::new(reload::snapshot::open(config).await?);
    let backend = open_backend(&opts.store).await?;
    let sessions = Arc::new(SessionStore::new(backend, opts.session_ttl));
    let reloader = reload::spawn(registry.clone(), config.to_path_buf(), opts.watch_files)?;
    let supervisor = Supervisor::new(registry, sessions).with_llm(opts.llm);
    Ok(AppState {
        reloader,
        admin_token: opts.admin_token.filter(|t| !t.is_empty()).map(Into::into),
        a2a_tasks: Arc::default(),
        limits: Arc::new(crate::api::limits::Limits::new(opts.max_concurrent_requests, opts.user_rate_per_minute)),
        shutdown: supervisor.shutdown.clone(),
        cors_origins: opts.cors_origins.into(),
        supervisor,
    })
}

/// After the drain deadline of a shutdown, at most this long passes before [`serve`] returns:
/// cut-off turns save their sessions, the last connections close.
pub const EXIT_MARGIN: std::time::Duration = std::time::Duration::from_secs(2);

/// Serves `state` on `listener` until `shutdown` resolves, then drains, bounded as a whole: no new
/// connections; open streams and running turns may finish for up to `drain`; at that deadline
/// the streams still open end with an `error` done event (`shutting_down`) and the turns still
/// running are cut off, saving what they have (a history entry marked `interrupted`; the rest of
/// the session as it was). `serve` returns by `drain` + [`EXIT_MARGIN`] after the signal,
/// whatever is still open. Accepted connections get `TCP_NODELAY`: stage events are small writes
/// that must not wait for Nagle's algorithm.
///
/// # Errors
/// The server's IO error.
pub async fn serve(
    listener: TcpListener,
    state: AppState,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    drain: std::time::Duration,
) -> std::io::Result<()> {
    let token = state.shutdown.clone();
    let turns = state.supervisor.turns.clone();
    let (deadline_tx, mut deadline_rx) = tokio::sync::watch::channel(None::<tokio::time::Instant>);
    let signal = {
        let token = token.clone();
        async move {
            shutdown.await;
            let deadline = tokio::time::Instant::now() + drain;
            tracing::info!(?drain, "shutting down: draining open streams and turns");
            let _ = deadline_tx.send(Some(deadline));
            tokio::spawn(async move {
                tokio::time::sleep_until(deadline).await;
                token.cancel();
            });
        }
    };
    let server = std::future::IntoFuture::into_future(
        axum::serve(nodelay(listener), api::router(state)).with_graceful_shutdown(signal),
    );
    // The server returns once every connection is closed; a connection that stays open past the
    // deadline (a client that does not read) does not hold the exit back.
    let exit_by = async {
        // The watch guard is gone before the next await (the future must be Send).
        let deadline = deadline_rx.wait_for(Option::is_some).await.ok().and_then(|d| *d);
        let Some(deadline) = deadline else { return std::future::pending().await };
        tokio::time::sleep_until(deadline + EXIT_MARGIN).await;
    };
    let result = tokio::select! {
        result = server => result,
        () = exit_by => {
            tracing::warn!("connections still open at the exit deadline");
            Ok(())
        }
    };
    let signalled = *deadline_rx.borrow();
    let deadline = signalled.unwrap_or_else(|| {
        // The server stopped without a shutdown signal (an IO error): cut the turns now.
        token.cancel();
        tokio::time::Instant::now()
    });
    turns.close();
    // Turns cut off at the deadline save their sessions within the margin.
    if tokio::time::timeout_at(deadline.max(tokio::time::Instant::now()) + EXIT_MARGIN, turns.wait()).await.is_err() {
        tracing::warn!("turns still running at exit");
    }
    token.cancel();
    result
}

/// `listener` with `TCP_NODELAY` set on every accepted connection.
pub fn nodelay(listener: TcpListener) -> impl axum::serve::Listener<Io = tokio::net::TcpStream, Addr = SocketAddr> {
    use axum::serve::ListenerExt;
    listener.tap_io(|tcp| {
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::trace!(error = %e, "cannot set TCP_NODELAY");
        }
    })
}

/// Binds `addr`.
///
/// # Errors
/// [`StartError::Listen`].
pub async fn bind(addr: &str) -> Result<TcpListener, StartError> {
    TcpListener::bind(addr).await.map_err(|source| StartError::Listen { addr: addr.to_string(), source })
}

/// Starts the sample sub-agents a config points at: every agent whose id is a sample's and whose
/// URL is on a loopback address gets that sample served on the URL's port. Feature `demo`.
///
/// # Errors
/// [`StartError::Listen`] when a port is taken.
#[cfg(feature = "demo")]
pub async fn spawn_demo_agents(state: &AppState) -> Result<Vec<switchboard_demo::SampleAgentHandle>, StartError> {
    use switchboard_demo::{spawn_sample_agent, SampleAgentKind, SampleOptions};
    let reg = state.supervisor.registry.load();
    let mut handles = Vec::new();
    for agent in reg.agents() {
        let Some(kind) = SampleAgentKind::from_agent_id(agent.id()) else { continue };
        let (Some(host), Some(port)) = (agent.url.host_str(), agent.url.port_or_known_default()) else { continue };
        if !matches!(host, "127.0.0.1" | "localhost" | "[::1]") {
            continue;
        }
        let addr = format!("{host}:{port}");
        let listener = bind(&addr).await?;
        handles.push(spawn_sample_agent(kind, listener, SampleOptions::default()).await);
    }
    Ok(handles)
}

/// The address a listener is bound to, for log lines.
pub fn local_addr(listener: &TcpListener) -> Option<SocketAddr> {
    listener.local_addr().ok()
}

/// Resolves on Ctrl-C or `SIGTERM`.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        if let Ok(mut s) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            s.recv().await;
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
}
