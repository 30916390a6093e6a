//! # Switchboard
//!
//! A config-driven dynamic supervisor for multi-agent systems: it reads capability cards from
//! `agents_config.yaml`, plans each user turn into sub-tasks, blocks the ones missing semantic
//! keys (asking the user with the right widget), dispatches the rest to remote sub-agents as a
//! DAG, summarizes, and streams every stage to the frontend over SSE.
//!
//! ## Layout
//! A request flows through the stages in this order (see ARCHITECTURE.md):
//! - [`text`]: the texts users read (a Fluent catalog, embedded, overridable) and their
//!   language; the lowest layer.
//! - [`config`]: the file format, loading and validation (every error, with location); [`files`]:
//!   bounded reads of the files it names.
//! - [`registry`]: immutable, versioned snapshots of a valid config; atomic swaps.
//! - [`reload`]: the watcher and the single reload loop (files, `SIGHUP`, admin endpoint).
//! - [`matching`]: term matching and semantic-key extractors, compiled per snapshot.
//! - [`conversation`]: the conversation lifecycle as a state machine (pure: no IO, no clock).
//! - [`session`]: per-thread memory, slots and the pending clarification.
//! - [`planner`]: intents, semantic keys, the task plan (pure: no IO).
//! - [`llm`]: LLM mode: intent + rewrite, planning and summary from an OpenAI-compatible model.
//! - [`executor`]: runs a plan as a DAG.
//! - [`dispatch`]: the only code that calls sub-agents (`http`, `sse`, `a2a`).
//! - [`summarize`]: the user-facing texts.
//! - [`supervisor`]: the turn pipeline tying the stages together.
//! - [`events`]: the `ResponseState` event stream.
//! - [`metrics`]: Prometheus metrics; [`logging`]: log output with PII and secrets masked;
//!   [`redact`]: masking `${ENV}` secrets in what sub-agents send back.
//! - [`api`]: the HTTP API and SSE rendering.
//! - [`app`]: wiring for `serve` and `demo`; [`client`]: the `ask` terminal client;
//!   [`check`]: `check-agent`, a sub-agent's conformance check against its card.
//!
//! The sample sub-agents of `switchboard demo` live in the `switchboard-demo` crate
//! (`crates/switchboard-demo`), linked only with the `demo` feature (on by default).

pub mod api;
pub mod app;
pub mod auth;
pub mod check;
pub mod client;
pub mod config;
pub mod conversation;
pub mod dispatch;
pub mod events;
pub mod executor;
pub mod files;
pub mod guardrails;
pub mod llm;
pub mod logging;
pub mod matching;
pub mod metrics;
pub mod planner;
pub mod redact;
pub mod registry;
pub mod reload;
pub mod routing;
pub mod session;
pub mod summarize;
pub mod supervisor;
pub mod text;
