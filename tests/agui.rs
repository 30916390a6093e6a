//! `POST /v1/ag-ui`: the AG-UI event vocabulary, interrupts for missing semantic keys, resume.
//! When the Python peers are installed (`tests/peers/setup.sh`, which CI runs), every event is
//! also parsed by the `ag-ui-protocol` package's models.

use eventsource_stream::Eventsource;
use futures::StreamExt;
use serde_json::{json, Value};

use crate::common::*;

/// The anonymous caller the tests are (the demo config allows anonymous callers): one token, so
/// every run of a test is the same caller, as a browser keeping the token would be.
const CALLER_TOKEN: &str = "5ca1ab1e5ca1ab1e5ca1ab1e5ca1ab1e";

/// The user [`CALLER_TOKEN`] is served as (for `GET /v1/sessions`).
fn caller() -> String {
    switchboard::api::identity::user_of(CALLER_TOKEN)
}

/// A run of the test's caller.
async fn run(app: &TestApp, body: Value) -> Vec<Value> {
    let me = Anon { token: CALLER_TOKEN.into(), user: caller() };
    run_as(app, body, Some(&me)).await.0
}

/// An anonymous caller: what the server told it (`x-anonymous-token`, `x-user-id`).
#[derive(Debug, Clone, Default)]
struct Anon {
    token: String,
    user: String,
}

/// A run sending `x-anonymous-token` when `anon` is given; returns the events and the identity the
/// server answered with (empty for a caller that named a user).
async fn run_as(app: &TestApp, body: Value, anon: Option<&Anon>) -> (Vec<Value>, Anon) {
    let mut req = app.client.post(format!("{}/v1/ag-ui", app.base)).json(&body);
    if let Some(a) = anon {
        req = req.header("x-anonymous-token", &a.token);
    }
    let resp = req.send().await.unwrap();
    assert_eq!(resp.status(), 200);
    let header = |name: &str| resp.headers().get(name).map(|v| v.to_str().unwrap().to_string()).unwrap_or_default();
    let told = Anon { token: header("x-anonymous-token"), user: header("x-user-id") };
    let mut events = Vec::new();
    let mut stream = resp.bytes_stream().eventsource();
    while let Some(ev) = stream.next().await {
        events.push(serde_json::from_str::<Value>(&ev.unwrap().data).unwrap());
    }
    (events, told)
}

fn types(events: &[Value]) -> Vec<&str> {
    events.iter().map(|e| e["type"].as_str().unwrap()).collect()
}

/// Structural rules of an AG-UI run: starts and finishes once, steps balanced, text messages
/// opened before content and closed once, within their step.
fn check_run(events: &[Value]) {
    let t = types(events);
    assert_eq!(t[0], "RUN_STARTED");
    assert!(matches!(*t.last().unwrap(), "RUN_FINISHED" | "RUN_ERROR"));
    assert_eq!(t.iter().filter(|x| x.starts_with("RUN_")).count(), 2);
    let mut step: Option<String> = None;
    let mut open: Vec<String> = Vec::new();
    for e in events {
        match e["type"].as_str().unwrap() {
            "STEP_STARTED" => {
                assert!(step.is_none(), "steps do not nest: {e}");
                step = Some(e["stepName"].as_str().unwrap().to_string());
            }
            "STEP_FINISHED" => {
                assert_eq!(step.take().as_deref(), e["stepName"].as_str());
                assert!(open.is_empty(), "text messages end within their step: {open:?} open at {e}");
            }
            "TEXT_MESSAGE_START" => open.push(e["messageId"].as_str().unwrap().to_string()),
            "TEXT_MESSAGE_CONTENT" => {
                assert!(open.iter().any(|m| m == e["messageId"].as_str().unwrap()), "content of an open message: {e}");
                assert!(!e["delta"].as_str().unwrap().is_empty());
            }
            "TEXT_MESSAGE_END" => {
                let id = e["messageId"].as_str().unwrap();
                let pos = open.iter().position(|m| m == id).expect("end of an open message");
                open.remove(pos);
            }
            _ => {}
        }
    }
    assert!(step.is_none() && open.is_empty(), "everything closed");
    validate_with_python(events);
}

