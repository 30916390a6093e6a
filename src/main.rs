//! The `switchboard` binary: parses the command line, sets up logging, calls the library.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand};
use switchboard::app::{self, AppOptions};

/// jemalloc, purging freed memory in the background (see Cargo.toml).
#[cfg(all(feature = "jemalloc", not(target_env = "msvc")))]
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[derive(Parser)]
#[command(name = "switchboard", version, about = "A config-driven dynamic supervisor for multi-agent systems")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the supervisor API on a config (hot-reloaded).
    Serve {
        /// The agents config.
        #[arg(long, env = "SWITCHBOARD_CONFIG", default_value = "agents_config.yaml")]
        config: PathBuf,
        /// Address to listen on.
        #[arg(long, env = "SWITCHBOARD_LISTEN", default_value = "127.0.0.1:8080")]
        listen: String,
        /// Do not watch the config files (reload only on SIGHUP or POST /v1/admin/reload).
        #[arg(long)]
        no_watch: bool,
        #[command(flatten)]
        store: StoreArgs,
        #[command(flatten)]
        limits: ServeArgs,
    },
    /// Start the supervisor and the sample sub-agents of the repo's config, in one process.
    #[cfg(feature = "demo")]
    Demo {
        /// The agents config (its sample agents must point at loopback ports).
        #[arg(long, default_value = "agents_config.yaml")]
        config: PathBuf,
        /// Address of the supervisor.
        #[arg(long, default_value = "127.0.0.1:8080")]
        listen: String,
        /// Run the sample sub-agents on ports from this one up (flight, pickup, hotel, weather,
        /// exchange: BASE .. BASE+4) instead of the ports the config names (9101-9105); the
        /// supervisor calls them there. `0`: free ports the OS picks.
        #[arg(long, env = "SWITCHBOARD_DEMO_AGENTS_PORT_BASE")]
        agents_port_base: Option<u16>,
        #[command(flatten)]
        store: StoreArgs,
        #[command(flatten)]
        limits: ServeArgs,
    },
    /// Validate a config: print every error and exit 1, or a summary and exit 0.
    Validate {
        /// The agents config.
        #[arg(default_value = "agents_config.yaml")]
        path: PathBuf,
    },
    /// List the capability cards of a config.
    Agents {
        /// The agents config.
        #[arg(long, default_value = "agents_config.yaml")]
        config: PathBuf,
    },
    /// Stream one chat turn to the terminal.
    Ask {
        /// What to ask.
        query: String,
        /// Continue this thread.
        #[arg(long)]
        thread: Option<String>,
        /// Base URL of the supervisor.
        #[arg(long, default_value = "http://127.0.0.1:8080")]
        url: String,
        /// The user id.
        #[arg(long, default_value = "cli-user")]
        user: String,
        /// A widget value, `key=value` (repeatable).
        #[arg(long = "slot", value_parser = parse_slot)]
        slots: Vec<(String, String)>,
    },
    /// Print the JSON Schema of agents_config.yaml.
    Schema,
    /// Show how a query is routed: every card's score with its evidence, and the decision.
    Explain {
        /// The user's text.
        query: String,
        /// The agents config.
        #[arg(long, default_value = "agents_config.yaml")]
        config: PathBuf,
    },
    /// Check that a sub-agent speaks the protocol its card promises; exit 0 only when all pass.
    CheckAgent(CheckAgentArgs),
}

/// `check-agent ID [--config F]`, or `--card FILE --url URL --protocol P` for an agent not yet
/// in a config.
#[derive(clap::Args)]
struct CheckAgentArgs {
    /// The agent id in the config (with --card: replaces the card's id).
    id: Option<String>,
    /// The agents config holding the agent.
    #[arg(long, default_value = "agents_config.yaml")]
    config: PathBuf,
    /// A file with one capability card (an `agents:` entry), for an agent not yet in a config.
    #[arg(long)]
    card: Option<PathBuf>,
    /// Call this URL instead of the card's endpoint.url.
    #[arg(long)]
    url: Option<String>,
    /// Use this protocol (http, sse, a2a) instead of the card's endpoint.protocol.
    #[arg(long, value_parser = switchboard::check::parse_protocol)]
    protocol: Option<switchboard::config::Protocol>,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args)]
