//! `switchboard check-agent` against the sample agents (every check passes), against the Python
//! `a2a-sdk` peer, and against a deliberately broken agent server (bad output, bad SSE framing,
//! a hang on a malformed request, a non-conforming A2A agent): the right checks fail, with
//! evidence.

use std::path::Path;
use std::time::Duration;

use axum::body::Bytes;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};
use switchboard::check::{check_agent, load_agent, CheckOptions, Report, Target};
use switchboard::config::Protocol;
use switchboard_demo::{spawn_sample_agent, SampleAgentKind, SampleOptions};
use tokio::net::TcpListener;

use crate::common::*;

fn failed(report: &Report) -> Vec<String> {
    report.failures().map(|c| format!("{}/{}", c.case, c.check)).collect()
}

fn check<'a>(report: &'a Report, name: &str) -> &'a switchboard::check::Check {
    report
        .checks
        .iter()
        .find(|c| format!("{}/{}", c.case, c.check) == name)
        .unwrap_or_else(|| panic!("no check {name} in\n{}", report.render_text()))
}

#[tokio::test]
async fn the_sample_agents_pass_every_check() {
    for kind in [SampleAgentKind::Flight, SampleAgentKind::Pickup, SampleAgentKind::Exchange] {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let agent = spawn_sample_agent(kind, listener, SampleOptions::default()).await;
        let target = Target {
            id: Some(kind.agent_id().into()),
            config: repo().join("agents_config.yaml"),
            url: Some(agent.url()),
            ..Target::default()
        };
        let report = check_agent(&load_agent(&target).unwrap(), &CheckOptions::default()).await;
        assert!(report.passed, "{}", report.render_text());
        let names: Vec<String> = report.checks.iter().map(|c| format!("{}/{}", c.case, c.check)).collect();
        for want in
            ["full/status", "minimal/output-schema", "dependencies/reply", "malformed/status", "supervisor/dispatch"]
        {
            assert!(names.iter().any(|n| n == want), "{want} missing: {names:?}");
        }
        if kind == SampleAgentKind::Pickup {
            assert!(check(&report, "full/sse-framing").evidence.contains("delta×3, result×1"));
        }
        // The dependencies case carried an upstream output; the minimal one no optional key.
        let calls = agent.log.calls();
        let deps =
            calls.iter().filter(|c| c.body["context"]["dependencies"].as_object().is_some_and(|d| !d.is_empty()));
        assert!(deps.count() >= 1, "no request carried context.dependencies");
        if kind == SampleAgentKind::Pickup {
            assert!(calls.iter().any(|c| c.body["inputs"].get("flight_no").is_none()), "no minimal request");
            assert!(calls.iter().any(|c| c.body["inputs"].get("flight_no").is_some()), "no full request");
            // The semantic keys' examples come first.
            assert!(calls.iter().all(|c| c.body["inputs"]["airport"] == "白云机场" || c.body["inputs"].is_null()));
        }
    }
}

/// A card file for an agent not yet in a config, with inline schemas.
fn write_card(dir: &Path, timeout: &str) -> std::path::PathBuf {
    let card = format!(
        r#"id: broken_agent
name: Broken
description: An agent that gets things wrong.
endpoint: {{ url: "http://127.0.0.1:1/unused", protocol: http, timeout: {timeout} }}
examples: ["do the thing"]
input_schema:
  type: object
  properties:
    message: {{ type: string }}
    city: {{ type: string, enum: [北京, 上海] }}
    nights: {{ type: integer, minimum: 1 }}
  required: [city]
output_schema:
  type: object
  properties:
    driver: {{ type: string }}
  required: [driver]
required_semantic_keys:
  - {{ key: city, description: 城市, widget: city_picker, extract: {{ values_from: cities }}, example: 上海 }}
"#
    );
    let path = dir.join("card.yaml");
    std::fs::write(&path, card).unwrap();
    path
}

