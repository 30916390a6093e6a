//! A2A against real peers nobody here wrote: the Python `a2a-sdk` serving a visa agent
//! (`tests/peers/a2a_peer.py`) as a sub-agent, and the `a2a-sdk` client calling the supervisor's
//! own A2A endpoint. The peers live in `tests/peers/.venv` (`tests/peers/setup.sh`, run by CI);
//! without it these tests are skipped with a visible message.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::common::*;

fn python() -> Option<PathBuf> {
    let p = repo().join("tests/peers/.venv/bin/python");
    if p.exists() {
        Some(p)
    } else {
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), "SKIPPED A2A peer test: run tests/peers/setup.sh (CI does)");
        None
    }
}

/// The a2a-sdk visa agent, running.
struct Peer {
    _child: Child,
    url: String,
}

async fn spawn_peer(python: &PathBuf) -> Peer {
    let mut child = Command::new(python)
        .arg(repo().join("tests/peers/a2a_peer.py"))
        .args(["--port", "0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
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
    Peer { _child: child, url }
}

/// The supervisor with the visa agent registered as `protocol: a2a`.
async fn app_with_visa_agent(peer: &Peer) -> TestApp {
    let url = peer.url.clone();
    spawn_app_with(Setup::default(), move |c| {
        c["agents"].as_array_mut().unwrap().push(json!({
            "id": "visa_agent",
            "name": "签证咨询",
            "description": "查询目的地的签证要求。",
            "endpoint": { "url": url, "protocol": "a2a", "timeout": "15s" },
            "keywords": ["签证", "visa"],
            "input_schema": { "type": "object", "properties": {
                "message": { "type": "string" },
                "destination": { "type": "string", "enum": ["Japan", "France", "USA", "Germany"] } },
                "required": ["destination"] },
            "output_schema": { "type": "object" },
            "required_semantic_keys": [{ "key": "destination", "description": "目的地国家", "widget": "",
                                         "extract": { "values": ["Japan", "France", "USA", "Germany"] }, "example": "Japan" }],
        }));
    })
    .await
}

async fn peer_rpc(peer: &Peer, method: &str, params: Value) -> Value {
    let card: Value =
        reqwest::get(format!("{}/.well-known/agent-card.json", peer.url)).await.unwrap().json().await.unwrap();
    let rpc = card["supportedInterfaces"][0]["url"].as_str().unwrap().to_string();
    reqwest::Client::new()
        .post(rpc)
        .header("A2A-Version", "1.0")
        .json(&json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

#[tokio::test]
async fn a_streamed_a2a_completion_is_relayed() {
    let Some(py) = python() else { return };
    let peer = spawn_peer(&py).await;
    let app = app_with_visa_agent(&peer).await;
    let events = app.ask("visa to Japan please, nationality: French", None).await;
    let done = done(&events);
    assert_eq!(done["stage"], "answer", "{events:#?}");
    let deltas: Vec<&str> = of_stage(&events, "agent_delta").iter().map(|e| e["content"].as_str().unwrap()).collect();
    assert!(deltas.iter().any(|d| d.contains("Looking up visa rules for Japan")), "status updates relayed: {deltas:?}");
    let agent_done = of_stage(&events, "agent_done");
    assert_eq!(agent_done.len(), 1);
    let output = &agent_done[0]["metadata"]["state"]["output"];
    assert_eq!(output["destination"], "Japan", "the data part is the output: {output}");
    assert!(output["visa_required"].is_boolean());
}

#[tokio::test]
async fn an_a2a_input_required_round_trip_resumes_the_same_remote_task() {
    let Some(py) = python() else { return };
    let peer = spawn_peer(&py).await;
    let app = app_with_visa_agent(&peer).await;
    let first = app.ask("I need a visa to Japan", None).await;
    let th = thread(&first);
    let done1 = done(&first);
    let question = of_stage(&first, "blocked");
    assert_eq!(question.len(), 1, "{first:#?}");
    assert!(question[0]["content"].as_str().unwrap().contains("nationality"));
    assert!(done1["content"].as_str().unwrap().contains("nationality"));
    let s = app.get(&format!("/v1/sessions/{th}?user_id=u1")).await;
    let remote = s["pending"]["tasks"][0]["remote"].clone();
    assert!(remote["task_id"].is_string(), "{s}");

    let second = app.ask("nationality: French", Some(&th)).await;
    let done2 = done(&second);
    assert_eq!(done2["stage"], "answer");
    let agent_done = of_stage(&second, "agent_done");
    assert_eq!(agent_done.len(), 1, "{second:#?}");
    assert_eq!(agent_done[0]["metadata"]["state"]["output"]["nationality"], "French");
    // The remote task itself completed: the same task continued.
    let task = peer_rpc(&peer, "GetTask", json!({ "id": remote["task_id"] })).await;
    assert_eq!(task["result"]["status"]["state"], "TASK_STATE_COMPLETED", "{task}");
}

#[tokio::test]
async fn cancelling_sends_cancel_task_to_the_a2a_agent() {
    let Some(py) = python() else { return };
    let peer = spawn_peer(&py).await;
    let app = app_with_visa_agent(&peer).await;
    let first = app.ask("I need a visa to Japan", None).await;
    let th = thread(&first);
    let s = app.get(&format!("/v1/sessions/{th}?user_id=u1")).await;
    let task_id = s["pending"]["tasks"][0]["remote"]["task_id"].clone();
    done(&app.ask("算了", Some(&th)).await);
    let mut state = Value::Null;
    for _ in 0..100 {
        let task = peer_rpc(&peer, "GetTask", json!({ "id": task_id })).await;
        state = task["result"]["status"]["state"].clone();
        if state == "TASK_STATE_CANCELED" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(state, "TASK_STATE_CANCELED");
}

#[tokio::test]
async fn the_a2a_sdk_client_talks_to_the_supervisor() {
    let Some(py) = python() else { return };
    let app = spawn_app_with(Setup::default(), |_| {}).await;
    let card = app.get("/.well-known/agent-card.json").await;
    assert!(card["skills"].as_array().unwrap().iter().any(|s| s["id"] == "hotel_agent"));
    assert_eq!(card["supportedInterfaces"][0]["protocolBinding"], "JSONRPC");

    let run = |args: Vec<String>| {
        let py = py.clone();
        async move {
            let out =
                Command::new(py).arg(repo().join("tests/peers/a2a_client_check.py")).args(args).output().await.unwrap();
            (
                out.status.code(),
                String::from_utf8_lossy(&out.stdout).into_owned(),
                String::from_utf8_lossy(&out.stderr).into_owned(),
            )
        }
    };
    // A completed turn, streaming and not.
    let (code, out, err) = run(vec![app.base.clone(), "帮我订北京的酒店，2026-12-01入住".into()]).await;
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert!(out.contains("TASK_STATE_COMPLETED"), "{out}");
    assert!(out.contains("artifactUpdate"), "{out}");
    assert_eq!(app.calls("hotel_agent").len(), 2);

    // Missing keys: INPUT_REQUIRED with the keys, descriptions and widget ids in a data part;
    // the follow-up on the same task completes it.
    let (code, out, err) = run(vec![
        app.base.clone(),
        "帮我订个酒店".into(),
        "--no-blocking".into(),
        "--follow-up".into(),
        json!({ "city": "上海", "check_in_date": "2026-12-02" }).to_string(),
    ])
    .await;
    assert!(out.contains("TASK_STATE_INPUT_REQUIRED"), "{out}\n{err}");
    assert!(out.contains("city_picker") && out.contains("入住城市"), "{out}");
    assert_eq!(code, Some(0), "the follow-up completed the task: {out}\n{err}");
    assert!(app.calls("hotel_agent").iter().any(|c| c.body["inputs"]["city"] == "上海"));
}

#[tokio::test]
async fn an_agent_registered_by_its_card_alone_is_described_by_the_card() {
    let Some(py) = python() else { return };
    let peer = spawn_peer(&py).await;
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let url = peer.url.clone();
    let app = spawn_app_with(Setup::default(), move |c| {
        let agents = c["agents"].as_array_mut().unwrap();
        agents.push(json!({ "id": "visa_agent", "endpoint": { "url": url, "protocol": "a2a" } }));
        agents
            .push(json!({ "id": "gone_agent", "endpoint": { "url": format!("http://{closed}"), "protocol": "a2a" } }));
    })
    .await;
    let agents = app.get("/v1/agents").await;
    let find = |id: &str| agents["agents"].as_array().unwrap().iter().find(|a| a["id"] == id).unwrap().clone();
    let visa = find("visa_agent");
    assert_eq!(visa["name"], "Visa Agent");
    assert_eq!(visa["description"], "Tells travellers whether they need a visa for a destination.");
    assert!(visa["keywords"].as_array().unwrap().contains(&json!("visa")), "{visa}");
    assert_eq!(visa["available"], true);
    // An unreachable card makes only that agent unavailable, with the reason; the load succeeded.
    let gone = find("gone_agent");
    assert_eq!(gone["available"], false);
    assert!(gone["unavailable_reason"].as_str().unwrap().contains("agent card"), "{gone}");
    assert!(app.get("/v1/config").await["last_error"].is_null());

    let events = app.ask("Do I need a visa to travel to France? nationality: German", None).await;
    assert_eq!(done(&events)["stage"], "answer");
    assert_eq!(of_stage(&events, "agent_done")[0]["agent_id"], "visa_agent");
    // The rest of the registry keeps working.
    done(&app.ask("上海天气怎么样", None).await);
    assert_eq!(app.calls("weather_agent").len(), 1);
}

#[tokio::test]
async fn the_supervisor_a2a_endpoint_gets_and_cancels_tasks() {
    let app = spawn_app_with(Setup::default(), |_| {}).await;
    // One anonymous caller (the demo config allows them), keeping its token across calls.
    const TOKEN: &str = "0a2a0a2a0a2a0a2a0a2a0a2a0a2a0a2a";
    let rpc = |method: &'static str, params: Value| {
        let client = app.client.clone();
        let url = format!("{}/a2a", app.base);
        async move {
            let body = json!({ "jsonrpc": "2.0", "id": "req-1", "method": method, "params": params });
            client
                .post(url)
                .header("A2A-Version", "1.0")
                .header("x-anonymous-token", TOKEN)
                .json(&body)
                .send()
                .await
                .unwrap()
                .json::<Value>()
                .await
                .unwrap()
        }
    };
    let message =
        json!({ "message": { "messageId": "m1", "role": "ROLE_USER", "parts": [{ "text": "帮我订个酒店" }] } });
    let sent = rpc("SendMessage", message).await;
    let task = &sent["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{sent}");
    let info = &task["status"]["message"]["parts"][1]["data"]["semantic_info"][0];
    assert_eq!(info["fe_widgets_suggestion"], json!(["city_picker", "date_picker"]));
    let id = task["id"].clone();

    let got = rpc("GetTask", json!({ "id": id })).await;
    assert_eq!(got["result"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
    assert_eq!(got["id"], "req-1");
    let cancelled = rpc("CancelTask", json!({ "id": id })).await;
    assert_eq!(cancelled["result"]["status"]["state"], "TASK_STATE_CANCELED");
    let again = rpc("CancelTask", json!({ "id": id })).await;
    assert_eq!(again["error"]["code"], -32002);
    assert_eq!(rpc("GetTask", json!({ "id": "nope" })).await["error"]["code"], -32001);
    assert_eq!(rpc("NoSuchMethod", json!({})).await["error"]["code"], -32601);
    // The thread's pending work is gone too.
    let ctx = task["contextId"].as_str().unwrap();
    let user = switchboard::api::identity::user_of(TOKEN);
    let s = app.get(&format!("/v1/sessions/{ctx}?user_id={user}")).await;
    assert!(s["pending"].is_null(), "{s}");
}

/// The supervisor with the train agent (an A2A peer like the `@a2a-js/sdk` sample) registered.
async fn app_with_train_agent(peer: &crate::a2a_peer::TrainAgent) -> TestApp {
    let entry = peer.config_entry();
    spawn_app_with(Setup::default(), move |c| c["agents"].as_array_mut().unwrap().push(entry)).await
}

#[tokio::test]
async fn a_follow_up_stream_that_opens_with_the_stored_task_completes_with_the_answer() {
    use crate::a2a_peer::{booked, TrainAgent, QUESTION};
    let peer = TrainAgent::spawn().await;
    let app = app_with_train_agent(&peer).await;
    let first = app.ask("帮我订一张火车票", None).await;
    let th = thread(&first);
    let blocked = of_stage(&first, "blocked");
    assert_eq!(blocked.len(), 1, "{first:#?}");
    assert_eq!(blocked[0]["content"], QUESTION);

    // The follow-up's stream begins with the stored task, still INPUT_REQUIRED: not the end.
    let second = app.ask("12月3日", Some(&th)).await;
    assert!(of_stage(&second, "blocked").is_empty(), "not asked again: {second:#?}");
    let agent_done = of_stage(&second, "agent_done");
    assert_eq!(agent_done.len(), 1, "{second:#?}");
    assert_eq!(agent_done[0]["metadata"]["state"]["output"]["date"], "12月3日");
    let answer = done(&second);
    assert_eq!(answer["stage"], "answer");
    assert!(answer["content"].as_str().unwrap().contains(&booked("12月3日")), "{answer}");
    let s = app.get(&format!("/v1/sessions/{th}?user_id=u1")).await;
    assert!(s["pending"].is_null(), "{s}");
    // The answer went to the same remote task, which completed.
    let sent: Vec<Value> = peer.requests().into_iter().filter(|r| r["method"] == "SendStreamingMessage").collect();
    assert_eq!(sent.len(), 2);
    let task_id = sent[1]["params"]["message"]["taskId"].as_str().unwrap();
    assert_eq!(sent[1]["params"]["message"]["parts"][0]["text"], "12月3日");
    assert_eq!(peer.task(task_id).unwrap()["status"]["state"], "TASK_STATE_COMPLETED");
}

#[tokio::test]
async fn the_artifact_is_the_result_and_status_texts_are_progress() {
    use crate::a2a_peer::{booked, TrainAgent, PROGRESS};
    let peer = TrainAgent::spawn().await;
    let app = app_with_train_agent(&peer).await;
    // WORKING "余票充足，正在出票…", then the artifact "已为您预订…", then COMPLETED (no message).
    let events = app.ask("帮我订一张12月5日的火车票", None).await;
    let deltas: Vec<&str> = of_stage(&events, "agent_delta").iter().map(|e| e["content"].as_str().unwrap()).collect();
    assert!(deltas.contains(&PROGRESS), "the status text is relayed as progress: {deltas:?}");
    let agent_done = of_stage(&events, "agent_done");
    assert_eq!(agent_done.len(), 1, "{events:#?}");
    assert_eq!(agent_done[0]["content"], booked("12月5日"), "the sub-task's result is the artifact's text");
    assert_eq!(agent_done[0]["metadata"]["state"]["output"]["train"], "G123");
    let answer = done(&events)["content"].as_str().unwrap();
    assert!(answer.contains(&booked("12月5日")) && !answer.contains(PROGRESS), "{answer}");
}

/// `POST /a2a` JSON-RPC as `user`.
async fn a2a_rpc(app: &TestApp, user: &str, method: &str, params: Value) -> Value {
    let body = json!({ "jsonrpc": "2.0", "id": "req-1", "method": method, "params": params });
    let resp = app.client.post(format!("{}/a2a", app.base)).header("A2A-Version", "1.0").header("x-user-id", user);
    resp.json(&body).send().await.unwrap().json().await.unwrap()
}

fn user_message(text: &str, task_id: Option<&Value>) -> Value {
    let mut m =
        json!({ "messageId": uuid::Uuid::new_v4().to_string(), "role": "ROLE_USER", "parts": [{ "text": text }] });
    if let Some(t) = task_id {
        m["taskId"] = t.clone();
    }
    json!({ "message": m })
}

#[tokio::test]
async fn a_sub_agents_question_leaves_our_a2a_task_input_required() {
    use crate::a2a_peer::{booked, TrainAgent, QUESTION};
    let peer = TrainAgent::spawn().await;
    let app = app_with_train_agent(&peer).await;
    let sent = a2a_rpc(&app, "u1", "SendMessage", user_message("帮我订一张火车票", None)).await;
    let task = &sent["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{sent}");
    let parts = &task["status"]["message"]["parts"];
    assert!(parts[0]["text"].as_str().unwrap().contains(QUESTION), "{parts}");
    assert_eq!(parts[1]["data"]["input_required"][0]["question"], QUESTION, "{parts}");
    assert!(task.get("artifacts").is_none(), "no answer yet: {task}");

    // The answer on the same task resumes the sub-agent's task and completes ours.
    let again = a2a_rpc(&app, "u1", "SendMessage", user_message("12月3日", Some(&task["id"]))).await;
    let task2 = &again["result"]["task"];
    assert_eq!(task2["id"], task["id"]);
    assert_eq!(task2["status"]["state"], "TASK_STATE_COMPLETED", "{again}");
    let answer = task2["artifacts"][0]["parts"][0]["text"].as_str().unwrap();
    assert!(answer.contains(&booked("12月3日")), "{answer}");
}

#[tokio::test]
async fn a2a_tasks_are_bound_to_the_user_that_created_them() {
    let app = spawn_app_with(Setup::default(), |_| {}).await;
    let sent = a2a_rpc(&app, "alice", "SendMessage", user_message("帮我订个酒店", None)).await;
    let task = &sent["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{sent}");
    let id = task["id"].clone();
    // Issue 17 #17: the task names the trace id of its turn.
    let trace = task["metadata"]["trace_id"].as_str().unwrap_or_default();
    assert!(trace.len() == 32 && trace.bytes().all(|b| b.is_ascii_hexdigit()), "{task}");

    // Another user can neither read nor cancel it: for them it does not exist.
    let got = a2a_rpc(&app, "mallory", "GetTask", json!({ "id": id })).await;
    assert_eq!(got["error"]["code"], -32001, "{got}");
    let cancelled = a2a_rpc(&app, "mallory", "CancelTask", json!({ "id": id })).await;
    assert_eq!(cancelled["error"]["code"], -32001, "{cancelled}");
    // Nor continue it.
    let slots = json!({ "city": "上海", "check_in_date": "2026-12-02" });
    let mut follow_up = user_message("", Some(&id));
    follow_up["message"]["parts"] = json!([{ "data": slots }]);
    let other = a2a_rpc(&app, "mallory", "SendMessage", follow_up.clone()).await;
    assert_eq!(other["error"]["code"], -32001, "{other}");
    assert!(app.calls("hotel_agent").is_empty(), "mallory's values did not resume alice's booking");

    // Its owner still can.
    let got = a2a_rpc(&app, "alice", "GetTask", json!({ "id": id })).await;
    assert_eq!(got["result"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{got}");
    let done = a2a_rpc(&app, "alice", "SendMessage", follow_up).await;
    assert_eq!(done["result"]["task"]["id"], id);
    assert_eq!(done["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{done}");
}

#[tokio::test]
async fn a_message_naming_a_task_must_name_a_live_task_of_its_context() {
    let app = spawn_app_with(Setup::default(), |_| {}).await;
    // Unknown task: TaskNotFoundError, no new task.
    let unknown = a2a_rpc(&app, "u1", "SendMessage", user_message("帮我订个酒店", Some(&json!("task_nope")))).await;
    assert_eq!(unknown["error"]["code"], -32001, "{unknown}");

    let sent = a2a_rpc(&app, "u1", "SendMessage", user_message("帮我订个酒店", None)).await;
    let task = sent["result"]["task"].clone();
    assert_eq!(task["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
    // Another context: invalid params, and nothing is rewritten.
    let mut wrong = user_message("北京，2026-12-01 入住", Some(&task["id"]));
    wrong["message"]["contextId"] = json!("ctx_other");
    let refused = a2a_rpc(&app, "u1", "SendMessage", wrong).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    let got = a2a_rpc(&app, "u1", "GetTask", json!({ "id": task["id"] })).await;
    assert_eq!(got["result"]["contextId"], task["contextId"]);
    assert_eq!(got["result"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
    assert!(app.calls("hotel_agent").is_empty());

    // The right context (or none) continues it; once terminal it takes no more messages.
    let mut right = user_message("北京，2026-12-01 入住", Some(&task["id"]));
    right["message"]["contextId"] = task["contextId"].clone();
    let done = a2a_rpc(&app, "u1", "SendMessage", right).await;
    assert_eq!(done["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{done}");
    let late = a2a_rpc(&app, "u1", "SendMessage", user_message("再订一晚", Some(&task["id"]))).await;
    assert_eq!(late["error"]["code"], -32004, "{late}");
    assert_eq!(app.calls("hotel_agent").len(), 1);
}

/// The supervisor with a hotel agent that takes `delay` to answer.
async fn app_with_slow_hotel(delay: Duration) -> TestApp {
    let mut options = std::collections::HashMap::new();
    options.insert("hotel_agent", switchboard_demo::SampleOptions { delay });
    spawn_app_with(Setup { options, ..Default::default() }, |_| {}).await
}

/// Polls `GetTask` until the task's state is `want` (or 10 s pass); returns the task.
async fn wait_state(app: &TestApp, user: &str, id: &Value, want: &str) -> Value {
    let mut task = Value::Null;
    for _ in 0..200 {
        task = a2a_rpc(app, user, "GetTask", json!({ "id": id })).await["result"].clone();
        if task["status"]["state"] == want {
            return task;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("task {id} never reached {want}: {task}");
}

#[tokio::test]
async fn return_immediately_answers_at_once_and_get_task_follows_the_task() {
    let app = app_with_slow_hotel(Duration::from_millis(1500)).await;
    let mut params = user_message("帮我订北京的酒店，2026-12-01入住", None);
    params["configuration"] = json!({ "returnImmediately": true });
    let started = std::time::Instant::now();
    let sent = a2a_rpc(&app, "u1", "SendMessage", params).await;
    assert!(started.elapsed() < Duration::from_millis(1000), "answered before the hotel agent did");
    let task = &sent["result"]["task"];
    assert!(matches!(task["status"]["state"].as_str(), Some("TASK_STATE_SUBMITTED" | "TASK_STATE_WORKING")), "{sent}");
    let working = wait_state(&app, "u1", &task["id"], "TASK_STATE_WORKING").await;
    assert!(working["status"]["message"]["parts"][0]["text"].is_string(), "progress text: {working}");
    let completed = wait_state(&app, "u1", &task["id"], "TASK_STATE_COMPLETED").await;
    assert!(completed["artifacts"][0]["parts"][0]["text"].as_str().unwrap().contains("北京"), "{completed}");
    assert_eq!(app.calls("hotel_agent").len(), 1);
}

#[tokio::test]
async fn cancelling_a_running_task_stops_following_its_turn() {
    let app = app_with_slow_hotel(Duration::from_millis(1000)).await;
    let mut params = user_message("帮我订北京的酒店，2026-12-01入住", None);
    params["configuration"] = json!({ "returnImmediately": true });
    let sent = a2a_rpc(&app, "u1", "SendMessage", params).await;
    let id = sent["result"]["task"]["id"].clone();
    wait_state(&app, "u1", &id, "TASK_STATE_WORKING").await;
    let cancelled = a2a_rpc(&app, "u1", "CancelTask", json!({ "id": id })).await;
    assert_eq!(cancelled["result"]["status"]["state"], "TASK_STATE_CANCELED", "{cancelled}");
    // The turn ends in the background; the task stays cancelled.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let got = a2a_rpc(&app, "u1", "GetTask", json!({ "id": id })).await;
    assert_eq!(got["result"]["status"]["state"], "TASK_STATE_CANCELED", "{got}");
    assert!(got["result"].get("artifacts").is_none(), "{got}");
    assert_eq!(a2a_rpc(&app, "u1", "CancelTask", json!({ "id": id })).await["error"]["code"], -32002);
}

#[tokio::test]
async fn a_clarification_opened_by_the_turn_of_a_cancelled_task_is_dropped() {
    let mut options = std::collections::HashMap::new();
    options.insert("flight_agent", switchboard_demo::SampleOptions { delay: Duration::from_millis(1000) });
    let app = spawn_app_with(Setup { options, ..Default::default() }, |_| {}).await;
    // The flight runs (slowly); the hotel waits for its check-in date.
    let mut params = user_message("帮我查一下航班CA1234，再帮我订个酒店", None);
    params["configuration"] = json!({ "returnImmediately": true });
    let sent = a2a_rpc(&app, "u1", "SendMessage", params).await;
    let task = sent["result"]["task"].clone();
    wait_state(&app, "u1", &task["id"], "TASK_STATE_WORKING").await;
    let cancelled = a2a_rpc(&app, "u1", "CancelTask", json!({ "id": task["id"] })).await;
    assert_eq!(cancelled["result"]["status"]["state"], "TASK_STATE_CANCELED", "{cancelled}");
    let ctx = task["contextId"].as_str().unwrap();
    let mut session = Value::Null;
    for _ in 0..60 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        session = app.get(&format!("/v1/sessions/{ctx}?user_id=u1")).await;
        if session["history"].as_array().is_some_and(|h| !h.is_empty()) && session["pending"].is_null() {
            break;
        }
    }
    assert_eq!(session["history"].as_array().map(Vec::len), Some(1), "the turn ran to its end: {session}");
    assert!(session["pending"].is_null(), "no clarification left behind: {session}");
    assert_eq!(app.calls("flight_agent").len(), 1);
}

#[tokio::test]
async fn a_message_to_a_task_still_working_is_refused() {
    let app = app_with_slow_hotel(Duration::from_millis(1000)).await;
    let mut params = user_message("帮我订北京的酒店，2026-12-01入住", None);
    params["configuration"] = json!({ "returnImmediately": true });
    let sent = a2a_rpc(&app, "u1", "SendMessage", params).await;
    let id = sent["result"]["task"]["id"].clone();
    let refused = a2a_rpc(&app, "u1", "SendMessage", user_message("住两晚", Some(&id))).await;
    assert_eq!(refused["error"]["code"], -32004, "{refused}");
    let done = wait_state(&app, "u1", &id, "TASK_STATE_COMPLETED").await;
    assert_eq!(done["history"].as_array().unwrap().len(), 2, "the refused message is not in the history: {done}");
    assert_eq!(app.calls("hotel_agent").len(), 1);
}

/// A streaming JSON-RPC call on `/a2a` (accepting `text/event-stream`): the frames, in order.
async fn a2a_stream(app: &TestApp, user: &str, method: &str, params: Value) -> Vec<Value> {
    use eventsource_stream::Eventsource;
    use futures::StreamExt;
    let body = json!({ "jsonrpc": "2.0", "id": 7, "method": method, "params": params });
    let resp = app
        .client
        .post(format!("{}/a2a", app.base))
        .header("A2A-Version", "1.0")
        .header("x-user-id", user)
        .header("accept", "text/event-stream")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert!(resp.headers()["content-type"].to_str().unwrap().starts_with("text/event-stream"));
    let mut frames = Vec::new();
    let mut events = resp.bytes_stream().eventsource();
    while let Some(ev) = tokio::time::timeout(Duration::from_secs(10), events.next()).await.expect("stream stalled") {
        frames.push(serde_json::from_str(&ev.unwrap().data).unwrap());
    }
    frames
}

#[tokio::test]
async fn subscribe_to_task_follows_a_running_task_to_its_end() {
    let app = app_with_slow_hotel(Duration::from_millis(1000)).await;
    let mut params = user_message("帮我订北京的酒店，2026-12-01入住", None);
    params["configuration"] = json!({ "returnImmediately": true });
    let sent = a2a_rpc(&app, "u1", "SendMessage", params).await;
    let id = sent["result"]["task"]["id"].clone();
    // Two subscribers get the same events; another user gets none.
    let (a, b, other) = tokio::join!(
        a2a_stream(&app, "u1", "SubscribeToTask", json!({ "id": id })),
        a2a_stream(&app, "u1", "SubscribeToTask", json!({ "id": id })),
        a2a_stream(&app, "mallory", "SubscribeToTask", json!({ "id": id })),
    );
    assert_eq!(a[0]["id"], 7);
    assert_eq!(a[0]["result"]["task"]["id"], id, "the stream starts with the task: {a:#?}");
    let last = a.last().unwrap();
    assert_eq!(last["result"]["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED", "{a:#?}");
    assert!(a.iter().any(|f| f["result"]["artifactUpdate"]["artifact"]["artifactId"] == "answer"));
    assert_eq!(a[a.len() - 2..], b[b.len() - 2..], "both streams end with the same answer and status");
    assert_eq!(other.len(), 1);
    assert_eq!(other[0]["error"]["code"], -32001, "{other:#?}");

    // Once terminal there is nothing to subscribe to.
    let late = a2a_stream(&app, "u1", "SubscribeToTask", json!({ "id": id })).await;
    assert_eq!(late[0]["error"]["code"], -32004, "{late:#?}");
    let none = a2a_stream(&app, "u1", "SubscribeToTask", json!({ "id": "task_nope" })).await;
    assert_eq!(none[0]["error"]["code"], -32001);
}

#[tokio::test]
async fn list_tasks_pages_and_filters_the_users_own_tasks() {
    let app = spawn_app_with(Setup::default(), |_| {}).await;
    let hotel = a2a_rpc(&app, "u1", "SendMessage", user_message("帮我订个酒店", None)).await["result"]["task"].clone();
    let ctx = hotel["contextId"].clone();
    let mut weather = user_message("上海天气怎么样", None);
    weather["message"]["contextId"] = ctx.clone();
    let weather = a2a_rpc(&app, "u1", "SendMessage", weather).await["result"]["task"].clone();
    let flight =
        a2a_rpc(&app, "u1", "SendMessage", user_message("帮我查一下航班CA1234", None)).await["result"]["task"].clone();
    a2a_rpc(&app, "u2", "SendMessage", user_message("帮我查一下航班CA1234", None)).await;
    let list = |params: Value| a2a_rpc(&app, "u1", "ListTasks", params);
    let ids = |r: &Value| -> Vec<Value> {
        r["result"]["tasks"].as_array().unwrap().iter().map(|t| t["id"].clone()).collect()
    };

    let all = list(json!({})).await;
    assert_eq!(all["result"]["totalSize"], 3, "{all}");
    assert_eq!(all["result"]["pageSize"], 50);
    assert_eq!(all["result"]["nextPageToken"], "");
    assert_eq!(ids(&all), [flight["id"].clone(), weather["id"].clone(), hotel["id"].clone()], "newest first");
    assert!(all["result"]["tasks"].as_array().unwrap().iter().all(|t| t.get("artifacts").is_none()));

    // Pages of 2: no task twice, none missed.
    let first = list(json!({ "pageSize": 2 })).await;
    assert_eq!(ids(&first).len(), 2);
    let token = first["result"]["nextPageToken"].as_str().unwrap().to_string();
    assert!(!token.is_empty());
    let second = list(json!({ "pageSize": 2, "pageToken": token })).await;
    assert_eq!(second["result"]["nextPageToken"], "", "{second}");
    assert_eq!([ids(&first), ids(&second)].concat(), ids(&all));

    // Filters.
    let in_ctx = list(json!({ "contextId": ctx })).await;
    assert_eq!(ids(&in_ctx), [weather["id"].clone(), hotel["id"].clone()]);
    let waiting = list(json!({ "status": "TASK_STATE_INPUT_REQUIRED" })).await;
    assert_eq!(ids(&waiting), [hotel["id"].clone()]);
    let later = list(json!({ "statusTimestampAfter": "2999-01-01T00:00:00Z" })).await;
    assert_eq!(later["result"]["totalSize"], 0);
    let since = list(json!({ "statusTimestampAfter": weather["status"]["timestamp"] })).await;
    assert_eq!(ids(&since), [flight["id"].clone(), weather["id"].clone()]);
    let full = list(json!({ "includeArtifacts": true, "historyLength": 1, "contextId": flight["contextId"] })).await;
    let task = &full["result"]["tasks"][0];
    assert_eq!(task["artifacts"][0]["artifactId"], "answer", "{full}");
    assert_eq!(task["history"].as_array().unwrap().len(), 1, "{full}");
    assert!(list(json!({ "historyLength": 0 })).await["result"]["tasks"][0].get("history").is_none());

    for bad in [
        json!({ "pageSize": 0 }),
        json!({ "pageSize": 101 }),
        json!({ "pageSize": -1 }),
        json!({ "historyLength": -1 }),
        json!({ "pageToken": "invalid-token-xyz" }),
        json!({ "status": "INVALID_STATUS" }),
        json!({ "statusTimestampAfter": "yesterday" }),
    ] {
        assert_eq!(list(bad.clone()).await["error"]["code"], -32602, "{bad}");
    }
    let theirs = a2a_rpc(&app, "u2", "ListTasks", json!({})).await;
    assert_eq!(theirs["result"]["totalSize"], 1, "{theirs}");
}

#[tokio::test]
async fn undeclared_capabilities_are_refused_with_their_errors() {
    let app = spawn_app_with(Setup::default(), |_| {}).await;
    let card = app.get("/.well-known/agent-card.json").await;
    assert_eq!(card["capabilities"]["pushNotifications"], false, "{card}");
    assert_eq!(card["capabilities"]["extendedAgentCard"], false, "{card}");
    let task = a2a_rpc(&app, "u1", "SendMessage", user_message("帮我订个酒店", None)).await["result"]["task"].clone();
    let config = json!({ "taskId": task["id"], "url": "https://example.com/hook" });
    for (method, params) in [
        ("CreateTaskPushNotificationConfig", config.clone()),
        ("GetTaskPushNotificationConfig", json!({ "taskId": task["id"], "id": "c1" })),
        ("ListTaskPushNotificationConfigs", json!({ "taskId": task["id"] })),
        ("DeleteTaskPushNotificationConfig", json!({ "taskId": task["id"], "id": "c1" })),
    ] {
        let r = a2a_rpc(&app, "u1", method, params).await;
        assert_eq!(r["error"]["code"], -32003, "{method}: {r}");
    }
    let mut with_push = user_message("上海天气怎么样", None);
    with_push["configuration"] = json!({ "taskPushNotificationConfig": { "url": "https://example.com/hook" } });
    assert_eq!(a2a_rpc(&app, "u1", "SendMessage", with_push).await["error"]["code"], -32003);
    assert!(app.calls("weather_agent").is_empty());
    let extended = a2a_rpc(&app, "u1", "GetExtendedAgentCard", json!({})).await;
    assert_eq!(extended["error"]["code"], -32004, "{extended}");
}

#[tokio::test]
async fn history_length_limits_the_history_returned() {
    let app = spawn_app_with(Setup::default(), |_| {}).await;
    let mut first = user_message("帮我订个酒店", None);
    first["configuration"] = json!({ "historyLength": 0 });
    let sent = a2a_rpc(&app, "u1", "SendMessage", first).await;
    let task = &sent["result"]["task"];
    assert!(task.get("history").is_none(), "historyLength 0: no history: {sent}");
    let mut second = user_message("北京，2026-12-01 入住", Some(&task["id"]));
    second["configuration"] = json!({ "historyLength": 1 });
    let done = a2a_rpc(&app, "u1", "SendMessage", second).await;
    let history = done["result"]["task"]["history"].as_array().unwrap().clone();
    assert_eq!(history.len(), 1, "{done}");
    assert_eq!(history[0]["role"], "ROLE_AGENT", "the most recent message: the answer");

    let get = |n: Value| a2a_rpc(&app, "u1", "GetTask", json!({ "id": task["id"], "historyLength": n }));
    let all = a2a_rpc(&app, "u1", "GetTask", json!({ "id": task["id"] })).await;
    let roles: Vec<&str> =
        all["result"]["history"].as_array().unwrap().iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["ROLE_USER", "ROLE_AGENT", "ROLE_USER", "ROLE_AGENT"], "{all}");
    assert!(all["result"]["history"].as_array().unwrap().iter().all(|m| m["taskId"] == task["id"]));
    let two = get(json!(2)).await;
    assert_eq!(two["result"]["history"].as_array().unwrap()[..], all["result"]["history"].as_array().unwrap()[2..]);
    assert!(get(json!(0)).await["result"].get("history").is_none());
    assert_eq!(get(json!(1000)).await["result"]["history"], all["result"]["history"]);
    assert_eq!(get(json!(-1)).await["error"]["code"], -32602);
    let mut negative = user_message("上海天气怎么样", None);
    negative["configuration"] = json!({ "historyLength": -1 });
    assert_eq!(a2a_rpc(&app, "u1", "SendMessage", negative).await["error"]["code"], -32602);
    assert_eq!(a2a_rpc(&app, "u1", "GetTask", json!({})).await["error"]["code"], -32602);
}

#[tokio::test]
async fn only_a2a_1_0_is_served() {
    let app = spawn_app_with(Setup::default(), |_| {}).await;
    let call = |version: Option<&'static str>, path: &'static str, method: &'static str| {
        let mut req = app.client.post(format!("{}{path}", app.base));
        if let Some(v) = version {
            req = req.header("A2A-Version", v);
        }
        let body = json!({ "jsonrpc": "2.0", "id": 3, "method": method, "params": { "id": "task_nope" } });
        async move { req.json(&body).send().await.unwrap().json::<Value>().await.unwrap() }
    };
    for v in [Some("1.0"), Some("1"), Some("1.0.2"), None] {
        let r = call(v, "/a2a", "GetTask").await;
        assert_eq!(r["error"]["code"], -32001, "{v:?} is served as 1.0: {r}");
    }
    for v in ["2.0", "0.3", "1.1", "abc"] {
        let r = call(Some(v), "/a2a", "GetTask").await;
        assert_eq!(r["error"]["code"], -32009, "{v}: {r}");
        assert_eq!(r["error"]["data"]["supportedVersions"], json!(["1.0"]));
        assert_eq!(r["id"], 3);
    }
    assert_eq!(call(None, "/a2a?A2A-Version=2.0", "GetTask").await["error"]["code"], -32009, "the request parameter");
    // No version means 0.3: its methods are refused clearly, not served with 1.0 bodies.
    let old = call(None, "/a2a", "tasks/get").await;
    assert_eq!(old["error"]["code"], -32009, "{old}");
    assert!(old["error"]["message"].as_str().unwrap().contains("A2A-Version: 1.0"), "{old}");
    assert_eq!(call(Some("1.0"), "/a2a", "message/send").await["error"]["code"], -32601, "not a 1.0 method");
}

#[tokio::test]
async fn invalid_json_rpc_envelopes_are_invalid_requests_with_their_id() {
    let app = spawn_app_with(Setup::default(), |_| {}).await;
    let post = |body: String| {
        let req = app.client.post(format!("{}/a2a", app.base)).header("A2A-Version", "1.0");
        async move { req.header("content-type", "application/json").body(body).send().await.unwrap() }
    };
    let cases = [
        (json!({ "jsonrpc": "1.0", "id": "a", "method": "GetTask", "params": { "id": "x" } }), -32600, json!("a")),
        (json!({ "jsonrpc": "2.0", "id": 5, "params": {} }), -32600, json!(5)),
        (json!({ "jsonrpc": "2.0", "id": "b", "method": 7 }), -32600, json!("b")),
        (json!({ "jsonrpc": "2.0", "id": { "bad": "type" }, "method": "GetTask" }), -32600, Value::Null),
        (json!({ "jsonrpc": "2.0", "id": 1.5, "method": "GetTask" }), -32600, Value::Null),
        (json!({ "jsonrpc": "2.0", "id": "c", "method": "GetTask", "params": "x" }), -32600, json!("c")),
        (json!({ "jsonrpc": "2.0", "id": "d", "method": "GetTask", "params": ["x"] }), -32602, json!("d")),
        (json!({ "jsonrpc": "aaa", "method": "SendMessage", "params": {} }), -32600, Value::Null),
        (json!([{ "jsonrpc": "2.0", "id": 1, "method": "GetTask" }]), -32600, Value::Null),
        (
            json!({ "jsonrpc": "2.0", "id": "e", "method": "SendMessage", "params": { "": "not_a_dict" } }),
            -32602,
            json!("e"),
        ),
    ];
    for (body, code, id) in cases {
        let resp = post(body.to_string()).await;
        assert_eq!(resp.status(), 200);
        let r: Value = resp.json().await.unwrap();
        assert_eq!((r["error"]["code"].clone(), r["id"].clone()), (json!(code), id), "{body} -> {r}");
        assert_eq!(r["jsonrpc"], "2.0");
    }
    let r: Value = post("{not json".into()).await.json().await.unwrap();
    assert_eq!((r["error"]["code"].clone(), r["id"].clone()), (json!(-32700), Value::Null));
    // A notification is not answered.
    let resp = post(json!({ "jsonrpc": "2.0", "method": "GetTask", "params": { "id": "x" } }).to_string()).await;
    assert_eq!(resp.status(), 204);
}

#[tokio::test]
async fn anonymous_a2a_callers_are_not_merged_and_a_task_id_is_their_capability() {
    // Issue 12 #8: every /a2a call without x-user-id was user `a2a`: a second caller naming the
    // first one's contextId continued its thread.
    let app = spawn_app_with(Setup::default(), |_| {}).await;
    let rpc = |method: &'static str, params: Value, token: Option<&'static str>| {
        let mut req = app.client.post(format!("{}/a2a", app.base)).header("A2A-Version", "1.0");
        if let Some(t) = token {
            req = req.header("x-anonymous-token", t);
        }
        let body = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
        async move {
            let resp = req.json(&body).send().await.unwrap();
            let token = resp.headers().get("x-anonymous-token").map(|v| v.to_str().unwrap().to_string());
            (resp.json::<Value>().await.unwrap(), token)
        }
    };
    let message = |text: &str, context: Option<&str>| {
        let mut m =
            json!({ "messageId": uuid::Uuid::new_v4().to_string(), "role": "ROLE_USER", "parts": [{ "text": text }] });
        if text == "好的" {
            // The values the first caller's booking waits for.
            m["parts"]
                .as_array_mut()
                .unwrap()
                .push(json!({ "data": { "city": "北京", "check_in_date": "2026-12-01" } }));
        }
        if let Some(c) = context {
            m["contextId"] = json!(c);
        }
        json!({ "message": m })
    };
    let (sent, token) = rpc("SendMessage", message("帮我订个酒店", Some("ctx-shared")), None).await;
    let task = sent["result"]["task"].clone();
    assert_eq!(task["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{sent}");
    assert_eq!(token.as_deref().map(str::len), Some(32), "a token is issued");

    // Another caller in the same context, with the values the booking waits for: a conversation
    // of its own, with nothing pending to complete.
    let (other, _) = rpc("SendMessage", message("好的", Some("ctx-shared")), None).await;
    assert!(other["result"]["task"].is_object(), "{other}");
    assert!(app.calls("hotel_agent").is_empty(), "another caller completed the first one's booking: {other}");

    // The task id is the capability: GetTask by id works without the token; listing does not show
    // another caller's tasks.
    let (got, _) = rpc("GetTask", json!({ "id": task["id"] }), None).await;
    assert_eq!(got["result"]["id"], task["id"], "{got}");
    let (listed, _) = rpc("ListTasks", json!({}), None).await;
    let ids: Vec<&Value> =
        listed["result"]["tasks"].as_array().map(|t| t.iter().map(|t| &t["id"]).collect()).unwrap_or_default();
    assert!(!ids.contains(&&task["id"]), "{listed}");
}

#[tokio::test]
async fn a_did_you_mean_question_leaves_the_task_input_required_and_a_pick_completes_it() {
    let app = spawn_app().await;
    let sent = a2a_rpc(&app, "u1", "SendMessage", user_message("我明天要去上海", None)).await;
    let task = &sent["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{sent}");
    let info = &task["status"]["message"]["parts"][1]["data"]["semantic_info"][0];
    assert_eq!(info["type"], "intent", "{info}");
    let first = info["candidates"][0]["agent_id"].as_str().unwrap().to_string();
    let again = a2a_rpc(&app, "u1", "SendMessage", user_message("第一个", Some(&task["id"]))).await;
    assert_eq!(again["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{again}");
    assert_eq!(app.calls(&first).len(), 1);
}
