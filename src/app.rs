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
    /// Turns a minute per client address before 429 + `Retry-After` (0 = unlimited; needs
    /// [`serve`], which knows the address).
    pub address_rate_per_minute: u32,
    /// Allowed CORS origins (`*` = any; empty = no CORS headers).
    pub cors_origins: Vec<String>,
    /// Reload when the config files change. `SIGHUP` and `POST /v1/admin/reload` reload either
    /// way.
    pub watch_files: bool,
    /// Bearer token of `/v1/admin/*` (`SWITCHBOARD_ADMIN_TOKEN`).
    pub admin_token: Option<String>,
    /// Agent endpoints moved after every load (`demo --agents-port-base`); `None` keeps the
    /// config's.
    pub endpoints: Option<reload::snapshot::EndpointOverride>,
    /// A fixed date for every turn's relative dates and `not_before: today` (tests; `None`: the
    /// clock's date in `supervisor.timezone`).
    pub today: Option<chrono::NaiveDate>,
    /// `auth` values given on the command line / in the environment, replacing the file's.
    pub auth: crate::config::AuthOverrides,
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
            address_rate_per_minute: 0,
            cors_origins: Vec::new(),
            watch_files: false,
            admin_token: None,
            endpoints: None,
            today: None,
            auth: crate::config::AuthOverrides::default(),
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
    let registry = Arc::new(reload::snapshot::open_with(config, opts.endpoints.as_ref(), &opts.auth).await?);
    let backend = open_backend(&opts.store).await?;
    let sessions = Arc::new(SessionStore::new(backend, opts.session_ttl));
    let reloader = reload::spawn(registry.clone(), config.to_path_buf(), opts.watch_files, opts.endpoints)?;
    let supervisor = Supervisor::new(registry, sessions).with_llm(opts.llm).with_today(opts.today);
    Ok(AppState {
        reloader,
        admin_token: opts.admin_token.filter(|t| !t.is_empty()).map(Into::into),
        a2a_tasks: Arc::default(),
        limits: Arc::new(
            crate::api::limits::Limits::new(opts.max_concurrent_requests, opts.user_rate_per_minute)
                .with_address_rate(opts.address_rate_per_minute),
        ),
        shutdown: supervisor.shutdown.clone(),
        cors_origins: opts.cors_origins.into(),
        auth: Arc::default(),
        supervisor,
    })
}

/// After the drain deadline of a shutdown, at most this long passes before [`serve`] returns:
/// cut-off turns save their sessions, the last connections close.
pub const EXIT_MARGIN: std::time::Duration = std::time::Duration::from_secs(2);

/// How [`serve`] treats connections and shutdown.
#[derive(Debug, Clone, Copy)]
pub struct ServeOptions {
    /// On shutdown, how long open streams and turns may finish.
    pub drain: std::time::Duration,
    /// A client must send a request's whole head within this time (HTTP/1), or the connection is
    /// closed: also the limit for an idle keep-alive connection to start its next request and for
    /// a new connection to show its protocol (HTTP/1, or the whole HTTP/2 preface). On HTTP/2, a
    /// ping goes out after this long without a frame from the client and must be answered within
    /// it.
    pub header_read_timeout: std::time::Duration,
    /// A request body must arrive within this time, or the request fails (408).
    pub body_read_timeout: std::time::Duration,
    /// Connections open at once from one client address; more are closed at once.
    pub max_connections_per_address: usize,
}

impl Default for ServeOptions {
    fn default() -> Self {
        Self {
            drain: std::time::Duration::from_secs(10),
            header_read_timeout: std::time::Duration::from_secs(10),
            body_read_timeout: std::time::Duration::from_secs(30),
            max_connections_per_address: 256,
        }
    }
}

/// Open connections per client address; a slot is given back when its connection ends.
#[derive(Debug, Default)]
struct PerAddress(std::sync::Mutex<std::collections::HashMap<std::net::IpAddr, usize>>);

struct Slot(Arc<PerAddress>, std::net::IpAddr);

impl PerAddress {
    fn take(this: &Arc<Self>, ip: std::net::IpAddr, max: usize) -> Option<Slot> {
        let mut map = this.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let n = map.entry(ip).or_default();
        if *n >= max {
            return None;
        }
        *n += 1;
        Some(Slot(this.clone(), ip))
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut map = (self.0).0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(n) = map.get_mut(&self.1) {
            *n -= 1;
            if *n == 0 {
                map.remove(&self.1);
            }
        }
    }
}

