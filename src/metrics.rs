//! Prometheus metrics (`GET /metrics`), process-wide: requests by outcome, stage latencies,
//! per-agent call latency / errors / circuit state, blocked sub-tasks by key, reloads, config
//! version, open streams. The `prometheus` crate keeps and encodes them.

use std::sync::LazyLock;
use std::time::Duration;

use prometheus::{
    Encoder, GaugeVec, HistogramOpts, HistogramVec, IntCounterVec, IntGauge, Opts, Registry, TextEncoder,
};

struct Metrics {
    registry: Registry,
    requests: IntCounterVec,
    stages: HistogramVec,
    agent_calls: IntCounterVec,
    agent_latency: HistogramVec,
    circuit: GaugeVec,
    blocked: IntCounterVec,
    reloads: IntCounterVec,
    config_version: IntGauge,
    open_streams: IntGauge,
    shed: IntCounterVec,
}

const BUCKETS: &[f64] = &[0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0];

fn build() -> Result<Metrics, prometheus::Error> {
    let registry = Registry::new_custom(Some("switchboard".into()), None)?;
    let m = Metrics {
        requests: IntCounterVec::new(
            Opts::new("requests_total", "Chat turns by outcome (answer, escalated, error)"),
            &["outcome"],
        )?,
        stages: HistogramVec::new(
            HistogramOpts::new("stage_seconds", "Time spent per pipeline stage").buckets(BUCKETS.to_vec()),
            &["stage"],
        )?,
        agent_calls: IntCounterVec::new(
            Opts::new("agent_calls_total", "Sub-agent calls by agent and outcome (ok or error code)"),
            &["agent", "outcome"],
        )?,
        agent_latency: HistogramVec::new(
            HistogramOpts::new("agent_call_seconds", "Sub-agent call latency").buckets(BUCKETS.to_vec()),
            &["agent"],
        )?,
        circuit: GaugeVec::new(
            Opts::new("agent_circuit_state", "Circuit state per agent: 0 closed, 1 half-open, 2 open"),
            &["agent"],
        )?,
        blocked: IntCounterVec::new(
            Opts::new("blocked_subtasks_total", "Sub-tasks blocked, by missing or invalid semantic key"),
            &["key"],
        )?,
        reloads: IntCounterVec::new(
            Opts::new("config_reloads_total", "Config reloads by result (ok, failed)"),
            &["result"],
        )?,
        config_version: IntGauge::new("config_version", "Version of the serving registry snapshot")?,
        open_streams: IntGauge::new("open_streams", "Chat streams currently open")?,
        shed: IntCounterVec::new(
            Opts::new(
                "rejected_requests_total",
                "Requests refused (overload, rate, unauthenticated, prompt_injection, …)",
            ),
            &["reason"],
        )?,
        registry,
    };
    m.registry.register(Box::new(m.requests.clone()))?;
    m.registry.register(Box::new(m.stages.clone()))?;
    m.registry.register(Box::new(m.agent_calls.clone()))?;
    m.registry.register(Box::new(m.agent_latency.clone()))?;
    m.registry.register(Box::new(m.circuit.clone()))?;
    m.registry.register(Box::new(m.blocked.clone()))?;
    m.registry.register(Box::new(m.reloads.clone()))?;
    m.registry.register(Box::new(m.config_version.clone()))?;
    m.registry.register(Box::new(m.open_streams.clone()))?;
    m.registry.register(Box::new(m.shed.clone()))?;
    Ok(m)
}

static METRICS: LazyLock<Option<Metrics>> =
    LazyLock::new(|| build().map_err(|e| tracing::error!(error = %e, "metrics disabled")).ok());

fn with(f: impl FnOnce(&Metrics)) {
    if let Some(m) = METRICS.as_ref() {
        f(m);
    }
}

/// A finished turn (`answer`, `escalated`, `error`).
pub fn request(outcome: &str) {
    with(|m| m.requests.with_label_values(&[outcome]).inc());
}

/// Time spent in a stage (`session`, `plan`, `execute`, `summarize`).
pub fn stage(name: &str, elapsed: Duration) {
    with(|m| m.stages.with_label_values(&[name]).observe(elapsed.as_secs_f64()));
}

/// A sub-agent call and its outcome (`None` = ok, else the error code).
pub fn agent_call(agent: &str, elapsed: Duration, error: Option<&str>) {
    with(|m| {
        m.agent_calls.with_label_values(&[agent, error.unwrap_or("ok")]).inc();
        m.agent_latency.with_label_values(&[agent]).observe(elapsed.as_secs_f64());
    });
}

/// A sub-task blocked on `key`.
pub fn blocked(key: &str) {
    with(|m| m.blocked.with_label_values(&[key]).inc());
}

/// A reload attempt (`ok` or `failed`) and the serving version.
pub fn reload(result: &str, version: u64) {
    with(|m| {
        m.reloads.with_label_values(&[result]).inc();
        m.config_version.set(i64::try_from(version).unwrap_or(i64::MAX));
    });
}

/// The serving version.
pub fn config_version(version: u64) {
    with(|m| m.config_version.set(i64::try_from(version).unwrap_or(i64::MAX)));
}

/// A refused request (`overloaded`, `rate_limited`, `unauthenticated`, `prompt_injection`, …).
pub fn rejected(reason: &str) {
    with(|m| m.shed.with_label_values(&[reason]).inc());
}

/// Counts an open stream until dropped.
pub struct StreamGuard(());

impl StreamGuard {
    /// Opens one.
    pub fn open() -> Self {
        with(|m| m.open_streams.inc());
        Self(())
    }
}

impl Drop for StreamGuard {
    fn drop(&mut self) {
        with(|m| m.open_streams.dec());
    }
}

/// The text exposition, with circuit states set from `circuits` first.
pub fn render(circuits: &[(String, f64)]) -> String {
    let mut out = Vec::new();
    with(|m| {
        for (agent, state) in circuits {
            m.circuit.with_label_values(&[agent]).set(*state);
        }
        let _ = TextEncoder::new().encode(&m.registry.gather(), &mut out);
    });
    String::from_utf8(out).unwrap_or_default()
}
