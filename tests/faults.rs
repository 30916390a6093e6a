//! Fault injection: real misbehaving sub-agents on loopback, one per failure mode of
//! docs/sub-agent-protocol.md and the README's "Resilience" and "Limits".
//!
//! Every test serves a fake `weather_agent` (a small axum server, or a raw `TcpListener` where
//! the fault is below HTTP) on `127.0.0.1:0`, points the config at it, and asks
//! "查一下上海的天气，再把1000美元兑换成人民币": the weather sub-task must fail with the right
//! `metadata.state.error.code` (or, for a 503 followed by a good reply, recover) while the
//! exchange sub-task (the real sample agent) still succeeds, the turn still ends with exactly one
//! `done`, and the answer says both what was done and what could not be. Retry behaviour is
//! proved by counting the calls the fake received, never by timing.
//!
//! A request the agent fully received before the connection dropped is never sent again (it
//! fails as `disconnected`): the agent may already have acted on it.

use std::convert::Infallible;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use bytes::Bytes;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::common::*;

/// Two independent sub-tasks: weather (faked) and exchange (the real sample agent).
const BOTH: &str = "查一下上海的天气，再把1000美元兑换成人民币";

const AGENT_IDS: [&str; 5] = ["flight_agent", "pickup_agent", "hotel_agent", "weather_agent", "exchange_agent"];

/// How many requests a fake received.
type Calls = Arc<AtomicUsize>;

/// Serves `handler(n)` (`n` = 0-based call number) on `POST /invoke` of a fresh loopback port;
/// returns the URL and the call counter.
async fn fake<F, Fut>(handler: F) -> (String, Calls)
where
    F: Fn(usize) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Response> + Send + 'static,
{
    let calls: Calls = Arc::default();
    let counter = calls.clone();
    let router = Router::new().route(
        "/invoke",
        post(move || {
            let n = counter.fetch_add(1, SeqCst);
            handler(n)
        }),
    );
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    (format!("http://{addr}/invoke"), calls)
}

/// A supervisor on the repo's config whose `weather_agent` endpoint is `url` with `protocol`,
/// `timeout` and `retries`.
async fn app_with_weather(url: &str, protocol: &str, timeout: &str, retries: u32) -> TestApp {
    spawn_app_with(Setup::default(), |c| {
        let agent = c["agents"].as_array_mut().unwrap().iter_mut().find(|a| a["id"] == "weather_agent").unwrap();
        agent["endpoint"]["url"] = json!(url);
        agent["endpoint"]["protocol"] = json!(protocol);
        agent["endpoint"]["timeout"] = json!(timeout);
        agent["endpoint"]["retries"] = json!(retries);
    })
    .await
}

/// A weather output that satisfies the real `weather_agent.output.json`.
fn valid_weather() -> Value {
    let day = |date: &str| json!({ "date": date, "condition": "晴", "high_c": 12, "low_c": 3 });
    json!({
        "output": { "city": "上海", "forecast": [day("2026-12-01"), day("2026-12-02"), day("2026-12-03")] },
        "message": "上海未来三天晴（伪造的天气服务）"
    })
}

/// One SSE frame.
fn sse_frame(event: &str, data: &str) -> String {
    format!("event: {event}\ndata: {data}\n\n")
}

fn sse_response(body: Body) -> Response {
    Response::builder().status(200).header(header::CONTENT_TYPE, "text/event-stream").body(body).unwrap()
}

/// The user-facing reason the summary gives for an error code (`DispatchError::user_reason`).
fn zh_reason(code: &str) -> &'static str {
    match code {
        "timeout" => "服务响应超时",
        "connect" => "服务暂时无法连接",
        "disconnected" => "与服务的连接中断",
        "agent_error" => "服务处理失败",
        _ => "服务返回了无法使用的结果",
    }
}

