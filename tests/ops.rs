//! Operating the supervisor: circuit breakers, limits, metrics, tracing headers, CORS, the turn
//! deadline and graceful shutdown with an open stream.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};
use switchboard_demo::SampleOptions;

use crate::common::*;

/// A weather agent that fails (500) while `failing` is set; counts its calls.
async fn flaky_weather(failing: Arc<AtomicBool>, calls: Arc<AtomicUsize>) -> String {
    let router = Router::new().route(
        "/invoke",
        post(move || {
            let (failing, calls) = (failing.clone(), calls.clone());
            async move {
                calls.fetch_add(1, Ordering::SeqCst);
                if failing.load(Ordering::SeqCst) {
                    Err(axum::http::StatusCode::INTERNAL_SERVER_ERROR)
                } else {
                    Ok(Json(json!({ "output": { "city": "上海", "forecast": [] }, "message": "上海晴。" })))
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/invoke", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    url
}

fn error_code(events: &[Value]) -> Option<String> {
    of_stage(events, "agent_failed")
        .first()
        .and_then(|e| e["metadata"]["state"]["error"]["code"].as_str().map(str::to_string))
}

#[tokio::test]
async fn a_failing_agent_opens_its_circuit_and_recovers_through_a_probe() {
    let failing = Arc::new(AtomicBool::new(true));
    let calls = Arc::new(AtomicUsize::new(0));
    let url = flaky_weather(failing.clone(), calls.clone()).await;
    let app = spawn_app_with(Setup::default(), move |c| {
        c["supervisor"]["circuit_breaker"] =
            json!({ "failure_ratio": 0.5, "min_calls": 2, "window": "1m", "cool_down": "300ms" });
        let w = agent_mut(c, "weather_agent");
        w["endpoint"]["url"] = json!(url);
        w["endpoint"]["retries"] = json!(0);
        w["output_schema"] = json!({ "type": "object" });
    })
    .await;
    for _ in 0..2 {
        let events = app.ask("上海天气怎么样", None).await;
        assert_eq!(error_code(&events).as_deref(), Some("status"));
    }
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    // Open: failed at once, not called; the rest of the turn goes on.
    let events = app.ask("上海天气怎么样，再帮我订北京的酒店，2026-12-01入住", None).await;
    done(&events);
    assert_eq!(error_code(&events).as_deref(), Some("circuit_open"));
    assert_eq!(calls.load(Ordering::SeqCst), 2, "an open circuit does not call the agent");
    assert_eq!(app.calls("hotel_agent").len(), 1);
    let agents = app.get("/v1/agents").await;
    let weather = agents["agents"].as_array().unwrap().iter().find(|a| a["id"] == "weather_agent").unwrap().clone();
    assert_eq!(weather["circuit"], "open");
    let metrics = app.client.get(format!("{}/metrics", app.base)).send().await.unwrap().text().await.unwrap();
    assert!(metrics.contains("switchboard_agent_circuit_state{agent=\"weather_agent\"} 2"), "{metrics}");

    // The agent is back; after the cool-down one probe closes the circuit.
    failing.store(false, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(350)).await;
    let events = app.ask("上海天气怎么样", None).await;
    done(&events);
    assert!(of_stage(&events, "agent_failed").is_empty(), "{events:#?}");
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    let agents = app.get("/v1/agents").await;
    let weather = agents["agents"].as_array().unwrap().iter().find(|a| a["id"] == "weather_agent").unwrap().clone();
    assert_eq!(weather["circuit"], "closed");
}

#[tokio::test]
async fn the_per_user_rate_limit_answers_429_with_retry_after() {
    let setup = Setup { app_options: Some(Box::new(|o| o.user_rate_per_minute = 2)), ..Default::default() };
    let app = spawn_app_with(setup, |_| {}).await;
    let post = |user: &str| {
        app.client
            .post(format!("{}/v1/chat", app.base))
            .header("accept", "application/json")
            .json(&json!({ "query": "你好", "user_id": user }))
            .send()
    };
    assert_eq!(post("alice").await.unwrap().status(), 200);
    assert_eq!(post("alice").await.unwrap().status(), 200);
    let third = post("alice").await.unwrap();
    assert_eq!(third.status(), 429);
    assert!(third.headers()["retry-after"].to_str().unwrap().parse::<u64>().unwrap() >= 1);
    assert_eq!(third.json::<Value>().await.unwrap()["error"]["code"], "rate_limited");
    assert_eq!(post("bob").await.unwrap().status(), 200, "other users are not limited");
}

#[tokio::test]
async fn past_max_concurrent_requests_new_turns_are_shed_with_503() {
    let mut options = HashMap::new();
    options.insert("weather_agent", SampleOptions { delay: Duration::from_millis(800) });
    let setup = Setup { options, app_options: Some(Box::new(|o| o.max_concurrent_requests = 1)), ..Default::default() };
    let app = spawn_app_with(setup, |_| {}).await;
    // An open stream holds the only slot.
    let open = app
        .client
        .post(format!("{}/v1/chat", app.base))
        .json(&json!({ "query": "上海天气怎么样", "user_id": "u1" }))
        .send()
        .await
        .unwrap();
    assert_eq!(open.status(), 200);
    let shed = app
        .client
        .post(format!("{}/v1/chat", app.base))
        .json(&json!({ "query": "你好", "user_id": "u2" }))
        .send()
        .await
        .unwrap();
    assert_eq!(shed.status(), 503);
    assert_eq!(shed.headers()["retry-after"], "1");
    assert_eq!(shed.json::<Value>().await.unwrap()["error"]["code"], "overloaded");
    // When the stream ends the slot is free again.
    let _ = open.text().await.unwrap();
    let again = app
        .client
        .post(format!("{}/v1/chat", app.base))
        .header("accept", "application/json")
        .json(&json!({ "query": "你好", "user_id": "u2" }))
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 200);
}

#[tokio::test]
async fn metrics_count_turns_stages_agents_and_blocked_keys() {
    let app = spawn_app().await;
    done(&app.ask("帮我订北京的酒店，2026-12-01入住", None).await);
    done(&app.ask("帮我订个酒店", None).await);
    let resp = app.client.get(format!("{}/metrics", app.base)).send().await.unwrap();
    assert!(resp.headers()["content-type"].to_str().unwrap().starts_with("text/plain"));
    let text = resp.text().await.unwrap();
    for needle in [
        "switchboard_requests_total{outcome=\"answer\"}",
        "switchboard_stage_seconds_bucket{stage=\"execute\"",
        "switchboard_stage_seconds_count{stage=\"plan\"}",
        "switchboard_agent_calls_total{agent=\"hotel_agent\",outcome=\"ok\"}",
        "switchboard_agent_call_seconds_count{agent=\"hotel_agent\"}",
        "switchboard_blocked_subtasks_total{key=\"city\"}",
        "switchboard_config_version",
        "switchboard_open_streams",
    ] {
        assert!(text.contains(needle), "missing {needle} in\n{text}");
    }
}

#[tokio::test]
async fn a_client_traceparent_is_continued_to_sub_agents() {
    let app = spawn_app_with(Setup::default(), |_| {}).await;
    let trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    let resp = app
        .client
        .post(format!("{}/v1/chat", app.base))
        .header("accept", "application/json")
        .header("traceparent", format!("00-{trace}-00f067aa0ba902b7-01"))
        .json(&json!({ "query": "帮我订北京的酒店，2026-12-01入住", "user_id": "u1" }))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let sent =
        app.calls("hotel_agent")[0].headers.iter().find(|(k, _)| k == "traceparent").map(|(_, v)| v.clone()).unwrap();
    let parts: Vec<&str> = sent.split('-').collect();
    assert_eq!(parts[1], trace, "same trace id");
    assert_ne!(parts[2], "00f067aa0ba902b7", "a new span id");
}

#[tokio::test]
async fn cors_allows_only_configured_origins() {
    let setup = Setup {
        app_options: Some(Box::new(|o| o.cors_origins = vec!["https://app.example".into()])),
        ..Default::default()
    };
    let app = spawn_app_with(setup, |_| {}).await;
    let preflight = |origin: &'static str| {
        app.client
            .request(reqwest::Method::OPTIONS, format!("{}/v1/chat", app.base))
            .header("origin", origin)
            .header("access-control-request-method", "POST")
            .send()
    };
    let ok = preflight("https://app.example").await.unwrap();
    assert_eq!(ok.headers()["access-control-allow-origin"], "https://app.example");
    let other = preflight("https://evil.example").await.unwrap();
    assert!(other.headers().get("access-control-allow-origin").is_none());
}

#[tokio::test]
async fn the_turn_deadline_fails_what_is_still_running() {
    let mut options = HashMap::new();
    options.insert("weather_agent", SampleOptions { delay: Duration::from_secs(3) });
    let app = spawn_app_with(Setup { options, ..Default::default() }, |c| {
        c["supervisor"]["request_timeout"] = json!("300ms");
    })
    .await;
    let events = app.ask("上海天气怎么样", None).await;
    let done = done(&events);
    assert_eq!(error_code(&events).as_deref(), Some("deadline"));
    assert!(done["content"].as_str().unwrap().contains("未能完成"));
}

#[cfg(unix)]
#[tokio::test]
async fn shutdown_drains_an_open_stream_and_ends_it_with_one_done() {
    use eventsource_stream::Eventsource;
    use futures::StreamExt;
    use tokio::io::{AsyncBufReadExt, BufReader};

    let mut options = HashMap::new();
    options.insert("weather_agent", SampleOptions { delay: Duration::from_secs(5) });
    let app = spawn_app_with(Setup { options, ..Default::default() }, |_| {}).await;
    let dir = tempfile::tempdir().unwrap();
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .args(["serve", "--listen", "127.0.0.1:0", "--no-watch", "--drain-timeout", "300ms"])
        .arg("--store")
        .arg(format!("sqlite://{}", dir.path().join("s.db").display()))
        .arg("--config")
        .arg(&app.config_path)
        .env("RUST_LOG", "warn")
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let base = loop {
        let line = lines.next_line().await.unwrap().expect("server output");
        if let Some(addr) = line.strip_prefix("switchboard listening on ") {
            break addr.to_string();
        }
    };
    let resp = reqwest::Client::new()
        .post(format!("{base}/v1/chat"))
        .json(&json!({ "query": "上海天气怎么样", "user_id": "u1" }))
        .send()
        .await
        .unwrap();
    let mut stream = resp.bytes_stream().eventsource();
    let mut events = Vec::new();
    // Wait until the sub-agent is running, then ask the server to stop.
    while let Some(ev) = stream.next().await {
        let v: Value = serde_json::from_str(&ev.unwrap().data).unwrap();
        let started = v["stage"] == "agent_started";
        events.push(v);
        if started {
            break;
        }
    }
    std::process::Command::new("kill").args(["-TERM", &child.id().unwrap().to_string()]).status().unwrap();
    while let Some(ev) = tokio::time::timeout(Duration::from_secs(10), stream.next()).await.expect("the stream ends") {
        events.push(serde_json::from_str(&ev.unwrap().data).unwrap());
    }
    let done = done(&events);
    assert_eq!(done["stage"], "error");
    assert_eq!(done["metadata"]["state"]["error"]["code"], "shutting_down");
    let status = tokio::time::timeout(Duration::from_secs(15), child.wait()).await.expect("the server exits").unwrap();
    assert!(status.success(), "{status:?}");
}