fn validate_with_python(events: &[Value]) {
    use std::io::Write;
    let python = repo().join("tests/peers/.venv/bin/python");
    if !python.exists() {
        let _ = writeln!(std::io::stderr(), "SKIPPED ag-ui-protocol validation: run tests/peers/setup.sh (CI does)");
        return;
    }
    let mut child = std::process::Command::new(python)
        .arg(repo().join("tests/peers/agui_validate.py"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let input: String = events.iter().map(|e| format!("{e}\n")).collect();
    child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "ag-ui-protocol rejected events:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test]
async fn missing_keys_end_the_run_with_an_interrupt_and_resume_completes_it() {
    let app = spawn_app_with(Setup::default(), |_| {}).await;
    let first = run(
        &app,
        json!({ "threadId": "agui-thread-1", "runId": "run-1", "state": {}, "tools": [], "context": [], "forwardedProps": {},
                "messages": [{ "id": "m1", "role": "user", "content": "帮我订个酒店" }] }),
    )
    .await;
    check_run(&first);
    let t = types(&first);
    assert!(t.contains(&"ACTIVITY_SNAPSHOT"));
    let plan = first.iter().find(|e| e["type"] == "ACTIVITY_SNAPSHOT").unwrap();
    assert_eq!(plan["activityType"], "PLAN");
    assert_eq!(plan["content"]["sub_tasks"][0]["status"], "blocked");
    let finished = first.last().unwrap();
    assert_eq!((finished["threadId"].as_str(), finished["runId"].as_str()), (Some("agui-thread-1"), Some("run-1")));
    assert_eq!(finished["outcome"]["type"], "interrupt");
    let interrupt = &finished["outcome"]["interrupts"][0];
    assert_eq!(interrupt["reason"], "input_required");
    assert!(interrupt["message"].as_str().unwrap().contains("入住城市"));
    assert!(interrupt["expiresAt"].is_string());
    assert_eq!(interrupt["responseSchema"]["required"], json!(["city", "check_in_date"]));
    assert!(interrupt["responseSchema"]["properties"]["city"]["enum"].is_array(), "built from the input schema");
    let widgets: Vec<&str> =
        interrupt["metadata"]["widgets"].as_array().unwrap().iter().map(|w| w["widget"].as_str().unwrap()).collect();
    assert_eq!(widgets, ["city_picker", "date_picker"]);
    assert_eq!(interrupt["metadata"]["widgets"][0]["descriptor"]["component"], "CityPicker");
    assert!(app.calls("hotel_agent").is_empty());

    let second = run(
        &app,
        json!({ "threadId": "agui-thread-1", "runId": "run-2", "messages": [],
                "resume": [{ "interruptId": interrupt["id"], "status": "resolved",
                             "payload": { "city": "北京", "check_in_date": "2026-12-01" } }] }),
    )
    .await;
    check_run(&second);
    assert_eq!(second.last().unwrap()["outcome"]["type"], "success");
    let calls = app.calls("hotel_agent");
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].body["inputs"]["city"], "北京");
    // The sub-task's output is a text message attributed to the sub-task.
    let task_id = interrupt["id"].as_str().unwrap();
    assert!(second.iter().any(|e| e["type"] == "TEXT_MESSAGE_CONTENT" && e["messageId"] == task_id));
    assert!(second.iter().any(|e| e["type"] == "TEXT_MESSAGE_CONTENT" && e["messageId"] == "answer_run-2"));
}

#[tokio::test]
async fn a_cancelled_interrupt_drops_the_pending_work() {
    let app = spawn_app_with(Setup::default(), |_| {}).await;
    let first = run(&app, json!({ "threadId": "agui-thread-2", "runId": "r1", "messages": [{ "id": "m1", "role": "user", "content": "帮我订个酒店" }] })).await;
    let id = first.last().unwrap()["outcome"]["interrupts"][0]["id"].clone();
    let second = run(&app, json!({ "threadId": "agui-thread-2", "runId": "r2", "messages": [], "resume": [{ "interruptId": id, "status": "cancelled" }] })).await;
    check_run(&second);
    let s: Value = app.get(&format!("/v1/sessions/agui-thread-2?user_id={}", caller())).await;
    assert!(s["pending"].is_null());
}

#[tokio::test]
async fn an_interrupt_expires_when_the_stored_clarification_does() {
    let app = spawn_app_with(Setup::default(), |_| {}).await;
    let first = run(&app, json!({ "threadId": "agui-thread-4", "runId": "r1", "messages": [{ "id": "m1", "role": "user", "content": "帮我订个酒店" }] })).await;
    let expires = first.last().unwrap()["outcome"]["interrupts"][0]["expiresAt"].as_str().unwrap().to_string();
    let s: Value = app.get(&format!("/v1/sessions/agui-thread-4?user_id={}", caller())).await;
    assert_eq!(s["pending"]["expires_at"].as_str().unwrap(), expires, "one expiry, stored and shown");
}

#[tokio::test]
async fn a_full_run_streams_steps_sub_agent_messages_and_the_answer() {
    let app = spawn_app_with(Setup::default(), |_| {}).await;
    let events = run(
        &app,
        json!({ "threadId": "agui-thread-3", "runId": "r1", "state": { "user_id": "alice" },
                "messages": [{ "id": "m1", "role": "user", "content": "帮我查一下航班CA1234，然后安排白云机场接机" }] }),
    )
    .await;
    check_run(&events);
    let steps: Vec<&str> =
        events.iter().filter(|e| e["type"] == "STEP_STARTED").map(|e| e["stepName"].as_str().unwrap()).collect();
    assert_eq!(steps, ["intent", "plan", "execute", "summarize"]);
    assert_eq!(events.last().unwrap()["outcome"]["type"], "success");
    // The pickup agent's streamed deltas arrive as content of its own message.
    let pickup_deltas = events
        .iter()
        .filter(|e| e["type"] == "TEXT_MESSAGE_CONTENT" && e["delta"].as_str().unwrap().contains("司机"))
        .count();
    assert!(pickup_deltas >= 2);
    assert_eq!(app.calls("flight_agent")[0].body["user_id"], "alice");
}

#[tokio::test]
async fn bad_ag_ui_bodies_are_json_errors() {
    let app = spawn_app_with(Setup::default(), |_| {}).await;
    let resp = app.client.post(format!("{}/v1/ag-ui", app.base)).json(&json!({ "runId": "x" })).send().await.unwrap();
    assert_eq!(resp.status(), 400);
    let resp = app
        .client
        .post(format!("{}/v1/ag-ui", app.base))
        .json(&json!({ "threadId": "t", "runId": "r", "messages": [], "resume": [{ "interruptId": "i", "status": "maybe" }] }))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
    assert_eq!(resp.json::<Value>().await.unwrap()["error"]["code"], "invalid_resume");
}

#[tokio::test]
async fn a_sub_agents_question_is_an_interrupt_answered_in_text() {
    use crate::a2a_peer::{booked, TrainAgent, QUESTION};
    let peer = TrainAgent::spawn().await;
    let entry = peer.config_entry();
    let app = spawn_app_with(Setup::default(), move |c| c["agents"].as_array_mut().unwrap().push(entry)).await;
    let first = run(
        &app,
        json!({ "threadId": "agui-train", "runId": "r1",
                                   "messages": [{ "id": "m1", "role": "user", "content": "帮我订一张火车票" }] }),
    )
    .await;
    check_run(&first);
    let finished = first.last().unwrap();
    assert_eq!(finished["outcome"]["type"], "interrupt", "{finished}");
    let interrupt = &finished["outcome"]["interrupts"][0];
    assert_eq!(interrupt["reason"], "input_required");
    assert_eq!(interrupt["message"], QUESTION);
    assert_eq!(interrupt["responseSchema"]["properties"]["answer"]["type"], "string");
    assert_eq!(interrupt["responseSchema"]["required"], json!(["answer"]));
    assert!(interrupt["expiresAt"].is_string());
    // The question is the sub-task's own message, ended before the execute step is.
    let asked = first.iter().position(|e| {
        e["type"] == "TEXT_MESSAGE_CONTENT" && e["messageId"] == interrupt["id"] && e["delta"] == QUESTION
    });
    let ended = first.iter().position(|e| e["type"] == "TEXT_MESSAGE_END" && e["messageId"] == interrupt["id"]);
    let execute_done = first.iter().position(|e| e["type"] == "STEP_FINISHED" && e["stepName"] == "execute");
    assert!(asked < ended && ended < execute_done && asked.is_some(), "{first:#?}");

    let second = run(
        &app,
        json!({ "threadId": "agui-train", "runId": "r2", "messages": [],
                                    "resume": [{ "interruptId": interrupt["id"], "status": "resolved",
                                                 "payload": { "answer": "12月3日" } }] }),
    )
    .await;
    check_run(&second);
    assert_eq!(second.last().unwrap()["outcome"]["type"], "success", "{second:#?}");
    let text: String = second
        .iter()
        .filter(|e| e["type"] == "TEXT_MESSAGE_CONTENT" && e["messageId"] == "answer_r2")
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    assert!(text.contains(&booked("12月3日")), "{text}");
    let sent = peer.requests();
    assert_eq!(sent.last().unwrap()["params"]["message"]["parts"][0]["text"], "12月3日");
}

#[tokio::test]
async fn a_resume_naming_no_pending_interrupt_is_refused() {
    let app = spawn_app_with(Setup::default(), |_| {}).await;
    let post = |body: Value| {
        let req =
            app.client.post(format!("{}/v1/ag-ui", app.base)).header("x-anonymous-token", CALLER_TOKEN).json(&body);
        async move { req.send().await.unwrap() }
    };
    let resume = |run: &str, id: &Value| {
        json!({ "threadId": "agui-thread-5", "runId": run, "messages": [],
                "resume": [{ "interruptId": id, "status": "resolved", "payload": { "city": "北京", "check_in_date": "2026-12-01" } }] })
    };
    let first = run(&app, json!({ "threadId": "agui-thread-5", "runId": "r1", "messages": [{ "id": "m1", "role": "user", "content": "帮我订个酒店" }] })).await;
    let id = first.last().unwrap()["outcome"]["interrupts"][0]["id"].clone();
    let bogus = post(resume("r2", &json!("plan_nope_task_1"))).await;
    assert_eq!(bogus.status(), 400);
    let body: Value = bogus.json().await.unwrap();
    assert_eq!(body["error"]["code"], "unknown_interrupt", "{body}");
    assert!(app.calls("hotel_agent").is_empty());

    check_run(&run(&app, resume("r3", &id)).await);
    assert_eq!(app.calls("hotel_agent").len(), 1);
    // Answered: the same interrupt cannot be resumed twice.
    let again = post(resume("r4", &id)).await;
    assert_eq!(again.status(), 400);
    assert_eq!(again.json::<Value>().await.unwrap()["error"]["code"], "unknown_interrupt");
    assert_eq!(app.calls("hotel_agent").len(), 1);
}

#[tokio::test]
async fn a_resume_with_form_values_only_keeps_the_conversations_language() {
    let app = spawn_app_with(Setup::default(), |_| {}).await;
    let first = run(&app, json!({ "threadId": "agui-thread-6", "runId": "r1", "messages": [{ "id": "m1", "role": "user", "content": "帮我订个酒店" }] })).await;
    let id = first.last().unwrap()["outcome"]["interrupts"][0]["id"].clone();
    let second = run(
        &app,
        json!({ "threadId": "agui-thread-6", "runId": "r2", "messages": [],
                "resume": [{ "interruptId": id, "status": "resolved", "payload": { "city": "北京", "check_in_date": "2026-12-01" } }] }),
    )
    .await;
    let answer: String = second
        .iter()
        .filter(|e| e["type"] == "TEXT_MESSAGE_CONTENT" && e["messageId"] == "answer_r2")
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    assert!(answer.starts_with("已为您完成"), "Chinese, like the conversation: {answer}");
    let steps: Vec<&str> = second.iter().filter_map(|e| e["delta"].as_str()).collect();
    assert!(!steps.iter().any(|d| d.contains("Done:") || d.contains("Processing")), "{steps:?}");
}

#[tokio::test]
async fn a_key_of_an_agent_without_input_schema_is_a_described_text_field() {
    let peer = crate::a2a_peer::TrainAgent::spawn().await;
    let url = peer.url.clone();
    let app = spawn_app_with(Setup::default(), move |c| {
        c["agents"].as_array_mut().unwrap().push(json!({
            "id": "train_agent",
            "endpoint": { "url": url, "protocol": "a2a" },
            "keywords": ["火车票"],
            "required_semantic_keys": [{ "key": "travel_date", "description": "出发日期", "widget": "date_picker" }],
        }));
    })
    .await;
    let events = run(&app, json!({ "threadId": "agui-thread-7", "runId": "r1", "messages": [{ "id": "m1", "role": "user", "content": "帮我订一张火车票" }] })).await;
    check_run(&events);
    let interrupt = &events.last().unwrap()["outcome"]["interrupts"][0];
    assert_eq!(
        interrupt["responseSchema"]["properties"]["travel_date"],
        json!({ "type": "string", "description": "出发日期" }),
        "{interrupt}"
    );
    assert_eq!(interrupt["responseSchema"]["required"], json!(["travel_date"]));
}

#[tokio::test]
async fn anonymous_callers_are_not_merged_into_one_user() {
    // Issue 12 #8: every AG-UI run without a user was user `ag-ui`, so a second caller resumed the
    // first caller's pending hotel booking.
    let app = spawn_app_with(Setup::default(), |_| {}).await;
    let start = json!({ "threadId": "agui-shared", "runId": "r1", "messages": [{ "id": "m1", "role": "user", "content": "帮我订个酒店" }] });
    let (first, alice) = run_as(&app, start, None).await;
    assert_eq!(alice.token.len(), 32, "a token is issued: {alice:?}");
    assert!(alice.user.starts_with("anon-"), "{alice:?}");
    let interrupt = first.last().unwrap()["outcome"]["interrupts"][0]["id"].clone();
    let resume = |run: &str| {
        json!({ "threadId": "agui-shared", "runId": run, "messages": [],
                "resume": [{ "interruptId": interrupt, "status": "resolved",
                             "payload": { "city": "北京", "check_in_date": "2026-12-01" } }] })
    };

    // Someone else on the same thread id, without the token or with a guessed one: a caller with
    // nothing pending there (400 unknown_interrupt); the booking is not made.
    for token in [None, Some("0123456789abcdef0123456789abcdef")] {
        let mut req = app.client.post(format!("{}/v1/ag-ui", app.base)).json(&resume("r2"));
        if let Some(t) = token {
            req = req.header("x-anonymous-token", t);
        }
        let resp = req.send().await.unwrap();
        assert_eq!(resp.status(), 400, "{token:?}");
        assert_eq!(resp.json::<Value>().await.unwrap()["error"]["code"], "unknown_interrupt");
        assert!(app.calls("hotel_agent").is_empty(), "another caller resumed the booking");
    }
    let s: Value = app.get(&format!("/v1/sessions/agui-shared?user_id={}", alice.user)).await;
    assert!(!s["pending"].is_null(), "the first caller's booking still waits: {s}");

    // The first caller, with its token, resumes it.
    let (events, again) = run_as(&app, resume("r3"), Some(&alice)).await;
    assert_eq!(again.user, alice.user);
    assert_eq!(events.last().unwrap()["outcome"]["type"], "success", "{events:#?}");
    assert_eq!(app.calls("hotel_agent").len(), 1);
}

#[tokio::test]
async fn anonymous_callers_are_refused_when_denied() {
    let app = spawn_app_with(Setup::default(), |c| c["supervisor"]["anonymous"] = json!("deny")).await;
    let body =
        json!({ "threadId": "t", "runId": "r", "messages": [{ "id": "m1", "role": "user", "content": "你好" }] });
    let resp = app.client.post(format!("{}/v1/ag-ui", app.base)).json(&body).send().await.unwrap();
    assert_eq!(resp.status(), 400);
    assert_eq!(resp.json::<Value>().await.unwrap()["error"]["code"], "user_required");
    let named = json!({ "threadId": "t", "runId": "r", "state": { "user_id": "alice" },
                        "messages": [{ "id": "m1", "role": "user", "content": "你好" }] });
    let (events, told) = run_as(&app, named, None).await;
    check_run(&events);
    assert!(told.token.is_empty(), "a named caller gets no token");
    // /a2a: a JSON-RPC error.
    let rpc = json!({ "jsonrpc": "2.0", "id": 1, "method": "SendMessage",
                      "params": { "message": { "messageId": "m", "role": "ROLE_USER", "parts": [{ "text": "你好" }] } } });
    let resp: Value =
        app.client.post(format!("{}/a2a", app.base)).json(&rpc).send().await.unwrap().json().await.unwrap();
    assert_eq!(resp["error"]["code"], -32600, "{resp}");
}

#[tokio::test]
async fn a_did_you_mean_question_is_an_enum_interrupt_and_resume_picks() {
    let app = spawn_app_with(Setup::default(), |_| {}).await;
    let first = run(
        &app,
        json!({ "threadId": "agui-choice", "runId": "r1",
                "messages": [{ "id": "m1", "role": "user", "content": "我明天要去上海" }] }),
    )
    .await;
    check_run(&first);
    let finished = first.last().unwrap();
    assert_eq!(finished["outcome"]["type"], "interrupt", "{finished}");
    let interrupt = &finished["outcome"]["interrupts"][0];
    let schema = &interrupt["responseSchema"];
    assert_eq!(schema["required"], json!(["intent"]));
    let ids = schema["properties"]["intent"]["enum"].as_array().unwrap().clone();
    assert!(ids.contains(&json!("weather_agent")), "{schema}");
    assert_eq!(interrupt["metadata"]["widgets"][0]["widget"], "intent_picker");
    assert_eq!(interrupt["metadata"]["widgets"][0]["descriptor"]["component"], "IntentPicker");
    assert_eq!(interrupt["metadata"]["candidates"].as_array().unwrap().len(), ids.len());

    let second = run(
        &app,
        json!({ "threadId": "agui-choice", "runId": "r2", "messages": [],
                "resume": [{ "interruptId": interrupt["id"], "status": "resolved", "payload": { "intent": "weather_agent" } }] }),
    )
    .await;
    check_run(&second);
    assert_eq!(second.last().unwrap()["outcome"]["type"], "success");
    assert_eq!(app.calls("weather_agent").len(), 1);
    assert_eq!(app.calls("weather_agent")[0].body["inputs"]["city"], "上海");
}

/// A part of a planned request no card clearly means ends the run with an intent interrupt
/// beside the finished plan; resuming with a pick plans that card on the part (here blocked for
/// its city, which the part does not give: a second interrupt, for the key).
#[tokio::test]
async fn a_part_no_card_clearly_means_is_an_intent_interrupt_after_the_plan() {
    let app = spawn_app_with(Setup::default(), add_stay_card).await;
    let first = run(
        &app,
        json!({ "threadId": "agui-part", "runId": "r1",
                "messages": [{ "id": "m1", "role": "user", "content": "把1000美元换成人民币，另外我们能不能再多住一天" }] }),
    )
    .await;
    check_run(&first);
    assert_eq!(app.calls("exchange_agent").len(), 1, "the plan ran");
    let finished = first.last().unwrap();
    assert_eq!(finished["outcome"]["type"], "interrupt", "{finished}");
    let interrupt = &finished["outcome"]["interrupts"][0];
    assert_eq!(interrupt["responseSchema"]["properties"]["intent"]["enum"], json!(["stay_agent"]), "{interrupt}");
    assert_eq!(interrupt["metadata"]["widgets"][0]["widget"], "intent_picker");
    assert_eq!(interrupt["message"], "“我们能不能再多住一天”是指哪项服务？", "its own question, not the answer");

    let second = run(
        &app,
        json!({ "threadId": "agui-part", "runId": "r2", "messages": [],
                "resume": [{ "interruptId": interrupt["id"], "status": "resolved", "payload": { "intent": "stay_agent" } }] }),
    )
    .await;
    check_run(&second);
    let finished = second.last().unwrap();
    assert_eq!(finished["outcome"]["type"], "interrupt", "{finished}");
    let keys = &finished["outcome"]["interrupts"][0]["metadata"]["widgets"];
    assert_eq!(keys[0]["key"], "city", "the stay card, planned on the part, asks for its city: {finished}");
    assert_eq!(app.calls("exchange_agent").len(), 1, "the planned part is not run again");
}

/// The events attributed to a sub-agent run (`subagentRunId`), by type.
fn of_subagent<'a>(events: &'a [Value], run: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["subagentRunId"] == run).collect()
}