async fn serve(router: Router) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    format!("http://{addr}")
}

fn sse(body: impl Into<Vec<u8>>) -> Response {
    ([(header::CONTENT_TYPE, "text/event-stream")], body.into()).into_response()
}

/// Hangs (well past any timeout) when the body is not JSON; otherwise calls `reply`.
async fn hang_on_malformed(body: &Bytes) {
    if serde_json::from_slice::<Value>(body).is_err() {
        tokio::time::sleep(Duration::from_secs(3600)).await;
    }
}

/// The broken agent server: one route per way of being wrong.
fn broken_router() -> Router {
    Router::new()
        .route(
            "/bad-output",
            post(|body: Bytes| async move {
                hang_on_malformed(&body).await;
                Json(json!({ "output": { "driver": 5 }, "message": "done" }))
            }),
        )
        .route(
            "/bad-sse",
            post(|body: Bytes| async move {
                if serde_json::from_slice::<Value>(&body).is_err() {
                    return StatusCode::BAD_REQUEST.into_response();
                }
                // A delta that is not {"text"}, then the stream ends without `result`.
                sse("event: delta\ndata: plain text\n\n: ping\n\n")
            }),
        )
        .route(
            "/no-result",
            post(|| async { sse("event: delta\ndata: {\"text\": \"working\"}\n\n") }),
        )
        .route(
            "/not-utf8",
            post(|| async {
                let mut bytes = b"event: delta\ndata: {\"text\": \"".to_vec();
                bytes.extend_from_slice(&[0xff, 0xfe]);
                bytes.extend_from_slice(b"\"}\n\nevent: result\ndata: {\"output\": {\"driver\": \"x\"}}\n\n");
                sse(bytes)
            }),
        )
        .route(
            "/big-event",
            post(|| async {
                let text = "x".repeat(4096);
                sse(format!(
                    "event: delta\ndata: {{\"text\": \"{text}\"}}\n\nevent: result\ndata: {{\"output\": {{\"driver\": \"x\"}}}}\n\n"
                ))
            }),
        )
        .route(
            "/slow",
            post(|| async {
                tokio::time::sleep(Duration::from_secs(5)).await;
                Json(json!({ "output": { "driver": "x" } }))
            }),
        )
        .route("/text-reply", post(|| async { ([(header::CONTENT_TYPE, "text/plain")], "{\"output\": {\"driver\": \"x\"}}") }))
}

async fn run(card: &Path, url: String, protocol: Protocol, opts: CheckOptions) -> Report {
    let target =
        Target { card: Some(card.to_path_buf()), url: Some(url), protocol: Some(protocol), ..Target::default() };
    let agent = load_agent(&target).unwrap_or_else(|e| panic!("{e}"));
    check_agent(&agent, &opts).await
}