/// Serves `state` on `listener` until `shutdown` resolves, then drains, bounded as a whole: no new
/// connections; open streams and running turns may finish for up to `opts.drain`; at that
/// deadline the streams still open end with an `error` done event (`shutting_down`) and the turns
/// still running are cut off, saving what they have (a history entry marked `interrupted`; the
/// rest of the session as it was). `serve` returns by `drain` + [`EXIT_MARGIN`] after the signal,
/// whatever is still open.
///
/// Slow clients are bounded too: a request head must arrive within `header_read_timeout`, a body
/// within `body_read_timeout`, and one client address may hold `max_connections_per_address`
/// connections. Accepted connections get `TCP_NODELAY`: stage events are small writes that must
/// not wait for Nagle's algorithm.
///
/// # Errors
/// The listener's IO error.
pub async fn serve(
    listener: TcpListener,
    state: AppState,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    opts: ServeOptions,
) -> std::io::Result<()> {
    let token = state.shutdown.clone();
    let turns = state.supervisor.turns.clone();
    let connections = Connections::new(state, opts);
    connections.accept_until(listener, shutdown).await;
    drain(connections.graceful, token, turns, opts.drain).await;
    Ok(())
}

/// The accepted connections of [`serve`]: how each is served and how they are drained.
struct Connections {
    /// The API with the body read timeout.
    router: axum::Router,
    /// hyper's HTTP/1 + HTTP/2 connection builder with the header limits and timer.
    builder: hyper_util::server::conn::auto::Builder<hyper_util::rt::TokioExecutor>,
    graceful: hyper_util::server::graceful::GracefulShutdown,
    per_address: Arc<PerAddress>,
    opts: ServeOptions,
}

impl Connections {
    fn new(state: AppState, opts: ServeOptions) -> Self {
        use hyper_util::rt::{TokioExecutor, TokioTimer};
        let router =
            api::router(state).layer(tower_http::timeout::RequestBodyTimeoutLayer::new(opts.body_read_timeout));
        let mut builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
        // The parser's own header limits sit above the router's (api::error::MAX_HEADERS), which
        // answer with the JSON error; past them api::wire::JsonParseErrors rewrites the parser's
        // empty 431 (and 400 / 414) to the JSON error.
        builder.http1().timer(TokioTimer::new()).header_read_timeout(opts.header_read_timeout).max_headers(512);
        // HTTP/2 has no header timeout: a connection that does not answer a ping within the
        // header timeout (one that sends nothing, or a frame a byte at a time) is closed.
        builder
            .http2()
            .timer(TokioTimer::new())
            .keep_alive_interval(opts.header_read_timeout)
            .keep_alive_timeout(opts.header_read_timeout);
        Self {
            router,
            builder,
            graceful: hyper_util::server::graceful::GracefulShutdown::new(),
            per_address: Arc::new(PerAddress::default()),
            opts,
        }
    }

    /// Accepts and serves connections until `shutdown` resolves; the listener is closed then.
    async fn accept_until(&self, listener: TcpListener, shutdown: impl std::future::Future<Output = ()>) {
        let mut shutdown = std::pin::pin!(shutdown);
        loop {
            let (tcp, addr) = tokio::select! {
                () = &mut shutdown => break,
                accepted = accept(&listener) => accepted,
            };
            self.spawn(tcp, addr);
        }
    }

    /// Serves one accepted connection on its own task, unless its address holds
    /// `max_connections_per_address` already (then it is closed at once).
    fn spawn(&self, tcp: tokio::net::TcpStream, addr: SocketAddr) {
        use hyper_util::rt::TokioIo;
        let Some(slot) = PerAddress::take(&self.per_address, addr.ip(), self.opts.max_connections_per_address) else {
            tracing::debug!(client = %addr.ip(), "connection refused: too many from this address");
            crate::metrics::rejected("connections_per_address");
            return;
        };
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::trace!(error = %e, "cannot set TCP_NODELAY");
        }
        // Handlers see the client address as `ConnectInfo` (the per-address rate).
        let service = tower::ServiceExt::map_request(self.router.clone(), move |mut req: axum::http::Request<_>| {
            req.extensions_mut().insert(axum::extract::ConnectInfo(addr));
            req
        });
        let service = hyper_util::service::TowerToHyperService::new(service);
        let (builder, watcher) = (self.builder.clone(), self.graceful.watcher());
        let header_read_timeout = self.opts.header_read_timeout;
        tokio::spawn(async move {
            let _slot = slot;
            // hyper has no timeout while it detects the protocol: a client that connects and
            // sends nothing (or closes), or sends its first bytes one at a time, is let go here.
            let mut tcp = tcp;
            let Some(start) = api::wire::read_start(&mut tcp, header_read_timeout).await else {
                tracing::debug!(client = %addr.ip(), "connection closed: no protocol shown in time");
                return;
            };
            let io = TokioIo::new(api::wire::JsonParseErrors::new(api::wire::Replay::new(start, tcp)));
            let conn = builder.serve_connection_with_upgrades(io, service);
            if let Err(e) = watcher.watch(conn).await {
                tracing::trace!(error = %e, "connection ended with an error");
            }
        });
    }
}