/// Positions of the first event of `kind` for sub-agent run `run`.
fn position(events: &[Value], kind: &str, run: &str) -> usize {
    events
        .iter()
        .position(|e| e["type"] == kind && e["subagentRunId"] == run)
        .unwrap_or_else(|| panic!("no {kind} for {run}"))
}

/// The plan activity as a client has it after the run: the snapshot with every delta applied, in
/// order; and the statuses each sub-task went through.
fn applied_plan(events: &[Value]) -> (Value, std::collections::BTreeMap<String, Vec<String>>) {
    let snap = events.iter().position(|e| e["type"] == "ACTIVITY_SNAPSHOT").expect("a plan activity");
    let mut plan = events[snap]["content"].clone();
    let mut statuses = std::collections::BTreeMap::<String, Vec<String>>::new();
    for t in plan["sub_tasks"].as_array().unwrap() {
        statuses.entry(t["task_id"].as_str().unwrap().into()).or_default().push(t["status"].as_str().unwrap().into());
    }
    assert!(!events[..snap].iter().any(|e| e["type"] == "ACTIVITY_DELTA"), "deltas follow the snapshot");
    for e in events[snap..].iter().filter(|e| e["type"] == "ACTIVITY_DELTA") {
        assert_eq!((&e["messageId"], &e["activityType"]), (&events[snap]["messageId"], &json!("PLAN")));
        let patch: json_patch::Patch = serde_json::from_value(e["patch"].clone()).unwrap();
        json_patch::patch(&mut plan, &patch).unwrap_or_else(|err| panic!("{err}: {e}"));
        for t in plan["sub_tasks"].as_array().unwrap() {
            let seen = statuses.get_mut(t["task_id"].as_str().unwrap()).unwrap();
            if seen.last().map(String::as_str) != t["status"].as_str() {
                seen.push(t["status"].as_str().unwrap().into());
            }
        }
    }
    (plan, statuses)
}

