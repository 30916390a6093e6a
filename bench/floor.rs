//! The benchmark's floor (bench/README.md): the least a supervisor turn can cost over HTTP.
//! Parses the `POST /v1/chat` body, makes the same two sub-agent calls in parallel (reqwest, one
//! shared client) and streams 10 SSE events (axum). No planning, validation, sessions or event
//! bookkeeping: what is left is the HTTP work every supervisor pays.
//!
//! `cargo run --release --example bench_floor -- [LISTEN] [SUB_AGENT_BASE]`
//! (defaults `127.0.0.1:18083`, `http://127.0.0.1:18081`). Not part of `cargo test`'s runs.
//!
//! `bench_floor --slow-agent LISTEN DELAY_MS` instead serves the two sub-agents (nginx's replies,
//! bench/nginx.conf) after `DELAY_MS`: the slow sub-agent of `bench/run.sh streams`. It also
//! serves `POST /delay/{ms}/{key}` (the nodes of `bench/run.sh dag`): after `ms` milliseconds
//! (a blocking-pool sleep, finer than Tokio's 1 ms timer) it answers
//! `{"output": {key: "<key>-ok", "slept_us": <time actually slept>}, "message": "slept <µs> us"}`.

use std::convert::Infallible;

use axum::extract::State;
use axum::response::sse::{Event, Sse};
use axum::response::IntoResponse;
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};

#[derive(Clone)]
struct Floor {
    client: reqwest::Client,
    weather: String,
    exchange: String,
}

async fn call(client: &reqwest::Client, url: &str, body: &Value) -> Value {
    match client.post(url).json(body).send().await {
        Ok(resp) => resp.json().await.unwrap_or(Value::Null),
        Err(_) => Value::Null,
    }
}

async fn chat(State(f): State<Floor>, Json(body): Json<Value>) -> impl IntoResponse {
    let query = body["query"].as_str().unwrap_or_default().to_string();
    let request = json!({ "message": query, "inputs": { "message": query } });
    let (weather, exchange) =
        tokio::join!(call(&f.client, &f.weather, &request), call(&f.client, &f.exchange, &request));
    let mut events = Vec::with_capacity(10);
    for (i, stage) in ["intent_started", "intent_done", "plan_started", "plan_done", "agent_started", "agent_started"]
        .into_iter()
        .enumerate()
    {
        events.push((stage, json!({ "seq": i + 1, "stage": stage })));
    }
    events.push(("agent_done", json!({ "seq": 7, "stage": "agent_done", "output": weather["output"] })));
    events.push(("agent_done", json!({ "seq": 8, "stage": "agent_done", "output": exchange["output"] })));
    events.push(("summarize_started", json!({ "seq": 9, "stage": "summarize_started" })));
    let answer =
        format!("{} {}", weather["message"].as_str().unwrap_or(""), exchange["message"].as_str().unwrap_or(""));
    events.push(("answer", json!({ "seq": 10, "type": "done", "stage": "answer", "content": answer })));
    let stream = futures::stream::iter(
        events
            .into_iter()
            .map(|(stage, data)| Ok::<_, Infallible>(Event::default().event(stage).data(data.to_string()))),
    );
    Sse::new(stream)
}

const WEATHER: &str = r#"{"output":{"city":"北京","forecast":[{"date":"2026-12-01","condition":"晴","high_c":8,"low_c":-2},{"date":"2026-12-02","condition":"多云","high_c":6,"low_c":-3},{"date":"2026-12-03","condition":"阴","high_c":5,"low_c":-4}]},"message":"北京未来三天：晴，8/-2°C；多云，6/-3°C；阴，5/-4°C。"}"#;
const EXCHANGE: &str = r#"{"output":{"amount":1000,"currency":"USD","cny":7120.0,"rate":7.12},"message":"1000 美元约合 7120.00 元人民币（汇率 7.12）。"}"#;

async fn slow_agent(listen: String, delay: std::time::Duration) {
    let reply = move |body: &'static str| {
        move || async move {
            tokio::time::sleep(delay).await;
            ([(axum::http::header::CONTENT_TYPE, "application/json")], body)
        }
    };
    let app = Router::new()
        .route("/weather", post(reply(WEATHER)))
        .route("/exchange", post(reply(EXCHANGE)))
        .route("/delay/{ms}/{key}", post(delayed));
    let listener = tokio::net::TcpListener::bind(&listen).await.expect("bind");
    axum::serve(listener, app).await.expect("serve");
}

/// A DAG node of `bench/run.sh dag`: sleeps `ms`, outputs `key` (the value a later node depends on)
/// and how long it really slept, so the bench can tell the sub-agent's time from the supervisor's.
async fn delayed(axum::extract::Path((ms, key)): axum::extract::Path<(u64, String)>) -> Json<Value> {
    let slept = tokio::task::spawn_blocking(move || {
        let start = std::time::Instant::now();
        std::thread::sleep(std::time::Duration::from_millis(ms));
        start.elapsed().as_micros() as u64
    })
    .await
    .unwrap_or(0);
    let message = format!("slept {slept} us");
    Json(json!({ "output": { key.as_str(): format!("{key}-ok"), "slept_us": slept }, "message": message }))
}

fn main() {
    let mut args = std::env::args().skip(1).peekable();
    if args.peek().map(String::as_str) == Some("--slow-agent") {
        let listen = args.nth(1).unwrap_or_else(|| "127.0.0.1:18084".into());
        let delay = args.next().and_then(|d| d.parse().ok()).unwrap_or(20_000);
        let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
        rt.block_on(slow_agent(listen, std::time::Duration::from_millis(delay)));
        return;
    }
    let listen = args.next().unwrap_or_else(|| "127.0.0.1:18083".into());
    let base = args.next().unwrap_or_else(|| "http://127.0.0.1:18081".into());
    let floor = Floor {
        client: reqwest::Client::builder().tcp_nodelay(true).build().expect("client"),
        weather: format!("{base}/weather"),
        exchange: format!("{base}/exchange"),
    };
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    rt.block_on(async move {
        let app = Router::new().route("/v1/chat", post(chat)).with_state(floor);
        let listener = tokio::net::TcpListener::bind(&listen).await.expect("bind");
        let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
            let _ = tcp.set_nodelay(true);
        });
        axum::serve(listener, app).await.expect("serve");
    });
}