struct ServeArgs {
    /// Turns open at once before new ones get 503 + Retry-After.
    #[arg(long, env = "SWITCHBOARD_MAX_CONCURRENT", default_value_t = 1024)]
    max_concurrent_requests: usize,
    /// Turns a minute per user before 429 + Retry-After (0 = unlimited).
    #[arg(long, env = "SWITCHBOARD_USER_RATE", default_value_t = 0)]
    user_rate_per_minute: u32,
    /// Turns a minute per client address before 429 + Retry-After (0 = unlimited).
    #[arg(long, env = "SWITCHBOARD_ADDRESS_RATE", default_value_t = 0)]
    address_rate_per_minute: u32,
    /// Allowed CORS origin (repeatable; `*` = any).
    #[arg(long = "cors-origin", env = "SWITCHBOARD_CORS_ORIGINS", value_delimiter = ',')]
    cors_origins: Vec<String>,
    /// On SIGTERM, how long open streams and turns may finish before they are ended (the
    /// process exits at most 2 s later).
    #[arg(long, env = "SWITCHBOARD_DRAIN_TIMEOUT", default_value = "10s", value_parser = humantime::parse_duration)]
    drain_timeout: std::time::Duration,
    /// A client must send a request's head within this time, or its connection is closed.
    #[arg(long, env = "SWITCHBOARD_HEADER_READ_TIMEOUT", default_value = "10s", value_parser = humantime::parse_duration)]
    header_read_timeout: std::time::Duration,
    /// A request body must arrive within this time, or the request fails with 408.
    #[arg(long, env = "SWITCHBOARD_BODY_READ_TIMEOUT", default_value = "30s", value_parser = humantime::parse_duration)]
    body_read_timeout: std::time::Duration,
    /// Connections open at once from one client address; more are closed at once.
    #[arg(long, env = "SWITCHBOARD_MAX_CONNECTIONS_PER_ADDRESS", default_value_t = 256)]
    max_connections_per_address: usize,
    #[command(flatten)]
    auth: AuthArgs,
}

/// `auth` values that replace the config file's (at start-up and every reload).
#[derive(clap::Args)]
struct AuthArgs {
    /// Who the caller is: none, jwt or trusted_header (replaces `auth.mode`).
    #[arg(long, env = "SWITCHBOARD_AUTH_MODE")]
    auth_mode: Option<switchboard::config::AuthMode>,
    /// JWKS URL of the token issuer (replaces `auth.jwt.jwks_url`).
    #[arg(long, env = "SWITCHBOARD_AUTH_JWKS_URL")]
    auth_jwks_url: Option<String>,
    /// Required token issuer (replaces `auth.jwt.issuer`).
    #[arg(long, env = "SWITCHBOARD_AUTH_ISSUER")]
    auth_issuer: Option<String>,
    /// Required token audience (replaces `auth.jwt.audience`).
    #[arg(long, env = "SWITCHBOARD_AUTH_AUDIENCE")]
    auth_audience: Option<String>,
    /// Trusted proxy CIDRs, comma-separated (replaces `auth.trusted_header.trusted_proxies`).
    #[arg(long, env = "SWITCHBOARD_AUTH_TRUSTED_PROXIES", value_delimiter = ',')]
    auth_trusted_proxies: Option<Vec<String>>,
    /// Where audit lines of write dispatches go: stdout, off or a file (replaces
    /// `auth.audit_log`).
    #[arg(long, env = "SWITCHBOARD_AUDIT_LOG")]
    audit_log: Option<String>,
}