/// The state document after the run's `STATE_SNAPSHOT` and `STATE_DELTA`s.
fn applied_state(events: &[Value]) -> Value {
    assert_eq!(events[1]["type"], "STATE_SNAPSHOT", "the state follows RUN_STARTED");
    let mut state = events[1]["snapshot"].clone();
    for e in events.iter().filter(|e| e["type"] == "STATE_DELTA") {
        let patch: json_patch::Patch = serde_json::from_value(e["delta"].clone()).unwrap();
        json_patch::patch(&mut state, &patch).unwrap();
    }
    state
}

#[tokio::test]
async fn each_dispatched_sub_task_is_a_sub_agent_run_and_the_plan_activity_follows_it() {
    let app = spawn_app_with(Setup::default(), |_| {}).await;
    let events = run(
        &app,
        json!({ "threadId": "agui-sub-1", "runId": "r1",
                "messages": [{ "id": "m1", "role": "user", "content": "帮我查一下航班CA1234，然后安排白云机场接机" }] }),
    )
    .await;
    check_run(&events);
    let started: Vec<&Value> = events.iter().filter(|e| e["type"] == "SUBAGENT_STARTED").collect();
    let names: Vec<&str> = started.iter().map(|e| e["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["flight_agent", "pickup_agent"]);
    let plan = &events.iter().find(|e| e["type"] == "ACTIVITY_SNAPSHOT").unwrap()["content"];
    for (s, task) in started.iter().zip(plan["sub_tasks"].as_array().unwrap()) {
        let run = s["subagentRunId"].as_str().unwrap();
        assert_eq!(run, task["task_id"], "the run id is the task id");
        assert_eq!(s["description"], task["description"]);
        // Its text message carries the run id on every event, inside the run.
        let text = of_subagent(&events, run);
        assert!(text.iter().any(|e| e["type"] == "TEXT_MESSAGE_CONTENT" && e["messageId"] == run), "{text:#?}");
        assert!(text
            .iter()
            .filter(|e| e["type"].as_str().unwrap().starts_with("TEXT_"))
            .all(|e| e["messageId"] == run));
        let finished = position(&events, "SUBAGENT_FINISHED", run);
        assert_eq!(events[finished]["outcome"]["type"], "success");
        assert!(events[finished]["result"].is_object(), "the sub-task's output");
        assert!(position(&events, "SUBAGENT_STARTED", run) < position(&events, "TEXT_MESSAGE_END", run));
        assert!(position(&events, "TEXT_MESSAGE_END", run) < finished);
    }
    // The pickup waits for the flight: its run starts after the flight's ended.
    let (flight, pickup) =
        (started[0]["subagentRunId"].as_str().unwrap(), started[1]["subagentRunId"].as_str().unwrap());
    assert!(position(&events, "SUBAGENT_FINISHED", flight) < position(&events, "SUBAGENT_STARTED", pickup));
    // The deltas take the plan through every status to the final plan of the run.
    let (applied, statuses) = applied_plan(&events);
    for seen in statuses.values() {
        assert_eq!(seen, &["pending", "running", "done"]);
    }
    assert_eq!(applied["sub_tasks"][1]["output"]["airport"], "白云机场");
    assert!(applied["sub_tasks"][1]["inputs"]["arrival_time"].is_string(), "filled from the flight's output");
    // The stages' thinking texts are reasoning messages, within spans that close with their step.
    let reasoning: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "REASONING_MESSAGE_CONTENT")
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    assert_eq!(reasoning.first(), Some(&"正在理解您的需求…"), "{reasoning:?}");
    assert!(reasoning.iter().any(|r| r.contains("查询航班")), "the plan's message: {reasoning:?}");
    let mut span = None;
    for e in &events {
        match e["type"].as_str().unwrap() {
            "REASONING_START" => span = Some(e["messageId"].clone()),
            "REASONING_END" => assert_eq!(span.take().as_ref(), Some(&e["messageId"])),
            "REASONING_MESSAGE_START" => assert!(span.is_some() && e["role"] == "reasoning"),
            "STEP_FINISHED" => assert!(span.is_none(), "reasoning ends with its step: {e}"),
            "TEXT_MESSAGE_START" if e["messageId"] == "answer_r1" => assert!(span.is_none(), "and before the answer"),
            _ => {}
        }
    }
}

#[tokio::test]
async fn parallel_sub_agents_are_attributed_to_their_own_runs() {
    let mut options = std::collections::HashMap::new();
    options.insert("weather_agent", switchboard_demo::SampleOptions { delay: std::time::Duration::from_millis(300) });
    options.insert("exchange_agent", switchboard_demo::SampleOptions { delay: std::time::Duration::from_millis(300) });
    let app = spawn_app_with(Setup { options, ..Default::default() }, |_| {}).await;
    let events = run(
        &app,
        json!({ "threadId": "agui-sub-2", "runId": "r1",
                "messages": [{ "id": "m1", "role": "user", "content": "查一下上海的天气，再把1000美元兑换成人民币" }] }),
    )
    .await;
    check_run(&events);
    let runs: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "SUBAGENT_STARTED")
        .map(|e| e["subagentRunId"].as_str().unwrap())
        .collect();
    assert_eq!(runs.len(), 2);
    // Both run at once: each starts before the other finishes.
    assert!(position(&events, "SUBAGENT_STARTED", runs[1]) < position(&events, "SUBAGENT_FINISHED", runs[0]));
    for run in &runs {
        let (start, end) = (position(&events, "SUBAGENT_STARTED", run), position(&events, "SUBAGENT_FINISHED", run));
        // Everything attributed to a run lies within it, and every event of its message is attributed.
        for (i, e) in events.iter().enumerate() {
            if e["subagentRunId"] == *run {
                assert!(start <= i && i <= end, "{e} outside its run");
            }
            if e["messageId"] == *run && e["type"].as_str().unwrap().starts_with("TEXT_") {
                assert_eq!(e["subagentRunId"], *run, "{e}");
            }
        }
    }
    let (_, statuses) = applied_plan(&events);
    assert!(statuses.values().all(|s| s == &["pending", "running", "done"]), "{statuses:?}");
}