/// The invariants of a turn in which the faked weather sub-task failed with `code` and the
/// exchange sub-task succeeded; returns the `agent_failed` event.
fn assert_weather_failed_exchange_done<'a>(app: &TestApp, events: &'a [Value], code: &str) -> &'a Value {
    let done = done(events);
    assert_eq!(done["stage"], "answer", "{done:#}");

    let failed = of_stage(events, "agent_failed");
    assert_eq!(failed.len(), 1, "one failure: {events:#?}");
    let failed = failed[0];
    assert_eq!(failed["agent_id"], "weather_agent");
    assert_eq!(failed["metadata"]["state"]["status"], "failed");
    assert_eq!(failed["metadata"]["state"]["error"]["code"], code, "{failed:#}");

    // The other sub-task is untouched by the fault: called once, done, its output relayed.
    let ok = of_stage(events, "agent_done");
    assert_eq!(ok.len(), 1, "{events:#?}");
    assert_eq!(ok[0]["agent_id"], "exchange_agent");
    assert_eq!(ok[0]["metadata"]["state"]["output"]["currency"], "USD");
    assert!(ok[0]["metadata"]["state"]["output"]["cny"].is_number());
    assert_eq!(app.calls("exchange_agent").len(), 1);
    // The sample weather agent is not where the config points any more.
    assert!(app.calls("weather_agent").is_empty());

    // Order: the weather task starts before it fails, and nothing of it follows the failure.
    let started = events
        .iter()
        .position(|e| e["stage"] == "agent_started" && e["agent_id"] == "weather_agent")
        .expect("weather agent_started");
    let failed_at = events.iter().position(|e| e["stage"] == "agent_failed").unwrap();
    assert!(started < failed_at);
    assert!(
        events[failed_at + 1..].iter().all(|e| e["agent_id"] != "weather_agent"),
        "no weather event after its failure: {events:#?}"
    );

    // The answer tells both; the failure with a user-facing reason, not the internal error.
    let text = done["content"].as_str().unwrap();
    assert!(text.contains("已为您完成") && text.contains("未能完成"), "{text}");
    assert!(text.contains(ok[0]["content"].as_str().unwrap()), "exchange message in the answer: {text}");
    assert!(text.contains(zh_reason(code)), "reason for {code} in the answer: {text}");
    let internal = failed["metadata"]["state"]["error"]["message"].as_str().unwrap();
    assert!(!text.contains(internal), "internal error in the answer: {text}");
    assert_no_agent_ids(events, &AGENT_IDS);
    failed
}

/// The `agent_delta` texts of the weather task, in order.
fn weather_deltas(events: &[Value]) -> Vec<&str> {
    of_stage(events, "agent_delta")
        .iter()
        .filter(|e| e["agent_id"] == "weather_agent")
        .map(|e| e["content"].as_str().unwrap())
        .collect()
}

#[tokio::test]
async fn a_hanging_agent_times_out() {
    let (url, calls) = fake(|_| std::future::pending::<Response>()).await;
    let app = app_with_weather(&url, "http", "300ms", 2).await;
    let events = app.ask(BOTH, None).await;
    assert_weather_failed_exchange_done(&app, &events, "timeout");
    // The timeout bounds the call, retries included: a hang is not retried.
    assert_eq!(calls.load(SeqCst), 1);
}

#[tokio::test]
async fn a_500_fails_with_status_and_is_not_retried() {
    let (url, calls) =
        fake(|_| async { (StatusCode::INTERNAL_SERVER_ERROR, "boom: stack trace here").into_response() }).await;
    let app = app_with_weather(&url, "http", "5s", 2).await;
    let events = app.ask(BOTH, None).await;
    let failed = assert_weather_failed_exchange_done(&app, &events, "status");
    assert!(failed["metadata"]["state"]["error"]["message"].as_str().unwrap().contains("500"), "{failed:#}");
    assert!(!done(&events)["content"].as_str().unwrap().contains("stack trace"));
    assert_eq!(calls.load(SeqCst), 1, "500 is not retryable");
}