impl AuthArgs {
    fn overrides(&self) -> switchboard::config::AuthOverrides {
        switchboard::config::AuthOverrides {
            mode: self.auth_mode,
            jwks_url: self.auth_jwks_url.clone(),
            issuer: self.auth_issuer.clone(),
            audience: self.auth_audience.clone(),
            trusted_proxies: self.auth_trusted_proxies.clone(),
            audit_log: self.audit_log.clone(),
        }
    }
}

impl ServeArgs {
    fn serve_options(&self) -> app::ServeOptions {
        app::ServeOptions {
            drain: self.drain_timeout,
            header_read_timeout: self.header_read_timeout,
            body_read_timeout: self.body_read_timeout,
            max_connections_per_address: self.max_connections_per_address,
        }
    }
}

#[derive(clap::Args)]
struct StoreArgs {
    /// Session store: sqlite://PATH (durable, the default), redis://HOST:PORT (shared by
    /// replicas) or memory:// (lost on exit).
    #[arg(long, env = "SWITCHBOARD_STORE", default_value = "sqlite://switchboard-sessions.db")]
    store: String,
    /// Sessions expire this long after their last turn (e.g. 24h, 7d).
    #[arg(long, env = "SWITCHBOARD_SESSION_TTL", default_value = "24h", value_parser = humantime::parse_duration)]
    session_ttl: std::time::Duration,
}

fn parse_slot(s: &str) -> Result<(String, String), String> {
    s.split_once('=').map(|(k, v)| (k.to_string(), v.to_string())).ok_or_else(|| "expected key=value".to_string())
}