#[tokio::test]
async fn a_failed_sub_agent_is_a_sub_agent_error_and_the_run_goes_on() {
    // Nothing listens on the weather agent's port.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let app = spawn_app_with(Setup::default(), move |c| {
        let agent = c["agents"].as_array_mut().unwrap().iter_mut().find(|a| a["id"] == "weather_agent").unwrap();
        agent["endpoint"]["url"] = json!(format!("http://127.0.0.1:{port}/invoke"));
        agent["endpoint"]["retries"] = json!(0);
    })
    .await;
    let events = run(
        &app,
        json!({ "threadId": "agui-sub-3", "runId": "r1",
                "messages": [{ "id": "m1", "role": "user", "content": "查一下上海的天气，再把1000美元兑换成人民币" }] }),
    )
    .await;
    check_run(&events);
    let weather = events.iter().find(|e| e["type"] == "SUBAGENT_STARTED" && e["name"] == "weather_agent").unwrap();
    let run_id = weather["subagentRunId"].as_str().unwrap();
    let error = &events[position(&events, "SUBAGENT_ERROR", run_id)];
    assert!(error["code"].is_string() && !error["message"].as_str().unwrap().is_empty(), "{error}");
    assert!(!events.iter().any(|e| e["type"] == "SUBAGENT_FINISHED" && e["subagentRunId"] == run_id));
    let (plan, statuses) = applied_plan(&events);
    assert_eq!(statuses[run_id], ["pending", "running", "failed"]);
    let failed = plan["sub_tasks"].as_array().unwrap().iter().find(|t| t["task_id"] == run_id).unwrap();
    assert!(failed["reason"].is_string(), "the final plan's reason: {failed}");
    assert_eq!(events.last().unwrap()["outcome"]["type"], "success");
    assert!(events.iter().any(|e| e["type"] == "SUBAGENT_FINISHED"), "the exchange agent finished");
}

