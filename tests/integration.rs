//! Integration tests over real sockets: one binary, one module per area.

mod common;

mod a2a;
mod a2a_peer;
mod agui;
mod api;
mod auth;
mod chat;
mod check_agent;
mod config;
mod conversation;
mod deploy;
mod durability;
mod faults;
mod llm;
mod ops;
mod readme;
mod recognition;
mod reload;
mod texts;
mod tidy;
mod values;