fn init_logging() -> switchboard::logging::LogGuard {
    switchboard::logging::init()
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli.command).await {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Validate { path } => Ok(validate(&path)),
        Command::Schema => {
            println!("{}", serde_json::to_string_pretty(&switchboard::config::config_json_schema())?);
            Ok(ExitCode::SUCCESS)
        }
        Command::Explain { query, config } => {
            let handle = switchboard::registry::RegistryHandle::open(&config).map_err(print_config_errors)?;
            print!("{}", switchboard::routing::explain(&handle.load(), &query));
            Ok(ExitCode::SUCCESS)
        }
        Command::Agents { config } => {
            let handle = switchboard::registry::RegistryHandle::open(&config).map_err(print_config_errors)?;
            let reg = handle.load();
            for a in reg.agents() {
                let keys: Vec<&str> = a.keys.iter().map(|k| k.spec.key.as_str()).collect();
                println!(
                    "{:<20} {:<5} {:<8} {:<40} keys: {}",
                    a.id(),
                    format!("{:?}", a.protocol()).to_lowercase(),
                    if a.spec.enabled { "enabled" } else { "disabled" },
                    a.url.as_str(),
                    keys.join(", ")
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::CheckAgent(args) => check_agent(args).await,
        Command::Ask { query, thread, url, user, slots } => {
            let opts = switchboard::client::AskOptions {
                url,
                user_id: user,
                thread_id: thread,
                slots: slots.into_iter().map(|(k, v)| (k, serde_json::Value::String(v))).collect(),
            };
            switchboard::client::ask(&query, &opts, &mut std::io::stdout()).await?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Serve { config, listen, no_watch, store, limits } => {
            let _logs = init_logging();
            let serving = limits.serve_options();
            let opts = AppOptions { watch_files: !no_watch, ..options(store, limits) };
            let state = app::build_state(&config, opts).await.map_err(print_start_error)?;
            let listener = app::bind(&listen).await?;
            let addr = app::local_addr(&listener).map(|a| a.to_string()).unwrap_or(listen);
            tracing::info!(%addr, config = %config.display(), store = state.supervisor.sessions.kind(), "switchboard serving");
            // One machine-readable line on stdout: tests and scripts read the bound address.
            println!("switchboard listening on http://{addr}");
            app::serve(listener, state, app::shutdown_signal(), serving).await.context("server failed")?;
            Ok(ExitCode::SUCCESS)
        }
        #[cfg(feature = "demo")]
        Command::Demo { config, listen, agents_port_base, store, limits } => {
            let _logs = init_logging();
            let serving = limits.serve_options();
            let endpoints = agents_port_base.map(app::demo_agent_ports).transpose()?;
            let opts = AppOptions { endpoints, ..options(store, limits) };
            let state = app::build_state(&config, opts).await.map_err(print_start_error)?;
            let agents = app::spawn_demo_agents(&state).await?;
            let listener = app::bind(&listen).await?;
            let addr = app::local_addr(&listener).map(|a| a.to_string()).unwrap_or(listen);
            println!("Switchboard demo: supervisor on http://{addr} with {} sample sub-agents", agents.len());
            for a in &agents {
                println!("  sample sub-agent at {}", a.url());
            }
            println!(
                "Try:  cargo run --release -- ask \"帮我查一下航班CA1234，然后安排白云机场接机\" --url http://{addr}"
            );
            app::serve(listener, state, app::shutdown_signal(), serving).await.context("server failed")?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn options(store: StoreArgs, limits: ServeArgs) -> AppOptions {
    AppOptions {
        max_concurrent_requests: limits.max_concurrent_requests,
        user_rate_per_minute: limits.user_rate_per_minute,
        address_rate_per_minute: limits.address_rate_per_minute,
        cors_origins: limits.cors_origins,
        store: store.store,
        session_ttl: store.session_ttl,
        llm: switchboard::llm::LlmSettings::from_env(),
        watch_files: true,
        admin_token: std::env::var("SWITCHBOARD_ADMIN_TOKEN").ok(),
        endpoints: None,
        today: None,
        auth: limits.auth.overrides(),
    }
}

fn validate(path: &std::path::Path) -> ExitCode {
    let loaded = switchboard::config::load(path).and_then(|cfg| {
        // Routing tests next to the config: a misrouted query is an error like any other.
        let registry = switchboard::registry::Registry::from_config(cfg.clone(), 1)?;
        let errors = switchboard::routing::check_registry(&registry);
        if errors.is_empty() {
            Ok(cfg)
        } else {
            Err(switchboard::config::ConfigErrors(errors))
        }
    });
    match loaded {
        Ok(cfg) => {
            let enabled = cfg.file.agents.iter().filter(|a| a.enabled).count();
            println!(
                "{}: valid: {} agents ({} enabled), {} widgets, {} files, hash {}",
                path.display(),
                cfg.agents.len(),
                enabled,
                cfg.widgets.len(),
                cfg.sources.len(),
                &cfg.hash[..12]
            );
            if let Some(tests) = switchboard::routing::routing_tests_path(path) {
                let n = switchboard::routing::load_routing_tests(&tests).map(|t| t.len()).unwrap_or(0);
                println!("{}: {n} routing test(s) pass", tests.display());
            }
            ExitCode::SUCCESS
        }
        Err(errors) => {
            for e in &errors.0 {
                println!("{e}");
            }
            println!("{}: {} error(s)", path.display(), errors.0.len());
            ExitCode::FAILURE
        }
    }
}

fn print_config_errors(errors: switchboard::config::ConfigErrors) -> anyhow::Error {
    for e in &errors.0 {
        eprintln!("{e}");
    }
    anyhow::anyhow!("the config has {} error(s)", errors.0.len())
}

fn print_start_error(e: app::StartError) -> anyhow::Error {
    match e {
        app::StartError::Config(errors) => print_config_errors(errors),
        other => other.into(),
    }
}

async fn check_agent(args: CheckAgentArgs) -> anyhow::Result<ExitCode> {
    use switchboard::check;
    let target =
        check::Target { id: args.id, config: args.config, card: args.card, url: args.url, protocol: args.protocol };
    let agent = check::load_agent(&target).map_err(|e| match e {
        check::SetupError::Config(errors) => print_config_errors(errors),
        other => other.into(),
    })?;
    let report = check::check_agent(&agent, &check::CheckOptions::default()).await;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report.to_json())?);
    } else {
        print!("{}", report.render_text());
    }
    Ok(if report.passed { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}