#[tokio::test]
async fn a_503_is_retried_and_the_retry_succeeds() {
    let (url, calls) = fake(|n| async move {
        if n == 0 {
            (StatusCode::SERVICE_UNAVAILABLE, "try again").into_response()
        } else {
            axum::Json(valid_weather()).into_response()
        }
    })
    .await;
    let app = app_with_weather(&url, "http", "5s", 1).await;
    let events = app.ask(BOTH, None).await;
    let done = done(&events);
    assert_eq!(calls.load(SeqCst), 2, "one 503, one retry");
    assert!(of_stage(&events, "agent_failed").is_empty(), "{events:#?}");
    let ok: Vec<&str> = of_stage(&events, "agent_done").iter().map(|e| e["agent_id"].as_str().unwrap()).collect();
    assert_eq!(ok.len(), 2);
    assert!(ok.contains(&"weather_agent") && ok.contains(&"exchange_agent"), "{ok:?}");
    // The retry is invisible to the user: one start per sub-task, and a clean answer.
    assert_eq!(of_stage(&events, "agent_started").len(), 2);
    let text = done["content"].as_str().unwrap();
    assert!(text.contains("上海未来三天晴（伪造的天气服务）"), "{text}");
    assert!(!text.contains("未能完成"), "{text}");
}

#[tokio::test]
async fn a_503_every_time_is_retried_exactly_retries_times() {
    let (url, calls) = fake(|_| async { (StatusCode::SERVICE_UNAVAILABLE, "down").into_response() }).await;
    let app = app_with_weather(&url, "http", "5s", 2).await;
    let events = app.ask(BOTH, None).await;
    assert_weather_failed_exchange_done(&app, &events, "status");
    assert_eq!(calls.load(SeqCst), 3, "the first call and two retries");
}

/// How a raw agent breaks the connection once it has received a whole request.
#[derive(Clone, Copy)]
enum Break {
    /// Answers `200 text/event-stream` (chunked) with one `delta` event, waits so it is surely
    /// read and relayed, then breaks the connection mid-body (no terminating chunk, no `result`).
    AfterSseDelta,
    /// Sends nothing at all: the request was delivered, the reply never starts.
    BeforeResponse,
}

/// A raw HTTP/1.1 agent below axum: for each connection, reads one complete request (head and
/// `content-length` body) and counts it, then breaks the connection as `how` says, with an RST
/// (`reset`) or a plain FIN.
async fn raw_agent(how: Break, reset: bool) -> (String, Calls) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let calls: Calls = Arc::default();
    let counter = calls.clone();
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            let counter = counter.clone();
            tokio::spawn(async move {
                let _ = serve_raw(stream, &counter, how, reset).await;
            });
        }
    });
    (format!("http://{addr}/invoke"), calls)
}