#[tokio::test]
async fn a_broken_agent_fails_the_right_checks() {
    let dir = tempfile::tempdir().unwrap();
    let card = write_card(dir.path(), "2s");
    let base = serve(broken_router()).await;
    let opts = CheckOptions { malformed_timeout: Duration::from_secs(1), ..CheckOptions::default() };

    // Bad output: schema failure with its JSON pointer; the malformed request hangs.
    let report = run(&card, format!("{base}/bad-output"), Protocol::Http, opts).await;
    assert!(!report.passed);
    let out = check(&report, "full/output-schema");
    assert!(!out.passed);
    assert_eq!(out.pointer.as_deref(), Some("/driver"), "{}", out.evidence);
    assert!(check(&report, "full/status").passed);
    assert!(check(&report, "full/latency").passed);
    let malformed = check(&report, "malformed/status");
    assert!(!malformed.passed && malformed.evidence.contains("no reply within 1000 ms"), "{}", malformed.evidence);
    assert!(check(&report, "supervisor/dispatch").evidence.contains("output_rejected"));

    // Bad SSE framing: a delta that is not {"text"}; no `result`.
    let report = run(&card, format!("{base}/bad-sse"), Protocol::Sse, opts).await;
    let framing = check(&report, "full/sse-framing");
    assert!(!framing.passed && framing.evidence.contains("is not {\"text\""), "{}", framing.evidence);
    assert!(check(&report, "malformed/status").passed, "{}", report.render_text());
    let report = run(&card, format!("{base}/no-result"), Protocol::Sse, opts).await;
    assert!(check(&report, "full/sse-framing").evidence.contains("without a `result` event"));
    let report = run(&card, format!("{base}/not-utf8"), Protocol::Sse, opts).await;
    assert!(check(&report, "full/sse-framing").evidence.contains("not UTF-8"), "{}", report.render_text());
    let small = CheckOptions {
        limits: switchboard::dispatch::DispatchLimits { max_event_bytes: 1024, ..Default::default() },
        ..opts
    };
    let report = run(&card, format!("{base}/big-event"), Protocol::Sse, small).await;
    assert!(check(&report, "full/sse-framing").evidence.contains("the limit is 1024"), "{}", report.render_text());

    // Too slow for the card's timeout; a reply that is not application/json.
    let report = run(&card, format!("{base}/slow"), Protocol::Http, opts).await;
    let latency = check(&report, "full/latency");
    assert!(!latency.passed && latency.evidence.contains("2000 ms"), "{}", latency.evidence);
    let report = run(&card, format!("{base}/text-reply"), Protocol::Http, opts).await;
    assert_eq!(
        failed(&report),
        ["full/content-type", "minimal/content-type", "dependencies/content-type", "malformed/status"]
    );
}

/// An A2A agent that ignores `A2A-Version`, answers every message with a failed task and serves a
/// thin card.
fn broken_a2a(base: &str) -> Router {
    let card = json!({
        "name": "Broken A2A", "description": "", "version": "0.1.0",
        "supportedInterfaces": [{ "url": format!("{base}/rpc"), "protocolBinding": "JSONRPC", "protocolVersion": "1.0" }],
        "capabilities": { "streaming": false },
        "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"], "skills": []
    });
    Router::new()
        .route("/.well-known/agent-card.json", get(move || async move { Json(card) }))
        .route(
            "/rpc",
            post(|body: Bytes| async move {
                let Ok(req) = serde_json::from_slice::<Value>(&body) else {
                    hang_on_malformed(&body).await;
                    return Json(json!({}));
                };
                Json(json!({ "jsonrpc": "2.0", "id": req["id"], "result": { "task": {
                    "id": "t1", "contextId": "c1",
                    "status": { "state": "TASK_STATE_FAILED",
                                "message": { "messageId": "m1", "role": "ROLE_AGENT", "parts": [{ "text": "no" }] } } } } }))
            }),
        )
}

#[tokio::test]
async fn a_broken_a2a_agent_fails_card_version_and_state_checks() {
    let dir = tempfile::tempdir().unwrap();
    let card = write_card(dir.path(), "2s");
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let router = broken_a2a(&base);
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    let opts = CheckOptions { malformed_timeout: Duration::from_secs(1), ..CheckOptions::default() };
    let report = run(&card, base, Protocol::A2a, opts).await;
    let card_check = check(&report, "card/card-fields");
    assert!(!card_check.passed && card_check.evidence.contains("`description` is empty"), "{}", card_check.evidence);
    assert!(card_check.evidence.contains("`skills` is empty"));
    let states = check(&report, "full/task-states");
    assert!(!states.passed && states.evidence.starts_with("FAILED"), "{}", states.evidence);
    assert!(!check(&report, "version/version-header").passed);
    assert!(!check(&report, "malformed/status").passed);
    assert!(check(&report, "full/jsonrpc").passed, "{}", report.render_text());
}