/// The next accepted connection; accept errors (out of file descriptors and the like) are not
/// fatal: logged, then retried after a short pause.
async fn accept(listener: &TcpListener) -> (tokio::net::TcpStream, SocketAddr) {
    loop {
        match listener.accept().await {
            Ok(accepted) => return accepted,
            Err(e) => {
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
        }
    }
}

/// The bounded drain of [`serve`] after the listener closed: connections and turns get `drain`,
/// then the shutdown `token` cuts streams and turns off; returns by `drain` + [`EXIT_MARGIN`].
async fn drain(
    graceful: hyper_util::server::graceful::GracefulShutdown,
    token: tokio_util::sync::CancellationToken,
    turns: tokio_util::task::TaskTracker,
    drain: std::time::Duration,
) {
    let deadline = tokio::time::Instant::now() + drain;
    tracing::info!(drain = ?drain, "shutting down: draining open streams and turns");
    let cut = {
        let token = token.clone();
        tokio::spawn(async move {
            tokio::time::sleep_until(deadline).await;
            token.cancel();
        })
    };
    // Connections finish their requests (streams end at the deadline at the latest); one that
    // stays open past the deadline (a client that does not read) does not hold the exit back.
    if tokio::time::timeout_at(deadline + EXIT_MARGIN, graceful.shutdown()).await.is_err() {
        tracing::warn!("connections still open at the exit deadline");
    }
    turns.close();
    // Turns cut off at the deadline save their sessions within the margin.
    if tokio::time::timeout_at(deadline.max(tokio::time::Instant::now()) + EXIT_MARGIN, turns.wait()).await.is_err() {
        tracing::warn!("turns still running at exit");
    }
    cut.abort();
    token.cancel();
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

/// `demo --agents-port-base BASE`: the sample agents of a config (loopback URLs of the sample
/// agent ids) move to `BASE + i`, `i` their place in [`switchboard_demo::SampleAgentKind::ALL`]
/// (flight, pickup, hotel, weather, exchange); `0` picks five free ports. Other agents keep their
/// URLs.
///
/// # Errors
/// [`StartError::Listen`] when `BASE + 4` is past 65535 or no free port can be found.
#[cfg(feature = "demo")]
pub fn demo_agent_ports(base: u16) -> Result<reload::snapshot::EndpointOverride, StartError> {
    use switchboard_demo::SampleAgentKind;
    let kinds = SampleAgentKind::ALL;
    let mut ports = Vec::with_capacity(kinds.len());
    // Probes stay open until all five are picked, so the OS hands out five different ports.
    let mut probes = Vec::new();
    for i in 0..kinds.len() {
        let port = if base == 0 {
            let probe = std::net::TcpListener::bind("127.0.0.1:0")
                .map_err(|source| StartError::Listen { addr: "127.0.0.1:0".into(), source })?;
            let port =
                probe.local_addr().map_err(|source| StartError::Listen { addr: "127.0.0.1:0".into(), source })?.port();
            probes.push(probe);
            port
        } else {
            u16::try_from(usize::from(base) + i).map_err(|_| StartError::Listen {
                addr: format!("127.0.0.1:{base}"),
                source: std::io::Error::new(std::io::ErrorKind::InvalidInput, "the agents' ports run past 65535"),
            })?
        };
        ports.push(port);
    }
    drop(probes);
    Ok(reload::snapshot::EndpointOverride(Arc::new(move |id: &str, url: &reqwest::Url| {
        let i = kinds.iter().position(|k| k.agent_id() == id)?;
        if !matches!(url.host_str(), Some("127.0.0.1" | "localhost" | "[::1]")) {
            return None;
        }
        let mut moved = url.clone();
        moved.set_port(Some(ports[i])).ok()?;
        Some(moved)
    })))
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