async fn serve_raw(mut stream: TcpStream, calls: &AtomicUsize, how: Break, reset: bool) -> std::io::Result<()> {
    let mut req = Vec::new();
    let mut buf = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = req.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            return Ok(());
        }
        req.extend_from_slice(&buf[..n]);
    };
    let head = String::from_utf8_lossy(&req[..head_end]).to_ascii_lowercase();
    let length: usize =
        head.lines().find_map(|l| l.strip_prefix("content-length:")).map_or(0, |v| v.trim().parse().unwrap());
    while req.len() < head_end + length {
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            return Ok(());
        }
        req.extend_from_slice(&buf[..n]);
    }
    let body: Value = serde_json::from_slice(&req[head_end..head_end + length]).unwrap();
    assert_eq!(body["inputs"]["city"], "上海", "a whole request was received");
    calls.fetch_add(1, SeqCst);
    if let Break::AfterSseDelta = how {
        let event = sse_frame("delta", r#"{"text":"正在查询上海的天气…"}"#);
        let mut out =
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n".to_vec();
        out.extend_from_slice(format!("{:x}\r\n{event}\r\n", event.len()).as_bytes());
        stream.write_all(&out).await?;
        stream.flush().await?;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    if reset {
        stream.set_zero_linger()?;
    }
    drop(stream);
    Ok(())
}

async fn check_broken_sse(reset: bool) {
    let (url, calls) = raw_agent(Break::AfterSseDelta, reset).await;
    let app = app_with_weather(&url, "sse", "5s", 2).await;
    let events = app.ask(BOTH, None).await;
    // A broken connection, not a malformed reply (issue 12 #11: it was labelled `protocol`).
    assert_weather_failed_exchange_done(&app, &events, "disconnected");
    // What arrived before the break was relayed, before the failure.
    assert_eq!(weather_deltas(&events), ["正在查询上海的天气…"], "{events:#?}");
    let delta_at = events.iter().position(|e| e["stage"] == "agent_delta").unwrap();
    let failed_at = events.iter().position(|e| e["stage"] == "agent_failed").unwrap();
    assert!(delta_at < failed_at);
    // A relayed byte is never followed by a retry (the user would see the stream twice).
    assert_eq!(calls.load(SeqCst), 1, "no retry after a relayed delta");
}

#[tokio::test]
async fn a_connection_reset_mid_sse_fails_after_relaying_and_is_not_retried() {
    check_broken_sse(true).await;
}

#[tokio::test]
async fn a_connection_closed_mid_sse_without_result_fails_and_is_not_retried() {
    check_broken_sse(false).await;
}

#[tokio::test]
async fn a_malformed_sse_result_is_a_protocol_failure() {
    let (url, calls) = fake(|_| async {
        let body = format!("{}{}", sse_frame("delta", r#"{"text":"马上就好"}"#), sse_frame("result", "{not json"));
        sse_response(Body::from(body))
    })
    .await;
    let app = app_with_weather(&url, "sse", "5s", 2).await;
    let events = app.ask(BOTH, None).await;
    assert_weather_failed_exchange_done(&app, &events, "protocol");
    assert_eq!(weather_deltas(&events), ["马上就好"]);
    assert_eq!(calls.load(SeqCst), 1);
}

#[tokio::test]
async fn a_malformed_result_without_any_delta_is_not_retried_either() {
    // Nothing was relayed, but a malformed reply is not transient: no retry.
    let (url, calls) = fake(|_| async { sse_response(Body::from(sse_frame("result", "{not json"))) }).await;
    let app = app_with_weather(&url, "sse", "5s", 2).await;
    let events = app.ask(BOTH, None).await;
    assert_weather_failed_exchange_done(&app, &events, "protocol");
    assert!(weather_deltas(&events).is_empty());
    assert_eq!(calls.load(SeqCst), 1);
}

#[tokio::test]
async fn an_sse_error_event_is_an_agent_error() {
    let (url, calls) =
        fake(|_| async { sse_response(Body::from(sse_frame("error", r#"{"message":"上游气象源不可用"}"#))) }).await;
    let app = app_with_weather(&url, "sse", "5s", 2).await;
    let events = app.ask(BOTH, None).await;
    let failed = assert_weather_failed_exchange_done(&app, &events, "agent_error");
    assert!(failed["metadata"]["state"]["error"]["message"].as_str().unwrap().contains("上游气象源不可用"));
    assert_eq!(calls.load(SeqCst), 1);
}

#[tokio::test]
async fn a_never_ending_drip_times_out_after_relaying_deltas() {
    // Deltas every 50 ms, forever; `produced` counts what the fake managed to hand to the socket.
    let produced: Calls = Arc::default();
    let p = produced.clone();
    let (url, calls) = fake(move |_| {
        let p = p.clone();
        async move {
            let drip = futures::stream::unfold(0usize, move |i| {
                let p = p.clone();
                async move {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    p.fetch_add(1, SeqCst);
                    Some((
                        Ok::<_, Infallible>(Bytes::from(sse_frame("delta", &format!(r#"{{"text":"第{i}段"}}"#)))),
                        i + 1,
                    ))
                }
            });
            sse_response(Body::from_stream(drip))
        }
    })
    .await;
    let app = app_with_weather(&url, "sse", "500ms", 2).await;
    let events = app.ask(BOTH, None).await;
    assert_weather_failed_exchange_done(&app, &events, "timeout");
    let deltas = weather_deltas(&events);
    assert!(!deltas.is_empty(), "deltas relayed before the timeout: {events:#?}");
    let expected: Vec<String> = (0..deltas.len()).map(|i| format!("第{i}段")).collect();
    assert_eq!(deltas, expected, "relayed in order, none lost or repeated");
    let failed_at = events.iter().position(|e| e["stage"] == "agent_failed").unwrap();
    let last_delta = events.iter().rposition(|e| e["stage"] == "agent_delta").unwrap();
    assert!(last_delta < failed_at);
    assert_eq!(calls.load(SeqCst), 1);

    // The supervisor hung up: the drip stops being pulled (bounded wait, not a timing assertion).
    let mut last = produced.load(SeqCst);
    let mut stable = false;
    for _ in 0..10 {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let now = produced.load(SeqCst);
        if now == last {
            stable = true;
            break;
        }
        last = now;
    }
    assert!(stable, "the abandoned stream is still being read ({last} frames)");
}

const HUGE: usize = 50 * 1024 * 1024;

/// A 50 MB JSON-looking body, produced lazily in 64 KiB chunks; `produced` counts the bytes
/// handed to hyper and `finished` says whether all of it was.
async fn huge_agent(declare_length: bool) -> (String, Calls, Calls, Arc<AtomicBool>) {
    let produced: Calls = Arc::default();
    let finished = Arc::new(AtomicBool::new(false));
    let (p, f) = (produced.clone(), finished.clone());
    let (url, calls) = fake(move |_| {
        let (p, f) = (p.clone(), f.clone());
        async move {
            const CHUNK: usize = 64 * 1024;
            let head = br#"{"output":{"pad":""#;
            let body = futures::stream::unfold(0usize, move |sent| {
                let (p, f) = (p.clone(), f.clone());
                async move {
                    if sent >= HUGE {
                        f.store(true, SeqCst);
                        return None;
                    }
                    let mut chunk = vec![b'a'; CHUNK.min(HUGE - sent)];
                    if sent == 0 {
                        chunk[..head.len()].copy_from_slice(head);
                    }
                    p.fetch_add(chunk.len(), SeqCst);
                    let n = chunk.len();
                    Some((Ok::<_, Infallible>(Bytes::from(chunk)), sent + n))
                }
            });
            let mut resp = Response::builder().status(200).header(header::CONTENT_TYPE, "application/json");
            if declare_length {
                resp = resp.header(header::CONTENT_LENGTH, HUGE);
            }
            resp.body(Body::from_stream(body)).unwrap()
        }
    })
    .await;
    (url, calls, produced, finished)
}

async fn check_huge(declare_length: bool) {
    let (url, calls, produced, finished) = huge_agent(declare_length).await;
    let app = app_with_weather(&url, "http", "20s", 2).await;
    let events = app.ask(BOTH, None).await;
    assert_weather_failed_exchange_done(&app, &events, "too_large");
    assert_eq!(calls.load(SeqCst), 1, "too_large is not retried");
    // The supervisor stopped reading at the cap instead of draining the 50 MB.
    assert!(!finished.load(SeqCst), "the whole body was read ({} bytes)", produced.load(SeqCst));
}

#[tokio::test]
async fn a_50_mb_body_with_content_length_is_too_large() {
    check_huge(true).await;
}

#[tokio::test]
async fn a_50_mb_chunked_body_is_too_large() {
    check_huge(false).await;
}

#[tokio::test]
async fn an_output_of_the_wrong_shape_is_rejected() {
    // The real output schema stays; the fake sends a forecast that is a string, not three days.
    let (url, calls) = fake(|_| async {
        axum::Json(json!({ "output": { "city": "上海", "forecast": "晴" }, "message": "上海今天晴，伪造的结果" }))
            .into_response()
    })
    .await;
    let app = app_with_weather(&url, "http", "5s", 2).await;
    let events = app.ask(BOTH, None).await;
    let failed = assert_weather_failed_exchange_done(&app, &events, "output_rejected");
    assert!(failed["metadata"]["state"]["error"]["message"].as_str().unwrap().contains("forecast"), "{failed:#}");
    // A rejected output never reaches the user, nor the agent's message.
    assert!(!done(&events)["content"].as_str().unwrap().contains("伪造的结果"));
    assert_eq!(calls.load(SeqCst), 1, "a rejected output is not retried");
}

async fn check_dropped_before_response(reset: bool) {
    let (url, calls) = raw_agent(Break::BeforeResponse, reset).await;
    let app = app_with_weather(&url, "http", "5s", 2).await;
    let events = app.ask(BOTH, None).await;
    assert_weather_failed_exchange_done(&app, &events, "disconnected");
    // The agent had the whole request and may have acted on it (booked, paid): sending it again
    // is not "safe to retry" in the sense of `DispatchError::is_retryable`.
    assert_eq!(calls.load(SeqCst), 1, "a request the agent fully received is not sent again");
}

#[tokio::test]
async fn a_connection_reset_after_the_request_was_received_is_not_retried() {
    check_dropped_before_response(true).await;
}

#[tokio::test]
async fn a_connection_closed_after_the_request_was_received_is_not_retried() {
    check_dropped_before_response(false).await;
}

#[tokio::test]
async fn an_sse_event_over_1_mib_is_too_large() {
    let (url, calls) = fake(|_| async {
        let big = format!(r#"{{"output":{{"pad":"{}"}},"message":"x"}}"#, "a".repeat(2 * 1024 * 1024));
        sse_response(Body::from(sse_frame("result", &big)))
    })
    .await;
    let app = app_with_weather(&url, "sse", "5s", 2).await;
    let events = app.ask(BOTH, None).await;
    assert_weather_failed_exchange_done(&app, &events, "too_large");
    assert_eq!(calls.load(SeqCst), 1);
}

/// An SSE body whose second line is `line_bytes` long and never ends, produced lazily in 64 KiB
/// chunks after a first valid delta; `produced` counts the bytes handed to hyper and `finished`
/// says whether all of it was.
fn endless_line_body(prefix: &str, line_bytes: usize, produced: Calls, finished: Arc<AtomicBool>) -> Body {
    const CHUNK: usize = 64 * 1024;
    let head = Bytes::from(prefix.to_string());
    let body = futures::stream::unfold(0usize, move |sent| {
        let (p, f, head) = (produced.clone(), finished.clone(), head.clone());
        async move {
            if sent == 0 {
                return Some((Ok::<_, Infallible>(head), 1));
            }
            if sent >= line_bytes {
                f.store(true, SeqCst);
                return None;
            }
            let chunk = vec![b'a'; CHUNK];
            p.fetch_add(chunk.len(), SeqCst);
            Some((Ok(Bytes::from(chunk)), sent + CHUNK))
        }
    });
    Body::from_stream(body)
}

/// Twenty megabytes on one line: past the total limit only after 8 MiB, past the event limit
/// after 1 MiB.
const LONG_LINE: usize = 20 * 1024 * 1024;

#[tokio::test]
async fn an_sse_line_without_end_fails_as_too_large_while_it_arrives() {
    // Issue 12 #1: the event limit was checked only on a complete event, and the parser re-read
    // the buffered line at every chunk: the sub-task ran into its timeout instead.
    let produced: Calls = Arc::default();
    let finished = Arc::new(AtomicBool::new(false));
    let (p, f) = (produced.clone(), finished.clone());
    let (url, calls) = fake(move |_| {
        let prefix = format!("{}event: result\ndata: {{\"pad\":\"", sse_frame("delta", r#"{"text":"开始"}"#));
        let body = endless_line_body(&prefix, LONG_LINE, p.clone(), f.clone());
        async move { sse_response(body) }
    })
    .await;
    let app = app_with_weather(&url, "sse", "20s", 2).await;
    let events = tokio::time::timeout(Duration::from_secs(15), app.ask(BOTH, None)).await.expect("the turn ended");
    assert_weather_failed_exchange_done(&app, &events, "too_large");
    assert_eq!(weather_deltas(&events), ["开始"], "what came before the long line was relayed");
    assert_eq!(calls.load(SeqCst), 1);
    assert!(!finished.load(SeqCst), "the whole line was read ({} bytes)", produced.load(SeqCst));
}

/// A fake A2A agent: its card (streaming, JSON-RPC at `/rpc`) under `/invoke`, and `/rpc`
/// answering with `rpc_body()` as `text/event-stream`.
async fn fake_a2a<F>(rpc_body: F) -> (String, Calls)
where
    F: Fn() -> Body + Clone + Send + Sync + 'static,
{
    let calls: Calls = Arc::default();
    let counter = calls.clone();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let card = json!({
        "name": "fake weather", "description": "fake", "version": "1.0",
        "supportedInterfaces": [{ "url": format!("http://{addr}/rpc"), "protocolBinding": "JSONRPC",
                                  "protocolVersion": "1.0" }],
        "capabilities": { "streaming": true },
        "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"], "skills": [],
    });
    let router = Router::new()
        .route("/invoke/.well-known/agent-card.json", axum::routing::get(move || async move { axum::Json(card) }))
        .route(
            "/rpc",
            post(move || {
                counter.fetch_add(1, SeqCst);
                let body = rpc_body();
                async move { sse_response(body) }
            }),
        );
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    (format!("http://{addr}/invoke"), calls)
}

#[tokio::test]
async fn an_a2a_stream_line_without_end_fails_as_too_large_while_it_arrives() {
    let produced: Calls = Arc::default();
    let finished = Arc::new(AtomicBool::new(false));
    let (p, f) = (produced.clone(), finished.clone());
    let (url, calls) = fake_a2a(move || {
        endless_line_body(r#"data: {"jsonrpc":"2.0","id":"1","result":{"pad":""#, LONG_LINE, p.clone(), f.clone())
    })
    .await;
    let app = app_with_weather(&url, "a2a", "20s", 0).await;
    let events = tokio::time::timeout(Duration::from_secs(15), app.ask(BOTH, None)).await.expect("the turn ended");
    assert_weather_failed_exchange_done(&app, &events, "too_large");
    assert_eq!(calls.load(SeqCst), 1);
    assert!(!finished.load(SeqCst), "the whole line was read ({} bytes)", produced.load(SeqCst));
}

/// The secret of [`an_agent_echoing_its_secret_header_is_masked`]: `Bearer ${SB_FAULTS_ECHO_SECRET}`.
/// It holds `"` and `\`, which JSON escapes.
const ECHO_SECRET: &str = r#"sk-live>>??echo-"7f\3a"#;

/// A weather agent (`sse`) that sends back the `Authorization` header it received: raw, Base64,
/// URL-encoded, inside a JSON document (escaped) and split across two deltas, then raw in its
/// `result` (message and output) or, when `fail`, in an `error` event.
async fn echo_agent(fail: bool) -> String {
    use base64::Engine;
    let router = Router::new().route(
        "/invoke",
        post(move |headers: axum::http::HeaderMap| async move {
            let auth = headers[header::AUTHORIZATION].to_str().unwrap().to_string();
            let secret = auth.trim_start_matches("Bearer ");
            let b64 = base64::engine::general_purpose::STANDARD.encode(secret);
            let url: String = secret.bytes().map(|b| format!("%{b:02X}")).collect();
            let mut body = String::new();
            // The last two deltas split the secret between them.
            let (head, tail) = secret.split_at(8);
            let texts = [
                format!("收到 {auth}"),
                format!("b64 {b64}"),
                format!("url {url}"),
                format!("json {}", json!({ "auth": auth })),
                format!("split {head}"),
                format!("{tail}!"),
            ];
            for text in texts {
                body.push_str(&sse_frame("delta", &json!({ "text": text }).to_string()));
            }
            if fail {
                body.push_str(&sse_frame("error", &json!({ "message": format!("bad token {auth}") }).to_string()));
            } else {
                let mut reply = valid_weather();
                reply["message"] = json!(format!("上海晴，令牌 {auth}"));
                reply["output"]["echo"] = json!(auth);
                body.push_str(&sse_frame("result", &reply.to_string()));
            }
            sse_response(Body::from(body))
        }),
    );
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    format!("http://{addr}/invoke")
}

fn assert_no_secret(events: &[Value]) {
    use base64::Engine;
    let all = serde_json::to_string(events).unwrap();
    let b64 = base64::engine::general_purpose::STANDARD.encode(ECHO_SECRET);
    let escaped = serde_json::to_string(ECHO_SECRET).unwrap();
    let escaped = &escaped[1..escaped.len() - 1];
    for form in [ECHO_SECRET, escaped, &b64, "sk-live%3E%3E%3F%3Fecho"] {
        assert!(!all.contains(form), "{form} reached the user: {events:#?}");
    }
}

#[tokio::test]
async fn an_agent_echoing_its_secret_header_is_masked() {
    // Issue 12 #3: an agent answering with the secret it was sent showed it to the user.
    std::env::set_var("SB_FAULTS_ECHO_SECRET", ECHO_SECRET);
    for fail in [false, true] {
        let url = echo_agent(fail).await;
        let app = spawn_app_with(Setup::default(), |c| {
            let w = agent_mut(c, "weather_agent");
            w["endpoint"]["url"] = json!(url);
            w["endpoint"]["protocol"] = json!("sse");
            w["endpoint"]["headers"] = json!({ "Authorization": "Bearer ${SB_FAULTS_ECHO_SECRET}" });
            w["output_schema"] = json!({ "type": "object" });
        })
        .await;
        let events = app.ask(BOTH, None).await;
        assert_no_secret(&events);
        // The start of the split secret is held back until the next delta shows it is one.
        assert_eq!(
            weather_deltas(&events),
            ["收到 Bearer ***", "b64 ***", "url ***", r#"json {"auth":"Bearer ***"}"#, "split ", "***!"],
            "{events:#?}"
        );
        if fail {
            let failed = assert_weather_failed_exchange_done(&app, &events, "agent_error");
            assert_eq!(failed["metadata"]["state"]["error"]["message"], "agent error: bad token Bearer ***");
        } else {
            let ok = of_stage(&events, "agent_done");
            let weather = ok.iter().find(|e| e["agent_id"] == "weather_agent").expect("weather done");
            assert_eq!(weather["content"], "上海晴，令牌 Bearer ***");
            assert_eq!(weather["metadata"]["state"]["output"]["echo"], "Bearer ***");
            assert!(done(&events)["content"].as_str().unwrap().contains("令牌 Bearer ***"), "{events:#?}");
        }
        // The logs mask it too (the writer's mask holds every secret of every loaded config).
        assert_eq!(switchboard::logging::mask_log(&format!("echo {ECHO_SECRET}")), "echo ***");
        let json_line = json!({ "message": format!("echo {ECHO_SECRET}") }).to_string();
        assert_eq!(switchboard::logging::mask_log(&json_line), r#"{"message":"echo ***"}"#);
    }
}

#[tokio::test]
async fn an_sse_reply_that_ends_cleanly_without_a_result_is_a_protocol_failure() {
    // The other side of the classification: the connection is fine, the reply is not.
    let (url, calls) = fake(|_| async { sse_response(Body::from(sse_frame("delta", r#"{"text":"稍等"}"#))) }).await;
    let app = app_with_weather(&url, "sse", "5s", 2).await;
    let events = app.ask(BOTH, None).await;
    assert_weather_failed_exchange_done(&app, &events, "protocol");
    assert_eq!(weather_deltas(&events), ["稍等"]);
    assert_eq!(calls.load(SeqCst), 1);
}