#[tokio::test]
async fn the_state_shows_the_pending_clarification_and_the_remembered_slots() {
    let app = spawn_app_with(Setup::default(), |_| {}).await;
    let first = run(
        &app,
        json!({ "threadId": "agui-state", "runId": "r1", "state": { "theme": "dark" },
                "messages": [{ "id": "m1", "role": "user", "content": "帮我订个酒店" }] }),
    )
    .await;
    check_run(&first);
    assert_eq!(
        first[1]["snapshot"],
        json!({ "theme": "dark", "conversation": { "status": "idle", "slots": {}, "pending": null, "choice": null } })
    );
    let delta = first.iter().position(|e| e["type"] == "STATE_DELTA").expect("the turn changed the state");
    assert_eq!(delta, first.len() - 2, "the delta comes right before RUN_FINISHED");
    let state = applied_state(&first);
    assert_eq!(state["theme"], "dark", "the frontend's own keys are kept");
    let conv = &state["conversation"];
    assert_eq!(conv["status"], "awaiting_input");
    let interrupt = &first.last().unwrap()["outcome"]["interrupts"][0];
    assert_eq!(conv["pending"]["keys"], json!(["city", "check_in_date"]));
    assert_eq!(conv["pending"]["expires_at"], interrupt["expiresAt"], "one expiry");
    assert_eq!(conv["pending"]["tasks"][0]["task_id"], interrupt["id"]);
    let components: Vec<&str> = conv["pending"]["widgets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["descriptor"]["component"].as_str().unwrap())
        .collect();
    assert_eq!(components, ["CityPicker", "DatePicker"]);

    // The client sends its state back (as HttpAgent does); the next run starts from the stored one.
    let second = run(
        &app,
        json!({ "threadId": "agui-state", "runId": "r2", "state": state, "messages": [],
                "resume": [{ "interruptId": interrupt["id"], "status": "resolved",
                             "payload": { "city": "北京", "check_in_date": "2026-12-01" } }] }),
    )
    .await;
    check_run(&second);
    assert_eq!(second[1]["snapshot"], state, "the snapshot is the state the last run ended with");
    let after = applied_state(&second);
    assert_eq!(after["conversation"]["status"], "idle");
    assert!(after["conversation"]["pending"].is_null());
    assert_eq!(after["conversation"]["slots"]["city"], "北京");
    assert_eq!(after["theme"], "dark");
}

#[tokio::test]
async fn an_a2a_question_suspends_its_sub_agent_run() {
    use crate::a2a_peer::TrainAgent;
    let peer = TrainAgent::spawn().await;
    let entry = peer.config_entry();
    let app = spawn_app_with(Setup::default(), move |c| c["agents"].as_array_mut().unwrap().push(entry)).await;
    let events = run(
        &app,
        json!({ "threadId": "agui-train-2", "runId": "r1", "messages": [{ "id": "m1", "role": "user", "content": "帮我订一张火车票" }] }),
    )
    .await;
    check_run(&events);
    let interrupt = &events.last().unwrap()["outcome"]["interrupts"][0];
    let run_id = interrupt["id"].as_str().unwrap();
    assert_eq!(interrupt["subagentRunId"], run_id, "the interrupt is the sub-agent's");
    let finished = &events[position(&events, "SUBAGENT_FINISHED", run_id)];
    assert_eq!(finished["outcome"], json!({ "type": "suspended", "interruptIds": [run_id] }));
    let (_, statuses) = applied_plan(&events);
    assert_eq!(statuses[run_id], ["pending", "running", "blocked"]);
}

/// Issue 17 item 4 over AG-UI: a confirmation of remembered values is an interrupt whose fields
/// carry the values as defaults; resolving it with them runs the booking.
#[tokio::test]
async fn a_confirmation_is_an_interrupt_with_the_remembered_values_as_defaults() {
    let app = spawn_app_with(Setup::default(), |_| {}).await;
    let msg = |id: &str, text: &str| json!([{ "id": id, "role": "user", "content": text }]);
    let first = run(
        &app,
        json!({ "threadId": "agui-confirm", "runId": "r1", "messages": msg("m1", "帮我订北京的酒店，2026-12-01入住") }),
    )
    .await;
    assert_eq!(first.last().unwrap()["outcome"]["type"], "success");
    let second =
        run(&app, json!({ "threadId": "agui-confirm", "runId": "r2", "messages": msg("m2", "再帮我订个酒店") })).await;
    check_run(&second);
    let interrupt = &second.last().unwrap()["outcome"]["interrupts"][0];
    let props = &interrupt["responseSchema"]["properties"];
    assert_eq!(
        (props["city"]["default"].as_str(), props["check_in_date"]["default"].as_str()),
        (Some("北京"), Some("2026-12-01")),
        "{interrupt}"
    );
    let widgets: Vec<&str> =
        interrupt["metadata"]["widgets"].as_array().unwrap().iter().map(|w| w["widget"].as_str().unwrap()).collect();
    assert_eq!(widgets, ["confirm_dialog", "confirm_dialog"]);
    assert_eq!(app.calls("hotel_agent").len(), 1, "not before the confirmation");
    let third = run(
        &app,
        json!({ "threadId": "agui-confirm", "runId": "r3", "messages": [],
                "resume": [{ "interruptId": interrupt["id"], "status": "resolved",
                             "payload": { "city": "北京", "check_in_date": "2026-12-01" } }] }),
    )
    .await;
    assert_eq!(third.last().unwrap()["outcome"]["type"], "success");
    assert_eq!(app.calls("hotel_agent").len(), 2);
}