#[tokio::test]
async fn the_a2a_sdk_peer_passes_every_check() {
    let python = repo().join("tests/peers/.venv/bin/python");
    if !python.exists() {
        eprintln!("SKIPPED check-agent against the a2a-sdk peer: run tests/peers/setup.sh (CI does)");
        return;
    }
    let (_child, url) = spawn_a2a_peer(&python).await;
    let dir = tempfile::tempdir().unwrap();
    let card = dir.path().join("visa.yaml");
    std::fs::write(
        &card,
        r#"id: visa_agent
endpoint: { url: "http://127.0.0.1:1", protocol: a2a, timeout: 15s }
input_schema:
  type: object
  properties:
    message: { type: string }
    destination: { type: string, enum: [Japan, France] }
    nationality: { type: string, enum: [Chinese, French] }
  required: [destination, nationality]
"#,
    )
    .unwrap();
    let report = run(&card, url, Protocol::A2a, CheckOptions::default()).await;
    assert!(report.passed, "{}", report.render_text());
    assert!(check(&report, "full/task-states").evidence.ends_with("COMPLETED"), "{}", report.render_text());
}

/// The `a2a-sdk` visa agent of tests/peers, running: the child (killed on drop) and its URL.
async fn spawn_a2a_peer(python: &Path) -> (tokio::process::Child, String) {
    use tokio::io::AsyncBufReadExt;
    let mut child = tokio::process::Command::new(python)
        .arg(repo().join("tests/peers/a2a_peer.py"))
        .args(["--port", "0"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let url = tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if let Some(url) = line.strip_prefix("A2A_PEER_READY ") {
                return url.trim().to_string();
            }
        }
        panic!("the A2A peer exited before it was ready");
    })
    .await
    .expect("the A2A peer did not start");
    (child, url)
}

#[test]
fn the_binary_exits_nonzero_on_failure_and_prints_json() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let base = rt.block_on(async { serve(broken_router()).await });
    let dir = tempfile::tempdir().unwrap();
    let card = write_card(dir.path(), "2s");
    let run = |path: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_switchboard"))
            .args(["check-agent", "--json", "--protocol", "http", "--url", &format!("{base}{path}"), "--card"])
            .arg(&card)
            .output()
            .unwrap()
    };
    let out = run("/bad-output");
    assert_eq!(out.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["passed"], false);
    assert_eq!(report["agent"], "broken_agent");
    let failing: Vec<&Value> = report["checks"].as_array().unwrap().iter().filter(|c| c["passed"] == false).collect();
    assert!(failing.iter().any(|c| c["check"] == "output-schema" && c["pointer"] == "/driver"));
    // A card that does not load is an error, not a report.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .args(["check-agent", "nobody", "--config"])
        .arg(repo().join("agents_config.yaml"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no agent \"nobody\""));
}

#[test]
fn every_template_card_pastes_into_the_repository_config_and_its_readme_shows_it() {
    let templates = repo().join("examples/agents");
    let mut seen = 0;
    for entry in std::fs::read_dir(&templates).unwrap() {
        let dir = entry.unwrap().path();
        let card_path = dir.join("card.yaml");
        if !card_path.exists() {
            continue;
        }
        seen += 1;
        let text = std::fs::read_to_string(&card_path).unwrap();
        // Pasted under `agents:` of the repository's config, it validates (widgets, lists and
        // all).
        let card: Value = serde_yaml_ng::from_str(&text).unwrap();
        let mut config = repo_config();
        config["agents"].as_array_mut().unwrap().push(card);
        let yaml = serde_yaml_ng::to_string(&config).unwrap();
        let loaded = switchboard::config::load_from_str(&yaml, &repo().join("agents_config.yaml"), &repo(), &|_| None);
        assert!(loaded.is_ok(), "{}: {}", card_path.display(), loaded.err().unwrap());
        // The README shows the card as it is.
        let body: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
        let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
        assert!(
            readme.contains(body.join("\n").trim()),
            "{}/README.md does not show card.yaml as it is",
            dir.display()
        );
    }
    assert_eq!(seen, 4, "expected four templates under examples/agents");
}
